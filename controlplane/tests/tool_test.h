/* tool_test.h: the declaration the MCP unit tests' stand-in tools share:
 * any value under the argument names the tests send (the tools echo or
 * ignore them), and an outputSchema with no fields. Include it only where a
 * tool table uses it. */
#ifndef CP_TOOL_TEST_H
#define CP_TOOL_TEST_H

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

#endif
