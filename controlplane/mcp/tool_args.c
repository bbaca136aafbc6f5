/* tool_args.c: a tool call's arguments checked against the tool's
 * declaration (struct mcp_arg, mcp.h) before its handler runs, and the
 * accessors handlers read the checked values with. Every refusal is one
 * INVALID_ARGUMENT in one shape, "argument 'NAME' <what is wrong and what it
 * must be>; <what to do>", so a model can correct its call. Knows nothing of
 * what a tool does. */
#include "internal.h"

#include <assert.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../base/id.h"
#include "../base/xalloc.h"

struct mcp_args {
	const struct mcp_arg *decl; /* borrowed */
	struct json_object *obj;    /* borrowed */
};

static const struct mcp_arg *decl_find(const struct mcp_arg *decl, const char *name)
{
	for (const struct mcp_arg *d = decl; d && d->name; d++)
		if (strcmp(d->name, name) == 0)
			return d;
	return NULL;
}

/* The value of name in obj, NULL when absent or JSON null. */
static struct json_object *given(struct json_object *obj, const char *name)
{
	struct json_object *v = NULL;
	if (!json_object_object_get_ex(obj, name, &v) || json_object_is_type(v, json_type_null))
		return NULL;
	return v;
}

static const char *type_name(struct json_object *v)
{
	switch (json_object_get_type(v)) {
	case json_type_null: return "null";
	case json_type_boolean: return "a boolean";
	case json_type_double: return "a number with a fraction";
	case json_type_int: return "an integer";
	case json_type_object: return "an object";
	case json_type_array: return "an array";
	case json_type_string: return "a string";
	}
	return "a value";
}

/* What an item of the ARRAY d must be ("an object with exactly the strings
 * 'path' and 'sha256'"). */
static void item_expected(const struct mcp_arg *d, char *buf, size_t size)
{
	size_t o = (size_t)snprintf(buf, size, d->items ? "an object with exactly the strings" : "an object");
	for (const struct mcp_arg *m = d->items; m && m->name && o < size; m++)
		o += (size_t)snprintf(buf + o, size - o, "%s'%s'",
		                      m == d->items ? " "
		                      : m[1].name   ? ", "
		                                    : " and ",
		                      m->name);
}

/* What a value of d must be, in words ("an integer in 1..65535"). */
static void expected(const struct mcp_arg *d, char *buf, size_t size)
{
	size_t o = 0;
	switch (d->type) {
	case MCP_ARG_STRING:
		if (d->enum_values) {
			o += (size_t)snprintf(buf + o, size - o, "one of");
			for (const char *const *e = d->enum_values; *e && o < size; e++)
				o += (size_t)snprintf(buf + o, size - o, "%s '%s'", e == d->enum_values ? "" : ",", *e);
		} else if (d->id_prefix) {
			snprintf(buf, size, "a string like '%s…' ('%s' followed by %d lowercase letters and digits)",
			         d->id_prefix, d->id_prefix, ID_RANDOM_CHARS);
		} else if (d->max_length) {
			snprintf(buf, size, "a string of at most %zu characters", d->max_length);
		} else {
			snprintf(buf, size, "a string%s", d->min_length ? " that is not empty" : "");
		}
		return;
	case MCP_ARG_INTEGER:
		if ((d->flags & MCP_ARG_MIN) && (d->flags & MCP_ARG_MAX))
			snprintf(buf, size, "an integer in %lld..%lld", (long long)d->min, (long long)d->max);
		else if (d->flags & MCP_ARG_MIN)
			snprintf(buf, size, "an integer of at least %lld", (long long)d->min);
		else if (d->flags & MCP_ARG_MAX)
			snprintf(buf, size, "an integer of at most %lld", (long long)d->max);
		else
			snprintf(buf, size, "an integer");
		return;
	case MCP_ARG_NUMBER: snprintf(buf, size, "a number"); return;
	case MCP_ARG_BOOLEAN: snprintf(buf, size, "true or false"); return;
	case MCP_ARG_OBJECT: snprintf(buf, size, "an object"); return;
	case MCP_ARG_ANY: snprintf(buf, size, "any value"); return;
	case MCP_ARG_ARRAY:
		if (!d->items) {
			snprintf(buf, size, "an array of objects");
			return;
		}
		o += (size_t)snprintf(buf, size, "an array of ");
		item_expected(d, buf + o, size - o);
		return;
	}
	snprintf(buf, size, "a value");
}

/* The refusal: "argument 'NAME' <what>; <what to do>" (INVALID_ARGUMENT). */
static int refuse(struct cp_error **err, const struct mcp_arg *d, const char *what)
{
	if (d->hint)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "argument '%s' %s; %s", d->name, what, d->hint);
	return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "argument '%s' %s; %s: %s", d->name, what, d->name,
	                    d->description ? d->description : "see this tool's inputSchema");
}

/* 1 when the string v holds a NUL (as a C string it would be cut short). */
static int has_nul(struct json_object *v)
{
	return strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v);
}

/* Characters (Unicode code points) of UTF-8 text, as JSON Schema counts a
 * string's length (draft 2020-12, validation 6.3.1). */
static size_t utf8_chars(const char *s, size_t len)
{
	size_t n = 0;
	for (size_t i = 0; i < len; i++)
		n += ((unsigned char)s[i] & 0xC0) != 0x80;
	return n;
}

static int check_string(const struct mcp_arg *d, struct json_object *v, struct cp_error **err)
{
	char what[600], want[400];
	expected(d, want, sizeof(want));
	if (!json_object_is_type(v, json_type_string)) {
		snprintf(what, sizeof(what), "must be %s, not %s", want, type_name(v));
		return refuse(err, d, what);
	}
	const char *s = json_object_get_string(v);
	size_t len = (size_t)json_object_get_string_len(v);
	if (!(d->flags & MCP_ARG_NUL_OK) && has_nul(v))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "argument '%s' contains a NUL character (\\u0000), which no path, id, name or "
		                    "command may hold; remove it",
		                    d->name);
	size_t chars = utf8_chars(s, len);
	if (d->min_length && chars < d->min_length) {
		if (chars == 0)
			snprintf(what, sizeof(what), "is empty; it must be %s", want);
		else
			snprintf(what, sizeof(what), "is %zu characters long; it must be at least %zu", chars,
			         d->min_length);
		return refuse(err, d, what);
	}
	if (d->max_length && chars > d->max_length) {
		snprintf(what, sizeof(what), "is %zu characters long; it must be at most %zu characters", chars,
		         d->max_length);
		return refuse(err, d, what);
	}
	if (d->enum_values) {
		for (const char *const *e = d->enum_values; *e; e++)
			if (strcmp(*e, s) == 0)
				return 0;
		snprintf(what, sizeof(what), "is '%.64s'; it must be %s", s, want);
		return refuse(err, d, what);
	}
	if (d->id_prefix && !id_valid(s, d->id_prefix)) {
		snprintf(what, sizeof(what),
		         "is '%.80s', which is not a valid id ('%s' followed by %d lowercase letters "
		         "and digits)",
		         s, d->id_prefix, ID_RANDOM_CHARS);
		return refuse(err, d, what);
	}
	return 0;
}

static int check_integer(const struct mcp_arg *d, struct json_object *v, struct cp_error **err)
{
	char what[600], want[200];
	expected(d, want, sizeof(want));
	int64_t n = 0;
	if (json_object_is_type(v, json_type_int)) {
		n = json_object_get_int64(v);
	} else if (json_object_is_type(v, json_type_double) &&
	           floor(json_object_get_double(v)) == json_object_get_double(v)) {
		/* 1000.0 is an integer too; one past int64 is out of any range. */
		double x = json_object_get_double(v);
		n = x >= 9.2e18 ? INT64_MAX : x <= -9.2e18 ? INT64_MIN : (int64_t)x;
	} else {
		snprintf(what, sizeof(what), "must be %s, not %s", want, type_name(v));
		return refuse(err, d, what);
	}
	if (((d->flags & MCP_ARG_MIN) && n < d->min) || ((d->flags & MCP_ARG_MAX) && n > d->max)) {
		if ((d->flags & MCP_ARG_MIN) && (d->flags & MCP_ARG_MAX))
			snprintf(what, sizeof(what), "is %lld; it must be in %lld..%lld", (long long)n,
			         (long long)d->min, (long long)d->max);
		else if (d->flags & MCP_ARG_MIN)
			snprintf(what, sizeof(what), "is %lld; it must be at least %lld", (long long)n,
			         (long long)d->min);
		else
			snprintf(what, sizeof(what), "is %lld; it must be at most %lld", (long long)n,
			         (long long)d->max);
		return refuse(err, d, what);
	}
	return 0;
}

/* An ARRAY of objects with exactly the (string) members d->items; with
 * MCP_ARG_MAP_TOO also an object whose members are all strings. */
static int check_array(const struct mcp_arg *d, struct json_object *v, struct cp_error **err)
{
	char what[600], want[300];
	expected(d, want, sizeof(want));
	if ((d->flags & MCP_ARG_MAP_TOO) && json_object_is_type(v, json_type_object)) {
		json_object_object_foreach(v, key, val)
		{
			if (!json_object_is_type(val, json_type_string) || has_nul(val)) {
				snprintf(what, sizeof(what),
				         "names '%.200s' with %s; each value must be a string without "
				         "NUL characters",
				         key, type_name(val));
				return refuse(err, d, what);
			}
		}
		return 0;
	}
	if (!json_object_is_type(v, json_type_array)) {
		snprintf(what, sizeof(what), "must be %s, not %s", want, type_name(v));
		return refuse(err, d, what);
	}
	size_t n = json_object_array_length(v), members = 0;
	for (const struct mcp_arg *m = d->items; m && m->name; m++)
		members++;
	for (size_t i = 0; i < n; i++) {
		struct json_object *item = json_object_array_get_idx(v, i);
		int ok = json_object_is_type(item, json_type_object) &&
		         (!d->items || (size_t)json_object_object_length(item) == members);
		for (const struct mcp_arg *m = d->items; ok && m->name; m++) {
			struct json_object *mv = NULL;
			ok = json_object_object_get_ex(item, m->name, &mv) && json_object_is_type(mv, json_type_string);
			if (ok && has_nul(mv)) {
				snprintf(what, sizeof(what), "has a NUL character (\\u0000) in %s[%zu].%s", d->name, i,
				         m->name);
				return refuse(err, d, what);
			}
		}
		if (!ok) {
			char item[300];
			item_expected(d, item, sizeof(item));
			snprintf(what, sizeof(what), "has an item that does not fit: %s[%zu] is not %s", d->name, i,
			         item);
			return refuse(err, d, what);
		}
	}
	return 0;
}

static int check_one(const struct mcp_arg *d, struct json_object *v, struct cp_error **err)
{
	char what[600];
	switch (d->type) {
	case MCP_ARG_STRING: return check_string(d, v, err);
	case MCP_ARG_INTEGER: return check_integer(d, v, err);
	case MCP_ARG_NUMBER:
		if (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double))
			return 0;
		if ((d->flags & MCP_ARG_TEXT_TOO) && json_object_is_type(v, json_type_string)) {
			if (has_nul(v))
				return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
				                    "argument '%s' contains a NUL character (\\u0000); remove it",
				                    d->name);
			return 0;
		}
		snprintf(what, sizeof(what), "must be a number, not %s", type_name(v));
		return refuse(err, d, what);
	case MCP_ARG_BOOLEAN:
		if (json_object_is_type(v, json_type_boolean))
			return 0;
		snprintf(what, sizeof(what), "must be true or false, not %s", type_name(v));
		return refuse(err, d, what);
	case MCP_ARG_ARRAY: return check_array(d, v, err);
	case MCP_ARG_ANY: return 0;
	case MCP_ARG_OBJECT:
		if (json_object_is_type(v, json_type_object))
			return 0;
		snprintf(what, sizeof(what), "must be an object, not %s", type_name(v));
		return refuse(err, d, what);
	}
	return cp_error_set(err, CP_ERR_INTERNAL, "argument '%s' has no type in its declaration; this is a server bug",
	                    d->name);
}

static int refuse_unknown(const struct mcp_arg *decl, const char *key, struct cp_error **err)
{
	char list[512] = "";
	size_t o = 0;
	for (const struct mcp_arg *d = decl; d && d->name && o < sizeof(list); d++)
		o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", o ? ", " : "", d->name);
	return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "unknown argument '%.64s'; %s%s", key,
	                    list[0] ? "this tool accepts: " : "this tool takes no arguments", list);
}

int mcp_args_check(const struct mcp_arg *decl, struct json_object *args, struct mcp_args **ret, struct cp_error **err)
{
	json_object_object_foreach(args, key, val)
	{
		(void)val;
		if (!decl_find(decl, key))
			return refuse_unknown(decl, key, err);
	}
	for (const struct mcp_arg *d = decl; d && d->name; d++) {
		struct json_object *v = given(args, d->name);
		if (!v && (d->flags & MCP_ARG_REQUIRED)) {
			char want[400], what[500];
			expected(d, want, sizeof(want));
			snprintf(what, sizeof(what), "is required (%s)", want);
			return refuse(err, d, what);
		}
		if (v && check_one(d, v, err) < 0)
			return -1;
	}
	struct mcp_args *a = xmalloc(sizeof(*a));
	a->decl = decl;
	a->obj = args;
	*ret = a;
	return 0;
}

void mcp_args_free(struct mcp_args *a)
{
	free(a);
}

/* The declaration of name, which must be declared with type (a programmer
 * error otherwise), and its value (NULL when not given). */
static struct json_object *lookup(const struct mcp_args *a, const char *name, enum mcp_arg_type type)
{
	const struct mcp_arg *d = decl_find(a->decl, name);
	assert(d && "argument not declared in the tool table");
	assert((!type || d->type == type) && "argument read as another type than declared");
	(void)d;
	(void)type;
	return given(a->obj, name);
}

int mcp_args_given(const struct mcp_args *a, const char *name)
{
	return lookup(a, name, 0) != NULL;
}

const char *mcp_args_string(const struct mcp_args *a, const char *name, size_t *ret_len)
{
	struct json_object *v = lookup(a, name, MCP_ARG_STRING);
	if (ret_len)
		*ret_len = v ? (size_t)json_object_get_string_len(v) : 0;
	return v ? json_object_get_string(v) : NULL;
}

int64_t mcp_args_int(const struct mcp_args *a, const char *name, int64_t def)
{
	struct json_object *v = lookup(a, name, MCP_ARG_INTEGER);
	if (!v)
		return def;
	if (json_object_is_type(v, json_type_double)) { /* checked: integral */
		double x = json_object_get_double(v);
		return x >= 9.2e18 ? INT64_MAX : x <= -9.2e18 ? INT64_MIN : (int64_t)x;
	}
	return json_object_get_int64(v);
}

int mcp_args_bool(const struct mcp_args *a, const char *name, int def)
{
	struct json_object *v = lookup(a, name, MCP_ARG_BOOLEAN);
	return v ? json_object_get_boolean(v) : def;
}

struct json_object *mcp_args_value(const struct mcp_args *a, const char *name)
{
	return lookup(a, name, 0);
}

struct json_object *mcp_args_object(const struct mcp_args *a)
{
	return a->obj;
}
