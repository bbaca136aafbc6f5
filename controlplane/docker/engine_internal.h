/* engine_internal.h: private to docker/ (never included from another layer).
 * The engine handle's layout and the helpers the transport, the container and
 * image calls and the attach hijack share: status mapping, error messages and
 * URL escaping, so every engine error reads the same way. */
#ifndef CP_DOCKER_ENGINE_INTERNAL_H
#define CP_DOCKER_ENGINE_INTERNAL_H

#include "docker.h"

/* The bridge driver's option that names a network's bridge interface
 * (Docker Engine, "Bridge network driver options"). */
#define DOCKER_BRIDGE_NAME_OPTION "com.docker.network.bridge.name"

/* The host interface of a bridge network's inspect or list entry (borrowed):
 * its DOCKER_BRIDGE_NAME_OPTION, or libnetwork's own "br-<first 12 of the
 * id>" when it has none, into buf. Returns 1 (named by the option), 0 (the
 * engine's name) or -1 (no Id to derive it from). */
int docker_network_bridge_of(struct json_object *network, char *buf, size_t size);

/* "<base>filters=<escaped {key:[value]}>" (the engine's list filters,
 * Docker Engine API "List networks", "List containers"); base ends in '?'
 * or '&'. Caller frees; never NULL. */
char *docker_filtered_path(const char *base, const char *key, const char *value);

/* Largest engine response body accepted (bytes): an exec's raw output
 * stream; every other answer has a smaller bound (docker_response_max). */
#define DOCKER_MAX_RESPONSE (16u * 1024 * 1024)

/* The largest body (bytes) accepted in answer to method and path (below
 * the version prefix, query included): /_ping 1 KiB; /version and one
 * volume's inspect 64 KiB; /info and one object's inspect (container,
 * image, network, exec) 1 MiB;
 * the lists (/containers/json, /networks?) 4 MiB; an exec's start
 * DOCKER_MAX_RESPONSE (the command's output, demultiplexed and bounded
 * again by exec.c); anything else (creates, removals, errors) 256 KiB.
 * Another machine's engine writes these bodies, and json-c takes about 40
 * times a body's size to hold it, so each call reads no more than its
 * answer can need. Pure. */
size_t docker_response_max(const char *method, const char *path);

/* Whether s is 1 to max printable ASCII characters (0x20-0x7e): text from
 * an engine kept or shown as it is (a version). Pure. */
int docker_text_printable(const char *s, size_t max);

/* What the user is told when the socket does not answer. */
#define DOCKER_START_HINT "start it with 'sudo systemctl start docker' or 'dockerd &'"

/* One PEM file's bytes, owned (never logged or put in a message). */
struct docker_pem {
	char *data;
	size_t len;
};

/* Reads the three files of tls into e's tls_ca, tls_cert and tls_key, each
 * opened once without following a symbolic link and taken only when it is
 * a regular file of this user that no other user can read or write (mode
 * & 077 == 0; node add's copies are 0600) of 1 to DOCKER_TLS_FILE_MAX
 * bytes. So a file swapped or loosened later is refused at the next open,
 * never read by path at each call. UNAVAILABLE naming the option and the
 * file's path, never its bytes. */
int docker_tls_load(struct docker_engine *e, const struct docker_tls_files *tls, struct cp_error **err);
/* Wipes and frees the three (accepts an engine without them). */
void docker_tls_clear(struct docker_engine *e);
#define DOCKER_TLS_FILE_MAX (64 * 1024)

/* One engine: this machine's on its Unix socket, or another machine's at
 * tcp://HOST:PORT with mutual TLS (issue 28; tls.c). */
struct docker_engine {
	char *socket_path;          /* owned; NULL for a remote engine */
	char *endpoint;             /* owned; "tcp://HOST:PORT" of a remote engine, else NULL */
	char *base_url;             /* owned: "http://localhost", or "https://HOST:PORT" */
	struct docker_pem tls_ca;   /* a remote engine's PEM files, read once when it opens */
	struct docker_pem tls_cert; /* (docker_tls_load); the key's bytes are wiped when */
	struct docker_pem tls_key;  /* the engine is freed */
	char *api_version;          /* owned, negotiated "1.41" */
	char *engine_version;       /* owned, "20.10.24+dfsg1" */
};

/* Sets the libcurl options of an exchange with a remote engine (curl is a
 * CURL *; e borrowed; libcurl copies the PEM bytes, CURL_BLOB_COPY): https
 * only, e's CA as the only trust anchor, e's client certificate and key,
 * peer and host verified, TLS 1.2 or newer, no proxy. Pure apart from the
 * handle. */
void docker_tls_setopt(void *curl, const struct docker_engine *e);

/* Fills *err from a failed libcurl exchange with the remote engine at
 * endpoint (borrowed): curl_code a CURLcode, detail curl's words (never a
 * file's bytes; not copied into the certificate-file messages), os_errno
 * the connect's errno. Unreachable → UNAVAILABLE with detail
 * ENGINE_UNREACHABLE and errnum; a certificate the CA did not sign, or the
 * engine refusing ours (a TLS alert) → DENIED; unreadable certificate or
 * key files → INVALID_ARGUMENT; a time-out → TIMEOUT; else UNAVAILABLE or
 * INTERNAL. Every message names the endpoint and what to check. what may
 * be NULL. Returns -1. */
int docker_remote_error(struct cp_error **err, const char *endpoint, const char *what, int curl_code,
                        const char *detail, long os_errno, long timeout_ms);

/* Opens the stream the hijacked attach runs on to the remote engine e
 * (attach_tls.c): a TLS connection made and verified within deadline
 * (clock_monotonic_ms), relayed by a thread of its own to the other end of
 * a socketpair, whose one end *ret_fd (caller closes; O_CLOEXEC,
 * non-blocking) is returned, so the attach and the helper channel read and
 * write it as they do the engine's Unix socket. The relay ends, closing
 * the TLS connection, once the caller closes *ret_fd or the engine closes
 * its side (the caller then reads end-of-file). Errors as
 * docker_remote_error's. */
int docker_tls_stream_open(const struct docker_engine *e, int64_t deadline, const char *what, int *ret_fd,
                           struct cp_error **err);

/* The hijack the attach stream and an exec's stream share (Docker Engine
 * API v1.41, "Hijacking"): connects to engine (its socket, or its TLS relay,
 * docker_tls_stream_open), sends request (borrowed: a whole HTTP/1.1
 * request asking "Connection: Upgrade" and "Upgrade: tcp"), reads the
 * answer's head without over-reading and, on 101 or 200, hands over the
 * blocking, O_CLOEXEC descriptor in *ret_fd (caller closes). what names the
 * call in errors. Errors: the engine's status mapped (docker_error_status)
 * with its message; UNAVAILABLE when unreachable or the answer is not
 * HTTP; TIMEOUT at deadline (clock_monotonic_ms). */
int docker_hijack(struct docker_engine *engine, const char *request, int64_t deadline, const char *what, int *ret_fd,
                  struct cp_error **err);

/* Engine HTTP status → error code (docker.h: 400 INVALID_ARGUMENT, 404
 * NOT_FOUND, 409 CONFLICT, 5xx UNAVAILABLE; 403, which an authorization
 * plugin answers, DENIED; anything else INTERNAL). */
enum cp_error_code docker_status_code(long status);

/* The cause an engine error message names (base/error.h), so callers above
 * docker/ test a detail instead of the engine's wording: "port is already
 * allocated" / "address already in use" → PORT_IN_USE, "already attached" →
 * ALREADY_ATTACHED, "already exists" / "is already in use by" (a name taken)
 * → ALREADY_EXISTS, "no space left on device" → NO_SPACE, else NONE. Matched
 * without regard to case (the engine's wording and the kernel's strerror
 * differ in capitals). message may be NULL. Pure. */
enum cp_error_detail docker_engine_detail(const char *message);

/* Fills *err with "<what>: <engine_message>" (or "<what>: the engine answered
 * HTTP <status>" when engine_message is NULL or empty), code from
 * docker_status_code and detail from docker_engine_detail. Returns -1. */
int docker_error_status(struct cp_error **err, long status, const char *engine_message, const char *what);

/* Fills *err with UNAVAILABLE "[<what>: ]cannot reach the Docker Engine at
 * '<socket>': <docker_engine_unreachable_cause(errnum)>; start it with ...",
 * detail ENGINE_UNREACHABLE and errnum (the connect's errno, ENOENT when no
 * socket exists). what may be NULL. Returns -1. */
int docker_error_unreachable(struct cp_error **err, const char *socket_path, const char *what, int errnum);

/* GET path (below the version prefix) whose answer must be a JSON array,
 * as the engine's list calls answer: *ret_list (caller puts) on success;
 * INTERNAL "<what>: the engine's answer is not a list" otherwise, and
 * docker_request's errors. Blocks at most timeout_ms. */
int docker_request_list(struct docker_engine *engine, const char *path, long timeout_ms, const char *what,
                        struct json_object **ret_list, struct cp_error **err);

/* Percent-encodes s for a URL path segment or query value: unreserved
 * characters (RFC 3986, section 2.3) and those in keep pass through. Returns a
 * new string (caller frees), never NULL. */
char *docker_escape(const char *s, const char *keep);

/* The engine's own "message" from an error body (a JSON object with a
 * "message" string, or plain text), copied into buf (size bytes, truncated).
 * Returns buf, or NULL when the body says nothing. */
const char *docker_engine_message(const char *body, size_t len, char *buf, size_t size);

#endif
