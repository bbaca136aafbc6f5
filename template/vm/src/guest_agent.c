/* guest_agent.c: the one process the guest's init starts beside the helper.
 * Two jobs: (1) the control port: "poweroff" from the launcher (docker
 * stop) stops the inner dockerd, syncs the disks and resets the guest,
 * which ends QEMU; (2) Docker on demand: it holds /run/docker.sock
 * listening and starts dockerd (systemd-style socket activation: the
 * socket as fd 3, LISTEN_FDS=1, LISTEN_PID) when the first client
 * connects, or at boot with chat2sbx.docker=boot, and again after dockerd
 * exits. It trusts nothing it reads from the port beyond those words, and
 * the guest's processes may kill it (they only lose an orderly stop). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/reboot.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vm.h"

#define DOCKER_SOCKET "/run/docker.sock"
#define DOCKERD "/usr/sbin/dockerd"
#define DOCKERD_LOG "/var/log/dockerd.log"
#define DOCKERD_STOP_MS 5000

static pid_t dockerd_pid;

/* The docker group's gid from /etc/group (no NSS in a static binary); 0
 * when there is none. */
static gid_t docker_gid(void)
{
	char buf[16384];
	if (vm_read_file("/etc/group", buf, sizeof buf) < 0)
		return 0;
	for (char *save = NULL, *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		unsigned gid;
		if (!strncmp(l, "docker:", 7) && sscanf(l, "docker:%*[^:]:%u:", &gid) == 1)
			return (gid_t)gid;
	}
	return 0;
}

static int docker_socket_open(void)
{
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof a.sun_path, "%s", DOCKER_SOCKET);
	unlink(DOCKER_SOCKET);
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) < 0 || listen(s, 128) < 0) {
		vm_log("agent: cannot listen on %s: %s; docker is not available", DOCKER_SOCKET, strerror(errno));
		if (s >= 0)
			close(s);
		return -1;
	}
	/* As dockerd's own socket: root and the docker group. */
	if (chown(DOCKER_SOCKET, 0, docker_gid()) < 0)
		vm_log("agent: chown %s: %s", DOCKER_SOCKET, strerror(errno));
	chmod(DOCKER_SOCKET, 0660);
	return s;
}

static void dockerd_start(int sock)
{
	if (access(DOCKERD, X_OK) < 0) {
		vm_log("agent: %s is missing; this vm template has no Docker", DOCKERD);
		return;
	}
	pid_t pid = fork();
	if (pid < 0) {
		vm_log("agent: fork dockerd: %s", strerror(errno));
		return;
	}
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		int log = open(DOCKERD_LOG, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (null >= 0)
			dup2(null, 0);
		if (log >= 0) {
			dup2(log, 1);
			dup2(log, 2);
		}
		if (dup2(sock, 3) < 0)
			_exit(127);
		char pidenv[32];
		snprintf(pidenv, sizeof pidenv, "LISTEN_PID=%d", (int)getpid());
		char *const env[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		                     "LISTEN_FDS=1", pidenv, NULL};
		/* Its containers stay inside the sandbox's cgroup (guest_init.c). */
		char *const argv[] = {DOCKERD, "-H", "fd://", "--cgroup-parent=/sandbox/docker", NULL};
		execve(DOCKERD, argv, env);
		_exit(127);
	}
	dockerd_pid = pid;
	vm_log("agent: started dockerd (pid %d)", (int)pid);
}

static void dockerd_stop(void)
{
	if (dockerd_pid <= 0)
		return;
	kill(dockerd_pid, SIGTERM);
	int64_t deadline = vm_now_ms() + DOCKERD_STOP_MS;
	while (vm_now_ms() < deadline) {
		if (waitpid(dockerd_pid, NULL, WNOHANG) == dockerd_pid) {
			dockerd_pid = 0;
			return;
		}
		usleep(20000);
	}
	kill(dockerd_pid, SIGKILL);
}

static void power_off(void)
{
	dockerd_stop();
	sync();
	/* reboot=t on the kernel command line and QEMU's -no-reboot: the
	 * reset ends QEMU, and with it the launcher, cleanly. */
	reboot(RB_AUTOBOOT);
	_exit(1);
}

void vm_guest_agent_run(int control_fd, const char *docker)
{
	prctl(PR_SET_NAME, "chat2sbx-agent");
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	int sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	int sock = strcmp(docker, "off") ? docker_socket_open() : -1;
	if (sock >= 0 && !strcmp(docker, "boot"))
		dockerd_start(sock);
	static const char ready[] = "ready\n";
	if (write(control_fd, ready, sizeof ready - 1) < 0)
		vm_log("agent: write to the control port: %s", strerror(errno));
	char line[64];
	size_t len = 0;
	for (;;) {
		struct pollfd p[3] = {{.fd = control_fd, .events = POLLIN},
		                      {.fd = sfd, .events = POLLIN},
		                      {.fd = dockerd_pid > 0 ? -1 : sock, .events = POLLIN}};
		if (poll(p, 3, -1) < 0 && errno != EINTR)
			_exit(1);
		if (p[1].revents & POLLIN) {
			struct signalfd_siginfo si;
			if (read(sfd, &si, sizeof si) < 0 && errno != EAGAIN)
				vm_log("agent: signalfd: %s", strerror(errno));
			int status;
			pid_t pid;
			while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
				if (pid == dockerd_pid) {
					vm_log("agent: dockerd exited (status %d); it starts again on the next "
					       "connection",
					       status);
					dockerd_pid = 0;
				}
		}
		if (p[2].revents & POLLIN)
			dockerd_start(sock);
		if (p[0].revents & (POLLIN | POLLHUP)) {
			ssize_t n = read(control_fd, line + len, sizeof line - 1 - len);
			if (n <= 0) {
				/* No launcher on the other end yet (or any more). */
				usleep(100000);
				continue;
			}
			len += (size_t)n;
			line[len] = '\0';
			char *nl;
			while ((nl = strchr(line, '\n'))) {
				*nl = '\0';
				if (!strcmp(line, "poweroff"))
					power_off();
				memmove(line, nl + 1, len - (size_t)(nl + 1 - line) + 1);
				len = strlen(line);
			}
			if (len == sizeof line - 1)
				len = 0; /* an overlong line: not ours */
		}
	}
}
