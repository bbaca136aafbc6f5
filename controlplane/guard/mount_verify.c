/* mount_verify.c: making sure the host directory a sandbox mounts is the one
 * the policy checked. The engine gets a path string and resolves it again
 * at every container start; a path component that some sandbox can write
 * could be swapped for a symlink (or renamed) in between. Two layers:
 *   (b) nesting: no host workspace inside a direct-mode one, no direct-mode
 *       one around another (policy_host_nesting_check), so no sandbox can
 *       write a component of another workspace's path;
 *   (a) identity: the checked path is opened without following any symlink
 *       (openat2 RESOLVE_NO_SYMLINKS) and its (st_dev, st_ino) noted; once
 *       the container runs, before anything else runs in it, the helper
 *       stats the mount target (fs.stat) and the two must agree. Under runc
 *       a bind mount shows the host's st_dev and st_ino. gVisor (runsc)
 *       does not (its gofer file system reports its own device and inode
 *       numbers: dev 9, ino 1 for a bind-mounted directory, measured), so
 *       for runtimes other than runc only layer (b) and the openat2 check
 *       apply. */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "proto.h" /* template/helper/proto.h: PROTO_CHANNEL_DIR */
#include "../base/xjson.h"
#include "../base/xalloc.h"
#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/log.h"
#include "../policy/policy.h"
#include "guard.h"

/* 1 when dir/name exists and is of type (S_IFDIR, S_IFREG), not followed. */
static int has_entry(const char *dir, const char *name, mode_t type)
{
	char path[PATH_MAX];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return lstat(path, &st) == 0 && (st.st_mode & S_IFMT) == type;
}

/* Direct mode on a git directory itself (a component ".git", or a bare
 * repository: HEAD, objects/ and refs/) would hand the sandbox the
 * repository's config and hooks, which the .git protection keeps read-only
 * only below a working tree. */
static int git_dir_refused(const char *real, struct cp_error **err)
{
	for (const char *p = real; (p = strstr(p, "/.git")); p += 5)
		if (p[5] == '\0' || p[5] == '/')
			return cp_error_set(
			    err, CP_ERR_DENIED,
			    "host path '%s' is inside a repository's .git directory; direct mode would let "
			    "the sandbox rewrite its configuration and hooks; give the working tree that "
			    "holds the .git, or use clone mode",
			    real);
	if (has_entry(real, "HEAD", S_IFREG) && has_entry(real, "objects", S_IFDIR) && has_entry(real, "refs", S_IFDIR))
		return cp_error_set(
		    err, CP_ERR_DENIED,
		    "host path '%s' is a git directory (a bare repository: HEAD, objects/, refs/); direct "
		    "mode would let the sandbox rewrite its configuration and hooks; clone it into a "
		    "working tree and give that, or use clone mode",
		    real);
	return 0;
}

/* Whether w is a directory of node (NULL: this machine's): a host
 * workspace of another node is that node's path; every other row (a
 * managed workspace of another node is a volume there, its directory here
 * empty) is this machine's, as before migration 0018. */
static bool on_machine(const struct workspace_record *w, const char *node)
{
	bool remote_host = w->node && strcmp(w->node, STORE_NODE_LOCAL) != 0 && strcmp(w->mode, "managed") != 0;
	if (!node)
		return !remote_host;
	return remote_host && !strcmp(w->node, node);
}

/* The nesting rule against the workspaces of node (NULL: this machine). */
static int nesting_on(struct store *store, const char *node, const char *real, const char *mode, const char *self_id,
                      struct cp_error **err)
{
	struct workspace_record *rows = NULL;
	size_t n = 0;
	if (store_workspace_list(store, &rows, &n, err) < 0)
		return cp_error_prefix(err, "check host path '%s' against the other workspaces", real);
	struct policy_host_workspace *others = xcalloc(n ? n : 1, sizeof(*others));
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		const struct workspace_record *w = &rows[i];
		if ((self_id && !strcmp(w->id, self_id)) || w->trashed_at_ms > 0 || !w->path ||
		    !strcmp(w->path, real) || !on_machine(w, node))
			continue; /* itself, the same directory (reused), or another machine's */
		others[k++] = (struct policy_host_workspace){.id = w->id, .path = w->path, .mode = w->mode};
	}
	int r = policy_host_nesting_check(real, mode, others, k, err);
	free(others);
	for (size_t i = 0; i < n; i++)
		workspace_record_clear(&rows[i]);
	free(rows);
	return r;
}

int guard_host_nesting_check(struct store *store, const char *real, const char *mode, const char *self_id,
                             struct cp_error **err)
{
	if (mode && !strcmp(mode, "direct") && git_dir_refused(real, err) < 0)
		return -1;
	return nesting_on(store, NULL, real, mode, self_id, err);
}

int guard_node_nesting_check(struct store *store, const char *node, const char *path, const char *mode,
                             const char *self_id, struct cp_error **err)
{
	if (nesting_on(store, node, path, mode, self_id, err) < 0)
		return cp_error_prefix(err, "on node '%s'", node);
	return 0;
}

int guard_mount_open(const char *real, int *ret_fd, uint64_t *ret_dev, uint64_t *ret_ino, struct cp_error **err)
{
	struct open_how how = {
	    .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
	    .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	int fd = (int)syscall(SYS_openat2, AT_FDCWD, real, &how, sizeof(how));
	if (fd < 0) {
		int e = errno;
		if (e == ELOOP || e == ENOTDIR || e == ENOENT || e == EXDEV)
			return cp_error_set(
			    err, CP_ERR_CONFLICT,
			    "the directory '%s' changed while it was being mounted (a symlink or rename "
			    "race: %s); nothing was mounted; try again",
			    real, strerror(e));
		return cp_error_set_errno(err, CP_ERR_INTERNAL, e, "open '%s' to verify it before mounting", real);
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		return cp_error_set_errno(err, CP_ERR_INTERNAL, e, "stat '%s' to verify it before mounting", real);
	}
	*ret_dev = (uint64_t)st.st_dev;
	*ret_ino = (uint64_t)st.st_ino;
	*ret_fd = fd;
	return 0;
}

int guard_mount_identity(const char *real, uint64_t *ret_dev, uint64_t *ret_ino, struct cp_error **err)
{
	int fd = -1;
	if (guard_mount_open(real, &fd, ret_dev, ret_ino, err) < 0)
		return -1;
	close(fd);
	return 0;
}

/* Undoes mountinfo's octal escapes (\040 for a space, proc(5)) in place. */
static void mountinfo_unescape(char *s)
{
	char *o = s;
	for (char *p = s; *p; p++) {
		if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' && p[3] >= '0' &&
		    p[3] <= '7') {
			*o++ = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
			p += 3;
		} else {
			*o++ = *p;
		}
	}
	*o = '\0';
}

int guard_mount_alias_check(const char *real, struct cp_error **err)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return cp_error_set_errno(err, CP_ERR_INTERNAL, errno, "read /proc/self/mountinfo to check '%s'", real);
	char line[8192], best_point[4096] = "", best_root[4096] = "/";
	size_t best_len = 0;
	while (fgets(line, sizeof(line), f)) {
		/* "ID PARENT MAJ:MIN ROOT MOUNT_POINT ..." (proc(5)). */
		char root[4096], point[4096];
		if (sscanf(line, "%*s %*s %*s %4095s %4095s", root, point) != 2)
			continue;
		mountinfo_unescape(root);
		mountinfo_unescape(point);
		size_t n = strlen(point);
		int covers =
		    !strcmp(point, "/") || (strncmp(real, point, n) == 0 && (real[n] == '\0' || real[n] == '/'));
		if (covers && (n > best_len || (n == best_len && n > 0))) { /* the last of equal ones is on top */
			best_len = n;
			snprintf(best_point, sizeof(best_point), "%s", point);
			snprintf(best_root, sizeof(best_root), "%s", root);
		}
	}
	fclose(f);
	if (!strcmp(best_root, "/"))
		return 0;
	return cp_error_set(err, CP_ERR_DENIED,
	                    "'%s' lies on a bind mount (at '%s', of '%s' of its file system); with this runtime "
	                    "chat2sbx cannot verify which directory the engine mounts, so such a path could alias a "
	                    "direct-mode workspace: approve the directory by its own path, or use the runc runtime",
	                    real, best_point, best_root);
}

int guard_mount_runtime_verifiable(const char *runtime)
{
	/* vm: checked in the container, not in the guest (vm.c). */
	return !runtime || !runtime[0] || !strcmp(runtime, "runc") || policy_runtime_is_vm(runtime);
}

void guard_mount_audit(const struct guard_host *h, const char *sandbox_id, const char *target, const char *message)
{
	guard_security_audit(h, "sandbox.mount_refused", sandbox_id, target, message);
}

void guard_security_audit(const struct guard_host *h, const char *action, const char *sandbox_id, const char *target,
                          const char *message)
{
	log_warn("security", "%s", message);
	struct audit_record a = {
	    .at_ms = clock_now_ms(),
	    .actor = "serve",
	    .action = action,
	    .sandbox_id = sandbox_id,
	    .target = target,
	    .status = "DENIED",
	    .message = message,
	};
	_cleanup_error_ struct cp_error *e = NULL;
	if (store_audit_insert(h->store, &a, &e) < 0)
		log_warn("guard", "audit %s of %s: %s", action, sandbox_id ? sandbox_id : target, e->message);
}

int guard_mount_verify(const struct guard_host *h, struct helper_channel *ch, const char *sandbox_id,
                       const char *target, const char *host_dir, uint64_t dev, uint64_t ino, struct cp_error **err)
{
	_cleanup_json_ struct json_object *p = xjson_object();
	xjson_add(p, "path", xjson_string(target));
	_cleanup_json_ struct json_object *res = NULL;
	struct cp_error *e = NULL;
	if (helper_channel_call(ch, "fs.stat", p, POLICY_HELLO_TIMEOUT_MS, &res, &e) < 0) {
		if (e->code != CP_ERR_NOT_FOUND) {
			if (err && !*err)
				*err = e; /* ownership passes to the caller */
			else
				cp_error_free(e);
			return cp_error_prefix(err, "verify the mount '%s' of sandbox '%s'", target, sandbox_id);
		}
		/* Nothing at the mount point: the host path was renamed away
		 * between the check and the engine's mount (or after it). */
		cp_error_free(e);
		char msg[1024];
		snprintf(msg, sizeof(msg),
		         "the host path '%s' changed while it was being mounted (a symlink or rename race): sandbox "
		         "'%s' sees nothing at %s; the sandbox was removed before anything ran in it; try again",
		         host_dir, sandbox_id, target);
		guard_mount_audit(h, sandbox_id, host_dir, msg);
		return cp_error_set(err, CP_ERR_DENIED, "%s", msg);
	}
	return guard_mount_compare(h, sandbox_id, target, host_dir, dev, ino, res, err);
}

int guard_mount_compare(const struct guard_host *h, const char *sandbox_id, const char *target, const char *host_dir,
                        uint64_t dev, uint64_t ino, struct json_object *res, struct cp_error **err)
{
	struct json_object *v = NULL;
	int64_t maj = json_object_object_get_ex(res, "dev_major", &v) ? json_object_get_int64(v) : -1;
	int64_t min = json_object_object_get_ex(res, "dev_minor", &v) ? json_object_get_int64(v) : -1;
	int64_t got_ino = json_object_object_get_ex(res, "ino", &v) ? json_object_get_int64(v) : -1;
	if (maj >= 0 && min >= 0 && got_ino >= 0 && makedev((unsigned)maj, (unsigned)min) == (dev_t)dev &&
	    (uint64_t)got_ino == ino)
		return 0;
	char msg[1024];
	snprintf(msg, sizeof(msg),
	         "the host path '%s' changed while it was being mounted (a symlink or rename race): sandbox '%s' "
	         "sees %lld:%lld inode %lld at %s, the checked one is %u:%u inode %llu; the sandbox "
	         "was removed before anything ran in it; try again",
	         host_dir, sandbox_id, (long long)maj, (long long)min, (long long)got_ino, target, major((dev_t)dev),
	         minor((dev_t)dev), (unsigned long long)ino);
	guard_mount_audit(h, sandbox_id, host_dir, msg);
	return cp_error_set(err, CP_ERR_DENIED, "%s", msg);
}

/* Mount points every container of the engine has (runc: the root, procfs
 * and its masks, sysfs and cgroups, /dev, and the files the engine writes). */
static int standard_mount_point(const char *p)
{
	static const char *const under[] = {"/proc", "/sys", "/dev"};
	static const char *const exact[] = {"/", "/etc/resolv.conf", "/etc/hostname", "/etc/hosts"};
	for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
		if (!strcmp(p, exact[i]))
			return 1;
	for (size_t i = 0; i < sizeof(under) / sizeof(under[0]); i++) {
		size_t n = strlen(under[i]);
		if (!strncmp(p, under[i], n) && (p[n] == '\0' || p[n] == '/'))
			return 1;
	}
	return 0;
}

/* True when the comma-separated mount options opts hold "ro". */
static int has_ro(const char *opts)
{
	for (const char *p = opts; *p;) {
		size_t n = strcspn(p, ",");
		if (n == 2 && !strncmp(p, "ro", 2))
			return 1;
		p += n + (p[n] == ',');
	}
	return 0;
}

int guard_mountinfo_judge(const char *mountinfo, const struct guard_mount_want *want, size_t n, char *reason,
                          size_t size)
{
	int *seen = xcalloc(n ? n : 1, sizeof(*seen));
	int r = 0;
	const char *line = mountinfo;
	while (r == 0 && line && *line) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		char buf[8192], root[4096], point[4096], opts[1024];
		snprintf(buf, sizeof(buf), "%.*s", (int)len, line);
		line = end ? end + 1 : NULL;
		/* "ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS ..." (proc(5)). */
		if (sscanf(buf, "%*s %*s %*s %4095s %4095s %1023s", root, point, opts) != 3)
			continue;
		mountinfo_unescape(root);
		mountinfo_unescape(point);
		int expected = 0;
		for (size_t i = 0; i < n; i++) {
			if (strcmp(point, want[i].target) != 0)
				continue;
			expected = 1;
			seen[i] = 1;
			if (want[i].read_only && !has_ro(opts)) {
				snprintf(reason, size, "'%s' is mounted read-write (%s), not read-only", point, opts);
				r = -1;
			}
		}
		if (r == 0 && !expected && !standard_mount_point(point)) {
			snprintf(reason, size, "something was mounted at '%s' (of '%s'), where nothing was asked for",
			         point, root);
			r = -1;
		}
	}
	for (size_t i = 0; r == 0 && i < n; i++)
		if (!seen[i] && !want[i].optional) {
			snprintf(reason, size, "'%s' is not a mount point", want[i].target);
			r = -1;
		}
	free(seen);
	return r;
}

int guard_mounts_judge(const struct guard_host *h, const struct sandbox_record *s, const char *mode,
                       const struct sandbox_mount_record *m, size_t n, struct json_object *reply, struct cp_error **err)
{
	struct json_object *v = NULL;
	const char *mountinfo =
	    json_object_object_get_ex(reply, "mountinfo", &v) && json_object_is_type(v, json_type_string)
	        ? json_object_get_string(v)
	        : "";
	int clone = !strcmp(mode, "clone");
	_cleanup_free_ struct guard_mount_want *want = xcalloc(n + 6, sizeof(*want));
	size_t k = 0;
	/* On another node the helper is copied in, not mounted (lifecycle/create.c). */
	if (!s->node || !strcmp(s->node, STORE_NODE_LOCAL))
		want[k++] = (struct guard_mount_want){.target = POLICY_HELPER_TARGET, .read_only = 1};
	want[k++] = (struct guard_mount_want){.target = clone ? POLICY_SOURCE_TARGET : POLICY_WORKSPACE_TARGET,
	                                      .read_only = clone};
	for (size_t i = 0; i < n; i++)
		want[k++] = (struct guard_mount_want){.target = m[i].target, .read_only = m[i].read_only};
	/* The direct channel's directory (lifecycle/create.c); sandboxes made
	 * before it existed have none. */
	if (policy_runtime_direct_channel(s->runtime))
		want[k++] = (struct guard_mount_want){.target = PROTO_CHANNEL_DIR, .read_only = 1, .optional = 1};
	/* vm: the launcher beside the helper (vm.c). */
	if (policy_runtime_is_vm(s->runtime))
		want[k++] = (struct guard_mount_want){.target = GUARD_VM_TARGET, .read_only = 1};
	/* TEST ONLY: the engine socket; the mount table names it where the
	 * image's /var/run leads (a symlink to /run in Debian images). */
	if (h->cfg->test_unsafe_mount_docker_socket) {
		want[k++] = (struct guard_mount_want){.target = "/var/run/docker.sock", .optional = 1};
		want[k++] = (struct guard_mount_want){.target = "/run/docker.sock", .optional = 1};
	}
	char reason[1024];
	if (guard_mountinfo_judge(mountinfo, want, k, reason, sizeof(reason)) == 0)
		return 0;
	char msg[1400];
	snprintf(msg, sizeof(msg),
	         "the mounts of sandbox '%s' are not the ones asked for: %s (a path of the workspace's .git changed "
	         "while it was being mounted: a symlink or rename race); the sandbox was removed before anything "
	         "ran in it; try again",
	         s->id, reason);
	guard_mount_audit(h, s->id, POLICY_WORKSPACE_TARGET, msg);
	return cp_error_set(err, CP_ERR_DENIED, "%s", msg);
}

int guard_mounts_verify(const struct guard_host *h, struct helper_channel *ch, const struct sandbox_record *s,
                        const char *mode, const struct sandbox_mount_record *m, size_t n, struct cp_error **err)
{
	_cleanup_json_ struct json_object *res = NULL;
	if (helper_channel_call(ch, "fs.mounts", NULL, POLICY_HELLO_TIMEOUT_MS, &res, err) < 0)
		return cp_error_prefix(err, "verify the mounts of sandbox '%s'", s->id);
	return guard_mounts_judge(h, s, mode, m, n, res, err);
}
