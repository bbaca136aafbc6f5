/* fake_engine.h: a fake Docker Engine for unit tests: a thread serving a
 * Unix socket in a temporary directory. Sequence mode (fake_start) answers
 * each connection with the next canned reply and records the requests (the
 * docker/ client's tests); route mode (fake_start_routes) answers by method
 * and path until stopped and records every request line (lifecycle tests
 * that walk a whole operation). Replies are fixture files in
 * tests/data/docker/ (status line + headers, blank line, body). One fake per
 * test process: Criterion runs each test in its own. */
#ifndef CP_TEST_FAKE_ENGINE_H
#define CP_TEST_FAKE_ENGINE_H

#include <pthread.h>
#include <stddef.h>

struct json_object;
struct docker_engine;

/* A scripted helper on an attach stream (route mode, a 101 reply): called
 * for every request line the client writes to the container's stdin
 * (notifications, without an id, are only logged). Returns 1 with
 * *ret_member (malloc'd) the reply's member text, e.g. "\"result\":{}" or
 * "\"error\":{...}", which the fake frames as stdout; 0 to stay silent;
 * -1 to end the stream (a helper that died). params is borrowed. */
typedef int (*fake_helper_fn)(const char *method, struct json_object *params, char **ret_member);

struct fake_reply {
	const char *fixture; /* file in tests/data/docker/ */
	const char *extra;   /* raw bytes sent in the same write, right after the reply */
	size_t extra_len;
	int echo;              /* then echo every byte received back as stdout frames, until EOF */
	long delay_ms;         /* wait this long before answering (both modes; route mode serves
	                        * one connection at a time, so the others wait too) */
	size_t big_body;       /* instead of a fixture: 200 with a body of this many bytes */
	fake_helper_fn helper; /* route mode, after a 101: a scripted helper serves the stream */
	unsigned times;        /* route mode: its route answers this many requests, then the
	                        * routes after it do (0: every one) */
};

struct fake_request {
	char line[1024]; /* "POST /v1.41/containers/create?name=x HTTP/1.1" */
	char head[4096]; /* all header lines */
	char *body;      /* NUL-terminated, may be empty */
};

struct fake_engine {
	char dir[64];
	char sock[128];
	int lfd;
	pthread_t thread;
	const struct fake_reply *replies;
	size_t n_replies;
	struct fake_request req[16];
	size_t n_req;
	/* Route mode (fake_start_routes): */
	const struct fake_route *routes;
	size_t n_routes;
	volatile int stopping;
	unsigned route_uses[32]; /* requests each route answered (times) */
	char lines[512][256];    /* every request line seen; helper requests as "HELPER <method>" */
	size_t n_lines;
	pthread_mutex_t lock;
	pthread_t helpers[16]; /* scripted helper threads, joined by fake_stop_routes */
	int helper_fds[16];
	size_t n_helpers;
};

/* Route mode: the first route whose method matches and whose path_part
 * occurs in the request line answers (a 101 reply: the stream is closed
 * right after, as a helper that died, unless the reply has a helper). No
 * route: 404 with a JSON message;
 * GET .../json list endpoints with no route: 200 []. */
struct fake_route {
	const char *method;    /* "GET", "POST", "DELETE" */
	const char *path_part; /* e.g. "/containers/sbx_a/json" */
	struct fake_reply reply;
};

extern struct fake_engine fake;

/* Reads tests/data/docker/<name> (caller frees); fails the test when missing. */
char *fake_read_fixture(const char *name, size_t *ret_len);
/* Sequence mode: serves the n replies in order, one per connection. */
struct fake_engine *fake_start(const struct fake_reply *replies, size_t n);
/* Joins the server thread (all replies served), then removes the socket. */
void fake_stop(struct fake_engine *fe);
void fake_free_requests(void);
/* Route mode: serves until fake_stop_routes. */
struct fake_engine *fake_start_routes(const struct fake_route *routes, size_t n);
/* Idempotent: a test may stop the engine before the teardown does. */
void fake_stop_routes(struct fake_engine *fe);
/* How many recorded request lines start with method and contain part
 * (method "HELPER": the requests the scripted helper received). */
size_t fake_count(const char *method, const char *part);
/* An engine handle on fe's socket (asserts it opens: GET /version is the
 * first request it makes). */
struct docker_engine *fake_engine_open(struct fake_engine *fe);
/* A member of a request body the test parsed (borrowed; asserts present). */
struct json_object *fake_json_member(struct json_object *o, const char *key);
/* Asserts member key is a boolean equal to want. */
void fake_json_bool(struct json_object *o, const char *key, int want);

/* Ends every scripted helper's stream now (the container stopped), as the
 * engine does when a container dies. */
void fake_helpers_close(void);

#endif
