/* spare.h: idle keepers (keeper.h) waiting for the next bash.start, so no
 * keeper's fork and exec lie on the path of a command: the keeper of an
 * ended session that reported itself idle, or one started ahead of time
 * (SPARE_DEFER_MS after the last was taken, when none came back). At most
 * SPARE_MAX wait. Each is a child of the helper; the pool owns its pid and
 * socket until spare_take hands them out. */
#ifndef CHAT2SBX_HELPER_SPARE_H
#define CHAT2SBX_HELPER_SPARE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define SPARE_MAX 2        /* idle keepers kept; one more idle one exits */
#define SPARE_DEFER_MS 200 /* a fresh one is started this long after a take left none */

/* Whether pid is a waiting idle keeper. */
bool spare_is(pid_t pid);

/* A keeper for a new session: the idle keeper that came back last, else
 * one started now (keeper_spawn; an exec the caller then waits for).
 * Ownership of the pid and *ret_fd moves to the caller. Schedules a fresh
 * spare SPARE_DEFER_MS from now. Returns the pid, or -1 with errno (fork
 * failed). */
pid_t spare_take(char **envp, int *ret_fd);

/* An idle keeper given back (it reported KEEPER_REPORT_IDLE; pid and fd
 * move to the pool): kept when fewer than SPARE_MAX wait and the pool is
 * open, else its socket is closed, so it exits (the caller reaps it like
 * any child). */
void spare_give(pid_t pid, int fd);

/* pid, a waiting idle keeper, ended (reaped) or was stopped: it is dropped.
 * No fresh one is started until the next spare_take (so a kill loop in the
 * sandbox cannot drive a fork loop). */
void spare_lost(pid_t pid);

/* Start a fresh idle keeper when one is due and none waits; call after a
 * loop turn's replies were written (one fork; never blocks). A failure
 * (the pids limit) waits for the next spare_take. */
void spare_ensure(char **envp);

/* The monotonic ms at which spare_ensure will start one, or -1. */
int64_t spare_deadline(void);

/* Close every waiting keeper's socket (they exit; the caller reaps them);
 * with stop, the pool stays closed (the helper is stopping). */
void spare_drop_all(bool stop);

#endif
