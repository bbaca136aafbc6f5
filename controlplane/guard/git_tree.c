/* git_tree.c: a direct workspace's whole .git, walked on the host without
 * following any symlink, judged entry by entry (policy/git_tree.c: regular
 * files and directories only), with a cache that keeps each directory's
 * identity and times so that a walk re-reads only the directories that
 * changed, and optional inotify watches on every directory it holds (the
 * watcher is git_watch.c's). Reads only: never changes the repository.
 *
 * Why the whole tree (measured with strace on git 2.39.5, the owner's
 * stash, commit, merge, fetch, rebase, gc, checkout, branch, tag, reset):
 * git opens without O_NOFOLLOW, so through a symlink,
 *   O_APPEND  logs/HEAD, logs/refs/..., rebase-merge/done, rewritten-list;
 *   O_TRUNC   COMMIT_EDITMSG, MERGE_MSG, MERGE_HEAD, MERGE_MODE, AUTO_MERGE,
 *             FETCH_HEAD, the files of rebase-merge/ (onto, head-name, ...);
 * and refs, ORIG_HEAD, HEAD, index, packed-refs, objects/xx/ are written
 * as "name.lock" (O_CREAT|O_EXCL, which refuses a symlink as last
 * component) renamed over the name, but the directories on the way are
 * resolved through any symlink (refs/heads -> ~/x puts the lock file and
 * the renamed ref in ~/x; objects/ab -> ~/y puts objects there). Reads go
 * through links too (files_read_raw_ref follows a link that does not look
 * like a symref). Which names git writes grows with every release, so the
 * rule is the tree's, not a list's: no symbolic link, FIFO, socket or
 * device anywhere below .git. Hard links need no rule: .git is a mount of
 * its own in the sandbox, so link(2) into it from the rest of the
 * workspace fails (EXDEV), and one between two files of .git stays in the
 * repository.
 *
 * The cache is sound without the watches: a directory gains or loses an
 * entry only by a change that sets its ctime to the current time (the
 * sandbox can set mtime, not ctime), so a directory whose (dev, ino,
 * ctime, mtime) are as recorded holds the same names of the same types
 * (a name's type cannot change in place). A directory read less than
 * GIT_TREE_RACY_NS after its last change is read again next time (a change
 * in the same clock tick as the read would keep its ctime; git's "racy
 * git" problem). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../base/cleanup.h"
#include "../base/xalloc.h"
#include "guard.h"

/* See the top: a directory changed this close to its read is read again. */
#define GIT_TREE_RACY_NS (100LL * 1000 * 1000)
/* At most this many watches per tree; past it the tree is only partly
 * watched (calls and the maintenance pass still walk all of it), so a
 * sandbox making directories cannot use up the user's inotify watches. */
#define GIT_TREE_MAX_WATCHES 8192
/* What a watch reports: anything new in a directory. */
#define GIT_TREE_WATCH_MASK (IN_CREATE | IN_MOVED_TO | IN_ONLYDIR)

struct tree_dir {
	char *name;             /* one component; "." for .git itself */
	struct tree_dir **kids; /* its subdirectories, sorted by name */
	size_t n_kids;
	dev_t dev;
	ino_t ino;
	struct timespec ctime, mtime;
	size_t entries; /* entries it held when read */
	int wd;         /* its inotify watch; -1 none */
	bool known;     /* read at least once */
	bool racy;      /* read it again at the next walk */
};

/* A watch and how many directories of the tree are on it (one inode: a
 * directory moved within the tree is two entries until the old goes). */
struct watch_ref {
	int wd;
	int refs;
};

struct guard_git_tree {
	struct tree_dir *root;
	int inotify_fd;            /* borrowed; -1 = no watches */
	int watch_errno;           /* the first failed watch (ENOSPC: the user's watch limit); 0 none */
	struct watch_ref *watches; /* sorted by wd */
	size_t n_watches;
	size_t max_entries; /* the bounds of a walk (POLICY_GIT_TREE_MAX_*) */
	int max_depth;
	int max_ms;
};

struct walk {
	struct guard_git_tree *t;
	struct guard_git_scan *scan;
	int64_t deadline_ns; /* CLOCK_MONOTONIC */
	char rel[4096];      /* the directory being visited, below .git ("" for .git) */
	size_t rel_len;
	char buf[64 * 1024]; /* getdents64; one directory is read completely before the next */
	struct cp_error **err;
};

enum { VISIT_OK = 0, VISIT_GONE = 1, VISIT_STOP = 2, VISIT_ERROR = -1 };

static int64_t ns_of(struct timespec ts)
{
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int64_t now_ns(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return ns_of(ts);
}

/* The index of wd in t->watches, or where it would go (*found = 0). */
static size_t watch_find(const struct guard_git_tree *t, int wd, bool *found)
{
	size_t lo = 0, hi = t->n_watches;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->watches[mid].wd < wd)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < t->n_watches && t->watches[lo].wd == wd;
	return lo;
}

static void unwatch(struct guard_git_tree *t, int wd)
{
	bool found;
	size_t i = watch_find(t, wd, &found);
	if (!found || --t->watches[i].refs > 0)
		return;
	if (t->inotify_fd >= 0)
		inotify_rm_watch(t->inotify_fd, wd);
	memmove(&t->watches[i], &t->watches[i + 1], (t->n_watches - i - 1) * sizeof(*t->watches));
	t->n_watches--;
}

/* Watches the directory fd is open on, once per identity. */
static void watch(struct guard_git_tree *t, struct tree_dir *d, int fd, const struct stat *st)
{
	if (t->inotify_fd < 0 || (d->wd >= 0 && d->dev == st->st_dev && d->ino == st->st_ino))
		return;
	if (d->wd >= 0)
		unwatch(t, d->wd);
	d->wd = -1;
	if (t->n_watches >= GIT_TREE_MAX_WATCHES) {
		if (!t->watch_errno)
			t->watch_errno = ENOSPC;
		return;
	}
	/* Through the descriptor, not a path a sandbox could swap meanwhile. */
	char path[48];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	int wd = inotify_add_watch(t->inotify_fd, path, GIT_TREE_WATCH_MASK);
	if (wd < 0) {
		if (!t->watch_errno)
			t->watch_errno = errno;
		return;
	}
	bool found;
	size_t i = watch_find(t, wd, &found);
	if (found) {
		t->watches[i].refs++;
	} else {
		t->watches = xrealloc(t->watches, (t->n_watches + 1) * sizeof(*t->watches));
		memmove(&t->watches[i + 1], &t->watches[i], (t->n_watches - i) * sizeof(*t->watches));
		t->watches[i] = (struct watch_ref){.wd = wd, .refs = 1};
		t->n_watches++;
	}
	d->wd = wd;
}

static struct tree_dir *dir_new(const char *name)
{
	struct tree_dir *d = xcalloc(1, sizeof(*d));
	d->name = xstrdup(name);
	d->wd = -1;
	return d;
}

static void dir_free(struct guard_git_tree *t, struct tree_dir *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n_kids; i++)
		dir_free(t, d->kids[i]);
	if (d->wd >= 0 && t)
		unwatch(t, d->wd);
	free(d->kids);
	free(d->name);
	free(d);
}

struct guard_git_tree *guard_git_tree_new(int inotify_fd)
{
	struct guard_git_tree *t = xcalloc(1, sizeof(*t));
	t->inotify_fd = inotify_fd;
	t->root = dir_new(".");
	guard_git_tree_set_bounds(t, POLICY_GIT_TREE_MAX_ENTRIES, POLICY_GIT_TREE_MAX_DEPTH, POLICY_GIT_TREE_MAX_MS);
	return t;
}

void guard_git_tree_set_bounds(struct guard_git_tree *t, size_t max_entries, int max_depth, int max_ms)
{
	t->max_entries = max_entries;
	t->max_depth = max_depth;
	t->max_ms = max_ms;
}

void guard_git_tree_free(struct guard_git_tree *t)
{
	if (!t)
		return;
	/* The watches go with the caller's inotify descriptor. */
	t->inotify_fd = -1;
	dir_free(NULL, t->root);
	free(t->watches);
	free(t);
}

int guard_git_tree_watch_errno(const struct guard_git_tree *t)
{
	return t->watch_errno;
}

void guard_git_scan_clear(struct guard_git_scan *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		free(s->found[i].rel);
		free(s->found[i].target);
		free(s->found[i].moved_as);
	}
	free(s->bound_rel);
	*s = (struct guard_git_scan){0};
}

/* openat2 beneath dirfd, never through a symlink (ELOOP) or out (EXDEV). */
static int open_dir(int dirfd, const char *name)
{
	struct open_how how = {
	    .flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
	    .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	return (int)syscall(SYS_openat2, dirfd, name, &how, sizeof(how));
}

/* The path of name inside the directory being visited, below .git. */
static char *rel_of(const struct walk *w, const char *name)
{
	return w->rel_len ? xasprintf("%.*s/%s", (int)w->rel_len, w->rel, name) : xstrdup(name);
}

static void add_finding(struct walk *w, int dirfd, const char *name, enum policy_git_entry kind)
{
	struct guard_git_scan *s = w->scan;
	if (s->n >= POLICY_GIT_TREE_MAX_FINDINGS) {
		s->more++;
		return;
	}
	struct policy_git_finding *f = &s->found[s->n++];
	*f = (struct policy_git_finding){.rel = rel_of(w, name), .kind = kind};
	if (kind == POLICY_GIT_ENTRY_SYMLINK) {
		char target[4096];
		ssize_t n = readlinkat(dirfd, name, target, sizeof(target) - 1);
		if (n >= 0)
			f->target = xstrndup(target, (size_t)n);
	}
}

static int stop(struct walk *w, enum policy_git_bound bound, const char *name)
{
	w->scan->bound = bound;
	free(w->scan->bound_rel);
	w->scan->bound_rel = name ? rel_of(w, name) : xstrndup(w->rel, w->rel_len);
	return VISIT_STOP;
}

/* An error of the file system at name ("" for the directory itself). */
static int failed(struct walk *w, const char *name, int e)
{
	_cleanup_free_ char *rel = *name ? rel_of(w, name) : xstrdup(w->rel_len ? w->rel : ".");
	char shown[300]; /* a sandbox's bytes */
	cp_error_set_errno(w->err, CP_ERR_INTERNAL, e, "read '%s' below .git to check it",
	                   policy_text_escape(rel, strlen(rel), shown, sizeof(shown)));
	return VISIT_ERROR;
}

/* One more entry seen; a bound reached stops the walk. */
static int count(struct walk *w, size_t n)
{
	w->scan->entries += n;
	if (w->scan->entries > w->t->max_entries)
		return stop(w, POLICY_GIT_BOUND_ENTRIES, NULL);
	if ((n > 1 || (w->scan->entries & 1023) == 0) && now_ns(CLOCK_MONOTONIC) > w->deadline_ns)
		return stop(w, POLICY_GIT_BOUND_TIME, NULL);
	return VISIT_OK;
}

static bool unchanged(const struct tree_dir *d, const struct stat *st)
{
	return d->known && !d->racy && d->dev == st->st_dev && d->ino == st->st_ino &&
	       ns_of(d->ctime) == ns_of(st->st_ctim) && ns_of(d->mtime) == ns_of(st->st_mtim);
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Makes d's subdirectories the sorted names (taken), keeping the cache of
 * those it had and dropping the others. */
static void merge_kids(struct guard_git_tree *t, struct tree_dir *d, char **names, size_t n)
{
	if (n) /* (qsort wants an array, even of nothing) */
		qsort(names, n, sizeof(*names), cmp_name);
	struct tree_dir **kids = n ? xcalloc(n, sizeof(*kids)) : NULL;
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		while (o < d->n_kids && strcmp(d->kids[o]->name, names[i]) < 0)
			dir_free(t, d->kids[o++]);
		if (o < d->n_kids && !strcmp(d->kids[o]->name, names[i]))
			kids[i] = d->kids[o++];
		else
			kids[i] = dir_new(names[i]);
		free(names[i]);
	}
	while (o < d->n_kids)
		dir_free(t, d->kids[o++]);
	free(d->kids);
	d->kids = kids;
	d->n_kids = n;
}

/* Lists the directory fd (whose stat, taken at before_ns, is st) into d:
 * every entry judged, its subdirectories kept for the walk. */
static int read_dir(struct walk *w, int fd, struct tree_dir *d, const struct stat *st, int64_t before_ns)
{
	watch(w->t, d, fd, st); /* first: what appears while it is read wakes the watcher */
	_cleanup_free_ char **names = NULL;
	size_t n_names = 0, cap = 0, entries = 0;
	bool bad = false;
	int r = VISIT_OK;
	for (;;) {
		ssize_t got = getdents64(fd, w->buf, sizeof(w->buf));
		if (got < 0) {
			r = failed(w, "", errno);
			break;
		}
		if (got == 0)
			break;
		for (ssize_t off = 0; off < got && r == VISIT_OK;) {
			struct dirent64 *e = (struct dirent64 *)(w->buf + off);
			off += e->d_reclen;
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			entries++;
			if ((r = count(w, 1)) != VISIT_OK)
				break;
			unsigned char type = e->d_type;
			if (type == DT_UNKNOWN) {
				struct stat est;
				if (fstatat(fd, e->d_name, &est, AT_SYMLINK_NOFOLLOW) < 0) {
					if (errno == ENOENT)
						continue; /* gone meanwhile; the ctime says read again */
					r = failed(w, e->d_name, errno);
					break;
				}
				type = IFTODT(est.st_mode);
			}
			if (type == DT_DIR) {
				if (n_names == cap) {
					cap = cap ? cap * 2 : 16;
					names = xrealloc(names, cap * sizeof(*names));
				}
				names[n_names++] = xstrdup(e->d_name);
			} else if (type != DT_REG) {
				bad = true;
				add_finding(w, fd, e->d_name, policy_git_entry_judge(DTTOIF(type)));
			}
		}
		if (r != VISIT_OK)
			break;
	}
	if (r != VISIT_OK) {
		for (size_t i = 0; i < n_names; i++)
			free(names[i]);
		d->racy = true;
		return r;
	}
	merge_kids(w->t, d, names, n_names);
	d->dev = st->st_dev;
	d->ino = st->st_ino;
	d->ctime = st->st_ctim;
	d->mtime = st->st_mtim;
	d->entries = entries;
	d->known = true;
	int64_t c = ns_of(st->st_ctim);
	/* Read again: what it holds is refused (so it is reported again), or
	 * it changed too recently (or its time lies ahead of the clock). */
	d->racy = bad || c >= before_ns - GIT_TREE_RACY_NS || c > before_ns + GIT_TREE_RACY_NS;
	w->scan->reread++;
	return VISIT_OK;
}

/* name below parent_fd could not be opened as a directory (e). */
static int open_failed(struct walk *w, int parent_fd, const char *name, int e)
{
	struct stat st;
	switch (e) {
	case ENOENT: return VISIT_GONE;
	case ELOOP:   /* a symlink now (one component, RESOLVE_NO_SYMLINKS) */
	case ENOTDIR: /* a file now */
		if (fstatat(parent_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    policy_git_entry_judge(st.st_mode) != POLICY_GIT_ENTRY_OK)
			add_finding(w, parent_fd, name, policy_git_entry_judge(st.st_mode));
		else if (e == ELOOP)
			add_finding(w, parent_fd, name, POLICY_GIT_ENTRY_SYMLINK);
		return VISIT_GONE;
	case EACCES:
	case EPERM: add_finding(w, parent_fd, name, POLICY_GIT_ENTRY_UNREADABLE); return VISIT_GONE;
	case EAGAIN: /* RESOLVE_BENEATH met a concurrent rename: the parent changed */
	case EXDEV: return VISIT_GONE;
	}
	return failed(w, name, e);
}

static int push_rel(struct walk *w, const char *name, size_t *ret_saved)
{
	size_t len = strlen(name);
	*ret_saved = w->rel_len;
	if (w->rel_len + len + 2 > sizeof(w->rel))
		return -1;
	if (w->rel_len)
		w->rel[w->rel_len++] = '/';
	memcpy(w->rel + w->rel_len, name, len + 1);
	w->rel_len += len;
	return 0;
}

/* Visits d, the directory name below parent_fd, depth levels below .git:
 * judged (from the cache when it did not change), then its subdirectories. */
static int visit(struct walk *w, int parent_fd, struct tree_dir *d, int depth)
{
	if (depth > w->t->max_depth)
		return stop(w, POLICY_GIT_BOUND_DEPTH, NULL);
	if (now_ns(CLOCK_MONOTONIC) > w->deadline_ns)
		return stop(w, POLICY_GIT_BOUND_TIME, NULL);
	w->scan->dirs++;
	struct stat st;
	if (!d->n_kids && d->known && !d->racy) {
		/* A leaf seen before (objects/xx): one fstatat says whether it changed. */
		if (fstatat(parent_fd, d->name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return errno == ENOENT ? VISIT_GONE : failed(w, "", errno);
		if (S_ISDIR(st.st_mode) && unchanged(d, &st))
			return count(w, d->entries);
	}
	/* The realtime clock, as file times are: racy reads (see the top). */
	int64_t before = now_ns(CLOCK_REALTIME);
	_cleanup_close_ int fd = open_dir(parent_fd, d->name);
	if (fd < 0)
		return open_failed(w, parent_fd, d->name, errno);
	if (fstat(fd, &st) < 0)
		return failed(w, "", errno);
	int r = unchanged(d, &st) ? count(w, d->entries) : read_dir(w, fd, d, &st, before);
	if (r != VISIT_OK)
		return r;
	for (size_t i = 0; i < d->n_kids; i++) {
		struct tree_dir *k = d->kids[i];
		size_t saved;
		if (push_rel(w, k->name, &saved) < 0)
			return stop(w, POLICY_GIT_BOUND_DEPTH, k->name);
		r = visit(w, fd, k, depth + 1);
		w->rel_len = saved;
		w->rel[saved] = '\0';
		if (r == VISIT_GONE)
			d->racy = true; /* it changed under the walk: read it again next time */
		else if (r != VISIT_OK)
			return r;
	}
	return VISIT_OK;
}

int guard_git_tree_walk(struct guard_git_tree *t, int git_fd, struct guard_git_scan *ret, struct cp_error **err)
{
	*ret = (struct guard_git_scan){0};
	_cleanup_free_ struct walk *w = xcalloc(1, sizeof(*w));
	w->t = t;
	w->scan = ret;
	w->err = err;
	w->deadline_ns = now_ns(CLOCK_MONOTONIC) + (int64_t)t->max_ms * 1000000;
	int r = visit(w, git_fd, t->root, 0);
	if (r == VISIT_ERROR) {
		guard_git_scan_clear(ret);
		return -1;
	}
	if (r == VISIT_GONE && !ret->n) {
		guard_git_scan_clear(ret);
		return cp_error_set(err, CP_ERR_CONFLICT, ".git changed while it was being checked; try again");
	}
	return ret->n || ret->more || ret->bound != POLICY_GIT_BOUND_NONE ? 1 : 0;
}

int guard_git_tree_judge(int git_fd, const char *git_dir, struct cp_error **err)
{
	struct guard_git_tree *t = guard_git_tree_new(-1);
	struct guard_git_scan scan;
	int r = guard_git_tree_walk(t, git_fd, &scan, err);
	if (r > 0)
		r = scan.bound != POLICY_GIT_BOUND_NONE
		        ? policy_git_tree_bound_refusal(git_dir, scan.bound, scan.bound_rel, err)
		        : policy_git_tree_refusal(git_dir, scan.found, scan.n, scan.more, err);
	guard_git_scan_clear(&scan);
	guard_git_tree_free(t);
	return r;
}
