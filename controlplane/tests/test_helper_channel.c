/* test_helper_channel.c: the helper channel (helper/channel.c) over a
 * socketpair, with a fake helper thread on the other end that reads raw
 * request lines (the attach stream's stdin is not multiplexed) and answers
 * with multiplexed stdout/stderr frames, the way the engine relays them. */
#include <criterion/criterion.h>
#include <errno.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/cancel.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"
#include "helper/helper.h"
#include "tools/tools.h"
#include "proto.h"

/* ---- the fake helper's side ---- */

struct fake {
	int fd;
	char buf[1 << 16];
	size_t len;
	pthread_t thread;
	void (*script)(struct fake *);
	char attach_id[64]; /* from the attach notification that opens the stream */
	int lines;          /* lines read so far */
};

/* Next request line (without '\n'), parsed; NULL at EOF. The attach
 * notification (the first line of every channel) is noted, not returned. */
static struct json_object *fake_read_request(struct fake *f)
{
	for (;;) {
		char *nl = memchr(f->buf, '\n', f->len);
		if (nl) {
			*nl = '\0';
			struct json_object *req = json_tokener_parse(f->buf);
			cr_assert_not_null(req, "request is one JSON line: %s", f->buf);
			size_t used = (size_t)(nl - f->buf) + 1;
			memmove(f->buf, f->buf + used, f->len - used);
			f->len -= used;
			struct json_object *m = NULL, *p = NULL, *a = NULL;
			if (json_object_object_get_ex(req, "method", &m) &&
			    strcmp(json_object_get_string(m), "attach") == 0) {
				cr_assert_eq(f->lines, 0, "attach is the first line");
				cr_assert(json_object_object_get_ex(req, "params", &p) &&
				          json_object_object_get_ex(p, "attach_id", &a));
				snprintf(f->attach_id, sizeof(f->attach_id), "%s", json_object_get_string(a));
				f->lines++;
				json_object_put(req);
				continue;
			}
			f->lines++;
			return req;
		}
		cr_assert_lt(f->len, sizeof(f->buf));
		ssize_t n = recv(f->fd, f->buf + f->len, sizeof(f->buf) - f->len, 0);
		if (n <= 0)
			return NULL;
		f->len += (size_t)n;
	}
}

static int64_t req_id(struct json_object *req)
{
	struct json_object *v = NULL;
	cr_assert(json_object_object_get_ex(req, "id", &v));
	return json_object_get_int64(v);
}

static const char *req_method(struct json_object *req)
{
	struct json_object *v = NULL;
	cr_assert(json_object_object_get_ex(req, "method", &v));
	return json_object_get_string(v);
}

static void send_raw(int fd, const void *data, size_t len)
{
	const char *p = data;
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return; /* the channel closed its end */
		}
		p += n;
		len -= (size_t)n;
	}
}

static size_t frame_header(unsigned char *h, int stream, size_t len)
{
	h[0] = (unsigned char)stream;
	h[1] = h[2] = h[3] = 0;
	h[4] = (unsigned char)(len >> 24);
	h[5] = (unsigned char)(len >> 16);
	h[6] = (unsigned char)(len >> 8);
	h[7] = (unsigned char)len;
	return 8;
}

static void send_frame(int fd, int stream, const char *data, size_t len)
{
	unsigned char h[8];
	frame_header(h, stream, len);
	send_raw(fd, h, 8);
	send_raw(fd, data, len);
}

static void send_line(int fd, const char *line)
{
	char *text = NULL;
	cr_assert_gt(asprintf(&text, "%s\n", line), 0);
	send_frame(fd, 1, text, strlen(text));
	free(text);
}

static void answer(struct fake *f, int64_t id, const char *result_json)
{
	char *line = NULL;
	cr_assert_gt(asprintf(&line, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":%s}", (long long)id, result_json), 0);
	send_line(f->fd, line);
	free(line);
}

/* Drains the stream until the channel closes its end. */
static void fake_wait_eof(struct fake *f)
{
	struct json_object *req;
	while ((req = fake_read_request(f)))
		json_object_put(req);
}

static void *fake_main(void *arg)
{
	struct fake *f = arg;
	f->script(f);
	return NULL;
}

/* ---- fixture: a channel on one end, the fake on the other ---- */

static struct fake fake;
static struct helper_channel *ch;

static void start(void (*script)(struct fake *))
{
	int sv[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	memset(&fake, 0, sizeof(fake));
	fake.fd = sv[1];
	fake.script = script;
	struct cp_error *err = NULL;
	cr_assert_eq(helper_channel_new(sv[0], "sbx_test", &tool_bash_receipts, &ch, &err), 0);
	cr_assert_eq(pthread_create(&fake.thread, NULL, fake_main, &fake), 0);
}

static void finish(void)
{
	helper_channel_free(ch);
	ch = NULL;
	pthread_join(fake.thread, NULL);
	close(fake.fd);
}

static struct json_object *call_ok(const char *method, const char *params_json, long timeout_ms)
{
	struct json_object *params = params_json ? json_tokener_parse(params_json) : NULL;
	struct json_object *result = NULL;
	struct cp_error *err = NULL;
	int rc = helper_channel_call(ch, method, params, timeout_ms, &result, &err);
	cr_assert_eq(rc, 0, "%s: %s", method, err ? err->message : "");
	json_object_put(params);
	return result;
}

static struct cp_error *call_fail(const char *method, long timeout_ms)
{
	struct json_object *result = NULL;
	struct cp_error *err = NULL;
	cr_assert_lt(helper_channel_call(ch, method, NULL, timeout_ms, &result, &err), 0, "%s should fail", method);
	cr_assert_null(result);
	cr_assert_not_null(err);
	return err;
}

static const char *str_member(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;
	cr_assert(json_object_object_get_ex(o, key, &v), "no '%s' in %s", key, json_object_to_json_string(o));
	return json_object_get_string(v);
}

/* ---- tests ---- */

static void script_hello(struct fake *f)
{
	struct json_object *req = fake_read_request(f);
	cr_assert_str_eq(str_member(req, "jsonrpc"), "2.0");
	cr_assert_str_eq(req_method(req), "hello");
	struct json_object *params = NULL;
	cr_assert(json_object_object_get_ex(req, "params", &params));
	cr_assert_str_eq(str_member(params, "text"), "two\nlines", "newlines inside strings stay escaped");
	answer(f, req_id(req), "{\"version\":\"1\",\"pid\":1,\"sessions\":0}");
	json_object_put(req);
	fake_wait_eof(f);
}

Test(helper_channel, call_returns_result)
{
	start(script_hello);
	struct json_object *r = call_ok("hello", "{\"text\":\"two\\nlines\"}", 2000);
	cr_assert_str_eq(str_member(r, "version"), "1");
	json_object_put(r);
	cr_assert(helper_channel_alive(ch));
	cr_assert_null(helper_channel_close_reason(ch));
	finish();
}

/* Two calls in flight; answers come back in the opposite order. */
static void script_reverse(struct fake *f)
{
	struct json_object *a = fake_read_request(f), *b = fake_read_request(f);
	cr_assert_neq(req_id(a), req_id(b));
	struct json_object *reqs[2] = {b, a};
	for (int i = 0; i < 2; i++) {
		struct json_object *params = NULL;
		json_object_object_get_ex(reqs[i], "params", &params);
		char result[128];
		snprintf(result, sizeof(result), "{\"method\":\"%s\",\"n\":%d}", req_method(reqs[i]),
		         json_object_get_int(json_object_object_get(params, "n")));
		answer(f, req_id(reqs[i]), result);
	}
	json_object_put(a);
	json_object_put(b);
	fake_wait_eof(f);
}

struct caller {
	const char *method;
	const char *params;
	struct json_object *result;
};

static void *caller_main(void *arg)
{
	struct caller *c = arg;
	c->result = call_ok(c->method, c->params, 5000);
	return NULL;
}

Test(helper_channel, overlapping_calls_answered_out_of_order)
{
	start(script_reverse);
	struct caller c1 = {.method = "bash.poll", .params = "{\"n\":1}"};
	struct caller c2 = {.method = "file.read", .params = "{\"n\":2}"};
	pthread_t t1, t2;
	pthread_create(&t1, NULL, caller_main, &c1);
	pthread_create(&t2, NULL, caller_main, &c2);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	cr_assert_str_eq(str_member(c1.result, "method"), "bash.poll");
	cr_assert_str_eq(str_member(c1.result, "n"), "1");
	cr_assert_str_eq(str_member(c2.result, "method"), "file.read");
	cr_assert_str_eq(str_member(c2.result, "n"), "2");
	json_object_put(c1.result);
	json_object_put(c2.result);
	finish();
}

static void script_errors(struct fake *f)
{
	static const char *const errors[] = {
	    "{\"code\":-32000,\"message\":\"no such file: /workspace/x\",\"data\":{\"code\":\"NOT_FOUND\"}}",
	    "{\"code\":-32000,\"message\":\"output cap\",\"data\":{\"code\":\"LIMIT\"}}",
	    "{\"code\":-32602,\"message\":\"params.path: expected a string\","
	    "\"data\":{\"code\":\"INVALID_ARGUMENT\"}}",
	    "{\"code\":-32601,\"message\":\"unknown method 'nope'\"}",
	    "{\"code\":-32000,\"message\":\"odd\",\"data\":{\"code\":\"SOMETHING_NEW\"}}",
	};
	for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++) {
		struct json_object *req = fake_read_request(f);
		char *line = NULL;
		cr_assert_gt(asprintf(&line, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"error\":%s}", (long long)req_id(req),
		                      errors[i]),
		             0);
		send_line(f->fd, line);
		free(line);
		json_object_put(req);
	}
	fake_wait_eof(f);
}

Test(helper_channel, helper_errors_map_by_data_code)
{
	start(script_errors);
	struct cp_error *err = call_fail("file.read", 2000);
	cr_assert_eq(err->code, CP_ERR_NOT_FOUND);
	cr_assert_str_eq(err->message, "no such file: /workspace/x");
	cp_error_free(err);
	err = call_fail("bash.poll", 2000);
	cr_assert_eq(err->code, CP_ERR_LIMIT);
	cp_error_free(err);
	err = call_fail("file.read", 2000);
	cr_assert_eq(err->code, CP_ERR_INVALID_ARGUMENT);
	cr_assert_str_eq(err->message, "params.path: expected a string");
	cp_error_free(err);
	err = call_fail("nope", 2000);
	cr_assert_eq(err->code, CP_ERR_INTERNAL, "no data.code → INTERNAL");
	cp_error_free(err);
	err = call_fail("x", 2000);
	cr_assert_eq(err->code, CP_ERR_INTERNAL, "unknown data.code → INTERNAL");
	cp_error_free(err);
	cr_assert(helper_channel_alive(ch), "a helper error does not close the channel");
	finish();
}

static void script_late(struct fake *f)
{
	struct json_object *slow = fake_read_request(f);
	usleep(400 * 1000); /* the caller gave up after 150 ms */
	answer(f, req_id(slow), "{\"late\":true}");
	json_object_put(slow);
	struct json_object *next = fake_read_request(f);
	answer(f, req_id(next), "{\"late\":false}");
	json_object_put(next);
	fake_wait_eof(f);
}

Test(helper_channel, timeout_then_late_answer_is_dropped)
{
	start(script_late);
	int64_t t0 = clock_monotonic_ms();
	struct cp_error *err = call_fail("bash.poll", 150);
	int64_t took = clock_monotonic_ms() - t0;
	cr_assert_eq(err->code, CP_ERR_TIMEOUT);
	cr_assert_not_null(strstr(err->message, "sandbox 'sbx_test'"), "%s", err->message);
	cr_assert_not_null(strstr(err->message, "150 ms"), "%s", err->message);
	cr_assert_geq(took, 140);
	cr_assert_lt(took, 1000);
	cp_error_free(err);
	usleep(500 * 1000); /* let the late answer arrive and be dropped */
	cr_assert(helper_channel_alive(ch));
	struct json_object *r = call_ok("hello", NULL, 2000);
	cr_assert_str_eq(str_member(r, "late"), "false", "the late answer never reaches the next call");
	json_object_put(r);
	finish();
}

static void script_eof(struct fake *f)
{
	struct json_object *req = fake_read_request(f);
	json_object_put(req);
	usleep(100 * 1000);
	shutdown(f->fd, SHUT_RDWR); /* the container stopped */
}

Test(helper_channel, eof_fails_pending_with_unavailable)
{
	start(script_eof);
	struct cp_error *err = call_fail("bash.poll", 5000);
	cr_assert_eq(err->code, CP_ERR_UNAVAILABLE);
	cr_assert_not_null(strstr(err->message, "the helper of sandbox 'sbx_test' is not answering: "), "%s",
	                   err->message);
	cp_error_free(err);
	cr_assert_not(helper_channel_alive(ch));
	cr_assert_not_null(strstr(helper_channel_close_reason(ch), "stream ended"));
	err = call_fail("hello", 5000);
	cr_assert_eq(err->code, CP_ERR_UNAVAILABLE, "later calls fail at once");
	cp_error_free(err);
	finish();
}

static void script_huge(struct fake *f)
{
	struct json_object *req = fake_read_request(f);
	json_object_put(req);
	size_t chunk = 1 << 20;
	char *junk = malloc(chunk);
	memset(junk, 'x', chunk);
	memcpy(junk, "{\"id\":1,\"result\":\"", 18);
	for (size_t sent = 0; sent <= PROTO_MAX_REPLY_FRAME; sent += chunk)
		send_frame(f->fd, 1, junk, chunk); /* no newline ever */
	free(junk);
	fake_wait_eof(f);
}

Test(helper_channel, frame_over_limit_closes_channel, .timeout = 60)
{
	start(script_huge);
	struct cp_error *err = call_fail("file.read", 30000);
	cr_assert_eq(err->code, CP_ERR_UNAVAILABLE);
	cr_assert_not_null(strstr(err->message, "limit"), "%s", err->message);
	cp_error_free(err);
	cr_assert_not(helper_channel_alive(ch));
	finish();
}

static void script_stderr(struct fake *f)
{
	struct json_object *req = fake_read_request(f);
	char *line = NULL;
	cr_assert_gt(
	    asprintf(&line, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"ok\":true}}\n", (long long)req_id(req)), 0);
	size_t half = strlen(line) / 2;
	send_frame(f->fd, 2, "helper: started session\nhelper: par", 35);
	send_frame(f->fd, 1, line, half);
	send_frame(f->fd, 2, "tial log line\n", 14);
	send_frame(f->fd, 2, "{\"id\":1,\"result\":{\"ok\":false}}\n", 31); /* stderr is never an answer */
	send_frame(f->fd, 1, line + half, strlen(line) - half);
	free(line);
	json_object_put(req);
	fake_wait_eof(f);
}

Test(helper_channel, stderr_frames_do_not_disturb_stdout)
{
	log_set_debug("helper"); /* exercise the stderr line logger too */
	start(script_stderr);
	struct json_object *r = call_ok("hello", NULL, 2000);
	cr_assert(json_object_get_boolean(json_object_object_get(r, "ok")));
	json_object_put(r);
	finish();
}

/* Three answers, one of them 100 KB, cut into frames of odd sizes with stderr
 * frames between, and written in odd-sized pieces with pauses so the reader
 * sees headers and lines split everywhere. */
static void script_split(struct fake *f)
{
	/* reqs[i] is the request of method "m<i>", whatever order the callers'
	 * threads sent them in (no timing assumption). */
	struct json_object *reqs[3] = {NULL, NULL, NULL};
	for (int i = 0; i < 3; i++) {
		struct json_object *req = fake_read_request(f), *m = NULL;
		cr_assert(json_object_object_get_ex(req, "method", &m));
		const char *name = json_object_get_string(m);
		cr_assert(name[0] == 'm' && name[1] >= '0' && name[1] <= '2' && !reqs[name[1] - '0']);
		reqs[name[1] - '0'] = req;
	}
	char *big = malloc(100001);
	for (int i = 0; i < 100000; i++)
		big[i] = (char)('a' + i % 26);
	big[100000] = '\0';
	char *text = NULL;
	cr_assert_gt(asprintf(&text,
	                      "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"v\":\"first\"}}\n"
	                      "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"v\":\"%s\"}}\n"
	                      "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"v\":\"third\"}}\n",
	                      (long long)req_id(reqs[2]), (long long)req_id(reqs[0]), big, (long long)req_id(reqs[1])),
	             0);
	free(big);
	size_t len = strlen(text);

	/* Multiplex: stdout frames of sizes 1, 8, 27, 64, ... cycling, a stderr
	 * frame after every third one. */
	char *wire = malloc(len * 2 + 65536);
	size_t w = 0, off = 0, k = 0;
	static const size_t sizes[] = {1, 8, 27, 64, 125, 216, 343, 5000, 2, 3};
	while (off < len) {
		size_t n = sizes[k % 10];
		if (n > len - off)
			n = len - off;
		w += frame_header((unsigned char *)wire + w, 1, n);
		memcpy(wire + w, text + off, n);
		w += n;
		off += n;
		if (++k % 3 == 0) {
			w += frame_header((unsigned char *)wire + w, 2, 6);
			memcpy(wire + w, "noise\n", 6);
			w += 6;
		}
	}
	static const size_t pieces[] = {1, 3, 7, 8, 9, 100, 4096, 13, 1, 65536};
	for (size_t pos = 0, i = 0; pos < w; i++) {
		size_t n = pieces[i % 10];
		if (n > w - pos)
			n = w - pos;
		send_raw(f->fd, wire + pos, n);
		pos += n;
		if (i % 4 == 0)
			usleep(200);
	}
	free(wire);
	free(text);
	for (int i = 0; i < 3; i++)
		json_object_put(reqs[i]);
	fake_wait_eof(f);
}

static void *split_caller(void *arg)
{
	struct caller *c = arg;
	c->result = call_ok(c->method, NULL, 10000);
	return NULL;
}

Test(helper_channel, frames_split_arbitrarily)
{
	start(script_split);
	struct caller c[3] = {{.method = "m0"}, {.method = "m1"}, {.method = "m2"}};
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, split_caller, &c[i]);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	const char *v0 = str_member(c[0].result, "v");
	cr_assert_eq(strlen(v0), 100000);
	for (int i = 0; i < 100000; i++)
		cr_assert_eq(v0[i], 'a' + i % 26);
	cr_assert_str_eq(str_member(c[1].result, "v"), "third");
	cr_assert_str_eq(str_member(c[2].result, "v"), "first");
	for (int i = 0; i < 3; i++)
		json_object_put(c[i].result);
	finish();
}

static void script_noise(struct fake *f)
{
	struct json_object *req = fake_read_request(f);
	send_line(f->fd, "this is not json");
	send_line(f->fd, "{\"jsonrpc\":\"2.0\",\"method\":\"notify\"}");
	send_line(f->fd, "{\"jsonrpc\":\"2.0\",\"id\":999,\"result\":{}}");
	send_line(f->fd, "");
	answer(f, req_id(req), "{\"ok\":1}");
	json_object_put(req);
	fake_wait_eof(f);
}

Test(helper_channel, noise_lines_are_ignored)
{
	start(script_noise);
	struct json_object *r = call_ok("hello", NULL, 2000);
	cr_assert_str_eq(str_member(r, "ok"), "1");
	json_object_put(r);
	cr_assert(helper_channel_alive(ch));
	finish();
}

static void script_corrupt(struct fake *f)
{
	struct json_object *req = fake_read_request(f);
	json_object_put(req);
	send_raw(f->fd, "HTTP/1.1 500 oops\r\n", 19); /* not a frame header */
	fake_wait_eof(f);
}

Test(helper_channel, corrupt_stream_closes_channel)
{
	start(script_corrupt);
	struct cp_error *err = call_fail("hello", 5000);
	cr_assert_eq(err->code, CP_ERR_UNAVAILABLE);
	cr_assert_not_null(strstr(err->message, "corrupt"), "%s", err->message);
	cp_error_free(err);
	finish();
}

/* Reads requests and never answers, until EOF. */
static void script_silent(struct fake *f)
{
	struct json_object *req;
	while ((req = fake_read_request(f)))
		json_object_put(req);
}

struct held_call {
	struct helper_channel *ref;
	struct cp_error *err;
	int64_t took;
};

static void *held_caller(void *arg)
{
	struct held_call *h = arg;
	struct json_object *result = NULL;
	int64_t t0 = clock_monotonic_ms();
	helper_channel_call(h->ref, "bash.poll", NULL, 10000, &result, &h->err);
	h->took = clock_monotonic_ms() - t0;
	helper_channel_unref(h->ref);
	return NULL;
}

Test(helper_channel, free_fails_calls_holding_a_reference)
{
	start(script_silent);
	struct held_call h = {.ref = helper_channel_ref(ch)};
	pthread_t t;
	pthread_create(&t, NULL, held_caller, &h);
	usleep(100 * 1000);
	helper_channel_free(ch); /* the table drops the channel while a call is in flight */
	ch = NULL;
	pthread_join(t, NULL);
	cr_assert_not_null(h.err);
	cr_assert_eq(h.err->code, CP_ERR_UNAVAILABLE);
	cr_assert_not_null(strstr(h.err->message, "closed"), "%s", h.err->message);
	cr_assert_lt(h.took, 2000);
	cp_error_free(h.err);
	pthread_join(fake.thread, NULL);
	close(fake.fd);
}

Test(helper_channel, ref_keeps_memory_after_free)
{
	start(script_silent);
	struct helper_channel *ref = helper_channel_ref(ch);
	helper_channel_free(ch);
	ch = NULL;
	cr_assert_not(helper_channel_alive(ref));
	cr_assert_not_null(helper_channel_close_reason(ref));
	struct json_object *result = NULL;
	struct cp_error *err = NULL;
	cr_assert_lt(helper_channel_call(ref, "hello", NULL, 1000, &result, &err), 0);
	cr_assert_eq(err->code, CP_ERR_UNAVAILABLE);
	cp_error_free(err);
	helper_channel_unref(ref);
	helper_channel_free(NULL);
	helper_channel_unref(NULL);
	pthread_join(fake.thread, NULL);
	close(fake.fd);
}

Test(helper_channel, bad_arguments)
{
	start(script_silent);
	struct json_object *result = NULL;
	struct cp_error *err = NULL;
	cr_assert_lt(helper_channel_call(ch, "hello", NULL, 0, &result, &err), 0);
	cr_assert_eq(err->code, CP_ERR_INVALID_ARGUMENT);
	cp_error_free(err);
	err = NULL;
	cr_assert_lt(helper_channel_new(-1, "x", NULL, &ch, &err), 0);
	cr_assert_eq(err->code, CP_ERR_INVALID_ARGUMENT);
	cp_error_free(err);
	finish();
}

/* A result that is not an object (a broken or forged answer) is refused, and
 * the channel keeps working for the next call. */
static void script_non_object(struct fake *f)
{
	const char *bad[] = {"null", "\"x\"", "[]", "5"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct json_object *req = fake_read_request(f);
		answer(f, req_id(req), bad[i]);
		json_object_put(req);
	}
	struct json_object *req = fake_read_request(f);
	answer(f, req_id(req), "{\"ok\":true}");
	json_object_put(req);
	fake_wait_eof(f);
}

Test(helper_channel, non_object_result_is_refused)
{
	start(script_non_object);
	for (int i = 0; i < 4; i++) {
		struct cp_error *err = call_fail("bash.start", 2000);
		cr_expect_eq(err->code, CP_ERR_INTERNAL);
		cr_expect(strstr(err->message, "malformed result") != NULL, "%s", err->message);
		cp_error_free(err);
	}
	struct json_object *r = call_ok("hello", NULL, 2000);
	json_object_put(r);
	cr_assert(helper_channel_alive(ch));
	finish();
}

/* ---- cancellation (MCP notifications/cancelled ends the wait) ---- */

static int cancel_seen;    /* the fake read the request (atomic) */
static int cancel_release; /* the test let the fake answer late (atomic) */

static void script_cancel(struct fake *f)
{
	struct json_object *req = fake_read_request(f);
	cr_assert_str_eq(req_method(req), "bash.start");
	__atomic_store_n(&cancel_seen, 1, __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&cancel_release, __ATOMIC_SEQ_CST))
		usleep(10 * 1000);
	answer(f, req_id(req), "{\"late\":\"true\"}"); /* nobody waits any more: dropped */
	json_object_put(req);
	req = fake_read_request(f);
	answer(f, req_id(req), "{\"late\":\"false\"}");
	json_object_put(req);
	fake_wait_eof(f);
}

static void *fire_when_seen(void *arg)
{
	while (!__atomic_load_n(&cancel_seen, __ATOMIC_SEQ_CST))
		usleep(10 * 1000);
	cp_cancel_fire(arg);
	return NULL;
}

Test(helper_channel, cancel_ends_the_wait_and_keeps_the_channel, .timeout = 20)
{
	cancel_seen = cancel_release = 0;
	start(script_cancel);
	struct cp_cancel cancel;
	cp_cancel_init(&cancel);
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, fire_when_seen, &cancel), 0);
	struct json_object *result = NULL;
	struct cp_error *err = NULL;
	/* A yield of minutes: only the cancel can end this wait within the
	 * test's own timeout. */
	cr_assert_lt(helper_channel_call_cancel(ch, "bash.start", NULL, 600000, &cancel, &result, &err), 0);
	pthread_join(t, NULL);
	cr_assert_null(result);
	cr_assert_eq(err->code, CP_ERR_UNAVAILABLE);
	cr_assert_not_null(strstr(err->message, "cancelled by the client"), "%s", err->message);
	cr_assert_not_null(strstr(err->message, "'bash.start'"), "%s", err->message);
	cp_error_free(err);
	err = NULL;
	/* The channel is intact: the late answer is dropped, the next call gets its own. */
	__atomic_store_n(&cancel_release, 1, __ATOMIC_SEQ_CST);
	cr_assert(helper_channel_alive(ch));
	struct json_object *r = call_ok("hello", NULL, 5000);
	cr_assert_str_eq(str_member(r, "late"), "false");
	json_object_put(r);
	/* A token that already fired does not wait at all. */
	cr_assert_lt(helper_channel_call_cancel(ch, "bash.poll", NULL, 600000, &cancel, &result, &err), 0);
	cr_assert_not_null(strstr(err->message, "cancelled"), "%s", err->message);
	cp_error_free(err);
	cp_cancel_destroy(&cancel);
	finish();
}

static int woken;
static void count_wake(void *arg)
{
	(void)arg;
	woken++;
}

Test(helper_channel, cancel_token_fires_once)
{
	struct cp_cancel c;
	cp_cancel_init(&c);
	struct cp_cancel_waiter a = {.wake = count_wake}, b = {.wake = count_wake};
	woken = 0;
	cr_assert_eq(cp_cancel_watch(&c, &a), 0);
	cr_assert_eq(cp_cancel_watch(&c, &b), 0);
	cp_cancel_unwatch(&c, &b);
	cr_assert_eq(cp_cancel_fired(&c), 0);
	cp_cancel_fire(&c);
	cp_cancel_fire(&c);
	cr_assert_eq(woken, 1, "one registered waiter, woken once");
	cr_assert(cp_cancel_fired(&c));
	cr_assert_eq(cp_cancel_watch(&c, &b), 1, "watching a fired token says so");
	cp_cancel_unwatch(&c, &a);
	cr_assert_eq(cp_cancel_fired(NULL), 0);
	cr_assert_eq(cp_cancel_watch(NULL, &a), 0);
	cp_cancel_destroy(&c);
}

/* ---- delivery acknowledgements (proto.h, "Delivery and acknowledgement") ---- */

static int ack_seen;    /* the fake read the poll that will be cancelled (atomic) */
static int ack_release; /* its caller has gone: answer it now (atomic) */
static int ack_nacked;  /* the fake read the bash.nack (atomic) */
static char ack_attach_id[64];

/* The next line must be the notification method for [start, end) of bash_x. */
static void expect_ack(struct fake *f, const char *method, int64_t start, int64_t end)
{
	struct json_object *n = fake_read_request(f), *params = NULL, *v = NULL;
	cr_assert_not_null(n);
	cr_assert_str_eq(req_method(n), method, "%s", json_object_to_json_string(n));
	cr_assert_not(json_object_object_get_ex(n, "id", &v), "a notification has no id");
	cr_assert(json_object_object_get_ex(n, "params", &params));
	cr_assert_str_eq(str_member(params, "session_id"), "bash_x");
	cr_assert_eq(json_object_get_int64(json_object_object_get(params, "start")), start);
	cr_assert_eq(json_object_get_int64(json_object_object_get(params, "end")), end);
	json_object_put(n);
}

static void script_ack(struct fake *f)
{
	struct json_object *req = fake_read_request(f), *params = NULL;
	cr_assert_str_eq(req_method(req), "hello");
	cr_assert(json_object_object_get_ex(req, "params", &params));
	snprintf(ack_attach_id, sizeof(ack_attach_id), "%s", str_member(params, "attach_id"));
	cr_assert_eq(strlen(ack_attach_id), 32, "hello names the attachment: %s", ack_attach_id);
	cr_assert_str_eq(f->attach_id, ack_attach_id, "the attach notification came first, with the same id");
	answer(f, req_id(req), "{\"version\":\"1\"}");
	json_object_put(req);

	/* Handed to its caller: acknowledged. */
	req = fake_read_request(f);
	cr_assert_str_eq(req_method(req), "bash.poll");
	answer(f, req_id(req), "{\"session_id\":\"bash_x\",\"output\":\"hi\\n\",\"output_start\":0,\"output_end\":3}");
	json_object_put(req);
	expect_ack(f, "bash.ack", 0, 3);

	/* No output in it: nothing to acknowledge, the next line is a request. */
	req = fake_read_request(f);
	cr_assert_str_eq(req_method(req), "bash.poll");
	answer(f, req_id(req), "{\"session_id\":\"bash_x\",\"output\":\"\",\"output_start\":3,\"output_end\":3}");
	json_object_put(req);

	/* Its caller cancels before the answer comes: not acknowledged. */
	req = fake_read_request(f);
	cr_assert_str_eq(req_method(req), "bash.poll", "no acknowledgement for an empty range");
	__atomic_store_n(&ack_seen, 1, __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&ack_release, __ATOMIC_SEQ_CST))
		usleep(10 * 1000);
	answer(f, req_id(req), "{\"session_id\":\"bash_x\",\"output\":\"late\",\"output_start\":3,\"output_end\":7}");
	json_object_put(req);
	expect_ack(f, "bash.nack", 3, 7);
	__atomic_store_n(&ack_nacked, 1, __ATOMIC_SEQ_CST);

	/* A second hello on the same channel names the same attachment. */
	req = fake_read_request(f);
	cr_assert_str_eq(req_method(req), "hello");
	cr_assert(json_object_object_get_ex(req, "params", &params));
	cr_assert_str_eq(str_member(params, "attach_id"), ack_attach_id);
	answer(f, req_id(req), "{\"version\":\"1\"}");
	json_object_put(req);
	fake_wait_eof(f);
}

static void *fire_when_ack_seen(void *arg)
{
	while (!__atomic_load_n(&ack_seen, __ATOMIC_SEQ_CST))
		usleep(10 * 1000);
	cp_cancel_fire(arg);
	return NULL;
}

Test(helper_channel, ack_for_a_delivered_reply_nack_for_an_abandoned_one, .timeout = 20)
{
	ack_seen = ack_release = ack_nacked = 0;
	start(script_ack);
	json_object_put(call_ok("hello", NULL, 5000));
	struct json_object *r = call_ok("bash.poll", "{\"session_id\":\"bash_x\"}", 5000);
	cr_assert_str_eq(str_member(r, "output"), "hi\n");
	json_object_put(r);
	json_object_put(call_ok("bash.poll", "{\"session_id\":\"bash_x\"}", 5000));

	struct cp_cancel cancel;
	cp_cancel_init(&cancel);
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, fire_when_ack_seen, &cancel), 0);
	struct json_object *result = NULL;
	struct cp_error *err = NULL;
	cr_assert_lt(helper_channel_call_cancel(ch, "bash.poll", NULL, 600000, &cancel, &result, &err), 0);
	pthread_join(t, NULL);
	cr_assert_eq(err->code, CP_ERR_UNAVAILABLE);
	cp_error_free(err);
	cp_cancel_destroy(&cancel);
	__atomic_store_n(&ack_release, 1, __ATOMIC_SEQ_CST);

	while (!__atomic_load_n(&ack_nacked, __ATOMIC_SEQ_CST))
		usleep(10 * 1000);
	json_object_put(call_ok("hello", "{}", 5000));
	cr_assert(helper_channel_alive(ch));
	finish();
}

/* ---- the direct channel (helper/direct.c; proto.h channel.connect) ---- */

#include <sys/stat.h>
#include <sys/un.h>

static char direct_dir[64];

static void direct_dir_make(mode_t mode)
{
	snprintf(direct_dir, sizeof(direct_dir), "/tmp/chat2sbx-direct-XXXXXX");
	cr_assert_not_null(mkdtemp(direct_dir));
	cr_assert_eq(chmod(direct_dir, mode), 0);
}

static void direct_dir_remove(void)
{
	char s[128];
	snprintf(s, sizeof(s), "%s/s", direct_dir);
	cr_assert_neq(access(s, F_OK), 0, "the socket is removed once the helper connected");
	rmdir(direct_dir);
}

/* A connection to the offered socket that writes text first. */
static int direct_dial(const char *text)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof(a.sun_path), "%s/s", direct_dir);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0, "connect: %s", strerror(errno));
	send_raw(fd, text, strlen(text));
	return fd;
}

/* The helper's part: on channel.connect, what else runs in the sandbox
 * dials first (no token, then a wrong one), then the helper with the token;
 * the answer goes over stdout; later requests come, and are answered, on
 * the direct socket as plain lines; then the helper drops it. */
static void script_direct(struct fake *f)
{
	struct json_object *req = fake_read_request(f);
	cr_assert_str_eq(req_method(req), "channel.connect");
	struct json_object *params = NULL;
	cr_assert(json_object_object_get_ex(req, "params", &params));
	char line[80];
	snprintf(line, sizeof(line), "%s\n", str_member(params, "token"));
	cr_assert_eq(strlen(line), PROTO_CHANNEL_TOKEN_LEN + 1);
	int silent = direct_dial("");
	close(silent);
	int wrong = direct_dial("0123456789abcdef0123456789abcdef\n");
	int d = direct_dial(line);
	answer(f, req_id(req), "{\"connected\":true}");
	json_object_put(req);

	int attach = f->fd;
	f->fd = d;
	struct json_object *next = fake_read_request(f);
	cr_assert_not_null(next, "the next request came over the direct socket");
	cr_assert_str_eq(req_method(next), "file.read");
	char *text = NULL;
	cr_assert_gt(asprintf(&text, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"via\":\"direct\"}}\n",
	                      (long long)req_id(next)),
	             0);
	send_raw(d, text, strlen(text));
	free(text);
	json_object_put(next);
	close(d); /* the helper drops it: the channel ends */
	close(wrong);
	f->fd = attach;
	fake_wait_eof(f);
}

Test(helper_channel, direct_channel_takes_only_the_token_holder_and_carries_calls, .timeout = 20)
{
	direct_dir_make(0700);
	start(script_direct);
	struct cp_error *err = NULL;
	cr_assert_eq(helper_channel_connect_direct(ch, direct_dir, 5000, &err), 0, "%s", err ? err->message : "");
	struct json_object *r = call_ok("file.read", "{\"path\":\"x\"}", 5000);
	cr_assert_str_eq(str_member(r, "via"), "direct");
	json_object_put(r);
	/* The direct socket's end is the channel's end. */
	for (int i = 0; i < 200 && helper_channel_alive(ch); i++)
		usleep(10 * 1000);
	cr_assert_not(helper_channel_alive(ch));
	cr_assert_not_null(strstr(helper_channel_close_reason(ch), "direct channel"), "%s",
	                   helper_channel_close_reason(ch));
	finish();
	direct_dir_remove();
}

/* An older helper: channel.connect is an unknown method. */
static void script_direct_unknown(struct fake *f)
{
	struct json_object *req = fake_read_request(f);
	cr_assert_str_eq(req_method(req), "channel.connect");
	char *line = NULL;
	cr_assert_gt(
	    asprintf(&line,
	             "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"error\":{\"code\":-32601,\"message\":\"unknown method\","
	             "\"data\":{\"code\":\"INVALID_ARGUMENT\"}}}",
	             (long long)req_id(req)),
	    0);
	send_line(f->fd, line);
	free(line);
	json_object_put(req);
	req = fake_read_request(f);
	cr_assert_str_eq(req_method(req), "hello", "the attach stream still carries calls");
	answer(f, req_id(req), "{\"version\":\"1\"}");
	json_object_put(req);
	fake_wait_eof(f);
}

Test(helper_channel, direct_channel_refused_keeps_the_attach_stream, .timeout = 20)
{
	direct_dir_make(0700);
	start(script_direct_unknown);
	struct cp_error *err = NULL;
	cr_assert_lt(helper_channel_connect_direct(ch, direct_dir, 5000, &err), 0);
	cr_assert_not_null(strstr(err->message, "unknown method"), "%s", err->message);
	cp_error_free(err);
	json_object_put(call_ok("hello", NULL, 5000));
	cr_assert(helper_channel_alive(ch));
	finish();
	direct_dir_remove();
}

/* A directory others may enter is never used: nothing is asked of the helper. */
static void script_expect_hello(struct fake *f)
{
	struct json_object *req = fake_read_request(f);
	cr_assert_str_eq(req_method(req), "hello");
	answer(f, req_id(req), "{\"version\":\"1\"}");
	json_object_put(req);
	fake_wait_eof(f);
}

Test(helper_channel, direct_channel_needs_a_private_directory, .timeout = 20)
{
	direct_dir_make(0755);
	start(script_expect_hello);
	struct cp_error *err = NULL;
	cr_assert_lt(helper_channel_connect_direct(ch, direct_dir, 5000, &err), 0);
	cr_assert_eq(err->code, CP_ERR_INTERNAL);
	cr_assert_not_null(strstr(err->message, "alone"), "%s", err->message);
	cp_error_free(err);
	json_object_put(call_ok("hello", NULL, 5000));
	finish();
	direct_dir_remove();
}

/* Whatever holds the direct socket is read as hostile (issue 27): an answer
 * to an id nobody asked for, a line that is not JSON, an answer dribbled a
 * byte at a time, then a line past PROTO_MAX_REPLY_FRAME with no newline.
 * The first two are dropped, the third reaches its caller, the last closes
 * the channel (its buffer freed) instead of growing. */
static void script_direct_hostile(struct fake *f)
{
	struct json_object *req = fake_read_request(f);
	cr_assert_str_eq(req_method(req), "channel.connect");
	struct json_object *params = NULL;
	cr_assert(json_object_object_get_ex(req, "params", &params));
	char line[80];
	snprintf(line, sizeof(line), "%s\n", str_member(params, "token"));
	int d = direct_dial(line);
	answer(f, req_id(req), "{\"connected\":true}");
	json_object_put(req);
	int attach = f->fd;
	f->fd = d;

	struct json_object *next = fake_read_request(f);
	cr_assert_not_null(next);
	char *text = NULL;
	cr_assert_gt(asprintf(&text,
	                      "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"via\":\"forged\"}}\n"
	                      "not json at all\n"
	                      "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"via\":\"direct\"}}\n",
	                      (long long)req_id(next) + 1000, (long long)req_id(next)),
	             0);
	size_t len = strlen(text);
	size_t split = strchr(strchr(text, '\n') + 1, '\n') + 1 - text; /* the real answer, byte by byte */
	send_raw(d, text, split);
	for (size_t i = split; i < len; i++) {
		send_raw(d, text + i, 1);
		usleep(200);
	}
	free(text);
	json_object_put(next);

	next = fake_read_request(f);
	cr_assert_not_null(next);
	size_t chunk = 1 << 20;
	char *junk = malloc(chunk);
	cr_assert_not_null(junk);
	memset(junk, 'x', chunk);
	for (size_t sent = 0; sent <= PROTO_MAX_REPLY_FRAME; sent += chunk)
		send_raw(d, junk, chunk); /* stops quietly once the channel closed */
	free(junk);
	json_object_put(next);
	close(d);
	f->fd = attach;
	fake_wait_eof(f);
}

Test(helper_channel, direct_channel_reads_its_peer_as_hostile, .timeout = 60)
{
	direct_dir_make(0700);
	start(script_direct_hostile);
	struct cp_error *err = NULL;
	cr_assert_eq(helper_channel_connect_direct(ch, direct_dir, 5000, &err), 0, "%s", err ? err->message : "");
	struct json_object *r = call_ok("file.read", "{\"path\":\"x\"}", 10000);
	cr_assert_str_eq(str_member(r, "via"), "direct", "the forged id and the garbage line were dropped");
	json_object_put(r);
	err = call_fail("file.read", 30000);
	cr_assert_eq(err->code, CP_ERR_UNAVAILABLE, "%s", err->message);
	cp_error_free(err);
	cr_assert_not(helper_channel_alive(ch));
	cr_assert_not_null(strstr(helper_channel_close_reason(ch), "MiB limit"), "%s", helper_channel_close_reason(ch));
	finish();
	direct_dir_remove();
}
