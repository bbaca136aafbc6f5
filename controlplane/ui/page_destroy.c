/* page_destroy.c: Destroy on the page (docs/ui.md, "Sandboxes"): a
 * confirmation that explains the saved-work rule, a second confirmation
 * before a force, and the destroy itself, which is exactly `chat2sbx
 * sandbox destroy ID [--force]` (lifecycle_sandbox_destroy_person: a
 * clone's work is saved first as an export; a failed save removes nothing
 * unless forced; force discards the unsaved work). */
#include <stdio.h>
#include <string.h>

#include "../lifecycle/lifecycle.h"
#include "ui_internal.h"

enum ui_destroy_step ui_destroy_step_of(const struct ui_req *r)
{
	const char *force = ui_form(r, "force"), *again = ui_form(r, "confirm2");
	if (!force || strcmp(force, "on") != 0)
		return UI_DESTROY_PLAIN;
	return again && !strcmp(again, "yes") ? UI_DESTROY_FORCE : UI_DESTROY_ASK_AGAIN;
}

/* Loads the row of id for a confirmation; on failure answers the error
 * page and returns -1. */
static int load(struct ui_req *r, const char *id, struct sandbox_record *s, struct workspace_record *w)
{
	struct cp_error *err = NULL;
	if (!ui_sandbox_id_ok(r, id))
		return -1;
	if (store_sandbox_get(r->ui->deps.store, id, s, &err) < 0) {
		ui_page_error(r, err, "/ui/sandboxes");
		cp_error_free(err);
		return -1;
	}
	if (s->status == SANDBOX_REMOVED) {
		ui_page_message(r, 409, "Already removed", "This sandbox was removed already; nothing was changed.",
		                "/ui/sandboxes");
		sandbox_record_clear(s);
		return -1;
	}
	if (store_workspace_get(r->ui->deps.store, s->workspace_id, w, &err) < 0) {
		cp_error_free(err); /* the rule is still worded, for a clone */
		*w = (struct workspace_record){0};
	}
	return 0;
}

/* The saved-work rule for a sandbox whose workspace has mode (NULL when
 * unknown). */
static void put_rule(struct ui_req *r, const char *mode)
{
	if (mode && strcmp(mode, "clone") != 0) {
		ui_put(r,
		       "<p>Its workspace (%s) lives on this machine and is kept: nothing needs saving. The container "
		       "and everything outside /workspace go.</p>",
		       mode);
		return;
	}
	ui_put(r, "<p>It works on a copy (clone mode). Its work is <strong>saved first</strong> as an export "
	          "(Saved work), which you can apply to your repository later. If that save fails, "
	          "<strong>nothing is removed</strong> and you are told why.</p><p><strong>Force</strong> removes it "
	          "even when the save fails: then the work not saved before is <strong>lost</strong>.</p>");
}

void ui_view_destroy_confirm(struct ui_req *r, const char *id)
{
	struct sandbox_record s = {0};
	struct workspace_record w = {0};
	if (load(r, id, &s, &w) < 0)
		return;
	int unsaved = LIFECYCLE_UNSAVED_NONE;
	if (r->ui->deps.lc)
		lifecycle_sandboxes_unsaved(r->ui->deps.lc, &s, 1, &unsaved);
	ui_page_begin(r, 200, "Destroy a sandbox?", "sandboxes", 0);
	ui_put(r,
	       "<dl class=\"facts\"><dt>Sandbox</dt><dd><code>%s</code> (%s)</dd><dt>Workspace</dt><dd><code>%s</code>"
	       " (%s)",
	       s.id, sandbox_status_to_string(s.status), s.workspace_id, w.mode ? w.mode : "unknown");
	if (w.host_path)
		ui_put(r, " of <code>%s</code>", w.host_path);
	ui_put(r, "</dd></dl>");
	put_rule(r, w.mode);
	if (unsaved == LIFECYCLE_UNSAVED_YES)
		ui_put(r, "<p class=\"warning\">It holds work that is not in an export yet.</p>");
	char action[160];
	snprintf(action, sizeof(action), "/ui/sandboxes/%s/destroy", s.id);
	ui_form_begin(r, action);
	ui_put(r,
	       "<p><label><input type=\"checkbox\" name=\"force\"> Force: remove it even if its work cannot be "
	       "saved (asks once more)</label></p><button type=\"submit\" class=\"danger\" "
	       "data-action=\"confirm\">Destroy %s</button> <a href=\"/ui/sandboxes/%s\">Cancel</a></form>",
	       s.id, s.id);
	ui_page_end(r);
	sandbox_record_clear(&s);
	workspace_record_clear(&w);
}

/* force=on without confirm2=yes: asks again; nothing changes. */
static void ask_again(struct ui_req *r, const char *id)
{
	struct sandbox_record s = {0};
	struct workspace_record w = {0};
	if (load(r, id, &s, &w) < 0)
		return;
	ui_page_begin(r, 200, "Force the destroy?", "sandboxes", 0);
	ui_put(r,
	       "<p class=\"warning\">Force removes <code>%s</code> even when its work cannot be saved: whatever was "
	       "not saved is <strong>lost for good</strong>. Its work is still tried to be saved first.</p>",
	       s.id);
	char action[160];
	snprintf(action, sizeof(action), "/ui/sandboxes/%s/destroy", s.id);
	ui_form_begin(r, action);
	ui_put(r,
	       "<input type=\"hidden\" name=\"force\" value=\"on\"><input type=\"hidden\" name=\"confirm2\" "
	       "value=\"yes\"><button type=\"submit\" class=\"danger\" data-action=\"confirm\">Destroy %s, even "
	       "discarding unsaved work</button> <a href=\"/ui/sandboxes/%s\">Cancel</a></form>",
	       s.id, s.id);
	ui_page_end(r);
	sandbox_record_clear(&s);
	workspace_record_clear(&w);
}

void ui_do_destroy(struct ui_req *r, const char *id)
{
	enum ui_destroy_step step = ui_destroy_step_of(r);
	if (step == UI_DESTROY_ASK_AGAIN) {
		ask_again(r, id);
		return;
	}
	if (!ui_sandbox_id_ok(r, id))
		return;
	char back[160];
	snprintf(back, sizeof(back), "/ui/sandboxes/%s", id);
	struct lifecycle_destroy_result res = {0};
	struct cp_error *err = NULL;
	int rc = lifecycle_sandbox_destroy_person(r->ui->deps.lc, id, step == UI_DESTROY_FORCE, "ui", &res, &err);
	ui_audit(r, "sandbox.destroy", id, id, rc < 0 ? err : NULL);
	if (rc < 0) {
		ui_page_begin(r, res.refused ? 409 : 500, "Not destroyed", "sandboxes", 0);
		ui_put(r, "<div class=\"result error\" role=\"status\"><p>%s</p>", err->message);
		if (res.refused)
			ui_put(r, "<p>Nothing was removed. To remove it anyway, discarding the work that could not be "
			          "saved, destroy it again with Force.</p>");
		ui_put(r, "</div><p><a href=\"%s\">Back to the sandbox</a></p>", back);
		ui_page_end(r);
		cp_error_free(err);
		lifecycle_destroy_result_clear(&res);
		return;
	}
	ui_page_begin(r, 200, "Destroyed", "sandboxes", 0);
	if (rc == 1) {
		ui_put(
		    r,
		    "<div class=\"result ok\" role=\"status\"><p>Removed the orphan container <code>%s</code> (it had "
		    "no registry row).</p>",
		    id);
	} else {
		ui_put(
		    r,
		    "<div class=\"result ok\" role=\"status\"><p>Destroyed <code>%s</code> (workspace <code>%s</code> "
		    "kept).</p>",
		    res.sandbox.id, res.sandbox.workspace_id);
		const struct export_record *x = &res.save.export;
		if (x->id)
			ui_put(r,
			       "<p>Its work is saved as export <a data-export=\"%s\" "
			       "href=\"/ui/exports/%s\"><code>%s</code>"
			       "</a> (%s).</p>",
			       x->id, x->id, x->id,
			       x->kind && !strcmp(x->kind, "git")
			           ? "its branches and commits, to apply to your repository"
			       : x->kind && !strcmp(x->kind, "tar") ? "a copy of its files"
			                                            : "nothing new since it was made");
	}
	ui_put(r, "</div>");
	if (res.lost)
		ui_put(r, "<p class=\"warning\">%s</p>", res.lost);
	if (res.note)
		ui_put(r, "<p class=\"note\">%s</p>", res.note);
	ui_put(r, "<p><a href=\"/ui/sandboxes\">Back to the sandboxes</a></p>");
	ui_page_end(r);
	lifecycle_destroy_result_clear(&res);
}
