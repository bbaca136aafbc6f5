/* strict.c: what json-c lets through and a JSON-RPC server must not (issue
 * 13): NaN and Infinity (not JSON, RFC 8259 section 6, and echoed as bare
 * tokens), numbers json-c cannot hold exactly (an integer outside int64 is
 * clamped, a real past the double range becomes infinite), a key with a NUL
 * (json-c keys are C strings: "bash\u0000x" would act as "bash") and a key
 * that appears twice in one object (json-c keeps the last, so a check of
 * the first could be bypassed; RFC 8259 section 4 says the behaviour is
 * unpredictable). A second pass over text json-c has already accepted: a
 * lexer only, no values are built here; keys are decoded by json-c itself
 * and remembered in a json-c object used as a set. */
#include "internal.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/text.h"
#include "../base/xalloc.h"
#include "../base/xjson.h"

/* Deeper than json-c's own limit (mcp_json_parse: 64), so valid input never
 * reaches it. */
#define STRICT_MAX_DEPTH 80

struct frame {
	int is_object;
	int expect_key;
	struct json_object *keys; /* objects: the keys seen, as a set; owned */
};

struct scan {
	const char *t;
	size_t n, i;
	struct frame st[STRICT_MAX_DEPTH];
	int depth;
	struct json_tokener *tok; /* decodes keys */
	char *why;
	size_t why_size;
};

static int fail(struct scan *s, const char *fmt, const char *arg)
{
	char clipped[200];
	if (s->why && s->why_size)
		snprintf(s->why, s->why_size, fmt, arg ? text_clip(arg, 60, clipped, sizeof(clipped)) : "");
	return -1;
}

/* The index after the string token starting at s->i (a '"'). */
static size_t string_end(const struct scan *s)
{
	size_t i = s->i + 1;
	while (i < s->n && s->t[i] != '"')
		i += s->t[i] == '\\' ? 2 : 1;
	return i < s->n ? i + 1 : s->n;
}

/* A key token t[from..to): decoded by json-c, refused when it holds a NUL
 * or was seen before in this object. */
static int check_key(struct scan *s, struct frame *f, size_t from, size_t to)
{
	json_tokener_reset(s->tok);
	struct json_object *k = json_tokener_parse_ex(s->tok, s->t + from, (int)(to - from));
	if (!k || !json_object_is_type(k, json_type_string)) {
		json_object_put(k);
		return fail(s, "a key could not be read%s", NULL);
	}
	const char *key = json_object_get_string(k);
	int r = 0;
	if ((size_t)json_object_get_string_len(k) != strlen(key))
		r = fail(s, "the key '%s…' contains a NUL character (\\u0000); keys and names never do", key);
	else if (json_object_object_get_ex(f->keys, key, NULL))
		r = fail(s, "the key '%s' appears twice in one object; send each key once", key);
	else
		xjson_add(f->keys, key, NULL);
	json_object_put(k);
	return r;
}

/* A number token at s->i: integers must fit int64, reals must be finite. */
static int check_number(struct scan *s)
{
	size_t from = s->i, i = s->i;
	int real = 0;
	while (i < s->n && strchr("+-0123456789.eE", s->t[i])) {
		real |= s->t[i] == '.' || s->t[i] == 'e' || s->t[i] == 'E';
		i++;
	}
	char num[400];
	size_t len = i - from;
	s->i = i;
	if (len >= sizeof(num))
		return fail(s, "a number of more than 400 digits cannot be held exactly%s", NULL);
	memcpy(num, s->t + from, len);
	num[len] = '\0';
	errno = 0;
	if (!real) {
		(void)strtoll(num, NULL, 10);
		if (errno == ERANGE)
			return fail(s,
			            "the integer %s is outside the 64-bit range and cannot be held exactly; send it "
			            "as a string",
			            num);
		return 0;
	}
	double d = strtod(num, NULL);
	if (!isfinite(d))
		return fail(s, "the number %s is outside the range of a double", num);
	return 0;
}

static void pop(struct scan *s)
{
	if (s->depth > 0) {
		s->depth--;
		json_object_put(s->st[s->depth].keys);
		s->st[s->depth].keys = NULL;
	}
}

static int push(struct scan *s, int is_object)
{
	if (s->depth >= STRICT_MAX_DEPTH)
		return fail(s, "the message is nested too deeply%s", NULL);
	struct frame *f = &s->st[s->depth++];
	*f = (struct frame){.is_object = is_object, .expect_key = is_object};
	if (is_object)
		f->keys = xjson_object();
	return 0;
}

static int step(struct scan *s)
{
	struct frame *top = s->depth ? &s->st[s->depth - 1] : NULL;
	char c = s->t[s->i];
	switch (c) {
	case '{':
	case '[': s->i++; return push(s, c == '{');
	case '}':
	case ']':
		s->i++;
		pop(s);
		return 0;
	case ',':
		if (top && top->is_object)
			top->expect_key = 1;
		s->i++;
		return 0;
	case ':':
		if (top)
			top->expect_key = 0;
		s->i++;
		return 0;
	case '"': {
		size_t from = s->i, to = string_end(s);
		s->i = to;
		if (top && top->is_object && top->expect_key) {
			top->expect_key = 0;
			return check_key(s, top, from, to);
		}
		return 0;
	}
	case 't': /* true, false, null: json-c has checked them */
	case 'f':
	case 'n':
		while (s->i < s->n && s->t[s->i] >= 'a' && s->t[s->i] <= 'z')
			s->i++;
		return 0;
	case ' ':
	case '\t':
	case '\r':
	case '\n': s->i++; return 0;
	default:
		if (c == '-' || (c >= '0' && c <= '9')) {
			if (c == '-' && s->i + 1 < s->n && s->t[s->i + 1] == 'I')
				return fail(s, "-Infinity is not JSON; send numbers as finite values%s", NULL);
			return check_number(s);
		}
		if (c == 'N' || c == 'I')
			return fail(s, "%s is not JSON; send numbers as finite values", c == 'N' ? "NaN" : "Infinity");
		return fail(s, "an unexpected character%s", NULL);
	}
}

int mcp_json_strict_check(const char *text, size_t len, char *why, size_t why_size)
{
	struct scan s = {.t = text, .n = len, .why = why, .why_size = why_size};
	if (!(s.tok = json_tokener_new_ex(2)))
		cp_oom(); /* json_tokener_new_ex fails only when it cannot allocate */
	int r = 0;
	while (r == 0 && s.i < s.n)
		r = step(&s);
	while (s.depth > 0)
		pop(&s);
	json_tokener_free(s.tok);
	return r;
}
