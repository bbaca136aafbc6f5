/* server.c: the mcp_server object: copies of the options, the borrowed tool
 * table with its prebuilt tools/list answer, and the session table. Owns
 * their lifetime; the transports (http.c, stdio.c) only borrow the server.
 * Never calls a tool handler itself. */
#include "internal.h"
#include "../base/clock.h"
#include "../base/xalloc.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_MAX_BODY_BYTES ((size_t)20 * 1024 * 1024)
#define DEFAULT_MAX_SESSIONS 1000
#define DEFAULT_SESSION_IDLE_MS (60L * 60 * 1000)
/* Resumable SSE streams (docs/mcp.md, "MCP support"): an ended stream stays
 * resumable for five minutes; at most 256 streams and 64 MiB of events are
 * kept, 4 MiB per stream (a bash answer is at most CHAT2SBX_MAX_OUTPUT_CHARS). */
static const struct mcp_resume_limits resume_limits = {
    .max_streams = 256,
    .max_stream_bytes = (size_t)4 * 1024 * 1024,
    .max_bytes = (size_t)64 * 1024 * 1024,
    .keep_ms = 5 * 60 * 1000,
};

/* Creates a server (see mcp.h). opts is copied (NULL strings and zero limits
 * get the defaults: 127.0.0.1, "chat2sbx", 20 MiB bodies, 1000 sessions, one
 * hour idle; no Unix socket; no token check), the bearer token too (wiped
 * when the server is freed); tools and app are borrowed and must outlive the
 * server. Fails with INVALID_ARGUMENT when the tool table is malformed (a
 * schema that is not a JSON object, a duplicate name) or the token is
 * empty, INTERNAL when memory runs out. Does not block. */
int mcp_server_new(const struct mcp_server_options *opts, const struct mcp_tool *tools, size_t n_tools, void *app,
                   struct mcp_server **ret_server, struct cp_error **err)
{
	struct mcp_server *s = xcalloc(1, sizeof(*s));
	pthread_mutex_init(&s->http_lock, NULL);
	pthread_mutex_init(&s->inflight_lock, NULL);
	pthread_mutex_init(&s->auth_log_lock, NULL);
	mcp_conn_guard_init(&s->guard, &(struct mcp_conn_limits){0}); /* limits set below */
	mcp_body_budget_init(&s->body_budget, MCP_BODY_BUDGET_BYTES);
	clock_cond_init(&s->http_idle); /* stop's deadline must not move with the wall clock */
	if (opts)
		s->opts = *opts;
	s->host = xstrdup(s->opts.host ? s->opts.host : "127.0.0.1");
	s->name = xstrdup(s->opts.name ? s->opts.name : "chat2sbx");
	s->version = xstrdup(s->opts.version ? s->opts.version : "0");
	s->instructions = xstrdup(s->opts.instructions);
	s->unix_path = xstrdup(s->opts.unix_socket_path);
	s->bearer_token = xstrdup(s->opts.bearer_token);
	s->token_hint = xstrdup(s->opts.token_hint);
	s->opts.host = s->host;
	s->opts.name = s->name;
	s->opts.version = s->version;
	s->opts.instructions = s->instructions;
	s->opts.unix_socket_path = s->unix_path;
	s->opts.bearer_token = s->bearer_token;
	s->opts.token_hint = s->token_hint;
	if (s->bearer_token && !*s->bearer_token) {
		mcp_server_free(s);
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "create MCP server: the bearer token is empty");
	}
	if (!s->opts.max_body_bytes)
		s->opts.max_body_bytes = DEFAULT_MAX_BODY_BYTES;
	if (!s->opts.max_sessions)
		s->opts.max_sessions = DEFAULT_MAX_SESSIONS;
	if (s->opts.session_idle_ms <= 0)
		s->opts.session_idle_ms = DEFAULT_SESSION_IDLE_MS;
	struct mcp_conn_limits lim = s->opts.conn_limits;
	if (lim.header_deadline_ms <= 0)
		lim.header_deadline_ms = 10000;
	if (lim.body_grace_ms <= 0)
		lim.body_grace_ms = 10000;
	if (!lim.body_min_bytes_per_s)
		lim.body_min_bytes_per_s = 16384;
	if (!lim.max_fresh_tcp)
		lim.max_fresh_tcp = 64;
	s->opts.conn_limits = lim;
	s->guard.limits = lim;
	s->tools = tools;
	s->n_tools = n_tools;
	s->app = app;

	char *list_json = NULL;
	if (mcp_tools_list_build(tools, n_tools, &list_json, err) < 0) {
		mcp_server_free(s);
		return cp_error_prefix(err, "create MCP server");
	}
	s->tools_array_json = mcp_tools_array_text(list_json);
	free(list_json);
	assert(s->tools_array_json); /* the text mcp_tools_list_build wrote parses */
	s->sessions = mcp_session_table_new(s->opts.max_sessions, s->opts.session_idle_ms);
	s->resume = mcp_resume_new(&resume_limits);
	*ret_server = s;
	return 0;
}

/* Stops the listener if it runs (waiting for running requests, as
 * mcp_server_stop), then frees the server and its sessions, which ends them
 * (basic/transports, "Session Management"); accepts NULL. Tools and app are
 * not touched. */
void mcp_server_free(struct mcp_server *server)
{
	if (!server)
		return;
	mcp_server_stop(server);
	mcp_session_table_free(server->sessions);
	mcp_resume_free(server->resume);
	free(server->tools_array_json);
	free(server->host);
	free(server->name);
	free(server->version);
	free(server->instructions);
	free(server->unix_path);
	if (server->bearer_token)
		explicit_bzero(server->bearer_token, strlen(server->bearer_token));
	free(server->bearer_token);
	free(server->token_hint);
	pthread_cond_destroy(&server->http_idle);
	pthread_mutex_destroy(&server->http_lock);
	pthread_mutex_destroy(&server->inflight_lock);
	pthread_mutex_destroy(&server->auth_log_lock);
	mcp_conn_guard_destroy(&server->guard);
	mcp_body_budget_destroy(&server->body_budget);
	free(server);
}

/* The TCP port the Streamable HTTP listener (basic/transports) is bound to:
 * the real one when opts.port was 0, 0 when not listening. */
unsigned mcp_server_port(const struct mcp_server *server)
{
	return server->port;
}
