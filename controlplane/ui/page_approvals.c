/* page_approvals.c: approvals on the page (docs/ui.md, "Approvals"): the
 * pending ones with the path as requested and as resolved, the decided ones,
 * a confirmation that shows the path again, and the decision itself, made
 * by the same functions as `chat2sbx approval approve|reject`
 * (workspace_approval_approve, store_approval_reject), so a decision made
 * here is the same stored decision. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/id.h"
#include "../policy/policy.h"
#include "../store/store.h"
#include "../workspace/workspace.h"
#include "ui_internal.h"

static const char *asked_by(const char *requested_by)
{
	return requested_by && !strcmp(requested_by, "mcp")   ? "the model (sandbox_create)"
	       : requested_by && !strcmp(requested_by, "cli") ? "the command line"
	                                                      : requested_by;
}

/* Whose folder it is (migration 0018): this machine, or a node's name. */
static const char *machine_of(const struct approval_record *a)
{
	return !a->node || !strcmp(a->node, STORE_NODE_LOCAL) ? "this machine" : a->node;
}

static const char *mode_words(const char *mode)
{
	return mode && !strcmp(mode, "direct")
	           ? "direct: the sandbox reads and writes this folder itself"
	           : "clone: the sandbox works on a copy; its work comes back as saved work";
}

void ui_put_approvals(struct ui_req *r, int pending_only)
{
	struct approval_record *rows = NULL;
	size_t n = 0;
	struct cp_error *err = NULL;
	if (store_approval_list(r->ui->deps.store, &rows, &n, &err) < 0) {
		ui_put(r, "<div class=\"result error\"><p>%s</p></div>", err->message);
		cp_error_free(err);
		return;
	}
	size_t pending = 0;
	for (size_t i = 0; i < n; i++)
		pending += rows[i].status == APPROVAL_PENDING;
	ui_put(r, "<section aria-labelledby=\"pending-h\"><h2 id=\"pending-h\">Waiting for you (%z)</h2>", pending);
	if (!pending)
		ui_put(r, "<p class=\"note\">No approval is waiting. When the model asks for a folder of this machine, "
		          "it shows up here.</p>");
	else
		ui_put(
		    r,
		    "<table class=\"approvals\"><thead><tr><th>Folder as asked</th><th>Resolved to</th>"
		    "<th>Machine</th><th>Mode</th><th>Asked by</th><th>When</th><th>Decide</th></tr></thead><tbody>");
	for (size_t i = 0; i < n; i++) {
		const struct approval_record *a = &rows[i];
		if (a->status != APPROVAL_PENDING)
			continue;
		ui_put(r,
		       "<tr id=\"%s\" data-status=\"pending\"><td><code>%s</code></td><td><code>%s</code></td>"
		       "<td>%s</td><td>%s</td><td>%s</td><td>",
		       a->id, a->host_path, a->real_path, machine_of(a), a->mode, asked_by(a->requested_by));
		ui_put_time(r, a->requested_at_ms);
		ui_put(
		    r,
		    "</td><td class=\"actions\"><a class=\"button\" data-action=\"approve\" "
		    "href=\"/ui/approvals/%s/approve\">Approve…</a> <a class=\"button danger\" data-action=\"reject\" "
		    "href=\"/ui/approvals/%s/reject\">Reject…</a></td></tr>",
		    a->id, a->id);
	}
	if (pending)
		ui_put(r, "</tbody></table>");
	ui_put(r, "</section>");
	if (!pending_only && n > pending) {
		ui_put(r,
		       "<section aria-labelledby=\"decided-h\"><h2 id=\"decided-h\">Decided</h2><table "
		       "class=\"approvals\"><thead><tr><th>Folder</th><th>Mode</th><th>Decision</th><th>Workspace</th>"
		       "<th>Decided</th></tr></thead><tbody>");
		for (size_t i = 0; i < n; i++) {
			const struct approval_record *a = &rows[i];
			if (a->status == APPROVAL_PENDING)
				continue;
			const char *st = approval_status_to_string(a->status);
			ui_put(r,
			       "<tr id=\"%s\" "
			       "data-status=\"%s\"><td><code>%s</code></td><td>%s</td><td>%s</td><td>%s</td><td>",
			       a->id, st, a->real_path, a->mode, st, a->workspace_id ? a->workspace_id : "—");
			ui_put_time(r, a->decided_at_ms);
			ui_put(r, "</td></tr>");
		}
		ui_put(r, "</tbody></table></section>");
	}
	for (size_t i = 0; i < n; i++)
		approval_record_clear(&rows[i]);
	free(rows);
}

void ui_view_approvals(struct ui_req *r, const char *id)
{
	(void)id;
	ui_page_begin(r, 200, "Approvals", "approvals", 1);
	ui_put(r, "<p class=\"note\">A sandbox sees a folder of this machine only after you approve it here or with "
	          "<code>chat2sbx approval approve</code>.</p>");
	ui_put_approvals(r, 0);
	ui_page_end(r);
}

/* "approve" or "reject", from the request's path (…/ID/approve). */
static const char *verb_of(const struct ui_req *r)
{
	const char *slash = strrchr(r->in->path, '/');
	return slash && !strcmp(slash, "/approve") ? "approve" : "reject";
}

/* Loads approval id for a decision; on failure answers the error page
 * and returns -1. */
static int load(struct ui_req *r, const char *id, struct approval_record *a)
{
	struct cp_error *err = NULL;
	if (!id_valid(id, "approval_")) {
		ui_page_message(r, 404, "No such approval",
		                "That is not an approval id (approval_ followed by its letters); pick one on the "
		                "Approvals page.",
		                "/ui/approvals");
		return -1;
	}
	if (store_approval_get(r->ui->deps.store, id, a, &err) < 0) {
		ui_page_error(r, err, "/ui/approvals");
		cp_error_free(err);
		return -1;
	}
	if (a->status != APPROVAL_PENDING) {
		char text[300];
		snprintf(text, sizeof(text), "This approval was already %s; nothing was changed.",
		         approval_status_to_string(a->status));
		ui_page_message(r, 409, "Already decided", text, "/ui/approvals");
		approval_record_clear(a);
		return -1;
	}
	return 0;
}

void ui_view_approval_confirm(struct ui_req *r, const char *id)
{
	struct approval_record a = {0};
	if (load(r, id, &a) < 0)
		return;
	const int approve = !strcmp(verb_of(r), "approve");
	ui_page_begin(r, 200, approve ? "Approve a folder?" : "Reject a folder?", "approvals", 0);
	ui_put(r,
	       "<dl class=\"facts\"><dt>Folder as asked</dt><dd><code>%s</code></dd><dt>Resolved to</dt>"
	       "<dd><code>%s</code></dd><dt>Machine</dt><dd>%s</dd><dt>Mode</dt><dd>%s</dd><dt>Asked by</dt>"
	       "<dd>%s</dd><dt>When</dt><dd>",
	       a.host_path, a.real_path, machine_of(&a), mode_words(a.mode), asked_by(a.requested_by));
	ui_put_time(r, a.requested_at_ms);
	ui_put(r, "</dd></dl>");
	if (approve && !strcmp(a.mode, "direct"))
		ui_put(r, "<p class=\"warning\">%s</p>", policy_direct_note_for(a.node));
	char action[160];
	snprintf(action, sizeof(action), "/ui/approvals/%s/%s", a.id, approve ? "approve" : "reject");
	ui_form_begin(r, action);
	if (approve)
		ui_put(r, "<button type=\"submit\" data-action=\"confirm\">Approve %s access to %s</button>", a.mode,
		       a.real_path);
	else
		ui_put(
		    r,
		    "<button type=\"submit\" class=\"danger\" data-action=\"confirm\">Reject %s access to %s</button>",
		    a.mode, a.real_path);
	ui_put(r, " <a href=\"/ui/approvals\">Cancel</a></form>");
	ui_page_end(r);
	approval_record_clear(&a);
}

void ui_do_approval(struct ui_req *r, const char *id)
{
	struct approval_record a = {0};
	if (load(r, id, &a) < 0)
		return;
	approval_record_clear(&a);
	const int approve = !strcmp(verb_of(r), "approve");
	struct cp_error *err = NULL;
	int rc = approve ? workspace_approval_approve(r->ui->deps.cfg, r->ui->deps.store, id, &a, &err)
	                 : store_approval_reject(r->ui->deps.store, id, r->now_ms, &a, &err);
	ui_audit(r, approve ? "approval.approve" : "approval.reject", id, NULL, err);
	if (rc < 0) {
		ui_page_error(r, err, "/ui/approvals");
		cp_error_free(err);
		return;
	}
	ui_page_begin(r, 200, approve ? "Approved" : "Rejected", "approvals", 0);
	if (a.status == APPROVAL_APPROVED)
		ui_put(r,
		       "<div class=\"result ok\" role=\"status\"><p>Approved <code>%s</code> (%s) as workspace "
		       "<code>%s</code>.</p><p>The model can now call sandbox_create with the same workspace_path and "
		       "workspace_mode, or with workspace_id %s.</p></div>",
		       a.real_path, a.mode, a.workspace_id, a.workspace_id);
	else
		ui_put(r,
		       "<div class=\"result ok\" role=\"status\"><p>Rejected <code>%s</code> (%s): it will not be "
		       "mounted; the decision is kept.</p></div>",
		       a.real_path, a.mode);
	ui_put(r, "<p><a href=\"/ui/approvals\">Back to approvals</a></p>");
	ui_page_end(r);
	approval_record_clear(&a);
}
