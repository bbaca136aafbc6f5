/* state_file.c: STATE_DIR/tunnel.json, the supervisor's state for
 * `chat2sbx status` (format agreed in the helpers' brief):
 * {"state":"starting|running|backoff|stopped|refused","pid":N|null,
 *  "restarts":N,"health_url":"http://127.0.0.1:P"|null,"last_exit":".."|null,
 *  "updated_at_ms":N}
 * Written whole to a temporary file (0600) and renamed over the old one, so a
 * reader never sees half a file. Holds nothing secret. */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/clock.h"
#include "base/json_file.h"
#include "base/log.h"
#include "base/xjson.h"
#include "tunnel/tunnel_internal.h"

const char *tunnel_state_name(enum tunnel_state state)
{
	switch (state) {
	case TUNNEL_STATE_STARTING: return "starting";
	case TUNNEL_STATE_RUNNING: return "running";
	case TUNNEL_STATE_BACKOFF: return "backoff";
	case TUNNEL_STATE_STOPPED: return "stopped";
	case TUNNEL_STATE_REFUSED: return "refused";
	}
	return "unknown";
}

static struct json_object *string_or_null(const char *s)
{
	return s && *s ? xjson_string(s) : NULL;
}

void tunnel_state_write(const struct config *cfg, const struct tunnel_status *st)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/tunnel.json", cfg->state_dir);

	_cleanup_json_ struct json_object *o = xjson_object();
	xjson_add(o, "state", xjson_string(tunnel_state_name(st->state)));
	xjson_add(o, "pid", st->pid > 0 ? xjson_int64(st->pid) : NULL);
	xjson_add(o, "restarts", xjson_int64(st->restarts));
	xjson_add(o, "health_url", string_or_null(st->health_url));
	xjson_add(o, "last_exit", string_or_null(st->last_exit));
	xjson_add(o, "updated_at_ms", xjson_int64(st->updated_at_ms));
	_cleanup_error_ struct cp_error *e = NULL;
	if (json_file_write_atomic(path, o, &e) < 0)
		cp_error_log_free(LOG_LEVEL_WARN, "tunnel", &e, NULL);
}

void tunnel_state_write_refused(const struct config *cfg, const char *reason)
{
	struct tunnel_status st = {.state = TUNNEL_STATE_REFUSED, .updated_at_ms = clock_now_ms()};
	snprintf(st.last_exit, sizeof(st.last_exit), "%s", reason ? reason : "");
	tunnel_state_write(cfg, &st);
}
