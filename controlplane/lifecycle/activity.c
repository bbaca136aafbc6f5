/* activity.c: which sandboxes a tool call holds right now. A call holds its
 * sandbox from lifecycle_sandbox_channel to lifecycle_sandbox_release, so
 * expiry (expiry.c) can promise never to remove a sandbox in the middle of a
 * call (DESIGN.md, Sandboxes: lifetime). A small array under lc->lock, like
 * the channel table: tens of sandboxes per machine. Entries exist only while
 * a call holds the sandbox or expiry is removing it. */
#include <stdlib.h>
#include <string.h>

#include "../base/xalloc.h"
#include "lifecycle_internal.h"

static struct lifecycle_hold *find(struct lifecycle *lc, const char *id)
{
	for (size_t i = 0; i < lc->n_holds; i++)
		if (strcmp(lc->holds[i].sandbox_id, id) == 0)
			return &lc->holds[i];
	return NULL;
}

static struct lifecycle_hold *find_or_add(struct lifecycle *lc, const char *id)
{
	struct lifecycle_hold *h = find(lc, id);
	if (h)
		return h;
	lc->holds = xrealloc(lc->holds, (lc->n_holds + 1) * sizeof(*lc->holds));
	lc->holds[lc->n_holds] = (struct lifecycle_hold){.sandbox_id = xstrdup(id)};
	return &lc->holds[lc->n_holds++];
}

/* Drops an entry nobody needs any more (no call, no expiry). */
static void forget_if_unused(struct lifecycle *lc, struct lifecycle_hold *h)
{
	if (h->calls > 0 || h->expiring)
		return;
	free(h->sandbox_id);
	*h = lc->holds[--lc->n_holds];
}

int lifecycle_hold_begin(struct lifecycle *lc, const char *id, struct cp_error **err)
{
	pthread_mutex_lock(&lc->lock);
	struct lifecycle_hold *h = find_or_add(lc, id);
	int r = 0;
	if (h->expiring)
		r = cp_error_set(err, CP_ERR_CONFLICT,
		                 "sandbox '%s' is being removed because it had no tool call for longer than the idle "
		                 "timeout; its workspace is kept: create a new sandbox (sandbox_create with its "
		                 "workspace_id)",
		                 id);
	else
		h->calls++;
	pthread_mutex_unlock(&lc->lock);
	return r;
}

void lifecycle_hold_end(struct lifecycle *lc, const char *id)
{
	pthread_mutex_lock(&lc->lock);
	struct lifecycle_hold *h = find(lc, id);
	if (h && h->calls > 0) {
		h->calls--;
		forget_if_unused(lc, h);
	}
	pthread_mutex_unlock(&lc->lock);
}

int lifecycle_expire_claim(struct lifecycle *lc, const char *id)
{
	pthread_mutex_lock(&lc->lock);
	struct lifecycle_hold *h = find_or_add(lc, id);
	int claimed = h && h->calls == 0 && !h->expiring;
	if (claimed)
		h->expiring = 1;
	else if (h)
		forget_if_unused(lc, h);
	pthread_mutex_unlock(&lc->lock);
	return claimed;
}

void lifecycle_expire_done(struct lifecycle *lc, const char *id)
{
	pthread_mutex_lock(&lc->lock);
	struct lifecycle_hold *h = find(lc, id);
	if (h) {
		h->expiring = 0;
		forget_if_unused(lc, h);
	}
	pthread_mutex_unlock(&lc->lock);
}

void lifecycle_holds_clear(struct lifecycle *lc)
{
	pthread_mutex_lock(&lc->lock);
	for (size_t i = 0; i < lc->n_holds; i++)
		free(lc->holds[i].sandbox_id);
	free(lc->holds);
	lc->holds = NULL;
	lc->n_holds = 0;
	pthread_mutex_unlock(&lc->lock);
}
