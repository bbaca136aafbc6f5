/* exec.c: running a short command in a container and reading what it said
 * (Docker Engine API v1.41, "Exec": create, start without detaching, then
 * inspect for the exit code). Used for the vm runtime's container-side
 * commands (guard/vm.c), which must be made in the container's
 * namespaces, not in the guest the helper runs in. The start answer is
 * the multiplexed stream (8-byte headers, demux.c) as the HTTP body; it is
 * bounded like every engine answer. */
#include "engine_internal.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/buf.h"
#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/xalloc.h"
#include "../base/xjson.h"

#define DOCKER_EXEC_CREATE_TIMEOUT_MS 10000L
#define DOCKER_EXEC_MAX_OUTPUT (64u * 1024)

void docker_exec_result_clear(struct docker_exec_result *r)
{
	if (!r)
		return;
	free(r->out);
	free(r->err);
	*r = (struct docker_exec_result){0};
}

struct exec_streams {
	struct cp_buf out, err;
	int truncated;
};

static void on_frame(void *userdata, enum docker_stream stream, const char *data, size_t len)
{
	struct exec_streams *s = userdata;
	struct cp_buf *b = stream == DOCKER_STREAM_STDERR ? &s->err : &s->out;
	if (cp_buf_append(b, data, len) < 0)
		s->truncated = 1; /* past the bound: what came before is kept, and the cut is reported */
}

static char *buf_text(struct cp_buf *b)
{
	char *t = xmalloc(b->len + 1);
	if (b->len)
		memcpy(t, b->data, b->len);
	t[b->len] = '\0';
	return t;
}

/* POST /containers/{id}/exec for argv as user, attaching stdout and stderr
 * and, when with_stdin, stdin; no terminal. The exec's id, URL-escaped,
 * into *ret_id (caller frees). */
static int exec_create(struct docker_engine *engine, const char *id, const char *const *argv, const char *user,
                       int with_stdin, const char *what, char **ret_id, struct cp_error **err)
{
	_cleanup_json_ struct json_object *body = xjson_object();
	struct json_object *cmd = xjson_array();
	for (size_t i = 0; argv[i]; i++)
		xjson_append(cmd, xjson_string(argv[i]));
	xjson_add(body, "Cmd", cmd);
	xjson_add(body, "AttachStdin", xjson_bool(with_stdin));
	xjson_add(body, "AttachStdout", xjson_bool(1));
	xjson_add(body, "AttachStderr", xjson_bool(1));
	xjson_add(body, "Tty", xjson_bool(0));
	xjson_add(body, "User", xjson_string(user));
	_cleanup_free_ char *esc = docker_escape(id, NULL);
	_cleanup_free_ char *path = NULL;
	path = xasprintf("/containers/%s/exec", esc);
	_cleanup_json_ struct json_object *created = NULL;
	if (docker_request(engine, "POST", path, body, DOCKER_EXEC_CREATE_TIMEOUT_MS, what, NULL, &created, err) < 0)
		return -1;
	struct json_object *v = NULL;
	if (!created || !json_object_object_get_ex(created, "Id", &v) || !json_object_is_type(v, json_type_string))
		return cp_error_set(err, CP_ERR_INTERNAL, "%s: the engine's answer has no exec Id", what);
	*ret_id = docker_escape(json_object_get_string(v), NULL);
	return 0;
}

int docker_container_exec(struct docker_engine *engine, const char *id, const char *const *argv, long timeout_ms,
                          struct docker_exec_result *ret, struct cp_error **err)
{
	_cleanup_free_ char *what = NULL;
	what = xasprintf("run '%s' in container '%s'", argv && argv[0] ? argv[0] : "", id ? id : "");
	if (!id || !*id || !argv || !argv[0] || timeout_ms <= 0)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "%s: a container, a command and a timeout are needed",
		                    what);
	_cleanup_free_ char *exec_id = NULL;
	if (exec_create(engine, id, argv, "0:0", 0, what, &exec_id, err) < 0)
		return -1;
	struct json_object *v = NULL;
	_cleanup_free_ char *start = NULL, *inspect = NULL;
	start = xasprintf("/exec/%s/start", exec_id);
	inspect = xasprintf("/exec/%s/json", exec_id);

	_cleanup_json_ struct json_object *start_body = xjson_object();
	xjson_add(start_body, "Detach", xjson_bool(0));
	xjson_add(start_body, "Tty", xjson_bool(0));
	/* The engine answers with the raw stream and closes it when the
	 * command ends; the transport hands a non-JSON body back as a string
	 * with its length (NUL bytes of the headers included). */
	_cleanup_json_ struct json_object *stream = NULL;
	if (docker_request(engine, "POST", start, start_body, timeout_ms, what, NULL, &stream, err) < 0)
		return -1;
	struct exec_streams s = {.truncated = 0};
	cp_buf_init(&s.out, DOCKER_EXEC_MAX_OUTPUT);
	cp_buf_init(&s.err, DOCKER_EXEC_MAX_OUTPUT);
	if (stream && json_object_is_type(stream, json_type_string)) {
		struct docker_demux d;
		docker_demux_init(&d, on_frame, &s);
		if (docker_demux_feed(&d, json_object_get_string(stream), (size_t)json_object_get_string_len(stream)) <
		    0) {
			cp_buf_free(&s.out);
			cp_buf_free(&s.err);
			return cp_error_set(err, CP_ERR_INTERNAL, "%s: the engine's output stream is malformed", what);
		}
	}
	_cleanup_json_ struct json_object *state = NULL;
	int r = docker_request(engine, "GET", inspect, NULL, DOCKER_EXEC_CREATE_TIMEOUT_MS, what, NULL, &state, err);
	struct docker_exec_result res = {.exit_code = -1, .truncated = s.truncated};
	if (r == 0 && state && json_object_object_get_ex(state, "Running", &v) && json_object_get_boolean(v))
		r = cp_error_set(err, CP_ERR_TIMEOUT, "%s: the command still runs after its output ended", what);
	if (r == 0 && state && json_object_object_get_ex(state, "ExitCode", &v) &&
	    json_object_is_type(v, json_type_int))
		res.exit_code = json_object_get_int(v);
	if (r == 0) {
		res.out = buf_text(&s.out);
		res.err = buf_text(&s.err);
	}
	cp_buf_free(&s.out);
	cp_buf_free(&s.err);
	if (r == 0)
		*ret = res;
	return r;
}

int docker_container_exec_stream(struct docker_engine *engine, const char *id, const char *const *argv,
                                 const char *user, long timeout_ms, int *ret_fd, struct cp_error **err)
{
	_cleanup_free_ char *what = NULL;
	what = xasprintf("stream '%s' in container '%s'", argv && argv[0] ? argv[0] : "", id ? id : "");
	if (!id || !*id || !argv || !argv[0] || !user || !*user || timeout_ms <= 0)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "%s: a container, a command, a user and a timeout are needed", what);
	int64_t deadline = clock_monotonic_ms() + timeout_ms;
	_cleanup_free_ char *exec_id = NULL;
	if (exec_create(engine, id, argv, user, 1, what, &exec_id, err) < 0)
		return -1;
	static const char body[] = "{\"Detach\":false,\"Tty\":false}";
	_cleanup_free_ char *request =
	    xasprintf("POST /v%s/exec/%s/start HTTP/1.1\r\nHost: docker\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n"
	              "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
	              engine->api_version, exec_id, sizeof(body) - 1, body);
	return docker_hijack(engine, request, deadline, what, ret_fd, err);
}
