/* git_watch.c: every running direct sandbox's .git, judged whole (git_tree.c)
 * at each tool call, re-attach and maintenance pass through a cache of its
 * own, and between them by one watcher thread: inotify on every directory
 * of the tree wakes it the moment an entry appears, and it walks that tree
 * again. What is not a regular file or a directory is moved out at once
 * (git_quarantine.c), then the sandbox is paused (the engine's freezer),
 * walked and emptied again, stopped and marked failed with what was found,
 * where it went and what to check. Moving comes before the pause because a
 * rename takes microseconds and the engine's pause a round trip of tens to
 * hundreds of milliseconds, during which the owner's git could open what was
 * planted; whatever the sandbox plants meanwhile is found by the walk after
 * the pause. A call walks unless the last walk found nothing, every
 * directory is watched and no event came since (then it costs one poll(2)),
 * and at least every TRUST_WATCHES_MS whatever the watches say; a queue
 * overflow is an event like any other, and a watch that could not be added
 * makes every call walk (through the cache: only changed directories are
 * read). */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/log.h"
#include "../base/xalloc.h"
#include "guard.h"

/* Sandboxes no longer running are forgotten this often (ms). */
#define PRUNE_INTERVAL_MS 60000
/* A call skips the walk when the last one found nothing, every directory
 * of the tree is watched and no event came since, for at most this long
 * (ms): then it walks again, whatever the watches say. */
#define TRUST_WATCHES_MS 30000
/* Walks after the pause, each moving what the last one found. */
#define AFTER_PAUSE_ROUNDS 4

/* One .git (its identity is the key: one workspace has one live sandbox at
 * a time, and a destroyed sandbox's entry must not take a plant away from
 * the next one's). */
struct watched {
	char *sandbox_id;   /* the sandbox that last asked (under walk_lock); for messages */
	char *workspace_id; /* whose live sandbox is stopped (under walk_lock) */
	char *git_dir;      /* the .git mount's host source */
	uint64_t dev, ino;
	int inotify_fd; /* -1: none could be had */
	struct guard_git_tree *tree;
	pthread_mutex_t walk_lock; /* one walk (and reaction) at a time */
	int refs;                  /* under the watch's lock */
	bool listed;               /* in the watch's list (one of refs) */
	char *failed;              /* the reason, once this stopped the sandbox (under walk_lock) */
	bool told_watch;           /* the watch limit was logged */
	bool told_error;           /* a walk error was logged */
	bool clean;                /* the last walk found nothing and every directory is watched */
	int64_t walked_ms;         /* when (monotonic) */
};

struct guard_git_watch {
	const struct guard_host *host; /* borrowed */
	guard_fail_fn fail;            /* marks a sandbox failed (lifecycle's) */
	void *fail_ctx;
	bool thread_tried;    /* watch_start ran (under lock) */
	pthread_mutex_t lock; /* v, n, refs, stop */
	struct watched **v;
	size_t n;
	int wake_fd; /* eventfd: the list changed, or stop */
	bool stop;
	bool thread_started;
	pthread_t thread;
	int64_t pruned_ms;
};

static void watched_free(struct watched *e)
{
	guard_git_tree_free(e->tree);
	if (e->inotify_fd >= 0)
		close(e->inotify_fd);
	pthread_mutex_destroy(&e->walk_lock);
	free(e->failed);
	free(e->git_dir);
	free(e->workspace_id);
	free(e->sandbox_id);
	free(e);
}

static void unref_locked(struct watched *e)
{
	if (--e->refs == 0)
		watched_free(e);
}

static void watched_unref(struct guard_git_watch *w, struct watched *e)
{
	pthread_mutex_lock(&w->lock);
	unref_locked(e);
	pthread_mutex_unlock(&w->lock);
}

static void wake(struct guard_git_watch *w)
{
	uint64_t one = 1;
	ssize_t n = write(w->wake_fd, &one, sizeof(one));
	(void)n; /* a counter already non-zero wakes it as well */
}

static void drop_locked(struct guard_git_watch *w, struct watched *e)
{
	if (!e->listed)
		return;
	for (size_t i = 0; i < w->n; i++)
		if (w->v[i] == e) {
			w->v[i] = w->v[--w->n];
			break;
		}
	e->listed = false;
	unref_locked(e);
}

static void drop(struct guard_git_watch *w, struct watched *e)
{
	pthread_mutex_lock(&w->lock);
	drop_locked(w, e);
	pthread_mutex_unlock(&w->lock);
	wake(w);
}

static const char *container_of(const struct sandbox_record *s)
{
	return s->container_id ? s->container_id : s->container_name;
}

/* e's .git, opened again from its host path (no symlink anywhere on it) and
 * still the directory recorded; -1 otherwise (git_guard.c says why). */
static int open_git(const struct watched *e)
{
	struct open_how how = {
	    .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
	    .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	int fd = (int)syscall(SYS_openat2, AT_FDCWD, e->git_dir, &how, sizeof(how));
	struct stat st;
	if (fd >= 0 && (fstat(fd, &st) < 0 || (uint64_t)st.st_dev != e->dev || (uint64_t)st.st_ino != e->ino)) {
		close(fd);
		errno = ESTALE;
		return -1;
	}
	return fd;
}

/* Takes the findings of scan (their strings move) into all (up to the
 * maximum; the rest counted in *more), skipping those already there. */
static size_t collect(struct policy_git_finding *all, size_t n, size_t *more, struct guard_git_scan *scan)
{
	for (size_t i = 0; i < scan->n; i++) {
		struct policy_git_finding *f = &scan->found[i];
		bool seen = false;
		for (size_t j = 0; j < n && !seen; j++)
			seen = !strcmp(all[j].rel, f->rel);
		if (seen)
			continue;
		if (n < POLICY_GIT_TREE_MAX_FINDINGS) {
			all[n++] = *f;
			*f = (struct policy_git_finding){0};
		} else {
			(*more)++;
		}
	}
	*more += scan->more;
	return n;
}

/* What a walk found in e's .git: moved out, the sandbox paused, walked and
 * emptied again, stopped, marked failed. Under e->walk_lock. */
static int react(struct guard_git_watch *w, struct watched *e, int git_fd, struct guard_git_scan *scan,
                 struct cp_error **err)
{
	struct policy_git_finding all[POLICY_GIT_TREE_MAX_FINDINGS] = {{0}};
	size_t more = 0;
	size_t n = collect(all, 0, &more, scan);
	enum policy_git_bound bound = scan->bound;
	struct guard_git_quarantine q;
	guard_git_quarantine_init(&q);
	_cleanup_error_ struct cp_error *qe = NULL;
	if (n && guard_git_quarantine_move(&q, w->host->cfg, e->sandbox_id, e->git_dir, git_fd, all, n, &qe) < 0)
		cp_error_log_free(LOG_LEVEL_WARN, "security", &qe, "sandbox %s", e->sandbox_id);
	/* (named after the sandbox that asked last: moving first cannot wait
	 * for the registry) */

	/* The workspace's live sandbox, whichever asked last (a doctor's probe
	 * and serve may both watch one .git; the first to move a plant stops
	 * the sandbox that made it). */
	struct sandbox_record s = {0};
	_cleanup_error_ struct cp_error *se = NULL;
	bool running = store_sandbox_get_live_for_workspace(w->host->store, e->workspace_id, &s, &se) == 0 &&
	               s.status == SANDBOX_RUNNING;
	const char *id = running ? s.id : e->sandbox_id;
	_cleanup_error_ struct cp_error *pe = NULL;
	/* (CONFLICT: already paused, by another chat2sbx reacting too) */
	if (running && docker_container_pause(w->host->engine, container_of(&s), &pe) < 0 &&
	    pe->code != CP_ERR_CONFLICT)
		log_warn("security", "pause sandbox %s after a plant in its .git: %s", id, pe->message);
	for (int round = 0; round < AFTER_PAUSE_ROUNDS; round++) {
		struct guard_git_scan again;
		_cleanup_error_ struct cp_error *we = NULL;
		_cleanup_close_ int fd = open_git(e);
		int r = fd < 0 ? 0 : guard_git_tree_walk(e->tree, fd, &again, &we);
		if (r <= 0)
			break;
		size_t before = n;
		n = collect(all, n, &more, &again);
		if (again.bound != POLICY_GIT_BOUND_NONE)
			bound = again.bound;
		guard_git_scan_clear(&again);
		if (n == before)
			break; /* only what could not be moved before */
		if (guard_git_quarantine_move(&q, w->host->cfg, id, e->git_dir, fd, all, n, &qe) < 0)
			cp_error_log_free(LOG_LEVEL_WARN, "security", &qe, "sandbox %s", id);
	}
	char *reason = policy_git_tree_reason(e->git_dir, all, n, more, bound, q.dir);
	guard_git_quarantine_close(&q);
	guard_security_audit(w->host, "sandbox.git_tree_refused", id, e->git_dir, reason);
	if (running) {
		_cleanup_error_ struct cp_error *ste = NULL;
		if (docker_container_stop(w->host->engine, container_of(&s), &ste) < 0 && ste->code != CP_ERR_NOT_FOUND)
			log_warn("security", "stop sandbox %s after a plant in its .git: %s", id, ste->message);
		w->fail(w->fail_ctx, id, reason);
	}
	for (size_t i = 0; i < n; i++) {
		free(all[i].rel);
		free(all[i].target);
		free(all[i].moved_as);
	}
	e->failed = reason;
	drop(w, e);
	int r = cp_error_set(err, CP_ERR_CONFLICT,
	                     "sandbox '%s' has failed (%s); destroy it with sandbox_destroy and create a new one", id,
	                     reason);
	sandbox_record_clear(&s);
	return r;
}

/* Reads every pending event of fd; only that something happened counts
 * (an IN_Q_OVERFLOW too: the walk does not depend on the events). */
static void drain(int fd)
{
	char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
	while (read(fd, buf, sizeof(buf)) > 0)
		;
}

/* 1 when the inotify descriptor fd holds an event (or there is none). */
static bool pending(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	return fd < 0 || poll(&p, 1, 0) != 0;
}

/* One walk of e's tree, under its walk lock; a finding or a bound stops
 * the sandbox (react). 0 clean, -1 with *err otherwise. */
static int check_locked(struct guard_git_watch *w, struct watched *e, const struct sandbox_record *s,
                        struct cp_error **err)
{
	if (s && strcmp(s->id, e->sandbox_id)) {
		if (e->failed) /* another sandbox's reaction just dropped this entry */
			return cp_error_set(err, CP_ERR_CONFLICT, "'%s' was just checked; try again", e->git_dir);
		free(e->sandbox_id);
		e->sandbox_id = xstrdup(s->id);
		free(e->workspace_id);
		e->workspace_id = xstrdup(s->workspace_id);
	}
	if (e->failed)
		return cp_error_set(
		    err, CP_ERR_CONFLICT,
		    "sandbox '%s' has failed (%s); destroy it with sandbox_destroy and create a new one", e->sandbox_id,
		    e->failed);
	if (s && e->clean && !pending(e->inotify_fd) && clock_monotonic_ms() - e->walked_ms < TRUST_WATCHES_MS)
		return 0; /* the cheap path: nothing appeared since a clean walk */
	if (!s) {         /* the watcher's walk: what it was woken for is read under the lock */
		e->clean = false;
		drain(e->inotify_fd);
	}
	_cleanup_close_ int fd = open_git(e);
	if (fd < 0) /* replaced or gone: the channel gate says so (git_guard.c) */
		return cp_error_set_errno(err, CP_ERR_CONFLICT, errno,
		                          "open '%s' to check it; it changed meanwhile; try again", e->git_dir);
	struct guard_git_scan scan;
	int r = guard_git_tree_walk(e->tree, fd, &scan, err);
	if (r > 0)
		r = react(w, e, fd, &scan, err);
	guard_git_scan_clear(&scan);
	int werr = guard_git_tree_watch_errno(e->tree);
	e->clean = r == 0 && !werr && e->inotify_fd >= 0;
	e->walked_ms = clock_monotonic_ms();
	if (r == 0 && werr && !e->told_watch) {
		e->told_watch = true;
		log_warn("guard",
		         "sandbox %s: not every directory of '%s' could be watched (%s); a plant there is found at "
		         "the next call or maintenance pass instead of at once (fs.inotify.max_user_watches)",
		         e->sandbox_id, e->git_dir, strerror(werr));
	}
	return r;
}

/* s: the sandbox of a call (NULL: the watcher's own walk, whose failures
 * are logged here, once until a walk succeeds). */
static int check(struct guard_git_watch *w, struct watched *e, const struct sandbox_record *s, struct cp_error **err)
{
	pthread_mutex_lock(&e->walk_lock);
	int r = check_locked(w, e, s, err);
	if (!s && r < 0 && !e->failed && !e->told_error) {
		e->told_error = true;
		log_warn("guard", "check the .git of sandbox %s: %s", e->sandbox_id, (*err)->message);
	} else if (r == 0) {
		e->told_error = false;
	}
	pthread_mutex_unlock(&e->walk_lock);
	return r;
}

/* Forgets every listed tree whose workspace has no running sandbox. */
static void prune(struct guard_git_watch *w)
{
	pthread_mutex_lock(&w->lock);
	w->pruned_ms = clock_monotonic_ms();
	size_t n = w->n;
	struct watched **v = xcalloc(n ? n : 1, sizeof(*v));
	for (size_t i = 0; i < n; i++) {
		v[i] = w->v[i];
		v[i]->refs++;
	}
	pthread_mutex_unlock(&w->lock);
	for (size_t i = 0; i < n; i++) {
		struct sandbox_record s = {0};
		_cleanup_error_ struct cp_error *e = NULL;
		pthread_mutex_lock(&v[i]->walk_lock);
		_cleanup_free_ char *workspace_id = xstrdup(v[i]->workspace_id);
		pthread_mutex_unlock(&v[i]->walk_lock);
		int r = store_sandbox_get_live_for_workspace(w->host->store, workspace_id, &s, &e);
		bool gone = (r < 0 && e->code == CP_ERR_NOT_FOUND) || (r == 0 && s.status != SANDBOX_RUNNING);
		sandbox_record_clear(&s);
		pthread_mutex_lock(&w->lock);
		if (gone)
			drop_locked(w, v[i]);
		unref_locked(v[i]);
		pthread_mutex_unlock(&w->lock);
	}
	free(v);
}

static void *watch_main(void *arg)
{
	struct guard_git_watch *w = arg;
	for (;;) {
		pthread_mutex_lock(&w->lock);
		if (w->stop) {
			pthread_mutex_unlock(&w->lock);
			break;
		}
		size_t n = 0;
		struct watched **v = xcalloc(w->n + 1, sizeof(*v));
		struct pollfd *p = xcalloc(w->n + 1, sizeof(*p));
		p[0] = (struct pollfd){.fd = w->wake_fd, .events = POLLIN};
		for (size_t i = 0; i < w->n; i++) {
			if (w->v[i]->inotify_fd < 0)
				continue;
			v[n] = w->v[i];
			v[n]->refs++;
			p[n + 1] = (struct pollfd){.fd = v[n]->inotify_fd, .events = POLLIN};
			n++;
		}
		pthread_mutex_unlock(&w->lock);
		int ready = poll(p, n + 1, PRUNE_INTERVAL_MS);
		if (ready > 0 && (p[0].revents & POLLIN)) {
			uint64_t c;
			ssize_t got = read(w->wake_fd, &c, sizeof(c));
			(void)got;
		}
		for (size_t i = 0; ready > 0 && i < n; i++) {
			if (!(p[i + 1].revents & (POLLIN | POLLERR)))
				continue;
			_cleanup_error_ struct cp_error *e = NULL;
			check(w, v[i], NULL, &e);
		}
		pthread_mutex_lock(&w->lock);
		for (size_t i = 0; i < n; i++)
			unref_locked(v[i]);
		pthread_mutex_unlock(&w->lock);
		free(v);
		free(p);
		if (clock_monotonic_ms() - w->pruned_ms >= PRUNE_INTERVAL_MS)
			prune(w);
	}
	return NULL;
}

/* Starts w's thread at the first use (one try: without it a plant is found
 * at the next call or maintenance pass). */
static void watch_start(struct guard_git_watch *w)
{
	pthread_mutex_lock(&w->lock);
	if (!w->thread_tried) {
		w->thread_tried = true;
		w->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (w->wake_fd >= 0 && pthread_create(&w->thread, NULL, watch_main, w) == 0)
			w->thread_started = true;
		else
			log_warn("guard",
			         "cannot start the watcher of direct workspaces' .git (%s): a plant there "
			         "is found at the next call or maintenance pass instead of at once",
			         strerror(errno));
	}
	pthread_mutex_unlock(&w->lock);
}

struct guard_git_watch *guard_git_watch_new(const struct guard_host *host, guard_fail_fn fail, void *fail_ctx)
{
	struct guard_git_watch *w = xcalloc(1, sizeof(*w));
	w->host = host;
	w->fail = fail;
	w->fail_ctx = fail_ctx;
	w->wake_fd = -1;
	pthread_mutex_init(&w->lock, NULL);
	w->pruned_ms = clock_monotonic_ms();
	return w;
}

/* The entry of the .git git names (one reference for the caller), made and
 * listed for s when missing. */
static struct watched *watched_get(struct guard_git_watch *w, const struct sandbox_record *s,
                                   const struct sandbox_mount_record *git)
{
	const char *sandbox_id = s->id;
	pthread_mutex_lock(&w->lock);
	struct watched *e = NULL;
	for (size_t i = 0; i < w->n && !e; i++)
		if (w->v[i]->dev == git->dev && w->v[i]->ino == git->ino && !strcmp(w->v[i]->git_dir, git->source))
			e = w->v[i];
	bool made = !e;
	if (made) {
		e = xcalloc(1, sizeof(*e));
		e->sandbox_id = xstrdup(sandbox_id);
		e->workspace_id = xstrdup(s->workspace_id);
		e->git_dir = xstrdup(git->source);
		e->dev = git->dev;
		e->ino = git->ino;
		pthread_mutex_init(&e->walk_lock, NULL);
		e->inotify_fd = w->thread_started ? inotify_init1(IN_NONBLOCK | IN_CLOEXEC) : -1;
		if (w->thread_started && e->inotify_fd < 0)
			log_warn("guard",
			         "sandbox %s: cannot watch '%s' (%s; fs.inotify.max_user_instances?): a plant there is "
			         "found at the next call or maintenance pass instead of at once",
			         sandbox_id, e->git_dir, strerror(errno));
		e->tree = guard_git_tree_new(e->inotify_fd);
		e->refs = 1; /* the list's */
		e->listed = true;
		w->v = xrealloc(w->v, (w->n + 1) * sizeof(*w->v));
		w->v[w->n++] = e;
	}
	e->refs++;
	pthread_mutex_unlock(&w->lock);
	if (made)
		wake(w);
	return e;
}

int guard_git_tree_check(struct guard_git_watch *w, const struct sandbox_record *s,
                         const struct sandbox_mount_record *m, size_t n, struct cp_error **err)
{
	/* The .git directory of a repository is the one writable .git mount
	 * (a gitfile is mounted read-only: nothing of git to walk). */
	const struct sandbox_mount_record *git = NULL;
	for (size_t i = 0; i < n && !git; i++)
		if (!m[i].read_only && !strcmp(m[i].target, POLICY_WORKSPACE_TARGET "/.git"))
			git = &m[i];
	if (!git)
		return 0;
	watch_start(w);
	struct watched *e = watched_get(w, s, git);
	int r = check(w, e, s, err);
	watched_unref(w, e);
	if (!w->thread_started && clock_monotonic_ms() - w->pruned_ms >= PRUNE_INTERVAL_MS)
		prune(w);
	return r;
}

void guard_git_watch_free(struct guard_git_watch *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_mutex_unlock(&w->lock);
	if (w->thread_started) {
		wake(w);
		pthread_join(w->thread, NULL);
	}
	while (w->n)
		drop_locked(w, w->v[w->n - 1]);
	free(w->v);
	if (w->wake_fd >= 0)
		close(w->wake_fd);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

int guard_git_check(struct guard_git_watch *w, const struct sandbox_record *s, const struct sandbox_mount_record *m,
                    size_t n, struct cp_error **err)
{
	/* Another node's direct workspace: its paths are that machine's, not
	 * this one's (the same path here is another directory), and its whole
	 * .git is mounted read-only (lifecycle/create.c): nothing to watch. */
	if (s->node && strcmp(s->node, STORE_NODE_LOCAL) != 0)
		return 0;
	char reason[1500];
	int lost = guard_git_host_lost(m, n, reason, sizeof(reason));
	if (lost)
		guard_security_audit(w->host, "sandbox.git_guard_lost", s->id, m[lost - 1].source, reason);
	/* The rest of .git: nothing in it but regular files and directories
	 * (git_watch.c, issue 23). */
	int r = lost ? 0 : guard_git_tree_check(w, s, m, n, err);
	if (!lost)
		return r;
	_cleanup_error_ struct cp_error *e = NULL;
	if (docker_container_stop(w->host->engine, s->container_id ? s->container_id : s->container_name, &e) < 0 &&
	    e->code != CP_ERR_NOT_FOUND)
		log_warn("security", "stop sandbox %s after its .git protection was lost: %s", s->id, e->message);
	w->fail(w->fail_ctx, s->id, reason);
	return cp_error_set(err, CP_ERR_CONFLICT,
	                    "sandbox '%s' has failed (%s); destroy it with sandbox_destroy and create a new one", s->id,
	                    reason);
}
