/* launch.c: PID 1 of a vm sandbox's container (`chat2sbx-vm launch`).
 * Before QEMU starts it checks that the workspace mount is the directory
 * the control plane verified (the engine mounts again at every start),
 * makes the per-sandbox disks (copy-on-write overlays of the image's, in
 * the container's writable layer, so they survive a stop/start), puts this
 * program and the helper into the boot's initramfs, and maps the
 * container's limits to QEMU (qemu_args.c). QEMU runs as the workspace's
 * owner (never root) with no capabilities. It stays QEMU's parent to turn
 * the engine's stop signal into an orderly power-off over the control port
 * and leaves with QEMU's status. It never reads the container's stdin or
 * writes its stdout: those are the helper's channel, QEMU's stdio. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vm.h"

/* The engine's default stop timeout is 10 s: the guest gets most of it,
 * then QEMU is ended, then killed. */
#define STOP_GRACE_MS 8000
#define QUIT_GRACE_MS 1500
#define CONTROL_CONNECT_MS 30000

static const char *env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);
	return v && *v ? v : dflt;
}

/* The mount target must be the directory the control plane checked on the
 * host (CHAT2SBX_VM_MOUNT="dev:ino", kernel dev_t and inode): the engine
 * resolved the path again for this start (guard/mount_verify.c). */
static int mount_check(const char *target)
{
	const char *want = getenv("CHAT2SBX_VM_MOUNT");
	if (!want || !*want)
		return 0;
	unsigned long long dev = 0, ino = 0;
	if (sscanf(want, "%llu:%llu", &dev, &ino) != 2) {
		vm_log("CHAT2SBX_VM_MOUNT '%s' is not dev:ino", want);
		return -1;
	}
	struct stat st;
	if (lstat(target, &st) < 0 || (unsigned long long)st.st_dev != dev || (unsigned long long)st.st_ino != ino) {
		vm_log("security: %s is not the directory that was verified (%u:%u inode %llu expected); the engine "
		       "mounted another one; not booting",
		       target, major((dev_t)dev), minor((dev_t)dev), ino);
		return -1;
	}
	return 0;
}

static int run_wait(char *const argv[])
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* A qcow2 overlay over the image's base disk, made once per sandbox. */
static int overlay_make(const char *base, const char *file, uid_t uid, gid_t gid)
{
	if (access(file, F_OK) == 0)
		return chown(file, uid, gid);
	char tmp[256];
	snprintf(tmp, sizeof tmp, "%s.new", file);
	char *const argv[] = {VM_QEMU_IMG, "create", "-q", "-f", "qcow2", "-F", "qcow2", "-b", (char *)base, tmp, NULL};
	if (run_wait(argv) < 0) {
		vm_log("qemu-img create %s over %s failed", file, base);
		return -1;
	}
	if (chown(tmp, uid, gid) < 0 || chmod(tmp, 0600) < 0 || rename(tmp, file) < 0) {
		vm_log("prepare %s: %s", file, strerror(errno));
		return -1;
	}
	return 0;
}

/* The image's module archive, then one with /init (this program) and
 * /helper (as the control plane mounted it). */
static int initrd_make(uid_t uid, gid_t gid)
{
	int out = open(VM_INITRD, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int in = open(VM_INITRD_MODULES, O_RDONLY | O_CLOEXEC);
	if (out < 0 || in < 0) {
		vm_log("prepare the initramfs: %s", strerror(errno));
		return -1;
	}
	char buf[65536];
	ssize_t n;
	size_t total = 0;
	while ((n = read(in, buf, sizeof buf)) > 0) {
		if (write(out, buf, (size_t)n) != n)
			break;
		total += (size_t)n;
	}
	close(in);
	/* Each archive starts on a 4-byte boundary. */
	static const char zeros[4] = {0};
	if (total & 3)
		n = write(out, zeros, 4 - (total & 3));
	struct vm_cpio_file files[] = {{"init", VM_SELF, 0755}, {"helper", VM_HELPER, 0755}};
	if (n < 0 || vm_cpio_write(out, files, 2) < 0 || fchown(out, uid, gid) < 0) {
		vm_log("write the initramfs: %s", strerror(errno));
		close(out);
		return -1;
	}
	return close(out);
}

static void ports_read(struct vm_config *cfg)
{
	char buf[1024];
	if (vm_read_file(VM_PORTS_FILE, buf, sizeof buf) < 0)
		return;
	for (char *save = NULL, *w = strtok_r(buf, "\n", &save); w && cfg->n_ports < VM_MAX_PORTS;
	     w = strtok_r(NULL, "\n", &save)) {
		int p = atoi(w);
		if (p > 0 && p < 65536)
			cfg->ports[cfg->n_ports++] = p;
	}
}

static int control_connect(void)
{
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof a.sun_path, "%s", VM_CTL_SOCKET);
	if (s < 0)
		return -1;
	if (connect(s, (struct sockaddr *)&a, sizeof a) < 0) {
		close(s);
		return -1;
	}
	return s;
}

static void qemu_exec(char **argv, uid_t uid, gid_t gid, const sigset_t *blocked)
{
	/* QEMU as the workspace's owner: changing all three ids away from 0
	 * clears every capability (capabilities(7), "Effect of user ID
	 * changes"); no_new_privs (set by the engine) keeps it so. */
	if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0) {
		vm_log("drop to uid %u: %s", (unsigned)uid, strerror(errno));
		_exit(VM_EXIT_CONFIG);
	}
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	sigprocmask(SIG_UNBLOCK, blocked, NULL);
	execv(argv[0], argv);
	vm_log("exec %s: %s", argv[0], strerror(errno));
	_exit(VM_EXIT_CONFIG);
}

int vm_launch_main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	struct vm_config cfg = {
	    .accel = env_or("CHAT2SBX_VM_ACCEL", "tcg"),
	    .sandbox_id = env_or("CHAT2SBX_SANDBOX_ID", "sandbox"),
	    .workspace_mode = env_or("CHAT2SBX_VM_WORKSPACE", "managed"),
	    .network = atoi(env_or("CHAT2SBX_VM_NETWORK", "1")),
	    .pids_limit = atoll(env_or("CHAT2SBX_VM_PIDS", "0")),
	    .docker = env_or("CHAT2SBX_VM_DOCKER", "demand"),
	    .verbose = !strcmp(env_or("CHAT2SBX_VM_DEBUG", "0"), "1"),
	};
	if (strcmp(cfg.accel, "kvm") && strcmp(cfg.accel, "tcg")) {
		vm_log("CHAT2SBX_VM_ACCEL '%s' is not kvm or tcg", cfg.accel);
		return VM_EXIT_CONFIG;
	}
	const char *target = !strcmp(cfg.workspace_mode, "clone") ? VM_SOURCE : VM_WORKSPACE;
	if (mount_check(target) < 0)
		return VM_EXIT_MOUNT_CHANGED;
	struct stat ws;
	if (stat(target, &ws) < 0 || !S_ISDIR(ws.st_mode)) {
		vm_log("the workspace %s is not a mounted directory", target);
		return VM_EXIT_CONFIG;
	}
	/* Files the guest makes on the host belong to the workspace's owner,
	 * never to root (a root-owned one: chat2sbx's own uid for it). */
	uid_t uid = ws.st_uid ? ws.st_uid : VM_DEFAULT_UID;
	gid_t gid = ws.st_uid ? ws.st_gid : VM_DEFAULT_GID;

	if ((vm_mkdir_p(VM_STATE_DIR, 0700) < 0 || vm_mkdir_p(VM_RUN_DIR, 0700) < 0) ||
	    chown(VM_STATE_DIR, uid, gid) < 0 || chown(VM_RUN_DIR, uid, gid) < 0) {
		vm_log("prepare %s and %s: %s", VM_STATE_DIR, VM_RUN_DIR, strerror(errno));
		return VM_EXIT_CONFIG;
	}
	unlink(VM_CTL_SOCKET);
	unlink(VM_QMP_SOCKET);
	if (overlay_make(VM_ROOT_BASE, VM_STATE_DIR "/root.qcow2", uid, gid) < 0 ||
	    overlay_make(VM_DOCKER_BASE, VM_STATE_DIR "/docker.qcow2", uid, gid) < 0 || initrd_make(uid, gid) < 0)
		return VM_EXIT_CONFIG;
	if (!strcmp(cfg.accel, "kvm") && chown("/dev/kvm", uid, gid) < 0) {
		vm_log("give /dev/kvm to uid %u: %s (is the device passed to the container?)", (unsigned)uid,
		       strerror(errno));
		return VM_EXIT_CONFIG;
	}
	ports_read(&cfg);

	struct vm_limits lim;
	vm_limits_read(&lim);
	struct vm_plan plan;
	char why[256];
	if (vm_plan_make(&lim, cfg.accel, &plan, why, sizeof why) < 0) {
		vm_log("%s", why);
		return VM_EXIT_CONFIG;
	}
	cfg.console_fd = dup(STDERR_FILENO); /* inherited by QEMU (no CLOEXEC) */
	char **qargv = vm_qemu_argv(&cfg, &lim, &plan);
	if (!qargv || cfg.console_fd < 0) {
		vm_log("build QEMU's arguments: out of memory");
		return VM_EXIT_CONFIG;
	}
	vm_log("booting %s: %s, %d vCPU, %lld MiB (container ceiling %lld MiB), %s workspace, network %s, uid %u",
	       cfg.sandbox_id, cfg.accel, plan.smp, (long long)plan.guest_mib, (long long)(lim.memory_limit >> 20),
	       cfg.workspace_mode, cfg.network ? "on" : "off", (unsigned)uid);

	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	int sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	int64_t t0 = vm_now_ms();
	pid_t qemu = fork();
	if (qemu < 0) {
		vm_log("fork: %s", strerror(errno));
		return VM_EXIT_CONFIG;
	}
	if (qemu == 0)
		qemu_exec(qargv, uid, gid, &mask);
	vm_argv_free(qargv);
	close(cfg.console_fd);

	int ctl = -1, stopping = 0;
	int64_t stop_at = 0, quit_at = 0;
	for (;;) {
		if (ctl == -1 && vm_now_ms() - t0 < CONTROL_CONNECT_MS)
			ctl = control_connect();
		int64_t now = vm_now_ms();
		int timeout = ctl == -1 ? 50 : -1;
		if (stopping) {
			int64_t next = quit_at ? quit_at : stop_at;
			timeout = next > now ? (int)(next - now) : 0;
		}
		struct pollfd p[2] = {{.fd = sfd, .events = POLLIN}, {.fd = ctl, .events = POLLIN}};
		int r = poll(p, 2, timeout);
		if (r < 0 && errno != EINTR)
			break;
		if (p[0].revents & POLLIN) {
			struct signalfd_siginfo si;
			if (read(sfd, &si, sizeof si) == sizeof si && si.ssi_signo == SIGCHLD) {
				int status;
				if (waitpid(qemu, &status, WNOHANG) == qemu) {
					int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
					vm_log(
					    "QEMU ended (%s %d) after %lld ms", WIFEXITED(status) ? "status" : "signal",
					    WIFEXITED(status) ? code : WTERMSIG(status), (long long)(vm_now_ms() - t0));
					return code;
				}
			} else if (!stopping) {
				stopping = 1;
				stop_at = vm_now_ms() + STOP_GRACE_MS;
				static const char off[] = "poweroff\n";
				if (ctl < 0 || write(ctl, off, sizeof off - 1) < 0)
					stop_at = vm_now_ms(); /* no guest agent to ask */
			}
		}
		if (ctl >= 0 && (p[1].revents & (POLLIN | POLLHUP))) {
			char buf[256];
			ssize_t n = read(ctl, buf, sizeof buf);
			if (n <= 0) {
				close(ctl);
				ctl = -2; /* the port closed; QEMU is ending */
			} else if (n >= 5 && !memcmp(buf, "ready", 5)) {
				vm_log("guest ready %lld ms after QEMU started", (long long)(vm_now_ms() - t0));
			}
		}
		now = vm_now_ms();
		if (stopping && !quit_at && now >= stop_at) {
			vm_log("the guest did not power off in time; ending QEMU");
			kill(qemu, SIGTERM);
			quit_at = now + QUIT_GRACE_MS;
		} else if (quit_at && now >= quit_at) {
			kill(qemu, SIGKILL);
			quit_at = now + 60000;
		}
	}
	return VM_EXIT_CONFIG;
}
