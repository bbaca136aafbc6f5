/* util.c: the few file and log helpers every part of chat2sbx-vm uses.
 * libc only (the binary also runs as the guest's /init). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "stderr_line.h"
#include "vm.h"

/* Reads into (writing 0) or writes from (writing 1) buf up to len bytes on
 * fd, retrying EINTR; a read stops at end of file. Returns the bytes
 * moved, or -1 with errno (EIO for a write that moved nothing). */
static ssize_t transfer(int fd, char *buf, size_t len, int writing)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = writing ? write(fd, buf + done, len - done) : read(fd, buf + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0 && writing) {
			errno = EIO;
			return -1;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/* Closes fd after a failure, keeping the failure's errno; returns -1. */
static int close_failed(int fd)
{
	int e = errno;
	close(fd);
	errno = e;
	return -1;
}

ssize_t vm_read_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t len = transfer(fd, buf, size ? size - 1 : 0, 0);
	if (len < 0)
		return close_failed(fd);
	close(fd);
	buf[len] = '\0';
	return len;
}

int vm_write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0)
		return -1;
	if (transfer(fd, (char *)text, strlen(text), 1) < 0)
		return close_failed(fd);
	return close(fd);
}

void vm_log(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	stderr_line("chat2sbx-vm: ", fmt, ap);
	va_end(ap);
}

int vm_mkdir_p(const char *path, mode_t mode)
{
	char p[4096];
	if (snprintf(p, sizeof p, "%s", path) >= (int)sizeof p) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (char *s = p + 1;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST)
			return -1;
		*s = c;
		if (!c)
			break;
	}
	return 0;
}

int64_t vm_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
