/* bash.c: bash sessions inside the sandbox (bash.h): the requests that
 * read or end a session (bash.poll, bash.input, bash.stop, bash.list), the
 * acknowledgements of delivered output, and the replies that wait (bash.start
 * until exit, bash.poll until output, bash.stop until nothing of the session
 * is left; the list itself is bash_waiters.c). The other parts:
 * bash_session.c (the table), bash_spawn.c (bash.start), bash_output.c,
 * bash_input.c, bash_reap.c, bash_waiters.c. Mechanism only:
 * which commands may run is decided on the host. */

#include "bash_internal.h"

/* ---- parameters ---- */

static int param_session(json_object *params, struct session **ret, struct rpc_error *err)
{
	const char *sid;
	if (rpc_param_string(params, "session_id", true, &sid, NULL, err) < 0)
		return -1;
	struct session *s = session_find(sid);
	if (!s)
		return rpc_fail(err, "NOT_FOUND",
		                "no session '%.*s' in this sandbox; sandbox_get lists this sandbox's "
		                "bash sessions (old ended ones are forgotten, their logs stay in %s)",
		                BASH_ID_MAX, sid, paths_log_dir());
	*ret = s;
	return 0;
}

int param_output(json_object *params, struct output_bound *ret, struct rpc_error *err)
{
	int64_t v;
	if (rpc_param_int(params, "max_output_bytes", BASH_DEFAULT_OUTPUT, 0, BASH_MAX_OUTPUT, true, &v, err) < 0 ||
	    rpc_param_bool(params, "tail", false, &ret->tail, err) < 0)
		return -1;
	ret->max = v < BASH_MIN_OUTPUT ? BASH_MIN_OUTPUT : (size_t)v;
	return 0;
}

int param_yield(json_object *params, int64_t *ret, struct rpc_error *err)
{
	return rpc_param_int(params, "yield_time_ms", BASH_DEFAULT_YIELD_MS, 0, BASH_MAX_YIELD_MS, true, ret, err) < 0
	           ? -1
	           : 0;
}

int check_session_id(const char *id, size_t len, struct rpc_error *err)
{
	bool ok = len > 0 && len <= BASH_ID_MAX && id[0] != '.' && strlen(id) == len;
	for (size_t i = 0; ok && i < len; i++) {
		char c = id[i];
		ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
		     c == '-' || c == '.';
	}
	if (!ok)
		return rpc_fail(err, "INVALID_ARGUMENT",
		                "session_id must be 1 to %d characters from A-Z a-z 0-9 _ - . "
		                "(not starting with '.'), like 'bash_1f2e'",
		                BASH_ID_MAX);
	return 0;
}

/* ---- bash.poll, bash.stop, bash.list ---- */

int bash_rpc_poll(json_object *id, json_object *params, json_object **ret_result, struct rpc_error *err)
{
	struct bash_state *st = bash_state();
	(void)ret_result;
	struct session *s;
	int64_t yield_ms;
	struct output_bound bound;
	if (param_session(params, &s, err) < 0 || param_yield(params, &yield_ms, err) < 0 ||
	    param_output(params, &bound, err) < 0)
		return -1;
	if (st->nwaiters >= BASH_MAX_WAITERS)
		return rpc_fail(err, "LIMIT", "%d requests are already waiting; retry later", BASH_MAX_WAITERS);
	waiter_add(WAIT_POLL, id, s, bash_clock_ms() + yield_ms, bound);
	return 1;
}

int bash_rpc_input(json_object *id, json_object *params, json_object **ret_result, struct rpc_error *err)
{
	(void)id;
	struct session *s;
	const char *data;
	size_t len;
	bool close_stdin;
	if (param_session(params, &s, err) < 0)
		return -1;
	int r = rpc_param_string(params, "data", false, &data, &len, err);
	if (r < 0 || rpc_param_bool(params, "close", false, &close_stdin, err) < 0)
		return -1;
	if (r == 0) {
		data = "";
		len = 0;
	}
	if (!s->interactive)
		return rpc_fail(err, "INVALID_ARGUMENT",
		                "session '%s' was not started with interactive: true; its stdin is at "
		                "end-of-file. Start a new session with interactive: true to send it input",
		                s->id);
	if (s->ended)
		return rpc_fail(err, "CONFLICT",
		                "session '%s' has ended (%s), so its stdin is closed; get the rest of its "
		                "output with bash_poll",
		                s->id, status_name(s->status));
	if (!stdin_open(s))
		return rpc_fail(err, "CONFLICT",
		                "the stdin of session '%s' is closed (closed on request, or the program "
		                "stopped reading it); the session can no longer take input",
		                s->id);
	if (len > BASH_INPUT_MAX - s->inlen)
		return rpc_fail(err, "LIMIT",
		                "session '%s' has %zu bytes of input it has not read yet and at most %d "
		                "may wait; nothing was sent. Poll its output and send the rest later",
		                s->id, s->inlen, BASH_INPUT_MAX);
	input_flush(s);
	size_t written = 0;
	if (s->in_fd >= 0 && s->inlen == 0)
		written = input_write(s, data, len);
	if (s->in_fd >= 0)
		input_queue(s, data + written, len - written);
	if (len > 0)
		s->in_mid_line = data[len - 1] != '\n';
	if (close_stdin && s->in_fd >= 0) {
		/* A pty has no end of file of its own: the line discipline turns
		 * VEOF at the start of a line into one (a second one ends a
		 * partial line first). */
		const char eof[2] = {TTY_EOF, TTY_EOF};
		if (s->tty)
			input_queue(s, eof, s->in_mid_line ? 2 : 1);
		s->in_close = true;
		input_flush(s);
	}
	json_object *res = xjson_object();
	xjson_add(res, "session_id", xjson_string(s->id));
	xjson_add(res, "bytes_written", xjson_int64((int64_t)written));
	xjson_add(res, "pending_input_bytes", xjson_int64((int64_t)s->inlen));
	xjson_add(res, "stdin_open", xjson_bool(stdin_open(s)));
	*ret_result = res;
	return 0;
}

int bash_rpc_stop(json_object *id, json_object *params, json_object **ret_result, struct rpc_error *err)
{
	struct bash_state *st = bash_state();
	(void)ret_result;
	struct session *s;
	struct output_bound bound;
	if (param_session(params, &s, err) < 0 || param_output(params, &bound, err) < 0)
		return -1;
	if (st->nwaiters >= BASH_MAX_WAITERS)
		return rpc_fail(err, "LIMIT", "%d requests are already waiting; retry later", BASH_MAX_WAITERS);
	int64_t now = bash_clock_ms();
	/* After the shell exited, background jobs and whatever else the
	 * session started may be left (holding the output pipe or not): stop
	 * them too, but keep the shell's real status. */
	if (session_has_processes(s))
		kill_begin(s, KILL_STOP, now);
	waiter_add(WAIT_STOP, id, s, now + PROTO_KILL_GRACE_MS + STOP_SLACK_MS, bound);
	return 1;
}

int bash_rpc_list(json_object *id, json_object *params, json_object **ret_result, struct rpc_error *err)
{
	struct bash_state *st = bash_state();
	(void)id;
	(void)params;
	(void)err;
	json_object *list = xjson_array();
	size_t recent_from = st->nsessions > BASH_LIST_RECENT ? st->nsessions - BASH_LIST_RECENT : 0;
	size_t hidden = 0;
	for (size_t i = 0; i < st->nsessions; i++) {
		struct session *s = st->sessions[i];
		if (s->hidden) {
			hidden++;
			continue;
		}
		if (i < recent_from && s->ended)
			continue;
		json_object *o = xjson_object();
		xjson_add(o, "session_id", xjson_string(s->id));
		size_t clen = strlen(s->command);
		if (clen > LIST_COMMAND_MAX) {
			size_t cut = LIST_COMMAND_MAX;
			cut -= utf8_incomplete_suffix((const unsigned char *)s->command, cut);
			char *c = xasprintf("%.*s…", (int)cut, s->command);
			xjson_add(o, "command", xjson_string(c));
			free(c);
		} else {
			xjson_add(o, "command", xjson_string(s->command));
		}
		xjson_add(o, "status", xjson_string(status_name(s->status)));
		if (s->ended && s->status != SESSION_LOST)
			xjson_add(o, "exit_code", xjson_int64(s->exit_code));
		if (s->reason)
			xjson_add(o, "reason", xjson_string(s->reason));
		if (s->ended && s->term_sig) {
			char name[32];
			xjson_add(o, "signal", xjson_string(signal_name(s->term_sig, name, sizeof name)));
		}
		xjson_add(o, "interactive", xjson_bool(s->interactive));
		xjson_add(o, "tty", xjson_bool(s->tty));
		xjson_add(o, "stdin_open", xjson_bool(stdin_open(s)));
		xjson_add(o, "started_at_ms", xjson_int64(s->started_at_ms));
		if (s->ended && s->status != SESSION_LOST)
			xjson_add(o, "ended_at_ms", xjson_int64(s->ended_at_ms));
		xjson_add(o, "pid", xjson_int64(s->pid));
		xjson_add(o, "log_path", xjson_string(s->log_path));
		xjson_add(o, "total_output_bytes", xjson_int64((int64_t)s->total));
		xjson_add(o, "has_more_output", xjson_bool(session_deliverable(s) > 0));
		xjson_append(list, o);
	}
	size_t listed = json_object_array_length(list);
	json_object *r = xjson_object();
	xjson_add(r, "sessions", list);
	xjson_add(r, "total", xjson_int64((int64_t)(st->nsessions - hidden)));
	xjson_add(r, "truncated", xjson_bool(listed < st->nsessions - hidden));
	*ret_result = r;
	return 0;
}

/* ---- acknowledgements (bash.ack, bash.nack, hello attach_id) ---- */

/* Reads {"session_id","start","end"} of an acknowledgement; false when
 * malformed or the session is unknown (then it is ignored). */
static bool ack_params(json_object *params, struct session **ret, uint64_t *ret_start, uint64_t *ret_end)
{
	struct rpc_error err;
	const char *sid;
	int64_t start, end;
	if (rpc_param_string(params, "session_id", true, &sid, NULL, &err) < 0 ||
	    rpc_param_int(params, "start", 0, 0, INT64_MAX, false, &start, &err) < 0 ||
	    rpc_param_int(params, "end", 0, 0, INT64_MAX, false, &end, &err) < 0 || end < start) {
		hlog_debug("ignoring a malformed acknowledgement");
		return false;
	}
	*ret = session_find(sid);
	if (!*ret)
		hlog_debug("ignoring an acknowledgement for unknown session '%.*s'", BASH_ID_MAX, sid);
	*ret_start = (uint64_t)start;
	*ret_end = (uint64_t)end;
	return *ret != NULL;
}

void bash_ack(json_object *params)
{
	struct session *s;
	uint64_t start, end;
	if (!ack_params(params, &s, &start, &end))
		return;
	/* Only a range that continues the acknowledged prefix moves it: after a
	 * reply that was not acknowledged, later ones are not either, so the
	 * gap is delivered again rather than lost. */
	if (start > s->acked || end <= s->acked || end > s->delivered)
		return;
	s->acked = end;
	session_persist(s);
}

void bash_nack(json_object *params)
{
	struct session *s;
	uint64_t start, end;
	if (!ack_params(params, &s, &start, &end))
		return;
	uint64_t to = start > s->acked ? start : s->acked;
	if (to < s->delivered) {
		hlog_debug("session '%s': %llu bytes sent were not received; delivering them again", s->id,
		           (unsigned long long)(s->delivered - to));
		s->delivered = to;
	}
}

size_t bash_attach_reset(void)
{
	struct bash_state *st = bash_state();
	size_t rewound = 0;
	/* Waiting replies belong to the previous attachment: their ids mean
	 * nothing (or something else) to the new one. Their sessions go on. */
	while (st->waiters) {
		struct waiter *w = st->waiters;
		st->waiters = w->next;
		w->session->waiters--;
		json_object_put(w->id);
		free(w);
	}
	st->nwaiters = 0;
	for (size_t i = 0; i < st->nsessions; i++) {
		struct session *s = st->sessions[i];
		if (s->delivered > s->acked) {
			s->delivered = s->acked;
			rewound++;
		}
	}
	return rewound;
}
