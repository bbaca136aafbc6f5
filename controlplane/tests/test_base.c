/* test_base.c: ids (format, uniqueness, validation), the error object's
 * prefixing, the bounded buffer, and the memory/yield policy. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/error.h"
#include "base/id.h"
#include "base/log.h"
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
