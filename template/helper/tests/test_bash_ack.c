/* test_bash_ack.c: delivery acknowledgements (proto.h, "Delivery and
 * acknowledgement"). A reply the control plane never acknowledged is
 * delivered again after a new attachment (hello with a new attach_id) or a
 * bash.nack; an acknowledged one is not; a repeated hello changes nothing;
 * replies waiting for the previous attachment are forgotten; the
 * acknowledged offset survives a restart of the helper (sessmeta.c). */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"

#define RPC "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\",\"params\":%s}"

static json_object *call(struct harness *h, int id, const char *method, const char *params)
{
	json_object *r = harness_call(h, id, 10000, RPC, id, method, params);
	cr_assert_not_null(r, "%s %s failed", method, params);
	return r;
}

static json_object *hello(struct harness *h, int id, const char *attach_id)
{
	char params[128];
	snprintf(params, sizeof params, "{\"attach_id\":\"%s\"}", attach_id);
	return call(h, id, "hello", params);
}

/* bash.poll of sid waiting up to yield_ms; returns its output (static). */
static json_object *poll_session(struct harness *h, int id, const char *sid, int yield_ms)
{
	char params[256];
	snprintf(params, sizeof params, "{\"session_id\":\"%s\",\"yield_time_ms\":%d}", sid, yield_ms);
	return call(h, id, "bash.poll", params);
}

static void input(struct harness *h, int id, const char *sid, const char *data)
{
	char params[256];
	snprintf(params, sizeof params, "{\"session_id\":\"%s\",\"data\":\"%s\"}", sid, data);
	json_object_put(call(h, id, "bash.input", params));
}

static void assert_attached(json_object *r, bool want)
{
	cr_assert_eq(jbool(r, "attached"), want, "hello: %s", json_object_to_json_string(r));
	json_object_put(r);
}

Test(bash_ack, unacknowledged_reply_is_delivered_again_after_a_new_attachment)
{
	struct harness h;
	harness_start(&h);
	assert_attached(hello(&h, 1, "attach-1"), true);
	json_object *r = call(&h, 2, "bash.start",
	                      "{\"session_id\":\"bash_u\",\"command\":\"echo one; echo two; exit 4\","
	                      "\"yield_time_ms\":10000}");
	cr_assert_str_eq(jstr(r, "status"), "exited");
	cr_assert_str_eq(jstr(r, "output"), "one\ntwo\n");
	cr_assert_eq(jint(r, "output_start"), 0);
	cr_assert_eq(jint(r, "output_end"), 8);
	json_object_put(r); /* never acknowledged: the control plane was killed */

	assert_attached(hello(&h, 3, "attach-2"), true);
	r = poll_session(&h, 4, "bash_u", 0);
	cr_assert_str_eq(jstr(r, "output"), "one\ntwo\n", "the unacknowledged output comes again");
	cr_assert_str_eq(jstr(r, "status"), "exited", "the session keeps its end");
	cr_assert_eq(jint(r, "exit_code"), 4);
	cr_assert_not(jbool(r, "has_more_output"));
	harness_ack(&h, r, true);
	json_object_put(r);

	assert_attached(hello(&h, 5, "attach-3"), true);
	r = poll_session(&h, 6, "bash_u", 0);
	cr_assert_str_eq(jstr(r, "output"), "", "acknowledged output is not repeated");
	cr_assert_eq(jint(r, "exit_code"), 4);
	json_object_put(r);
	harness_stop(&h);
}

Test(bash_ack, acknowledged_reply_is_not_repeated_and_a_repeated_hello_changes_nothing)
{
	struct harness h;
	harness_start(&h);
	assert_attached(hello(&h, 1, "attach-1"), true);
	json_object *r =
	    call(&h, 2, "bash.start", "{\"session_id\":\"bash_a\",\"command\":\"echo acked\",\"yield_time_ms\":10000}");
	cr_assert_str_eq(jstr(r, "output"), "acked\n");
	harness_ack(&h, r, true);
	json_object_put(r);
	r = call(&h, 3, "bash.start",
	         "{\"session_id\":\"bash_b\",\"command\":\"echo not-acked\",\"yield_time_ms\":10000}");
	cr_assert_str_eq(jstr(r, "output"), "not-acked\n");
	json_object_put(r);

	/* The same attachment says hello again: no rewind. */
	assert_attached(hello(&h, 4, "attach-1"), false);
	r = poll_session(&h, 5, "bash_b", 0);
	cr_assert_str_eq(jstr(r, "output"), "");
	json_object_put(r);
	/* A hello without attach_id (an older control plane) neither. */
	assert_attached(call(&h, 6, "hello", "{}"), false);

	assert_attached(hello(&h, 7, "attach-2"), true);
	r = poll_session(&h, 8, "bash_a", 0);
	cr_assert_str_eq(jstr(r, "output"), "");
	json_object_put(r);
	r = poll_session(&h, 9, "bash_b", 0);
	cr_assert_str_eq(jstr(r, "output"), "not-acked\n");
	json_object_put(r);
	harness_stop(&h);
}

Test(bash_ack, nack_delivers_again_and_a_gap_keeps_later_acks_from_counting)
{
	struct harness h;
	harness_start(&h);
	assert_attached(hello(&h, 1, "attach-1"), true);
	json_object_put(call(&h, 2, "bash.start",
	                     "{\"session_id\":\"bash_c\",\"command\":\"cat\",\"interactive\":true,"
	                     "\"yield_time_ms\":0}"));
	input(&h, 3, "bash_c", "a\\n");
	json_object *r1 = poll_session(&h, 4, "bash_c", 10000);
	cr_assert_str_eq(jstr(r1, "output"), "a\n");
	/* Its caller had gone: the control plane says so. */
	harness_ack(&h, r1, false);
	json_object *r = poll_session(&h, 5, "bash_c", 10000);
	cr_assert_str_eq(jstr(r, "output"), "a\n", "a nacked reply is delivered again");
	harness_ack(&h, r, true);
	json_object_put(r);
	json_object_put(r1);

	/* b is delivered but dropped and never nacked (its nack was lost), c
	 * is acknowledged: c's ack does not cover the gap. */
	input(&h, 6, "bash_c", "b\\n");
	r = poll_session(&h, 7, "bash_c", 10000);
	cr_assert_str_eq(jstr(r, "output"), "b\n");
	json_object_put(r);
	input(&h, 8, "bash_c", "c\\n");
	r = poll_session(&h, 9, "bash_c", 10000);
	cr_assert_str_eq(jstr(r, "output"), "c\n");
	harness_ack(&h, r, true);
	json_object_put(r);
	assert_attached(hello(&h, 10, "attach-2"), true);
	r = poll_session(&h, 11, "bash_c", 0);
	cr_assert_str_eq(jstr(r, "output"), "b\nc\n", "nothing unacknowledged is lost");
	json_object_put(r);

	/* Malformed acknowledgements and unknown sessions are ignored. */
	harness_send(&h, "{\"jsonrpc\":\"2.0\",\"method\":\"bash.ack\",\"params\":{\"session_id\":\"nope\","
	                 "\"start\":0,\"end\":5}}");
	harness_send(&h, "{\"jsonrpc\":\"2.0\",\"method\":\"bash.ack\",\"params\":{\"start\":\"x\"}}");
	harness_send(&h, "{\"jsonrpc\":\"2.0\",\"method\":\"bash.nack\"}");
	json_object_put(call(&h, 12, "bash.list", "{}"));
	harness_stop(&h);
}

Test(bash_ack, replies_waiting_for_the_previous_attachment_are_forgotten)
{
	struct harness h;
	harness_start(&h);
	assert_attached(hello(&h, 1, "attach-1"), true);
	json_object_put(call(&h, 2, "bash.start",
	                     "{\"session_id\":\"bash_w\",\"command\":\"cat\",\"interactive\":true,"
	                     "\"yield_time_ms\":0}"));
	/* A poll of the old attachment waits; then a new control plane comes. */
	harness_send(&h, RPC, 3, "bash.poll", "{\"session_id\":\"bash_w\",\"yield_time_ms\":60000}");
	assert_attached(hello(&h, 4, "attach-2"), true);
	input(&h, 5, "bash_w", "z\\n");
	json_object *r = poll_session(&h, 6, "bash_w", 10000);
	cr_assert_str_eq(jstr(r, "output"), "z\n", "the new attachment's poll gets the output");
	json_object_put(r);
	/* Waiters are answered in arrival order, so an answer to 3 would have
	 * come before 6. */
	cr_assert_null(harness_wait(&h, 3, 100), "the old attachment's poll is never answered");
	harness_stop(&h);
}

Test(bash_ack, acknowledged_offset_survives_a_restart_of_the_helper)
{
	struct harness h;
	harness_start(&h);
	assert_attached(hello(&h, 1, "attach-1"), true);
	json_object *r =
	    call(&h, 2, "bash.start", "{\"session_id\":\"bash_p\",\"command\":\"echo p1\",\"yield_time_ms\":10000}");
	cr_assert_str_eq(jstr(r, "output"), "p1\n");
	harness_ack(&h, r, true);
	json_object_put(r);
	r = call(&h, 3, "bash.start", "{\"session_id\":\"bash_q\",\"command\":\"echo q1\",\"yield_time_ms\":10000}");
	cr_assert_str_eq(jstr(r, "output"), "q1\n");
	json_object_put(r);
	/* Acknowledgements are notifications: a request behind them makes sure
	 * they were read before the restart. */
	json_object_put(call(&h, 4, "bash.list", "{}"));

	harness_restart(&h, SIGKILL);
	assert_attached(hello(&h, 5, "attach-2"), true);
	r = poll_session(&h, 6, "bash_p", 0);
	cr_assert_str_eq(jstr(r, "output"), "");
	cr_assert_str_eq(jstr(r, "status"), "exited");
	json_object_put(r);
	r = poll_session(&h, 7, "bash_q", 0);
	cr_assert_str_eq(jstr(r, "output"), "q1\n");
	cr_assert_str_eq(jstr(r, "status"), "exited");
	json_object_put(r);
	harness_stop(&h);
}

Test(bash_ack, the_attach_notification_rewinds_like_a_new_hello)
{
	struct harness h;
	harness_start(&h);
	harness_send(&h, "{\"jsonrpc\":\"2.0\",\"method\":\"attach\",\"params\":{\"attach_id\":\"attach-1\"}}");
	json_object *r =
	    call(&h, 1, "bash.start", "{\"session_id\":\"bash_n\",\"command\":\"echo n1\",\"yield_time_ms\":10000}");
	cr_assert_str_eq(jstr(r, "output"), "n1\n");
	json_object_put(r);
	/* A control plane that attaches without saying hello (reconcile). */
	harness_send(&h, "{\"jsonrpc\":\"2.0\",\"method\":\"attach\",\"params\":{\"attach_id\":\"attach-2\"}}");
	r = poll_session(&h, 2, "bash_n", 0);
	cr_assert_str_eq(jstr(r, "output"), "n1\n");
	json_object_put(r);
	/* Its hello later names the same attachment: nothing more happens. */
	assert_attached(hello(&h, 3, "attach-2"), false);
	r = poll_session(&h, 4, "bash_n", 0);
	cr_assert_str_eq(jstr(r, "output"), "");
	json_object_put(r);
	harness_stop(&h);
}
