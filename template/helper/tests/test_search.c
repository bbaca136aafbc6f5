/* test_search.c: file.search (search.c): matches across a tree in sorted
 * order, path:line:text lines, glob, case, .git and binary files skipped,
 * symlinks, bad patterns, the bounds (max_matches, max_bytes, time, long
 * lines) and invalid UTF-8; one round trip through the helper process. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../paths.h"
#include "../search.h"
#include "harness.h"

static char dir[64];

static void put(const char *name, const void *data, size_t n)
{
	char p[256];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	char *slash = strrchr(p, '/');
	*slash = '\0';
	cr_assert_eq(paths_mkdir_p(p, 0755), 0);
	*slash = '/';
	FILE *f = fopen(p, "wb");
	cr_assert_not_null(f, "%s", p);
	cr_assert_eq(fwrite(data, 1, n, f), n);
	fclose(f);
}

#define PUTS(name, s) put(name, s, sizeof(s) - 1)

static void setup(void)
{
	snprintf(dir, sizeof dir, "/tmp/chat2sbx-search-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	paths_configure(dir, NULL);
	PUTS("a.txt", "hello world\nnothing\nHello again\n");
	PUTS(".gitignore", "hello ignore\n");
	PUTS(".git/config", "hello git\n");
	PUTS("bin.dat", "hello\0binary\n");
	PUTS("bad.txt", "caf\xe9 hello \xff\xfe\n\xc3(hello)\n");
	PUTS("empty.txt", "");
	PUTS("src/main.c", "int main() { return hello(); }\n");
	PUTS("src/notes.md", "hello md\n");
	PUTS("src/util/deep.c", "/* hello deep */");
}

static void teardown(void)
{
	search_set_time_limit_ms(SEARCH_TIME_MS);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(search, .init = setup, .fini = teardown);

/* Call file.search with params (JSON text); NULL on error (err filled). */
static json_object *search(const char *params, struct rpc_error *err)
{
	json_object *p = json_tokener_parse(params);
	cr_assert_not_null(p, "bad test params %s", params);
	json_object *r = NULL;
	int rc = search_rpc(NULL, p, &r, err);
	json_object_put(p);
	return rc == 0 ? r : NULL;
}

static json_object *search_ok(const char *params)
{
	struct rpc_error err;
	json_object *r = search(params, &err);
	cr_assert_not_null(r, "search %s failed: %s", params, err.message);
	return r;
}

static bool has(json_object *o, const char *key)
{
	json_object *v;
	return json_object_object_get_ex(o, key, &v);
}

Test(search, matches_across_a_tree_in_sorted_order)
{
	json_object *r = search_ok("{\"pattern\":\"hello\"}");
	cr_assert_str_eq(jstr(r, "matches"), ".gitignore:1:hello ignore\n"
	                                     "a.txt:1:hello world\n"
	                                     "bad.txt:1:caf\xef\xbf\xbd hello \xef\xbf\xbd\xef\xbf\xbd\n"
	                                     "bad.txt:2:\xef\xbf\xbd(hello)\n"
	                                     "src/main.c:1:int main() { return hello(); }\n"
	                                     "src/notes.md:1:hello md\n"
	                                     "src/util/deep.c:1:/* hello deep */\n");
	cr_assert_eq(jint(r, "count"), 7);
	/* .gitignore a.txt bad.txt main.c notes.md deep.c; not .git, bin.dat, empty.txt */
	cr_assert_eq(jint(r, "files_searched"), 6);
	cr_assert_not(jbool(r, "truncated"));
	cr_assert_not(has(r, "truncated_reason"));
	cr_assert_str_eq(jstr(r, "path"), dir);
	json_object_put(r);
}

Test(search, regex_syntax_and_line_numbers)
{
	json_object *r = search_ok("{\"pattern\":\"^n\\\\w+g$\"}");
	cr_assert_str_eq(jstr(r, "matches"), "a.txt:2:nothing\n");
	json_object_put(r);
	r = search_ok("{\"pattern\":\"xyz_not_there\"}");
	cr_assert_str_eq(jstr(r, "matches"), "");
	cr_assert_eq(jint(r, "count"), 0);
	cr_assert_not(jbool(r, "truncated"));
	json_object_put(r);
}

Test(search, case_insensitive)
{
	json_object *r = search_ok("{\"pattern\":\"HELLO A\",\"case_insensitive\":true}");
	cr_assert_str_eq(jstr(r, "matches"), "a.txt:3:Hello again\n");
	json_object_put(r);
	r = search_ok("{\"pattern\":\"HELLO A\"}");
	cr_assert_eq(jint(r, "count"), 0);
	json_object_put(r);
}

Test(search, glob_on_name_or_relative_path)
{
	json_object *r = search_ok("{\"pattern\":\"hello\",\"glob\":\"*.c\"}");
	cr_assert_str_eq(jstr(r, "matches"), "src/main.c:1:int main() { return hello(); }\n"
	                                     "src/util/deep.c:1:/* hello deep */\n");
	cr_assert_eq(jint(r, "files_searched"), 2);
	json_object_put(r);
	r = search_ok("{\"pattern\":\"hello\",\"glob\":\"src/*.md\"}");
	cr_assert_str_eq(jstr(r, "matches"), "src/notes.md:1:hello md\n");
	json_object_put(r);
}

Test(search, git_directory_and_binary_files_are_skipped)
{
	json_object *r = search_ok("{\"pattern\":\"git|binary\"}");
	cr_assert_eq(jint(r, "count"), 0, "%s", jstr(r, "matches"));
	json_object_put(r);
	/* Named explicitly, a binary file is still skipped. */
	r = search_ok("{\"pattern\":\"hello\",\"path\":\"bin.dat\"}");
	cr_assert_eq(jint(r, "count"), 0);
	cr_assert_eq(jint(r, "files_searched"), 0);
	json_object_put(r);
}

Test(search, subdirectory_file_and_outside_paths)
{
	json_object *r = search_ok("{\"pattern\":\"hello\",\"path\":\"src\"}");
	cr_assert_str_eq(jstr(r, "matches"), "main.c:1:int main() { return hello(); }\n"
	                                     "notes.md:1:hello md\n"
	                                     "util/deep.c:1:/* hello deep */\n");
	json_object_put(r);
	r = search_ok("{\"pattern\":\"hello\",\"path\":\"src/util/deep.c\"}");
	cr_assert_str_eq(jstr(r, "matches"), "src/util/deep.c:1:/* hello deep */\n");
	cr_assert_eq(jint(r, "files_searched"), 1);
	json_object_put(r);
	/* Outside the workspace: absolute paths. */
	char ws[128], params[256], want[256];
	snprintf(ws, sizeof ws, "%s/src/util", dir);
	paths_configure(ws, NULL);
	snprintf(params, sizeof params, "{\"pattern\":\"main\",\"path\":\"%s/src\"}", dir);
	r = search_ok(params);
	snprintf(want, sizeof want, "%s/src/main.c:1:int main() { return hello(); }\n", dir);
	cr_assert_str_eq(jstr(r, "matches"), want);
	json_object_put(r);
}

Test(search, symlinks_to_files_are_searched_to_directories_not)
{
	char p[256];
	snprintf(p, sizeof p, "%s/src/zlink.c", dir);
	cr_assert_eq(symlink("main.c", p), 0);
	snprintf(p, sizeof p, "%s/src/zdir", dir);
	cr_assert_eq(symlink("util", p), 0);
	json_object *r = search_ok("{\"pattern\":\"hello\",\"path\":\"src\"}");
	cr_assert_str_eq(jstr(r, "matches"), "main.c:1:int main() { return hello(); }\n"
	                                     "notes.md:1:hello md\n"
	                                     "util/deep.c:1:/* hello deep */\n"
	                                     "zlink.c:1:int main() { return hello(); }\n");
	json_object_put(r);
}

Test(search, bad_regex_names_the_error_and_offset)
{
	struct rpc_error err;
	cr_assert_null(search("{\"pattern\":\"a(b\"}", &err));
	cr_assert_str_eq(err.data_code, "INVALID_ARGUMENT");
	cr_assert_eq(err.code, -32602);
	cr_assert(strstr(err.message, "missing closing parenthesis"), "%s", err.message);
	cr_assert(strstr(err.message, "at offset 3"), "%s", err.message);
	cr_assert_null(search("{\"path\":\"src\"}", &err));
	cr_assert(strstr(err.message, "pattern"), "%s", err.message);
}

Test(search, missing_path_is_not_found)
{
	struct rpc_error err;
	cr_assert_null(search("{\"pattern\":\"x\",\"path\":\"nope\"}", &err));
	cr_assert_str_eq(err.data_code, "NOT_FOUND");
	cr_assert(strstr(err.message, "nope"), "%s", err.message);
}

Test(search, max_matches_truncates_with_a_reason)
{
	json_object *r = search_ok("{\"pattern\":\"hello\",\"max_matches\":2}");
	cr_assert_str_eq(jstr(r, "matches"), ".gitignore:1:hello ignore\na.txt:1:hello world\n");
	cr_assert_eq(jint(r, "count"), 2);
	cr_assert(jbool(r, "truncated"));
	cr_assert_str_eq(jstr(r, "truncated_reason"), "max_matches");
	json_object_put(r);
	/* Exactly as many matches as allowed: not truncated. */
	r = search_ok("{\"pattern\":\"hello\",\"max_matches\":7}");
	cr_assert_eq(jint(r, "count"), 7);
	cr_assert_not(jbool(r, "truncated"));
	json_object_put(r);
}

Test(search, max_bytes_truncates_with_a_reason)
{
	json_object *r = search_ok("{\"pattern\":\"hello\",\"max_bytes\":50}");
	cr_assert_str_eq(jstr(r, "matches"), ".gitignore:1:hello ignore\na.txt:1:hello world\n");
	cr_assert_eq(jint(r, "count"), 2);
	cr_assert_str_eq(jstr(r, "truncated_reason"), "max_bytes");
	json_object_put(r);
}

Test(search, time_bound_truncates_with_a_reason)
{
	search_set_time_limit_ms(0);
	json_object *r = search_ok("{\"pattern\":\"hello\"}");
	cr_assert(jbool(r, "truncated"));
	cr_assert_str_eq(jstr(r, "truncated_reason"), "time");
	json_object_put(r);
}

Test(search, long_lines_are_cut_at_500_bytes)
{
	char line[1200];
	memset(line, 'x', 600);
	memcpy(line + 600, "needle\n", 7);
	put("long.txt", line, 607);
	/* A 2-byte character straddling byte 500 is not split. */
	memset(line, 'y', 499);
	memcpy(line + 499, "\xc3\xa9needle\n", 9);
	put("long2.txt", line, 508);
	json_object *r = search_ok("{\"pattern\":\"needle\",\"glob\":\"long*\"}");
	const char *m = jstr(r, "matches");
	cr_assert_eq(jint(r, "count"), 2);
	char want[1200];
	int n =
	    snprintf(want, sizeof want, "long.txt:1:%.500s\xe2\x80\xa6\nlong2.txt:1:%.499s\xe2\x80\xa6\n", line, line);
	memset(want + strlen("long.txt:1:"), 'x', 500);
	cr_assert_eq(strlen(m), (size_t)n);
	cr_assert_str_eq(m, want);
	json_object_put(r);
}

Test(search, invalid_utf8_does_not_break_matching)
{
	/* Invalid bytes before, inside and after; lines later in the file too. */
	PUTS("mixed.txt", "\xff\xff start\n\xe2\x82 mid caf\xc3\xa9 \xc0\xaf\nend \xf0\x9f\x98\x80 ok\n");
	json_object *r = search_ok("{\"pattern\":\"caf\\u00e9|ok$|start\",\"path\":\"mixed.txt\"}");
	cr_assert_str_eq(jstr(r, "matches"), "mixed.txt:1:\xef\xbf\xbd\xef\xbf\xbd start\n"
	                                     "mixed.txt:2:\xef\xbf\xbd mid caf\xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd\n"
	                                     "mixed.txt:3:end \xf0\x9f\x98\x80 ok\n");
	json_object_put(r);
	/* An invalid byte matches nothing; . matches a whole character. */
	r = search_ok("{\"pattern\":\"^. start\",\"path\":\"mixed.txt\"}");
	cr_assert_eq(jint(r, "count"), 0);
	json_object_put(r);
	r = search_ok("{\"pattern\":\"^end . ok\",\"path\":\"mixed.txt\"}");
	cr_assert_eq(jint(r, "count"), 1);
	json_object_put(r);
}

Test(search, catastrophic_pattern_is_bounded)
{
	char line[64];
	memset(line, 'a', 40);
	memcpy(line + 40, "!\n", 2);
	put("evil.txt", line, 42);
	int64_t t0 = now_ms();
	json_object *r = search_ok("{\"pattern\":\"(a+)+$\",\"path\":\"evil.txt\"}");
	cr_assert_lt(now_ms() - t0, 10000);
	cr_assert_eq(jint(r, "count"), 0);
	json_object_put(r);
}

Test(search, round_trip_through_the_helper)
{
	struct harness h;
	harness_start(&h);
	char p[PATH_MAX + 32];
	snprintf(p, sizeof p, "%s/pkg", h.workspace);
	cr_assert_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof p, "%s/pkg/a.py", h.workspace);
	FILE *f = fopen(p, "w");
	fputs("import os\ndef Main():\n    pass\n", f);
	fclose(f);
	json_object *r = harness_call(&h, 1, 10000,
	                              "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"file.search\",\"params\":{"
	                              "\"pattern\":\"def main\",\"case_insensitive\":true,\"glob\":\"*.py\"}}");
	cr_assert_not_null(r);
	cr_assert_str_eq(jstr(r, "matches"), "pkg/a.py:2:def Main():\n");
	cr_assert_eq(jint(r, "count"), 1);
	cr_assert_eq(jint(r, "files_searched"), 1);
	cr_assert_not(jbool(r, "truncated"));
	json_object_put(r);
	harness_send(&h, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"file.search\",\"params\":{\"pattern\":\"[\"}}");
	json_object *rep = harness_wait(&h, 2, 10000);
	json_object *e, *d;
	cr_assert(json_object_object_get_ex(rep, "error", &e));
	cr_assert(json_object_object_get_ex(e, "data", &d));
	cr_assert_str_eq(jstr(d, "code"), "INVALID_ARGUMENT");
	cr_assert(strstr(jstr(e, "message"), "offset"), "%s", jstr(e, "message"));
	json_object_put(rep);
	int st = harness_stop(&h);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "helper loop ended with status 0x%x", st);
}
