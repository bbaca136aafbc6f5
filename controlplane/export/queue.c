/* export_queue.c: saves take turns (issue 23). One save of a sandbox at a
 * time: in this process a waiting list per sandbox id, across processes
 * (serve and a `chat2sbx sandbox destroy`) an flock on
 * DATA_ROOT/exports/<sandbox_id>/, which also tells the orphan sweep
 * (export_orphans.c) that the directory is being written. And at most
 * EXPORT_VERIFY_AT_ONCE host verifications of this process at once, in
 * the order they asked. Every wait ends at its caller's deadline. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../base/clock.h"
#include "../base/xalloc.h"
#include "export.h"

/* How often a save waiting on another process's flock looks again (ms). */
#define FLOCK_RETRY_MS 100

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void init_cond(void)
{
	clock_cond_init(&changed);
}

/* Waits on changed until deadline_ms; 0, or ETIMEDOUT. Under lock. */
static int wait_until(int64_t deadline_ms)
{
	struct timespec until = clock_monotonic_timespec(deadline_ms);
	int r = pthread_cond_timedwait(&changed, &lock, &until);
	return r == ETIMEDOUT || clock_monotonic_ms() >= deadline_ms ? ETIMEDOUT : 0;
}

/* ---- one save per sandbox ---- */

struct export_slot {
	char *sandbox_id;
	int root; /* DATA_ROOT/exports */
	int fd;   /* DATA_ROOT/exports/<sandbox_id>, flocked */
};

static char **busy;
static size_t n_busy, cap_busy;

static size_t busy_find(const char *id)
{
	for (size_t i = 0; i < n_busy; i++)
		if (!strcmp(busy[i], id))
			return i;
	return (size_t)-1;
}

static void busy_remove(const char *id)
{
	pthread_mutex_lock(&lock);
	size_t i = busy_find(id);
	if (i != (size_t)-1) {
		free(busy[i]);
		busy[i] = busy[--n_busy];
	}
	if (n_busy == 0) {
		free(busy);
		busy = NULL;
		cap_busy = 0;
	}
	pthread_cond_broadcast(&changed);
	pthread_mutex_unlock(&lock);
}

/* The sandbox's exports directory, flocked: retried until deadline_ms while
 * another process holds it, opened again when the sweep or retention
 * removed it in between (it is made again). */
static int flock_dir(const struct config *cfg, const char *sandbox_id, int64_t deadline_ms, int *ret_fd,
                     struct cp_error **err)
{
	for (;;) {
		int fd = -1;
		if (export_dir_open_sandbox(cfg, sandbox_id, &fd, err) < 0)
			return -1;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			struct stat st;
			if (fstat(fd, &st) == 0 && st.st_nlink > 0) {
				*ret_fd = fd;
				return 0;
			}
			close(fd); /* removed while we waited: make it again */
			continue;
		}
		int e = errno;
		close(fd);
		if (e != EWOULDBLOCK && e != EINTR)
			return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, e, "lock the exports of sandbox '%s'",
			                          sandbox_id);
		if (clock_monotonic_ms() >= deadline_ms)
			return cp_error_set(
			    err, CP_ERR_TIMEOUT,
			    "another process (a `chat2sbx sandbox destroy`?) is saving sandbox '%s'; try "
			    "again when it has finished",
			    sandbox_id);
		struct timespec pause = {0, FLOCK_RETRY_MS * 1000000L};
		nanosleep(&pause, NULL);
	}
}

int export_save_slot_take(const struct config *cfg, const char *sandbox_id, int64_t deadline_ms,
                          struct export_slot **ret, struct cp_error **err)
{
	pthread_once(&once, init_cond);
	int64_t t0 = clock_monotonic_ms();
	pthread_mutex_lock(&lock);
	while (busy_find(sandbox_id) != (size_t)-1) {
		if (wait_until(deadline_ms) == ETIMEDOUT && busy_find(sandbox_id) != (size_t)-1) {
			pthread_mutex_unlock(&lock);
			return cp_error_set(
			    err, CP_ERR_TIMEOUT,
			    "another save of sandbox '%s' is still running (this one waited %lld s for "
			    "it); saves of one sandbox run one at a time. Try again when it has finished",
			    sandbox_id, (long long)(clock_monotonic_ms() - t0) / 1000);
		}
	}
	if (n_busy == cap_busy) {
		cap_busy = cap_busy ? 2 * cap_busy : 8;
		busy = xrealloc(busy, cap_busy * sizeof(*busy));
	}
	busy[n_busy++] = xstrdup(sandbox_id);
	pthread_mutex_unlock(&lock);
	int fd = -1, root = -1;
	if (export_dir_open_root(cfg, 1, &root, err) < 0 || flock_dir(cfg, sandbox_id, deadline_ms, &fd, err) < 0) {
		if (root >= 0)
			close(root);
		busy_remove(sandbox_id);
		return -1;
	}
	struct export_slot *s = xcalloc(1, sizeof(*s));
	s->sandbox_id = xstrdup(sandbox_id);
	s->root = root;
	s->fd = fd;
	*ret = s;
	return 0;
}

void export_save_slot_release(struct export_slot *s)
{
	if (!s)
		return;
	/* A save that kept nothing leaves no empty directory (under the
	 * flock, so no save of this sandbox is inside it). */
	unlinkat(s->root, s->sandbox_id, AT_REMOVEDIR);
	close(s->root);
	close(s->fd); /* drops the flock */
	busy_remove(s->sandbox_id);
	free(s->sandbox_id);
	free(s);
}

/* ---- host verifications, EXPORT_VERIFY_AT_ONCE at a time, in order ---- */

struct turn {
	struct turn *next;
};
static struct turn *queue_head;
static int running;

static void queue_remove(struct turn *t)
{
	for (struct turn **p = &queue_head; *p; p = &(*p)->next)
		if (*p == t) {
			*p = t->next;
			return;
		}
}

int export_verify_turn_take(int64_t deadline_ms, struct cp_error **err)
{
	pthread_once(&once, init_cond);
	int64_t t0 = clock_monotonic_ms();
	struct turn me = {0};
	pthread_mutex_lock(&lock);
	struct turn **tail = &queue_head;
	while (*tail)
		tail = &(*tail)->next;
	*tail = &me;
	while (queue_head != &me || running >= EXPORT_VERIFY_AT_ONCE) {
		if (wait_until(deadline_ms) == ETIMEDOUT && (queue_head != &me || running >= EXPORT_VERIFY_AT_ONCE)) {
			queue_remove(&me);
			pthread_cond_broadcast(&changed); /* the one behind may be first now */
			pthread_mutex_unlock(&lock);
			return cp_error_set(
			    err, CP_ERR_TIMEOUT,
			    "the host verifies %d saves at a time and this one waited %lld s for its turn; "
			    "try again in a while",
			    EXPORT_VERIFY_AT_ONCE, (long long)(clock_monotonic_ms() - t0) / 1000);
		}
	}
	queue_head = me.next;
	running++;
	pthread_cond_broadcast(&changed); /* the next may run beside it */
	pthread_mutex_unlock(&lock);
	return 0;
}

void export_verify_turn_release(void)
{
	pthread_mutex_lock(&lock);
	running--;
	pthread_cond_broadcast(&changed);
	pthread_mutex_unlock(&lock);
}
