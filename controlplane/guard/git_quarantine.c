/* git_quarantine.c: moving what a direct sandbox left in its .git (a
 * symbolic link, a FIFO, a socket, a device; git_tree.c finds them) out of
 * the repository, so the owner's next git command cannot write through it,
 * into DATA_ROOT/quarantine/<sandbox>-<time>-<pid>/ (0700) with record.json
 * saying what each was, where it was and where it points. Never follows
 * what it moves, never opens it, and deletes only what it has recreated in
 * the quarantine or what holds no data (a FIFO, socket or device node on
 * another file system). */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "../base/cleanup.h"
#include "../base/log.h"
#include "../base/private_dir.h"
#include "../base/xalloc.h"
#include "../base/xjson.h"
#include "guard.h"

void guard_git_quarantine_init(struct guard_git_quarantine *q)
{
	*q = (struct guard_git_quarantine){.dir_fd = -1};
}

/* DATA_ROOT/quarantine (0700, this user's), then a directory of its own. */
static int make_dir(struct guard_git_quarantine *q, const struct config *cfg, const char *sandbox_id,
                    struct cp_error **err)
{
	_cleanup_free_ char *root = xasprintf("%s/quarantine", cfg->data_root);
	if (private_dir_ensure(root, 0700, NULL, 0, err) < 0)
		return cp_error_prefix(err, "make the quarantine for what sandbox '%s' left in its .git", sandbox_id);
	_cleanup_close_ int root_fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (root_fd < 0)
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "open '%s'", root);
	char when[32];
	struct tm tm;
	time_t now = time(NULL);
	strftime(when, sizeof(when), "%Y%m%dT%H%M%SZ", gmtime_r(&now, &tm));
	for (int i = 0; i < 100; i++) {
		_cleanup_free_ char *name = i ? xasprintf("%s-%s-%d-%d", sandbox_id, when, (int)getpid(), i)
		                              : xasprintf("%s-%s-%d", sandbox_id, when, (int)getpid());
		if (mkdirat(root_fd, name, 0700) < 0) {
			if (errno == EEXIST)
				continue;
			return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "make '%s/%s'", root, name);
		}
		q->dir_fd = openat(root_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (q->dir_fd < 0)
			return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "open '%s/%s'", root, name);
		q->dir = xasprintf("%s/%s", root, name);
		q->record = xjson_array();
		return 0;
	}
	return cp_error_set(err, CP_ERR_UNAVAILABLE, "make a directory of its own in '%s'", root);
}

/* The directory rel's parent is, below git_fd (no symlink on the way), and
 * its last component in *ret_name (points into rel). */
static int open_parent(int git_fd, const char *rel, const char **ret_name)
{
	const char *slash = strrchr(rel, '/');
	*ret_name = slash ? slash + 1 : rel;
	_cleanup_free_ char *parent = slash ? xstrndup(rel, (size_t)(slash - rel)) : xstrdup(".");
	struct open_how how = {
	    .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
	    .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	return (int)syscall(SYS_openat2, git_fd, parent, &how, sizeof(how));
}

/* From another file system: what can be made again is made in the
 * quarantine; the original is unlinked either way (it holds no data: a
 * link's data is its target, recorded). 0 kept, 1 only removed, -1 (errno)
 * left in place. */
static int move_across(struct guard_git_quarantine *q, int pfd, const char *name, const char *as, char **target)
{
	struct stat st;
	if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -1;
	if (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)) {
		errno = EXDEV; /* swapped for something with data meanwhile: left for the person */
		return -1;
	}
	int kept;
	if (S_ISLNK(st.st_mode)) {
		char buf[4096];
		ssize_t n = readlinkat(pfd, name, buf, sizeof(buf) - 1);
		if (n < 0)
			return -1;
		buf[n] = '\0';
		free(*target);
		*target = xstrdup(buf);
		kept = symlinkat(buf, q->dir_fd, as) == 0;
	} else {
		kept = mknodat(q->dir_fd, as, st.st_mode & (S_IFMT | 0777), st.st_rdev) == 0;
	}
	if (unlinkat(pfd, name, 0) < 0) {
		int e = errno;
		if (kept)
			unlinkat(q->dir_fd, as, 0);
		errno = e;
		return -1;
	}
	return kept ? 0 : 1;
}

static void record(struct guard_git_quarantine *q, const struct policy_git_finding *f)
{
	struct json_object *o = xjson_object();
	_cleanup_free_ char *path = xasprintf(".git/%s", f->rel);
	xjson_add(o, "path", xjson_string(path));
	xjson_add(o, "type", xjson_string(policy_git_entry_name(f->kind)));
	if (f->target)
		xjson_add(o, "target", xjson_string(f->target));
	if (f->moved_as && *f->moved_as)
		xjson_add(o, "moved_as", xjson_string(f->moved_as));
	else if (f->moved_as)
		xjson_add(o, "removed", json_object_new_boolean(1));
	if (f->move_errno == ENOENT)
		xjson_add(o, "not_moved", xjson_string("gone before it could be moved"));
	else if (f->move_errno)
		xjson_add(o, "not_moved", xjson_string(strerror(f->move_errno)));
	else if (!f->moved_as)
		xjson_add(o, "not_moved", xjson_string("left in place: chat2sbx may not look into it"));
	json_object_array_add(q->record, o);
}

static void move_one(struct guard_git_quarantine *q, int git_fd, struct policy_git_finding *f)
{
	if (!strcmp(f->rel, ".") || f->kind == POLICY_GIT_ENTRY_UNREADABLE) {
		record(q, f); /* .git itself, or a directory it cannot see into: the person looks */
		return;
	}
	const char *name = NULL;
	_cleanup_close_ int pfd = open_parent(git_fd, f->rel, &name);
	if (pfd < 0) {
		f->move_errno = errno;
		record(q, f);
		return;
	}
	char as[32];
	snprintf(as, sizeof(as), "%zu", q->moved + 1);
	if (renameat2(pfd, name, q->dir_fd, as, RENAME_NOREPLACE) == 0) {
		/* What landed is what counts (it may have been swapped meanwhile). */
		struct stat st;
		if (fstatat(q->dir_fd, as, &st, AT_SYMLINK_NOFOLLOW) == 0) {
			f->kind = policy_git_entry_judge(st.st_mode);
			char buf[4096];
			ssize_t n = S_ISLNK(st.st_mode) ? readlinkat(q->dir_fd, as, buf, sizeof(buf) - 1) : -1;
			if (n >= 0) {
				free(f->target);
				f->target = xstrndup(buf, (size_t)n);
			}
		}
		f->moved_as = xstrdup(as);
		q->moved++;
	} else if (errno == EXDEV) {
		int r = move_across(q, pfd, name, as, &f->target);
		if (r < 0) {
			f->move_errno = errno;
		} else {
			f->moved_as = xstrdup(r == 0 ? as : "");
			q->moved += r == 0;
		}
	} else {
		f->move_errno = errno;
	}
	record(q, f);
}

int guard_git_quarantine_move(struct guard_git_quarantine *q, const struct config *cfg, const char *sandbox_id,
                              const char *git_dir, int git_fd, struct policy_git_finding *f, size_t n,
                              struct cp_error **err)
{
	if (q->dir_fd < 0 && make_dir(q, cfg, sandbox_id, err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (f[i].moved_as || f[i].move_errno)
			continue;
		move_one(q, git_fd, &f[i]);
		char rel[300]; /* a sandbox's bytes: escaped for the log */
		policy_text_escape(f[i].rel, strlen(f[i].rel), rel, sizeof(rel));
		if (f[i].moved_as)
			log_warn("security", "sandbox %s: moved '%s/%s' (%s) to '%s/%s'", sandbox_id, git_dir, rel,
			         policy_git_entry_name(f[i].kind), q->dir,
			         *f[i].moved_as ? f[i].moved_as : "(removed)");
		else
			log_warn("security", "sandbox %s: could not move '%s/%s' (%s): %s", sandbox_id, git_dir, rel,
			         policy_git_entry_name(f[i].kind),
			         f[i].move_errno ? strerror(f[i].move_errno) : "left in place");
	}
	return 0;
}

void guard_git_quarantine_close(struct guard_git_quarantine *q)
{
	if (q->dir_fd >= 0 && q->record) {
		const char *text = json_object_to_json_string_ext(q->record, JSON_C_TO_STRING_PRETTY);
		size_t len = strlen(text);
		int fd = openat(q->dir_fd, "record.json", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 || write(fd, text, len) != (ssize_t)len || write(fd, "\n", 1) != 1)
			log_warn("guard", "write '%s/record.json': %s", q->dir, strerror(errno));
		if (fd >= 0)
			close(fd);
	}
	if (q->dir_fd >= 0)
		close(q->dir_fd);
	json_object_put(q->record);
	free(q->dir);
	guard_git_quarantine_init(q);
}
