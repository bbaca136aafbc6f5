/* vm.c: the vm runtime's host side (issue 15). A vm sandbox
 * is still one container driven only through the engine's API: the vm
 * image run by runc, whose PID 1 is the launcher (template/vm/, mounted
 * read-only like the helper), which boots a microVM whose PID 1 is the
 * helper on the container's stdio. This file decides which runtime and
 * accelerator sandboxes get (guard_runtime_probe), adjusts a sandbox's container settings
 * for it, and runs the checks that must be made from the container's side
 * (the mount's identity: 9p shows its own numbers in the guest; port
 * forwards into the guest) through the engine's exec API. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/cleanup.h"
#include "../base/log.h"
#include "guard.h"

/* The container holds QEMU's threads (vCPUs, I/O workers), not the
 * sandbox's processes: those are limited inside the guest. */
#define VM_CONTAINER_PIDS 512
#define VM_EXEC_TIMEOUT_MS 20000L

/* /proc/cpuinfo (bounded: the flags of the first CPUs are enough). */
static int cpu_virtualization(void)
{
	char buf[65536];
	int fd = open("/proc/cpuinfo", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n, len = 0;
	while (len < (ssize_t)sizeof(buf) - 1 && (n = read(fd, buf + len, sizeof(buf) - 1 - (size_t)len)) > 0)
		len += n;
	close(fd);
	buf[len] = '\0';
	return policy_cpu_has_virtualization(buf);
}

/* /dev/kvm opens for reading and writing (what QEMU needs). */
static int kvm_accessible(void)
{
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

int guard_runtime_probe(const struct config *cfg, struct docker_engine *engine, struct guard_runtime_choice *ret,
                        struct cp_error **err)
{
	struct policy_runtime_facts f = {.setting = cfg->runtime,
	                                 .accel_setting = cfg->vm_accel,
	                                 .cpu_virt = cpu_virtualization(),
	                                 .kvm_access = kvm_accessible()};
	/* Only auto needs to know whether the image exists (a named runtime
	 * is used as asked, and a missing image then fails the create). */
	if (policy_runtime_needs_image(f.setting, f.cpu_virt, f.kvm_access) && engine) {
		_cleanup_free_ char *id = NULL;
		_cleanup_error_ struct cp_error *e = NULL;
		f.vm_image = docker_image_inspect(engine, cfg->vm_image, &id, &e) == 0;
	}
	struct policy_runtime_decision d;
	if (policy_runtime_decide(&f, &d, err) < 0)
		return -1;
	*ret = (struct guard_runtime_choice){.runtime = d.runtime,
	                                     .why = d.why,
	                                     .accel = d.accel,
	                                     .accel_why = d.accel_why,
	                                     .cpu_virt = f.cpu_virt,
	                                     .kvm_access = f.kvm_access,
	                                     .vm_image = f.vm_image};
	return 0;
}

void guard_vm_container(const struct guard_host *h, const struct sandbox_record *s, const struct workspace_record *w,
                        uint64_t mount_dev, uint64_t mount_ino, struct docker_container_spec *spec,
                        struct guard_vm_parts *parts)
{
	/* The sandbox's environment, then the launcher's settings. */
	size_t n = 0;
	for (size_t i = 0; spec->env && spec->env[i] && n < GUARD_VM_ENV_MAX - 8; i++)
		parts->env[n++] = spec->env[i];
	snprintf(parts->text[0], sizeof(parts->text[0]), "CHAT2SBX_VM_ACCEL=%s", s->vm_accel ? s->vm_accel : "tcg");
	snprintf(parts->text[1], sizeof(parts->text[1]), "CHAT2SBX_VM_WORKSPACE=%s", w->mode);
	snprintf(parts->text[2], sizeof(parts->text[2]), "CHAT2SBX_VM_NETWORK=%d", s->network ? 1 : 0);
	snprintf(parts->text[3], sizeof(parts->text[3]), "CHAT2SBX_VM_PIDS=%lld", (long long)spec->pids_limit);
	snprintf(parts->text[4], sizeof(parts->text[4]), "CHAT2SBX_VM_DOCKER=%s", h->cfg->vm_docker);
	for (int i = 0; i < 5; i++)
		parts->env[n++] = parts->text[i];
	/* The directory the control plane verified; the launcher refuses to
	 * boot at any start where the engine mounted another (mount_verify.c). */
	if (strcmp(w->mode, "managed") && (mount_dev || mount_ino)) {
		snprintf(parts->text[5], sizeof(parts->text[5]), "CHAT2SBX_VM_MOUNT=%llu:%llu",
		         (unsigned long long)mount_dev, (unsigned long long)mount_ino);
		parts->env[n++] = parts->text[5];
	}
	parts->env[n] = NULL;
	spec->env = parts->env;

	parts->entrypoint[0] = GUARD_VM_TARGET;
	parts->entrypoint[1] = "launch";
	parts->entrypoint[2] = NULL;
	spec->entrypoint = parts->entrypoint;
	spec->runtime = NULL; /* runc runs the container; the VM is the sandbox */
	/* Container root only prepares the disks and starts QEMU, which drops
	 * to the workspace's owner with no capabilities at all. */
	static const char *const caps[] = {"CHOWN", "DAC_OVERRIDE", "FOWNER", "SETGID", "SETUID", "KILL", NULL};
	spec->cap_drop_all = 1;
	spec->cap_add = caps;
	static const char *const kvm[] = {"/dev/kvm", NULL};
	spec->devices = s->vm_accel && !strcmp(s->vm_accel, "kvm") ? kvm : NULL;
	spec->pids_limit = VM_CONTAINER_PIDS;
}

int guard_vm_memory_check(int64_t memory_bytes, struct cp_error **err)
{
	if (memory_bytes <= 0 || memory_bytes >= POLICY_VM_MIN_MEMORY)
		return 0;
	return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
	                    "memory %lld MiB is too little for a vm sandbox: its guest needs at least 256 MiB besides "
	                    "QEMU's own; ask for \"%lldm\" or more",
	                    (long long)(memory_bytes >> 20), (long long)(POLICY_VM_MIN_MEMORY >> 20));
}

int guard_vm_hello_timeout_ms(const char *runtime)
{
	return policy_runtime_is_vm(runtime) ? POLICY_VM_HELLO_TIMEOUT_MS : POLICY_HELLO_TIMEOUT_MS;
}

/* Runs `chat2sbx-vm ARGS` in the container and parses its one JSON line. */
static int vm_exec(const struct guard_host *h, const char *container, const char *const *argv,
                   struct json_object **ret_result, struct cp_error **err)
{
	struct docker_exec_result x = {0};
	if (docker_container_exec(h->engine, container, argv, VM_EXEC_TIMEOUT_MS, &x, err) < 0)
		return -1;
	int r = 0;
	if (x.exit_code != 0) {
		x.err[strcspn(x.err, "\n")] = '\0';
		r = cp_error_set(err, CP_ERR_INTERNAL, "'%s %s' in the sandbox's container failed (exit %d): %s",
		                 argv[0], argv[1], x.exit_code, x.err[0] ? x.err : "no message");
	} else if (!(*ret_result = json_tokener_parse(x.out)) || !json_object_is_type(*ret_result, json_type_object)) {
		json_object_put(*ret_result);
		*ret_result = NULL;
		r = cp_error_set(err, CP_ERR_INTERNAL, "'%s %s' in the sandbox's container answered no JSON object",
		                 argv[0], argv[1]);
	}
	docker_exec_result_clear(&x);
	return r;
}

static int vm_stat_compare(const struct guard_host *h, const char *container, const char *sandbox_id,
                           const char *target, const char *host_path, uint64_t dev, uint64_t ino, struct cp_error **err)
{
	const char *argv[] = {GUARD_VM_TARGET, "stat", target, NULL};
	_cleanup_json_ struct json_object *res = NULL;
	if (vm_exec(h, container, argv, &res, err) < 0)
		return cp_error_prefix(err, "verify the mount '%s' of sandbox '%s'", target, sandbox_id);
	return guard_mount_compare(h, sandbox_id, target, host_path, dev, ino, res, err);
}

int guard_vm_mounts_verify(const struct guard_host *h, const char *container, const struct sandbox_record *s,
                           const char *mode, const char *host_dir, uint64_t dev, uint64_t ino,
                           const struct sandbox_mount_record *m, size_t n, struct cp_error **err)
{
	const char *target = !strcmp(mode, "clone") ? POLICY_SOURCE_TARGET : POLICY_WORKSPACE_TARGET;
	if (vm_stat_compare(h, container, s->id, target, host_dir, dev, ino, err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (vm_stat_compare(h, container, s->id, m[i].target, m[i].source, m[i].dev, m[i].ino, err) < 0)
			return -1;
	if (!n)
		return 0;
	const char *argv[] = {GUARD_VM_TARGET, "mounts", NULL};
	_cleanup_json_ struct json_object *res = NULL;
	if (vm_exec(h, container, argv, &res, err) < 0)
		return cp_error_prefix(err, "verify the mounts of sandbox '%s'", s->id);
	return guard_mounts_judge(h, s, mode, m, n, res, err);
}

int guard_vm_forward(const struct guard_host *h, const char *container, int port, struct cp_error **err)
{
	char p[16];
	snprintf(p, sizeof(p), "%d", port);
	const char *argv[] = {GUARD_VM_TARGET, "expose", p, NULL};
	_cleanup_json_ struct json_object *res = NULL;
	if (vm_exec(h, container, argv, &res, err) < 0)
		return cp_error_prefix(err, "forward port %d into the vm sandbox's guest", port);
	return 0;
}

const char *guard_vm_exit_reason(int exit_code)
{
	switch (exit_code) {
	case GUARD_VM_EXIT_MOUNT_CHANGED:
		return "its container was started with another directory mounted than the one verified (a symlink or "
		       "rename race), so the guest was not booted";
	case GUARD_VM_EXIT_CONFIG:
		return "the vm launcher could not boot the guest (see serve's log with CHAT2SBX_LOG_DEBUG=helper for "
		       "its lines)";
	default: return NULL;
	}
}

int guard_vm_refused(const struct docker_container_state *st)
{
	/* Between the engine's restarts State.Running stays true with Status
	 * "restarting"; ExitCode is the last run's. */
	int down = !st->running || (st->status && !strcmp(st->status, "restarting"));
	return down && guard_vm_exit_reason(st->exit_code) != NULL;
}

void guard_vm_explain(const struct guard_host *h, const char *sandbox_id, const char *container, struct cp_error **err)
{
	struct docker_container_state st = {0};
	_cleanup_error_ struct cp_error *e = NULL;
	if (!container || docker_container_inspect(h->engine, container, &st, &e) < 0)
		return;
	const char *reason = guard_vm_refused(&st) ? guard_vm_exit_reason(st.exit_code) : NULL;
	int mount = st.exit_code == GUARD_VM_EXIT_MOUNT_CHANGED;
	docker_container_state_clear(&st);
	if (!reason)
		return;
	char msg[512];
	snprintf(msg, sizeof(msg), "sandbox '%s': %s", sandbox_id, reason);
	if (mount)
		guard_mount_audit(h, sandbox_id, container, msg);
	cp_error_freep(err);
	cp_error_set(err, mount ? CP_ERR_DENIED : CP_ERR_UNAVAILABLE, "%s; nothing ran in it; try again", msg);
}

/* nftw's callback state: the uid and gid everything gets; the first error. */
static uid_t chown_uid;
static gid_t chown_gid;
static int chown_errno;
static pthread_mutex_t chown_lock = PTHREAD_MUTEX_INITIALIZER;

static int chown_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)type;
	(void)ftw;
	if ((st->st_uid != chown_uid || st->st_gid != chown_gid) && lchown(path, chown_uid, chown_gid) < 0 &&
	    !chown_errno)
		chown_errno = errno;
	return 0;
}

int guard_vm_workspace_prepare(const struct guard_host *h, const struct workspace_record *w, struct cp_error **err)
{
	(void)h;
	struct stat st;
	if (stat(w->path, &st) < 0)
		return cp_error_set_errno(err, CP_ERR_INTERNAL, errno, "look at workspace '%s' (%s)", w->id, w->path);
	if (st.st_uid != 0)
		return 0; /* QEMU runs as its owner */
	if (!strcmp(w->mode, "direct"))
		return cp_error_set(
		    err, CP_ERR_DENIED,
		    "workspace '%s' (%s) belongs to root, and a vm sandbox writes a direct workspace as "
		    "its owner (QEMU never runs as root, so nothing it makes there is root's): the person "
		    "at this machine can give the directory to the user whose files these are (chown -R "
		    "USER '%s'); or use clone mode",
		    w->id, w->path, w->path);
	if (strcmp(w->mode, "managed") || geteuid() != 0)
		return 0; /* clone: read-only, read as chat2sbx's own uid */
	/* A managed workspace is chat2sbx's own: made over to the uid vm
	 * sandboxes run QEMU as (links are not followed, mounts not crossed). */
	pthread_mutex_lock(&chown_lock);
	chown_uid = POLICY_VM_UID;
	chown_gid = POLICY_VM_UID;
	chown_errno = 0;
	int r = nftw(w->path, chown_one, 32, FTW_PHYS | FTW_MOUNT);
	int e = r < 0 ? errno : chown_errno;
	pthread_mutex_unlock(&chown_lock);
	if (r < 0 || e)
		return cp_error_set_errno(err, CP_ERR_INTERNAL, e,
		                          "give workspace '%s' (%s) to uid %d for its vm sandbox", w->id, w->path,
		                          POLICY_VM_UID);
	return 0;
}
