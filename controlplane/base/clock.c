/* clock.c: wall and monotonic clocks with a test override for the wall clock. */
#include "clock.h"

#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

static _Atomic int64_t fake_ms = -1;
static _Atomic int64_t offset_ms;

int64_t clock_now_ms(void)
{
	int64_t f = atomic_load(&fake_ms);
	if (f >= 0)
		return f;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + atomic_load(&offset_ms);
}

void clock_set_offset_ms(int64_t ms)
{
	atomic_store(&offset_ms, ms);
}

int64_t clock_monotonic_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct timespec clock_monotonic_timespec(int64_t monotonic_ms)
{
	return (struct timespec){.tv_sec = monotonic_ms / 1000, .tv_nsec = (monotonic_ms % 1000) * 1000000L};
}

struct timespec clock_deadline_after(int64_t ms)
{
	return clock_monotonic_timespec(clock_monotonic_ms() + ms);
}

void clock_cond_init(pthread_cond_t *cond)
{
	pthread_condattr_t attr;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(cond, &attr);
	pthread_condattr_destroy(&attr);
}

void clock_set_fake_ms(int64_t ms)
{
	atomic_store(&fake_ms, ms);
}

char *clock_format_rfc3339(int64_t ms, char *buf, unsigned long size)
{
	time_t s = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&s, &tm);
	snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
	         tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
	return buf;
}
