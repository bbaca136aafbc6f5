/* pool.c: the warm pool (issue 8). Keeps CHAT2SBX_WARM_POOL started managed
 * sandboxes with their helper attached, so that sandbox_create for a new
 * managed workspace with default options answers in milliseconds instead of
 * the engine's create+start. Members are ordinary sandboxes rows with
 * pooled = 1 (migration 0006): hidden from listings, limits and expiry,
 * reconciled at start like any sandbox. One background thread refills; it
 * never runs inside a tool call. Removes only members this process made. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../base/xalloc.h"
#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/log.h"
#include "../base/periodic.h"
#include "lifecycle_internal.h"

/* How long the refill thread sleeps when the pool is full (it is woken at
 * once by a claim), and the bounds of its back-off after a failed create. */
#define POOL_IDLE_CHECK_MS 30000
#define POOL_RETRY_MIN_MS 2000
#define POOL_RETRY_MAX_MS 60000
/* After a claim the refill waits this long before it starts a member: a
 * container start keeps both cores of a small machine busy for about a
 * second, and the claimed sandbox's first calls usually follow at once
 * (issue 27: warm create → first bash). */
#define POOL_CLAIM_QUIET_MS 500

struct lifecycle_pool {
	struct lifecycle *lc; /* borrowed */
	int size;
	pthread_mutex_t lock;          /* guards created */
	struct periodic *worker;       /* the refill (base/periodic.c); a claim wakes it; NULL = none */
	long delay_ms;                 /* back-off after a failed create (the refill's own) */
	_Atomic int64_t claimed_at_ms; /* clock_monotonic_ms() of the last claim, 0 = none */
	char **created;                /* ids of members made by this process (owned) */
	size_t n_created;
};

static const char *pool_runtime(const struct lifecycle *lc)
{
	return lifecycle_runtime(lc, NULL);
}

/* A member this serve can hand out: running, from today's image and runtime. */
static int member_usable(const struct lifecycle *lc, const struct sandbox_record *s)
{
	const char *rt = pool_runtime(lc);
	/* A member is what a create with no options gets now: the default
	 * memory ceiling and disk size in force (host_limits.c, disk_guard.c). */
	return s->status == SANDBOX_RUNNING && !strcmp(s->image, lifecycle_sandbox_image(lc)) &&
	       !strcmp(s->runtime ? s->runtime : "", rt ? rt : "") &&
	       s->memory_bytes == lc->limits.default_memory_bytes && s->disk_bytes == lc->storage.default_bytes &&
	       s->nano_cpus == 0 && s->network == 1;
}

/* Removes one member entirely: channel, container, rows, empty workspace
 * directory. A member claimed in the meantime is left alone. */
static void remove_member(struct lifecycle *lc, const struct sandbox_record *s)
{
	_cleanup_error_ struct cp_error *e = NULL;
	struct workspace_record w = {0};
	if (store_workspace_get(lc->store, s->workspace_id, &w, &e) < 0)
		cp_error_freep(&e);
	if (store_sandbox_pool_forget(lc->store, s->id, &e) < 0) {
		if (e->code != CP_ERR_CONFLICT)
			log_warn("lifecycle", "remove warm sandbox %s: %s", s->id, e->message);
		workspace_record_clear(&w);
		return;
	}
	/* A member was never claimed and its (managed) workspace row is gone
	 * already, so the guard could not tell: the removal is explicit. */
	struct lifecycle_destroy_options o = {.force = 1, .reason = "cleanup", .actor = "serve"};
	struct lifecycle_destroy_result dr = {0};
	if (lifecycle_container_remove_guarded(lc, s, &o, &dr, &e) < 0)
		log_warn("lifecycle", "remove the container of warm sandbox %s: %s", s->id, e->message);
	lifecycle_destroy_result_clear(&dr);
	if (w.path && !strcmp(w.mode, "managed") && rmdir(w.path) < 0 && errno != ENOENT)
		log_warn("lifecycle", "remove the workspace directory '%s' of warm sandbox %s: %s", w.path, s->id,
		         strerror(errno));
	log_debug("lifecycle", "removed warm sandbox %s", s->id);
	workspace_record_clear(&w);
}

/* Members ready to be claimed, and in *ret_all every member row; -1 when
 * the registry cannot be read. */
static int count_ready(struct lifecycle *lc, int *ret_all)
{
	struct sandbox_record *rows = NULL;
	size_t n = 0;
	_cleanup_error_ struct cp_error *e = NULL;
	if (store_sandbox_pool_list(lc->store, &rows, &n, &e) < 0) {
		log_warn("lifecycle", "warm pool: %s", e->message);
		return -1;
	}
	int ready = 0;
	for (size_t i = 0; i < n; i++) {
		ready += member_usable(lc, &rows[i]) || rows[i].status == SANDBOX_CREATING;
		sandbox_record_clear(&rows[i]);
	}
	free(rows);
	*ret_all = (int)n;
	return ready;
}

static void remember_created(struct lifecycle_pool *p, const char *id)
{
	char *copy = xstrdup(id);
	pthread_mutex_lock(&p->lock);
	p->created = xrealloc(p->created, (p->n_created + 1) * sizeof(*p->created));
	p->created[p->n_created++] = copy;
	pthread_mutex_unlock(&p->lock);
}

/* Makes one member. Returns 0 or -1 (logged). */
static int create_member(struct lifecycle_pool *p)
{
	struct lifecycle_create_result res = {0};
	_cleanup_error_ struct cp_error *e = NULL;
	int64_t t0 = clock_monotonic_ms();
	if (p->lc->pool_member_create(p->lc, &res, &e) < 0) {
		log_warn("lifecycle", "warm pool: %s (retrying later)", e->message);
		return -1;
	}
	remember_created(p, res.sandbox.id);
	log_info("lifecycle", "warm pool: sandbox %s ready in %lld ms", res.sandbox.id,
	         (long long)(clock_monotonic_ms() - t0));
	lifecycle_create_result_clear(&res);
	return 0;
}

/* One refill step: a member made when one is missing. Returns the wait
 * before the next step (0 after a success, a doubling back-off after a
 * failure, POOL_IDLE_CHECK_MS when the pool is full; a claim wakes it). */
static long pool_refill(void *arg)
{
	struct lifecycle_pool *p = arg;
	int all = 0;
	int ready = count_ready(p->lc, &all);
	/* A member that never counts as ready (a bug, a row that cannot be
	 * handed out) must not make the pool grow without end. */
	if (ready >= 0 && ready < p->size && all >= 2 * p->size + 2) {
		log_warn("lifecycle",
		         "warm pool: %d members but only %d ready; not making more until they are "
		         "claimed or removed",
		         all, ready);
		ready = p->size;
	}
	if (ready < 0)
		return POOL_RETRY_MIN_MS;
	if (ready >= p->size)
		return POOL_IDLE_CHECK_MS;
	int64_t quiet = p->claimed_at_ms + POOL_CLAIM_QUIET_MS - clock_monotonic_ms();
	if (p->claimed_at_ms && quiet > 0)
		return (long)quiet;
	if (create_member(p) == 0) {
		p->delay_ms = 0;
		return 0;
	}
	p->delay_ms = p->delay_ms ? p->delay_ms * 2 : POOL_RETRY_MIN_MS;
	if (p->delay_ms > POOL_RETRY_MAX_MS)
		p->delay_ms = POOL_RETRY_MAX_MS;
	return p->delay_ms;
}

int lifecycle_pool_start(struct lifecycle *lc, int size, struct cp_error **err)
{
	(void)err;
	/* Members of an earlier serve: those that cannot be handed out (failed
	 * while serve was away, another image, runtime or default) are removed
	 * now, the others adopted, so this serve's clean stop removes them if
	 * nobody claims them (issue 18: a serve killed now and then must not
	 * leave members forever). With no pool, all go. */
	struct sandbox_record *rows = NULL;
	size_t n = 0;
	_cleanup_error_ struct cp_error *e = NULL;
	char **adopt = NULL;
	size_t n_adopt = 0;
	if (store_sandbox_pool_list(lc->store, &rows, &n, &e) < 0) {
		log_warn("lifecycle", "warm pool: %s", e->message);
	} else {
		int removed = 0;
		adopt = xcalloc(n ? n : 1, sizeof(*adopt));
		for (size_t i = 0; i < n; i++) {
			if (size > 0 && adopt && member_usable(lc, &rows[i]) &&
			    (adopt[n_adopt] = xstrdup(rows[i].id))) {
				n_adopt++;
			} else {
				remove_member(lc, &rows[i]);
				removed++;
			}
			sandbox_record_clear(&rows[i]);
		}
		free(rows);
		if (n)
			log_info("lifecycle", "warm pool: %zu member(s) from an earlier start adopted, %d removed",
			         n_adopt, removed);
	}
	if (size <= 0) {
		free(adopt);
		return 0;
	}
	struct lifecycle_pool *p = xcalloc(1, sizeof(*p));
	p->lc = lc;
	p->size = size;
	p->created = adopt; /* taken over: removed at stop like those made here */
	p->n_created = n_adopt;
	pthread_mutex_init(&p->lock, NULL);
	lc->pool = p; /* before the thread: a claim may come at once */
	p->worker = periodic_start("warm pool", 0, POOL_IDLE_CHECK_MS, pool_refill, p);
	if (!p->worker)
		log_warn("lifecycle", "warm pool: cannot start its thread; sandboxes are created cold");
	else
		log_info("lifecycle", "warm pool: keeping %d sandbox(es) ready", size);
	return 0;
}

void lifecycle_pool_defer(struct lifecycle *lc, int size)
{
	lc->pool_deferred = size;
	if (size > 0)
		log_info("lifecycle", "warm pool: starts at the first sandbox_create (stdio: a probing client makes "
		                      "nothing)");
}

void lifecycle_pool_stop(struct lifecycle *lc)
{
	if (!lc)
		return;
	if (!lc->pool && lc->pool_deferred > 0) {
		/* A deferred pool that never started: members an earlier serve
		 * left are removed now rather than kept forever. */
		lifecycle_pool_start(lc, 0, NULL);
		return;
	}
	if (!lc->pool)
		return;
	struct lifecycle_pool *p = lc->pool;
	periodic_stop(p->worker);
	lc->pool = NULL;
	int removed = 0;
	for (size_t i = 0; i < p->n_created; i++) {
		struct sandbox_record s = {0};
		_cleanup_error_ struct cp_error *e = NULL;
		if (store_sandbox_get(lc->store, p->created[i], &s, &e) == 0 && s.pooled &&
		    s.status != SANDBOX_REMOVED) {
			remove_member(lc, &s);
			removed++;
		}
		sandbox_record_clear(&s);
		free(p->created[i]);
	}
	free(p->created);
	if (removed)
		log_info("lifecycle", "warm pool: removed %d unclaimed sandbox(es) made by this serve", removed);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

/* Default options: a new managed workspace and nothing else. */
static int wants_default(const struct lifecycle_create_options *o)
{
	return !o->workspace_id && !o->workspace_path &&
	       (!o->workspace_mode || !strcmp(o->workspace_mode, "managed")) && !o->memory && !o->cpus &&
	       o->pids_limit <= 0 && !o->network_off && !o->disk;
}

int lifecycle_pool_claim(struct lifecycle *lc, const struct lifecycle_create_options *opts,
                         struct lifecycle_create_result *ret, struct cp_error **err)
{
	/* A deferred pool (stdio) starts with the first create that could use
	 * it; this create goes cold, the next ones find members. */
	if (!lc->pool && lc->pool_deferred > 0 && wants_default(opts)) {
		pthread_mutex_lock(&lc->create_lock);
		int size = lc->pool_deferred;
		lc->pool_deferred = 0;
		pthread_mutex_unlock(&lc->create_lock);
		if (size > 0)
			lifecycle_pool_start(lc, size, NULL);
		return 0;
	}
	struct lifecycle_pool *p = lc->pool;
	if (!p || !wants_default(opts))
		return 0;
	/* Count and claim under the create lock (as lifecycle_sandbox_insert_limited
	 * does), so a claim racing a cold create cannot overshoot the limit. */
	_cleanup_free_ char *id = NULL;
	pthread_mutex_lock(&lc->create_lock);
	int r = 0;
	if (lc->limits.max_active > 0) {
		int live = 0;
		r = store_sandbox_count_live_on(lc->store, STORE_NODE_LOCAL, &live, err); /* the pool is local */
		if (r == 0 && live >= lc->limits.max_active)
			r = 1; /* the cold path refuses with the limit's message */
	}
	if (r == 0)
		r = store_sandbox_pool_claim(lc->store, lifecycle_sandbox_image(lc), pool_runtime(lc),
		                             lc->limits.default_memory_bytes, lc->storage.default_bytes, clock_now_ms(),
		                             &id, err);
	else if (r == 1)
		r = 0;
	pthread_mutex_unlock(&lc->create_lock);
	if (r <= 0)
		return r;
	p->claimed_at_ms = clock_monotonic_ms();
	periodic_wake(p->worker); /* refill in the background, after POOL_CLAIM_QUIET_MS */

	struct helper_channel *ch = lifecycle_channel_get(lc, id);
	int alive = ch && helper_channel_alive(ch);
	if (ch)
		helper_channel_unref(ch);
	if (!alive) {
		/* Re-attach, or mark it failed when its container is gone. */
		_cleanup_error_ struct cp_error *e = NULL;
		if (lifecycle_sandbox_channel(lc, id, &ch, &e) < 0) {
			cp_error_log_free(LOG_LEVEL_WARN, "lifecycle", &e,
			                  "warm sandbox %s cannot be used; creating cold", id);
			if (lifecycle_sandbox_destroy(lc, id, NULL, &e) < 0)
				log_warn("lifecycle", "remove warm sandbox %s: %s", id, e->message);
			return 0;
		}
		lifecycle_sandbox_release(lc, id, ch); /* ends the hold lifecycle_sandbox_channel took */
	}
	if (opts->progress)
		opts->progress(opts->progress_userdata, "claim a warm sandbox", 1, 1);
	if (store_sandbox_get(lc->store, id, &ret->sandbox, err) < 0)
		return -1;
	log_info("lifecycle", "claimed warm sandbox %s (workspace %s)", id, ret->sandbox.workspace_id);
	return 1;
}
