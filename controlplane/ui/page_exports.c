/* page_exports.c: saved work on the page (docs/ui.md, "Saved work"): the
 * exports with their branches, size and whether they were applied; one
 * export as `chat2sbx export show` shows it (its checked manifest,
 * export_manifest_json: branches, commit subjects, changed files, the
 * uncommitted snapshot); and "Apply to the repository", confirmed first and
 * done by export_apply_as, the very function of `chat2sbx export apply`
 * (same refusals, same audit row export.apply, actor ui), whose result
 * shows the summary and the git log / git merge commands the CLI prints
 * (export_apply_summary, next_steps). Every name, subject and path came
 * from a sandbox: all go through ui_put's %s. The render steps take plain
 * data (a record, a manifest's JSON, an apply result) so tests feed them
 * hostile text without an engine. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/id.h"
#include "../export/export.h"
#include "../store/store.h"
#include "ui_internal.h"

/* Branches shown per row of the table before "+N more". */
#define LIST_BRANCHES_MAX 4

static const char *str(struct json_object *o, const char *k)
{
	struct json_object *v = NULL;
	return o && json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_string)
	           ? json_object_get_string(v)
	           : NULL;
}

static int64_t num(struct json_object *o, const char *k)
{
	struct json_object *v = NULL;
	return o && json_object_object_get_ex(o, k, &v) ? json_object_get_int64(v) : 0;
}

static struct json_object *arr(struct json_object *o, const char *k)
{
	struct json_object *v = NULL;
	return o && json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_array) ? v : NULL;
}

/* The state words of `chat2sbx export list`, and the row's data-state. */
static const char *state_of(const struct export_record *x)
{
	if (x->trashed_at_ms)
		return "trashed";
	if (!strcmp(x->kind, "none"))
		return "nothing";
	return x->applied_count ? "applied" : "not-applied";
}

/* "refs/heads/x" → "x" (other names unchanged). */
static const char *short_name(const char *name)
{
	return name && !strncmp(name, "refs/heads/", 11)  ? name + 11
	       : name && !strncmp(name, "refs/tags/", 10) ? name + 10
	                                                  : name;
}

void ui_put_export_row(struct ui_req *r, const struct export_record *x, const char *repo, struct json_object *m)
{
	ui_put(r,
	       "<tr data-export=\"%s\" data-state=\"%s\"><td><a href=\"/ui/exports/%s\"><code>%s</code></a></td>"
	       "<td><a href=\"/ui/sandboxes/%s\"><code>%s</code></a></td><td><code>%s</code>",
	       x->id, state_of(x), x->id, x->id, x->sandbox_id, x->sandbox_id, x->workspace_id);
	if (repo)
		ui_put(r, "<br><code>%s</code>", repo);
	ui_put(r, "</td><td>");
	struct json_object *refs = arr(m, "refs");
	size_t shown = 0, branches = 0;
	for (size_t i = 0; refs && i < json_object_array_length(refs); i++) {
		struct json_object *e = json_object_array_get_idx(refs, i);
		const char *kind = str(e, "kind");
		if (!kind || strcmp(kind, "branch"))
			continue;
		branches++;
		if (shown++ < LIST_BRANCHES_MAX)
			ui_put(r, "%R<code>%s</code>", shown > 1 ? ", " : "", short_name(str(e, "name")));
	}
	if (branches > LIST_BRANCHES_MAX)
		ui_put(r, " and %z more", branches - LIST_BRANCHES_MAX);
	if (!m)
		ui_put(r, "%L ref(s)", x->refs);
	else if (!branches)
		ui_put(r, "—");
	ui_put(r, "<br><span class=\"note\">%L new commit(s), %L changed file(s) not committed</span></td><td>",
	       x->commits, x->dirty_files);
	ui_put_size(r, x->bytes);
	ui_put(r, "</td><td>");
	ui_put_time(r, x->created_at_ms);
	ui_put(r, "</td><td>");
	if (x->trashed_at_ms)
		ui_put(r, "in the trash");
	else if (!strcmp(x->kind, "none"))
		ui_put(r, "nothing to apply");
	else if (x->applied_count) {
		ui_put(r, "applied %L time(s), last ", x->applied_count);
		ui_put_time(r, x->applied_at_ms);
	} else
		ui_put(r, "<strong>not applied</strong>");
	ui_put(r, "</td></tr>");
}

void ui_view_exports(struct ui_req *r, const char *id)
{
	(void)id;
	ui_page_begin(r, 200, "Saved work", "exports", 1);
	ui_put(r, "<p class=\"note\">What sandboxes on a cloned repository saved (at a checkpoint, at destroy or at "
	          "expiry). Nothing reaches your repository until you apply it, here or with "
	          "<code>chat2sbx export apply</code>.</p>");
	struct export_record *rows = NULL;
	size_t n = 0;
	struct cp_error *err = NULL;
	if (store_export_list(r->ui->deps.store, NULL, &rows, &n, &err) < 0) {
		ui_put(r, "<div class=\"result error\"><p>%s</p></div>", err->message);
		cp_error_free(err);
		ui_page_end(r);
		return;
	}
	if (!n)
		ui_put(r, "<p class=\"note\">No saved work yet. A sandbox on a cloned repository saves with "
		          "sandbox_export, and when it is destroyed or expires.</p>");
	else
		ui_put(r, "<table class=\"exports\"><thead><tr><th>Saved work</th><th>Sandbox</th><th>Workspace and "
		          "repository</th><th>Branches</th><th>Size</th><th>Saved</th><th>Applied</th></tr></thead>"
		          "<tbody>");
	for (size_t i = n; i-- > 0;) { /* newest first */
		struct export_record *x = &rows[i];
		struct workspace_record w = {0};
		struct json_object *m = NULL;
		struct cp_error *e = NULL;
		if (store_workspace_get(r->ui->deps.store, x->workspace_id, &w, &e) < 0)
			cp_error_free(e), e = NULL;
		if (export_manifest_json(x, &m, &e) < 0)
			cp_error_free(e), m = NULL;
		ui_put_export_row(r, x, w.path, m);
		json_object_put(m);
		workspace_record_clear(&w);
		export_record_clear(x);
	}
	if (n)
		ui_put(r, "</tbody></table>");
	free(rows);
	ui_page_end(r);
}

void ui_put_export_detail(struct ui_req *r, const struct export_record *x, struct json_object *m)
{
	ui_put(r,
	       "<dl class=\"facts\"><dt>Saved work</dt><dd><code>%s</code> (%s, %s)</dd><dt>Sandbox</dt><dd><a "
	       "href=\"/ui/sandboxes/%s\"><code>%s</code></a></dd><dt>Workspace</dt><dd><code>%s</code></dd>"
	       "<dt>From</dt><dd><code>%s</code></dd><dt>Saved</dt><dd>",
	       x->id, x->kind, x->reason, x->sandbox_id, x->sandbox_id, x->workspace_id,
	       str(m, "host_path") ? str(m, "host_path") : "—");
	ui_put_time(r, x->created_at_ms);
	ui_put(r, "</dd><dt>Size</dt><dd>");
	ui_put_size(r, x->bytes);
	if (num(m, "thin"))
		ui_put(r, " (builds on the approved repository's commits)");
	ui_put(r, "</dd><dt>Stored in</dt><dd><code>%s</code></dd>", x->path);
	if (x->message)
		ui_put(r, "<dt>Message</dt><dd>%s</dd>", x->message);
	ui_put(r, "<dt>Applied</dt><dd>%L time(s)", x->applied_count);
	if (x->applied_count) {
		ui_put(r, ", last ");
		ui_put_time(r, x->applied_at_ms);
	}
	ui_put(r, "</dd>");
	if (x->trashed_at_ms) {
		ui_put(r, "<dt>Trash</dt><dd>moved to the trash ");
		ui_put_time(r, x->trashed_at_ms);
		ui_put(r, " (it can still be applied)</dd>");
	}
	if (str(m, "shares_bundle_of"))
		ui_put(
		    r,
		    "<dt>Shared</dt><dd>its bundle is <a href=\"/ui/exports/%s\"><code>%s</code></a>'s (a hard link: "
		    "nothing new was copied; deleting either keeps the other whole)</dd>",
		    str(m, "shares_bundle_of"), str(m, "shares_bundle_of"));
	ui_put(r, "</dl>");
	if (!strcmp(x->kind, "none"))
		ui_put(r, "<p class=\"note\">Nothing new since the sandbox was made: no commit, branch or change.</p>");
	struct json_object *refs = arr(m, "refs");
	for (size_t i = 0; refs && i < json_object_array_length(refs); i++) {
		struct json_object *e = json_object_array_get_idx(refs, i);
		const char *kind = str(e, "kind") ? str(e, "kind") : "?";
		if (!strcmp(kind, "snapshot"))
			continue;
		const char *host = str(e, "host_ref");
		int64_t new_commits = num(e, "new_commits");
		char tip[13];
		snprintf(tip, sizeof(tip), "%s", str(e, "oid") ? str(e, "oid") : "");
		ui_put(r,
		       "<section class=\"ref\" data-kind=\"%s\"><h2>%s <code class=\"branch\">%s</code></h2><p>→ "
		       "<code>%s</code> at <code>%s</code>%R</p>",
		       kind, kind, short_name(str(e, "name")), host ? host : "(not applied: the name collides)", tip,
		       new_commits ? "" : ", no new commit");
		struct json_object *commits = arr(e, "commits"), *files = arr(e, "files");
		size_t nc = commits ? json_object_array_length(commits) : 0;
		if (nc) {
			ui_put(r, "<ul class=\"commits\">");
			for (size_t j = 0; j < nc; j++) {
				struct json_object *c = json_object_array_get_idx(commits, j);
				char short_oid[13];
				snprintf(short_oid, sizeof(short_oid), "%s", str(c, "oid") ? str(c, "oid") : "");
				ui_put(r, "<li><code>%s</code> <span class=\"subject\">%s</span></li>", short_oid,
				       str(c, "subject"));
			}
			ui_put(r, "</ul>");
		}
		if (new_commits > (int64_t)nc)
			ui_put(r, "<p class=\"note\">… %R%L commits in all</p>",
			       num(m, "commits_partial") ? "at least " : "", new_commits);
		size_t nf = files ? json_object_array_length(files) : 0;
		if (nf) {
			ui_put(r, "<h3>Files changed</h3><ul class=\"files\">");
			for (size_t j = 0; j < nf; j++)
				ui_put(r, "<li><code>%s</code></li>",
				       json_object_get_string(json_object_array_get_idx(files, j)));
			ui_put(r, "</ul>");
		}
		ui_put(r, "</section>");
	}
	struct json_object *snap = NULL;
	if (m && json_object_object_get_ex(m, "snapshot", &snap) && str(snap, "oid")) {
		ui_put(r,
		       "<section class=\"ref\" data-kind=\"snapshot\"><h2>Uncommitted and untracked changes (%L "
		       "file(s))</h2><p>→ <code>refs/remotes/chat2sbx/%s/uncommitted</code></p>",
		       num(snap, "file_count"), x->sandbox_id);
		struct json_object *files = arr(snap, "files");
		if (files && json_object_array_length(files)) {
			ui_put(r, "<ul class=\"files\">");
			for (size_t j = 0; j < json_object_array_length(files); j++) {
				struct json_object *f = json_object_array_get_idx(files, j);
				ui_put(r, "<li><code>%s</code> <code>%s</code></li>",
				       str(f, "status") ? str(f, "status") : "?", str(f, "path"));
			}
			ui_put(r, "</ul>");
		}
		ui_put(r, "</section>");
	}
	if (!strcmp(x->kind, "git"))
		ui_put(r,
		       "<p><a class=\"button\" data-action=\"apply\" href=\"/ui/exports/%s/apply\">Apply to the "
		       "repository…</a> <span class=\"note\">or in a terminal: <code>chat2sbx export apply "
		       "%s</code></span></p>",
		       x->id, x->id);
	else if (!strcmp(x->kind, "tar"))
		ui_put(r,
		       "<p class=\"note\">A plain copy (%L entries; its source was not a git repository). Write it to "
		       "a new directory in a terminal: <code>chat2sbx export apply %s --to DIR</code></p>",
		       num(m, "archive_entries"), x->id);
}

/* Loads export id's row for a view; on failure answers the error page and
 * returns -1. */
static int load(struct ui_req *r, const char *id, struct export_record *x)
{
	if (!id_valid(id, "exp_")) {
		ui_page_message(r, 404, "No such saved work",
		                "That is not an export id (exp_ followed by its letters); pick one on the Saved work "
		                "page.",
		                "/ui/exports");
		return -1;
	}
	struct cp_error *err = NULL;
	if (store_export_get(r->ui->deps.store, id, x, &err) < 0) {
		ui_page_error(r, err, "/ui/exports");
		cp_error_free(err);
		return -1;
	}
	return 0;
}

void ui_view_export(struct ui_req *r, const char *id)
{
	struct export_record x = {0};
	if (load(r, id, &x) < 0)
		return;
	struct json_object *m = NULL;
	struct cp_error *err = NULL;
	if (export_manifest_json(&x, &m, &err) < 0) {
		ui_page_error(r, err, "/ui/exports");
		cp_error_free(err);
		export_record_clear(&x);
		return;
	}
	ui_page_begin(r, 200, "Saved work", "exports", 1);
	ui_put_export_detail(r, &x, m);
	ui_put(r, "<p><a href=\"/ui/exports\">All saved work</a></p>");
	ui_page_end(r);
	json_object_put(m);
	export_record_clear(&x);
}

void ui_view_export_confirm(struct ui_req *r, const char *id)
{
	struct export_record x = {0};
	if (load(r, id, &x) < 0)
		return;
	struct workspace_record w = {0};
	struct json_object *m = NULL;
	struct cp_error *err = NULL;
	if (store_workspace_get(r->ui->deps.store, x.workspace_id, &w, &err) < 0 ||
	    export_manifest_json(&x, &m, &err) < 0) {
		ui_page_error(r, err, "/ui/exports");
		cp_error_free(err);
		workspace_record_clear(&w);
		export_record_clear(&x);
		return;
	}
	ui_page_begin(r, 200, "Apply saved work?", "exports", 0);
	if (strcmp(x.kind, "git") != 0) {
		ui_put(
		    r,
		    "<div class=\"result error\" role=\"status\"><p>%s</p></div><p><a href=\"/ui/exports/%s\">Back</a>"
		    "</p>",
		    !strcmp(x.kind, "tar") ? "This saved work is a plain copy, not git history: the page does not "
		                             "write it. In a terminal: chat2sbx export apply ID --to DIR."
		                           : "This saved work holds nothing to apply.",
		    x.id);
		goto out;
	}
	ui_put(r,
	       "<p>This fetches the saved work of sandbox <code>%s</code> into the approved repository "
	       "<code>%s</code>, under <code>refs/remotes/chat2sbx/%s/</code> only:</p><ul class=\"refs\">",
	       x.sandbox_id, w.path, x.sandbox_id);
	struct json_object *refs = arr(m, "refs");
	for (size_t i = 0; refs && i < json_object_array_length(refs); i++) {
		struct json_object *e = json_object_array_get_idx(refs, i);
		if (str(e, "host_ref"))
			ui_put(r, "<li><code>%s</code></li>", str(e, "host_ref"));
		else
			ui_put(r, "<li>%s <code>%s</code> is not applied: its name collides with chat2sbx's own</li>",
			       str(e, "kind"), short_name(str(e, "name")));
	}
	ui_put(r, "</ul><p>Your working tree, index, branches, HEAD and config are not touched; applying again "
	          "changes nothing. Afterwards the page shows the <code>git log</code> and <code>git merge</code> "
	          "commands to look at the work and take it.</p>");
	char action[96];
	snprintf(action, sizeof(action), "/ui/exports/%s/apply", x.id);
	ui_form_begin(r, action);
	ui_put(r,
	       "<button type=\"submit\" data-action=\"confirm\">Apply to %s</button> <a href=\"/ui/exports/%s\">Cancel"
	       "</a></form>",
	       w.path, x.id);
out:
	ui_page_end(r);
	json_object_put(m);
	workspace_record_clear(&w);
	export_record_clear(&x);
}

void ui_put_apply_result(struct ui_req *r, const char *id, const struct export_apply_result *res)
{
	char *summary = export_apply_summary(id, res);
	ui_put(r, "<div class=\"result ok\" role=\"status\"><pre class=\"summary\">%s</pre>", summary);
	free(summary);
	ui_put(r, "<p>Next, in a terminal:</p><pre class=\"commands\">%s</pre></div>", res->next_steps);
}

void ui_do_export_apply(struct ui_req *r, const char *id)
{
	struct export_record x = {0};
	if (load(r, id, &x) < 0)
		return;
	export_record_clear(&x);
	struct export_apply_result res = {0};
	struct cp_error *err = NULL;
	/* Writes the audit row export.apply (actor ui) itself. */
	if (export_apply_as(r->ui->deps.cfg, r->ui->deps.store, "ui", id, NULL, &res, &err) < 0) {
		ui_page_error(r, err, "/ui/exports");
		cp_error_free(err);
		export_apply_result_clear(&res);
		return;
	}
	ui_page_begin(r, 200, "Applied", "exports", 0);
	ui_put_apply_result(r, id, &res);
	ui_put(r, "<p><a href=\"/ui/exports/%s\">Back to the saved work</a></p>", id);
	ui_page_end(r);
	export_apply_result_clear(&res);
}
