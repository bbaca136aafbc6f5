/* clock.h: time sources, injectable for tests (expiry and retention must be
 * testable without waiting). */
#ifndef CP_CLOCK_H
#define CP_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* Milliseconds since the Unix epoch (wall clock), or the injected value. */
int64_t clock_now_ms(void);
/* Milliseconds from CLOCK_MONOTONIC (deadlines; never injected). */
int64_t clock_monotonic_ms(void);
/* A CLOCK_MONOTONIC instant in clock_monotonic_ms's milliseconds as the
 * absolute timespec pthread_cond_timedwait takes, for a condition variable
 * made by clock_cond_init. Pure. */
struct timespec clock_monotonic_timespec(int64_t monotonic_ms);
/* The CLOCK_MONOTONIC instant ms milliseconds from now, as above. */
struct timespec clock_deadline_after(int64_t ms);
/* Initializes cond (default attributes otherwise) so that its timed waits
 * measure CLOCK_MONOTONIC: a step of the wall clock neither ends a wait
 * early nor stretches it. Destroy it with pthread_cond_destroy. */
void clock_cond_init(pthread_cond_t *cond);
/* Test hook: fixes clock_now_ms() to ms; pass -1 to return to the real clock. */
void clock_set_fake_ms(int64_t ms);
/* Shifts clock_now_ms() by ms (CHAT2SBX_CLOCK_OFFSET_MS: lets an end-to-end
 * test see 30 days pass without waiting). */
void clock_set_offset_ms(int64_t ms);
/* Formats a wall-clock ms value as RFC 3339 UTC ("2026-11-29T11:02:18.123Z")
 * into buf (at least 32 bytes). Returns buf. */
char *clock_format_rfc3339(int64_t ms, char *buf, unsigned long size);

#endif
