/* test_lifecycle_unsaved.c: the unsaved-work probes (lifecycle/unsaved.c)
 * against scripted helpers on the fake engine: an answering clone gives a
 * yes/no, a hung one makes the answer "unknown" within the wait instead of
 * holding the caller, a failure backs off, probes of several clones run in
 * parallel, and freeing the lifecycle ends a probe in flight at once. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/clock.h"
#include "base/log.h"
#include "lifecycle_fixture.h"
#include "proto.h"

#define FP "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static int answer(char **ret, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(ret, fmt, ap);
	va_end(ap);
	cr_assert_gt(n, 0);
	return 1;
}

/* A clone whose state script says "changed". */
static int helper_changed(const char *method, struct json_object *params, char **ret)
{
	(void)params;
	if (!strcmp(method, "bash.start"))
		return answer(ret, "\"result\":{\"status\":\"exited\",\"exit_code\":0,\"output\":"
		                   "\"chat2sbx-export kind=git state=changed fingerprint=" FP "\\n\"}");
	return answer(ret,
	              strcmp(method, "hello") ? "\"result\":{}" : "\"result\":{\"version\":\"" PROTO_VERSION "\"}");
}

/* A clone whose git hangs: the state script never answers. */
static int helper_hangs(const char *method, struct json_object *params, char **ret)
{
	(void)params;
	if (!strcmp(method, "bash.start"))
		return 0;
	return answer(ret,
	              strcmp(method, "hello") ? "\"result\":{}" : "\"result\":{\"version\":\"" PROTO_VERSION "\"}");
}

/* A clone whose script fails at once. */
static int helper_fails(const char *method, struct json_object *params, char **ret)
{
	(void)params;
	if (!strcmp(method, "bash.start"))
		return answer(ret, "\"result\":{\"status\":\"exited\",\"exit_code\":5,\"output\":\"fatal: no\"}");
	return answer(ret,
	              strcmp(method, "hello") ? "\"result\":{}" : "\"result\":{\"version\":\"" PROTO_VERSION "\"}");
}

static void start(fake_helper_fn a, fake_helper_fn b)
{
	log_set_level(LOG_LEVEL_ERROR);
	static struct fake_route routes[3];
	routes[0] = (struct fake_route){"GET", "/version", {.fixture = "version.http"}};
	routes[1] =
	    (struct fake_route){"POST", "/containers/sbx_a/attach", {.fixture = "attach_upgrade.http", .helper = a}};
	routes[2] =
	    (struct fake_route){"POST", "/containers/sbx_b/attach", {.fixture = "attach_upgrade.http", .helper = b}};
	lc_fixture_setup("unsaved", routes, 3);
	lc_fixture_workspace("ws_a", "clone", "/nonexistent/a", 1);
	lc_fixture_workspace("ws_b", "clone", "/nonexistent/b", 1);
	lc_fixture_workspace("ws_m", "managed", "/nonexistent/m", 1);
	lc_fixture_sandbox("sbx_a", "ws_a", "running", 1);
	lc_fixture_sandbox("sbx_b", "ws_b", "running", 1);
	lc_fixture_sandbox("sbx_m", "ws_m", "running", 1);
	struct cp_error *err = NULL;
	cr_assert_eq(lifecycle_attach(fx.lc, "sbx_a", NULL, "sbx_a", NULL, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(lifecycle_attach(fx.lc, "sbx_b", NULL, "sbx_b", NULL, &err), 0, "%s", err ? err->message : "");
}

/* Every row of the registry, in id order, as the tools read them. */
static size_t rows_of(struct sandbox_record **ret)
{
	size_t n = 0;
	struct cp_error *err = NULL;
	cr_assert_eq(store_sandbox_list(fx.store, 0, ret, &n, &err), 0);
	return n;
}

static void rows_free(struct sandbox_record *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sandbox_record_clear(&rows[i]);
	free(rows);
}

static int state_of(const struct sandbox_record *rows, const int *st, size_t n, const char *id)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(rows[i].id, id))
			return st[i];
	cr_assert_fail("no row %s", id);
	return -9;
}

Test(lifecycle_unsaved, answers_and_records_the_probe)
{
	start(helper_changed, helper_changed);
	struct sandbox_record *rows = NULL;
	size_t n = rows_of(&rows);
	int st[8];
	lifecycle_sandboxes_unsaved(fx.lc, rows, n, st);
	cr_expect_eq(state_of(rows, st, n, "sbx_a"), LIFECYCLE_UNSAVED_YES);
	cr_expect_eq(state_of(rows, st, n, "sbx_b"), LIFECYCLE_UNSAVED_YES);
	cr_expect_eq(state_of(rows, st, n, "sbx_m"), LIFECYCLE_UNSAVED_NONE, "not a clone: nothing to say");
	rows_free(rows, n);
	struct sandbox_record s = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(store_sandbox_get(fx.store, "sbx_a", &s, &err), 0);
	cr_expect_eq(s.unsaved, 1, "the answer is recorded in the registry");
	cr_expect_gt(s.unsaved_checked_at_ms, 0);
	sandbox_record_clear(&s);
	size_t asked = fake_count("HELPER", "bash.start");
	rows = NULL;
	n = rows_of(&rows);
	lifecycle_sandboxes_unsaved(fx.lc, rows, n, st);
	cr_expect_eq(state_of(rows, st, n, "sbx_a"), LIFECYCLE_UNSAVED_YES);
	cr_expect_eq(fake_count("HELPER", "bash.start"), asked, "a fresh answer is not asked again");
	rows_free(rows, n);
	lc_fixture_teardown();
}

Test(lifecycle_unsaved, a_hung_probe_answers_unknown_within_the_wait_and_free_ends_it)
{
	start(helper_hangs, helper_hangs);
	struct sandbox_record *rows = NULL;
	size_t n = rows_of(&rows);
	int st[8];
	int64_t t0 = clock_monotonic_ms();
	lifecycle_sandboxes_unsaved(fx.lc, rows, n, st);
	int64_t took = clock_monotonic_ms() - t0;
	cr_expect_eq(state_of(rows, st, n, "sbx_a"), LIFECYCLE_UNSAVED_UNKNOWN);
	cr_expect_eq(state_of(rows, st, n, "sbx_b"), LIFECYCLE_UNSAVED_UNKNOWN);
	/* Both probes share one wait: two hung clones cost one wait, not two. */
	cr_expect_lt(took, 2 * LIFECYCLE_UNSAVED_WAIT_MS, "waited %lld ms", (long long)took);
	/* Asked again while the probes still hang: no second probe is started. */
	lifecycle_sandboxes_unsaved(fx.lc, rows, n, st);
	cr_expect_eq(state_of(rows, st, n, "sbx_a"), LIFECYCLE_UNSAVED_UNKNOWN);
	cr_expect_eq(fake_count("HELPER", "bash.start"), 2, "one probe per clone in flight");
	rows_free(rows, n);
	t0 = clock_monotonic_ms();
	lifecycle_free(TAKE_PTR(fx.lc)); /* the probes' waits end at the cancel, not at their 20 s deadline */
	cr_expect_lt(clock_monotonic_ms() - t0, 3000);
	lc_fixture_teardown();
}

Test(lifecycle_unsaved, a_failed_probe_backs_off)
{
	start(helper_fails, helper_changed);
	struct sandbox_record *rows = NULL;
	size_t n = rows_of(&rows);
	int st[8];
	lifecycle_sandboxes_unsaved(fx.lc, rows, n, st);
	cr_expect_eq(state_of(rows, st, n, "sbx_a"), LIFECYCLE_UNSAVED_UNKNOWN);
	cr_expect_eq(state_of(rows, st, n, "sbx_b"), LIFECYCLE_UNSAVED_YES, "the other clone answers on its own");
	size_t asked = fake_count("HELPER", "bash.start");
	for (int i = 0; i < 3; i++) {
		lifecycle_sandboxes_unsaved(fx.lc, rows, n, st);
		cr_expect_eq(state_of(rows, st, n, "sbx_a"), LIFECYCLE_UNSAVED_UNKNOWN);
	}
	cr_expect_eq(fake_count("HELPER", "bash.start"), asked, "no new probe during the back-off");
	rows_free(rows, n);
	lc_fixture_teardown();
}
