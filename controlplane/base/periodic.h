/* periodic.h: one worker thread that runs a callback at once and then
 * every interval, can be woken early and stops promptly: the one loop
 * serve's periodic passes, the warm pool and the connection watchdog use
 * instead of hand-written ones. */
#ifndef CP_BASE_PERIODIC_H
#define CP_BASE_PERIODIC_H

struct periodic;

/* Starts a thread that calls fn(ctx) first_ms from now and then, after
 * each call ends, after the wait fn returned (ms; 0 = at once, < 0 =
 * interval_ms), or sooner when woken. fn runs on that thread only, never
 * twice at once; ctx is borrowed until periodic_stop returns. name (static)
 * goes into the log line when the thread cannot start. Returns NULL (and
 * logs) when the thread cannot be made; the caller then runs without it. */
struct periodic *periodic_start(const char *name, long first_ms, long interval_ms, long (*fn)(void *ctx), void *ctx);
/* Runs the next call now instead of at its time (a call under way runs on;
 * the next starts when it ends). Accepts NULL. Never blocks long. */
void periodic_wake(struct periodic *p);
/* Asks the thread to stop without waiting: a call under way finishes, no
 * new one starts. periodic_stop must still follow (it waits and frees);
 * asking several first lets their last calls end together. Accepts NULL;
 * never blocks long. */
void periodic_stop_ask(struct periodic *p);
/* Stops the thread: a call under way finishes, no new one starts; waits
 * for it, then frees p. Accepts NULL. Blocks for at most one fn call. */
void periodic_stop(struct periodic *p);
/* 1 once periodic_stop was asked: a long fn may look and return early. */
int periodic_stopping(struct periodic *p);

#endif
