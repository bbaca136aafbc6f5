/* tool_test.h: the declaration the MCP unit tests' stand-in tools share:
 * any value under the argument names the tests send (the tools echo or
 * ignore them), and an outputSchema with no fields. Include it only where a
 * tool table uses it. */
#ifndef CP_TOOL_TEST_H
#define CP_TOOL_TEST_H

#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "mcp/mcp.h"

static const struct mcp_arg test_tool_args[] = {{.name = "x", .type = MCP_ARG_ANY},
                                                {.name = "n", .type = MCP_ARG_ANY},
                                                {.name = "s", .type = MCP_ARG_ANY},
                                                {.name = "t", .type = MCP_ARG_ANY},
                                                {.name = "f", .type = MCP_ARG_ANY},
                                                {.name = "a", .type = MCP_ARG_ANY},
                                                {.name = "sandbox_id", .type = MCP_ARG_ANY},
                                                {.name = "fail", .type = MCP_ARG_ANY},
                                                {.name = "sleep_ms", .type = MCP_ARG_ANY},
                                                {.name = "sleep_after_ms", .type = MCP_ARG_ANY},
                                                {.name = "wait_cancel_ms", .type = MCP_ARG_ANY},
                                                {.name = "meet", .type = MCP_ARG_ANY},
                                                {.name = "progress", .type = MCP_ARG_ANY},
                                                {.name = "text", .type = MCP_ARG_ANY},
                                                {.name = "data", .type = MCP_ARG_ANY},
                                                {0}};

static const struct mcp_arg test_tool_out[] = {{0}};

/* The stand-ins' "meet": N: the call waits (at most 10 s) until N calls
 * are inside a stand-in of this test file at once; 1 when they met. Calls
 * served one after another never meet (the first waits alone). */
static inline int tool_test_meet(int n)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
	static int inside;
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	pthread_mutex_lock(&lock);
	inside++;
	pthread_cond_broadcast(&cond);
	int r = 0;
	while (inside < n && r == 0)
		r = pthread_cond_timedwait(&cond, &lock, &until);
	int met = inside >= n;
	pthread_mutex_unlock(&lock);
	return met;
}

/* The stand-ins' wait_cancel_ms: waits up to ms (in 10 ms steps) unless the
 * call is cancelled, then sets *cancelled or *completed to 1 (atomically:
 * the test thread reads them) to say how the wait ended. */
static inline void tool_test_wait_cancel(const struct mcp_call *call, int ms, int *cancelled, int *completed)
{
	for (int i = 0; i < ms / 10 && !mcp_call_cancelled(call); i++)
		usleep(10000);
	__atomic_store_n(mcp_call_cancelled(call) ? cancelled : completed, 1, __ATOMIC_SEQ_CST);
}

#endif
