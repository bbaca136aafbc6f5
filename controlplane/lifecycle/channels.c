/* channels.c: the table of open helper channels, one per running sandbox,
 * keyed by sandbox id. A small array under a mutex: tens of sandboxes at most
 * per machine, so a linear scan is cheaper than a hash table's upkeep. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int lifecycle_channel_put(struct lifecycle *lc, const char *id, struct helper_channel *ch)
{
	pthread_mutex_lock(&lc->lock);
	struct helper_channel *old = NULL;
	int r = 0;
	for (size_t i = 0; i < lc->n_channels; i++)
		if (strcmp(lc->channels[i].sandbox_id, id) == 0) {
			old = lc->channels[i].channel;
			lc->channels[i].channel = ch;
			goto out;
		}
	struct lifecycle_channel *grown = realloc(lc->channels, (lc->n_channels + 1) * sizeof(*grown));
	char *copy = strdup(id);
	if (!grown || !copy) {
		if (grown)
			lc->channels = grown;
		free(copy);
		r = -1;
		goto out;
	}
	lc->channels = grown;
	lc->channels[lc->n_channels] = (struct lifecycle_channel){.sandbox_id = copy, .channel = ch};
	lc->n_channels++;
out:
	pthread_mutex_unlock(&lc->lock);
	if (old)
		helper_channel_unref(old);
	return r;
}

void lifecycle_channel_drop(struct lifecycle *lc, const char *id)
{
	struct helper_channel *old = NULL;
	pthread_mutex_lock(&lc->lock);
	for (size_t i = 0; i < lc->n_channels; i++)
		if (strcmp(lc->channels[i].sandbox_id, id) == 0) {
			old = lc->channels[i].channel;
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
