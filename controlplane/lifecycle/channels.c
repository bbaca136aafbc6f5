/* channels.c: the table of open helper channels, one per running sandbox,
 * keyed by sandbox id (each entry also holds what a call needs of its
 * sandbox: call_state.c), and the attach that opens a channel (every path that
 * attaches, create, reconcile and recovery, comes through here). A small
 * array under a mutex: tens of sandboxes at most per machine, so a linear
 * scan is cheaper than a hash table's upkeep. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/xalloc.h"
#include "lifecycle_internal.h"

struct helper_channel *lifecycle_channel_get(struct lifecycle *lc, const char *id)
{
	struct helper_channel *ch = NULL;
	pthread_mutex_lock(&lc->lock);
	for (size_t i = 0; i < lc->n_channels; i++)
		if (strcmp(lc->channels[i].sandbox_id, id) == 0) {
			if (lc->channels[i].channel)
				ch = helper_channel_ref(lc->channels[i].channel);
			break;
		}
	pthread_mutex_unlock(&lc->lock);
	return ch;
}

void lifecycle_channel_put(struct lifecycle *lc, const char *id, struct helper_channel *ch)
{
	pthread_mutex_lock(&lc->lock);
	struct helper_channel *old = NULL;
	size_t i = 0;
	while (i < lc->n_channels && strcmp(lc->channels[i].sandbox_id, id) != 0)
		i++;
	if (i < lc->n_channels) {
		old = lc->channels[i].channel;
		lc->channels[i].channel = ch;
	} else {
		lc->channels = xrealloc(lc->channels, (lc->n_channels + 1) * sizeof(*lc->channels));
		lc->channels[lc->n_channels++] = (struct lifecycle_channel){.sandbox_id = xstrdup(id), .channel = ch};
	}
	pthread_mutex_unlock(&lc->lock);
	if (old)
		helper_channel_unref(old);
}

void lifecycle_channel_drop(struct lifecycle *lc, const char *id)
{
	/* The activity held in memory goes to the registry first: the row
	 * outlives the entry (an expired sandbox, a failed one). */
	lifecycle_activity_flush(lc, id);
	struct helper_channel *old = NULL;
	pthread_mutex_lock(&lc->lock);
	for (size_t i = 0; i < lc->n_channels; i++)
		if (strcmp(lc->channels[i].sandbox_id, id) == 0) {
			old = lc->channels[i].channel;
			lifecycle_call_state_clear(&lc->channels[i]);
			free(lc->channels[i].sandbox_id);
			lc->channels[i] = lc->channels[--lc->n_channels];
			break;
		}
	pthread_mutex_unlock(&lc->lock);
	if (old)
		helper_channel_unref(old);
}

void lifecycle_channels_clear(struct lifecycle *lc)
{
	pthread_mutex_lock(&lc->lock);
	struct lifecycle_channel *list = lc->channels;
	size_t n = lc->n_channels;
	lc->channels = NULL;
	lc->n_channels = 0;
	pthread_mutex_unlock(&lc->lock);
	for (size_t i = 0; i < n; i++) {
		helper_channel_unref(list[i].channel);
		lifecycle_call_state_clear(&list[i]);
		free(list[i].sandbox_id);
	}
	free(list);
}

size_t lifecycle_channels_drop_dead(struct lifecycle *lc)
{
	struct helper_channel *dead[64];
	size_t n = 0;
	pthread_mutex_lock(&lc->lock);
	for (size_t i = 0; i < lc->n_channels && n < sizeof(dead) / sizeof(dead[0]); i++) {
		struct helper_channel *ch = lc->channels[i].channel;
		if (ch && !helper_channel_alive(ch)) {
			dead[n++] = ch;
			lc->channels[i].channel = NULL;
			/* The re-attach's call loads the row again. */
			sandbox_record_clear(&lc->channels[i].row);
			lc->channels[i].row = (struct sandbox_record){0};
		}
	}
	pthread_mutex_unlock(&lc->lock);
	/* Outside the lock: the last reference joins the reader thread. */
	for (size_t i = 0; i < n; i++)
		helper_channel_unref(dead[i]);
	return n;
}

void lifecycle_channel_boot_swap(struct lifecycle *lc, const char *id, const char *boot_id, char *prev, size_t size)
{
	if (size)
		prev[0] = '\0';
	pthread_mutex_lock(&lc->lock);
	for (size_t i = 0; i < lc->n_channels; i++)
		if (strcmp(lc->channels[i].sandbox_id, id) == 0) {
			struct lifecycle_channel *c = &lc->channels[i];
			if (size)
				snprintf(prev, size, "%s", c->boot_id);
			snprintf(c->boot_id, sizeof(c->boot_id), "%s", boot_id);
			break;
		}
	pthread_mutex_unlock(&lc->lock);
}

int lifecycle_attach_unlisted(struct lifecycle *lc, const char *sandbox_id, const char *container,
                              struct helper_channel **ret_channel, struct cp_error **err)
{
	int fd = -1;
	if (docker_container_attach(lc->engine, container, 10000, &fd, err) < 0)
		return -1;
	/* the channel owns fd even on failure */
	return helper_channel_new(fd, sandbox_id, lc->receipts, ret_channel, err);
}

void lifecycle_channel_receipts_set(struct lifecycle *lc, const struct helper_receipts *receipts)
{
	lc->receipts = receipts;
}

int lifecycle_attach(struct lifecycle *lc, const char *sandbox_id, const char *container,
                     struct helper_channel **ret_channel, struct cp_error **err)
{
	struct helper_channel *ch = NULL;
	if (lifecycle_attach_unlisted(lc, sandbox_id, container, &ch, err) < 0)
		return -1;
	if (ret_channel)
		*ret_channel = helper_channel_ref(ch);
	lifecycle_channel_put(lc, sandbox_id, ch); /* the table takes the first reference */
	return 0;
}
