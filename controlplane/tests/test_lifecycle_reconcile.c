/* test_lifecycle_reconcile.c: the holds that keep expiry from removing a
 * sandbox in the middle of a call. Store-only: no engine is needed (the
 * reconcile decision table is tests/test_policy_reconcile.c). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lifecycle_fixture.h"

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
	cr_expect_str_eq(sandbox_status_to_string(s.status), "running");
	sandbox_record_clear(&s);
}
