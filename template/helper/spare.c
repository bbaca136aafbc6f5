/* spare.c: the pool of idle keepers (spare.h). Owns their pids and
 * sockets while they wait; never signals them (bash.c reaps and
 * continues them like the session keepers). */
#include "spare.h"

#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hlog.h"
#include "keeper.h"

static struct {
	pid_t pid;
	int fd;
} pool[SPARE_MAX];
static size_t npool;
/* 0: no fresh one is wanted; else the monotonic ms from which one is. At
 * start one is wanted at once. */
static int64_t due = 1;
static bool closed;

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool spare_is(pid_t pid)
{
	for (size_t i = 0; i < npool; i++)
		if (pool[i].pid == pid)
			return true;
	return false;
}

pid_t spare_take(char **envp, int *ret_fd)
{
	due = mono_ms() + SPARE_DEFER_MS;
	if (npool > 0) {
		npool--;
		*ret_fd = pool[npool].fd;
		return pool[npool].pid;
	}
	return keeper_spawn(envp, ret_fd);
}

void spare_give(pid_t pid, int fd)
{
	if (closed || npool == SPARE_MAX) {
		hlog_debug("idle keeper %d exits (%d wait already)", (int)pid, (int)npool);
		close(fd); /* an idle keeper exits at end of file */
		return;
	}
	hlog_debug("idle keeper %d waits for the next session", (int)pid);
	pool[npool].pid = pid;
	pool[npool].fd = fd;
	npool++;
}

void spare_lost(pid_t pid)
{
	for (size_t i = 0; i < npool; i++)
		if (pool[i].pid == pid) {
			close(pool[i].fd);
			pool[i] = pool[--npool];
			due = 0;
			hlog_debug("the idle keeper %d is gone", (int)pid);
			return;
		}
}

void spare_ensure(char **envp)
{
	if (closed || !due || npool > 0 || mono_ms() < due)
		return;
	due = 0;
	int fd;
	pid_t pid = keeper_spawn(envp, &fd);
	if (pid < 0) {
		hlog_debug("cannot start a spare keeper: %s", strerror(errno));
		return;
	}
	pool[npool].pid = pid;
	pool[npool].fd = fd;
	npool++;
}

int64_t spare_deadline(void)
{
	return closed || !due || npool > 0 ? -1 : due;
}

void spare_drop_all(bool stop)
{
	while (npool > 0)
		close(pool[--npool].fd);
	if (stop)
		closed = true;
}
