/* test_mcp_sse.c: the SSE answers of the Streamable HTTP transport
 * (mcp/sse.c) end to end, driven by libcurl (mcp_http_fixture.h): progress
 * events before the result and while the call runs, cancellation, and
 * resuming a stream with Last-Event-ID. */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "mcp/mcp.h"

#include "mcp_http_fixture.h"

TestSuite(mcp_sse, .init = hsetup, .fini = hteardown, .timeout = 20);

Test(mcp_sse, progress_comes_as_sse_events_before_the_result)
{
	struct hreply r;
	hreq(&r, "POST", "/mcp",
	     "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
	     "\"_meta\":{\"progressToken\":\"tok\"},\"arguments\":{\"progress\":true}}}",
	     NULL);
	cr_assert_eq(r.status, 200);
	cr_assert(strncmp(r.ctype, "text/event-stream", 17) == 0, "content type %s", r.ctype);
	/* Three events: progress 1/2, progress 2/2, the response; each with its
	 * own id and one data line. */
	char ids[3][32] = {{0}};
	struct json_object *msgs[3] = {0};
	int n = 0;
	char *save = NULL;
	for (char *ev = strtok_r(r.body, "\n", &save); ev; ev = strtok_r(NULL, "\n", &save)) {
		if (strncmp(ev, "id: ", 4) == 0) {
			cr_assert_lt(n, 3, "%s", ev);
			snprintf(ids[n], sizeof(ids[n]), "%s", ev + 4);
		} else {
			cr_assert(strncmp(ev, "data: ", 6) == 0, "unexpected line %s", ev);
			cr_assert(ids[n][0], "data before id");
			msgs[n] = json_tokener_parse(ev + 6);
			cr_assert_not_null(msgs[n], "%s", ev);
			n++;
		}
	}
	cr_assert_eq(n, 3);
	cr_assert(strcmp(ids[0], ids[1]) != 0 && strcmp(ids[1], ids[2]) != 0 && strcmp(ids[0], ids[2]) != 0);
	for (int i = 0; i < 2; i++) {
		struct json_object *m, *p, *v;
		cr_assert(json_object_object_get_ex(msgs[i], "method", &m));
		cr_assert_str_eq(json_object_get_string(m), "notifications/progress");
		cr_assert(json_object_object_get_ex(msgs[i], "params", &p));
		cr_assert(json_object_object_get_ex(p, "progressToken", &v));
		cr_assert_str_eq(json_object_get_string(v), "tok");
		cr_assert(json_object_object_get_ex(p, "progress", &v));
		cr_assert_eq(json_object_get_int(v), i + 1);
		cr_assert(json_object_object_get_ex(p, "total", &v));
		cr_assert(json_object_object_get_ex(p, "message", &v) == (i == 0));
		cr_assert(!json_object_object_get_ex(msgs[i], "id", NULL));
	}
	struct json_object *id;
	cr_assert(json_object_object_get_ex(msgs[2], "result", NULL));
	cr_assert(json_object_object_get_ex(msgs[2], "id", &id));
	cr_assert_eq(json_object_get_int(id), 9);
	for (int i = 0; i < 3; i++)
		json_object_put(msgs[i]);
	free_reply(&r);

	/* Without a progressToken the same call answers plain JSON. */
	hreq(&r, "POST", "/mcp",
	     "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
	     "\"arguments\":{\"progress\":true}}}",
	     NULL);
	cr_assert_eq(r.status, 200);
	json_object_put(hjson(&r));
	free_reply(&r);
}

struct cancel_call {
	CURLcode rc;
	long status;
	struct hreply r;
	const char *body; /* NULL: the plain waiting call */
};

static void *post_waiting_call(void *arg)
{
	struct cancel_call *cc = arg;
	memset(&cc->r, 0, sizeof(cc->r));
	static const char body[] = "{\"jsonrpc\":\"2.0\",\"id\":\"c-1\",\"method\":\"tools/call\",\"params\":{"
	                           "\"name\":\"echo\",\"arguments\":{\"wait_cancel_ms\":5000}}}";
	CURL *c = curl_easy_init();
	char url[256];
	snprintf(url, sizeof(url), "%s/mcp", base_url);
	struct curl_slist *hl = curl_slist_append(NULL, "Content-Type: application/json");
	hl = curl_slist_append(hl, "Accept: application/json, text/event-stream");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, cc->body ? cc->body : body);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &cc->r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
	cc->rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &cc->status);
	curl_slist_free_all(hl);
	curl_easy_cleanup(c);
	return NULL;
}

Test(mcp_sse, a_cancelled_request_gets_no_response)
{
	struct cancel_call cc = {0};
	pthread_t th;
	int64_t start = clock_monotonic_ms();
	pthread_create(&th, NULL, post_waiting_call, &cc);
	usleep(300 * 1000);
	/* A cancel for another id (and one that is malformed) changes nothing. */
	struct hreply r;
	hreq(&r, "POST", "/mcp",
	     "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":\"c-2\"}}", NULL);
	cr_assert_eq(r.status, 202);
	free_reply(&r);
	hreq(&r, "POST", "/mcp", "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{}}", NULL);
	cr_assert_eq(r.status, 202);
	free_reply(&r);
	hreq(&r, "POST", "/mcp",
	     "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":\"c-1\","
	     "\"reason\":\"user\"}}",
	     NULL);
	cr_assert_eq(r.status, 202);
	free_reply(&r);
	pthread_join(th, NULL);
	int64_t ms = clock_monotonic_ms() - start;
	cr_assert_neq(cc.rc, CURLE_OK, "a cancelled call was answered (status %ld): %s", cc.status,
	              cc.r.body ? cc.r.body : "");
	cr_assert_null(cc.r.body);
	cr_assert_lt(ms, 2500, "the handler saw the cancellation late (%lld ms)", (long long)ms);
}

struct live_reply {
	struct hreply r;
	int64_t start, first_progress_ms, end_ms;
};

static size_t on_live_body(char *data, size_t size, size_t n, void *arg)
{
	struct live_reply *lr = arg;
	size_t k = on_body(data, size, n, &lr->r);
	if (!lr->first_progress_ms && strstr(lr->r.body, "notifications/progress"))
		lr->first_progress_ms = clock_monotonic_ms() - lr->start;
	return k;
}

Test(mcp_sse, progress_events_are_sent_while_the_call_runs)
{
	static const char body[] = "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"tools/call\",\"params\":{"
	                           "\"name\":\"echo\",\"_meta\":{\"progressToken\":1},\"arguments\":{"
	                           "\"sleep_after_ms\":600}}}";
	struct live_reply lr;
	memset(&lr, 0, sizeof(lr));
	CURL *c = curl_easy_init();
	char url[256];
	snprintf(url, sizeof(url), "%s/mcp", base_url);
	struct curl_slist *hl = curl_slist_append(NULL, "Content-Type: application/json");
	hl = curl_slist_append(hl, "Accept: application/json, text/event-stream");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_live_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &lr);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &lr.r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
	lr.start = clock_monotonic_ms();
	CURLcode rc = curl_easy_perform(c);
	lr.end_ms = clock_monotonic_ms() - lr.start;
	curl_slist_free_all(hl);
	curl_easy_cleanup(c);
	cr_assert_eq(rc, CURLE_OK);
	cr_assert(strncmp(lr.r.ctype, "text/event-stream", 17) == 0, "content type %s", lr.r.ctype);
	cr_assert(strstr(lr.r.body, "\"id\":11"), "%s", lr.r.body);
	cr_assert_gt(lr.first_progress_ms, 0);
	cr_assert_lt(lr.first_progress_ms, 400, "progress came at %lld ms", (long long)lr.first_progress_ms);
	cr_assert_geq(lr.end_ms, 550);
	free_reply(&lr.r);
}

Test(mcp_sse, a_cancelled_streaming_call_ends_without_its_response)
{
	struct cancel_call cc = {.body = "{\"jsonrpc\":\"2.0\",\"id\":\"c-1\",\"method\":\"tools/call\",\"params\":{"
	                                 "\"name\":\"echo\",\"_meta\":{\"progressToken\":2},\"arguments\":{"
	                                 "\"progress\":1,\"wait_cancel_ms\":5000}}}"};
	pthread_t th;
	int64_t start = clock_monotonic_ms();
	pthread_create(&th, NULL, post_waiting_call, &cc);
	usleep(300 * 1000);
	struct hreply r;
	hreq(&r, "POST", "/mcp",
	     "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":\"c-1\"}}", NULL);
	cr_assert_eq(r.status, 202);
	free_reply(&r);
	pthread_join(th, NULL);
	cr_assert_lt(clock_monotonic_ms() - start, 2500);
	cr_assert_not_null(cc.r.body, "the progress events were sent");
	cr_assert(strstr(cc.r.body, "notifications/progress"), "%s", cc.r.body);
	cr_assert_null(strstr(cc.r.body, "\"result\""), "a cancelled call was answered: %s", cc.r.body);
	free_reply(&cc.r);
}

/* ---- resumption (basic/transports, "Resumability and Redelivery") ---- */

/* The "id: " values of body's events, in order; returns how many. */
static int event_ids(const char *body, char ids[][64], int max)
{
	int n = 0;
	for (const char *p = body; (p = strstr(p, "id: ")) && n < max; p += 4) {
		if (p != body && p[-1] != '\n')
			continue;
		size_t len = strcspn(p + 4, "\n");
		snprintf(ids[n++], 64, "%.*s", (int)len, p + 4);
	}
	return n;
}

Test(mcp_sse, a_get_with_last_event_id_replays_the_rest_of_the_stream)
{
	struct hreply r;
	hreq(&r, "POST", "/mcp",
	     "{\"jsonrpc\":\"2.0\",\"id\":\"r-1\",\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
	     "\"_meta\":{\"progressToken\":\"t\"},\"arguments\":{\"progress\":true}}}",
	     NULL);
	cr_assert_eq(r.status, 200);
	char ids[4][64];
	cr_assert_eq(event_ids(r.body, ids, 4), 3, "%s", r.body);
	/* Ids name their stream: one key, then the sequence. */
	cr_assert_eq(strncmp(ids[0], ids[2], 17), 0, "%s %s", ids[0], ids[2]);
	const char *rest = strstr(r.body, ids[1]) - 4; /* "id: <second>..." */
	char header[96];
	snprintf(header, sizeof(header), "Last-Event-ID: %s", ids[0]);
	struct hreply g;
	hreq(&g, "GET", "/mcp", NULL, (const char *const[]){"Accept: text/event-stream", header, NULL});
	cr_assert_eq(g.status, 200, "%s", g.body);
	cr_assert(strncmp(g.ctype, "text/event-stream", 17) == 0);
	cr_assert_str_eq(g.body, rest, "the events after the first, exactly once");
	free_reply(&g);

	/* After the last event: an empty stream that ends at once. */
	snprintf(header, sizeof(header), "Last-Event-ID: %s", ids[2]);
	hreq(&g, "GET", "/mcp", NULL, (const char *const[]){"Accept: text/event-stream", header, NULL});
	cr_assert_eq(g.status, 200);
	cr_assert(g.len == 0, "%s", g.body ? g.body : "");
	free_reply(&g);

	/* Unknown, malformed: 400 with a JSON-RPC error saying so. */
	hreq(&g, "GET", "/mcp", NULL,
	     (const char *const[]){"Accept: text/event-stream", "Last-Event-ID: 0123456789abcdef-1", NULL});
	cr_assert_eq(g.status, 400);
	cr_assert_not_null(strstr(g.body, "unknown or its stream expired"), "%s", g.body);
	free_reply(&g);
	hreq(&g, "GET", "/mcp", NULL, (const char *const[]){"Accept: text/event-stream", "Last-Event-ID: 42", NULL});
	cr_assert_eq(g.status, 400);
	free_reply(&g);
	/* A session that ended: 404, as for a POST. */
	hreq(&g, "GET", "/mcp", NULL,
	     (const char *const[]){"Accept: text/event-stream", header, "Mcp-Session-Id: nosuchsession", NULL});
	cr_assert_eq(g.status, 404);
	free_reply(&g);
	free_reply(&r);
}

/* ---- MCP 2026-07-28 on the same endpoint ---- */
