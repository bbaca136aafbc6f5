/* guest_init.c: PID 1 of a vm sandbox's guest until it becomes the helper.
 * The kernel starts it as /init from the initramfs the launcher assembled
 * (the image's modules + this program + the helper). It loads the modules
 * the guest needs, mounts the root disk, the workspace over 9p and Docker's
 * disk, brings up the network, puts the guest in a cgroup with the
 * sandbox's process limit, starts the guest agent and execs the unchanged
 * chat2sbx-helper on the helper's virtio-serial port, so the helper is
 * PID 1 as it is in a container. It runs nothing else: no shell, no
 * configuration from the guest's disk. Any failure is written to the
 * console and the guest is powered off (the launcher then exits). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <net/route.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proto.h"
#include "vm.h"

#define NEWROOT "/newroot"
#define DEVICE_WAIT_MS 20000

/* What the launcher put on the kernel command line (qemu_args.c). */
struct guest_opts {
	char sandbox[64];
	char workspace[16];
	int network;
	long long pids;
	char docker[16];
};

static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

static void die(const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	vm_log("guest init failed: %s; powering off", msg);
	sync();
	/* reboot=t and QEMU's -no-reboot: the reset ends QEMU. */
	reboot(RB_AUTOBOOT);
	for (;;)
		pause();
}

static void opts_parse(struct guest_opts *o)
{
	char line[4096];
	*o = (struct guest_opts){.workspace = "managed", .docker = "demand"};
	if (vm_read_file("/proc/cmdline", line, sizeof line) < 0)
		die("read /proc/cmdline: %s", strerror(errno));
	for (char *save = NULL, *w = strtok_r(line, " \n", &save); w; w = strtok_r(NULL, " \n", &save)) {
		if (strncmp(w, "chat2sbx.", 9))
			continue;
		char *key = w + 9, *eq = strchr(key, '=');
		if (!eq)
			continue;
		*eq = '\0';
		const char *v = eq + 1;
		if (!strcmp(key, "sandbox"))
			snprintf(o->sandbox, sizeof o->sandbox, "%s", v);
		else if (!strcmp(key, "workspace"))
			snprintf(o->workspace, sizeof o->workspace, "%s", v);
		else if (!strcmp(key, "network"))
			o->network = atoi(v);
		else if (!strcmp(key, "pids"))
			o->pids = atoll(v);
		else if (!strcmp(key, "docker"))
			snprintf(o->docker, sizeof o->docker, "%s", v);
	}
}

static void mount_or_die(const char *src, const char *target, const char *type, unsigned long flags, const char *data)
{
	if (vm_mkdir_p(target, 0755) < 0 && errno != EEXIST)
		die("mkdir %s: %s", target, strerror(errno));
	if (mount(src, target, type, flags, data) < 0)
		die("mount %s (%s) on %s: %s", src, type ? type : "move", target, strerror(errno));
}

/* The "name.key=value" words of the kernel command line for module name,
 * as "key=value key=value": the kernel keeps them for built-in code only
 * (modprobe passes them on for modules; we are the modprobe here). QEMU's
 * microvm describes its virtio-mmio devices this way. */
static void module_params(const char *cmdline, const char *name, char *out, size_t size)
{
	char mod[64];
	size_t n = 0, len = strlen(name);
	for (size_t i = 0; i < len && i < sizeof mod - 1; i++)
		mod[n++] = name[i] == '-' ? '_' : name[i];
	mod[n] = '\0';
	if (n > 3 && !strcmp(mod + n - 3, ".ko"))
		mod[n -= 3] = '\0';
	out[0] = '\0';
	size_t used = 0;
	for (const char *w = cmdline; *w;) {
		while (*w == ' ' || *w == '\n')
			w++;
		size_t wl = strcspn(w, " \n");
		if (wl > n + 1 && !strncmp(w, mod, n) && w[n] == '.' && used + wl - n < size)
			used += (size_t)snprintf(out + used, size - used, "%s%.*s", used ? " " : "", (int)(wl - n - 1),
			                         w + n + 1);
		w += wl;
	}
}

/* Loads the modules in /modules in the order of /modules/order (dependencies first,
 * computed when the image was built). */
static void modules_load(void)
{
	char cmdline[4096];
	if (vm_read_file("/proc/cmdline", cmdline, sizeof cmdline) < 0)
		cmdline[0] = '\0';
	char list[16384];
	if (vm_read_file("/modules/order", list, sizeof list) < 0)
		die("read /modules/order: %s", strerror(errno));
	for (char *save = NULL, *name = strtok_r(list, "\n", &save); name; name = strtok_r(NULL, "\n", &save)) {
		char path[256];
		snprintf(path, sizeof path, "/modules/%s", name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			die("open module %s: %s", path, strerror(errno));
		char params[2048];
		module_params(cmdline, name, params, sizeof params);
		if (syscall(SYS_finit_module, fd, params, 0) < 0 && errno != EEXIST)
			die("load module %s: %s", name, strerror(errno));
		close(fd);
		unlink(path); /* the initramfs is memory */
	}
}

static void wait_for(const char *path)
{
	int64_t deadline = vm_now_ms() + DEVICE_WAIT_MS;
	struct stat st;
	while (stat(path, &st) < 0) {
		if (vm_now_ms() > deadline)
			die("%s did not appear within %d s", path, DEVICE_WAIT_MS / 1000);
		usleep(5000);
	}
}

/* The /dev node of the virtio-serial port called name. */
static int port_open(const char *name)
{
	int64_t deadline = vm_now_ms() + DEVICE_WAIT_MS;
	for (;;) {
		DIR *d = opendir("/sys/class/virtio-ports");
		struct dirent *e;
		while (d && (e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			char path[300], got[128];
			snprintf(path, sizeof path, "/sys/class/virtio-ports/%s/name", e->d_name);
			if (vm_read_file(path, got, sizeof got) < 0)
				continue;
			got[strcspn(got, "\n")] = '\0';
			if (strcmp(got, name))
				continue;
			snprintf(path, sizeof path, "/dev/%s", e->d_name);
			closedir(d);
			wait_for(path);
			int fd = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY);
			if (fd < 0)
				die("open %s (%s): %s", path, name, strerror(errno));
			return fd;
		}
		if (d)
			closedir(d);
		if (vm_now_ms() > deadline)
			die("no virtio-serial port '%s' within %d s", name, DEVICE_WAIT_MS / 1000);
		usleep(5000);
	}
}

static void copy_file_or_die(const char *src, const char *dst, mode_t mode)
{
	int in = open(src, O_RDONLY | O_CLOEXEC);
	int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (in < 0 || out < 0)
		die("copy %s to %s: %s", src, dst, strerror(errno));
	char buf[65536];
	ssize_t n;
	while ((n = read(in, buf, sizeof buf)) > 0)
		if (write(out, buf, (size_t)n) != n)
			die("write %s: %s", dst, strerror(errno));
	if (n < 0 || close(out) < 0)
		die("copy %s: %s", src, strerror(errno));
	close(in);
	/* open() applied the umask; the copy gets exactly mode. */
	if (fchmodat(AT_FDCWD, dst, mode, 0) < 0)
		die("chmod %s to %o: %s", dst, (unsigned)mode, strerror(errno));
}

static int if_flags_up(int s, const char *name)
{
	struct ifreq ifr = {0};
	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		return -1;
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	return ioctl(s, SIOCSIFFLAGS, &ifr);
}

static void set_addr(int s, unsigned long req, const char *ifname, const char *addr)
{
	struct ifreq ifr = {0};
	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", ifname);
	struct sockaddr_in *sin = (struct sockaddr_in *)&ifr.ifr_addr;
	sin->sin_family = AF_INET;
	inet_pton(AF_INET, addr, &sin->sin_addr);
	if (ioctl(s, req, &ifr) < 0)
		die("configure %s (%s): %s", ifname, addr, strerror(errno));
}

/* lo always; with network, the first other interface gets QEMU's user-mode
 * address, its gateway as the default route and its DNS proxy. */
static void network_up(const struct guest_opts *o)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0 || if_flags_up(s, "lo") < 0)
		die("bring up lo: %s", strerror(errno));
	char resolv[128] = "";
	if (o->network) {
		char ifname[IFNAMSIZ] = "";
		int64_t deadline = vm_now_ms() + DEVICE_WAIT_MS;
		while (!ifname[0]) {
			DIR *d = opendir("/sys/class/net");
			struct dirent *e;
			while (d && (e = readdir(d)))
				if (e->d_name[0] != '.' && strcmp(e->d_name, "lo") && strlen(e->d_name) < IFNAMSIZ)
					memcpy(ifname, e->d_name, strlen(e->d_name) + 1);
			if (d)
				closedir(d);
			if (!ifname[0] && vm_now_ms() > deadline)
				die("no network interface within %d s", DEVICE_WAIT_MS / 1000);
			if (!ifname[0])
				usleep(5000);
		}
		set_addr(s, SIOCSIFADDR, ifname, VM_GUEST_ADDR);
		set_addr(s, SIOCSIFNETMASK, ifname, "255.255.255.0");
		if (if_flags_up(s, ifname) < 0)
			die("bring up %s: %s", ifname, strerror(errno));
		struct rtentry rt = {0};
		struct sockaddr_in *gw = (struct sockaddr_in *)&rt.rt_gateway;
		struct sockaddr_in *dst = (struct sockaddr_in *)&rt.rt_dst;
		struct sockaddr_in *mask = (struct sockaddr_in *)&rt.rt_genmask;
		gw->sin_family = dst->sin_family = mask->sin_family = AF_INET;
		inet_pton(AF_INET, VM_GUEST_GATEWAY, &gw->sin_addr);
		rt.rt_flags = RTF_UP | RTF_GATEWAY;
		rt.rt_dev = ifname;
		if (ioctl(s, SIOCADDRT, &rt) < 0 && errno != EEXIST)
			die("add the default route: %s", strerror(errno));
		snprintf(resolv, sizeof resolv, "nameserver %s\n", VM_GUEST_DNS);
	}
	close(s);
	/* The engine writes these in a container; here the guest's own. */
	char hosts[256];
	snprintf(hosts, sizeof hosts, "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost\n127.0.1.1\t%s\n",
	         o->sandbox[0] ? o->sandbox : "sandbox");
	unlink(NEWROOT "/etc/resolv.conf");
	if (vm_write_file(NEWROOT "/etc/resolv.conf", resolv, 0644) < 0 ||
	    vm_write_file(NEWROOT "/etc/hosts", hosts, 0644) < 0)
		die("write /etc/resolv.conf and /etc/hosts: %s", strerror(errno));
	const char *h = o->sandbox[0] ? o->sandbox : "sandbox";
	/* A guest without its name still serves: said, not fatal. */
	if (sethostname(h, strlen(h)) < 0)
		vm_log("guest init: sethostname %s: %s (the guest keeps the kernel's name)", h, strerror(errno));
	char hn[80];
	snprintf(hn, sizeof hn, "%s\n", h);
	if (vm_write_file(NEWROOT "/etc/hostname", hn, 0644) < 0)
		vm_log("guest init: write /etc/hostname: %s", strerror(errno));
}

/* cgroup v2 with the sandbox's process limit over everything the guest
 * runs: the helper and its sessions (sandbox/init), the inner Docker's
 * containers (sandbox/docker, dockerd's --cgroup-parent). */
static void cgroup_setup(const struct guest_opts *o)
{
	mount_or_die("cgroup2", NEWROOT "/sys/fs/cgroup", "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC, "nsdelegate");
	/* One controller per write: the kernel refuses a whole line that
	 * names one it lacks. Only pids is required. */
	static const char *const controllers[] = {"+pids", "+memory", "+cpu", "+io", NULL};
	for (size_t i = 0; controllers[i]; i++)
		if (vm_write_file(NEWROOT "/sys/fs/cgroup/cgroup.subtree_control", controllers[i], 0644) < 0 && !i)
			die("enable the pids controller: %s", strerror(errno));
	if (mkdir(NEWROOT "/sys/fs/cgroup/sandbox", 0755) < 0 && errno != EEXIST)
		die("mkdir the sandbox cgroup: %s", strerror(errno));
	if (o->pids > 0) {
		char n[32];
		snprintf(n, sizeof n, "%lld", o->pids);
		if (vm_write_file(NEWROOT "/sys/fs/cgroup/sandbox/pids.max", n, 0644) < 0)
			die("set pids.max %s: %s", n, strerror(errno));
	}
	for (size_t i = 0; controllers[i]; i++)
		vm_write_file(NEWROOT "/sys/fs/cgroup/sandbox/cgroup.subtree_control", controllers[i], 0644);
	if (mkdir(NEWROOT "/sys/fs/cgroup/sandbox/init", 0755) < 0 && errno != EEXIST)
		die("mkdir the init cgroup: %s", strerror(errno));
	if (vm_write_file(NEWROOT "/sys/fs/cgroup/sandbox/init/cgroup.procs", "1", 0644) < 0)
		die("enter the sandbox cgroup: %s", strerror(errno));
}

/* The workspace over virtio-9p (issue 27). Measured under TCG on the
 * 2-core development machine, the options side by side in interleaved
 * rounds (medians; template/vm/README.md has the table): a 1 KiB read
 * (open, read, close) / git status of 1 000 files / host edit of a file the
 * guest has read / guest write on the host / 32 MiB written in 4 KiB writes:
 *   cache=none, msize 256 KiB (before)  10.7 ms / 7.7 s / next call / at once / 6.3 s
 *   cache=none, msize 500 KiB           17.6 ms / 8.0 s / next call / at once
 *   cache=mmap, msize 500 KiB            8.3 ms / 7.2 s / next call / at once / 7.5 s
 *   cache=loose (alone, another hour)   8.8 ms / 0.7 s / stale > 30 s / 3.7-5 s later
 *   cache=loose + MS_SYNCHRONOUS         2.8 ms / 1.1 s / stale > 30 s / at once / 30.7 s
 * (virtio-fs: QEMU 7.2's virtiofsd cannot run unprivileged: README.)
 *
 * - managed: cache=loose, mounted MS_SYNCHRONOUS. Only this sandbox writes
 *   a managed workspace while it runs (one workspace, one live sandbox), so
 *   the guest may keep names, attributes and pages. Loose alone writes back
 *   from the guest's page cache seconds later, while the control plane
 *   stops and removes containers with SIGKILL (stop t=0, remove force) and
 *   its disk watch walks the workspace on the host: a guest-cached write
 *   would be lost or unseen. MS_SYNCHRONOUS makes every write(2) reach the
 *   host file (a 9p write, then fsync) before it returns, as cache=none did;
 *   the price is that fsync: many small writes to one file are ~5x slower
 *   (writes of whole small files, as git and builds make, were faster: the
 *   1 000-file repository was made in 14 s against 61-146 s). Writes through
 *   a shared writable mmap (cache=none refused those) reach the host at
 *   msync(2) or the guest's writeback. A file the host rewrites in a managed
 *   workspace while its sandbox runs stays stale in the guest once read (new
 *   files and deletions are seen): chat2sbx itself never writes there then.
 * - direct: cache=none. The person edits the directory while the sandbox
 *   runs and the host's git guard reads its .git: both cached modes served a
 *   host-rewritten file stale indefinitely (in place or by rename, read or
 *   mmap'd); mmap gained nothing measurable. With cache=none a host edit is
 *   seen by the next call and a guest write is on the host when write(2)
 *   returns.
 * - clone: the source is read-only and copied once onto the guest's own
 *   disk (the copy is /workspace); cache=none, so a later fetch from it sees
 *   the host's repository as it is.
 * msize: 512000 bytes (the most virtio-9p takes); no difference for small
 * operations, half the requests for large ones. */
void vm_workspace_mount_for(const char *mode, struct vm_workspace_mount *ret)
{
	static const char coherent[] = "trans=virtio,version=9p2000.L,cache=none,msize=512000";
	static const char cached[] = "trans=virtio,version=9p2000.L,cache=loose,msize=512000";
	if (mode && !strcmp(mode, "clone"))
		*ret = (struct vm_workspace_mount){.target = VM_SOURCE,
		                                   .tag = VM_TAG_SOURCE,
		                                   .options = coherent,
		                                   .flags = MS_RDONLY | MS_NOSUID | MS_NODEV};
	else if (mode && !strcmp(mode, "managed"))
		*ret = (struct vm_workspace_mount){.target = VM_WORKSPACE,
		                                   .tag = VM_TAG_WORKSPACE,
		                                   .options = cached,
		                                   .flags = MS_NOSUID | MS_NODEV | MS_SYNCHRONOUS};
	else /* direct, and any mode this program does not know: coherent */
		*ret = (struct vm_workspace_mount){.target = VM_WORKSPACE,
		                                   .tag = VM_TAG_WORKSPACE,
		                                   .options = coherent,
		                                   .flags = MS_NOSUID | MS_NODEV};
}

/* Frees the initramfs (its files are memory) before leaving it. */
static void initramfs_clean(void)
{
	unlink("/helper");
	rmdir("/modules");
	unlink("/init");
}

int vm_guest_init_main(void)
{
	mkdir("/dev", 0755);
	mount("devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755");
	int con = open("/dev/console", O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (con >= 0) {
		dup2(con, 0);
		dup2(con, 1);
		dup2(con, 2);
		if (con > 2)
			close(con);
	}
	mount_or_die("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	mount_or_die("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	struct guest_opts o;
	opts_parse(&o);
	modules_load();

	/* The root disk (a copy-on-write overlay of the image's, in the
	 * container's writable layer) and Docker's own disk. */
	wait_for("/dev/vda");
	mount_or_die("/dev/vda", NEWROOT, "ext4", MS_NOATIME, NULL);
	wait_for("/dev/vdb");
	mount_or_die("/dev/vdb", NEWROOT "/var/lib/docker", "ext4", MS_NOATIME, NULL);
	/* The helper, as the control plane mounted it into the container. */
	mount_or_die("tmpfs", NEWROOT "/.chat2sbx", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=16m");
	copy_file_or_die("/helper", NEWROOT VM_HELPER, 0755);
	struct vm_workspace_mount ws;
	vm_workspace_mount_for(o.workspace, &ws);
	char target[sizeof NEWROOT + 64];
	snprintf(target, sizeof target, NEWROOT "%s", ws.target);
	mount_or_die(ws.tag, target, "9p", ws.flags, ws.options);

	network_up(&o);

	mount_or_die("/dev", NEWROOT "/dev", NULL, MS_MOVE, NULL);
	mount_or_die("/proc", NEWROOT "/proc", NULL, MS_MOVE, NULL);
	mount_or_die("/sys", NEWROOT "/sys", NULL, MS_MOVE, NULL);
	mount_or_die("devpts", NEWROOT "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "gid=5,mode=0620,ptmxmode=0666");
	mount_or_die("tmpfs", NEWROOT "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777");
	mount_or_die("tmpfs", NEWROOT "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=20%");
	cgroup_setup(&o);

	initramfs_clean();
	if (chdir(NEWROOT) < 0 || mount(".", "/", NULL, MS_MOVE, NULL) < 0 || chroot(".") < 0 || chdir("/") < 0)
		die("switch to the root disk: %s", strerror(errno));

	int helper_fd = port_open(VM_PORT_HELPER);
	int control_fd = port_open(VM_PORT_CONTROL);
	pid_t agent = fork();
	if (agent < 0)
		die("fork the guest agent: %s", strerror(errno));
	if (agent == 0) {
		close(helper_fd);
		vm_guest_agent_run(control_fd, o.docker);
	}
	close(control_fd);

	if (dup2(helper_fd, 0) < 0 || dup2(helper_fd, 1) < 0)
		die("wire the helper's port: %s", strerror(errno));
	close(helper_fd);
	char sandbox_env[96];
	snprintf(sandbox_env, sizeof sandbox_env, PROTO_HELPER_ENV_SANDBOX_ID "=%s", o.sandbox);
	/* The environment a container's helper gets (proto.h). */
	char *const env[] = {PROTO_HELPER_ENV_FIXED, sandbox_env, NULL};
	char *const argv[] = {VM_HELPER, NULL};
	if (chdir(VM_WORKSPACE) < 0)
		die("chdir %s: %s", VM_WORKSPACE, strerror(errno));
	execve(VM_HELPER, argv, env);
	die("exec %s: %s", VM_HELPER, strerror(errno));
}
