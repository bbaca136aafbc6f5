/* test_lifecycle_removal.c: no path removes a clone sandbox's container
 * without a saved export or an explicit force (issue 14). Against the fake
 * engine in route mode (tests/fake_engine.c), whose containers' helpers
 * never answer (the attach stream closes at once), every removal path is
 * walked: sandbox_destroy and the CLI's destroy (lifecycle_sandbox_destroy_ex),
 * idle expiry and its retry of an expired sandbox, the cleanup of a failed
 * sandbox, reconcile at start, and the guarded removal every path uses
 * (create's undo, the warm pool), for every row state; each checks the
 * exact DELETE /containers requests the engine received. Then the removal
 * put on record (issue 13 item 4): with the registry read-only (a full
 * disk, PRAGMA query_only as test_lifecycle_undo.c) no path removes
 * anything, and a removal whose final write failed (a trigger refuses
 * 'removed') stays 'removing', is offered to no call, and is finished by
 * the maintenance pass or reconcile. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "lifecycle_fixture.h"
#include "store/store_internal.h"

static char ws_dir[128];

static const struct fake_route routes[] = {
    {"GET", "/version", {.fixture = "version.http"}},
    {"GET", "/containers/sbx_run/json", {.fixture = "inspect_running.http"}},
    {"GET", "/containers/sbx_man/json", {.fixture = "inspect_running.http"}},
    {"GET", "/containers/sbx_exp/json", {.fixture = "inspect_ok.http"}},  /* exited */
    {"GET", "/containers/sbx_fail/json", {.fixture = "inspect_ok.http"}}, /* exited */
    {"GET",
     "/containers/json?all=1&filters=%7B%22label%22%3A%5B%22org.chat2sbx.registry",
     {.fixture = "list_removal.http"}},
    {"POST", "/attach", {.fixture = "attach_upgrade.http"}}, /* then closed: the helper never answers */
    {"POST", "/start", {.fixture = "start_ok.http"}},
    {"POST", "/stop", {.fixture = "start_ok.http"}},
    {"DELETE", "/containers/sbx_gone", {.fixture = "inspect_missing.http"}}, /* 404: already gone */
    {"DELETE", "/containers/", {.fixture = "remove_ok.http"}},
};

static void add_sandbox(const char *id, const char *ws, const char *status)
{
	struct cp_error *err = NULL;
	struct sandbox_record s = {.id = (char *)id,
	                           .workspace_id = (char *)ws,
	                           .status = sandbox_status_from_string(status),
	                           .container_name = (char *)id,
	                           .image = "img",
	                           .network = 0,
	                           .created_at_ms = clock_now_ms()};
	cr_assert_eq(store_sandbox_insert(fx.store, &s, &err), 0, "%s", err ? err->message : "");
}

static void setup(void)
{
	lc_fixture_init("removal");
	snprintf(ws_dir, sizeof ws_dir, "%s/repo", fx.root);
	mkdir(ws_dir, 0700);
	fx.cfg.max_export_bytes = 1 << 20;
	lc_fixture_start(routes, sizeof(routes) / sizeof(routes[0]));
	struct cp_error *err = NULL;
	struct workspace_record c = {
	    .id = "ws_clone", .mode = "clone", .path = ws_dir, .host_path = ws_dir, .created_at_ms = 1};
	struct workspace_record c2 = {
	    .id = "ws_clone2", .mode = "clone", .path = "/tmp/c2s-none-2", .created_at_ms = 1};
	struct workspace_record c3 = {
	    .id = "ws_clone3", .mode = "clone", .path = "/tmp/c2s-none-3", .created_at_ms = 1};
	struct workspace_record c4 = {
	    .id = "ws_clone4", .mode = "clone", .path = "/tmp/c2s-none-4", .created_at_ms = 1};
	struct workspace_record m = {.id = "ws_man", .mode = "managed", .path = fx.ws_root, .created_at_ms = 1};
	cr_assert_eq(store_workspace_insert(fx.store, &c, &err), 0);
	cr_assert_eq(store_workspace_insert(fx.store, &c2, &err), 0);
	cr_assert_eq(store_workspace_insert(fx.store, &c3, &err), 0);
	cr_assert_eq(store_workspace_insert(fx.store, &c4, &err), 0);
	cr_assert_eq(store_workspace_insert(fx.store, &m, &err), 0);
	add_sandbox("sbx_run", "ws_clone", "running");
	add_sandbox("sbx_exp", "ws_clone2", "expired");
	add_sandbox("sbx_fail", "ws_clone3", "failed");
	add_sandbox("sbx_new", "ws_clone4", "creating");
	add_sandbox("sbx_man", "ws_man", "running");
}

static void teardown(void)
{
	lc_fixture_teardown();
}

TestSuite(removal, .init = setup, .fini = teardown, .timeout = 60);

static const char *status_of(const char *id)
{
	static char buf[32];
	struct sandbox_record s = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(store_sandbox_get(fx.store, id, &s, &err), 0);
	snprintf(buf, sizeof buf, "%s", sandbox_status_to_string(s.status));
	sandbox_record_clear(&s);
	return buf;
}

static int destroy(const char *id, int force, const char *actor, struct lifecycle_destroy_result *res,
                   struct cp_error **err)
{
	struct lifecycle_destroy_options o = {.force = force, .reason = "destroy", .actor = actor, .wait_ms = 5000};
	return lifecycle_sandbox_destroy_ex(fx.lc, id, &o, res, err);
}

Test(removal, need_table)
{
	cr_assert_eq(lifecycle_removal_need_of("clone", SANDBOX_RUNNING), LIFECYCLE_REMOVAL_NEEDS_SAVE);
	cr_assert_eq(lifecycle_removal_need_of("clone", SANDBOX_FAILED), LIFECYCLE_REMOVAL_NEEDS_SAVE);
	cr_assert_eq(lifecycle_removal_need_of("clone", SANDBOX_EXPIRED), LIFECYCLE_REMOVAL_NEEDS_SAVE);
	cr_assert_eq(lifecycle_removal_need_of("clone", SANDBOX_CREATING), LIFECYCLE_REMOVAL_FREE);
	cr_assert_eq(lifecycle_removal_need_of("clone", SANDBOX_REMOVED), LIFECYCLE_REMOVAL_FREE);
	cr_assert_eq(lifecycle_removal_need_of("managed", SANDBOX_RUNNING), LIFECYCLE_REMOVAL_FREE);
	cr_assert_eq(lifecycle_removal_need_of("direct", SANDBOX_RUNNING), LIFECYCLE_REMOVAL_FREE);
	cr_assert_eq(lifecycle_removal_need_of(NULL, SANDBOX_RUNNING), LIFECYCLE_REMOVAL_FREE);
}

Test(removal, destroy_by_a_tool_or_the_cli_refuses_without_the_save)
{
	const char *actors[] = {"mcp", "cli"};
	for (int i = 0; i < 2; i++) {
		struct lifecycle_destroy_result res = {0};
		struct cp_error *err = NULL;
		cr_assert_eq(destroy("sbx_run", 0, actors[i], &res, &err), -1);
		cr_assert(res.refused);
		cr_assert(strstr(err->message, "was not removed: its work could not be saved"), "%s", err->message);
		cr_assert(strstr(err->message, "force"), "%s", err->message);
		cp_error_free(err);
		lifecycle_destroy_result_clear(&res);
	}
	cr_assert_eq(fake_count("DELETE", "/containers/"), 0, "no container was removed");
	cr_assert_str_eq(status_of("sbx_run"), "running");
}

Test(removal, the_persons_force_removes_and_says_what_is_lost)
{
	struct lifecycle_destroy_result res = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(destroy("sbx_run", 1, "cli", &res, &err), 0, "%s", err ? err->message : "");
	cr_assert(res.save_failed);
	cr_assert(strstr(res.lost, "were not saved and are gone"), "%s", res.lost);
	cr_assert_null(res.save.export.id);
	cr_assert_eq(fake_count("DELETE", "/containers/sbx_run"), 1);
	cr_assert_str_eq(status_of("sbx_run"), "removed");
	lifecycle_destroy_result_clear(&res);
}

/* The model's force (sandbox_destroy's "force", issue 23): a failed save
 * never removes the clone; the sandbox is stopped and kept for the person,
 * whose own force alone discards it. */
Test(removal, the_models_force_stops_and_keeps_the_unsaved_clone)
{
	struct lifecycle_destroy_result res = {0};
	struct cp_error *err = NULL;
	struct lifecycle_destroy_options o = {.keep_unsaved = 1, .reason = "destroy", .actor = "mcp", .wait_ms = 5000};
	cr_assert_eq(lifecycle_sandbox_destroy_ex(fx.lc, "sbx_run", &o, &res, &err), 0, "%s", err ? err->message : "");
	cr_assert(res.kept);
	cr_assert_not(res.save_failed);
	cr_assert_null(res.lost, "nothing is lost");
	cr_assert(strstr(res.note, "only the person at this machine can discard unsaved work"), "%s", res.note);
	cr_assert(strstr(res.note, "chat2sbx sandbox destroy sbx_run --force"), "%s", res.note);
	cr_assert_eq(fake_count("DELETE", "/containers/sbx_run"), 0, "the container is kept");
	cr_assert_eq(fake_count("POST", "/containers/sbx_run/stop"), 1, "and stopped");
	cr_assert_str_eq(status_of("sbx_run"), "failed");
	cr_assert_str_eq(sandbox_status_to_string(res.sandbox.status), "failed");
	cr_assert(strstr(res.sandbox.failure_reason, "could not be saved"), "%s", res.sandbox.failure_reason);
	lifecycle_destroy_result_clear(&res);
	/* The person's force then removes it. */
	cr_assert_eq(destroy("sbx_run", 1, "cli", &res, &err), 0, "%s", err ? err->message : "");
	cr_assert(res.save_failed);
	cr_assert_eq(fake_count("DELETE", "/containers/sbx_run"), 1);
	cr_assert_str_eq(status_of("sbx_run"), "removed");
	lifecycle_destroy_result_clear(&res);
}

Test(removal, cleanup_of_a_failed_sandbox_needs_the_save_or_force)
{
	struct lifecycle_destroy_result res = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(destroy("sbx_fail", 0, "cli", &res, &err), -1);
	cp_error_freep(&err);
	lifecycle_destroy_result_clear(&res);
	cr_assert_geq(fake_count("POST", "/containers/sbx_fail/start"), 1, "started for the save");
	cr_assert_geq(fake_count("POST", "/containers/sbx_fail/stop"), 1, "and stopped again");
	cr_assert_eq(fake_count("DELETE", "/containers/"), 0);
	cr_assert_str_eq(status_of("sbx_fail"), "failed");
	cr_assert_eq(destroy("sbx_fail", 1, "cli", &res, &err), 0);
	cr_assert_eq(fake_count("DELETE", "/containers/sbx_fail"), 1);
	lifecycle_destroy_result_clear(&res);
}

Test(removal, expiry_stops_instead_and_retries_each_pass)
{
	int64_t later = clock_now_ms() + 10 * LIFECYCLE_IDLE_TIMEOUT_MS;
	struct cp_error *err = NULL;
	cr_assert_eq(lifecycle_expiry_run(fx.lc, later, &err), 1, "only the managed sandbox was removed");
	cr_assert_eq(fake_count("DELETE", "/containers/sbx_run"), 0, "expiry removed no clone container");
	cr_assert_eq(fake_count("DELETE", "/containers/sbx_exp"), 0);
	cr_assert_geq(fake_count("POST", "/containers/sbx_run/stop"), 1, "the idle clone was stopped");
	cr_assert_str_eq(status_of("sbx_run"), "expired");
	struct sandbox_record s = {0};
	cr_assert_eq(store_sandbox_get(fx.store, "sbx_run", &s, &err), 0);
	cr_assert(strstr(s.failure_reason, "could not be saved"), "%s", s.failure_reason);
	sandbox_record_clear(&s);
	/* The expired one from before was retried: started, refused, stopped. */
	cr_assert_geq(fake_count("POST", "/containers/sbx_exp/start"), 1);
	cr_assert_str_eq(status_of("sbx_exp"), "expired");
	/* The managed one expired the ordinary way. */
	cr_assert_str_eq(status_of("sbx_man"), "removed");
	cr_assert_eq(fake_count("DELETE", "/containers/sbx_man"), 1);
	size_t stops = fake_count("POST", "/containers/sbx_run/stop");
	size_t attaches = fake_count("POST", "/containers/sbx_run/attach");
	cr_assert_eq(lifecycle_expiry_run(fx.lc, later + 60000, &err), 0);
	cr_assert_gt(fake_count("POST", "/containers/sbx_run/attach"), attaches, "the next pass tries the save again");
	cr_assert_gt(fake_count("POST", "/containers/sbx_run/stop"), stops);
	cr_assert_eq(fake_count("DELETE", "/containers/sbx_run"), 0);
}

Test(removal, reconcile_removes_only_what_was_never_handed_out)
{
	struct cp_error *err = NULL;
	cr_assert_eq(lifecycle_reconcile(fx.lc, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(fake_count("DELETE", "/containers/cnew"), 1, "a row left creating loses its container");
	cr_assert_eq(fake_count("DELETE", "/containers/crun"), 0, "a running clone's stopped container stays");
	cr_assert_eq(fake_count("DELETE", "/containers/cexp"), 0, "an expired clone's container stays");
	cr_assert_str_eq(status_of("sbx_run"), "failed");
	cr_assert_str_eq(status_of("sbx_exp"), "expired");
}

Test(removal, the_guarded_removal_for_every_row_state)
{
	struct {
		const char *id, *status;
		int removed;
	} cases[] = {
	    {"sbx_new", "creating", 1}, /* never handed out: create's undo */
	    {"sbx_run", "running", 0},  {"sbx_exp", "expired", 0},
	    {"sbx_fail", "failed", 0},  {"sbx_man", "running", 1}, /* managed: the work is on the host */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sandbox_record s = {0};
		struct cp_error *err = NULL;
		cr_assert_eq(store_sandbox_get(fx.store, cases[i].id, &s, &err), 0);
		cr_assert_str_eq(sandbox_status_to_string(s.status), cases[i].status);
		struct lifecycle_destroy_options o = {.reason = "cleanup", .actor = "serve", .wait_ms = 5000};
		struct lifecycle_destroy_result res = {0};
		int r = lifecycle_container_remove_guarded(fx.lc, &s, &o, &res, &err);
		cr_assert_eq(r == 0, cases[i].removed, "%s: %s", cases[i].id, err ? err->message : "removed");
		char path[64];
		snprintf(path, sizeof path, "/containers/%s", cases[i].id);
		cr_assert_eq(fake_count("DELETE", path), (size_t)cases[i].removed, "%s", cases[i].id);
		/* Put on record before the engine was asked; the caller writes the end. */
		cr_assert_str_eq(status_of(cases[i].id), cases[i].removed ? "removing" : cases[i].status);
		cp_error_free(err);
		lifecycle_destroy_result_clear(&res);
		sandbox_record_clear(&s);
	}
	/* A removed row (its save or force came first) needs nothing more. */
	struct sandbox_record gone = {
	    .id = "sbx_run", .workspace_id = "ws_clone", .status = SANDBOX_REMOVED, .container_name = "sbx_run"};
	struct lifecycle_destroy_options o = {.reason = "cleanup", .actor = "serve"};
	struct lifecycle_destroy_result res = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(lifecycle_container_remove_guarded(fx.lc, &gone, &o, &res, &err), 0);
	lifecycle_destroy_result_clear(&res);
}

static void registry_writable(int yes)
{
	struct cp_error *err = NULL;
	cr_assert_eq(store_exec(fx.store, yes ? "PRAGMA query_only = 0" : "PRAGMA query_only = 1", "test", &err), 0);
}

static void final_write_refused(int yes)
{
	struct cp_error *err = NULL;
	cr_assert_eq(store_exec(fx.store,
	                        yes ? "CREATE TRIGGER no_room BEFORE UPDATE OF status ON sandboxes WHEN NEW.status = "
	                              "'removed' BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
	                            : "DROP TRIGGER no_room",
	                        "test", &err),
	             0, "%s", err ? err->message : "");
}

Test(removal, a_registry_that_cannot_write_removes_nothing)
{
	registry_writable(0);
	const char *actors[] = {"mcp", "cli"};
	for (int i = 0; i < 2; i++) {
		struct lifecycle_destroy_result res = {0};
		struct cp_error *err = NULL;
		cr_assert_eq(destroy("sbx_man", 0, actors[i], &res, &err), -1);
		cr_assert_eq(err->code, CP_ERR_UNAVAILABLE);
		cr_assert(strstr(err->message, "was not removed: its removal could not be put on record"), "%s",
		          err->message);
		cr_assert(strstr(err->message, "Free space"), "%s", err->message);
		cp_error_free(err);
		lifecycle_destroy_result_clear(&res);
	}
	/* The guarded removal (reconcile, the warm pool) and expiry alike. */
	struct sandbox_record s = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(store_sandbox_get(fx.store, "sbx_new", &s, &err), 0);
	struct lifecycle_destroy_options o = {.reason = "cleanup", .actor = "serve"};
	struct lifecycle_destroy_result res = {0};
	cr_assert_eq(lifecycle_container_remove_guarded(fx.lc, &s, &o, &res, &err), -1);
	cr_assert_eq(err->code, CP_ERR_UNAVAILABLE);
	cp_error_freep(&err);
	lifecycle_destroy_result_clear(&res);
	sandbox_record_clear(&s);
	cr_assert_eq(lifecycle_reconcile(fx.lc, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(lifecycle_expiry_run(fx.lc, clock_now_ms() + 10 * LIFECYCLE_IDLE_TIMEOUT_MS, &err), 0);
	cr_assert_eq(fake_count("DELETE", "/containers/"), 0, "no container was removed");
	cr_assert_str_eq(status_of("sbx_man"), "running");
	cr_assert_str_eq(status_of("sbx_new"), "creating", "reconcile retries at the next start");
	registry_writable(1);
	struct lifecycle_destroy_result ok = {0};
	cr_assert_eq(destroy("sbx_man", 0, "cli", &ok, &err), 0, "%s", err ? err->message : "");
	cr_assert_str_eq(status_of("sbx_man"), "removed");
	cr_assert_eq(fake_count("DELETE", "/containers/sbx_man"), 1);
	lifecycle_destroy_result_clear(&ok);
}

Test(removal, a_removal_whose_last_write_failed_is_finished_later)
{
	final_write_refused(1);
	struct lifecycle_destroy_result res = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(destroy("sbx_man", 0, "mcp", &res, &err), -1);
	cr_assert(strstr(err->message, "its container is removed, but the registry could not record it"), "%s",
	          err->message);
	cp_error_freep(&err);
	lifecycle_destroy_result_clear(&res);
	cr_assert_eq(fake_count("DELETE", "/containers/sbx_man"), 1);
	cr_assert_str_eq(status_of("sbx_man"), "removing");

	/* Live for the workspace rule and the count, offered to no call. */
	struct sandbox_record s = {0};
	cr_assert_eq(store_sandbox_get_live_for_workspace(fx.store, "ws_man", &s, &err), 0);
	cr_assert_str_eq(s.id, "sbx_man");
	sandbox_record_clear(&s);
	struct helper_channel *ch = NULL;
	cr_assert_eq(lifecycle_sandbox_channel(fx.lc, "sbx_man", &ch, &err), -1);
	cr_assert_eq(err->code, CP_ERR_CONFLICT);
	cr_assert(strstr(err->message, "is being removed"), "%s", err->message);
	cp_error_freep(&err);

	/* Still refused: the pass removes the container again and waits. */
	cr_assert_eq(lifecycle_removing_run(fx.lc), 1);
	cr_assert_eq(fake_count("DELETE", "/containers/sbx_man"), 2, "a container still there is removed again");
	cr_assert_str_eq(status_of("sbx_man"), "removing");

	final_write_refused(0);
	cr_assert_eq(lifecycle_removing_run(fx.lc), 0);
	cr_assert_str_eq(status_of("sbx_man"), "removed");
	cr_assert_eq(lifecycle_removing_run(fx.lc), 0, "nothing left");
	cr_assert_eq(fake_count("DELETE", "/containers/sbx_man"), 3);
}

Test(removal, removing_rows_are_finished_whether_or_not_the_container_is_there)
{
	struct cp_error *err = NULL;
	struct workspace_record w = {.id = "ws_man2", .mode = "managed", .path = fx.ws_root, .created_at_ms = 1};
	cr_assert_eq(store_workspace_insert(fx.store, &w, &err), 0);
	add_sandbox("sbx_gone", "ws_man2", "running");
	cr_assert_eq(store_sandbox_set_removing(fx.store, "sbx_gone", clock_now_ms(), &err), 0);
	cr_assert_eq(store_sandbox_set_removing(fx.store, "sbx_man", clock_now_ms(), &err), 0);
	/* At the next start: reconcile finishes both (the engine lists
	 * neither; sbx_gone's removal answers 404, which is done too). */
	cr_assert_eq(lifecycle_reconcile(fx.lc, &err), 0, "%s", err ? err->message : "");
	cr_assert_str_eq(status_of("sbx_gone"), "removed");
	cr_assert_str_eq(status_of("sbx_man"), "removed");
	cr_assert_eq(fake_count("DELETE", "/containers/sbx_gone"), 1);
	cr_assert_eq(fake_count("DELETE", "/containers/sbx_man"), 1);
}
