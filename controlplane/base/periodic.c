/* periodic.c: the periodic worker (periodic.h): a mutex, a condition on
 * the monotonic clock (clock_cond_init) and a flag per thread. The
 * callback runs without the lock held, so it may call periodic_wake. */
#include "periodic.h"

#include <pthread.h>
#include <stdlib.h>

#include "clock.h"
#include "log.h"
#include "xalloc.h"

struct periodic {
	long (*fn)(void *ctx);
	long first_ms;
	void *ctx;
	long interval_ms;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	int woken; /* a wake came in: run again without waiting */
	int stop;
	pthread_t thread;
};

static void *periodic_main(void *arg)
{
	struct periodic *p = arg;
	pthread_mutex_lock(&p->lock);
	long wait_ms = p->first_ms;
	for (;;) {
		struct timespec until = clock_deadline_after(wait_ms);
		while (wait_ms > 0 && !p->stop && !p->woken && pthread_cond_timedwait(&p->wake, &p->lock, &until) == 0)
			;
		if (p->stop)
			break;
		p->woken = 0;
		pthread_mutex_unlock(&p->lock);
		wait_ms = p->fn(p->ctx);
		if (wait_ms < 0)
			wait_ms = p->interval_ms;
		pthread_mutex_lock(&p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

struct periodic *periodic_start(const char *name, long first_ms, long interval_ms, long (*fn)(void *ctx), void *ctx)
{
	struct periodic *p = xcalloc(1, sizeof(*p));
	*p = (struct periodic){.fn = fn, .ctx = ctx, .first_ms = first_ms, .interval_ms = interval_ms};
	pthread_mutex_init(&p->lock, NULL);
	clock_cond_init(&p->wake);
	if (pthread_create(&p->thread, NULL, periodic_main, p) != 0) {
		log_warn("base", "cannot start the %s thread", name);
		pthread_cond_destroy(&p->wake);
		pthread_mutex_destroy(&p->lock);
		free(p);
		return NULL;
	}
	return p;
}

void periodic_wake(struct periodic *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->woken = 1;
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
}

int periodic_stopping(struct periodic *p)
{
	pthread_mutex_lock(&p->lock);
	int s = p->stop;
	pthread_mutex_unlock(&p->lock);
	return s;
}

void periodic_stop_ask(struct periodic *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = 1;
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
}

void periodic_stop(struct periodic *p)
{
	if (!p)
		return;
	periodic_stop_ask(p);
	pthread_join(p->thread, NULL);
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->lock);
	free(p);
}
