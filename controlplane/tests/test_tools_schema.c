/* test_tools_schema.c: the schemas tools/list gives are generated from the
 * table, always the same bytes (pinned in tests/data/tools_list.json), and
 * each bound a schema states is the bound the checker enforces: for every
 * tool and property, a value at each bound is accepted and one beyond it is
 * refused with a message naming the argument (issue 16). */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/internal.h"
#include "tools/tools_internal.h"

/* tests/data/tools_list.json, found beside this file (as fake_engine.c does). */
static char *slurp_golden(char *path, size_t size)
{
	const char *slash = strrchr(__FILE__, '/');
	snprintf(path, size, "%.*s/data/tools_list.json", slash ? (int)(slash - __FILE__) : 1, slash ? __FILE__ : ".");
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = calloc(1, 1 << 20);
	size_t n = fread(buf, 1, (1 << 20) - 1, f);
	fclose(f);
	buf[n] = '\0';
	while (n && buf[n - 1] == '\n')
		buf[--n] = '\0';
	return buf;
}

Test(tools_schema, tools_list_is_generated_the_same_every_time)
{
	size_t n = 0;
	const struct mcp_tool *t = tools_table(&n);
	char *a = NULL, *b = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(mcp_tools_list_build(t, n, &a, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(mcp_tools_list_build(t, n, &b, &err), 0);
	cr_expect_str_eq(a, b);
	char path[4096];
	char *golden = slurp_golden(path, sizeof(path));
	cr_assert_not_null(golden, "%s", path);
	if (strcmp(a, golden) != 0) {
		FILE *f = fopen("/tmp/tools_list.actual.json", "w");
		if (f) {
			fprintf(f, "%s\n", a);
			fclose(f);
		}
		cr_expect_fail("tools/list differs from %s (the new text is in /tmp/tools_list.actual.json: "
		               "review it and copy it there when the change is meant)",
		               path);
	}
	free(golden);
	free(a);
	free(b);
}

/* ---- the bound walker ---- */

static const struct mcp_tool *cur;
static int checked;

/* Checks args (taken) against the current tool's declaration. */
static void run(struct json_object *args, int want_ok, const char *prop, const char *what)
{
	struct mcp_args *a = NULL;
	struct cp_error *err = NULL;
	int r = mcp_args_check(cur->args, args, &a, &err);
	const char *text = json_object_to_json_string(args);
	if (want_ok) {
		cr_expect_eq(r, 0, "%s.%s (%s): %s refused: %s", cur->name, prop, what, text, err ? err->message : "");
	} else {
		cr_expect_lt(r, 0, "%s.%s (%s): %s accepted", cur->name, prop, what, text);
		if (err) {
			char quoted[80];
			snprintf(quoted, sizeof(quoted), "'%s'", prop);
			cr_expect_eq(err->code, CP_ERR_INVALID_ARGUMENT);
			cr_expect(strstr(err->message, quoted) != NULL, "%s (%s): '%s' does not name %s", cur->name,
			          what, err->message, quoted);
		}
	}
	checked++;
	cp_error_free(err);
	mcp_args_free(a);
	json_object_put(args);
}

/* A property's type: its one "type", or for a nullable one (type
 * [T, "null"]) T; NULL when it has none. Sets *ret_nullable. */
static const char *type_of(struct json_object *p, int *ret_nullable)
{
	struct json_object *t = NULL;
	*ret_nullable = 0;
	if (!json_object_object_get_ex(p, "type", &t))
		return NULL;
	if (!json_object_is_type(t, json_type_array))
		return json_object_get_string(t);
	cr_assert_eq(json_object_array_length(t), 2, "a type array is [T, \"null\"]: %s",
	             json_object_to_json_string(t));
	cr_assert_str_eq(json_object_get_string(json_object_array_get_idx(t, 1)), "null");
	*ret_nullable = 1;
	return json_object_get_string(json_object_array_get_idx(t, 0));
}

static const char *str_of(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;
	return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : NULL;
}

static int int_of(struct json_object *o, const char *key, int64_t *ret)
{
	struct json_object *v = NULL;
	if (!json_object_object_get_ex(o, key, &v))
		return 0;
	*ret = json_object_get_int64(v);
	return 1;
}

/* An id matching a pattern "^PREFIX[a-z2-7]{20}$". */
static void id_for(const char *pattern, char *buf, size_t size)
{
	const char *p = pattern + 1, *end = strchr(p, '[');
	snprintf(buf, size, "%.*saaaaaaaaaaaaaaaaaaaa", (int)(end - p), p);
}

/* A value the schema s accepts (owned). */
static struct json_object *valid_value(struct json_object *s)
{
	int nullable;
	const char *type = type_of(s, &nullable);
	int64_t n = 0;
	struct json_object *e = NULL;
	if (!strcmp(type, "string")) {
		if (json_object_object_get_ex(s, "enum", &e))
			return json_object_get(json_object_array_get_idx(e, 0));
		if (str_of(s, "pattern")) {
			char id[64];
			id_for(str_of(s, "pattern"), id, sizeof(id));
			return json_object_new_string(id);
		}
		return json_object_new_string("a");
	}
	if (!strcmp(type, "integer"))
		return json_object_new_int64(int_of(s, "minimum", &n) ? n : int_of(s, "maximum", &n) ? n : 1);
	if (!strcmp(type, "number"))
		return json_object_new_double(1.5);
	if (!strcmp(type, "boolean"))
		return json_object_new_boolean(1);
	if (!strcmp(type, "array"))
		return json_object_new_array();
	cr_assert_fail("type %s", type);
	return NULL;
}

/* The required arguments with valid values, plus name = v (taken; NULL:
 * name left out). */
static struct json_object *args_with(struct json_object *schema, const char *name, struct json_object *v)
{
	struct json_object *args = json_object_new_object(), *props = NULL, *req = NULL;
	json_object_object_get_ex(schema, "properties", &props);
	json_object_object_get_ex(schema, "required", &req);
	for (size_t i = 0; req && i < json_object_array_length(req); i++) {
		const char *r = json_object_get_string(json_object_array_get_idx(req, i));
		if (strcmp(r, name) != 0)
			json_object_object_add(args, r, valid_value(json_object_object_get(props, r)));
	}
	if (v)
		json_object_object_add(args, name, v);
	return args;
}

static struct json_object *repeat(const char *unit, int64_t times)
{
	size_t u = strlen(unit);
	char *buf = malloc(u * (size_t)times + 1);
	for (int64_t i = 0; i < times; i++)
		memcpy(buf + u * (size_t)i, unit, u);
	buf[u * (size_t)times] = '\0';
	struct json_object *s = json_object_new_string(buf);
	free(buf);
	return s;
}

static int is_required(struct json_object *schema, const char *name)
{
	struct json_object *req = NULL;
	json_object_object_get_ex(schema, "required", &req);
	for (size_t i = 0; req && i < json_object_array_length(req); i++)
		if (!strcmp(json_object_get_string(json_object_array_get_idx(req, i)), name))
			return 1;
	return 0;
}

static const struct mcp_arg *decl_of(const char *name)
{
	for (const struct mcp_arg *d = cur->args; d && d->name; d++)
		if (!strcmp(d->name, name))
			return d;
	cr_assert_fail("%s.%s is in the schema but not declared", cur->name, name);
	return NULL;
}

static void walk_property(struct json_object *schema, const char *name, struct json_object *prop)
{
	struct json_object *s = prop, *e = NULL;
	int nullable;
	const char *type = type_of(s, &nullable);
	const struct mcp_arg *d = decl_of(name);
	int64_t n = 0;

	/* required / optional; null stands for "not given". */
	if (is_required(schema, name)) {
		run(args_with(schema, name, NULL), 0, name, "required, left out");
		run(args_with(schema, name, json_object_new_null()), 0, name, "required, null");
		cr_expect_not(nullable, "%s.%s required: not nullable", cur->name, name);
	} else {
		/* One schema, typed at its top, null beside the type (and among an
		 * enum's values): the form every client library keeps (issue 25). */
		cr_expect(nullable, "%s.%s optional: type [T, \"null\"]", cur->name, name);
		cr_expect_null(json_object_object_get(prop, "anyOf"), "%s.%s: no anyOf", cur->name, name);
		if (json_object_object_get_ex(s, "enum", &e)) {
			struct json_object *last = json_object_array_get_idx(e, json_object_array_length(e) - 1);
			cr_expect_null(last, "%s.%s: null is among the enum's values", cur->name, name);
		}
		run(args_with(schema, name, NULL), 1, name, "optional, left out");
		run(args_with(schema, name, json_object_new_null()), 1, name, "optional, null");
	}
	run(args_with(schema, name, valid_value(s)), 1, name, "a valid value");

	/* type: a value of another type (for a number that also takes its
	 * text, and an array that also takes the map, one neither accepts). */
	if (!strcmp(type, "string")) {
		run(args_with(schema, name, json_object_new_int(7)), 0, name, "type");
		run(args_with(schema, name, json_object_new_string_len("a\0b", 3)), (d->flags & MCP_ARG_NUL_OK) != 0,
		    name, "NUL character");
	} else if (!strcmp(type, "integer")) {
		run(args_with(schema, name, json_object_new_string("7")), 0, name, "type");
		run(args_with(schema, name, json_object_new_double(1.5)), 0, name, "type, a fraction");
	} else if (!strcmp(type, "number")) {
		run(args_with(schema, name, json_object_new_boolean(1)), 0, name, "type");
	} else if (!strcmp(type, "boolean")) {
		run(args_with(schema, name, json_object_new_string("yes")), 0, name, "type");
	} else if (!strcmp(type, "array")) {
		run(args_with(schema, name, json_object_new_string("x")), 0, name, "type");
		struct json_object *bad = json_object_new_array();
		json_object_array_add(bad, json_object_new_int(1));
		run(args_with(schema, name, bad), 0, name, "items type");
	}

	if (int_of(s, "minimum", &n)) {
		run(args_with(schema, name, json_object_new_int64(n)), 1, name, "minimum");
		run(args_with(schema, name, json_object_new_int64(n - 1)), 0, name, "below minimum");
	}
	if (int_of(s, "maximum", &n)) {
		run(args_with(schema, name, json_object_new_int64(n)), 1, name, "maximum");
		run(args_with(schema, name, json_object_new_int64(n + 1)), 0, name, "above maximum");
	}
	if (int_of(s, "maxLength", &n)) {
		run(args_with(schema, name, repeat("a", n)), 1, name, "maxLength");
		run(args_with(schema, name, repeat("\xc3\xa9", n)), 1, name, "maxLength in characters");
		run(args_with(schema, name, repeat("a", n + 1)), 0, name, "over maxLength");
	}
	if (int_of(s, "minLength", &n)) {
		run(args_with(schema, name, repeat("a", n)), 1, name, "minLength");
		run(args_with(schema, name, repeat("a", n - 1)), 0, name, "under minLength");
	}
	if (json_object_object_get_ex(s, "enum", &e)) {
		for (size_t i = 0; i < json_object_array_length(e); i++)
			run(args_with(schema, name, json_object_get(json_object_array_get_idx(e, i))), 1, name, "enum");
		char off[100];
		snprintf(off, sizeof(off), "%sx", json_object_get_string(json_object_array_get_idx(e, 0)));
		run(args_with(schema, name, json_object_new_string(off)), 0, name, "off the enum");
	}
	if (str_of(s, "pattern")) {
		char id[64], longer[70], upper[64];
		id_for(str_of(s, "pattern"), id, sizeof(id));
		snprintf(longer, sizeof(longer), "%sa", id);
		snprintf(upper, sizeof(upper), "%s", id);
		upper[strlen(upper) - 1] = 'A';
		run(args_with(schema, name, json_object_new_string(longer)), 0, name, "pattern, too long");
		run(args_with(schema, name, json_object_new_string(upper)), 0, name, "pattern, upper case");
		run(args_with(schema, name, json_object_new_string(id + 1)), 0, name, "pattern, prefix cut");
	}
}

Test(tools_schema, each_bound_in_the_schema_is_the_bound_enforced)
{
	size_t n = 0;
	const struct mcp_tool *t = tools_table(&n);
	for (size_t i = 0; i < n; i++) {
		cur = &t[i];
		struct json_object *schema = mcp_tool_schema(cur->args, 0), *props = NULL;
		cr_assert_str_eq(str_of(schema, "type"), "object");
		cr_assert(!json_object_get_boolean(json_object_object_get(schema, "additionalProperties")));
		cr_assert(json_object_object_get_ex(schema, "properties", &props));
		size_t declared = 0;
		for (const struct mcp_arg *d = cur->args; d && d->name; d++)
			declared++;
		cr_expect_eq((size_t)json_object_object_length(props), declared, "%s: every declared argument listed",
		             cur->name);
		json_object_object_foreach(props, key, prop) walk_property(schema, key, prop);
		/* additionalProperties: false */
		run(args_with(schema, "no_such_argument", json_object_new_int(1)), 0, "no_such_argument", "unknown");
		json_object_put(schema);
	}
	cr_expect_gt(checked, 300, "walked %d cases", checked);
}
