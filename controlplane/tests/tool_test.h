/* tool_test.h: the declaration the MCP unit tests' stand-in tools share:
 * any value under the argument names the tests send (the tools echo or
 * ignore them), and an outputSchema with no fields. Include it only where a
 * tool table uses it. */
#ifndef CP_TOOL_TEST_H
#define CP_TOOL_TEST_H

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
                                                {.name = "progress", .type = MCP_ARG_ANY},
                                                {.name = "text", .type = MCP_ARG_ANY},
                                                {.name = "data", .type = MCP_ARG_ANY},
                                                {0}};

static const struct mcp_arg test_tool_out[] = {{0}};

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
