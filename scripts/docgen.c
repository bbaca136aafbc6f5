/* docgen.c: prints facts of the code's tables for the docs, so no page
 * restates them by hand (make docs, make check-docs). `docgen tools` prints
 * docs/tool-reference.md from the tool table (controlplane/tools/table.c),
 * made from the same schemas tools/list answers; `docgen settings` prints
 * the name of every setting of the settings table, one per line. Reads no
 * file and no environment; never a part of chat2sbx itself. */
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "mcp/mcp.h"
#include "tools/tools.h"

/* Prints s as one Markdown table cell: one line, pipes escaped. */
static void cell(const char *s)
{
	for (; s && *s; s++) {
		if (*s == '\n' || *s == '\r')
			fputc(' ', stdout);
		else if (*s == '|')
			fputs("\\|", stdout);
		else
			fputc(*s, stdout);
	}
}

static const char *str_of(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;
	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
	           ? json_object_get_string(v)
	           : NULL;
}

/* The branch of a property schema that is not {"type": "null"}: an optional
 * argument is advertised as anyOf [P, null] (or with a type list). */
static struct json_object *non_null(struct json_object *prop)
{
	struct json_object *any = NULL;
	if (!json_object_object_get_ex(prop, "anyOf", &any) || !json_object_is_type(any, json_type_array))
		return prop;
	for (size_t i = 0; i < json_object_array_length(any); i++) {
		struct json_object *b = json_object_array_get_idx(any, i);
		const char *t = str_of(b, "type");
		if (!t || strcmp(t, "null") != 0)
			return b;
	}
	return prop;
}

/* Prints the JSON type of schema s: "string", "array of object", a type
 * list without "null" joined by " or ". */
static void type_of(struct json_object *s)
{
	struct json_object *t = NULL, *items = NULL;
	if (!json_object_object_get_ex(s, "type", &t)) {
		fputs("any", stdout);
		return;
	}
	if (json_object_is_type(t, json_type_array)) {
		int n = 0;
		for (size_t i = 0; i < json_object_array_length(t); i++) {
			const char *one = json_object_get_string(json_object_array_get_idx(t, i));
			if (strcmp(one, "null") != 0)
				printf("%s%s", n++ ? " or " : "", one);
		}
		return;
	}
	fputs(json_object_get_string(t), stdout);
	if (json_object_object_get_ex(s, "items", &items)) {
		fputs(" of ", stdout);
		type_of(non_null(items));
	}
}

/* Prints what schema s accepts beyond its type: bounds, lengths, pattern,
 * enumeration, and the fields of an array's objects. */
static void accepted(struct json_object *s)
{
	struct json_object *v = NULL, *items = NULL, *props = NULL;
	const char *sep = "";
	int has_min = json_object_object_get_ex(s, "minimum", &v);
	struct json_object *min = v;
	int has_max = json_object_object_get_ex(s, "maximum", &v);
	if (has_min || has_max) {
		printf("%s%s..%s", sep, has_min ? json_object_to_json_string(min) : "",
		       has_max ? json_object_to_json_string(v) : "");
		sep = "; ";
	}
	if (json_object_object_get_ex(s, "minLength", &v)) {
		printf("%sat least %d character(s)", sep, json_object_get_int(v));
		sep = "; ";
	}
	if (json_object_object_get_ex(s, "maxLength", &v)) {
		printf("%sat most %d characters", sep, json_object_get_int(v));
		sep = "; ";
	}
	if (json_object_object_get_ex(s, "maxItems", &v)) {
		printf("%sat most %d items", sep, json_object_get_int(v));
		sep = "; ";
	}
	if (json_object_object_get_ex(s, "pattern", &v)) {
		printf("%s`", sep);
		cell(json_object_get_string(v));
		fputc('`', stdout);
		sep = "; ";
	}
	if (json_object_object_get_ex(s, "enum", &v) && json_object_is_type(v, json_type_array)) {
		fputs(sep, stdout);
		for (size_t i = 0; i < json_object_array_length(v); i++) {
			printf("%s`", i ? ", " : "");
			cell(json_object_get_string(json_object_array_get_idx(v, i)));
			fputc('`', stdout);
		}
		sep = "; ";
	}
	if (json_object_object_get_ex(s, "items", &items) &&
	    json_object_object_get_ex(non_null(items), "properties", &props)) {
		printf("%seach with", sep);
		int n = 0;
		json_object_object_foreach(props, k, unused)
		{
			(void)unused;
			printf("%s `%s`", n++ ? "," : "", k);
		}
	}
}

static int is_required(struct json_object *schema, const char *name)
{
	struct json_object *req = NULL;
	if (!json_object_object_get_ex(schema, "required", &req) || !json_object_is_type(req, json_type_array))
		return 0;
	for (size_t i = 0; i < json_object_array_length(req); i++)
		if (!strcmp(json_object_get_string(json_object_array_get_idx(req, i)), name))
			return 1;
	return 0;
}

/* One table of schema's properties; input: with the required column. */
static void properties(struct json_object *schema, int input)
{
	struct json_object *props = NULL;
	if (!schema || !json_object_object_get_ex(schema, "properties", &props) ||
	    json_object_object_length(props) == 0) {
		puts(input ? "\nNo arguments." : "\nNo declared fields.");
		return;
	}
	puts(input ? "\n| argument | type | required | accepted | description |\n|---|---|---|---|---|"
	           : "\n| field | type | values | description |\n|---|---|---|---|");
	json_object_object_foreach(props, name, prop)
	{
		struct json_object *s = non_null(prop);
		printf("| `%s` | ", name);
		type_of(s);
		if (input)
			printf(" | %s", is_required(schema, name) ? "yes" : "no");
		fputs(" | ", stdout);
		accepted(s);
		fputs(" | ", stdout);
		cell(str_of(prop, "description") ? str_of(prop, "description") : str_of(s, "description"));
		puts(" |");
	}
}

static const char *yes(unsigned hints, unsigned bit)
{
	return hints & bit ? "yes" : "no";
}

static int tools_page(void)
{
	size_t n = 0;
	const struct mcp_tool *t = tools_table_plain(&n);
	puts("# Tool reference\n\n"
	     "<!-- Generated by `make docs` from controlplane/tools/table.c (scripts/docgen.c); do not edit:\n"
	     "     make check-docs fails when this page differs from what the table generates. -->\n");
	printf("The %zu tools `tools/list` answers, in its order, as the tool table\n"
	       "(`controlplane/tools/table.c`) declares them. What every tool shares (results,\n"
	       "errors, how arguments are checked, bash sessions): [tools.md](tools.md).\n\n",
	       n);
	puts("| tool | title | read-only | destructive | idempotent | open world |\n|---|---|---|---|---|---|");
	for (size_t i = 0; i < n; i++) {
		printf("| [`%s`](#%s) | ", t[i].name, t[i].name);
		cell(t[i].title);
		printf(" | %s | %s | %s | %s |\n", yes(t[i].hints, MCP_HINT_READ_ONLY),
		       yes(t[i].hints, MCP_HINT_DESTRUCTIVE), yes(t[i].hints, MCP_HINT_IDEMPOTENT),
		       yes(t[i].hints, MCP_HINT_OPEN_WORLD));
	}
	for (size_t i = 0; i < n; i++) {
		printf("\n## %s\n\n**", t[i].name);
		cell(t[i].title);
		puts(".**\n");
		puts(t[i].description);
		struct json_object *in = mcp_tool_schema(t[i].args, 0);
		properties(in, 1);
		json_object_put(in);
		if (t[i].output) {
			puts("\nResult fields:");
			struct json_object *out = mcp_tool_schema(t[i].output, 1);
			properties(out, 0);
			json_object_put(out);
		}
	}
	return fflush(stdout) == 0 ? 0 : 1;
}

static int settings_list(void)
{
	size_t n = 0;
	const struct config_setting_info *s = config_settings(&n);
	for (size_t i = 0; i < n; i++)
		puts(s[i].env);
	return fflush(stdout) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "tools"))
		return tools_page();
	if (argc == 2 && !strcmp(argv[1], "settings"))
		return settings_list();
	fputs("usage: docgen tools|settings\n", stderr);
	return 2;
}
