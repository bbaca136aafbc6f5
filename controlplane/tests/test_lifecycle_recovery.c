/* test_lifecycle_recovery.c: what a tool call meets when a sandbox's helper
 * channel is gone (lifecycle/recovery.c), against a fake engine on a Unix
 * socket: the engine stopped → UNAVAILABLE at once naming the socket, the row
 * untouched (also for the maintenance pass); the container gone or exited →
 * the row failed with the reason; restarting → UNAVAILABLE, row untouched.
 * And the helper channel itself: the end of the attach stream fails every
 * call waiting on it at once with UNAVAILABLE. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "helper/helper.h"
#include "lifecycle_fixture.h"
#include "proto.h"

/* The engine answers /version and, for sbx_a's inspect, the fixture a test
 * chooses; an attach opens and ends at once (the container is stopping). */
static void start(const char *inspect_fixture)
{
	static struct fake_route routes[] = {
	    {"GET", "/version", {.fixture = "version.http"}},
	    {"GET", "/containers/sbx_a/json", {.fixture = "inspect_missing.http"}},
	    {"POST", "/attach", {.fixture = "attach_upgrade.http"}},
	};
	routes[1].reply.fixture = inspect_fixture;
	lc_fixture_setup("recov", routes, sizeof(routes) / sizeof(routes[0]));
	lc_fixture_workspace("ws_a", "managed", fx.ws_root, 1);
	lc_fixture_sandbox("sbx_a", "ws_a", "running", 1);
}

static void teardown(void)
{
	lc_fixture_teardown();
}

TestSuite(lifecycle_recovery, .fini = teardown, .timeout = 30);

static void expect_row(const char *status, const char *reason_part)
{
	struct sandbox_record s = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(store_sandbox_get(fx.store, "sbx_a", &s, &err), 0);
	cr_expect_str_eq(sandbox_status_to_string(s.status), status);
	if (reason_part)
		cr_expect(s.failure_reason && strstr(s.failure_reason, reason_part), "reason: %s",
		          s.failure_reason ? s.failure_reason : "(none)");
	else
		cr_expect_null(s.failure_reason, "%s", s.failure_reason);
	sandbox_record_clear(&s);
}

static struct cp_error *channel_fails(void)
{
	struct helper_channel *ch = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(lifecycle_sandbox_channel(fx.lc, "sbx_a", &ch, &err), -1);
	cr_assert_null(ch);
	cr_assert_not_null(err);
	return err;
}

Test(lifecycle_recovery, engine_stopped_fails_at_once_and_keeps_the_row)
{
	start("inspect_missing.http");
	fake_stop_routes(&fake);
	struct cp_error *err = channel_fails();
	cr_expect_eq(err->code, CP_ERR_UNAVAILABLE);
	cr_expect(strstr(err->message, fake.sock) != NULL, "names the socket: %s", err->message);
	cr_expect(strstr(err->message, "does not answer") != NULL, "%s", err->message);
	cr_expect(strstr(err->message, "(no socket exists there") != NULL, "says why, from the detail: %s",
	          err->message);
	cr_expect(strstr(err->message, "start the engine") != NULL, "says what to do: %s", err->message);
	cr_expect(strstr(err->message, "sbx_a") != NULL, "%s", err->message);
	cr_log_info("engine stopped: %s", err->message);
	cp_error_free(err);
	expect_row("running", NULL);
	/* The maintenance pass neither fails the row nor reports an error. */
	cr_expect_eq(lifecycle_reattach_run(fx.lc, &err), 0, "%s", err ? err->message : "");
	expect_row("running", NULL);
}

Test(lifecycle_recovery, container_gone_fails_the_row_with_the_reason)
{
	start("inspect_missing.http");
	struct cp_error *err = channel_fails();
	cr_expect_eq(err->code, CP_ERR_CONFLICT);
	cr_expect(strstr(err->message, "sandbox_destroy") != NULL, "says what to do: %s", err->message);
	cp_error_free(err);
	expect_row("failed", "no longer exists");
}

Test(lifecycle_recovery, exited_container_fails_the_row_from_the_maintenance_pass_too)
{
	start("inspect_ok.http"); /* exited, exit code 137 */
	struct cp_error *err = NULL;
	cr_expect_eq(lifecycle_reattach_run(fx.lc, &err), 0);
	cr_expect_eq(fake_count("GET", "/containers/sbx_a/json"), 1);
	expect_row("failed", "exit code 137");
	err = channel_fails();
	cr_expect_eq(err->code, CP_ERR_CONFLICT, "a failed sandbox says so: %s", err->message);
	cp_error_free(err);
}

Test(lifecycle_recovery, restarting_container_is_unavailable_and_the_row_stays)
{
	start("inspect_restarting.http");
	struct cp_error *err = channel_fails();
	cr_expect_eq(err->code, CP_ERR_UNAVAILABLE);
	cr_expect(strstr(err->message, "retry") != NULL, "%s", err->message);
	cp_error_free(err);
	expect_row("running", NULL);
}

/* The stream opens and ends before hello is answered (the container is
 * stopping): not a verdict on the sandbox. (A helper that stays silent
 * makes the row failed after POLICY_HELLO_TIMEOUT_MS, 15 s: too slow for
 * this suite; recovery.c, reattach_locked.) */
Test(lifecycle_recovery, stream_closed_during_hello_keeps_the_row)
{
	start("inspect_running.http");
	struct cp_error *err = channel_fails();
	cr_expect_eq(err->code, CP_ERR_UNAVAILABLE, "%s", err->message);
	cr_expect(strstr(err->message, "not answering") != NULL, "%s", err->message);
	cp_error_free(err);
	expect_row("running", NULL);
}

/* A sandbox that kept running across an upgrade keeps its old helper: one
 * whose protocol this control plane no longer speaks makes the row failed
 * at re-attach, saying how to save the work, and the container is left
 * running (no stop, no removal) so that `docker cp` can. */
static int helper_too_old(const char *method, struct json_object *params, char **ret)
{
	(void)params;
	int n = strcmp(method, "hello")
	            ? asprintf(ret, "\"error\":{\"code\":-32601,\"message\":\"method not found\"}")
	            : asprintf(ret, "\"result\":{\"version\":\"%d\",\"boot_id\":\"b\"}", PROTO_HOST_MIN - 1);
	cr_assert_gt(n, 0);
	return 1;
}

Test(lifecycle_recovery, helper_of_an_older_protocol_fails_the_row_with_what_to_do)
{
	static struct fake_route routes[] = {
	    {"GET", "/version", {.fixture = "version.http"}},
	    {"GET", "/containers/sbx_a/json", {.fixture = "inspect_running.http"}},
	    {"POST", "/attach", {.fixture = "attach_upgrade.http", .helper = helper_too_old}},
	};
	lc_fixture_setup("recov", routes, sizeof(routes) / sizeof(routes[0]));
	lc_fixture_workspace("ws_a", "managed", fx.ws_root, 1);
	lc_fixture_sandbox("sbx_a", "ws_a", "running", 1);
	struct cp_error *err = channel_fails();
	cr_expect_eq(err->code, CP_ERR_CONFLICT, "%s", err->message);
	cr_expect(strstr(err->message, "has failed") != NULL, "%s", err->message);
	cp_error_free(err);
	expect_row("failed", "older than this chat2sbx");
	expect_row("failed", "docker cp ");
	expect_row("failed", "chat2sbx sandbox destroy --force sbx_a");
	cr_expect_eq(fake_count("POST", "/stop"), 0, "left running so its files can be saved");
	cr_expect_eq(fake_count("DELETE", "/containers/"), 0);
	cr_expect_eq(fx.lc->n_channels, 0, "no channel is kept");
}

/* ---- the channel: end of stream fails every waiter at once ---- */

struct waiter {
	struct helper_channel *ch;
	pthread_t thread;
	int rc;
	struct cp_error *err;
};

static void *call_main(void *arg)
{
	struct waiter *w = arg;
	struct json_object *res = NULL;
	w->rc = helper_channel_call(w->ch, "bash.poll", NULL, 60000, &res, &w->err);
	json_object_put(res);
	return NULL;
}

Test(helper_channel_eof, every_waiting_call_fails_at_once_with_unavailable)
{
	int sv[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	struct helper_channel *ch = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(helper_channel_new(sv[0], "sbx_eof", NULL, &ch, &err), 0);
	enum { N = 4 };
	struct waiter w[N];
	for (int i = 0; i < N; i++) {
		w[i] = (struct waiter){.ch = helper_channel_ref(ch)};
		cr_assert_eq(pthread_create(&w[i].thread, NULL, call_main, &w[i]), 0);
	}
	/* Read the attach notification and the N request lines (the calls
	 * are in flight), then end the stream as a stopped container or
	 * engine does. */
	char buf[4096];
	int lines = 0;
	while (lines < N + 1) {
		ssize_t r = recv(sv[1], buf, sizeof(buf), 0);
		cr_assert_gt(r, 0);
		for (ssize_t i = 0; i < r; i++)
			lines += buf[i] == '\n';
	}
	shutdown(sv[1], SHUT_RDWR);
	for (int i = 0; i < N; i++) {
		pthread_join(w[i].thread, NULL);
		cr_expect_eq(w[i].rc, -1);
		cr_assert_not_null(w[i].err);
		cr_expect_eq(w[i].err->code, CP_ERR_UNAVAILABLE, "%s", w[i].err->message);
		cr_expect(strstr(w[i].err->message, "stream ended") != NULL, "%s", w[i].err->message);
		cp_error_free(w[i].err);
		helper_channel_unref(w[i].ch);
	}
	cr_expect_not(helper_channel_alive(ch));
	helper_channel_free(ch);
	close(sv[1]);
}
