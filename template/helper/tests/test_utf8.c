/* test_utf8.c: UTF-8 sanitizing and cutting (utf8.c): every split point of
 * multi-byte characters, invalid bytes, and the streaming property the
 * bash output delivery relies on. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "../utf8.h"

static char *san(const char *s, size_t n)
{
	size_t len;
	char *out = utf8_sanitize((const unsigned char *)s, n, &len);
	cr_assert_not_null(out);
	cr_assert_eq(strlen(out), len);
	return out;
}

#define FFFD "\xef\xbf\xbd"

Test(utf8, valid_text_passes_unchanged)
{
	const char *s = "plain ascii\n\ttab caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf end";
	char *out = san(s, strlen(s));
	cr_assert_str_eq(out, s);
	free(out);
}

Test(utf8, invalid_bytes_become_replacement_characters)
{
	struct {
		const char *in;
		size_t n;
		const char *want;
	} cases[] = {
	    {"\xff", 1, FFFD},
	    {"a\x80z", 3, "a" FFFD "z"},
	    {"\xc0\xaf", 2, FFFD FFFD},                   /* overlong '/' */
	    {"\xed\xa0\x80", 3, FFFD FFFD FFFD},          /* surrogate U+D800 */
	    {"\xf4\x90\x80\x80", 4, FFFD FFFD FFFD FFFD}, /* above U+10FFFF */
	    {"\xe2\x82"
	     "A",
	     3, FFFD "A"},                       /* truncated, one maximal subpart */
	    {"\xf0\x9f\x98", 3, FFFD},           /* truncated at the end */
	    {"\xe0\x80\x80", 3, FFFD FFFD FFFD}, /* overlong 3-byte */
	    {"\xf5\x80", 2, FFFD FFFD},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *out = san(cases[i].in, cases[i].n);
		cr_assert_str_eq(out, cases[i].want, "case %zu", i);
		free(out);
	}
}

Test(utf8, nul_and_control_bytes_are_kept)
{
	size_t len;
	char *out = utf8_sanitize((const unsigned char *)"a\0b\x1b[0m", 7, &len);
	cr_assert_eq(len, 7);
	cr_assert_eq(memcmp(out, "a\0b\x1b[0m", 7), 0);
	free(out);
}

Test(utf8, incomplete_suffix_at_every_split)
{
	const char *chars[] = {"\xc3\xa9", "\xe2\x82\xac", "\xed\x9f\xbf", "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf"};
	for (size_t c = 0; c < sizeof chars / sizeof chars[0]; c++) {
		size_t len = strlen(chars[c]);
		for (size_t k = 0; k <= len; k++) {
			unsigned char buf[16] = "ab";
			memcpy(buf + 2, chars[c], k);
			size_t want = k == len ? 0 : k;
			cr_assert_eq(utf8_incomplete_suffix(buf, 2 + k), want, "char %zu split %zu", c, k);
		}
	}
	/* Invalid tails are not carried: they become U+FFFD right away. */
	cr_assert_eq(utf8_incomplete_suffix((const unsigned char *)"a\xe0\x80", 3), 0);
	cr_assert_eq(utf8_incomplete_suffix((const unsigned char *)"a\x80", 2), 0);
	cr_assert_eq(utf8_incomplete_suffix((const unsigned char *)"a\xff", 2), 0);
	cr_assert_eq(utf8_incomplete_suffix((const unsigned char *)"\xe2", 1), 1);
	cr_assert_eq(utf8_incomplete_suffix((const unsigned char *)"", 0), 0);
}

/* Deliver s in two replies cut at every byte, the way bash.c does: the
 * first reply carries back an unfinished character. Joined, the replies
 * equal the sanitized whole: nothing split, lost or repeated. */
Test(utf8, stream_cut_at_every_byte_matches_whole)
{
	const char *inputs[] = {
	    "x\xc3\xa9y\xe2\x82\xacz\xf0\x9f\x98\x80!",
	    "\xf0\x9f\x98\x80\xf0\x9f\x98\x80",
	    "bad \xff\xc3 mixed \xe2\x82 \xed\xa0\x80 \xf0\x9f\x98\x80",
	};
	for (size_t t = 0; t < sizeof inputs / sizeof inputs[0]; t++) {
		const unsigned char *s = (const unsigned char *)inputs[t];
		size_t n = strlen(inputs[t]);
		size_t whole_len;
		char *whole = utf8_sanitize(s, n, &whole_len);
		for (size_t cut = 0; cut <= n; cut++) {
			size_t take = cut - utf8_incomplete_suffix(s, cut);
			size_t l1, l2;
			char *a = utf8_sanitize(s, take, &l1);
			char *b = utf8_sanitize(s + take, n - take, &l2);
			cr_assert_eq(l1 + l2, whole_len, "input %zu cut %zu", t, cut);
			cr_assert_eq(memcmp(a, whole, l1), 0, "input %zu cut %zu", t, cut);
			cr_assert_eq(memcmp(b, whole + l1, l2), 0, "input %zu cut %zu", t, cut);
			free(a);
			free(b);
		}
		free(whole);
	}
}
