/* audit_batch.c: the audit rows written in batches (issue 27, a group
 * commit): store_audit_append queues a row (a copy) and one writer thread
 * writes what is queued in one transaction once a batch is full or a few
 * milliseconds after its first row. Owns the queue and the writer; the
 * statements are the handle's (audit.c). Never drops a row silently: a full
 * queue is written by its caller, a failed write goes to the missed
 * callback, store_free writes what is left. */
#include <assert.h>
#include <stdlib.h>

#include "../base/clock.h"
#include "../base/periodic.h"
#include "store_internal.h"

/* The writer's wait when nothing is queued: a row wakes it. */
#define BATCH_IDLE_MS 60000

/* One queued row: the record's strings point into text. */
struct audit_queued {
	int64_t ticket; /* 0: a new row; else the row store_audit_finish finishes */
	struct audit_record a;
	char text[];
};

struct audit_batch {
	struct store_audit_batching opts;
	pthread_mutex_t lock;        /* the queue; taken after store->lock when both are */
	struct audit_queued **rows;  /* queued, oldest first */
	struct audit_queued **spare; /* the array the last write used (only under store->lock) */
	size_t n, cap;
	int64_t first_ms; /* monotonic time the oldest queued row came */
	struct periodic *writer;
};

/* The length s is stored with: cut to max bytes, whole when max is 0. */
static size_t cut_len(const char *s, size_t max)
{
	return max ? strnlen(s, max) : strlen(s);
}

/* Copies s (cut as the row stores it) to *p and advances it; returns the
 * copy, or NULL for NULL. */
static const char *copy_in(char **p, const char *s, size_t max)
{
	if (!s)
		return NULL;
	size_t n = cut_len(s, max);
	char *d = *p;
	memcpy(d, s, n);
	d[n] = '\0';
	*p += n + 1;
	return d;
}

static struct audit_queued *queued_new(int64_t ticket, const struct audit_record *a)
{
	const char *s[] = {a->actor, a->action, a->sandbox_id, a->target, a->status, a->message, a->method, a->session};
	/* The bounds the row's columns are cut to (audit.c); none for the
	 * caller's own words (actor, action, status: 0). */
	const size_t max[] = {0,
	                      0,
	                      STORE_AUDIT_SANDBOX_MAX,
	                      STORE_AUDIT_TARGET_MAX,
	                      0,
	                      STORE_AUDIT_MESSAGE_MAX,
	                      STORE_AUDIT_METHOD_MAX,
	                      STORE_AUDIT_SESSION_MAX};
	size_t len = 0;
	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++)
		len += s[i] ? cut_len(s[i], max[i]) + 1 : 0;
	struct audit_queued *q = xmalloc(sizeof(*q) + len);
	char *p = q->text;
	q->ticket = ticket;
	q->a = (struct audit_record){.at_ms = a->at_ms, .duration_ms = a->duration_ms};
	q->a.actor = copy_in(&p, a->actor, max[0]);
	q->a.action = copy_in(&p, a->action, max[1]);
	q->a.sandbox_id = copy_in(&p, a->sandbox_id, max[2]);
	q->a.target = copy_in(&p, a->target, max[3]);
	q->a.status = copy_in(&p, a->status, max[4]);
	q->a.message = copy_in(&p, a->message, max[5]);
	q->a.method = copy_in(&p, a->method, max[6]);
	q->a.session = copy_in(&p, a->session, max[7]);
	return q;
}

/* Writes the queued rows in one transaction. The caller holds store->lock,
 * so one write runs at a time and a flush that returns has seen every row
 * queued before it began. Rows that could not be written go to missed. */
static void batch_write_locked(struct store *store)
{
	struct audit_batch *b = store->audit_batch;
	pthread_mutex_lock(&b->lock);
	struct audit_queued **rows = b->rows;
	size_t n = b->n;
	b->rows = b->spare;
	b->spare = rows;
	b->n = 0;
	b->first_ms = 0;
	pthread_mutex_unlock(&b->lock);
	if (n == 0)
		return;
	struct cp_error *e = NULL;
	int r = store_exec(store, "BEGIN IMMEDIATE", "write audit", &e);
	for (size_t i = 0; r == 0 && i < n; i++) {
		struct audit_queued *q = rows[i];
		struct cp_error *one = NULL;
		if (q->ticket > 0 ? store_audit_finish_locked(store, q->ticket, &q->a, &one) < 0
		                  : store_audit_insert_locked(store, &q->a, NULL, &one) < 0) {
			if (one->code != CP_ERR_NOT_FOUND && one->code != CP_ERR_CONFLICT) {
				/* The registry failed, not the row: the whole batch goes. */
				e = one;
				r = -1;
				break;
			}
			/* A row the table refuses (or finishes one that is not
			 * there): that row only. */
			if (b->opts.missed)
				b->opts.missed(q->a.action, one);
			cp_error_free(one);
		}
	}
	if (r == 0)
		r = store_exec(store, "COMMIT", "write audit", &e);
	if (r < 0) {
		store_exec(store, "ROLLBACK", "roll back", NULL);
		for (size_t i = 0; i < n; i++)
			if (b->opts.missed)
				b->opts.missed(rows[i]->a.action, e);
	}
	cp_error_free(e);
	for (size_t i = 0; i < n; i++)
		free(rows[i]);
}

/* The writer's pass: writes the queue when it is full or its oldest row
 * has waited delay_ms; else says how long until then. */
static long batch_pass(void *ctx)
{
	struct store *store = ctx;
	struct audit_batch *b = store->audit_batch;
	pthread_mutex_lock(&b->lock);
	size_t n = b->n;
	int64_t wait = b->first_ms + b->opts.delay_ms - clock_monotonic_ms();
	pthread_mutex_unlock(&b->lock);
	if (n == 0)
		return BATCH_IDLE_MS;
	if (n < b->opts.max_rows && wait > 0)
		return (long)wait;
	_cleanup_store_unlock_ struct store *locked = store_lock(store);
	batch_write_locked(locked);
	return 0; /* look again at once: rows may have come during the write */
}

/* Detaches b from store and frees it (its queue is empty). */
static void batch_free(struct store *store, struct audit_batch *b)
{
	store->audit_batch = NULL;
	store->audit_batch_stop = NULL;
	pthread_mutex_destroy(&b->lock);
	free(b->rows);
	free(b->spare);
	free(b);
}

int store_audit_batching_start(struct store *store, const struct store_audit_batching *opts)
{
	assert(!store->audit_batch && opts->max_rows > 0 && opts->bound >= opts->max_rows && opts->delay_ms > 0);
	struct audit_batch *b = xcalloc(1, sizeof(*b));
	b->opts = *opts;
	b->cap = opts->bound;
	b->rows = xcalloc(b->cap, sizeof(*b->rows));
	b->spare = xcalloc(b->cap, sizeof(*b->spare));
	pthread_mutex_init(&b->lock, NULL);
	store->audit_batch = b;
	store->audit_batch_stop = store_audit_batching_stop;
	b->writer = periodic_start("audit writer", BATCH_IDLE_MS, BATCH_IDLE_MS, batch_pass, store);
	if (!b->writer) {
		batch_free(store, b);
		return -1;
	}
	return 0;
}

int store_audit_append(struct store *store, int64_t ticket, const struct audit_record *a, struct cp_error **err)
{
	struct audit_batch *b = store->audit_batch;
	if (!b)
		return ticket > 0 ? store_audit_finish(store, ticket, a, err) : store_audit_insert(store, a, err);
	struct audit_queued *q = queued_new(ticket, a);
	for (;;) {
		pthread_mutex_lock(&b->lock);
		if (b->n < b->cap)
			break;
		pthread_mutex_unlock(&b->lock);
		/* Full (the writer is behind): the caller writes the queue. */
		_cleanup_store_unlock_ struct store *locked = store_lock(store);
		batch_write_locked(locked);
	}
	b->rows[b->n++] = q;
	int wake = b->n == 1 || b->n == b->opts.max_rows;
	if (b->n == 1)
		b->first_ms = clock_monotonic_ms();
	pthread_mutex_unlock(&b->lock);
	if (wake)
		periodic_wake(b->writer);
	return 0;
}

void store_audit_flush(struct store *store)
{
	if (!store || !store->audit_batch)
		return;
	_cleanup_store_unlock_ struct store *locked = store_lock(store);
	batch_write_locked(locked);
}

void store_audit_batching_stop(struct store *store)
{
	struct audit_batch *b = store ? store->audit_batch : NULL;
	if (!b)
		return;
	periodic_stop(b->writer);
	store_audit_flush(store);
	batch_free(store, b);
}
