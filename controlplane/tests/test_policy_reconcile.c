/* test_policy_reconcile.c: the reconcile decision table (registry state ×
 * engine state → action, policy/reconcile.c), one test per row. Pure. */
#include <criterion/criterion.h>
#include <string.h>

#include "policy/policy.h"

static struct policy_reconcile_decision decide(enum policy_row_state row, enum policy_container_state c,
                                               const char *status, int exit_code)
{
	struct policy_reconcile_decision d;
	memset(&d, 0x5a, sizeof(d)); /* every field must be written */
	policy_reconcile_decide(row, c, status, exit_code, &d);
	return d;
}

Test(reconcile_states, strings_map_to_states)
{
	cr_expect_eq(policy_row_state_of(NULL), POLICY_ROW_NONE);
	cr_expect_eq(policy_row_state_of("creating"), POLICY_ROW_CREATING);
	cr_expect_eq(policy_row_state_of("running"), POLICY_ROW_RUNNING);
	cr_expect_eq(policy_row_state_of("failed"), POLICY_ROW_FAILED);
	cr_expect_eq(policy_row_state_of("removed"), POLICY_ROW_REMOVED);
	cr_expect_eq(policy_container_state_of(NULL), POLICY_CONTAINER_ABSENT);
	cr_expect_eq(policy_container_state_of("running"), POLICY_CONTAINER_RUNNING);
	cr_expect_eq(policy_container_state_of("restarting"), POLICY_CONTAINER_RESTARTING);
	const char *stopped[] = {"created", "exited", "dead", "paused", "removing"};
	for (size_t i = 0; i < sizeof(stopped) / sizeof(stopped[0]); i++)
		cr_expect_eq(policy_container_state_of(stopped[i]), POLICY_CONTAINER_STOPPED, "%s", stopped[i]);
}

/* ---- running rows ---- */

Test(reconcile_table, running_x_running_reattaches)
{
	struct policy_reconcile_decision d = decide(POLICY_ROW_RUNNING, POLICY_CONTAINER_RUNNING, "running", 0);
	cr_expect_eq(d.action, POLICY_RECONCILE_REATTACH);
}

Test(reconcile_table, running_x_absent_fails_with_reason)
{
	struct policy_reconcile_decision d = decide(POLICY_ROW_RUNNING, POLICY_CONTAINER_ABSENT, NULL, 0);
	cr_expect_eq(d.action, POLICY_RECONCILE_MARK_FAILED);
	cr_expect_str_eq(d.reason, "its container no longer exists");
}

Test(reconcile_table, running_x_stopped_fails_with_status_and_exit_code)
{
	struct policy_reconcile_decision d = decide(POLICY_ROW_RUNNING, POLICY_CONTAINER_STOPPED, "exited", 137);
	cr_expect_eq(d.action, POLICY_RECONCILE_MARK_FAILED);
	cr_expect_str_eq(d.reason, "its container is exited (exit code 137)");
}

Test(reconcile_table, running_x_restarting_is_left_to_the_next_call)
{
	struct policy_reconcile_decision d = decide(POLICY_ROW_RUNNING, POLICY_CONTAINER_RESTARTING, "restarting", 0);
	cr_expect_eq(d.action, POLICY_RECONCILE_NOTHING);
	cr_expect(strstr(d.reason, "restarting") != NULL, "%s", d.reason);
}

/* ---- creating rows: serve died mid-create ---- */

Test(reconcile_table, creating_x_absent_fails)
{
	struct policy_reconcile_decision d = decide(POLICY_ROW_CREATING, POLICY_CONTAINER_ABSENT, NULL, 0);
	cr_expect_eq(d.action, POLICY_RECONCILE_MARK_FAILED);
	cr_expect(strstr(d.reason, "stopped while creating") != NULL, "%s", d.reason);
}

Test(reconcile_table, creating_x_any_container_removes_it_and_fails)
{
	enum policy_container_state cs[] = {POLICY_CONTAINER_RUNNING, POLICY_CONTAINER_RESTARTING,
	                                    POLICY_CONTAINER_STOPPED};
	const char *st[] = {"running", "restarting", "created"};
	for (size_t i = 0; i < 3; i++) {
		struct policy_reconcile_decision d = decide(POLICY_ROW_CREATING, cs[i], st[i], 0);
		cr_expect_eq(d.action, POLICY_RECONCILE_REMOVE_AND_FAIL, "%s", st[i]);
		cr_expect(strstr(d.reason, "its container was removed") != NULL, "%s", d.reason);
	}
}

/* ---- failed rows: already reported, left for the user's destroy ---- */

Test(reconcile_table, failed_x_anything_does_nothing)
{
	enum policy_container_state cs[] = {POLICY_CONTAINER_ABSENT, POLICY_CONTAINER_RUNNING,
	                                    POLICY_CONTAINER_RESTARTING, POLICY_CONTAINER_STOPPED};
	for (size_t i = 0; i < 4; i++) {
		struct policy_reconcile_decision d = decide(POLICY_ROW_FAILED, cs[i], "exited", 1);
		cr_expect_eq(d.action, POLICY_RECONCILE_NOTHING, "container state %zu", i);
		cr_expect_str_eq(d.reason, "");
	}
}

/* ---- expired rows (issue 14): the stopped container keeps the clone ---- */

Test(reconcile_table, expired_keeps_its_container_and_fails_when_it_is_gone)
{
	cr_expect_eq(policy_row_state_of("expired"), POLICY_ROW_EXPIRED);
	enum policy_container_state kept[] = {POLICY_CONTAINER_RUNNING, POLICY_CONTAINER_RESTARTING,
	                                      POLICY_CONTAINER_STOPPED};
	for (size_t i = 0; i < 3; i++) {
		struct policy_reconcile_decision d = decide(POLICY_ROW_EXPIRED, kept[i], "exited", 0);
		cr_expect_eq(d.action, POLICY_RECONCILE_NOTHING, "container state %zu", i);
	}
	struct policy_reconcile_decision d = decide(POLICY_ROW_EXPIRED, POLICY_CONTAINER_ABSENT, NULL, 0);
	cr_expect_eq(d.action, POLICY_RECONCILE_MARK_FAILED);
	cr_expect(strstr(d.reason, "unsaved work is gone") != NULL, "%s", d.reason);
}

/* ---- removing rows (issue 13 item 4): a removal put on record is finished ---- */

Test(reconcile_table, removing_x_anything_is_finished)
{
	cr_expect_eq(policy_row_state_of("removing"), POLICY_ROW_REMOVING);
	enum policy_container_state cs[] = {POLICY_CONTAINER_ABSENT, POLICY_CONTAINER_RUNNING,
	                                    POLICY_CONTAINER_RESTARTING, POLICY_CONTAINER_STOPPED};
	for (size_t i = 0; i < 4; i++) {
		struct policy_reconcile_decision d = decide(POLICY_ROW_REMOVING, cs[i], i ? "running" : NULL, 0);
		cr_expect_eq(d.action, POLICY_RECONCILE_FINISH_REMOVAL, "container state %zu", i);
		cr_expect(strstr(d.reason, i ? "its container (running) remained" : "after its container went") != NULL,
		          "%s", d.reason);
	}
}

/* ---- removed rows ---- */

Test(reconcile_table, removed_x_absent_does_nothing)
{
	struct policy_reconcile_decision d = decide(POLICY_ROW_REMOVED, POLICY_CONTAINER_ABSENT, NULL, 0);
	cr_expect_eq(d.action, POLICY_RECONCILE_NOTHING);
}

Test(reconcile_table, removed_x_leftover_container_is_removed)
{
	enum policy_container_state cs[] = {POLICY_CONTAINER_RUNNING, POLICY_CONTAINER_RESTARTING,
	                                    POLICY_CONTAINER_STOPPED};
	for (size_t i = 0; i < 3; i++) {
		struct policy_reconcile_decision d = decide(POLICY_ROW_REMOVED, cs[i], "running", 0);
		cr_expect_eq(d.action, POLICY_RECONCILE_REMOVE_CONTAINER, "container state %zu", i);
	}
}

/* ---- no row ---- */

Test(reconcile_table, no_row_x_container_is_reported_never_removed)
{
	enum policy_container_state cs[] = {POLICY_CONTAINER_RUNNING, POLICY_CONTAINER_RESTARTING,
	                                    POLICY_CONTAINER_STOPPED};
	for (size_t i = 0; i < 3; i++) {
		struct policy_reconcile_decision d = decide(POLICY_ROW_NONE, cs[i], "running", 0);
		cr_expect_eq(d.action, POLICY_RECONCILE_REPORT_ORPHAN, "container state %zu", i);
	}
}

Test(reconcile_table, no_row_x_absent_does_nothing)
{
	struct policy_reconcile_decision d = decide(POLICY_ROW_NONE, POLICY_CONTAINER_ABSENT, NULL, 0);
	cr_expect_eq(d.action, POLICY_RECONCILE_NOTHING);
}
