/* cpio.c: the "newc" cpio archive the launcher appends to the image's
 * initramfs at every boot (the kernel unpacks concatenated archives in
 * order; Documentation/driver-api/early-userspace/buffer-format.rst). It
 * carries this very program as /init and the helper the control plane
 * mounted, so neither is baked into the image. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vm.h"

static int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int pad4(int fd, size_t len)
{
	static const char zeros[4] = {0};
	size_t pad = (4 - (len & 3)) & 3;
	return pad ? write_all(fd, zeros, pad) : 0;
}

/* One header and name (110 bytes of header, name with its NUL, padded). */
static int entry(int fd, unsigned ino, const char *name, mode_t mode, size_t size)
{
	char hdr[160];
	size_t namesize = strlen(name) + 1;
	if (size > 0xffffffffu) {
		errno = EFBIG; /* newc sizes are 32 bits */
		return -1;
	}
	snprintf(hdr, sizeof hdr, "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X", ino, (unsigned)mode, 0u,
	         0u, 1u, 0u, (unsigned)size, 0u, 0u, 0u, 0u, (unsigned)namesize, 0u);
	if (write_all(fd, hdr, 110) < 0 || write_all(fd, name, namesize) < 0)
		return -1;
	return pad4(fd, 110 + namesize);
}

static int copy_file(int out, const char *src, size_t size)
{
	int in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -1;
	char buf[65536];
	size_t done = 0;
	while (done < size) {
		ssize_t n = read(in, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || write_all(out, buf, (size_t)n) < 0) {
			int e = n == 0 ? EIO : errno;
			close(in);
			errno = e;
			return -1;
		}
		done += (size_t)n;
	}
	close(in);
	return pad4(out, size);
}

int vm_cpio_write(int fd, const struct vm_cpio_file *files, size_t n)
{
	unsigned ino = 1000;
	for (size_t i = 0; i < n; i++) {
		/* Parent directories first (duplicates are harmless). */
		char dir[256];
		for (const char *s = strchr(files[i].name, '/'); s; s = strchr(s + 1, '/')) {
			size_t len = (size_t)(s - files[i].name);
			if (len >= sizeof dir)
				break;
			memcpy(dir, files[i].name, len);
			dir[len] = '\0';
			if (entry(fd, ino++, dir, S_IFDIR | 0755, 0) < 0)
				return -1;
		}
		struct stat st;
		if (stat(files[i].src, &st) < 0)
			return -1;
		if (!S_ISREG(st.st_mode)) {
			errno = EINVAL;
			return -1;
		}
		if (entry(fd, ino++, files[i].name, S_IFREG | (files[i].mode & 07777), (size_t)st.st_size) < 0 ||
		    copy_file(fd, files[i].src, (size_t)st.st_size) < 0)
			return -1;
	}
	return entry(fd, 0, "TRAILER!!!", 0, 0);
}
