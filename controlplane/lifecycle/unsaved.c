/* unsaved.c: whether clone sandboxes hold unsaved work, asked without
 * making any client wait on a sandbox (issue 23, point 7). A probe runs the
 * save script in state mode inside the sandbox (export_save.c), which the
 * model controls: a hung git, a slow fsmonitor or a replaced binary can make
 * it take its whole deadline. So each probe runs on a thread of its own, the
 * probes one answer starts run in parallel, the answer waits for them all
 * together at most LIFECYCLE_UNSAVED_WAIT_MS, and a probe that failed backs
 * off. Owns the probe table; the registry keeps the answers. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../base/cancel.h"
#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/log.h"
#include "../base/xalloc.h"
#include "export_internal.h"

/* What is known of one sandbox's probes. */
struct unsaved_probe {
	char id[64];
	int in_flight;        /* a probe thread runs for it */
	int fails;            /* failures in a row (0 after a success) */
	int result;           /* the last successful answer, 0 or 1 */
	int64_t result_at_ms; /* monotonic time of that answer; 0 = none */
	int64_t retry_at_ms;  /* monotonic: no new probe before this (back-off) */
};

struct lifecycle_unsaved_probes {
	pthread_mutex_t lock; /* guards everything below */
	pthread_cond_t changed;
	struct cp_cancel cancel; /* fired at stop: every probe's waits end */
	struct unsaved_probe *v;
	size_t n;
	int running; /* probe threads alive */
};

struct probe_job {
	struct lifecycle *lc;
	struct helper_channel *ch; /* one reference, the job's */
	char id[64];
};

struct lifecycle_unsaved_probes *lifecycle_unsaved_probes_new(void)
{
	struct lifecycle_unsaved_probes *p = xcalloc(1, sizeof(*p));
	pthread_mutex_init(&p->lock, NULL);
	clock_cond_init(&p->changed);
	cp_cancel_init(&p->cancel);
	return p;
}

void lifecycle_unsaved_probes_free(struct lifecycle_unsaved_probes *p)
{
	if (!p)
		return;
	cp_cancel_fire(&p->cancel);
	pthread_mutex_lock(&p->lock);
	while (p->running)
		pthread_cond_wait(&p->changed, &p->lock);
	pthread_mutex_unlock(&p->lock);
	cp_cancel_destroy(&p->cancel);
	pthread_cond_destroy(&p->changed);
	pthread_mutex_destroy(&p->lock);
	free(p->v);
	free(p);
}

/* The entry of id, made when create is set (NULL otherwise); under lock. */
static struct unsaved_probe *probe_of(struct lifecycle_unsaved_probes *p, const char *id, int create)
{
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->v[i].id, id))
			return &p->v[i];
	if (!create || strlen(id) >= sizeof(p->v[0].id))
		return NULL;
	p->v = xrealloc(p->v, (p->n + 1) * sizeof(*p->v));
	struct unsaved_probe *e = &p->v[p->n++];
	*e = (struct unsaved_probe){0};
	strcpy(e->id, id);
	return e;
}

/* Forgets entries that no longer say anything (no probe running, back-off
 * over, answer stale); under lock. Keeps the table as small as the set of
 * running clones. */
static void probes_prune(struct lifecycle_unsaved_probes *p, int64_t now)
{
	size_t k = 0;
	for (size_t i = 0; i < p->n; i++) {
		struct unsaved_probe *e = &p->v[i];
		int stale = !e->in_flight && now >= e->retry_at_ms &&
		            (!e->result_at_ms || now - e->result_at_ms >= LIFECYCLE_UNSAVED_CHECK_MS);
		if (!stale)
			p->v[k++] = *e;
	}
	p->n = k;
}

static int64_t backoff_ms(int fails)
{
	int64_t ms = LIFECYCLE_UNSAVED_BACKOFF_MS;
	for (int i = 1; i < fails && ms < LIFECYCLE_UNSAVED_BACKOFF_MAX_MS; i++)
		ms *= 2;
	return ms < LIFECYCLE_UNSAVED_BACKOFF_MAX_MS ? ms : LIFECYCLE_UNSAVED_BACKOFF_MAX_MS;
}

static void *probe_main(void *arg)
{
	struct probe_job *job = arg;
	struct lifecycle_unsaved_probes *p = job->lc->unsaved;
	int unsaved = 0;
	_cleanup_error_ struct cp_error *e = NULL;
	int r = export_unsaved_probe(job->lc, job->id, job->ch, &p->cancel, &unsaved, &e);
	helper_channel_unref(job->ch);
	int64_t now = clock_monotonic_ms();
	pthread_mutex_lock(&p->lock);
	struct unsaved_probe *s = probe_of(p, job->id, 1);
	if (s) {
		s->in_flight = 0;
		if (r == 0) {
			s->result = unsaved;
			s->result_at_ms = now;
			s->fails = 0;
			s->retry_at_ms = 0;
		} else {
			s->fails++;
			s->retry_at_ms = now + backoff_ms(s->fails);
		}
	}
	int fails = s ? s->fails : 0;
	if (r < 0 && !cp_cancel_fired(&p->cancel))
		log_info("lifecycle", "sandbox %s: the unsaved-work probe failed (%d in a row; next in %lld s): %s",
		         job->id, fails, (long long)(backoff_ms(fails) / 1000), e->message);
	free(job);
	p->running--;
	pthread_cond_broadcast(&p->changed);
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* Starts a probe of id over a live channel; under lock. 1 when it runs. */
static int probe_start(struct lifecycle *lc, struct unsaved_probe *s)
{
	struct lifecycle_unsaved_probes *p = lc->unsaved;
	if (p->running >= LIFECYCLE_UNSAVED_PROBES_MAX || cp_cancel_fired(&p->cancel))
		return 0;
	/* Only a live channel: a look at the state never re-attaches. */
	struct helper_channel *ch = lifecycle_channel_get(lc, s->id);
	if (!ch || !helper_channel_alive(ch)) {
		helper_channel_unref(ch);
		return 0;
	}
	struct probe_job *job = xcalloc(1, sizeof(*job));
	job->lc = lc;
	job->ch = ch; /* the job's reference */
	strcpy(job->id, s->id);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_t tid;
	int started = pthread_create(&tid, &attr, probe_main, job) == 0;
	pthread_attr_destroy(&attr);
	if (!started) {
		helper_channel_unref(ch);
		free(job);
		return 0;
	}
	s->in_flight = 1;
	p->running++;
	return 1;
}

static int is_running_clone(struct lifecycle *lc, const struct sandbox_record *s)
{
	if (s->status != SANDBOX_RUNNING)
		return 0;
	struct workspace_record w = {0};
	_cleanup_error_ struct cp_error *e = NULL;
	if (store_workspace_get(lc->store, s->workspace_id, &w, &e) < 0)
		return 0;
	int clone = !strcmp(w.mode, "clone");
	workspace_record_clear(&w);
	return clone;
}

void lifecycle_sandboxes_unsaved(struct lifecycle *lc, const struct sandbox_record *rows, size_t n, int *ret)
{
	struct lifecycle_unsaved_probes *p = lc->unsaved;
	_cleanup_free_ char *waiting = xcalloc(n ? n : 1, 1);
	int64_t wall = clock_now_ms(), now = clock_monotonic_ms();
	size_t n_waiting = 0;
	for (size_t i = 0; i < n; i++) {
		const struct sandbox_record *s = &rows[i];
		ret[i] = s->unsaved < 0 ? LIFECYCLE_UNSAVED_NONE
		         : s->unsaved   ? LIFECYCLE_UNSAVED_YES
		                        : LIFECYCLE_UNSAVED_NO;
		if (!is_running_clone(lc, s))
			continue;
		if (s->unsaved_checked_at_ms && wall - s->unsaved_checked_at_ms < LIFECYCLE_UNSAVED_CHECK_MS)
			continue;
		/* A sandbox the disk guard froze answers nothing until it resumes:
		 * its last known state stands, or "unknown", without a probe. */
		if (lifecycle_disk_paused(lc, s->id, NULL, 0)) {
			if (s->unsaved < 0)
				ret[i] = LIFECYCLE_UNSAVED_UNKNOWN;
			continue;
		}
		pthread_mutex_lock(&p->lock);
		struct unsaved_probe *e = probe_of(p, s->id, 1);
		if (!e)
			ret[i] = LIFECYCLE_UNSAVED_UNKNOWN;
		else if (e->in_flight)
			waiting[i] = 1;
		else if (e->result_at_ms && now - e->result_at_ms < LIFECYCLE_UNSAVED_CHECK_MS && !e->fails)
			ret[i] = e->result ? LIFECYCLE_UNSAVED_YES : LIFECYCLE_UNSAVED_NO; /* newer than the row read */
		else if (now < e->retry_at_ms || !probe_start(lc, e))
			ret[i] = LIFECYCLE_UNSAVED_UNKNOWN;
		else
			waiting[i] = 1;
		n_waiting += waiting[i];
		pthread_mutex_unlock(&p->lock);
	}
	if (!n_waiting)
		return;
	struct timespec deadline = clock_deadline_after(LIFECYCLE_UNSAVED_WAIT_MS);
	pthread_mutex_lock(&p->lock);
	for (;;) {
		size_t busy = 0;
		for (size_t i = 0; i < n; i++) {
			if (!waiting[i])
				continue;
			struct unsaved_probe *e = probe_of(p, rows[i].id, 0);
			if (e && e->in_flight) {
				busy++;
				continue;
			}
			waiting[i] = 0;
			ret[i] = e && !e->fails && e->result_at_ms
			             ? (e->result ? LIFECYCLE_UNSAVED_YES : LIFECYCLE_UNSAVED_NO)
			             : LIFECYCLE_UNSAVED_UNKNOWN;
		}
		if (!busy || pthread_cond_timedwait(&p->changed, &p->lock, &deadline) != 0)
			break;
	}
	for (size_t i = 0; i < n; i++)
		if (waiting[i])
			ret[i] = LIFECYCLE_UNSAVED_UNKNOWN; /* still running: its answer is for the next look */
	probes_prune(p, clock_monotonic_ms());
	pthread_mutex_unlock(&p->lock);
}
