/* lifecycle_internal.h: shared by lifecycle/ sources only. */
#ifndef CP_LIFECYCLE_INTERNAL_H
#define CP_LIFECYCLE_INTERNAL_H

#include <pthread.h>

#include "lifecycle.h"

static inline void helper_channel_unrefp(struct helper_channel **ch)
{
	if (*ch)
		helper_channel_unref(*ch);
}

struct lifecycle_channel {
	char *sandbox_id;               /* owned */
	struct helper_channel *channel; /* one reference owned by the table */
};

struct lifecycle {
	const struct config *cfg;     /* borrowed */
	struct store *store;          /* borrowed */
	struct docker_engine *engine; /* borrowed */
	pthread_mutex_t lock;         /* guards channels */
	struct lifecycle_channel *channels;
	size_t n_channels;
	int network_ready;           /* LIFECYCLE_NETWORK exists (under attach_lock) */
	pthread_mutex_t attach_lock; /* one (re-)attach at a time, so a sandbox never gets two channels */
};

/* Channel table (channels.c). get returns a new reference or NULL; put takes
 * ch's reference (replacing and unreferencing an older one); -1 on OOM. */
struct helper_channel *lifecycle_channel_get(struct lifecycle *lc, const char *id);
int lifecycle_channel_put(struct lifecycle *lc, const char *id, struct helper_channel *ch);
void lifecycle_channel_drop(struct lifecycle *lc, const char *id);
void lifecycle_channels_clear(struct lifecycle *lc);

/* Attaches to a running container and checks the helper answers hello
 * (sandbox.c). On success the channel is in the table and *ret_channel (may be
 * NULL) gets an extra reference. */
int lifecycle_attach(struct lifecycle *lc, const char *sandbox_id, const char *container,
                     struct helper_channel **ret_channel, struct cp_error **err);

/* Asks the helper for hello (up to LIFECYCLE_HELLO_TIMEOUT_MS). */
int lifecycle_helper_hello(struct helper_channel *ch, struct cp_error **err);

#endif
