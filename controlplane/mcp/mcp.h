/* mcp.h: the MCP server: Streamable HTTP transport (libmicrohttpd), JSON-RPC
 * 2.0 dispatch, sessions, and the stdio transport. Knows no Docker and no SQL:
 * tools are a table supplied by the caller (tools/), as redis's command table.
 * Protocol rules: MCP specification 2025-11-25 (basic/transports, server/tools,
 * basic/lifecycle), also serving 2025-06-18 and 2025-03-26 clients. */
#ifndef CP_MCP_H
#define CP_MCP_H

#include <stddef.h>
#include <stdint.h>

#include "../base/error.h"

struct json_object;
struct cp_cancel;

/* Annotation bits (MCP server/tools "ToolAnnotations"). */
enum mcp_tool_hint {
	MCP_HINT_READ_ONLY = 1 << 0,
	MCP_HINT_DESTRUCTIVE = 1 << 1,
	MCP_HINT_IDEMPOTENT = 1 << 2,
	MCP_HINT_OPEN_WORLD = 1 << 3,
};

/* Per-call context handed to a tool handler. Handlers only read it; the
 * fields after tool are filled by the dispatcher (zero in a call built by
 * hand, which makes the helpers below no-ops). */
struct mcp_call {
	void *app;              /* the application context given to mcp_server_new */
	const char *session_id; /* MCP session id, NULL when stateless */
	const char *tool;       /* tool name */
	/* params._meta.progressToken of the request (borrowed), NULL when the
	 * client asked for no progress (MCP basic/utilities/progress). */
	struct json_object *progress_token;
	/* Where the transport takes a notification (borrowed message): over
	 * Streamable HTTP an SSE event before the response, over stdio a line
	 * before the response. NULL when the transport cannot send any. */
	void (*notify)(void *notify_ctx, struct json_object *message);
	void *notify_ctx;
	/* Fired when the client sent notifications/cancelled for this request;
	 * NULL when not tracked. A handler passes it to the waits it makes
	 * (helper_channel_call_cancel) so a cancel ends them at once. */
	struct cp_cancel *cancel;
};

/* Sends notifications/progress {progressToken, progress, total, message} for
 * call (MCP basic/utilities/progress). Does nothing when call is NULL, the
 * request carried no progressToken or the transport has no sink. total <= 0
 * leaves total out; message may be NULL. progress must grow from call to
 * call. Thread-safe as far as the transport's sink is (both are). */
void mcp_call_progress(const struct mcp_call *call, double progress, double total, const char *message);

/* True when the client cancelled this request (notifications/cancelled, MCP
 * basic/utilities/cancellation). What a cancel does: the request gets no
 * response (HTTP: the connection or SSE stream closes without it; stdio: no
 * line), and a handler waiting on call->cancel (a helper answer: bash,
 * bash_poll, the clone copy of sandbox_create) stops waiting at once. What
 * it does not: a handler is never interrupted between its steps, and work it
 * started keeps running (a bash command goes on and can be polled; bash_stop
 * ends it; a sandbox being created is created). Only tools/call requests can be cancelled; a cancel for another
 * session's request, an unknown or finished one is ignored. NULL-safe. */
int mcp_call_cancelled(const struct mcp_call *call);

/* A tool's argument (or, in an output schema, a result field), declared once
 * as data (as redis declares a command's arity): tools/list's JSON Schema is
 * generated from it (tool_schema.c) and every tools/call is checked against
 * it before the handler runs (tool_args.c), so each bound in the schema is
 * the bound enforced and a handler never checks it again. */
enum mcp_arg_type {
	MCP_ARG_STRING = 1,
	MCP_ARG_INTEGER, /* a JSON integer; 1000.0 counts as 1000 */
	MCP_ARG_NUMBER,
	MCP_ARG_BOOLEAN,
	MCP_ARG_OBJECT, /* output fields only: any object */
	MCP_ARG_ARRAY,  /* items: objects with the members in .items, any objects when .items is NULL */
	MCP_ARG_ANY,    /* any JSON value (the schema names no type); for free-form tools such as tests' echo */
};

enum mcp_arg_flag {
	MCP_ARG_REQUIRED = 1 << 0,
	MCP_ARG_MIN = 1 << 1,      /* .min is a bound ("minimum") */
	MCP_ARG_MAX = 1 << 2,      /* .max is a bound ("maximum") */
	MCP_ARG_NUL_OK = 1 << 3,   /* a string that may hold NUL characters (file content); others are refused */
	MCP_ARG_TEXT_TOO = 1 << 4, /* a NUMBER also taken as a string (the earlier form; not advertised) */
	MCP_ARG_MAP_TOO = 1 << 5,  /* an ARRAY of {k: string, v: string} also taken as an object of strings */
	/* Output only: a BOOLEAN that may also be one of .enum_values (strings),
	 * advertised as anyOf [boolean, {string, enum}] (sandbox_get's
	 * unsaved_work: true, false or "unknown"). */
	MCP_ARG_OR_ENUM = 1 << 6,
};

struct mcp_arg {
	const char *name; /* NULL ends a list */
	enum mcp_arg_type type;
	unsigned flags;                /* enum mcp_arg_flag bits */
	int64_t min, max;              /* INTEGER, with MCP_ARG_MIN / MCP_ARG_MAX */
	size_t min_length, max_length; /* STRING, in characters (JSON Schema counts code points); 0 = no bound */
	const char *const
	    *enum_values;      /* STRING (or a BOOLEAN with MCP_ARG_OR_ENUM): the accepted values, NULL-terminated */
	const char *id_prefix; /* STRING: an id, the prefix and 20 base32 letters ("pattern"), or NULL */
	const char *description;
	const char *hint;            /* what to do when the value is refused; NULL: the description says it */
	const struct mcp_arg *items; /* ARRAY: the members of each item (all STRING, all required) */
};

/* A tool's checked arguments, handed to its handler: every value has the
 * declared type and lies within the declared bounds, and no undeclared
 * argument is present. The accessors take a declared name (an undeclared
 * one, or one of another type, is a programmer error: assert). JSON null
 * counts as "not given" (strict clients send it for every optional
 * argument). Borrowed for the handler's run. */
struct mcp_args;

/* 1 when name was given (not null), else 0. */
int mcp_args_given(const struct mcp_args *a, const char *name);
/* A STRING argument (borrowed), NULL when not given. With MCP_ARG_NUL_OK
 * the text may hold NULs: *ret_len (may be NULL) gets its length in bytes. */
const char *mcp_args_string(const struct mcp_args *a, const char *name, size_t *ret_len);
/* An INTEGER argument, def when not given. */
int64_t mcp_args_int(const struct mcp_args *a, const char *name, int64_t def);
/* A BOOLEAN argument, def when not given. */
int mcp_args_bool(const struct mcp_args *a, const char *name, int def);
/* The value as given (borrowed), NULL when not given: a NUMBER that may be
 * text (MCP_ARG_TEXT_TOO), an ARRAY, or content to pass on unchanged. */
struct json_object *mcp_args_value(const struct mcp_args *a, const char *name);
/* The whole checked arguments object (borrowed), for a handler that hands
 * its arguments on as they are (a test's echo tool). */
struct json_object *mcp_args_object(const struct mcp_args *a);

/* Checks args (borrowed; an object) against a tool's declaration decl (a
 * list ended by a NULL name; NULL = no arguments): unknown arguments,
 * missing required ones, wrong types, values out of range, strings too
 * short or long, off the enum or the id pattern, and NUL characters are
 * refused with INVALID_ARGUMENT in one shape: "argument 'NAME' <what is
 * wrong>; <what it must be>; <what to do>". On success *ret (caller frees
 * with mcp_args_free) holds the checked view of args, which must outlive
 * it. */
int mcp_args_check(const struct mcp_arg *decl, struct json_object *args, struct mcp_args **ret, struct cp_error **err);
void mcp_args_free(struct mcp_args *a);

/* A tool handler: args are the checked arguments (borrowed, see above). On
 * success it sets *ret_result to an owned JSON object which becomes
 * structuredContent (and its JSON text the content[0] text). On failure it
 * sets *err; the dispatcher turns it into a tool result with isError: true
 * and the message as text (MCP server/tools, "Error Handling": tool
 * execution errors are results, not protocol errors). Handlers check only
 * what the declaration cannot say: combinations of arguments and the world
 * (does the sandbox exist, is it within this machine's limits). */
typedef int (*mcp_tool_handler)(const struct mcp_call *call, const struct mcp_args *args,
                                struct json_object **ret_result, struct cp_error **err);

struct mcp_tool {
	const char *name;
	const char *title;
	const char *description;
	const struct mcp_arg *args;   /* the arguments (NULL-name-ended list; NULL = none) */
	const struct mcp_arg *output; /* the result's fields (the outputSchema), NULL = no outputSchema */
	unsigned hints;               /* enum mcp_tool_hint bits */
	mcp_tool_handler handler;
};

/* The inputSchema (or, output != 0, the outputSchema) tools/list gives for
 * decl (borrowed): a JSON Schema object, the same bytes for the same
 * declaration; an optional input property is advertised as
 * {"anyOf": [P, {"type": "null"}]}, since strict clients send null for an
 * argument they leave out (tool_schema.c). Owned by the caller. */
struct json_object *mcp_tool_schema(const struct mcp_arg *decl, int output);

/* What one JSON-RPC message did: the per-request log line and the audit
 * row are made from it (issue 5, "Logs"). Every string is borrowed for the
 * duration of the hook call and holds no credential: the session is only a
 * prefix of its id, client-chosen words are cut to a safe alphabet. */
struct mcp_request_record {
	const char *method;     /* "tools/call", "initialize", "notifications/cancelled", "-" when unreadable */
	const char *tool;       /* tools/call: the tool's name; NULL otherwise */
	const char *sandbox_id; /* arguments.sandbox_id, or the result's sandbox_id; NULL */
	const char *target;     /* the result's approval_id when it has one; NULL */
	const char *session;    /* the first 8 characters of the session id; NULL when stateless */
	const char *status;     /* "ok"; a tool error's code (NOT_FOUND ...); a JSON-RPC error (INVALID_PARAMS ...);
	                           "CANCELLED" when the client cancelled (no response was sent) */
	const char *message;    /* the error message (bounded); NULL on success */
	long long duration_ms;
	int64_t ticket; /* what the call gate returned for this call (its audit row); 0 when the gate did not run */
};

/* Called once per JSON-RPC message after it was handled (requests and
 * notifications alike; responses sent to the server are ignored), on the
 * thread that handled it. Must not block for long. */
typedef void (*mcp_request_hook)(void *ctx, const struct mcp_request_record *rec);

/* Called before the handler of a tools/call whose tool is not read-only
 * (readOnlyHint unset), on the thread that will run it, with the record so
 * far (method, tool, sandbox_id from the arguments, session; no status). It
 * returns 0 and sets *ret_ticket (> 0) to let the call run, the ticket
 * coming back in the request hook's record; or -1 with *err to refuse it:
 * the handler does not run and the error is the call's result (issue 13: a
 * state change whose audit row cannot be written is not made). */
typedef int (*mcp_call_gate)(void *ctx, const struct mcp_request_record *rec, int64_t *ret_ticket,
                             struct cp_error **err);

/* How long a connection may take to send a request (issue 13); zero fields
 * get the defaults in brackets. */
struct mcp_conn_limits {
	int64_t header_deadline_ms;  /* [10000] headers of a request, from the connection or the last answer */
	int64_t body_grace_ms;       /* [10000] a body's first stretch, at any rate */
	size_t body_min_bytes_per_s; /* [16384] a body's average rate after the grace */
	unsigned max_fresh_tcp;      /* [64] TCP connections open without a request yet; past it the oldest goes */
};

struct mcp_server_options {
	const char *host;            /* bind address, "127.0.0.1" */
	unsigned port;               /* 18788; 0 = pick a free port (tests) */
	const char *name;            /* serverInfo.name */
	const char *version;         /* serverInfo.version */
	const char *instructions;    /* initialize result "instructions" */
	size_t max_body_bytes;       /* 20 MiB; larger bodies get 413 */
	size_t max_sessions;         /* cap on live sessions (oldest idle evicted) */
	long session_idle_ms;        /* idle sessions expire after this */
	mcp_request_hook on_request; /* may be NULL: the log line only */
	mcp_call_gate before_call;   /* may be NULL: every call runs; gets on_request_ctx */
	void *on_request_ctx;
	/* Authentication (issue 12). unix_socket_path: also listen on this Unix
	 * socket (mode 0600); only peers whose uid is this process's or root's
	 * are served, others are disconnected. NULL = TCP only. bearer_token:
	 * every TCP request must carry "Authorization: Bearer <token>" or gets
	 * 401; NULL = no check (CHAT2SBX_MCP_TOKEN=off). token_hint: where the
	 * token can be found, for the 401 message ("the file '…/token'"); never
	 * the token itself. */
	const char *unix_socket_path;
	const char *bearer_token;
	const char *token_hint;
	struct mcp_conn_limits conn_limits;
};

/* The owner's page (issue 26): paths under MCP_PAGE_PREFIX ("/ui" and
 * "/ui/...") on both listeners are handed, after the peer check (TCP:
 * loopback; the Unix socket: its uid), to a page handler the application
 * registers; mcp/ knows nothing of what it serves. */
#define MCP_PAGE_PREFIX "/ui"
/* At most this many query arguments and form fields are passed; a POST
 * body over MCP_PAGE_BODY_MAX bytes is refused with 413 by the handler's
 * own page (refusal set). */
#define MCP_PAGE_FIELDS_MAX 16
#define MCP_PAGE_BODY_MAX ((size_t)16 * 1024)

struct mcp_page_field {
	const char *name;  /* decoded, NUL-terminated */
	const char *value; /* decoded; may hold any byte but NUL */
};

/* One request for the page (all strings borrowed for the handler's call;
 * header values NULL when absent). */
struct mcp_page_request {
	const char *method; /* "GET", "POST", ... */
	const char *path;   /* without the query, starts with MCP_PAGE_PREFIX */
	int is_unix;        /* came on the Unix socket (peer uid already checked) */
	const char *host, *origin, *cookie;
	const struct mcp_page_field *query; /* the query's arguments, decoded */
	size_t n_query;
	const struct mcp_page_field *form; /* a POST's application/x-www-form-urlencoded fields */
	size_t n_form;
	/* Set when mcp/ refused the request before the handler would run
	 * (a foreign Host or Origin: 403; a body too large: 413; a body that is
	 * not a form: 415): the handler only words the refusal, with
	 * status and this text (what was wrong and what to do). */
	unsigned refusal_status;
	const char *refusal;
};

/* What the handler answers. mcp/ queues it with exactly these headers
 * (and Content-Length). */
struct mcp_page_reply {
	unsigned status;          /* an HTTP status; 0 means 500 */
	const char *content_type; /* static storage; NULL = text/html; charset=utf-8 */
	char *body;               /* malloc'd, taken over by mcp/; NULL = empty */
	size_t body_len;
	char location[512];   /* Location header when not empty (a redirect) */
	char set_cookie[256]; /* Set-Cookie header when not empty */
	/* Extra headers, NULL-terminated name/value pairs in static storage
	 * (the page's security headers), may be NULL. */
	const char *const *headers;
};

/* The page handler: fills reply for req. Runs on the connection's thread,
 * several at once; may block (bounded by its own deadlines). */
typedef void (*mcp_page_fn)(void *ctx, const struct mcp_page_request *req, struct mcp_page_reply *reply);

/* 1 when path (without query; NULL allowed) is MCP_PAGE_PREFIX or below it. */
int mcp_page_path(const char *path);

/* Writes the page's address for a client of this machine to buf (size
 * bytes): "http://HOST:PORT/ui/" followed by rest (NULL = nothing), HOST
 * being bind_host with an IPv6 literal in brackets, and 127.0.0.1 for a
 * wildcard bind. Returns buf; clipped to size. */
const char *mcp_page_url(const char *bind_host, unsigned port, const char *rest, char *buf, size_t size);

struct mcp_server;

/* Creates a server over tools[0..n_tools) (borrowed; must outlive the server)
 * and app (borrowed; passed to handlers). Does not listen yet. */
int mcp_server_new(const struct mcp_server_options *opts, const struct mcp_tool *tools, size_t n_tools, void *app,
                   struct mcp_server **ret_server, struct cp_error **err);
void mcp_server_free(struct mcp_server *server);

/* Starts the HTTP listener on opts->host:opts->port at path /mcp, and on
 * opts->unix_socket_path when set (thread per connection, so a tool call
 * that waits does not block others). Fails with UNAVAILABLE naming the
 * address when it cannot bind ("port 18788 on 127.0.0.1 is in use; stop the
 * other server or set CHAT2SBX_PORT"), or the socket's error
 * (mcp_unix_listen); nothing stays open on failure. Returns at once; the
 * server runs on its own threads. */
int mcp_server_listen(struct mcp_server *server, struct cp_error **err);

/* Serves the page's paths with fn (ctx passed through); before
 * mcp_server_listen. Without it those paths are 404 like any other. */
void mcp_server_set_pages(struct mcp_server *server, mcp_page_fn fn, void *ctx);

/* The port actually bound (useful with port 0). */
unsigned mcp_server_port(const struct mcp_server *server);

/* Stops accepting on both listeners (the Unix socket file is removed) and
 * waits for running requests to finish (bounded by their own deadlines). */
void mcp_server_stop(struct mcp_server *server);

/* Serves newline-delimited JSON-RPC on in_fd/out_fd until EOF or
 * mcp_server_stop_stdio (MCP basic/transports, "stdio"), then waits for the
 * tool calls still running. Blocks. Logs go to stderr only. */
int mcp_server_serve_stdio(struct mcp_server *server, int in_fd, int out_fd, struct cp_error **err);
/* Asks mcp_server_serve_stdio to stop reading, as at EOF. Async-signal-safe
 * (a stop signal's handler calls it; the read it interrupts returns EINTR,
 * so install that handler without SA_RESTART). */
void mcp_server_stop_stdio(struct mcp_server *server);

/* Transport-independent dispatch of one parsed JSON-RPC message (borrowed).
 * Returns the response object (caller puts) or NULL for a notification or a
 * response. session_id may be NULL (stateless). *ret_new_session (may be NULL)
 * receives an owned session id when the message was an initialize that created
 * a session. Used by both transports and by unit tests. */
struct json_object *mcp_dispatch(struct mcp_server *server, struct json_object *msg, const char *session_id,
                                 char **ret_new_session);

/* Dispatch of raw bytes: parses (parse error -32700 on bad JSON, -32600 on a
 * non-object), handles batches as the 2025-03-26 revision allows, returns the
 * response text (caller frees) or NULL when nothing is to be sent. */
char *mcp_dispatch_text(struct mcp_server *server, const char *body, size_t len, const char *session_id,
                        char **ret_new_session);

#endif
