/* test_base.c: ids (format, uniqueness, validation), the error object's
 * prefixing, the bounded buffer, and the memory/yield policy. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/id.h"
#include "base/log.h"
#include "base/periodic.h"
#include "base/xalloc.h"
#include "base/xjson.h"
#include "policy/policy.h"

Test(id, format_and_uniqueness)
{
	char *ids[200];
	for (int i = 0; i < 200; i++) {
		struct cp_error *err = NULL;
		cr_assert_eq(id_new("sbx_", &ids[i], &err), 0);
		cr_expect_eq(strlen(ids[i]), 4 + ID_RANDOM_CHARS);
		cr_expect(id_valid(ids[i], "sbx_"), "%s", ids[i]);
		cr_expect_not(id_valid(ids[i], "ws_"));
		for (int j = 0; j < i; j++)
			cr_expect_str_neq(ids[i], ids[j]);
	}
	for (int i = 0; i < 200; i++)
		free(ids[i]);
}

Test(id, validation_refuses_malformed)
{
	cr_expect_not(id_valid(NULL, "sbx_"));
	cr_expect_not(id_valid("sbx_", "sbx_"));
	cr_expect_not(id_valid("sbx_abc", "sbx_"));
	cr_expect_not(id_valid("sbx_ABCDEFGHIJKLMNOPQRST", "sbx_"), "uppercase is not base32 here");
	cr_expect_not(id_valid("sbx_abcdefghijklmnopqrs1", "sbx_"), "1 is not in the alphabet");
	cr_expect_not(id_valid("sbx_abcdefghijklmnopqrst/", "sbx_"));
	cr_expect(id_valid("sbx_abcdefghijklmnopq234", "sbx_"));
}

Test(error, prefix_and_codes)
{
	struct cp_error *err = NULL;
	cr_assert_eq(cp_error_set(&err, CP_ERR_NOT_FOUND, "sandbox '%s' does not exist", "sbx_x"), -1);
	cp_error_prefix(&err, "destroy");
	cr_expect_str_eq(err->message, "destroy: sandbox 'sbx_x' does not exist");
	cr_expect_str_eq(cp_error_code_name(err->code), "NOT_FOUND");
	cr_expect_eq(cp_error_exit_status(err->code), 3);
	/* A second set does not overwrite the first failure. */
	cp_error_set(&err, CP_ERR_INTERNAL, "other");
	cr_expect_eq(err->code, CP_ERR_NOT_FOUND);
	cp_error_free(err);
}

Test(error, errno_kept_for_callers)
{
	struct cp_error *e = NULL;
	cr_assert_eq(cp_error_set_errno(&e, CP_ERR_UNAVAILABLE, ENOSPC, "write 'serve.json'"), -1);
	cr_assert_eq(e->errnum, ENOSPC);
	cr_assert(strstr(e->message, "write 'serve.json': ") == e->message);
	cp_error_prefix(&e, "start");
	cr_assert_eq(e->errnum, ENOSPC, "context keeps the cause");
	cp_error_free(e);
	e = NULL;
	cp_error_set(&e, CP_ERR_NOT_FOUND, "no '%s'", "x");
	cr_assert_eq(e->errnum, 0);
	cp_error_free(e);
}

/* Runs cp_error_log_free with stderr captured; returns what was written. */
static char *log_free_captured(enum log_level level, struct cp_error **e, const char *context)
{
	char path[] = "/tmp/test_base_log_XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	unlink(path);
	int saved = dup(2);
	dup2(fd, 2);
	if (context)
		cp_error_log_free(level, "unit", e, "%s", context);
	else
		cp_error_log_free(level, "unit", e, NULL);
	dup2(saved, 2);
	close(saved);
	static char out[4096];
	ssize_t n = pread(fd, out, sizeof(out) - 1, 0);
	close(fd);
	out[n > 0 ? n : 0] = '\0';
	return out;
}

Test(error, log_free_logs_once_and_releases)
{
	log_set_level(LOG_LEVEL_INFO);
	struct cp_error *e = NULL;
	cp_error_set(&e, CP_ERR_NOT_FOUND, "no sandbox '%s'", "sbx_1");
	char *out = log_free_captured(LOG_LEVEL_WARN, &e, "remove probe sbx_1");
	cr_assert_null(e, "the error is released and the pointer cleared");
	cr_assert(strstr(out, "warn") && strstr(out, "unit"), "%s", out);
	cr_assert(strstr(out, "remove probe sbx_1: no sandbox 'sbx_1'\n"), "%s", out);
	cr_assert_eq(strchr(out, '\n'), out + strlen(out) - 1, "one line: %s", out);

	cp_error_set(&e, CP_ERR_INTERNAL, "plain");
	out = log_free_captured(LOG_LEVEL_ERROR, &e, NULL);
	cr_assert_null(e);
	cr_assert(strstr(out, "unit: plain\n"), "no context, no separator: %s", out);

	cp_error_set(&e, CP_ERR_INTERNAL, "quiet");
	out = log_free_captured(LOG_LEVEL_DEBUG, &e, "hidden");
	cr_assert_null(e, "released even when the level is not printed");
	cr_assert_str_eq(out, "");

	out = log_free_captured(LOG_LEVEL_ERROR, &e, "nothing");
	cr_assert_str_eq(out, "", "a NULL error logs nothing");
	cp_error_log_free(LOG_LEVEL_ERROR, "unit", NULL, NULL);
}

Test(xalloc, copies_and_formats)
{
	cr_assert_null(xstrdup(NULL), "optional strings copy as NULL");
	char *s = xstrndup("abcdef", 3);
	cr_assert_str_eq(s, "abc");
	free(s);
	s = xasprintf("%s-%d", "sbx", 7);
	cr_assert_str_eq(s, "sbx-7");
	free(s);
	free(xmalloc(0));
	int *v = xcalloc(4, sizeof(int));
	cr_assert_eq(v[3], 0);
	v = xrealloc(v, 8 * sizeof(int));
	free(v);
	struct json_object *o = xjson_object();
	xjson_add(o, "a", xjson_int64(1));
	xjson_add(o, "n", xjson_string(NULL));
	struct json_object *arr = xjson_array();
	xjson_append(arr, xjson_bool(true));
	xjson_append(arr, xjson_string_len("ab\0c", 4));
	xjson_add(o, "l", arr);
	cr_assert_str_eq(xjson_text(o, JSON_C_TO_STRING_PLAIN), "{\"a\":1,\"n\":null,\"l\":[true,\"ab\\u0000c\"]}");
	json_object_put(o);
}

Test(buf, bounded)
{
	struct cp_buf b;
	cp_buf_init(&b, 10);
	cr_expect_eq(cp_buf_append(&b, "hello", 5), 0);
	cr_expect_eq(cp_buf_append(&b, "world", 5), 0);
	cr_expect_eq(cp_buf_append(&b, "!", 1), -1, "over the maximum is refused");
	cr_expect_eq(b.len, 10);
	cr_expect_str_eq(b.data, "helloworld");
	cp_buf_consume(&b, 5);
	cr_expect_str_eq(b.data, "world");
	cp_buf_free(&b);
}

Test(policy, memory_sizes)
{
	struct {
		const char *in;
		int64_t want; /* -1 = refused */
	} cases[] = {
	    {"512m", 512LL << 20},
	    {"4g", 4LL << 30},
	    {"4G", 4LL << 30},
	    {"512mb", 512LL << 20},
	    {"1048576k", 1LL << 30},
	    {"7000000", 7000000},
	    {"5m", -1},
	    {"", -1},
	    {"m", -1},
	    {"-1g", -1},
	    {"12x", -1},
	    {"1.5g", 1536LL << 20}, /* fractional sizes (security review, defect 5) */
	    {"6.5m", 6815744},
	    {"1.25G", 1280LL << 20},
	    {"1.5", -1}, /* a fraction of a byte */
	    {"1.g", -1},
	    {"1.0000000001g", -1},
	    {"1023.999g", 1099510554034LL},
	    {"1024.5g", -1},
	    {"2000g", -1},
	    {"99999999999999999999g", -1},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int64_t got = 0;
		struct cp_error *err = NULL;
		int r = policy_memory_parse(cases[i].in, &got, &err);
		if (cases[i].want < 0) {
			cr_expect_lt(r, 0, "'%s' accepted", cases[i].in);
			cr_expect(err && err->code == CP_ERR_INVALID_ARGUMENT);
			cp_error_free(err);
		} else {
			cr_expect_eq(r, 0, "'%s': %s", cases[i].in, err ? err->message : "");
			cr_expect_eq(got, cases[i].want, "'%s'", cases[i].in);
		}
	}
}

Test(policy, yield_clamp)
{
	cr_expect_eq(policy_yield_clamp(-1, 10000, 30000), 10000);
	cr_expect_eq(policy_yield_clamp(45000, 10000, 30000), 30000);
	cr_expect_eq(policy_yield_clamp(0, 10000, 30000), 0);
	cr_expect_eq(policy_yield_clamp(500, 10000, 30000), 500);
}

#include "base/child.h"
#include "base/text.h"

Test(text, clip_keeps_utf8_whole)
{
	char buf[64];
	/* "a" + 10 × "é" (2 bytes each): a cut at 4 bytes must not split one. */
	cr_expect_str_eq(text_clip("a\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 4, buf, sizeof(buf)),
	                 "a\xc3\xa9\xe2\x80\xa6");
	cr_expect_str_eq(text_clip("ok", 100, buf, sizeof(buf)), "ok");
	cr_expect_str_eq(text_clip("bad\xff\x01x", 100, buf, sizeof(buf)), "bad??x");
	cr_expect_str_eq(text_clip("\xed\xa0\x80", 100, buf, sizeof(buf)), "???", "a surrogate is not UTF-8");
	cr_expect_str_eq(text_clip(NULL, 10, buf, sizeof(buf)), "");
	char small[6];
	cr_expect_str_eq(text_clip("abcdefgh", 100, small, sizeof(small)), "ab\xe2\x80\xa6", "bounded by the buffer");
}

/* Issue 23: ref names from a sandbox printed in commands the person pastes. */
static void expect_quoted(const char *in, size_t len, const char *want)
{
	char *q = text_shell_quote(in, len);
	cr_expect_str_eq(q, want, "quoting %zu bytes", len);
	free(q);
}

Test(base_text, shell_words_are_safe_to_paste)
{
	expect_quoted("chat2sbx/sbx_a/main", 19, "chat2sbx/sbx_a/main");
	expect_quoted("", 0, "''");
	const char *pwned = "chat2sbx/sbx_a/x;touch${IFS}/tmp/PWNED;#";
	expect_quoted(pwned, strlen(pwned), "'chat2sbx/sbx_a/x;touch${IFS}/tmp/PWNED;#'");
	expect_quoted("a'b", 3, "'a'\\''b'");
	expect_quoted("$(id)`id`|&<>*?~ x", 18, "'$(id)`id`|&<>*?~ x'");
	expect_quoted("caf\xc3\xa9", 5, "'caf\xc3\xa9'"); /* visible UTF-8 stays readable */
	/* Bidi controls, zero-width characters, controls and bad UTF-8 are shown. */
	expect_quoted("a\xe2\x80\xae"
	              "b",
	              5, "$'a\\xe2\\x80\\xaeb'");
	expect_quoted("x\xe2\x80\x8b", 4, "$'x\\xe2\\x80\\x8b'");
	expect_quoted("a\nb", 3, "$'a\\x0ab'");
	expect_quoted("a\xff'\\", 4, "$'a\\xff\\'\\\\'");
	expect_quoted("a\0b", 3, "$'a\\x00b'");
}

Test(base_text, bash_reads_each_word_back_and_runs_nothing)
{
	const char *names[] = {"x;touch${IFS}/tmp/c2s-quote-PWNED;#",
	                       "a'b\"c",
	                       "$(touch /tmp/c2s-quote-PWNED)",
	                       "`touch /tmp/c2s-quote-PWNED`",
	                       "r\xe2\x80\xaelo",
	                       "tab\there",
	                       "\xe2\x81\xa6x"};
	unlink("/tmp/c2s-quote-PWNED");
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char *q = text_shell_quote(names[i], strlen(names[i]));
		char script[600];
		snprintf(script, sizeof script, "printf %%s %s", q);
		const char *argv[] = {"/bin/bash", "-c", script, NULL}, *env[] = {"PATH=/usr/bin:/bin", NULL};
		struct child_spec spec = {.path = "/bin/bash",
		                          .argv = argv,
		                          .envp = env,
		                          .in_fd = -1,
		                          .out_max = 300,
		                          .limits = {.wall_ms = 10000}};
		struct child_result r;
		struct cp_error *err = NULL;
		cr_assert_eq(child_run(&spec, &r, &err), 0);
		cr_expect(r.exited && r.code == 0, "%s: %s", script, r.err_tail);
		cr_expect_str_eq(r.out, names[i], "bash read %s back", q);
		child_result_clear(&r);
		free(q);
	}
	cr_expect_eq(access("/tmp/c2s-quote-PWNED", F_OK), -1, "nothing ran");
}

Test(base_text, invisible_characters)
{
	uint32_t yes[] = {0x202e, 0x2066, 0x2069, 0x200b, 0x200f, 0xfeff, 0x00ad, 0x0085, 0x00a0, 0xe0001, 0x061c};
	uint32_t no[] = {'a', 0xe9, 0x4e2d, 0x1f600, 0x2010};
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		cr_expect(text_invisible(yes[i]), "U+%04x", yes[i]);
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		cr_expect(!text_invisible(no[i]), "U+%04x", no[i]);
}

/* ---- periodic.c ---- */

struct periodic_count {
	int calls; /* atomically */
};

static long periodic_count_fn(void *ctx)
{
	struct periodic_count *c = ctx;
	__atomic_add_fetch(&c->calls, 1, __ATOMIC_SEQ_CST);
	return -1;
}

Test(base_periodic, runs_at_first_then_on_a_wake_and_stops_promptly)
{
	struct periodic_count c = {0};
	struct periodic *p = periodic_start("test", 0, 60000, periodic_count_fn, &c);
	cr_assert_not_null(p);
	for (int i = 0; i < 200 && __atomic_load_n(&c.calls, __ATOMIC_SEQ_CST) < 1; i++)
		usleep(5000);
	cr_assert_eq(__atomic_load_n(&c.calls, __ATOMIC_SEQ_CST), 1);
	periodic_wake(p);
	for (int i = 0; i < 200 && __atomic_load_n(&c.calls, __ATOMIC_SEQ_CST) < 2; i++)
		usleep(5000);
	cr_assert_eq(__atomic_load_n(&c.calls, __ATOMIC_SEQ_CST), 2, "a wake runs the next call at once");
	int64_t t0 = clock_monotonic_ms();
	periodic_stop(p); /* the 60 s wait ends at once */
	cr_assert_lt(clock_monotonic_ms() - t0, 1000);
	periodic_stop(NULL);
}

/* A call that takes 300 ms and asks to run again at once (a refill that
 * makes one member after another). */
static long periodic_slow_fn(void *ctx)
{
	periodic_count_fn(ctx);
	usleep(300 * 1000);
	return 0;
}

/* Asking several to stop first lets their last calls end together: the
 * warm pool's refills on several nodes (lifecycle/pool.c). */
Test(base_periodic, several_asked_to_stop_first_end_together)
{
	struct periodic_count c[3] = {0};
	struct periodic *p[3];
	for (int i = 0; i < 3; i++)
		cr_assert_not_null(p[i] = periodic_start("test", 0, 60000, periodic_slow_fn, &c[i]));
	for (int i = 0; i < 3; i++)
		for (int k = 0; k < 200 && __atomic_load_n(&c[i].calls, __ATOMIC_SEQ_CST) < 1; k++)
			usleep(5000);
	int64_t t0 = clock_monotonic_ms();
	int asked_at[3];
	for (int i = 0; i < 3; i++) {
		periodic_stop_ask(p[i]);
		asked_at[i] = __atomic_load_n(&c[i].calls, __ATOMIC_SEQ_CST);
	}
	for (int i = 0; i < 3; i++)
		periodic_stop(p[i]);
	cr_assert_lt(clock_monotonic_ms() - t0, 600, "the three 300 ms calls ended together, not one after another");
	for (int i = 0; i < 3; i++)
		cr_expect_leq(__atomic_load_n(&c[i].calls, __ATOMIC_SEQ_CST), asked_at[i] + 1,
		              "no call starts once asked (one may have been starting as it was asked)");
	periodic_stop_ask(NULL);
}
