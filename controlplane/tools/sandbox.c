/* sandbox.c: the management tools: sandbox_create, sandbox_list,
 * sandbox_get, sandbox_destroy, workspace_list. They shape answers; the work
 * is lifecycle/'s and store/'s. */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/xalloc.h"
#include "../base/xjson.h"
#include "../policy/policy.h"
#include "tools_internal.h"

/* Global agent instructions are advisory text read at each create/get;
 * never executed, never copied into a workspace (DESIGN.md, Configuration). */
#define AGENTS_MD_MAX_BYTES (64 * 1024)

static void add_agents_md(const struct config *cfg, struct json_object *out)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/AGENTS.md", cfg->data_root);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return;
	_cleanup_free_ char *buf = xmalloc(AGENTS_MD_MAX_BYTES + 1);
	ssize_t n = read(fd, buf, AGENTS_MD_MAX_BYTES);
	close(fd);
	if (n > 0)
		xjson_add(out, "agents_md", xjson_string_len(buf, (size_t)n));
}

static void add_time(struct json_object *o, const char *key, int64_t ms)
{
	char when[40];
	if (ms > 0)
		xjson_add(o, key, xjson_string(clock_format_rfc3339(ms, when, sizeof(when))));
}

static void add_str(struct json_object *o, const char *key, const char *v)
{
	if (v)
		xjson_add(o, key, xjson_string(v));
}

struct json_object *tools_sandbox_json(struct tools_app *app, const struct sandbox_record *s)
{
	struct json_object *o = xjson_object();
	add_str(o, "sandbox_id", s->id);
	add_str(o, "status", sandbox_status_to_string(s->status));
	add_str(o, "workspace_id", s->workspace_id);
	/* The machine it runs on (issue 28): 'local' or a node's name. */
	const char *node = s->node && *s->node ? s->node : STORE_NODE_LOCAL;
	add_str(o, "node", node);
	int remote = strcmp(node, STORE_NODE_LOCAL) != 0;
	struct workspace_record w = {0};
	struct cp_error *e = NULL;
	if (store_workspace_get(app->store, s->workspace_id, &w, &e) == 0) {
		add_str(o, "workspace_mode", w.mode);
		/* On another node a managed workspace is a volume there, not this path. */
		if (!remote)
			add_str(o, "workspace_path", w.path);
		add_str(o, "workspace_volume", w.volume); /* kept with the workspace (migration 0015) */
		add_str(o, "host_path", w.host_path);
		workspace_record_clear(&w);
	}
	cp_error_free(e);
	add_str(o, "image", s->image);
	if (s->container_id)
		xjson_add(o, "container_id", xjson_string_len(s->container_id, strnlen(s->container_id, 12)));
	if (s->memory_bytes > 0)
		xjson_add(o, "memory_bytes", xjson_int64(s->memory_bytes));
	if (s->disk_bytes > 0)
		xjson_add(o, "disk_bytes", xjson_int64(s->disk_bytes));
	else if (s->status == SANDBOX_RUNNING || s->status == SANDBOX_CREATING)
		add_str(o, "disk_note", lifecycle_disk_note(app->lc));
	char paused[700];
	if (lifecycle_disk_paused(app->lc, s->id, paused, sizeof(paused)))
		add_str(o, "paused", paused);
	if (s->nano_cpus > 0)
		xjson_add(o, "cpus", xjson_double(s->nano_cpus / 1e9));
	xjson_add(o, "network", xjson_bool(s->network));
	add_str(o, "runtime", s->runtime);
	/* vm sandboxes: their accelerator, and what emulation costs. */
	add_str(o, "accel", s->vm_accel);
	if (s->vm_accel && !strcmp(s->vm_accel, "tcg"))
		add_str(o, "accel_note",
		        "TCG: the CPU is emulated (no usable hardware virtualization here), so commands, builds and "
		        "Docker in this sandbox run many times slower than on a machine with KVM; allow for it in "
		        "timeouts");
	add_str(o, "failure_reason", s->failure_reason);
	add_time(o, "created_at", s->created_at_ms);
	/* Calls note activity in memory; the maintenance pass writes it. */
	int64_t unwritten = app->lc ? lifecycle_activity_unwritten(app->lc, s->id) : 0;
	add_time(o, "last_activity_at", unwritten > s->last_activity_ms ? unwritten : s->last_activity_ms);
	add_time(o, "removed_at", s->removed_at_ms);
	return o;
}

/* lifecycle reports steps 1..total; the answer is one more. */
#define CREATE_PROGRESS_TOTAL 7

static void create_progress(void *userdata, const char *step, int done, int total)
{
	const struct mcp_call *call = userdata;
	if (done > 0 && done < total + 1 && total + 1 <= CREATE_PROGRESS_TOTAL)
		mcp_call_progress(call, done, CREATE_PROGRESS_TOTAL, step);
}

/* cpus as a JSON number (1.5) or, the earlier form, a string ("1.5"; the
 * table takes both): a number is written with 9 decimals at most, trailing
 * zeros cut, into buf; policy_cpus_parse judges the text either way (more
 * than 0, at most this machine's CPUs). */
static int cpus_arg(const struct mcp_args *args, char *buf, size_t size, const char **ret, struct cp_error **err)
{
	struct json_object *v = mcp_args_value(args, "cpus");
	*ret = NULL;
	if (!v)
		return 0;
	if (json_object_is_type(v, json_type_string)) {
		*ret = json_object_get_string(v);
		return 0;
	}
	double d = json_object_get_double(v);
	if (!(d > 0) || d > 1e6)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "cpus %g must be a number of CPUs greater than 0, such as 1.5, at most this "
		                    "machine's CPU count",
		                    d);
	snprintf(buf, size, "%.9f", d);
	char *end = buf + strlen(buf) - 1;
	while (*end == '0')
		*end-- = '\0';
	if (*end == '.')
		*end = '\0';
	*ret = buf;
	return 0;
}

int tool_sandbox_create(const struct mcp_call *call, const struct mcp_args *args, struct json_object **ret,
                        struct cp_error **err)
{
	struct tools_app *app = call->app;
	struct lifecycle_create_options opts = {
	    .memory = mcp_args_string(args, "memory", NULL),
	    .disk = mcp_args_string(args, "disk", NULL),
	    .pids_limit = mcp_args_int(args, "pids_limit", 0),
	    .network_off = !mcp_args_bool(args, "network", 1),
	    .workspace_id = mcp_args_string(args, "workspace_id", NULL),
	    .workspace_path = mcp_args_string(args, "workspace_path", NULL),
	    .workspace_mode = mcp_args_string(args, "workspace_mode", NULL),
	    .node = mcp_args_string(args, "node", NULL),
	};
	/* A node's name as the operator gave it (issue 28); whether it exists
	 * is the registry's to say. */
	if (opts.node && strcmp(opts.node, STORE_NODE_LOCAL) && policy_node_name_check(opts.node, err) < 0)
		return -1;
	char cpus[64];
	if (cpus_arg(args, cpus, sizeof(cpus), &opts.cpus, err) < 0)
		return -1;
	/* The table bounds pids_limit; the upper end in force is this
	 * machine's share per sandbox (the world's bound). */
	if (mcp_args_given(args, "pids_limit") &&
	    policy_pids_check(opts.pids_limit, lifecycle_limits_in_force(app->lc)->pids_cap, err) < 0)
		return -1;
	struct lifecycle_create_result res = {0};
	/* Progress (when the client asked for it): 0 now, one event per step
	 * of the create, the total at the end; a cancel ends the wait for a
	 * clone copy, which goes on (MCP basic/utilities/progress, cancellation). */
	opts.progress = create_progress;
	opts.progress_userdata = (void *)call;
	opts.cancel = call->cancel;
	mcp_call_progress(call, 0, CREATE_PROGRESS_TOTAL, "creating the sandbox");
	if (lifecycle_sandbox_create(app->lc, &opts, &res, err) < 0)
		return -1;
	mcp_call_progress(call, CREATE_PROGRESS_TOTAL, CREATE_PROGRESS_TOTAL,
	                  res.approval_required ? "approval required" : "sandbox ready");
	struct json_object *o;
	if (res.approval_required) {
		/* Not an error: the model's next step is to ask the person. */
		o = xjson_object();
		add_str(o, "status", "approval_required");
		add_str(o, "approval_id", res.approval.id);
		add_str(o, "workspace_path", res.approval.host_path);
		add_str(o, "workspace_mode", res.approval.mode);
		int direct = !strcmp(res.approval.mode, "direct");
		/* The page's link to this approval (issue 26), never a login code. */
		char page[300], rest[100];
		snprintf(rest, sizeof(rest), "#/approvals/%s", res.approval.id);
		mcp_page_url(app->cfg->host, (unsigned)app->cfg->port, rest, page, sizeof(page));
		/* A directory of another node (migration 0018) says whose. */
		const char *on =
		    res.approval.node && strcmp(res.approval.node, STORE_NODE_LOCAL) ? res.approval.node : NULL;
		if (on)
			add_str(o, "node", on);
		_cleanup_free_ char *whose = on ? xasprintf(" of node '%s'", on) : xstrdup("");
		_cleanup_free_ char *msg = xasprintf(
		    "The host directory '%s'%s (%s mode) needs the approval of the person at this machine. "
		    "Ask them to approve it on their chat2sbx page, %s (after 'chat2sbx ui' logs them in), or "
		    "to run: chat2sbx approval approve %s ; then call sandbox_create again with the "
		    "same workspace_path%s. Nothing was mounted.%s%s",
		    res.approval.host_path, whose, res.approval.mode, page, res.approval.id,
		    on ? ", workspace_mode and node" : " and workspace_mode",
		    direct ? " Tell them before they decide: " : "", direct ? policy_direct_note_for(on) : "");
		add_str(o, "message", msg);
	} else {
		o = tools_sandbox_json(app, &res.sandbox);
		xjson_add(o, "reused", xjson_bool(res.reused));
		if (res.options_note)
			add_str(o, "options_note", res.options_note);
		if (res.copy_session_id) {
			add_str(o, "copy_session_id", res.copy_session_id);
			add_str(o, "message",
			        "The workspace is still being copied into the sandbox; poll "
			        "copy_session_id with bash_poll until it has exited before working on it.");
		}
		add_agents_md(app->cfg, o);
	}
	lifecycle_create_result_clear(&res);
	*ret = o;
	return 0;
}

int tool_sandbox_list(const struct mcp_call *call, const struct mcp_args *args, struct json_object **ret,
                      struct cp_error **err)
{
	struct tools_app *app = call->app;
	(void)args;
	struct sandbox_record *rows = NULL;
	size_t n = 0;
	if (store_sandbox_list(app->store, 0, &rows, &n, err) < 0)
		return -1;
	struct json_object *list = xjson_array();
	int active = 0;
	int unsaved = 0;
	_cleanup_free_ int *states = xcalloc(n ? n : 1, sizeof(int));
	lifecycle_sandboxes_unsaved(app->lc, rows, n, states); /* the probes of every clone, in parallel, bounded */
	for (size_t i = 0; i < n; i++) {
		struct json_object *one = tools_sandbox_json(app, &rows[i]);
		tools_sandbox_add_saved(app, one, &rows[i], states[i]);
		unsaved += states[i] == LIFECYCLE_UNSAVED_YES;
		xjson_append(list, one);
		if (store_sandbox_is_live(&rows[i]))
			active++;
		sandbox_record_clear(&rows[i]);
	}
	free(rows);
	struct json_object *o = xjson_object();
	xjson_add(o, "sandboxes", list);
	xjson_add(o, "active_count", xjson_int64(active));
	xjson_add(o, "unsaved_count", xjson_int64(unsaved));
	int max_active = lifecycle_limits_in_force(app->lc)->max_active;
	if (max_active > 0)
		xjson_add(o, "max_active_sandboxes", xjson_int64(max_active));
	*ret = o;
	return 0;
}

int tool_sandbox_get(const struct mcp_call *call, const struct mcp_args *args, struct json_object **ret,
                     struct cp_error **err)
{
	struct tools_app *app = call->app;
	const char *id = mcp_args_string(args, "sandbox_id", NULL);
	struct sandbox_record s = {0};
	if (store_sandbox_get(app->store, id, &s, err) < 0)
		return -1;
	struct json_object *o = tools_sandbox_json(app, &s);
	if (s.status == SANDBOX_RUNNING) {
		/* The helper knows the sessions; an unreachable helper is reported, not fatal. */
		struct helper_channel *ch = NULL;
		struct cp_error *e = NULL;
		struct json_object *res = NULL;
		if (lifecycle_sandbox_channel(app->lc, id, &ch, &e) == 0 &&
		    helper_channel_call(ch, "bash.list", NULL, 5000, &res, &e) == 0) {
			struct json_object *sessions = NULL;
			if (json_object_object_get_ex(res, "sessions", &sessions))
				xjson_add(o, "bash_sessions", json_object_get(sessions));
			/* The helper lists the recent and running sessions only. */
			struct json_object *v = NULL;
			if (json_object_object_get_ex(res, "total", &v))
				xjson_add(o, "bash_sessions_total", json_object_get(v));
			if (json_object_object_get_ex(res, "truncated", &v))
				xjson_add(o, "bash_sessions_truncated", json_object_get(v));
		} else if (e) {
			xjson_add(o, "helper_error", xjson_string(e->message));
		}
		json_object_put(res);
		cp_error_free(e);
		if (ch)
			lifecycle_sandbox_release(app->lc, id, ch);
	}
	int unsaved = LIFECYCLE_UNSAVED_NONE;
	lifecycle_sandboxes_unsaved(app->lc, &s, 1, &unsaved);
	tools_sandbox_add_saved(app, o, &s, unsaved); /* clone work: unsaved_work, last_export (issue 14) */
	struct json_object *exposures = tools_exposures_json(app, id); /* sandbox_expose's mappings */
	if (exposures)
		xjson_add(o, "exposures", exposures);
	add_agents_md(app->cfg, o);
	sandbox_record_clear(&s);
	*ret = o;
	return 0;
}

int tool_sandbox_destroy(const struct mcp_call *call, const struct mcp_args *args, struct json_object **ret,
                         struct cp_error **err)
{
	struct tools_app *app = call->app;
	const char *id = mcp_args_string(args, "sandbox_id", NULL);
	/* The model's force never discards unsaved clone work: it stops the
	 * sandbox and keeps it for the person (issue 23). */
	struct lifecycle_destroy_options opts = {
	    .keep_unsaved = mcp_args_bool(args, "force", 0), .reason = "destroy", .actor = "mcp"};
	struct lifecycle_destroy_result res = {0};
	if (lifecycle_sandbox_destroy_ex(app->lc, id, &opts, &res, err) < 0) {
		lifecycle_destroy_result_clear(&res);
		return -1;
	}
	struct json_object *o = tools_sandbox_json(app, &res.sandbox);
	xjson_add(o, "workspace_kept", xjson_bool(1));
	if (res.kept) {
		xjson_add(o, "kept_for_person", xjson_bool(1));
		_cleanup_free_ char *msg = xasprintf("Not destroyed: %s. Tell the person.", res.note);
		add_str(o, "message", msg);
		lifecycle_destroy_result_clear(&res);
		*ret = o;
		return 0;
	}
	/* The work of a clone sandbox: the export it was saved in, or what a
	 * force lost (issue 14). */
	if (res.save.export.id) {
		xjson_add(o, "export", tools_export_json(&res.save.export));
		_cleanup_free_ char *msg = xasprintf(
		    "Destroyed. Its work was saved as export %s; nothing was written to the user's machine. The "
		    "person brings it home with: %s",
		    res.save.export.id,
		    !strcmp(res.save.export.kind, "tar")   ? "chat2sbx export apply ID --to DIR"
		    : !strcmp(res.save.export.kind, "git") ? "chat2sbx export apply ID"
		                                           : "(nothing: no change since it was made)");
		add_str(o, "message", msg);
	}
	if (res.lost)
		xjson_add(o, "lost", xjson_string(res.lost));
	if (res.note)
		xjson_add(o, "message", xjson_string(res.note));
	lifecycle_destroy_result_clear(&res);
	*ret = o;
	return 0;
}

void tools_workspace_fill(struct json_object *o, const struct workspace_record *w)
{
	int64_t trash_at = 0;
	const char *state = workspace_state(w, &trash_at);
	add_str(o, "workspace_id", w->id);
	add_str(o, "mode", w->mode);
	add_str(o, "state", state);
	add_str(o, "path", w->path);
	add_str(o, "host_path", w->host_path);
	/* Another node's (migrations 0015 and 0018): a managed workspace kept
	 * there as a volume, or a direct workspace of its own directory. */
	if (w->node && strcmp(w->node, STORE_NODE_LOCAL) != 0)
		add_str(o, "node", w->node);
	add_str(o, "volume", w->volume);
	add_str(o, "sandbox_id", w->sandbox_id);
	add_time(o, "created_at", w->created_at_ms);
	add_time(o, "released_at", w->released_at_ms);
	add_time(o, "trash_at", trash_at);
	add_time(o, "trashed_at", w->trashed_at_ms);
}

int tool_workspace_list(const struct mcp_call *call, const struct mcp_args *args, struct json_object **ret,
                        struct cp_error **err)
{
	struct tools_app *app = call->app;
	(void)args;
	struct workspace_record *rows = NULL;
	size_t n = 0;
	if (store_workspace_list(app->store, &rows, &n, err) < 0)
		return -1;
	struct json_object *list = xjson_array();
	for (size_t i = 0; i < n; i++) {
		struct json_object *o = xjson_object();
		tools_workspace_fill(o, &rows[i]);
		xjson_append(list, o);
		workspace_record_clear(&rows[i]);
	}
	free(rows);
	struct json_object *o = xjson_object();
	xjson_add(o, "workspaces", list);
	*ret = o;
	return 0;
}
