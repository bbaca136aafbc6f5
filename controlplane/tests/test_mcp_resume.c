/* test_mcp_resume.c: the event buffer behind resumable SSE streams
 * (mcp/resume.c; MCP basic/transports "Resumability and Redelivery"): event
 * ids name their stream, a resume gets exactly the events after its id (no
 * duplicate, no gap) and follows a running stream live, foreign, unknown,
 * expired and trimmed ids are refused as such, and every bound holds. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "mcp/internal.h"

static const struct mcp_resume_limits roomy = {
    .max_streams = 8, .max_stream_bytes = 1 << 20, .max_bytes = 4 << 20, .keep_ms = 60000};

/* Reads r to its end; returns the text (owned) and *ret_rc the last read's value. */
static char *read_all(struct mcp_stream_reader *r, ssize_t *ret_rc)
{
	size_t cap = 1 << 16, len = 0;
	char *out = calloc(1, cap);
	ssize_t n;
	char buf[7]; /* small on purpose: events are handed out in pieces */
	while ((n = mcp_stream_read(r, buf, sizeof(buf))) > 0) {
		cr_assert_lt(len + (size_t)n, cap);
		memcpy(out + len, buf, (size_t)n);
		len += (size_t)n;
	}
	*ret_rc = n;
	return out;
}

static void event_id(const struct mcp_stream *s, int seq, char *buf, size_t size)
{
	snprintf(buf, size, "%s-%d", mcp_stream_key(s), seq);
}

/* The exact SSE text of events first..last of s, whose data is {"n":N}. */
static void expected(const struct mcp_stream *s, int first, int last, char *buf, size_t size)
{
	size_t used = 0;
	buf[0] = '\0';
	for (int i = first; i <= last; i++)
		used += (size_t)snprintf(buf + used, size - used, "id: %s-%d\ndata: {\"n\":%d}\n\n", mcp_stream_key(s),
		                         i, i);
}

static void append_n(struct mcp_stream *s, int from, int to)
{
	char json[32];
	for (int i = from; i <= to; i++) {
		snprintf(json, sizeof(json), "{\"n\":%d}", i);
		cr_assert_eq(mcp_stream_append(s, json), 0);
	}
}

Test(mcp_resume, ids_name_the_stream_and_a_reader_gets_every_event)
{
	struct mcp_resume *t = mcp_resume_new(&roomy);
	struct mcp_stream *a = NULL, *b = NULL;
	cr_assert_eq(mcp_stream_open(t, NULL, &a, NULL), 0);
	cr_assert_eq(mcp_stream_open(t, NULL, &b, NULL), 0);
	cr_assert_str_neq(mcp_stream_key(a), mcp_stream_key(b), "each stream has its own key");
	cr_assert_eq(strlen(mcp_stream_key(a)), MCP_STREAM_KEY_LEN);
	struct mcp_stream_reader *r = mcp_stream_reader_new(a);
	append_n(a, 1, 3);
	char want[1024];
	expected(a, 1, 3, want, sizeof(want));
	mcp_stream_end(a, MCP_STREAM_COMPLETE);
	ssize_t rc;
	char *text = read_all(r, &rc);
	cr_assert_eq(rc, 0, "a complete stream ends cleanly");
	cr_assert_str_eq(text, want);
	free(text);
	mcp_stream_reader_free(r);
	mcp_stream_end(b, MCP_STREAM_DISCARD);
	cr_assert_eq(mcp_resume_count(t, NULL), 1, "a discarded stream is not kept");
	mcp_resume_free(t);
}

Test(mcp_resume, a_resume_gets_the_events_after_its_id_and_no_other)
{
	struct mcp_resume *t = mcp_resume_new(&roomy);
	struct mcp_stream *s = NULL, *other = NULL;
	cr_assert_eq(mcp_stream_open(t, "session-a", &s, NULL), 0);
	cr_assert_eq(mcp_stream_open(t, "session-a", &other, NULL), 0);
	append_n(s, 1, 5);
	append_n(other, 1, 2);
	mcp_stream_end(s, MCP_STREAM_COMPLETE);
	mcp_stream_end(other, MCP_STREAM_COMPLETE);
	for (int last = 0; last <= 5; last++) {
		char id[64], want[1024];
		event_id(s, last, id, sizeof(id));
		struct mcp_stream_reader *r = NULL;
		struct cp_error *err = NULL;
		cr_assert_eq(mcp_stream_resume(t, id, "session-a", &r, &err), 0, "%s: %s", id, err ? err->message : "");
		ssize_t rc;
		char *text = read_all(r, &rc);
		cr_assert_eq(rc, 0);
		expected(s, last + 1, 5, want, sizeof(want));
		cr_assert_str_eq(text, want, "after event %d", last);
		free(text);
		mcp_stream_reader_free(r);
	}
	mcp_resume_free(t);
}

struct later {
	struct mcp_stream *s;
};

static void *append_later(void *arg)
{
	struct later *l = arg;
	usleep(50 * 1000);
	append_n(l->s, 3, 4);
	mcp_stream_end(l->s, MCP_STREAM_COMPLETE);
	return NULL;
}

Test(mcp_resume, a_resume_of_a_running_stream_continues_live, .timeout = 10)
{
	struct mcp_resume *t = mcp_resume_new(&roomy);
	struct mcp_stream *s = NULL;
	cr_assert_eq(mcp_stream_open(t, NULL, &s, NULL), 0);
	append_n(s, 1, 2);
	char id[64], want[1024];
	event_id(s, 1, id, sizeof(id));
	struct mcp_stream_reader *r = NULL;
	/* A stateless stream is found by its key, whatever session is sent. */
	cr_assert_eq(mcp_stream_resume(t, id, "any", &r, NULL), 0);
	struct later l = {s};
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, append_later, &l), 0);
	ssize_t rc;
	char *text = read_all(r, &rc);
	pthread_join(th, NULL);
	cr_assert_eq(rc, 0);
	expected(s, 2, 4, want, sizeof(want));
	cr_assert_str_eq(text, want);
	free(text);
	mcp_stream_reader_free(r);
	mcp_resume_free(t);
}

static enum cp_error_code resume_fails(struct mcp_resume *t, const char *id, const char *session)
{
	struct mcp_stream_reader *r = NULL;
	struct cp_error *err = NULL;
	cr_assert_lt(mcp_stream_resume(t, id, session, &r, &err), 0, "%s resumed", id);
	cr_assert_null(r);
	enum cp_error_code code = err->code;
	cp_error_free(err);
	return code;
}

Test(mcp_resume, bad_foreign_and_unknown_ids_are_refused)
{
	struct mcp_resume *t = mcp_resume_new(&roomy);
	struct mcp_stream *s = NULL;
	cr_assert_eq(mcp_stream_open(t, "session-a", &s, NULL), 0);
	append_n(s, 1, 2);
	char id[64];
	event_id(s, 1, id, sizeof(id));
	cr_assert_eq(resume_fails(t, id, "session-b"), CP_ERR_NOT_FOUND, "another session's stream");
	cr_assert_eq(resume_fails(t, id, NULL), CP_ERR_NOT_FOUND, "a session stream without the session");
	cr_assert_eq(resume_fails(t, "0123456789abcdef-1", "session-a"), CP_ERR_NOT_FOUND);
	event_id(s, 3, id, sizeof(id));
	cr_assert_eq(resume_fails(t, id, "session-a"), CP_ERR_INVALID_ARGUMENT, "never sent");
	const char *bad[] = {"",
	                     "7",
	                     "abc-1",
	                     "0123456789ABCDEF-1",
	                     "0123456789abcdef-",
	                     "0123456789abcdef-x",
	                     "0123456789abcdef-1x",
	                     "0123456789abcdef--1",
	                     "0123456789abcdef-99999999999999999999999"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(resume_fails(t, bad[i], "session-a"), CP_ERR_INVALID_ARGUMENT, "'%s'", bad[i]);
	mcp_stream_end(s, MCP_STREAM_COMPLETE);
	mcp_resume_free(t);
}

Test(mcp_resume, an_abandoned_stream_replays_then_ends_with_an_error)
{
	struct mcp_resume *t = mcp_resume_new(&roomy);
	struct mcp_stream *s = NULL;
	cr_assert_eq(mcp_stream_open(t, NULL, &s, NULL), 0);
	append_n(s, 1, 2);
	mcp_stream_end(s, MCP_STREAM_ABANDONED); /* cancelled: no response */
	char id[64];
	event_id(s, 1, id, sizeof(id));
	struct mcp_stream_reader *r = NULL;
	cr_assert_eq(mcp_stream_resume(t, id, NULL, &r, NULL), 0);
	ssize_t rc;
	char *text = read_all(r, &rc);
	cr_assert_eq(rc, -1);
	cr_assert_not_null(strstr(text, "data: {\"n\":2}"));
	free(text);
	mcp_stream_reader_free(r);
	mcp_resume_free(t);
}

Test(mcp_resume, bounds_on_bytes_count_and_time_hold)
{
	/* Bytes per stream: the oldest events go, the newest stays; a resume
	 * that needs a dropped one is refused as LIMIT, not served with a gap. */
	struct mcp_resume_limits small = {
	    .max_streams = 3, .max_stream_bytes = 200, .max_bytes = 1000, .keep_ms = 60000};
	struct mcp_resume *t = mcp_resume_new(&small);
	struct mcp_stream *s = NULL;
	cr_assert_eq(mcp_stream_open(t, NULL, &s, NULL), 0);
	struct mcp_stream_reader *live = mcp_stream_reader_new(s);
	append_n(s, 1, 20);
	size_t bytes = 0;
	mcp_resume_count(t, &bytes);
	cr_assert_leq(bytes, 200);
	cr_assert_gt(bytes, 0);
	char id[64];
	event_id(s, 1, id, sizeof(id));
	cr_assert_eq(resume_fails(t, id, NULL), CP_ERR_LIMIT);
	event_id(s, 19, id, sizeof(id));
	struct mcp_stream_reader *r = NULL;
	cr_assert_eq(mcp_stream_resume(t, id, NULL, &r, NULL), 0, "the newest events are kept");
	mcp_stream_end(s, MCP_STREAM_COMPLETE);
	ssize_t rc;
	char *text = read_all(r, &rc);
	cr_assert_eq(rc, 0);
	cr_assert_str_eq(strstr(text, "data: "), "data: {\"n\":20}\n\n");
	free(text);
	mcp_stream_reader_free(r);
	char buf[64];
	cr_assert_eq(mcp_stream_read(live, buf, sizeof(buf)), -1, "a reader whose events were dropped fails");
	mcp_stream_reader_free(live);

	/* Count: ended streams beyond max_streams are dropped, oldest first. */
	struct mcp_stream *first = NULL;
	cr_assert_eq(mcp_stream_open(t, NULL, &first, NULL), 0);
	append_n(first, 1, 1);
	char first_id[64];
	event_id(first, 1, first_id, sizeof(first_id));
	mcp_stream_end(first, MCP_STREAM_COMPLETE);
	for (int i = 0; i < 5; i++) {
		struct mcp_stream *x = NULL;
		cr_assert_eq(mcp_stream_open(t, NULL, &x, NULL), 0);
		append_n(x, 1, 1);
		mcp_stream_end(x, MCP_STREAM_COMPLETE);
	}
	cr_assert_leq(mcp_resume_count(t, NULL), 3);
	struct mcp_stream_reader *gone = NULL;
	struct cp_error *err = NULL;
	cr_assert_lt(mcp_stream_resume(t, first_id, NULL, &gone, &err), 0);
	cr_assert_eq(err->code, CP_ERR_NOT_FOUND);
	cp_error_free(err);
	mcp_resume_free(t);

	/* Time: with keep_ms 0 an ended stream is gone at once; a running one stays. */
	struct mcp_resume_limits now = roomy;
	now.keep_ms = 0;
	t = mcp_resume_new(&now);
	struct mcp_stream *running = NULL, *ended = NULL;
	cr_assert_eq(mcp_stream_open(t, NULL, &running, NULL), 0);
	cr_assert_eq(mcp_stream_open(t, NULL, &ended, NULL), 0);
	append_n(running, 1, 1);
	append_n(ended, 1, 1);
	char ended_id[64], running_id[64];
	event_id(ended, 1, ended_id, sizeof(ended_id));
	event_id(running, 1, running_id, sizeof(running_id));
	mcp_stream_end(ended, MCP_STREAM_COMPLETE);
	cr_assert_eq(resume_fails(t, ended_id, NULL), CP_ERR_NOT_FOUND);
	cr_assert_eq(mcp_stream_resume(t, running_id, NULL, &r, NULL), 0);
	mcp_stream_reader_free(r);
	mcp_stream_end(running, MCP_STREAM_COMPLETE);
	mcp_resume_free(t);
}

static void *shutdown_later(void *arg)
{
	usleep(50 * 1000);
	mcp_resume_shutdown(arg);
	return NULL;
}

Test(mcp_resume, shutdown_wakes_a_blocked_reader, .timeout = 10)
{
	struct mcp_resume *t = mcp_resume_new(&roomy);
	struct mcp_stream *s = NULL;
	cr_assert_eq(mcp_stream_open(t, NULL, &s, NULL), 0);
	struct mcp_stream_reader *r = mcp_stream_reader_new(s);
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, shutdown_later, t), 0);
	char buf[16];
	cr_assert_eq(mcp_stream_read(r, buf, sizeof(buf)), -1);
	pthread_join(th, NULL);
	mcp_stream_reader_free(r);
	mcp_stream_end(s, MCP_STREAM_COMPLETE);
	mcp_resume_free(t);
}
