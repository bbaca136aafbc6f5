/* test_lifecycle_reconcile.c: the reconcile decision table (registry state ×
 * engine state → action), one test per row, and the holds that keep expiry
 * from removing a sandbox in the middle of a call. Pure or store-only: no
 * engine is needed. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lifecycle_fixture.h"

static struct lifecycle_reconcile_decision decide(enum lifecycle_row_state row, enum lifecycle_container_state c,
                                                  const char *status, int exit_code)
{
	struct lifecycle_reconcile_decision d;
	memset(&d, 0x5a, sizeof(d)); /* every field must be written */
	lifecycle_reconcile_decide(row, c, status, exit_code, &d);
	return d;
}

Test(reconcile_states, strings_map_to_states)
{
	cr_expect_eq(lifecycle_row_state_of(NULL), LIFECYCLE_ROW_NONE);
	cr_expect_eq(lifecycle_row_state_of("creating"), LIFECYCLE_ROW_CREATING);
	cr_expect_eq(lifecycle_row_state_of("running"), LIFECYCLE_ROW_RUNNING);
	cr_expect_eq(lifecycle_row_state_of("failed"), LIFECYCLE_ROW_FAILED);
	cr_expect_eq(lifecycle_row_state_of("removed"), LIFECYCLE_ROW_REMOVED);
	cr_expect_eq(lifecycle_container_state_of(NULL), LIFECYCLE_CONTAINER_ABSENT);
	cr_expect_eq(lifecycle_container_state_of("running"), LIFECYCLE_CONTAINER_RUNNING);
	cr_expect_eq(lifecycle_container_state_of("restarting"), LIFECYCLE_CONTAINER_RESTARTING);
	const char *stopped[] = {"created", "exited", "dead", "paused", "removing"};
	for (size_t i = 0; i < sizeof(stopped) / sizeof(stopped[0]); i++)
		cr_expect_eq(lifecycle_container_state_of(stopped[i]), LIFECYCLE_CONTAINER_STOPPED, "%s", stopped[i]);
}

/* ---- running rows ---- */

Test(reconcile_table, running_x_running_reattaches)
{
	struct lifecycle_reconcile_decision d =
	    decide(LIFECYCLE_ROW_RUNNING, LIFECYCLE_CONTAINER_RUNNING, "running", 0);
	cr_expect_eq(d.action, LIFECYCLE_RECONCILE_REATTACH);
}

Test(reconcile_table, running_x_absent_fails_with_reason)
{
	struct lifecycle_reconcile_decision d = decide(LIFECYCLE_ROW_RUNNING, LIFECYCLE_CONTAINER_ABSENT, NULL, 0);
	cr_expect_eq(d.action, LIFECYCLE_RECONCILE_MARK_FAILED);
	cr_expect_str_eq(d.reason, "its container no longer exists");
}

Test(reconcile_table, running_x_stopped_fails_with_status_and_exit_code)
{
	struct lifecycle_reconcile_decision d =
	    decide(LIFECYCLE_ROW_RUNNING, LIFECYCLE_CONTAINER_STOPPED, "exited", 137);
	cr_expect_eq(d.action, LIFECYCLE_RECONCILE_MARK_FAILED);
	cr_expect_str_eq(d.reason, "its container is exited (exit code 137)");
}

Test(reconcile_table, running_x_restarting_is_left_to_the_next_call)
{
	struct lifecycle_reconcile_decision d =
	    decide(LIFECYCLE_ROW_RUNNING, LIFECYCLE_CONTAINER_RESTARTING, "restarting", 0);
	cr_expect_eq(d.action, LIFECYCLE_RECONCILE_NOTHING);
	cr_expect(strstr(d.reason, "restarting") != NULL, "%s", d.reason);
}

/* ---- creating rows: serve died mid-create ---- */

Test(reconcile_table, creating_x_absent_fails)
{
	struct lifecycle_reconcile_decision d = decide(LIFECYCLE_ROW_CREATING, LIFECYCLE_CONTAINER_ABSENT, NULL, 0);
	cr_expect_eq(d.action, LIFECYCLE_RECONCILE_MARK_FAILED);
	cr_expect(strstr(d.reason, "stopped while creating") != NULL, "%s", d.reason);
}

Test(reconcile_table, creating_x_any_container_removes_it_and_fails)
{
	enum lifecycle_container_state cs[] = {LIFECYCLE_CONTAINER_RUNNING, LIFECYCLE_CONTAINER_RESTARTING,
	                                       LIFECYCLE_CONTAINER_STOPPED};
	const char *st[] = {"running", "restarting", "created"};
	for (size_t i = 0; i < 3; i++) {
		struct lifecycle_reconcile_decision d = decide(LIFECYCLE_ROW_CREATING, cs[i], st[i], 0);
		cr_expect_eq(d.action, LIFECYCLE_RECONCILE_REMOVE_AND_FAIL, "%s", st[i]);
		cr_expect(strstr(d.reason, "its container was removed") != NULL, "%s", d.reason);
	}
}

/* ---- failed rows: already reported, left for the user's destroy ---- */

Test(reconcile_table, failed_x_anything_does_nothing)
{
	enum lifecycle_container_state cs[] = {LIFECYCLE_CONTAINER_ABSENT, LIFECYCLE_CONTAINER_RUNNING,
	                                       LIFECYCLE_CONTAINER_RESTARTING, LIFECYCLE_CONTAINER_STOPPED};
	for (size_t i = 0; i < 4; i++) {
		struct lifecycle_reconcile_decision d = decide(LIFECYCLE_ROW_FAILED, cs[i], "exited", 1);
		cr_expect_eq(d.action, LIFECYCLE_RECONCILE_NOTHING, "container state %zu", i);
		cr_expect_str_eq(d.reason, "");
	}
}

/* ---- expired rows (issue 14): the stopped container keeps the clone ---- */

Test(reconcile_table, expired_keeps_its_container_and_fails_when_it_is_gone)
{
	cr_expect_eq(lifecycle_row_state_of("expired"), LIFECYCLE_ROW_EXPIRED);
	enum lifecycle_container_state kept[] = {LIFECYCLE_CONTAINER_RUNNING, LIFECYCLE_CONTAINER_RESTARTING,
	                                         LIFECYCLE_CONTAINER_STOPPED};
	for (size_t i = 0; i < 3; i++) {
		struct lifecycle_reconcile_decision d = decide(LIFECYCLE_ROW_EXPIRED, kept[i], "exited", 0);
		cr_expect_eq(d.action, LIFECYCLE_RECONCILE_NOTHING, "container state %zu", i);
	}
	struct lifecycle_reconcile_decision d = decide(LIFECYCLE_ROW_EXPIRED, LIFECYCLE_CONTAINER_ABSENT, NULL, 0);
	cr_expect_eq(d.action, LIFECYCLE_RECONCILE_MARK_FAILED);
	cr_expect(strstr(d.reason, "unsaved work is gone") != NULL, "%s", d.reason);
}

/* ---- removing rows (issue 13 item 4): a removal put on record is finished ---- */

Test(reconcile_table, removing_x_anything_is_finished)
{
	cr_expect_eq(lifecycle_row_state_of("removing"), LIFECYCLE_ROW_REMOVING);
	enum lifecycle_container_state cs[] = {LIFECYCLE_CONTAINER_ABSENT, LIFECYCLE_CONTAINER_RUNNING,
	                                       LIFECYCLE_CONTAINER_RESTARTING, LIFECYCLE_CONTAINER_STOPPED};
	for (size_t i = 0; i < 4; i++) {
		struct lifecycle_reconcile_decision d = decide(LIFECYCLE_ROW_REMOVING, cs[i], i ? "running" : NULL, 0);
		cr_expect_eq(d.action, LIFECYCLE_RECONCILE_FINISH_REMOVAL, "container state %zu", i);
		cr_expect(strstr(d.reason, i ? "its container (running) remained" : "after its container went") != NULL,
		          "%s", d.reason);
	}
}

/* ---- removed rows ---- */

Test(reconcile_table, removed_x_absent_does_nothing)
{
	struct lifecycle_reconcile_decision d = decide(LIFECYCLE_ROW_REMOVED, LIFECYCLE_CONTAINER_ABSENT, NULL, 0);
	cr_expect_eq(d.action, LIFECYCLE_RECONCILE_NOTHING);
}

Test(reconcile_table, removed_x_leftover_container_is_removed)
{
	enum lifecycle_container_state cs[] = {LIFECYCLE_CONTAINER_RUNNING, LIFECYCLE_CONTAINER_RESTARTING,
	                                       LIFECYCLE_CONTAINER_STOPPED};
	for (size_t i = 0; i < 3; i++) {
		struct lifecycle_reconcile_decision d = decide(LIFECYCLE_ROW_REMOVED, cs[i], "running", 0);
		cr_expect_eq(d.action, LIFECYCLE_RECONCILE_REMOVE_CONTAINER, "container state %zu", i);
	}
}

/* ---- no row ---- */

Test(reconcile_table, no_row_x_container_is_reported_never_removed)
{
	enum lifecycle_container_state cs[] = {LIFECYCLE_CONTAINER_RUNNING, LIFECYCLE_CONTAINER_RESTARTING,
	                                       LIFECYCLE_CONTAINER_STOPPED};
	for (size_t i = 0; i < 3; i++) {
		struct lifecycle_reconcile_decision d = decide(LIFECYCLE_ROW_NONE, cs[i], "running", 0);
		cr_expect_eq(d.action, LIFECYCLE_RECONCILE_REPORT_ORPHAN, "container state %zu", i);
	}
}

Test(reconcile_table, no_row_x_absent_does_nothing)
{
	struct lifecycle_reconcile_decision d = decide(LIFECYCLE_ROW_NONE, LIFECYCLE_CONTAINER_ABSENT, NULL, 0);
	cr_expect_eq(d.action, LIFECYCLE_RECONCILE_NOTHING);
}

/* ---- holds and expiry (no engine: nothing here reaches it) ---- */

static void setup(void)
{
	lc_fixture_init("rec");
	fx.cfg.idle_timeout_ms = 1000;
	lc_fixture_start(NULL, 0);
}

static void insert_running(const char *ws, const char *id, int64_t at_ms)
{
	lc_fixture_workspace(ws, "managed", fx.ws_root, at_ms);
	lc_fixture_sandbox(id, ws, "running", at_ms);
}

Test(expiry_holds, a_held_sandbox_is_not_claimed_and_an_expiring_one_takes_no_call, .init = setup,
     .fini = lc_fixture_teardown)
{
	struct cp_error *err = NULL;
	cr_assert_eq(lifecycle_hold_begin(fx.lc, "sbx_a", &err), 0);
	cr_expect_eq(lifecycle_expire_claim(fx.lc, "sbx_a"), 0, "a call holds it");
	lifecycle_hold_end(fx.lc, "sbx_a");
	cr_expect_eq(lifecycle_expire_claim(fx.lc, "sbx_a"), 1, "nobody holds it now");
	cr_expect_eq(lifecycle_hold_begin(fx.lc, "sbx_a", &err), -1, "it is being expired");
	cr_assert_not_null(err);
	cr_expect_eq(err->code, CP_ERR_CONFLICT);
	cr_expect(strstr(err->message, "sandbox_create") != NULL, "%s", err->message);
	cp_error_freep(&err);
	lifecycle_expire_done(fx.lc, "sbx_a");
	cr_expect_eq(lifecycle_hold_begin(fx.lc, "sbx_a", &err), 0);
	lifecycle_hold_end(fx.lc, "sbx_a");
	cr_expect_eq(fx.lc->n_holds, 0, "no entry outlives its holds");
}

Test(expiry_holds, expiry_skips_held_and_recent_sandboxes, .init = setup, .fini = lc_fixture_teardown)
{
	struct cp_error *err = NULL;
	insert_running("ws_old", "sbx_old", 1000);
	insert_running("ws_new", "sbx_new", 100000);
	/* sbx_old is idle (timeout 1 s) but a call holds it; sbx_new is recent:
	 * the pass removes nothing and never reaches the (absent) engine. */
	cr_assert_eq(lifecycle_hold_begin(fx.lc, "sbx_old", &err), 0);
	cr_expect_eq(lifecycle_expiry_run(fx.lc, 100500, &err), 0);
	lifecycle_hold_end(fx.lc, "sbx_old");
	struct sandbox_record s = {0};
	cr_assert_eq(store_sandbox_get(fx.store, "sbx_old", &s, &err), 0);
	cr_expect_str_eq(s.status, "running");
	sandbox_record_clear(&s);
}
