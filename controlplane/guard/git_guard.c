/* git_guard.c: a direct workspace's .git, protected from its sandbox. The
 * parts policy_git_paths names are bind-mounted over the sandbox's view of
 * the directory: .git itself (a mount point cannot be renamed or removed)
 * and, read-only on top of it, config, hooks and the other files that decide
 * what the owner's git runs. Each source is a host path the engine resolves
 * again, and a previous sandbox may have planted a symlink there, so each is
 * opened beneath the already-verified workspace directory without following
 * any symlink, must have git's type, and its identity is verified from inside
 * like the workspace mount (mount_verify.c) and re-checked afterwards:
 *   - from inside, at every re-attach (recovery.c);
 *   - on the host, at every tool call and maintenance pass: a host-side
 *     rename over a mount point (the owner's own `git config` rewrites
 *     .git/config that way) makes the kernel drop that mount inside the
 *     container (measured on 6.18), so the sandbox is then stopped.
 * The mount targets lie in the host directory too, so the container's mount
 * table is judged as well (mount_verify.c, guard_mounts_verify).
 * The rest of .git must hold nothing but regular files and directories,
 * judged whole at create (here) and at every call, re-attach and
 * maintenance pass (git_watch.c, from guard_git_check).
 * Creates only the placeholders of missing protected paths (empty, or "."
 * for commondir); never deletes or rewrites anything in the repository. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../base/xalloc.h"
#include "../base/cleanup.h"
#include "../base/log.h"
#include "../policy/policy.h"
#include "guard.h"

/* A gitfile or a commondir is a line; git itself refuses gitfiles over 1 MiB. */
#define GIT_SMALL_FILE_MAX 4096

void guard_git_clear(struct guard_git *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->n; i++)
		sandbox_mount_record_clear(&g->mounts[i]);
	free(g->mounts);
	*g = (struct guard_git){0};
}

/* openat2 beneath dirfd, never through a symlink (the last component
 * included: ELOOP), never up and out (EXDEV). */
static int open_beneath(int dirfd, const char *name, int flags)
{
	struct open_how how = {
	    .flags = (uint64_t)(flags | O_CLOEXEC),
	    .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	return (int)syscall(SYS_openat2, dirfd, name, &how, sizeof(how));
}

/* CONFLICT when openat2 saw the path move during the lookup: EXDEV (it
 * ended outside the directory it was looked up in, e.g. a rename(2) with
 * RENAME_EXCHANGE moved it away) or EAGAIN (a rename or mount raced the
 * scoped lookup); openat2(2), RESOLVE_BENEATH. */
static int moved_refused(const char *real, const char *rel, struct cp_error **err)
{
	return cp_error_set_errno(err, CP_ERR_CONFLICT, errno,
	                          "'%s/%s' changed while it was being checked (it was renamed or moved while chat2sbx "
	                          "looked it up); chat2sbx never mounts a path that moves; look at what changes it "
	                          "and create the sandbox again; nothing was created",
	                          real, rel);
}

static bool lookup_raced(int e)
{
	return e == EXDEV || e == EAGAIN;
}

static const char *type_name(mode_t m)
{
	return S_ISDIR(m) ? "directory" : S_ISREG(m) ? "regular file" : S_ISLNK(m) ? "symbolic link" : "special file";
}

/* DENIED for a symlink found at rel (below dir) where a protected path is. */
static int symlink_refused(int parent_fd, const char *name, const char *real, const char *rel, struct cp_error **err)
{
	char raw[PATH_MAX] = "?", target[1200];
	ssize_t n = readlinkat(parent_fd, name, raw, sizeof(raw) - 1);
	if (n >= 0)
		raw[n] = '\0';
	/* A sandbox wrote the target: shown escaped, never as raw bytes. */
	policy_text_escape(raw, strlen(raw), target, sizeof(target));
	if (!strcmp(rel, ".git"))
		return cp_error_set(err, CP_ERR_DENIED,
		                    "'%s/.git' is a symbolic link (to '%s'); in direct mode chat2sbx mounts the "
		                    "repository's .git itself and never follows a link there; replace the link with "
		                    "the directory it points to, or use clone mode; nothing was created",
		                    real, target);
	return cp_error_set(err, CP_ERR_DENIED,
	                    "'%s/%s' is a symbolic link (to '%s'); chat2sbx mounts it read-only into a direct-mode "
	                    "sandbox and never follows a link there (a sandbox may have planted it to get another "
	                    "host path mounted); look at it, remove it (rm '%s/%s') and create the sandbox again; "
	                    "nothing was created",
	                    real, rel, target, real, rel);
}

static int type_refused(const char *real, const char *rel, mode_t found, bool want_dir, struct cp_error **err)
{
	return cp_error_set(err, CP_ERR_DENIED,
	                    "'%s/%s' is a %s where git keeps a %s; chat2sbx mounts it read-only into a direct-mode "
	                    "sandbox and refuses anything else there; move it away and create the sandbox again; "
	                    "nothing was created",
	                    real, rel, type_name(found), want_dir ? "directory" : "regular file");
}

/* Looks at name below parent_fd (rel is its path below the workspace real):
 * 0 with *ret_st filled, 1 when it does not exist, -1 DENIED for a symlink
 * or a type other than want_dir says. */
static int inspect(int parent_fd, const char *name, const char *real, const char *rel, bool want_dir,
                   struct stat *ret_st, struct cp_error **err)
{
	_cleanup_close_ int fd = open_beneath(parent_fd, name, O_PATH);
	if (fd < 0) {
		if (errno == ENOENT)
			return 1;
		if (errno == ELOOP)
			return symlink_refused(parent_fd, name, real, rel, err);
		if (lookup_raced(errno))
			return moved_refused(real, rel, err);
		return cp_error_set_errno(err, CP_ERR_INTERNAL, errno, "open '%s/%s' to check it before mounting", real,
		                          rel);
	}
	if (fstat(fd, ret_st) < 0)
		return cp_error_set_errno(err, CP_ERR_INTERNAL, errno, "stat '%s/%s' before mounting", real, rel);
	if (want_dir ? !S_ISDIR(ret_st->st_mode) : !S_ISREG(ret_st->st_mode))
		return type_refused(real, rel, ret_st->st_mode, want_dir, err);
	return 0;
}

/* Reads the small regular file name below parent_fd (no symlink) into buf
 * (size bytes, NUL-terminated); *ret_len its length. */
static int read_small(int parent_fd, const char *name, const char *real, const char *rel, char *buf, size_t size,
                      size_t *ret_len, struct cp_error **err)
{
	/* O_NONBLOCK: a FIFO swapped in after the type check must not hang us. */
	_cleanup_close_ int fd = open_beneath(parent_fd, name, O_RDONLY | O_NONBLOCK);
	if (fd < 0 && lookup_raced(errno))
		return moved_refused(real, rel, err);
	if (fd < 0)
		return cp_error_set_errno(err, errno == ELOOP ? CP_ERR_DENIED : CP_ERR_INTERNAL, errno,
		                          "read '%s/%s' before mounting", real, rel);
	ssize_t n = read(fd, buf, size - 1);
	if (n < 0)
		return cp_error_set_errno(err, CP_ERR_INTERNAL, errno, "read '%s/%s' before mounting", real, rel);
	buf[n] = '\0';
	*ret_len = (size_t)n;
	return 0;
}

/* realpath(3) of the longest existing prefix of path, with the rest
 * appended: where the path would lead once the rest were created. */
static char *resolve_existing(const char *path)
{
	_cleanup_free_ char *head = xstrdup(path);
	for (;;) {
		char *r = realpath(head, NULL);
		if (r) {
			size_t hl = strlen(head);
			const char *tail = path + hl; /* "" or "/rest" */
			char *out = xasprintf("%s%s", strcmp(r, "/") || !*tail ? r : "", tail);
			free(r);
			return out;
		}
		if (errno != ENOENT && errno != ENOTDIR)
			return NULL;
		char *slash = strrchr(head, '/');
		if (!slash || slash == head)
			return xstrdup(path); /* nothing of it exists but "/" */
		*slash = '\0';
	}
}

/* A gitfile: fine when it names a git dir outside the workspace (the
 * sandbox never sees it), refused when that git dir lies inside, where the
 * sandbox could write its config. Not a gitfile git would follow: fine. */
static int gitfile_check(int ws_fd, const char *real, struct cp_error **err)
{
	char buf[GIT_SMALL_FILE_MAX];
	size_t len = 0;
	if (read_small(ws_fd, ".git", real, ".git", buf, sizeof(buf), &len, err) < 0)
		return -1;
	_cleanup_free_ char *gitdir = NULL;
	if (!policy_gitfile_parse(real, buf, len, &gitdir))
		return 0;
	_cleanup_free_ char *resolved = resolve_existing(gitdir);
	if (!resolved)
		return cp_error_set_errno(err, CP_ERR_INTERNAL, errno, "resolve '%s', named by '%s/.git'", gitdir,
		                          real);
	if (!strcmp(resolved, real) || policy_path_strictly_below(resolved, real))
		return cp_error_set(err, CP_ERR_DENIED,
		                    "'%s/.git' names the git directory '%s', which lies inside the directory itself, "
		                    "where a direct-mode sandbox could rewrite its configuration and hooks; chat2sbx "
		                    "protects only a .git directory or a git directory outside; use clone mode",
		                    real, resolved);
	return 0;
}

static int placeholder_failed(const char *real, const struct policy_git_path *p, int e, struct cp_error **err)
{
	return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, e,
	                          "create '%s/%s' (an empty %s that direct-mode sandboxes see read-only, so they "
	                          "cannot create it); create it yourself, or use clone mode",
	                          real, p->rel, p->directory ? "directory" : "file");
}

/* Creates the missing protected path p below git_fd, owned like .git
 * (git_st) when this process may choose an owner. One that appeared
 * meanwhile is left as it is (the next inspection judges it). */
static int create_placeholder(int git_fd, const struct stat *git_st, const char *real, const struct policy_git_path *p,
                              struct cp_error **err)
{
	const char *name = p->rel + strlen(".git/");
	int chown_it = geteuid() == 0 && (git_st->st_uid != 0 || git_st->st_gid != 0);
	if (p->missing == POLICY_GIT_MISSING_MKDIR) {
		if (mkdirat(git_fd, name, 0755) < 0)
			return errno == EEXIST ? 0 : placeholder_failed(real, p, errno, err);
		if (chown_it && fchownat(git_fd, name, git_st->st_uid, git_st->st_gid, AT_SYMLINK_NOFOLLOW) < 0)
			return placeholder_failed(real, p, errno, err);
	} else {
		_cleanup_close_ int fd =
		    openat(git_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0)
			return errno == EEXIST ? 0 : placeholder_failed(real, p, errno, err);
		size_t len = strlen(p->content);
		if (len && write(fd, p->content, len) != (ssize_t)len)
			return placeholder_failed(real, p, errno, err);
		if (chown_it && fchown(fd, git_st->st_uid, git_st->st_gid) < 0)
			return placeholder_failed(real, p, errno, err);
	}
	log_info("guard", "created '%s/%s' (a placeholder mounted read-only into direct-mode sandboxes)", real, p->rel);
	return 0;
}

/* Opens every path of the table beneath ws_fd (no symlink, git's type) and
 * records it as a mount: source below real, target below target_root. */
static int collect(int ws_fd, const char *real, const char *target_root, const struct policy_git_path *paths, size_t n,
                   struct guard_git *ret, struct cp_error **err)
{
	ret->mounts = xcalloc(n, sizeof(*ret->mounts));
	for (size_t i = 0; i < n; i++) {
		const struct policy_git_path *p = &paths[i];
		struct stat st;
		int r = inspect(ws_fd, p->rel, real, p->rel, p->directory, &st, err);
		if (r > 0)
			r = cp_error_set(err, CP_ERR_CONFLICT,
			                 "'%s/%s' disappeared while it was being prepared for mounting; nothing was "
			                 "mounted; try again",
			                 real, p->rel);
		if (r < 0)
			return -1;
		struct sandbox_mount_record *m = &ret->mounts[ret->n];
		m->source = xasprintf("%s/%s", real, p->rel);
		m->target = xasprintf("%s/%s", target_root, p->rel);
		m->read_only = p->read_only;
		m->dev = (uint64_t)st.st_dev;
		m->ino = (uint64_t)st.st_ino;
		ret->n++;
	}
	return 0;
}

/* A .git directory: inspect every protected path first (a refusal creates
 * nothing), then create the missing ones, then collect. */
static int prepare_directory(int ws_fd, const char *real, const char *target_root, struct guard_git *ret,
                             struct cp_error **err)
{
	size_t n = 0;
	const struct policy_git_path *paths = policy_git_paths(POLICY_GIT_DIRECTORY, &n);
	_cleanup_close_ int git_fd = open_beneath(ws_fd, ".git", O_RDONLY | O_DIRECTORY);
	struct stat git_st;
	if (git_fd < 0 || fstat(git_fd, &git_st) < 0)
		return cp_error_set_errno(err, CP_ERR_CONFLICT, errno,
		                          "open '%s/.git' to protect it; it changed while it was being checked; try "
		                          "again",
		                          real);
	bool missing[16] = {false};
	assert(n <= sizeof(missing) / sizeof(missing[0]));
	/* Then the whole tree: a symlink, FIFO or device anywhere in it is
	 * refused before anything is created (git_tree.c says why). */
	char git_dir[PATH_MAX + 8];
	snprintf(git_dir, sizeof(git_dir), "%s/.git", real);
	for (size_t i = 1; i < n; i++) {
		const struct policy_git_path *p = &paths[i];
		const char *name = p->rel + strlen(".git/");
		struct stat st;
		int r = inspect(git_fd, name, real, p->rel, p->directory, &st, err);
		if (r < 0)
			return -1;
		missing[i] = r > 0;
		if (!missing[i] && !strcmp(name, "commondir")) {
			char buf[GIT_SMALL_FILE_MAX], shown[PATH_MAX + 16];
			size_t len = 0;
			snprintf(shown, sizeof(shown), "%s/%s", real, p->rel);
			if (read_small(git_fd, name, real, p->rel, buf, sizeof(buf), &len, err) < 0 ||
			    policy_git_commondir_check(shown, buf, len, err) < 0)
				return -1;
		}
	}
	if (guard_git_tree_judge(git_fd, git_dir, err) < 0)
		return -1;
	for (size_t i = 1; i < n; i++)
		if (missing[i] && create_placeholder(git_fd, &git_st, real, &paths[i], err) < 0)
			return -1;
	return collect(ws_fd, real, target_root, paths, n, ret, err);
}

int guard_git_prepare(int ws_fd, const char *real, const char *target_root, struct guard_git *ret,
                      struct cp_error **err)
{
	*ret = (struct guard_git){.shape = POLICY_GIT_NONE};
	_cleanup_close_ int fd = open_beneath(ws_fd, ".git", O_PATH);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0; /* not a repository: nothing of git to protect (docs/workspaces.md) */
		if (errno == ELOOP)
			return symlink_refused(ws_fd, ".git", real, ".git", err);
		if (lookup_raced(errno))
			return moved_refused(real, ".git", err);
		return cp_error_set_errno(err, CP_ERR_INTERNAL, errno, "open '%s/.git' to check it before mounting",
		                          real);
	}
	struct stat st;
	if (fstat(fd, &st) < 0)
		return cp_error_set_errno(err, CP_ERR_INTERNAL, errno, "stat '%s/.git' before mounting", real);
	int r;
	if (S_ISDIR(st.st_mode)) {
		ret->shape = POLICY_GIT_DIRECTORY;
		r = prepare_directory(ws_fd, real, target_root, ret, err);
	} else if (S_ISREG(st.st_mode)) {
		ret->shape = POLICY_GIT_GITFILE;
		size_t n = 0;
		const struct policy_git_path *paths = policy_git_paths(POLICY_GIT_GITFILE, &n);
		r = gitfile_check(ws_fd, real, err);
		if (r == 0)
			r = collect(ws_fd, real, target_root, paths, n, ret, err);
	} else {
		r = type_refused(real, ".git", st.st_mode, true, err);
	}
	if (r < 0)
		guard_git_clear(ret);
	return r;
}

int guard_git_verify(const struct guard_host *h, struct helper_channel *ch, const char *sandbox_id,
                     const struct sandbox_mount_record *m, size_t n, struct cp_error **err)
{
	for (size_t i = 0; i < n; i++)
		if (guard_mount_verify(h, ch, sandbox_id, m[i].target, m[i].source, m[i].dev, m[i].ino, err) < 0)
			return -1;
	return 0;
}

int guard_git_host_lost(const struct sandbox_mount_record *m, size_t n, char *reason, size_t size)
{
	for (size_t i = 0; i < n; i++) {
		struct open_how how = {
		    .flags = O_PATH | O_CLOEXEC,
		    .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
		};
		_cleanup_close_ int fd = (int)syscall(SYS_openat2, AT_FDCWD, m[i].source, &how, sizeof(how));
		struct stat st;
		if (fd >= 0 && fstat(fd, &st) == 0 && (uint64_t)st.st_dev == m[i].dev &&
		    (uint64_t)st.st_ino == m[i].ino)
			continue;
		snprintf(reason, size,
		         "'%s' was replaced or removed on the host while the sandbox ran (%s), which drops its "
		         "protection inside the sandbox (git rewrites .git/config for git config, git remote, git push "
		         "-u, git branch -u/-m/-d, git checkout --track, git submodule init); the sandbox was stopped. "
		         "Check '%s' for entries you did not make (core.fsmonitor, core.hooksPath, include.path, "
		         "aliases, hooks) and create a new sandbox",
		         m[i].source, fd < 0 ? strerror(errno) : "another file is there now", m[i].source);
		return (int)i + 1;
	}
	return 0;
}
