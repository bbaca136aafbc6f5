/* state_files.c: STATE_DIR/serve.json (written here for serve) and
 * STATE_DIR/tunnel.json (written by the tunnel supervisor, read here for
 * `status`). Writes are atomic (temporary file + rename, 0600) so a reader
 * never sees half a file. Never holds secrets. */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/json_file.h"
#include "../base/log.h"
#include "../base/xalloc.h"
#include "../base/xjson.h"
#include "ops.h"

void ops_serve_state_clear(struct ops_serve_state *s)
{
	if (!s)
		return;
	free(s->version);
	free(s->endpoint);
	free(s->socket);
	free(s->token_file);
	*s = (struct ops_serve_state){0};
}

void ops_tunnel_state_clear(struct ops_tunnel_state *s)
{
	if (!s)
		return;
	free(s->state);
	free(s->health_url);
	free(s->last_exit);
	*s = (struct ops_tunnel_state){0};
}

int ops_pid_alive(int pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

int ops_serve_state_write(const char *state_dir, const struct ops_serve_state *st, struct cp_error **err)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/" OPS_SERVE_STATE_FILE, state_dir);
	_cleanup_json_ struct json_object *o = xjson_object();
	xjson_add(o, "pid", xjson_int64(getpid()));
	xjson_add(o, "started_at_ms", xjson_int64(st->started_at_ms > 0 ? st->started_at_ms : clock_now_ms()));
	xjson_add(o, "version", xjson_string(CHAT2SBX_VERSION));
	xjson_add(o, "endpoint", xjson_string(st->endpoint));
	if (st->socket)
		xjson_add(o, "socket", xjson_string(st->socket));
	if (st->token_file)
		xjson_add(o, "token_file", xjson_string(st->token_file));
	xjson_add(o, "token_required", xjson_bool(st->token_required));
	xjson_add(o, "tunnel_enabled", xjson_bool(st->tunnel_enabled));
	return json_file_write_atomic(path, o, err);
}

/* Loads a JSON object file. NOT_FOUND when absent. */
static int load_object(const char *path, struct json_object **ret, struct cp_error **err)
{
	if (access(path, F_OK) < 0)
		return cp_error_set(err, CP_ERR_NOT_FOUND, "'%s' does not exist", path);
	struct json_object *o = json_object_from_file(path);
	if (!o || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "'%s' is not a JSON object; remove it", path);
	}
	*ret = o;
	return 0;
}

static char *dup_string(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;
	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return xstrdup(json_object_get_string(v));
}

static int64_t get_int(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;
	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
		return 0;
	return json_object_get_int64(v);
}

int ops_serve_state_read(const char *state_dir, struct ops_serve_state *ret, struct cp_error **err)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/" OPS_SERVE_STATE_FILE, state_dir);
	_cleanup_json_ struct json_object *o = NULL;
	if (load_object(path, &o, err) < 0)
		return -1;
	struct ops_serve_state s = {.pid = (int)get_int(o, "pid"), .started_at_ms = get_int(o, "started_at_ms")};
	struct json_object *v = NULL;
	s.tunnel_enabled = json_object_object_get_ex(o, "tunnel_enabled", &v) && json_object_get_boolean(v);
	s.token_required = json_object_object_get_ex(o, "token_required", &v) && json_object_get_boolean(v);
	s.version = dup_string(o, "version");
	s.endpoint = dup_string(o, "endpoint");
	s.socket = dup_string(o, "socket");
	s.token_file = dup_string(o, "token_file");
	if (s.pid <= 0 || !s.endpoint) {
		ops_serve_state_clear(&s);
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "'%s' has no pid or endpoint; remove it", path);
	}
	*ret = s;
	return 0;
}

void ops_serve_state_keep(const char *state_dir, const struct ops_serve_state *st, int *written)
{
	struct ops_serve_state now = {0};
	_cleanup_error_ struct cp_error *e = NULL;
	int ours = ops_serve_state_read(state_dir, &now, &e) == 0 && now.pid == (int)getpid();
	ops_serve_state_clear(&now);
	if (ours) {
		*written = 1;
		return;
	}
	cp_error_freep(&e);
	if (ops_serve_state_write(state_dir, st, &e) == 0) {
		if (*written >= 0)
			log_info("serve", "%s/" OPS_SERVE_STATE_FILE " written %s; 'chat2sbx status' finds this serve",
			         state_dir, *written ? "again (it was removed or replaced)" : "now that it can be");
		*written = 1;
	} else {
		if (*written != 0)
			log_warn("serve",
			         "%s; 'chat2sbx status' will not find this serve until it can be written (tried every "
			         "few seconds)",
			         e->message);
		*written = 0;
	}
}

void ops_serve_state_remove(const char *state_dir)
{
	struct ops_serve_state s = {0};
	struct cp_error *e = NULL;
	if (ops_serve_state_read(state_dir, &s, &e) == 0 && s.pid == (int)getpid()) {
		char path[4200];
		snprintf(path, sizeof(path), "%s/" OPS_SERVE_STATE_FILE, state_dir);
		unlink(path);
	}
	cp_error_free(e);
	ops_serve_state_clear(&s);
}

int ops_tunnel_state_read(const char *state_dir, struct ops_tunnel_state *ret, struct cp_error **err)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/" OPS_TUNNEL_STATE_FILE, state_dir);
	_cleanup_json_ struct json_object *o = NULL;
	if (load_object(path, &o, err) < 0)
		return -1;
	struct ops_tunnel_state s = {
	    .pid = (int)get_int(o, "pid"),
	    .restarts = get_int(o, "restarts"),
	    .updated_at_ms = get_int(o, "updated_at_ms"),
	    .state = dup_string(o, "state"),
	    .health_url = dup_string(o, "health_url"),
	    .last_exit = dup_string(o, "last_exit"),
	};
	if (!s.state) {
		ops_tunnel_state_clear(&s);
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "'%s' has no state; remove it", path);
	}
	*ret = s;
	return 0;
}
