/* page_health.c: /ui/health (docs/ui.md, "Health"): what `chat2sbx status`
 * shows and a "Run doctor" button. Both are this program run as a child
 * (deps.self_exe `status --json`, `doctor --json`; base/child.h: bounded
 * output, a deadline, its own process group), so the page shows exactly
 * what the commands decide, with no second copy of their logic (which
 * lives in cli/, above ui/). The child gets serve's own environment and
 * working directory: that is how the CHAT2SBX_* settings, ./.env of a
 * source tree's build and DATA_ROOT/config.yaml reach it, so it reads the
 * same configuration serve did.
 *
 * A hostile caller cannot make this expensive: status runs at most once
 * every STATUS_FRESH_MS whatever the number of requests (others get the
 * cached answer; one child at a time), and at most one doctor runs at a
 * time on a thread owned by struct ui: a POST while it runs starts nothing
 * (it answers with the page that shows it running). ui_health_free fires
 * the run's cancel token (child_run kills its process group) and joins the
 * thread. Every string of the children's JSON goes through ui_put's %s. */
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/cancel.h"
#include "../base/child.h"
#include "../base/clock.h"
#include "../base/log.h"
#include "../base/xalloc.h"
#include "ui_internal.h"

extern char **environ;

/* status answers are reused this long (ms) */
#define STATUS_FRESH_MS 5000
/* deadlines of the children (ms): status asks the engine and systemd;
 * doctor makes and attacks a probe sandbox */
#define STATUS_WALL_MS 30000
#define DOCTOR_WALL_MS (10 * 60 * 1000)
/* stdout kept of either child */
#define CHILD_OUT_MAX (1024 * 1024)

enum doctor_state { DOCTOR_IDLE, DOCTOR_RUNNING, DOCTOR_DONE, DOCTOR_FAILED };

struct ui_health {
	pthread_mutex_t lock; /* guards everything below but status_run */
	/* status: the last answer and when (monotonic ms) */
	pthread_mutex_t status_run; /* one status child at a time */
	char *status_out;           /* its stdout (JSON), NULL before the first */
	char *status_failure;       /* why it gave no JSON, NULL when it did */
	int64_t status_at;
	/* doctor: at most one run */
	enum doctor_state state;
	int thread_live; /* a thread was started and not yet joined */
	pthread_t thread;
	struct cp_cancel cancel;
	char *exe;            /* the program the run started (owned) */
	char *doctor_out;     /* done: its stdout */
	char *doctor_failure; /* failed: why */
	int64_t started_ms, finished_ms;
};

struct ui_health *ui_health_new(void)
{
	struct ui_health *h = xcalloc(1, sizeof(*h));
	pthread_mutex_init(&h->lock, NULL);
	pthread_mutex_init(&h->status_run, NULL);
	cp_cancel_init(&h->cancel);
	return h;
}

void ui_health_free(struct ui_health *h)
{
	if (!h)
		return;
	cp_cancel_fire(&h->cancel); /* a doctor still running is killed within 200 ms */
	pthread_mutex_lock(&h->lock);
	int live = h->thread_live;
	h->thread_live = 0;
	pthread_mutex_unlock(&h->lock);
	if (live)
		pthread_join(h->thread, NULL);
	cp_cancel_destroy(&h->cancel);
	pthread_mutex_destroy(&h->lock);
	pthread_mutex_destroy(&h->status_run);
	free(h->status_out);
	free(h->status_failure);
	free(h->exe);
	free(h->doctor_out);
	free(h->doctor_failure);
	free(h);
}

/* Runs `exe sub --json` bounded; *ret_out (owned) its stdout when it
 * printed a JSON object, else NULL and *ret_failure (owned) why: the
 * error it printed, or how it ended. */
static void run_self(const char *exe, const char *sub, long wall_ms, const struct cp_cancel *cancel, char **ret_out,
                     char **ret_failure)
{
	*ret_out = NULL;
	*ret_failure = NULL;
	if (!exe || !*exe) {
		*ret_failure = xstrdup("this serve does not know its own program's path (/proc/self/exe)");
		return;
	}
	const char *argv[] = {exe, sub, "--json", NULL};
	struct child_spec spec = {.path = exe,
	                          .argv = argv,
	                          .envp = (const char *const *)environ,
	                          .in_fd = -1,
	                          .out_max = CHILD_OUT_MAX,
	                          .limits = {.wall_ms = wall_ms},
	                          .cancel = cancel};
	struct child_result res = {0};
	struct cp_error *err = NULL;
	if (child_run(&spec, &res, &err) < 0) {
		*ret_failure = xasprintf("could not run chat2sbx %s: %s", sub, err->message);
		cp_error_free(err);
		return;
	}
	if (res.cancelled)
		*ret_failure = xasprintf("chat2sbx %s was stopped: serve is shutting down", sub);
	else if (res.timed_out)
		*ret_failure =
		    xasprintf("chat2sbx %s did not finish within %ld s and was stopped", sub, wall_ms / 1000);
	else if (res.out_over)
		*ret_failure = xasprintf("chat2sbx %s printed more than %d bytes", sub, CHILD_OUT_MAX);
	else if (res.out[0] == '{')
		*ret_out = xstrdup(res.out);
	else {
		/* Its own words: the last line it wrote to stderr ("chat2sbx: ..."). */
		char *tail = res.err_tail;
		size_t len = strlen(tail);
		while (len && tail[len - 1] == '\n')
			tail[--len] = '\0';
		const char *nl = strrchr(tail, '\n');
		if (len)
			*ret_failure = xstrdup(nl ? nl + 1 : tail);
		else if (res.exited)
			*ret_failure = xasprintf("chat2sbx %s exited with status %d and said nothing", sub, res.code);
		else
			*ret_failure = xasprintf("chat2sbx %s was ended by signal %d", sub, res.signal);
	}
	child_result_clear(&res);
}

static void *doctor_thread(void *arg)
{
	struct ui_health *h = arg;
	pthread_mutex_lock(&h->lock);
	char *exe = xstrdup(h->exe);
	pthread_mutex_unlock(&h->lock);
	char *out = NULL, *failure = NULL;
	run_self(exe, "doctor", DOCTOR_WALL_MS, &h->cancel, &out, &failure);
	free(exe);
	pthread_mutex_lock(&h->lock);
	h->doctor_out = out;
	h->doctor_failure = failure;
	h->finished_ms = clock_now_ms();
	h->state = out ? DOCTOR_DONE : DOCTOR_FAILED;
	pthread_mutex_unlock(&h->lock);
	log_info("ui", "doctor run from the page ended: %s", out ? "done" : failure);
	return NULL;
}

/* Starts a doctor run unless one is running. 1 started, 0 one was
 * running already, -1 the thread could not start (*why set, static). */
static int doctor_start(struct ui_health *h, const char *exe, int64_t now_ms, const char **why)
{
	pthread_mutex_lock(&h->lock);
	if (h->state == DOCTOR_RUNNING || cp_cancel_fired(&h->cancel)) {
		pthread_mutex_unlock(&h->lock);
		return 0;
	}
	if (h->thread_live) { /* the last run's thread has finished: reap it */
		pthread_join(h->thread, NULL);
		h->thread_live = 0;
	}
	free(h->exe);
	free(h->doctor_out);
	free(h->doctor_failure);
	h->exe = xstrdup(exe ? exe : "");
	h->doctor_out = h->doctor_failure = NULL;
	h->started_ms = now_ms;
	h->finished_ms = 0;
	h->state = DOCTOR_RUNNING;
	int r = 1;
	if (pthread_create(&h->thread, NULL, doctor_thread, h) != 0) {
		h->state = DOCTOR_FAILED;
		h->finished_ms = now_ms;
		h->doctor_failure = xstrdup("could not start a thread for doctor");
		*why = "could not start a thread for doctor";
		r = -1;
	} else {
		h->thread_live = 1;
	}
	pthread_mutex_unlock(&h->lock);
	return r;
}

/* A JSON value as nested lists: objects as <dl>, arrays as <ol>. */
static void put_json(struct ui_req *r, struct json_object *v, int depth)
{
	if (depth > 8) {
		ui_put(r, "…");
		return;
	}
	switch (json_object_get_type(v)) {
	case json_type_null: ui_put(r, "<span class=\"note\">none</span>"); break;
	case json_type_boolean: ui_put(r, "%R", json_object_get_boolean(v) ? "yes" : "no"); break;
	case json_type_object:
		ui_put(r, "<dl class=\"facts\">");
		json_object_object_foreach(v, key, val)
		{
			ui_put(r, "<dt>%s</dt><dd>", key);
			put_json(r, val, depth + 1);
			ui_put(r, "</dd>");
		}
		ui_put(r, "</dl>");
		break;
	case json_type_array:
		ui_put(r, "<ol>");
		for (size_t i = 0; i < json_object_array_length(v); i++) {
			ui_put(r, "<li>");
			put_json(r, json_object_array_get_idx(v, i), depth + 1);
			ui_put(r, "</li>");
		}
		ui_put(r, "</ol>");
		break;
	default: ui_put(r, "%s", json_object_get_string(v)); break;
	}
}

void ui_put_status(struct ui_req *r, struct json_object *status)
{
	if (!status || !json_object_is_type(status, json_type_object)) {
		ui_put(r, "<p class=\"note\">No status.</p>");
		return;
	}
	json_object_object_foreach(status, key, val)
	{
		ui_put(r, "<section class=\"status\" data-part=\"%s\"><h2>%s</h2>", key, key);
		put_json(r, val, 0);
		ui_put(r, "</section>");
	}
}

static const char *field(struct json_object *o, const char *k)
{
	struct json_object *v = NULL;
	return json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_string)
	           ? json_object_get_string(v)
	           : NULL;
}

/* doctor's result word as what happened to the attack. */
static const char *outcome(const char *result)
{
	return !result                      ? "unknown"
	       : !strcmp(result, "passed")  ? "blocked"
	       : !strcmp(result, "failed")  ? "succeeded"
	       : !strcmp(result, "skipped") ? "skipped"
	                                    : "unknown";
}

void ui_put_doctor(struct ui_req *r, const char *state, const char *out, const char *failure, int64_t started_ms,
                   int64_t finished_ms)
{
	ui_put(r, "<section id=\"doctor\" data-state=\"%s\" aria-live=\"polite\"><h2>Doctor</h2>", state);
	ui_put(r, "<p class=\"note\">Doctor makes a probe sandbox and attacks it from inside (the engine socket, "
	          "host files, the network, privileges, ...) and attacks serve's endpoint from outside; each attack "
	          "must be blocked. Same as <code>chat2sbx doctor</code>.</p>");
	if (!strcmp(state, "running")) {
		ui_put(r, "<p>Running since ");
		ui_put_time(r, started_ms);
		ui_put(r, "; this takes a minute or two. The page updates by itself.</p>");
	} else if (!strcmp(state, "failed")) {
		ui_put(r, "<div class=\"result error\"><p>Doctor did not finish: %s</p></div>", failure);
	} else if (!strcmp(state, "done")) {
		struct json_tokener *tok = json_tokener_new();
		struct json_object *o = json_tokener_parse_ex(tok, out ? out : "", out ? (int)strlen(out) : 0);
		int parsed = json_tokener_get_error(tok) == json_tokener_success && o;
		json_tokener_free(tok);
		struct json_object *checks = NULL, *passed = NULL;
		if (!parsed || !json_object_object_get_ex(o, "checks", &checks) ||
		    !json_object_is_type(checks, json_type_array)) {
			ui_put(r,
			       "<div class=\"result error\"><p>Doctor's answer was not the JSON it prints.</p></div>");
		} else {
			int ok = json_object_object_get_ex(o, "passed", &passed) && json_object_get_boolean(passed);
			ui_put(r, "<div class=\"result %R\"><p>%R</p></div><p>Finished ", ok ? "ok" : "error",
			       ok ? "Every attack was blocked: the sandboxes are isolated as designed."
			          : "An attack succeeded: this machine's sandboxes are NOT isolated. Fix the "
			            "configuration "
			            "before serving.");
			ui_put_time(r, finished_ms);
			ui_put(r, "</p><ul class=\"attacks\">");
			for (size_t i = 0; i < json_object_array_length(checks); i++) {
				struct json_object *c = json_object_array_get_idx(checks, i);
				const char *oc = outcome(field(c, "result"));
				ui_put(r,
				       "<li class=\"attack\" data-outcome=\"%s\" data-name=\"%s\"><strong>%s</strong> "
				       "<code>%s</code>: %s<br><span class=\"note\">%s</span></li>",
				       oc, field(c, "name"), oc, field(c, "name"), field(c, "attack"),
				       field(c, "detail"));
			}
			ui_put(r, "</ul>");
		}
		json_object_put(o);
	}
	if (strcmp(state, "running") != 0) {
		ui_form_begin(r, "/ui/health/doctor");
		ui_put(r, "<button type=\"submit\" data-action=\"doctor\">Run doctor</button></form>");
	}
	ui_put(r, "</section>");
}

/* The status answer, fresh within STATUS_FRESH_MS: *ret_out or
 * *ret_failure (both owned copies). */
static void status_get(struct ui_health *h, const char *exe, char **ret_out, char **ret_failure)
{
	pthread_mutex_lock(&h->status_run);
	pthread_mutex_lock(&h->lock);
	int fresh = (h->status_out || h->status_failure) && clock_monotonic_ms() - h->status_at < STATUS_FRESH_MS;
	pthread_mutex_unlock(&h->lock);
	if (!fresh) {
		char *out = NULL, *failure = NULL;
		run_self(exe, "status", STATUS_WALL_MS, &h->cancel, &out, &failure);
		pthread_mutex_lock(&h->lock);
		free(h->status_out);
		free(h->status_failure);
		h->status_out = out;
		h->status_failure = failure;
		h->status_at = clock_monotonic_ms();
		pthread_mutex_unlock(&h->lock);
	}
	pthread_mutex_lock(&h->lock);
	*ret_out = h->status_out ? xstrdup(h->status_out) : NULL;
	*ret_failure = h->status_failure ? xstrdup(h->status_failure) : NULL;
	pthread_mutex_unlock(&h->lock);
	pthread_mutex_unlock(&h->status_run);
}

static const char *const state_names[] = {"idle", "running", "done", "failed"};

void ui_view_health(struct ui_req *r, const char *id)
{
	(void)id;
	struct ui_health *h = r->ui->health;
	char *out = NULL, *failure = NULL;
	status_get(h, r->ui->deps.self_exe, &out, &failure);
	ui_page_begin(r, 200, "Health", "health", 1);
	/* The doctor first: its button and its outcome are what one comes for. */
	pthread_mutex_lock(&h->lock);
	char *d_out = h->doctor_out ? xstrdup(h->doctor_out) : NULL;
	char *d_failure = h->doctor_failure ? xstrdup(h->doctor_failure) : NULL;
	enum doctor_state st = h->state;
	int64_t started = h->started_ms, finished = h->finished_ms;
	pthread_mutex_unlock(&h->lock);
	ui_put_doctor(r, state_names[st], d_out, d_failure, started, finished);
	free(d_out);
	free(d_failure);
	ui_put(r, "<section aria-labelledby=\"status-h\"><h2 id=\"status-h\">Status</h2><p class=\"note\">What "
	          "<code>chat2sbx status</code> shows (refreshed every few seconds).</p>");
	if (!out) {
		ui_put(r, "<div class=\"result error\"><p>%s</p></div>", failure);
	} else {
		struct json_object *o = json_tokener_parse(out);
		ui_put_status(r, o);
		json_object_put(o);
	}
	ui_put(r, "</section>");
	ui_page_end(r);
	free(out);
	free(failure);
}

void ui_do_doctor(struct ui_req *r, const char *id)
{
	(void)id;
	const char *why = NULL;
	int started = doctor_start(r->ui->health, r->ui->deps.self_exe, r->now_ms, &why);
	if (started < 0) {
		ui_page_message(r, 500, "Doctor did not start", why, "/ui/health");
		return;
	}
	if (started == 1) {
		ui_audit(r, "doctor.start", NULL, NULL, NULL);
		log_info("ui", "doctor started from the page");
	}
	/* Back to the page that shows it (running, or the failure). */
	snprintf(r->out->location, sizeof(r->out->location), "/ui/health");
	r->out->status = 303;
	ui_put(r, "<!doctype html><title>chat2sbx</title><a href=\"/ui/health\">Continue</a>\n");
}
