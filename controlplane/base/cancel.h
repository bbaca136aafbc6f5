/* cancel.h: a cancellation token one thread fires and others wait on. A
 * waiter registers a wake-up callback (it broadcasts its own condition
 * variable) for as long as it blocks, so a cancel ends a condition wait at
 * once instead of at its deadline. Used for MCP notifications/cancelled: the
 * dispatcher owns one token per tools/call, the helper channel waits on it. */
#ifndef CP_CANCEL_H
#define CP_CANCEL_H

#include <pthread.h>

/* A registered wake-up: wake(arg) runs on the firing thread, once, with the
 * token's lock held; it must not block or touch the token. Lives in the
 * waiter's storage (usually its stack) from watch until unwatch. */
struct cp_cancel_waiter {
	void (*wake)(void *arg);
	void *arg;
	struct cp_cancel_waiter *next;
};

struct cp_cancel {
	pthread_mutex_t lock;
	int fired; /* read without the lock through cp_cancel_fired */
	struct cp_cancel_waiter *waiters;
};

/* Initializes an unfired token in caller storage. */
void cp_cancel_init(struct cp_cancel *c);
/* Destroys it; no waiter may still be registered. Accepts NULL. */
void cp_cancel_destroy(struct cp_cancel *c);

/* Fires the token (idempotent) and calls every registered waiter's wake once.
 * Thread-safe; never blocks beyond the token's lock and the wake callbacks. */
void cp_cancel_fire(struct cp_cancel *c);

/* True once the token fired. NULL-safe (a NULL token never fires). */
int cp_cancel_fired(const struct cp_cancel *c);

/* Registers w (caller storage) until cp_cancel_unwatch. Returns 1 without
 * registering when the token already fired (the caller must not wait), 0
 * otherwise. A NULL token registers nothing and returns 0. */
int cp_cancel_watch(struct cp_cancel *c, struct cp_cancel_waiter *w);

/* Unregisters w (a no-op when it was never registered or c is NULL). After
 * it returns, w->wake is not running and will not run. */
void cp_cancel_unwatch(struct cp_cancel *c, struct cp_cancel_waiter *w);

#endif
