/* sandbox_view.c: gathering what the detail page shows of one sandbox
 * (ui_internal.h, ui_sandbox_view_gather): the registry's row and
 * workspace, lifecycle's answers (idle expiry, paused for disk, unsaved
 * work), its exposures, and its bash sessions with the tail of their
 * output read from the session logs through the helper's blob calls, so
 * the model's own unread output (bash_poll) stays unread. Every call is
 * bounded; every byte from the sandbox is cleaned here and escaped by
 * ui_put. */
#include <errno.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../base/base64.h"
#include "../base/cleanup.h"
#include "../base/text.h"
#include "../base/xalloc.h"
#include "../base/xjson.h"
#include "../helper/helper.h"
#include "../lifecycle/lifecycle.h"
#include "../policy/policy.h"
#include "ui_internal.h"

void ui_sandbox_view_clear(struct ui_sandbox_view *v)
{
	sandbox_record_clear(&v->s);
	free(v->ws_mode);
	free(v->ws_host_path);
	free(v->node_endpoint);
	for (size_t i = 0; i < v->n_sessions; i++) {
		struct ui_bash_session *b = &v->sessions[i];
		free(b->id);
		free(b->command);
		free(b->status);
		free(b->reason);
		free(b->output);
		free(b->output_error);
	}
	free(v->sessions);
	free(v->sessions_note);
	free(v->previews);
	free(v->previews_error);
	*v = (struct ui_sandbox_view){0};
}

/* Appends the UTF-8 encoding of U+FFFD, the replacement character. */
static size_t put_replacement(char *out)
{
	memcpy(out, "\xEF\xBF\xBD", 3);
	return 3;
}

char *ui_output_clean(const unsigned char *p, size_t n, int cut_start)
{
	char *out = xmalloc(3 * n + 1); /* each byte becomes at most U+FFFD */
	size_t o = 0, i = 0;
	if (cut_start) {
		/* The first line is cut: it starts after the first newline, or,
		 * without one, at the first whole character. */
		const unsigned char *nl = memchr(p, '\n', n);
		if (nl)
			i = (size_t)(nl - p) + 1;
		else
			while (i < n && i < 3 && (p[i] & 0xC0) == 0x80)
				i++;
	}
	while (i < n) {
		unsigned char c = p[i];
		if (c == 0x1B && i + 1 < n && p[i + 1] == '[') {
			/* A CSI sequence (ECMA-48 5.4): parameters and intermediates,
			 * then one final byte 0x40-0x7E; all of it dropped. */
			size_t j = i + 2;
			while (j < n && p[j] >= 0x20 && p[j] <= 0x3F)
				j++;
			i = j < n && p[j] >= 0x40 && p[j] <= 0x7E ? j + 1 : j;
			continue;
		}
		if (c == '\n' || c == '\t') {
			out[o++] = (char)c;
			i++;
			continue;
		}
		if (c == '\r') {
			i++;
			continue;
		}
		if (c < 0x20 || c == 0x7F) {
			o += put_replacement(out + o);
			i++;
			continue;
		}
		uint32_t cp = 0;
		size_t len = text_utf8_decode(p + i, n - i, &cp);
		if (len == 0 || text_invisible(cp)) {
			o += put_replacement(out + o);
			i += len ? len : 1;
			continue;
		}
		memcpy(out + o, p + i, len);
		o += len;
		i += len;
	}
	out[o] = '\0';
	return out;
}

static const char *str_of(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;
	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
	           ? json_object_get_string(v)
	           : NULL;
}

static int64_t int_of(struct json_object *o, const char *key, int *present)
{
	struct json_object *v = NULL;
	int ok = json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_int);
	if (present)
		*present = ok;
	return ok ? json_object_get_int64(v) : 0;
}

/* A string from the helper, clipped to max bytes of clean text. */
static char *clip(const char *s, size_t max)
{
	if (!s)
		return NULL;
	char *buf = xmalloc(max + 8);
	return text_clip(s, max, buf, max + 8);
}

/* Reads the last UI_OUTPUT_TAIL bytes of the log at path into b->output,
 * or says why not in b->output_error. */
static void read_tail(struct helper_channel *ch, const char *path, struct ui_bash_session *b)
{
	struct cp_error *err = NULL;
	_cleanup_json_ struct json_object *op = xjson_object(), *ores = NULL;
	xjson_add(op, "path", xjson_string(path));
	if (helper_channel_call(ch, "blob.open", op, UI_HELPER_CALL_MS, &ores, &err) < 0) {
		b->output_error = xasprintf("its output could not be read: %s", err->message);
		cp_error_free(err);
		return;
	}
	const char *h = str_of(ores, "handle");
	int64_t size = int_of(ores, "size", NULL);
	if (!h) {
		b->output_error = xstrdup("its output could not be read: the helper gave no handle");
		return;
	}
	_cleanup_free_ char *handle = xstrdup(h);
	int64_t offset = size > UI_OUTPUT_TAIL ? size - UI_OUTPUT_TAIL : 0;
	_cleanup_json_ struct json_object *rp = xjson_object(), *rr = NULL;
	xjson_add(rp, "handle", xjson_string(handle));
	xjson_add(rp, "offset", xjson_int64(offset));
	xjson_add(rp, "length", xjson_int64(UI_OUTPUT_TAIL));
	if (helper_channel_call(ch, "blob.read", rp, UI_HELPER_CALL_MS, &rr, &err) < 0) {
		b->output_error = xasprintf("its output could not be read: %s", err->message);
		cp_error_free(err);
		err = NULL;
	} else {
		const char *data = str_of(rr, "data");
		size_t dlen = data ? strlen(data) : 0;
		unsigned char raw[UI_OUTPUT_TAIL + 4];
		int ok = 0;
		/* At most UI_OUTPUT_TAIL bytes were asked: a longer answer is refused. */
		size_t got = data && dlen <= 4 * ((UI_OUTPUT_TAIL + 2) / 3) ? base64_decode(data, dlen, raw, &ok) : 0;
		if (!ok || got > UI_OUTPUT_TAIL)
			b->output_error = xstrdup("its output could not be read: the helper sent a malformed chunk");
		else
			b->output = ui_output_clean(raw, got, offset > 0);
	}
	_cleanup_json_ struct json_object *cp = xjson_object(), *cres = NULL;
	xjson_add(cp, "handle", xjson_string(handle));
	if (helper_channel_call(ch, "blob.close", cp, UI_HELPER_CALL_MS, &cres, &err) < 0)
		cp_error_free(err);
}

/* A helper keeps at most BLOB_MAX_OPEN (4) files open for blob.read, and a
 * clone's save (export_save.c) needs one of them: the page's looks take
 * one at a time, all tabs together, so they never crowd a save out. */
static pthread_mutex_t blob_turn = PTHREAD_MUTEX_INITIALIZER;

/* read_tail in the page's turn, waiting for it UI_HELPER_CALL_MS at most. */
static void read_tail_in_turn(struct helper_channel *ch, const char *path, struct ui_bash_session *b)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += UI_HELPER_CALL_MS / 1000;
	until.tv_nsec += (long)(UI_HELPER_CALL_MS % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	int rc = pthread_mutex_timedlock(&blob_turn, &until);
	if (rc != 0) {
		b->output_error = xstrdup(rc == ETIMEDOUT ? "its output is shown at the next refresh (other looks are "
		                                            "reading theirs)"
		                                          : "its output could not be read now");
		return;
	}
	read_tail(ch, path, b);
	pthread_mutex_unlock(&blob_turn);
}

/* The sessions of a running sandbox through its open channel. */
static void gather_sessions(struct lifecycle *lc, struct ui_sandbox_view *v)
{
	struct helper_channel *ch = lifecycle_sandbox_channel_peek(lc, v->s.id);
	if (!ch) {
		v->sessions_note = xstrdup(v->paused ? "Its sessions cannot be looked at while it is paused for disk."
		                                     : "Its helper is not connected right now; serve reconnects it "
		                                       "within a minute, and its sessions show up here then.");
		return;
	}
	struct cp_error *err = NULL;
	struct json_object *res = NULL, *list = NULL;
	if (helper_channel_call(ch, "bash.list", NULL, UI_HELPER_CALL_MS, &res, &err) < 0) {
		v->sessions_note = xasprintf("Its sessions could not be listed: %s", err->message);
		cp_error_free(err);
		helper_channel_unref(ch);
		return;
	}
	if (!json_object_object_get_ex(res, "sessions", &list) || !json_object_is_type(list, json_type_array)) {
		v->sessions_note = xstrdup("Its helper answered without a list of sessions.");
		json_object_put(res);
		helper_channel_unref(ch);
		return;
	}
	size_t n = json_object_array_length(list);
	v->sessions_listed = n;
	size_t shown = n < UI_SESSIONS_SHOWN ? n : UI_SESSIONS_SHOWN;
	v->sessions = xcalloc(shown ? shown : 1, sizeof(*v->sessions));
	/* The helper lists in creation order: the newest are last. */
	for (size_t k = 0; k < shown; k++) {
		struct json_object *o = json_object_array_get_idx(list, n - 1 - k);
		struct ui_bash_session *b = &v->sessions[v->n_sessions];
		const char *sid = str_of(o, "session_id");
		if (!sid || !*sid)
			continue;
		v->n_sessions++;
		b->id = clip(sid, 64);
		/* A command may have lines: kept, cleaned as output is. */
		const char *cmd = str_of(o, "command");
		b->command = cmd ? ui_output_clean((const unsigned char *)cmd, strnlen(cmd, 1000), 0) : NULL;
		b->status = clip(str_of(o, "status") ? str_of(o, "status") : "unknown", 32);
		b->reason = clip(str_of(o, "reason"), 300);
		b->exit_code = int_of(o, "exit_code", &b->has_exit);
		b->started_ms = int_of(o, "started_at_ms", NULL);
		b->ended_ms = int_of(o, "ended_at_ms", NULL);
		b->total_bytes = int_of(o, "total_output_bytes", NULL);
		const char *path = str_of(o, "log_path");
		if (!path)
			b->output_error = xstrdup("its helper named no log for it");
		else if (b->total_bytes == 0)
			b->output = xstrdup("");
		else
			read_tail_in_turn(ch, path, b);
	}
	json_object_put(res);
	helper_channel_unref(ch);
}

static void gather_previews(struct lifecycle *lc, struct ui_sandbox_view *v)
{
	struct exposure_record *rows = NULL;
	size_t n = 0;
	struct cp_error *err = NULL;
	if (lifecycle_sandbox_exposures(lc, v->s.id, &rows, &n, &err) < 0) {
		v->previews_error = xstrdup(err->message);
		cp_error_free(err);
		return;
	}
	v->previews = xcalloc(n ? n : 1, sizeof(*v->previews));
	for (size_t i = 0; i < n; i++) {
		v->previews[i].container_port = rows[i].container_port;
		lifecycle_exposure_url(&rows[i], v->previews[i].url, sizeof(v->previews[i].url));
		exposure_record_clear(&rows[i]);
	}
	v->n_previews = n;
	free(rows);
}

int ui_sandbox_view_gather(struct ui_req *r, const char *id, struct ui_sandbox_view *v, struct cp_error **err)
{
	*v = (struct ui_sandbox_view){0};
	struct lifecycle *lc = r->ui->deps.lc;
	if (store_sandbox_get(r->ui->deps.store, id, &v->s, err) < 0)
		return -1;
	struct workspace_record w = {0};
	struct cp_error *e = NULL;
	if (store_workspace_get(r->ui->deps.store, v->s.workspace_id, &w, &e) == 0) {
		v->ws_mode = w.mode ? xstrdup(w.mode) : NULL;
		v->ws_host_path = w.host_path ? xstrdup(w.host_path) : NULL;
		workspace_record_clear(&w);
	}
	cp_error_free(e);
	e = NULL;
	struct node_record n = {0};
	if (v->s.node && strcmp(v->s.node, STORE_NODE_LOCAL) &&
	    store_node_get(r->ui->deps.store, v->s.node, &n, &e) == 0) {
		v->node_endpoint = n.endpoint ? xstrdup(n.endpoint) : NULL;
		v->node_state = n.state;
		v->node_contact_ms = n.last_contact_ms;
	}
	node_record_clear(&n);
	cp_error_free(e);
	int64_t unwritten = lifecycle_activity_unwritten(lc, id);
	v->last_activity_ms = unwritten > v->s.last_activity_ms ? unwritten : v->s.last_activity_ms;
	v->expiry_at_ms = lifecycle_idle_expiry_at(lc, &v->s);
	v->idle_timeout_ms = lifecycle_idle_timeout_ms(lc);
	v->paused = lifecycle_disk_paused(lc, id, v->paused_reason, sizeof(v->paused_reason));
	v->unsaved = LIFECYCLE_UNSAVED_NONE;
	lifecycle_sandboxes_unsaved(lc, &v->s, 1, &v->unsaved);
	const struct policy_sandbox_limits *lim = lifecycle_limits_in_force(lc);
	v->default_memory_bytes = lim->default_memory_bytes;
	v->pids_default = lim->pids_default;
	gather_previews(lc, v);
	if (v->s.status == SANDBOX_RUNNING)
		gather_sessions(lc, v);
	else
		v->sessions_note = xasprintf("No session is shown: the sandbox is %s, so nothing runs in it%s",
		                             sandbox_status_to_string(v->s.status),
		                             v->s.status == SANDBOX_REMOVED ? " any more and its container is gone."
		                             : v->s.status == SANDBOX_CREATING
		                                 ? " yet."
		                                 : " (its container is stopped or gone; see its status above).");
	return 0;
}
