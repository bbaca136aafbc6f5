/* internal.h: what the files of mcp/ share and nobody else sees: the server
 * struct, the session table, JSON-RPC reply builders and the loopback checks.
 * Tests may include it; other layers use mcp.h only. */
#ifndef CP_MCP_INTERNAL_H
#define CP_MCP_INTERNAL_H

#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>

#include "../base/cancel.h"
#include "mcp.h"

struct json_object;
struct MHD_Daemon;

/* MCP basic/lifecycle "Version Negotiation": the revisions an initialize
 * may negotiate (the legacy, handshake-based ones), newest first. */
#define MCP_PROTOCOL_LATEST "2025-11-25"
extern const char *const mcp_protocol_versions[];
extern const size_t mcp_protocol_versions_count;
/* The stateless revision (MCP 2026-07-28 basic/versioning): no handshake,
 * every request declares itself in params._meta (modern.c). */
#define MCP_PROTOCOL_MODERN "2026-07-28"

/* JSON-RPC 2.0 section 5.1 error codes, plus the session code the MCP
 * TypeScript SDK uses for an unknown session. */
enum mcp_rpc_code {
	MCP_RPC_PARSE_ERROR = -32700,
	MCP_RPC_INVALID_REQUEST = -32600,
	MCP_RPC_METHOD_NOT_FOUND = -32601,
	MCP_RPC_INVALID_PARAMS = -32602,
	MCP_RPC_INTERNAL_ERROR = -32603,
	MCP_RPC_SESSION_NOT_FOUND = -32001,
	/* MCP 2026-07-28 basic, "Error Codes" (the range -32020..-32099 the
	 * specification reserves for itself). */
	MCP_RPC_HEADER_MISMATCH = -32020,
	MCP_RPC_MISSING_CLIENT_CAPABILITY = -32021,
	MCP_RPC_UNSUPPORTED_VERSION = -32022,
};

struct mcp_session_table;

/* The routing headers of one HTTP POST (MCP 2026-07-28
 * basic/transports/streamable-http, "Request Metadata"): values borrowed as
 * the client sent them (NULL when absent), with how often each name
 * appeared (names compared case-insensitively, RFC 9110 section 5.1). */
struct mcp_route_headers {
	const char *protocol_version; /* MCP-Protocol-Version */
	const char *method;           /* Mcp-Method */
	const char *name;             /* Mcp-Name */
	unsigned protocol_version_count, method_count, name_count;
};

/* What a transport tells the dispatcher about one incoming message besides
 * its body, and what the dispatcher reports back about it. */
struct mcp_sink {
	void (*notify)(void *ctx, struct json_object *message); /* message borrowed; may be NULL */
	void *ctx;
	/* in: the HTTP routing headers; NULL on stdio, which has no header
	 * layer (MCP 2026-07-28 basic/transports/stdio, "Request Metadata"). */
	const struct mcp_route_headers *headers;
	/* in: a serial of the HTTP connection; the tools/call it starts is
	 * cancelled when that connection's peer hangs up (mcp_cancel_owner).
	 * 0 = none (notifications/cancelled by request id instead). */
	uint64_t owner;
	/* in: only run a 2026-07-28 request's checks: a refusal is returned (and
	 * logged), a request that passes them gets NULL and is not run. */
	int check_only;
	int cancelled;        /* out: a request of the message was cancelled; send no response */
	int modern;           /* out: the message was served as a 2026-07-28 request */
	unsigned http_status; /* out: the status its reply should carry; 0 = 200 */
};

/* A tools/call in progress, so notifications/cancelled can find it. */
struct mcp_inflight {
	struct mcp_inflight *next;
	char *session_id; /* NULL when stateless */
	uint64_t owner;   /* the HTTP connection whose hangup cancels it (2026-07-28); 0 = none */
	char *id_text;    /* the request id as JSON text */
	struct cp_cancel cancel;
};

/* body_budget.c: the request-body bytes all connections hold at once
 * (security review, defect 4). Fields are private to body_budget.c. */
struct mcp_body_budget {
	pthread_mutex_t lock;
	size_t limit;    /* bytes */
	size_t used;     /* bytes reserved now */
	size_t released; /* bytes released since the last trim advice */
};
/* The budget across all connections of one server. */
#define MCP_BODY_BUDGET_BYTES ((size_t)64 * 1024 * 1024)
/* Sets an empty budget of limit bytes; destroy releases the mutex. */
void mcp_body_budget_init(struct mcp_body_budget *b, size_t limit);
void mcp_body_budget_destroy(struct mcp_body_budget *b);
/* Reserves n bytes: 0 when they fit under the limit, -1 (nothing reserved)
 * when they would pass it. Thread-safe. */
int mcp_body_budget_reserve(struct mcp_body_budget *b, size_t n);
/* Returns n reserved bytes. Returns 1 when, counting this release, 16 MiB or
 * more were released since the last time it returned 1: the caller should
 * then call malloc_trim(0) so RSS shrinks; 0 otherwise. Thread-safe. */
int mcp_body_budget_release(struct mcp_body_budget *b, size_t n);
/* Bytes reserved now (for tests and logs). */
size_t mcp_body_budget_used(struct mcp_body_budget *b);

/* Kinds of refused connections and requests, each logged at most once per
 * 10 s with a count (refusal.c, mcp_log_refusal). */
enum mcp_refusal {
	MCP_REFUSED_PEER,
	MCP_REFUSED_SOCKET,
	MCP_REFUSED_TOKEN,
	MCP_REFUSED_SLOW,
	MCP_REFUSED_FLOOD,
	MCP_REFUSED_OAUTH, /* an OAuth path, answered with where the token is (oauth_paths.c) */
};
#define MCP_REFUSAL_KINDS 6

/* conn_guard.c: deadlines for slow connections and the cap on connections
 * that have sent no request yet (issue 13). */
struct mcp_conn;
struct mcp_conn_guard {
	pthread_mutex_t lock;
	LIST_HEAD(mcp_conn_list, mcp_conn) conns; /* every open connection of both listeners */
	unsigned fresh_tcp;                       /* TCP connections that have not sent their first request's headers */
	uint64_t next_serial;                     /* the last connection serial given out */
	struct mcp_conn_limits limits;
	struct periodic *watchdog; /* a pass every WATCHDOG_PERIOD_MS (base/periodic.c); NULL = stopped */
};
/* A connection's deadline has passed (pure): waiting for headers longer
 * than header_deadline_ms, or, phase_body, a body whose average rate after
 * body_grace_ms is below body_min_bytes_per_s. */
int mcp_conn_overdue(int phase_body, int64_t elapsed_ms, size_t body_bytes, const struct mcp_conn_limits *lim);
void mcp_conn_guard_init(struct mcp_conn_guard *g, const struct mcp_conn_limits *lim);
void mcp_conn_guard_destroy(struct mcp_conn_guard *g);
/* Starts and stops the watchdog thread (start: -1 when it cannot). */
struct mcp_server;
int mcp_conn_guard_start(struct mcp_server *server);
void mcp_conn_guard_stop(struct mcp_conn_guard *g);
/* A connection on fd (borrowed; the guard keeps a dup) opened: returns its
 * record (NULL when out of memory: not guarded). A TCP connection past the
 * cap of fresh ones pushes out the oldest fresh one. */
struct mcp_conn *mcp_conn_started(struct mcp_server *server, int fd, int is_unix);
/* It closed: the record is freed (NULL accepted). */
void mcp_conn_closed(struct mcp_server *server, struct mcp_conn *c);
/* Phases of a request on it (NULL accepted): headers complete, body bytes
 * received, being handled (no deadline), finished (waiting again). */
void mcp_conn_headers_done(struct mcp_server *server, struct mcp_conn *c);
void mcp_conn_body(struct mcp_server *server, struct mcp_conn *c, size_t n);
void mcp_conn_handling(struct mcp_server *server, struct mcp_conn *c);
void mcp_conn_idle(struct mcp_server *server, struct mcp_conn *c);
/* The request c is handling is a 2026-07-28 one: until c is idle again, the
 * watchdog cancels the tools/call started with the returned serial as its
 * owner (mcp_cancel_owner) once c's peer hangs up, within its period (500
 * ms). Returns 0 (no watch) for a NULL c. */
uint64_t mcp_conn_watch_hangup(struct mcp_server *server, struct mcp_conn *c);
/* refusal.c: logs a refusal at most once per 10 s per kind, with a count. */
void mcp_log_refusal(struct mcp_server *server, enum mcp_refusal kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

struct mcp_server {
	struct mcp_server_options opts; /* string fields point at the copies below */
	char *host;
	char *name;
	char *version;
	char *instructions;
	const struct mcp_tool *tools; /* borrowed */
	size_t n_tools;
	char *tools_array_json; /* tools/list's tools, built once at start: what every answer sends */
	void *app;              /* borrowed */
	struct mcp_session_table *sessions;
	struct MHD_Daemon *daemon;      /* the TCP listener; NULL when not listening */
	struct MHD_Daemon *unix_daemon; /* the Unix socket listener; NULL when none */
	char *unix_path;                /* copy of opts.unix_socket_path, NULL when none */
	char *bearer_token;             /* copy of opts.bearer_token, NULL = no check */
	char *token_hint;               /* copy of opts.token_hint */
	int unix_listening;             /* unix_path is bound by this server (unlinked at stop) */
	unsigned port;
	/* The two listeners' callback contexts: which one a request came on. */
	struct mcp_listener {
		struct mcp_server *server;
		int is_unix;
	} tcp_listener, unix_listener;
	mcp_page_fn page_fn; /* the owner's page (mcp_server_set_pages); NULL = none */
	void *page_ctx;
	/* Refusals are logged at most once per MCP_AUTH_LOG_INTERVAL_MS and
	 * kind (enum mcp_refusal) with a count, so a flood of bad requests
	 * cannot flood the log. */
	pthread_mutex_t auth_log_lock;
	struct {
		int64_t last_ms;
		unsigned long count;
	} refusals[MCP_REFUSAL_KINDS];
	struct mcp_conn_guard guard;      /* deadlines and the cap on idle connections */
	volatile sig_atomic_t stdio_stop; /* set by mcp_server_stop_stdio (a signal handler) */
	/* HTTP requests in progress, so stop can let them finish. */
	pthread_mutex_t http_lock;
	pthread_cond_t http_idle; /* signalled when http_active drops */
	unsigned http_active;
	int http_stopping;                  /* new requests get 503 */
	struct mcp_body_budget body_budget; /* request bodies held at once */
	pthread_mutex_t inflight_lock;
	struct mcp_inflight *inflight; /* tools/call requests being answered */
	struct mcp_resume *resume;     /* events of SSE answers, for Last-Event-ID */
};

/* What dispatch learns about one message while handling it (reqlog.c);
 * fixed buffers, so the record outlives the request's own objects. */
struct mcp_request_info {
	int64_t start_ms; /* monotonic */
	char method[64];
	char tool[65];
	char sandbox[65];
	char target[65];
	char session[9];
	const char *revision; /* static text: MCP_PROTOCOL_MODERN for a 2026-07-28 request, else NULL */
	const char *status;   /* static text; NULL until known */
	char message[400];
	int64_t ticket; /* from the call gate (mcp_call_gate); 0 when none ran */
};

/* resume.c: resumable SSE streams (basic/transports, "Resumability and
 * Redelivery"). Event ids are "<16 hex key>-<seq>". */
#define MCP_STREAM_KEY_LEN 16
struct mcp_resume_limits {
	size_t max_streams;      /* streams kept; ended ones are dropped oldest first past it */
	size_t max_stream_bytes; /* events kept per stream; the oldest go first past it */
	size_t max_bytes;        /* events kept in all; ended streams are dropped oldest first past it */
	int64_t keep_ms;         /* how long an ended stream stays resumable */
};
struct mcp_resume;
struct mcp_stream;
struct mcp_stream_reader;
enum mcp_stream_end {
	MCP_STREAM_COMPLETE,  /* the response was its last event: kept for resumption */
	MCP_STREAM_ABANDONED, /* ended without a response (cancelled): kept; readers end with an error */
	MCP_STREAM_DISCARD,   /* never sent as SSE: dropped now */
};
/* A table (owned, never NULL) with the limits copied. */
struct mcp_resume *mcp_resume_new(const struct mcp_resume_limits *lim);
/* Frees the table and every stream no reader or writer holds; accepts NULL.
 * No reader may block in it any more (call mcp_resume_shutdown first). */
void mcp_resume_free(struct mcp_resume *t);
/* Wakes every blocked reader, which then ends with an error; for stop. */
void mcp_resume_shutdown(struct mcp_resume *t);
/* Opens a stream for one SSE answer, with a random key, for session_id
 * (copied; NULL = stateless). *ret holds the writer's reference, dropped by
 * mcp_stream_end. INTERNAL when randomness fails. */
int mcp_stream_open(struct mcp_resume *t, const char *session_id, struct mcp_stream **ret, struct cp_error **err);
/* Opens a stream for one SSE answer of a 2026-07-28 request: its events
 * have no id line and it is never listed, so no GET can resume it (MCP
 * 2026-07-28 basic/transports/streamable-http: "Resumable SSE streams via
 * Last-Event-ID are not supported"). Returns the writer's reference, as
 * mcp_stream_open's *ret; never NULL; the key is empty. */
struct mcp_stream *mcp_stream_open_plain(struct mcp_resume *t);
/* The stream's key (borrowed; tests). */
const char *mcp_stream_key(const struct mcp_stream *s);
/* Appends one event with the next id and json (borrowed) as its data, and
 * wakes readers. -1 when the stream already ended. */
int mcp_stream_append(struct mcp_stream *s, const char *json);
/* Ends the stream as how says and drops the writer's reference (s is not
 * used after). */
void mcp_stream_end(struct mcp_stream *s, enum mcp_stream_end how);
/* A reader from the stream's first event (the POST's own response); never
 * NULL. Free with mcp_stream_reader_free. */
struct mcp_stream_reader *mcp_stream_reader_new(struct mcp_stream *s);
/* A reader from the event after last_event_id (borrowed), for a GET with
 * Last-Event-ID on session_id (NULL = none sent). Errors: INVALID_ARGUMENT
 * (not an id of ours, or never sent), NOT_FOUND (unknown, expired, or of
 * another session), LIMIT (the events after it were dropped), INTERNAL. */
int mcp_stream_resume(struct mcp_resume *t, const char *last_event_id, const char *session_id,
                      struct mcp_stream_reader **ret, struct cp_error **err);
/* Copies up to max bytes of the reader's next events into buf; blocks while
 * the stream runs and has nothing new. Returns the count, 0 at the end of a
 * complete stream, -1 when it was abandoned, its events were dropped from
 * under the reader, or the table shuts down. */
ssize_t mcp_stream_read(struct mcp_stream_reader *r, char *buf, size_t max);
void mcp_stream_reader_free(struct mcp_stream_reader *r);
/* Streams kept (expired ones dropped first) and, in *ret_bytes (may be NULL),
 * the bytes of their events. */
size_t mcp_resume_count(struct mcp_resume *t, size_t *ret_bytes);

/* reqlog.c */
const char *mcp_log_word(const char *s, char *buf, size_t size);
void mcp_request_info_begin(struct mcp_request_info *info, const char *method, const char *session_id);
void mcp_request_info_fail(struct mcp_request_info *info, const char *status, const char *message);
void mcp_request_done(struct mcp_server *server, struct mcp_request_info *info, struct json_object *reply);

/* protocol.c */
int mcp_protocol_supported(const char *version);
struct json_object *mcp_rpc_error_new(struct json_object *id, int code, const char *message);
struct json_object *mcp_rpc_result_new(struct json_object *id, struct json_object *result);
char *mcp_json_text(struct json_object *obj);
int mcp_json_parse(const char *text, size_t len, struct json_object **ret_value);
int mcp_json_parse_request(const char *text, size_t len, struct json_object **ret_value, char *why, size_t why_size);

/* strict.c: the checks json-c does not make, over text (borrowed, len
 * bytes) that mcp_json_parse accepted (issue 13): no NaN or Infinity, every
 * integer within int64 and every real finite (so ids and arguments are held
 * exactly), no key with a NUL, no key twice in one object. Returns 0, or -1
 * with why (always terminated; the key or number clipped) saying which.
 * Linear in len; allocates one set of keys per open object. */
int mcp_json_strict_check(const char *text, size_t len, char *why, size_t why_size);
void mcp_format_size(size_t bytes, char *buf, size_t size);

/* dispatch.c */
struct json_object *mcp_dispatch_value(struct mcp_server *server, struct json_object *value, const char *session_id,
                                       char **ret_new_session);
struct json_object *mcp_dispatch_sink(struct mcp_server *server, struct json_object *value, const char *session_id,
                                      char **ret_new_session, struct mcp_sink *sink);
int mcp_cancel_request(struct mcp_server *server, const char *session_id, struct json_object *request_id);
/* Cancels every tools/call started with sink->owner == owner (its HTTP
 * connection's peer hung up: MCP 2026-07-28 basic/patterns/cancellation,
 * "Transport-specific cancellation"); returns how many. Thread-safe. */
int mcp_cancel_owner(struct mcp_server *server, uint64_t owner);
int mcp_message_is_initialize(struct json_object *value);
/* JSON-RPC batches (issue 13): the revisions from 2025-06-18 on removed them
 * (MCP 2025-06-18 changelog), and 2025-03-26 allows them; a batch is
 * refused unless version (the request's revision; NULL or "" = 2025-03-26,
 * as basic/transports says to assume) is 2025-03-26, and capped at
 * MCP_BATCH_MAX messages; one holding a 2026-07-28 request is refused
 * whatever the version. Returns NULL when value (borrowed) is no batch or
 * may be dispatched, else the -32600 reply (owned, id null). */
#define MCP_BATCH_MAX 32
struct json_object *mcp_batch_refusal(struct json_object *value, const char *version);
struct json_object *mcp_message_id(struct json_object *value);
struct json_object *mcp_empty_list_result(const char *key);
struct json_object *mcp_empty_completion_result(void);

/* modern.c: MCP 2026-07-28, the stateless revision. */
int mcp_modern_claimed(struct json_object *msg, const char *protocol_header);
int mcp_modern_header(const char *protocol_header);
struct json_object *mcp_modern_dispatch(struct mcp_server *server, struct json_object *id, const char *method,
                                        struct json_object *params, struct mcp_sink *sink,
                                        struct mcp_request_info *info);

/* route_headers.c: the 2026-07-28 routing headers against the body. */
int mcp_route_header_decode(const char *raw, char **ret_value, char *why, size_t why_size);
int mcp_route_header_check(const char *header, const char *raw, unsigned count, const char *want, int decode, char *why,
                           size_t why_size);

/* tool_schema.c: tools/list, generated from the table's declarations. */
int mcp_tools_list_build(const struct mcp_tool *tools, size_t n_tools, char **ret_json, struct cp_error **err);
char *mcp_tools_array_text(const char *list_json);
/* tools/list's response (id borrowed, the reply owned); its tools member
 * serializes as the prebuilt list and has no elements to read. */
struct json_object *mcp_tools_list(struct mcp_server *server, struct json_object *id);
/* tool_call.c: tools/call. */
struct json_object *mcp_tools_call(struct mcp_server *server, struct json_object *id, struct json_object *params,
                                   const char *session_id, struct mcp_sink *sink, struct mcp_request_info *info);

/* session.c */
struct mcp_session_table *mcp_session_table_new(size_t max_sessions, long idle_ms);
void mcp_session_table_free(struct mcp_session_table *table);
int mcp_session_create(struct mcp_session_table *table, const char *protocol_version, char **ret_id,
                       struct cp_error **err);
int mcp_session_touch(struct mcp_session_table *table, const char *id);
int mcp_session_end(struct mcp_session_table *table, const char *id);
int mcp_session_version(struct mcp_session_table *table, const char *id, char *buf, size_t size);
size_t mcp_session_count(struct mcp_session_table *table);

/* auth.c: the endpoint's authentication (issue 12). */
enum mcp_bearer_result {
	MCP_BEARER_OK,        /* "Bearer <the token>" */
	MCP_BEARER_MISSING,   /* no Authorization header */
	MCP_BEARER_MALFORMED, /* a header that is not "Bearer <token68>" */
	MCP_BEARER_WRONG,     /* a bearer token that is not the one */
};
/* Judges an Authorization header value (borrowed; NULL = absent) against
 * token (borrowed, non-empty). The comparison takes the same time for every
 * value of the same length as token, whatever matches (RFC 6750 section
 * 2.1 syntax; the scheme is case-insensitive). Pure. */
enum mcp_bearer_result mcp_bearer_check(const char *authorization, const char *token);
/* 1 when a Unix-socket peer with uid peer may use the endpoint of a server
 * running as self: the same uid, or root. Pure. */
int mcp_peer_uid_allowed(uid_t peer, uid_t self);
/* The connected Unix socket fd's peer uid (and pid, when ret_pid is not
 * NULL) as the kernel recorded them at connect (SO_PEERCRED, unix(7)).
 * Returns -1 when they cannot be read (not a Unix socket). */
int mcp_peer_credentials(int fd, uid_t *ret_uid, pid_t *ret_pid);
/* Binds and listens on a Unix stream socket at path (borrowed), mode 0600
 * from the start (umask during bind), non-blocking, close-on-exec; a stale
 * socket file there is replaced, anything else refused (CONFLICT). A path
 * longer than sun_path allows is INVALID_ARGUMENT naming its length;
 * other failures UNAVAILABLE with errno. *ret_fd is the listening socket
 * (caller closes). The caller must own the directory and hold whatever lock
 * makes it the only listener. */
int mcp_unix_listen(const char *path, int *ret_fd, struct cp_error **err);

/* loopback.c */
int mcp_host_allowed(const char *host_header, const char *bind_host);
int mcp_origin_allowed(const char *origin);
/* 1 when addr (a connection's peer, len bytes) is loopback: IPv4 127.0.0.0/8,
 * IPv6 ::1 or an IPv4-mapped 127.x address; 0 for anything else or NULL.
 * http.c refuses every other TCP peer (a sandbox reaching serve through its
 * bridge gateway, say) before the token is even looked at. Pure. */
struct sockaddr;
int mcp_peer_is_loopback(const struct sockaddr *addr, size_t len);

#endif
