/* harness.h: runs the helper's event loop in a forked child over pipes, so
 * tests can exchange JSON-RPC lines with it as the control plane would (no
 * Docker). The child runs under the same sanitizers as the tests. */
#ifndef CHAT2SBX_HELPER_TEST_HARNESS_H
#define CHAT2SBX_HELPER_TEST_HARNESS_H

#include <json-c/json.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../proto.h" /* PROTO_CHANNEL_SOCKET_NAME */

struct harness {
	pid_t pid;
	int req_fd, rep_fd;
	char dir[64];             /* temporary root, removed by harness_stop */
	char workspace[PATH_MAX]; /* dir/workspace */
	char logs[PATH_MAX];      /* dir/logs */
	char *buf;                /* partial reply line */
	size_t len, cap;
	json_object *stash; /* replies read while waiting for another id */
	bool exited;        /* the child was reaped; status holds its wait status */
	int status;
};

/* The loop's channel directory, in h->dir (made before the loop starts),
 * and its channel.connect socket (proto.h). */
#define HARNESS_CHANNEL_DIR "channel"
#define HARNESS_CHANNEL_SOCKET HARNESS_CHANNEL_DIR "/" PROTO_CHANNEL_SOCKET_NAME

/* Fork the loop with a fresh workspace and log directory. */
void harness_start(struct harness *h);
/* The same, with flags: HARNESS_NO_SYS_PTRACE runs the helper (and so its
 * sessions) without CAP_SYS_PTRACE, as in a container; a no-op when the
 * tests do not run as root. */
#define HARNESS_NO_SYS_PTRACE 1u
void harness_start_flags(struct harness *h, unsigned flags);
/* Send one request line (printf format; the newline is added). */
void harness_send(struct harness *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The reply with this id, waiting up to timeout_ms; NULL on timeout. The
 * caller puts the result. Other replies are kept for later calls. */
json_object *harness_wait(struct harness *h, int64_t id, int timeout_ms);
/* Send and wait for the reply's "result" (NULL when it is an error). */
json_object *harness_call(struct harness *h, int64_t id, int timeout_ms, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Acknowledge a bash snapshot as the control plane's channel does
 * (proto.h, "Delivery and acknowledgement"): sends bash.ack (delivered) or
 * bash.nack for its [output_start, output_end) when that is not empty;
 * nothing for other results. result is borrowed. */
void harness_ack(struct harness *h, json_object *result, bool delivered);
/* Close the request stream (end of input for the helper). */
void harness_close_input(struct harness *h);
/* Reap the child if it exits within timeout_ms; true when it has. */
bool harness_wait_exit(struct harness *h, int timeout_ms);
/* SIGTERM the loop (unless it already exited), wait for it, remove the temporary files; returns the
 * child's wait status. */
int harness_stop(struct harness *h);

/* Stop the loop with sig (SIGTERM: a clean stop, as the engine's; SIGKILL:
 * a crash) and start a new one on the same workspace and log directory, as
 * a restart of the container would. */
void harness_restart(struct harness *h, int sig);

/* Field getters on a reply object (borrowed); missing fields give
 * -1 / NULL / false. */
int64_t jint(json_object *o, const char *key);
const char *jstr(json_object *o, const char *key);
int jbool(json_object *o, const char *key);
int64_t now_ms(void);

#endif
