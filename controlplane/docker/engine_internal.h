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

/* Largest engine response body accepted (bytes). */
#define DOCKER_MAX_RESPONSE (16u * 1024 * 1024)

/* What the user is told when the socket does not answer. */
#define DOCKER_START_HINT "start it with 'sudo systemctl start docker' or 'dockerd &'"

struct docker_engine {
	char *socket_path;    /* owned */
	char *api_version;    /* owned, negotiated "1.41" */
	char *engine_version; /* owned, "20.10.24+dfsg1" */
};

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
