/* call_state.c: what a tool call needs of a running sandbox, held in its
 * channel-table entry under lc->lock so a call on a healthy sandbox reads
 * nothing from the registry (issue 24): the row as last seen running, the
 * extra mounts its .git protection is checked against, and the newest
 * activity, which the maintenance pass writes (lifecycle_activity_flush).
 * Every status change made here forgets the row (or drops the entry), so
 * the next call loads it again. Never blocks but on the registry in flush. */
#include <stdlib.h>
#include <string.h>

#include "../base/cleanup.h"
#include "../base/log.h"
#include "../base/xalloc.h"
#include "lifecycle_internal.h"

static struct sandbox_mount_record *mounts_copy(const struct sandbox_mount_record *m, size_t n)
{
	if (!n)
		return NULL;
	struct sandbox_mount_record *c = xcalloc(n, sizeof(*c));
	for (size_t i = 0; i < n; i++)
		c[i] = (struct sandbox_mount_record){.target = xstrdup(m[i].target),
		                                     .source = xstrdup(m[i].source),
		                                     .read_only = m[i].read_only,
		                                     .dev = m[i].dev,
		                                     .ino = m[i].ino};
	return c;
}

static void mounts_free(struct sandbox_mount_record *m, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sandbox_mount_record_clear(&m[i]);
	free(m);
}

static struct lifecycle_channel *entry_of(struct lifecycle *lc, const char *id)
{
	for (size_t i = 0; i < lc->n_channels; i++)
		if (strcmp(lc->channels[i].sandbox_id, id) == 0)
			return &lc->channels[i];
	return NULL;
}

void lifecycle_call_state_clear(struct lifecycle_channel *c)
{
	sandbox_record_clear(&c->row);
	c->row = (struct sandbox_record){0};
	mounts_free(c->mounts, c->n_mounts);
	c->mounts = NULL;
	c->n_mounts = 0;
	c->mounts_known = 0;
}

void lifecycle_call_state_remember(struct lifecycle *lc, const char *id, const struct sandbox_record *s,
                                   const struct sandbox_mount_record *m, size_t n)
{
	pthread_mutex_lock(&lc->lock);
	struct lifecycle_channel *c = entry_of(lc, id);
	if (!c) {
		lc->channels = xrealloc(lc->channels, (lc->n_channels + 1) * sizeof(*lc->channels));
		c = &lc->channels[lc->n_channels++];
		*c = (struct lifecycle_channel){.sandbox_id = xstrdup(id), .owner_fd = -1};
	}
	lifecycle_call_state_clear(c);
	sandbox_record_copy(&c->row, s);
	c->mounts = mounts_copy(m, n);
	c->n_mounts = n;
	c->mounts_known = 1;
	pthread_mutex_unlock(&lc->lock);
}

void lifecycle_call_state_forget(struct lifecycle *lc, const char *id)
{
	pthread_mutex_lock(&lc->lock);
	struct lifecycle_channel *c = entry_of(lc, id);
	if (c) {
		sandbox_record_clear(&c->row);
		c->row = (struct sandbox_record){0};
	}
	pthread_mutex_unlock(&lc->lock);
}

int lifecycle_call_state_take(struct lifecycle *lc, const char *id, struct helper_channel **ret_channel,
                              struct sandbox_record *ret_row, struct sandbox_mount_record **ret_m, size_t *ret_n)
{
	int known = 0;
	pthread_mutex_lock(&lc->lock);
	struct lifecycle_channel *c = entry_of(lc, id);
	if (c && c->row.id && c->mounts_known && c->channel && helper_channel_alive(c->channel)) {
		*ret_channel = helper_channel_ref(c->channel);
		sandbox_record_copy(ret_row, &c->row);
		*ret_m = mounts_copy(c->mounts, c->n_mounts);
		*ret_n = c->n_mounts;
		known = 1;
	}
	pthread_mutex_unlock(&lc->lock);
	return known;
}

int lifecycle_call_mounts(struct lifecycle *lc, const char *id, struct sandbox_mount_record **ret_m, size_t *ret_n,
                          struct cp_error **err)
{
	pthread_mutex_lock(&lc->lock);
	struct lifecycle_channel *c = entry_of(lc, id);
	int known = c && c->mounts_known;
	if (known) {
		*ret_m = mounts_copy(c->mounts, c->n_mounts);
		*ret_n = c->n_mounts;
	}
	pthread_mutex_unlock(&lc->lock);
	if (known)
		return 0;
	return store_sandbox_mounts_list(lc->store, id, ret_m, ret_n, err);
}

int lifecycle_activity_note(struct lifecycle *lc, const char *id, int64_t now_ms)
{
	pthread_mutex_lock(&lc->lock);
	struct lifecycle_channel *c = entry_of(lc, id);
	if (c) {
		if (now_ms > c->activity_ms)
			c->activity_ms = now_ms;
		c->activity_dirty = 1;
	}
	pthread_mutex_unlock(&lc->lock);
	return c != NULL;
}

int64_t lifecycle_activity_unwritten(struct lifecycle *lc, const char *id)
{
	pthread_mutex_lock(&lc->lock);
	struct lifecycle_channel *c = entry_of(lc, id);
	int64_t at = c && c->activity_dirty ? c->activity_ms : 0;
	pthread_mutex_unlock(&lc->lock);
	return at;
}

struct pending_touch {
	char *id;
	int64_t at_ms;
};

void lifecycle_activity_flush(struct lifecycle *lc, const char *id)
{
	pthread_mutex_lock(&lc->lock);
	struct pending_touch *p = xcalloc(lc->n_channels + 1, sizeof(*p));
	size_t n = 0;
	for (size_t i = 0; i < lc->n_channels; i++) {
		struct lifecycle_channel *c = &lc->channels[i];
		if (!c->activity_dirty || (id && strcmp(c->sandbox_id, id) != 0))
			continue;
		p[n++] = (struct pending_touch){.id = xstrdup(c->sandbox_id), .at_ms = c->activity_ms};
		c->activity_dirty = 0;
	}
	pthread_mutex_unlock(&lc->lock);
	/* Outside lc->lock: the registry may wait for its busy timeout. */
	for (size_t i = 0; i < n; i++) {
		_cleanup_error_ struct cp_error *e = NULL;
		if (store_sandbox_touch(lc->store, p[i].id, p[i].at_ms, &e) < 0 && e->code != CP_ERR_NOT_FOUND) {
			log_warn("lifecycle", "record activity of %s: %s", p[i].id, e->message);
			lifecycle_activity_note(lc, p[i].id, p[i].at_ms); /* the next flush tries again */
		}
		free(p[i].id);
	}
	free(p);
}
