/* test_mcp_reqlog.c: one record per JSON-RPC message (mcp/reqlog.c, issue 5
 * "Logs"): every request and notification reaches the server's request hook
 * exactly once with its method, tool, sandbox, session prefix and status;
 * responses sent to the server produce none; nothing secret is in it. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "mcp/mcp.h"
#include "tool_test.h"

struct seen {
	char method[64], tool[65], sandbox[65], target[65], session[16], status[32], message[400];
	long long duration_ms;
};
static struct seen seen[32];
static int n_seen;

static void copy(char *dst, size_t size, const char *src)
{
	snprintf(dst, size, "%s", src ? src : "");
}

static void hook(void *ctx, const struct mcp_request_record *rec)
{
	cr_assert_eq(ctx, (void *)&n_seen);
	cr_assert_lt(n_seen, 32);
	struct seen *s = &seen[n_seen++];
	copy(s->method, sizeof(s->method), rec->method);
	copy(s->tool, sizeof(s->tool), rec->tool);
	copy(s->sandbox, sizeof(s->sandbox), rec->sandbox_id);
	copy(s->target, sizeof(s->target), rec->target);
	copy(s->session, sizeof(s->session), rec->session);
	copy(s->status, sizeof(s->status), rec->status);
	copy(s->message, sizeof(s->message), rec->message);
	s->duration_ms = rec->duration_ms;
}

static int tool_make(const struct mcp_call *call, const struct mcp_args *margs, struct json_object **ret,
                     struct cp_error **err)
{
	struct json_object *args = mcp_args_object(margs);
	(void)call;
	(void)args;
	(void)err;
	*ret = json_tokener_parse("{\"sandbox_id\":\"sbx_new\",\"approval_id\":\"approval_x\"}");
	return 0;
}

static int tool_fail(const struct mcp_call *call, const struct mcp_args *margs, struct json_object **ret,
                     struct cp_error **err)
{
	struct json_object *args = mcp_args_object(margs);
	(void)call;
	(void)args;
	(void)ret;
	return cp_error_set(err, CP_ERR_NOT_FOUND, "sandbox 'sbx_gone' not found");
}

static const struct mcp_tool tools[] = {
    {"make", NULL, "Makes.", test_tool_args, NULL, 0, tool_make},
    {"fail", NULL, "Fails.", test_tool_args, NULL, 0, tool_fail},
};

static struct mcp_server *server;

static void setup(void)
{
	log_set_level(LOG_LEVEL_ERROR);
	n_seen = 0;
	struct mcp_server_options o = {.on_request = hook, .on_request_ctx = &n_seen};
	struct cp_error *err = NULL;
	cr_assert_eq(mcp_server_new(&o, tools, 2, NULL, &server, &err), 0);
}

static void teardown(void)
{
	mcp_server_free(server);
}

TestSuite(mcp_reqlog, .init = setup, .fini = teardown);

static void send_text(const char *text, const char *session, char **ret_new_session)
{
	free(mcp_dispatch_text(server, text, strlen(text), session, ret_new_session));
}

Test(mcp_reqlog, one_record_per_message)
{
	char *sid = NULL;
	send_text(
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\"}}",
	    NULL, &sid);
	cr_assert_not_null(sid);
	send_text("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", sid, NULL);
	send_text("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}", sid, NULL);
	send_text("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}", NULL, NULL);
	send_text("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"make\"}}", sid, NULL);
	send_text("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"fail\",\"arguments\":"
	          "{\"sandbox_id\":\"sbx_gone\"}}}",
	          NULL, NULL);
	send_text("{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{\"name\":\"no such\\ntool\"}}",
	          NULL, NULL);
	send_text("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"nope\"}", NULL, NULL);
	send_text("{\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{}}", NULL, NULL); /* a response: no record */
	send_text(
	    "[{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"},{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"ping\"}]",
	    NULL, NULL);
	send_text("{\"jsonrpc\":\"1.0\",\"id\":11,\"method\":\"ping\"}", NULL, NULL);

	cr_assert_eq(n_seen, 11, "one record per request or notification, none for a response");
	char prefix[9];
	snprintf(prefix, sizeof(prefix), "%.8s", sid);
	cr_assert_str_eq(seen[0].method, "initialize");
	cr_assert_str_eq(seen[0].status, "ok");
	cr_assert_str_eq(seen[0].session, prefix, "the new session, as a prefix only");
	cr_assert_str_eq(seen[1].method, "notifications/initialized");
	cr_assert_str_eq(seen[1].session, prefix);
	cr_assert_str_eq(seen[2].method, "ping");
	cr_assert_str_eq(seen[3].method, "tools/list");
	cr_assert_str_eq(seen[3].session, "", "stateless");
	cr_assert_str_eq(seen[4].method, "tools/call");
	cr_assert_str_eq(seen[4].tool, "make");
	cr_assert_str_eq(seen[4].sandbox, "sbx_new", "the sandbox a result names");
	cr_assert_str_eq(seen[4].target, "approval_x");
	cr_assert_str_eq(seen[4].status, "ok");
	cr_assert_str_eq(seen[5].tool, "fail");
	cr_assert_str_eq(seen[5].sandbox, "sbx_gone");
	cr_assert_str_eq(seen[5].status, "NOT_FOUND");
	cr_assert_str_eq(seen[5].message, "sandbox 'sbx_gone' not found");
	cr_assert_str_eq(seen[6].status, "INVALID_PARAMS");
	cr_assert_str_eq(seen[6].tool, "no?such?tool", "client words are cut to a safe alphabet");
	cr_assert_str_eq(seen[7].method, "nope");
	cr_assert_str_eq(seen[7].status, "METHOD_NOT_FOUND");
	cr_assert_str_eq(seen[8].method, "ping");
	cr_assert_str_eq(seen[9].method, "ping");
	cr_assert_str_eq(seen[10].status, "INVALID_REQUEST");
	for (int i = 0; i < n_seen; i++) {
		cr_assert_geq(seen[i].duration_ms, 0);
		cr_assert_null(strstr(seen[i].session, sid + 8), "never the whole session id");
	}
	free(sid);
}
