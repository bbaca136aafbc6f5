/* cancel.c: the cancellation token of cancel.h. Owns only the token's lock
 * and its list of waiters (which live in the waiters' own storage); knows
 * nothing of MCP or of what is being waited on. */
#include "cancel.h"

#include <stddef.h>

void cp_cancel_init(struct cp_cancel *c)
{
	pthread_mutex_init(&c->lock, NULL);
	c->fired = 0;
	c->waiters = NULL;
}

void cp_cancel_destroy(struct cp_cancel *c)
{
	if (c)
		pthread_mutex_destroy(&c->lock);
}

void cp_cancel_fire(struct cp_cancel *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	if (!c->fired) {
		__atomic_store_n(&c->fired, 1, __ATOMIC_SEQ_CST);
		for (struct cp_cancel_waiter *w = c->waiters; w; w = w->next)
			w->wake(w->arg);
	}
	pthread_mutex_unlock(&c->lock);
}

int cp_cancel_fired(const struct cp_cancel *c)
{
	return c && __atomic_load_n(&c->fired, __ATOMIC_SEQ_CST);
}

int cp_cancel_watch(struct cp_cancel *c, struct cp_cancel_waiter *w)
{
	if (!c)
		return 0;
	pthread_mutex_lock(&c->lock);
	int fired = c->fired;
	if (!fired) {
		w->next = c->waiters;
		c->waiters = w;
	}
	pthread_mutex_unlock(&c->lock);
	return fired;
}

void cp_cancel_unwatch(struct cp_cancel *c, struct cp_cancel_waiter *w)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	for (struct cp_cancel_waiter **p = &c->waiters; *p; p = &(*p)->next)
		if (*p == w) {
			*p = w->next;
			break;
		}
	pthread_mutex_unlock(&c->lock);
}
