/* test_node_health.c: the health loop of issue 28 (node/health.c) against
 * a node whose engine is gone (tcp://127.0.0.1:1: nothing listens): within
 * two passes the node is down in the registry and in memory, the owner's
 * callback hears it once, and a call on a sandbox placed there is refused
 * at the gate with UNAVAILABLE naming the node, its row untouched, while a
 * sandbox on node 'local' still takes calls; a drained node stays drained
 * through the outage; stopping the loop frees what it held. */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "helper/helper.h"
#include "lifecycle_fixture.h"
#include "node/node.h"
#include "tools/tools.h"

static int peers[2] = {-1, -1};
static struct node_health *health;

static void teardown(void)
{
	if (fx.lc)
		lifecycle_node_health_set(fx.lc, NULL);
	node_health_stop(health);
	health = NULL;
	lc_fixture_teardown();
	for (int i = 0; i < 2; i++)
		if (peers[i] >= 0)
			close(peers[i]);
}

TestSuite(node_health, .fini = teardown, .timeout = 60);

static atomic_int downs, backs;
static char last_node[64];
static void on_event(void *ctx, const char *node, enum policy_node_health_event ev)
{
	(void)ctx;
	snprintf(last_node, sizeof(last_node), "%s", node);
	if (ev == POLICY_NODE_HEALTH_DOWN)
		atomic_fetch_add(&downs, 1);
	else if (ev == POLICY_NODE_HEALTH_BACK)
		atomic_fetch_add(&backs, 1);
}

/* A running sandbox id on node (NULL = local) whose helper channel is open
 * (the peer end kept, never answering: the gate does not call the helper). */
static void running_sandbox(const char *id, const char *ws, const char *node, int slot)
{
	lc_fixture_workspace(ws, "managed", fx.ws_root, 1);
	struct sandbox_record s = lc_fixture_running_row(id, ws, node);
	struct cp_error *err = NULL;
	cr_assert_eq(store_sandbox_insert(fx.store, &s, &err), 0, "%s", err ? err->message : "");
	int sv[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	struct helper_channel *ch = NULL;
	cr_assert_eq(helper_channel_new(sv[0], id, &tool_bash_receipts, &ch, &err), 0);
	peers[slot] = sv[1];
	lifecycle_channel_put(fx.lc, id, ch);
}

static enum node_state row_state(const char *name)
{
	struct node_record n = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(store_node_get(fx.store, name, &n, &err), 0, "%s", err ? err->message : "");
	enum node_state s = n.state;
	node_record_clear(&n);
	return s;
}

/* Waits (at most 15 s) until the loop says name is down. */
static void wait_down(const char *name)
{
	for (int i = 0; i < 150 && node_health_answering(health, name, NULL); i++)
		usleep(100 * 1000);
	cr_assert_eq(node_health_answering(health, name, NULL), 0, "node '%s' still counts as answering", name);
}

Test(node_health, a_node_that_does_not_answer_is_down_and_its_sandboxes_say_so)
{
	lc_fixture_setup("health", NULL, 0);
	lc_fixture_node("n1", "tcp://127.0.0.1:1", NODE_READY, 1LL << 30, 2);
	running_sandbox("sbx_remote", "ws_r", "n1", 0);
	running_sandbox("sbx_local", "ws_l", NULL, 1);
	cr_assert_eq(node_health_answering(NULL, "n1", NULL), 1, "no loop: every node answers");

	int64_t started = clock_now_ms();
	cr_assert_eq(node_health_start(fx.store, on_event, NULL, &health), 0);
	lifecycle_node_health_set(fx.lc, health);
	wait_down("n1");
	int64_t since = 0;
	cr_assert_eq(node_health_answering(health, "n1", &since), 0);
	cr_assert(since >= started - 1000 && since <= clock_now_ms(), "down since %lld (started %lld)",
	          (long long)since, (long long)started);
	cr_assert_eq(row_state("n1"), NODE_DOWN, "the registry says down");
	for (int i = 0; i < 50 && atomic_load(&downs) == 0; i++)
		usleep(100 * 1000); /* the callback runs after the state is written */
	cr_assert_eq(atomic_load(&downs), 1);
	cr_assert_str_eq(last_node, "n1");
	cr_assert_eq(node_health_answering(health, "local", NULL), 1, "'local' is never probed here");
	cr_assert_eq(node_health_answering(health, "never-added", NULL), 1);

	/* A call on the sandbox placed there: refused at once, naming the node. */
	struct helper_channel *ch = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(lifecycle_sandbox_channel(fx.lc, "sbx_remote", &ch, &err), -1);
	cr_assert_eq(err->code, CP_ERR_UNAVAILABLE, "%s", err->message);
	cr_assert(strstr(err->message, "node 'n1', which is not answering since ") != NULL, "%s", err->message);
	cr_assert(strstr(err->message, "UTC") != NULL, "%s", err->message);
	cp_error_freep(&err);
	cr_assert_null(ch);
	cr_assert_str_eq(lc_fixture_status("sbx_remote"), "running", "its row is untouched");

	/* One on this machine goes on. */
	cr_assert_eq(lifecycle_sandbox_channel(fx.lc, "sbx_local", &ch, &err), 0, "%s", err ? err->message : "");
	lifecycle_sandbox_release(fx.lc, "sbx_local", ch);

	/* Still down a pass later: said once, not again. */
	usleep((NODE_HEALTH_INTERVAL_MS + 500) * 1000);
	cr_assert_eq(atomic_load(&downs), 1);
	cr_assert_eq(atomic_load(&backs), 0);
}

Test(node_health, a_drained_node_stays_drained_through_an_outage_and_a_row_left_down_stays_down)
{
	lc_fixture_setup("health-drain", NULL, 0);
	lc_fixture_node("drained", "tcp://127.0.0.1:1", NODE_DRAINING, 1LL << 30, 2);
	lc_fixture_node("was-down", "tcp://127.0.0.2:1", NODE_DOWN, 1LL << 30, 2);
	cr_assert_eq(node_health_start(fx.store, NULL, NULL, &health), 0);
	/* A row an earlier serve left down counts as down from the start. */
	int64_t since = 0;
	cr_assert_eq(node_health_answering(health, "was-down", &since), 0);
	cr_assert_eq(since, 1000, "down since its last contact");
	wait_down("drained");
	usleep(200 * 1000);
	cr_assert_eq(row_state("drained"), NODE_DRAINING, "an outage never undoes a drain");
	cr_assert_eq(row_state("was-down"), NODE_DOWN);
}
