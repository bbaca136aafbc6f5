/* test_edit.c: file.edit (edit.c): exact matches (zero, one, many with their
 * lines), replace_all, CRLF files edited with LF strings, a missing final
 * newline kept, expected_sha256, mode kept, and one round trip through the
 * helper process. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../edit.h"
#include "../paths.h"
#include "../sha256.h"
#include "harness.h"

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof dir, "/tmp/chat2sbx-edit-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	paths_configure(dir, NULL);
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(edit, .init = setup, .fini = teardown);

static char *path_of(const char *name)
{
	static char p[256];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	return p;
}

static void put(const char *name, const char *data)
{
	FILE *f = fopen(path_of(name), "wb");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(data, 1, strlen(data), f), strlen(data));
	fclose(f);
}

/* The file's content (static buffer). */
static const char *get(const char *name)
{
	static char buf[65536];
	FILE *f = fopen(path_of(name), "rb");
	cr_assert_not_null(f);
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void hash(const char *s, char out[65])
{
	sha256_hex(s, strlen(s), out);
}

/* Call file.edit with params built from name, old, new and extra JSON. */
static int edit(const char *name, const char *old, const char *new, const char *extra, json_object **ret,
                struct rpc_error *err)
{
	json_object *p = json_object_new_object();
	json_object_object_add(p, "path", json_object_new_string(name));
	json_object_object_add(p, "old_string", json_object_new_string(old));
	json_object_object_add(p, "new_string", json_object_new_string(new));
	if (extra) {
		json_object *x = json_tokener_parse(extra);
		cr_assert_not_null(x);
		json_object_object_foreach(x, k, v) json_object_object_add(p, k, json_object_get(v));
		json_object_put(x);
	}
	*ret = NULL;
	int r = edit_rpc(NULL, p, ret, err);
	json_object_put(p);
	return r;
}

Test(edit, one_match_is_replaced)
{
	put("a.txt", "alpha\nbeta\ngamma\n");
	json_object *r;
	struct rpc_error err;
	cr_assert_eq(edit("a.txt", "beta", "BETA", NULL, &r, &err), 0, "%s", err.message);
	cr_assert_str_eq(get("a.txt"), "alpha\nBETA\ngamma\n");
	cr_assert_str_eq(jstr(r, "path"), path_of("a.txt"));
	cr_assert_eq(jint(r, "replacements"), 1);
	cr_assert_eq(jint(r, "bytes_written"), 17);
	char h[65];
	hash("alpha\nBETA\ngamma\n", h);
	cr_assert_str_eq(jstr(r, "sha256"), h);
	json_object_put(r);
}

Test(edit, zero_matches_is_not_found)
{
	put("a.txt", "alpha\nbeta\n");
	json_object *r;
	struct rpc_error err;
	cr_assert_eq(edit("a.txt", "Beta", "x", NULL, &r, &err), -1);
	cr_assert_str_eq(err.data_code, "NOT_FOUND");
	cr_assert(strstr(err.message, "old_string was not found in '"), "%s", err.message);
	cr_assert(strstr(err.message, "whitespace and line endings matter"), "%s", err.message);
	cr_assert_str_eq(get("a.txt"), "alpha\nbeta\n");
}

Test(edit, many_matches_list_their_lines)
{
	put("a.txt", "x = 1\ny = 2\nx = 3\n\nx = 4\n");
	json_object *r;
	struct rpc_error err;
	cr_assert_eq(edit("a.txt", "x =", "z =", NULL, &r, &err), -1);
	cr_assert_str_eq(err.data_code, "CONFLICT");
	cr_assert(strstr(err.message, "old_string matches 3 times in '"), "%s", err.message);
	cr_assert(strstr(err.message, "(lines 1, 3, 5)"), "%s", err.message);
	cr_assert(strstr(err.message, "pass replace_all"), "%s", err.message);
	cr_assert_str_eq(get("a.txt"), "x = 1\ny = 2\nx = 3\n\nx = 4\n");
}

/* Issue 18: "aa" in "aaa" is two matches (overlapping), never a unique one. */
Test(edit, overlapping_matches_are_not_unique)
{
	put("a.txt", "aaa\n");
	json_object *r;
	struct rpc_error err;
	cr_assert_eq(edit("a.txt", "aa", "b", NULL, &r, &err), -1);
	cr_assert_str_eq(err.data_code, "CONFLICT");
	cr_assert(strstr(err.message, "old_string matches 2 times in '"), "%s", err.message);
	cr_assert(strstr(err.message, "(lines 1, 1), overlapping matches counted"), "%s", err.message);
	cr_assert_str_eq(get("a.txt"), "aaa\n", "nothing was written");
	/* replace_all replaces left to right without overlap. */
	cr_assert_eq(edit("a.txt", "aa", "b", "{\"replace_all\":true}", &r, &err), 0, "%s", err.message);
	cr_assert_eq(jint(r, "replacements"), 1);
	cr_assert_str_eq(get("a.txt"), "ba\n");
	json_object_put(r);
	put("b.txt", "abab\nabab\n");
	cr_assert_eq(edit("b.txt", "abab", "x", NULL, &r, &err), -1, "two separate matches");
	cr_assert(strstr(err.message, "(lines 1, 2)"), "%s", err.message);
	put("c.txt", "ababab\n");
	cr_assert_eq(edit("c.txt", "abab", "x", NULL, &r, &err), -1, "two overlapping matches");
	cr_assert(strstr(err.message, "matches 2 times"), "%s", err.message);
}

Test(edit, replace_all_replaces_every_match)
{
	put("a.txt", "x = 1\ny = 2\nx = 3\n");
	json_object *r;
	struct rpc_error err;
	cr_assert_eq(edit("a.txt", "x", "long_name", "{\"replace_all\":true}", &r, &err), 0, "%s", err.message);
	cr_assert_eq(jint(r, "replacements"), 2);
	cr_assert_str_eq(get("a.txt"), "long_name = 1\ny = 2\nlong_name = 3\n");
	json_object_put(r);
}

Test(edit, bad_arguments)
{
	put("a.txt", "abc\n");
	json_object *r;
	struct rpc_error err;
	cr_assert_eq(edit("a.txt", "", "x", NULL, &r, &err), -1);
	cr_assert_str_eq(err.data_code, "INVALID_ARGUMENT");
	cr_assert_eq(edit("a.txt", "abc", "abc", NULL, &r, &err), -1);
	cr_assert_str_eq(err.data_code, "INVALID_ARGUMENT");
	cr_assert_eq(edit("missing.txt", "a", "b", NULL, &r, &err), -1);
	cr_assert_str_eq(err.data_code, "NOT_FOUND");
	FILE *f = fopen(path_of("bin"), "wb");
	fwrite("ab\0cd", 1, 5, f);
	fclose(f);
	cr_assert_eq(edit("bin", "ab", "x", NULL, &r, &err), -1);
	cr_assert_str_eq(err.data_code, "INVALID_ARGUMENT");
	cr_assert(strstr(err.message, "binary"), "%s", err.message);
}

Test(edit, crlf_file_edited_with_lf_strings_stays_crlf)
{
	put("w.txt", "one\r\ntwo\r\nthree\r\n");
	json_object *r;
	struct rpc_error err;
	cr_assert_eq(edit("w.txt", "one\ntwo\n", "one\nTWO\nextra\n", NULL, &r, &err), 0, "%s", err.message);
	cr_assert_str_eq(get("w.txt"), "one\r\nTWO\r\nextra\r\nthree\r\n");
	json_object_put(r);
	/* An LF file is matched byte for byte: CRLF strings do not match it. */
	put("u.txt", "one\ntwo\n");
	cr_assert_eq(edit("u.txt", "one\r\ntwo", "x", NULL, &r, &err), -1);
	cr_assert_str_eq(err.data_code, "NOT_FOUND");
}

Test(edit, missing_final_newline_stays_missing)
{
	put("a.txt", "first\nlast");
	json_object *r;
	struct rpc_error err;
	cr_assert_eq(edit("a.txt", "last", "LAST", NULL, &r, &err), 0, "%s", err.message);
	cr_assert_str_eq(get("a.txt"), "first\nLAST");
	json_object_put(r);
}

Test(edit, expected_sha256_mismatch_changes_nothing)
{
	put("a.txt", "v1\n");
	char h[65];
	hash("v0\n", h);
	char extra[128];
	snprintf(extra, sizeof extra, "{\"expected_sha256\":\"%s\"}", h);
	json_object *r;
	struct rpc_error err;
	cr_assert_eq(edit("a.txt", "v1", "v2", extra, &r, &err), -1);
	cr_assert_str_eq(err.data_code, "CONFLICT");
	cr_assert(strstr(err.message, "changed since it was read"), "%s", err.message);
	cr_assert_str_eq(get("a.txt"), "v1\n");
	hash("v1\n", h);
	snprintf(extra, sizeof extra, "{\"expected_sha256\":\"%s\"}", h);
	cr_assert_eq(edit("a.txt", "v1", "v2", extra, &r, &err), 0, "%s", err.message);
	cr_assert_str_eq(get("a.txt"), "v2\n");
	json_object_put(r);
}

Test(edit, mode_is_kept)
{
	put("run.sh", "#!/bin/sh\necho hi\n");
	cr_assert_eq(chmod(path_of("run.sh"), 0751), 0);
	json_object *r;
	struct rpc_error err;
	cr_assert_eq(edit("run.sh", "hi", "bye", NULL, &r, &err), 0, "%s", err.message);
	json_object_put(r);
	struct stat st;
	cr_assert_eq(stat(path_of("run.sh"), &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0751);
	cr_assert_str_eq(get("run.sh"), "#!/bin/sh\necho bye\n");
}

Test(edit, round_trip_through_the_helper)
{
	struct harness h;
	harness_start(&h);
	char p[PATH_MAX + 16];
	snprintf(p, sizeof p, "%s/e.txt", h.workspace);
	FILE *f = fopen(p, "w");
	fputs("hello world\n", f);
	fclose(f);
	json_object *r = harness_call(&h, 1, 5000,
	                              "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"file.edit\",\"params\":{"
	                              "\"path\":\"e.txt\",\"old_string\":\"world\",\"new_string\":\"there\"}}");
	cr_assert_not_null(r);
	cr_assert_eq(jint(r, "replacements"), 1);
	cr_assert_str_eq(jstr(r, "path"), p);
	json_object_put(r);
	harness_send(&h, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"file.edit\",\"params\":{"
	                 "\"path\":\"e.txt\",\"old_string\":\"world\",\"new_string\":\"x\"}}");
	json_object *rep = harness_wait(&h, 2, 5000), *e, *d;
	cr_assert(json_object_object_get_ex(rep, "error", &e));
	cr_assert(json_object_object_get_ex(e, "data", &d));
	cr_assert_str_eq(jstr(d, "code"), "NOT_FOUND");
	json_object_put(rep);
	f = fopen(p, "r");
	char buf[64] = {0};
	cr_assert_not_null(fgets(buf, sizeof buf, f));
	fclose(f);
	cr_assert_str_eq(buf, "hello there\n");
	int st = harness_stop(&h);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}
