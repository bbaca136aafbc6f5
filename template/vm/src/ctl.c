/* ctl.c: the commands the control plane runs inside a vm sandbox's
 * container through the engine's exec API (guard/vm.c), never
 * in the guest: `stat PATH` shows the mount target's identity as the
 * container sees it (9p shows its own numbers in the guest), `mounts` the
 * container's mount table (the guest has its own), `expose PORT`
 * forwards a container port into the guest (QMP hostfwd_add) and records
 * it, so the next boot forwards it too, and `syscalls` tries the calls
 * that go around seccomp's view of file modes (io_uring_setup, openat2)
 * as the container's processes, QEMU among them, would. Output: one JSON line on stdout;
 * errors: a line on stderr and a non-zero status. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include "vm.h"

int vm_ctl_stat_main(int argc, char **argv)
{
	if (argc != 2 || argv[1][0] != '/') {
		vm_log("usage: chat2sbx-vm stat ABSOLUTE_PATH");
		return 2;
	}
	struct stat st;
	if (lstat(argv[1], &st) < 0) {
		vm_log("stat %s: %s", argv[1], strerror(errno));
		return 1;
	}
	const char *type = S_ISDIR(st.st_mode)   ? "directory"
	                   : S_ISREG(st.st_mode) ? "file"
	                   : S_ISLNK(st.st_mode) ? "symlink"
	                                         : "other";
	printf("{\"dev_major\":%u,\"dev_minor\":%u,\"ino\":%llu,\"type\":\"%s\",\"uid\":%u,\"gid\":%u}\n",
	       major(st.st_dev), minor(st.st_dev), (unsigned long long)st.st_ino, type, (unsigned)st.st_uid,
	       (unsigned)st.st_gid);
	return 0;
}

int vm_ctl_mounts_main(int argc, char **argv)
{
	(void)argv;
	if (argc != 1) {
		vm_log("usage: chat2sbx-vm mounts");
		return 2;
	}
	static char text[256 * 1024];
	ssize_t n = vm_read_file("/proc/self/mountinfo", text, sizeof text);
	if (n < 0 || (size_t)n >= sizeof text - 1) {
		vm_log("read /proc/self/mountinfo: %s", n < 0 ? strerror(errno) : "too long");
		return 1;
	}
	/* One JSON string (RFC 8259, section 7): quote, backslash and control
	 * characters escaped; the kernel escapes blanks in paths as octal. */
	fputs("{\"mountinfo\":\"", stdout);
	for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if (*p < 0x20)
			printf("\\u%04x", *p);
		else
			putchar(*p);
	}
	fputs("\"}\n", stdout);
	return fflush(stdout) == 0 ? 0 : 1;
}

/* Reads one QMP reply line (bounded) into buf. 0, or -1 on EOF/timeout. */
static int qmp_line(int s, char *buf, size_t size)
{
	size_t len = 0;
	while (len + 1 < size) {
		struct pollfd p = {.fd = s, .events = POLLIN};
		if (poll(&p, 1, 5000) <= 0)
			return -1;
		ssize_t n = read(s, buf + len, 1);
		if (n <= 0)
			return -1;
		if (buf[len] == '\n') {
			buf[len] = '\0';
			return 0;
		}
		len++;
	}
	return -1;
}

/* One QMP command; fails unless the reply is a "return" (events are
 * skipped). HMP's answer, if any, is copied into out. */
static int qmp_call(int s, const char *cmd, char *out, size_t size)
{
	if (write(s, cmd, strlen(cmd)) < 0)
		return -1;
	char line[4096];
	for (;;) {
		if (qmp_line(s, line, sizeof line) < 0)
			return -1;
		if (strstr(line, "\"event\""))
			continue;
		if (out)
			snprintf(out, size, "%s", line);
		return strstr(line, "\"return\"") ? 0 : -1;
	}
}

int vm_ctl_expose_main(int argc, char **argv)
{
	int port = argc == 2 ? atoi(argv[1]) : 0;
	if (port < 1 || port > 65535) {
		vm_log("usage: chat2sbx-vm expose PORT (1-65535)");
		return 2;
	}
	if (strcmp(getenv("CHAT2SBX_VM_NETWORK") ? getenv("CHAT2SBX_VM_NETWORK") : "1", "1")) {
		vm_log("this sandbox has no network; nothing can be forwarded into it");
		return 1;
	}
	/* Recorded first: a boot in between forwards it from the start. */
	char have[1024] = "";
	vm_read_file(VM_PORTS_FILE, have, sizeof have);
	char want[16];
	snprintf(want, sizeof want, "%d\n", port);
	int known = 0, count = 0;
	for (char *save = NULL, *w = strtok_r(have, "\n", &save); w; w = strtok_r(NULL, "\n", &save), count++)
		known |= atoi(w) == port;
	if (!known) {
		if (count >= VM_MAX_PORTS) {
			vm_log("at most %d ports are forwarded into a vm sandbox", VM_MAX_PORTS);
			return 1;
		}
		int fd = open(VM_PORTS_FILE, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (fd < 0 || write(fd, want, strlen(want)) < 0) {
			vm_log("record port %d: %s", port, strerror(errno));
			return 1;
		}
		close(fd);
	}
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof a.sun_path, "%s", VM_QMP_SOCKET);
	char greeting[4096], answer[4096] = "";
	if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a) < 0 || qmp_line(s, greeting, sizeof greeting) < 0 ||
	    qmp_call(s, "{\"execute\":\"qmp_capabilities\"}\n", NULL, 0) < 0) {
		vm_log("reach QEMU's monitor at %s: %s", VM_QMP_SOCKET, strerror(errno));
		return 1;
	}
	char cmd[256];
	snprintf(cmd, sizeof cmd,
	         "{\"execute\":\"human-monitor-command\",\"arguments\":{\"command-line\":\"hostfwd_add net0 "
	         "tcp::%d-:%d\"}}\n",
	         port, port);
	if (qmp_call(s, cmd, answer, sizeof answer) < 0) {
		vm_log("forward port %d: %s", port, answer);
		return 1;
	}
	/* HMP answers "" when it worked; a port forwarded already (this boot
	 * read the ports file) says it could not bind, which is fine. */
	int already = strstr(answer, "Could not set up host forwarding") != NULL;
	if (!already && strstr(answer, "\"return\": \"\"") == NULL && strstr(answer, "\"return\":\"\"") == NULL) {
		vm_log("forward port %d: %s", port, answer);
		return 1;
	}
	printf("{\"port\":%d,\"forwarded\":true}\n", port);
	return 0;
}

/* One "NAME":"ok"|"refused: WHY" member per call. */
static void syscall_report(const char *name, long rc, int err, int last)
{
	printf("\"%s\":\"%s%s\"%s", name, rc < 0 ? "refused: " : "ok", rc < 0 ? strerror(err) : "", last ? "" : ",");
}

int vm_ctl_syscalls_main(int argc, char **argv)
{
	(void)argv;
	if (argc != 1) {
		vm_log("usage: chat2sbx-vm syscalls");
		return 2;
	}
	/* io_uring_setup(2): 4 entries, struct io_uring_params zeroed (120
	 * bytes); openat2(2): "/" with struct open_how {O_RDONLY, 0, 0}. */
	unsigned char params[120] = {0};
	unsigned long long how[3] = {O_RDONLY, 0, 0};
	errno = 0;
	long uring = syscall(425, 4, params);
	int uring_errno = errno;
	if (uring >= 0)
		close((int)uring);
	errno = 0;
	long open2 = syscall(437, AT_FDCWD, "/", how, sizeof how);
	int open2_errno = errno;
	if (open2 >= 0)
		close((int)open2);
	fputs("{", stdout);
	syscall_report("io_uring_setup", uring, uring_errno, 0);
	syscall_report("openat2", open2, open2_errno, 1);
	puts("}");
	return 0;
}
