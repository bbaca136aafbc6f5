/* test_lifecycle_call_gate.c: what one `read` call costs the registry on a
 * healthy running sandbox (issue 24): the call gate
 * (lifecycle_sandbox_channel), the release, and the request's audit row
 * (tools_audit_request), counted with the store's statement trace. At most
 * one write (the audit row) and no read; activity reaches the registry from
 * the maintenance pass (lifecycle_activity_flush), and expiry sees it. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "helper/helper.h"
#include "lifecycle_fixture.h"
#include "tools/tools.h"

static int peer = -1;

static void teardown(void)
{
	store_trace_set(fx.store, NULL, NULL);
	lc_fixture_teardown();
	if (peer >= 0)
		close(peer);
}

TestSuite(lifecycle_call_gate, .fini = teardown, .timeout = 30);

struct counts {
	int reads, writes;
	char last[4][200];
};

static void count(void *ctx, const char *sql)
{
	struct counts *c = ctx;
	while (*sql == ' ' || *sql == '\n' || *sql == '\t')
		sql++;
	if (!strncasecmp(sql, "SELECT", 6) || !strncasecmp(sql, "WITH", 4))
		c->reads++;
	else
		c->writes++;
	snprintf(c->last[(c->reads + c->writes - 1) % 4], sizeof(c->last[0]), "%s", sql);
}

/* A running sandbox sbx_a whose helper channel is open (its peer end kept
 * in peer, never answering: the gate does not call the helper). */
static void running_sandbox(void)
{
	lc_fixture_setup("gate", NULL, 0);
	lc_fixture_workspace("ws_a", "managed", fx.ws_root, 1);
	lc_fixture_sandbox("sbx_a", "ws_a", "running", 1);
	int sv[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	struct helper_channel *ch = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(helper_channel_new(sv[0], "sbx_a", &tool_bash_receipts, &ch, &err), 0);
	peer = sv[1];
	lifecycle_channel_put(fx.lc, "sbx_a", ch);
}

/* One read call's registry work: the gate, the release, the audit row. */
static void read_call(void)
{
	struct helper_channel *ch = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(lifecycle_sandbox_channel(fx.lc, "sbx_a", &ch, &err), 0, "%s", err ? err->message : "");
	lifecycle_sandbox_release(fx.lc, "sbx_a", ch);
	struct tools_app app = {.cfg = &fx.cfg, .store = fx.store, .lc = fx.lc};
	struct mcp_request_record rec = {.method = "tools/call", .tool = "read", .sandbox_id = "sbx_a"};
	tools_audit_request(&app, &rec);
}

Test(lifecycle_call_gate, a_read_call_makes_no_registry_read_and_one_write)
{
	running_sandbox();
	read_call(); /* the first call after an attach made outside create may load the row */
	struct counts c = {0};
	store_trace_set(fx.store, count, &c);
	read_call();
	store_trace_set(fx.store, NULL, NULL);
	fprintf(stderr, "registry statements of one read call: %d read(s), %d write(s)\n", c.reads, c.writes);
	for (int i = 0; i < 4 && i < c.reads + c.writes; i++)
		fprintf(stderr, "  %s\n", c.last[i]);
	cr_expect_eq(c.reads, 0);
	cr_expect_leq(c.writes, 1);
}

static int64_t stored_activity(void)
{
	struct sandbox_record s = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(store_sandbox_get(fx.store, "sbx_a", &s, &err), 0);
	int64_t at = s.last_activity_ms;
	sandbox_record_clear(&s);
	return at;
}

Test(lifecycle_call_gate, activity_reaches_the_registry_at_the_flush_and_expiry_sees_it)
{
	running_sandbox();
	int64_t before = stored_activity();
	read_call();
	cr_expect_eq(stored_activity(), before, "a call writes no activity itself");
	int64_t unwritten = lifecycle_activity_unwritten(fx.lc, "sbx_a");
	cr_expect_gt(unwritten, before, "what sandbox_get shows meanwhile");
	lifecycle_activity_flush(fx.lc, NULL);
	cr_expect_eq(lifecycle_activity_unwritten(fx.lc, "sbx_a"), 0);
	cr_expect_eq(stored_activity(), unwritten);
	cr_expect_gt(stored_activity(), before);
	/* Expiry with a timeout the call is within keeps the sandbox. */
	read_call();
	fx.cfg.idle_timeout_ms = 60000;
	struct cp_error *err = NULL;
	cr_assert_eq(lifecycle_expiry_run(fx.lc, clock_now_ms(), &err), 0);
	cr_expect_str_eq(lc_fixture_status("sbx_a"), "running");
}
