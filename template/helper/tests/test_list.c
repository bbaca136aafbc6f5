/* test_list.c: file.list (list.c): depth, sorted depth-first order, glob,
 * symlinks with their targets (never followed), sizes, .git marked and not
 * descended into, truncation, errors; file.read "numbered" (files.c); one
 * round trip of each through the helper process. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../files.h"
#include "../list.h"
#include "../paths.h"
#include "harness.h"

static char dir[64];

static void put(const char *name, const char *data)
{
	char p[256];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	char *slash = strrchr(p, '/');
	*slash = '\0';
	cr_assert_eq(paths_mkdir_p(p, 0755), 0);
	*slash = '/';
	FILE *f = fopen(p, "wb");
	cr_assert_not_null(f, "%s", p);
	fputs(data, f);
	fclose(f);
}

static void link_at(const char *target, const char *name)
{
	char p[256];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	cr_assert_eq(symlink(target, p), 0);
}

static void setup(void)
{
	snprintf(dir, sizeof dir, "/tmp/chat2sbx-list-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	paths_configure(dir, NULL);
	put("b.txt", "bee");
	put("a.txt", "");
	put("a/x.c", "int x");
	put("a/sub/deep.txt", "deep\n");
	put(".git/HEAD", "ref: refs/heads/main\n");
	link_at("b.txt", "link");
	link_at("a", "dlink");
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(list, .init = setup, .fini = teardown);

static json_object *call(int (*fn)(json_object *, json_object *, json_object **, struct rpc_error *),
                         const char *params, struct rpc_error *err)
{
	json_object *p = json_tokener_parse(params);
	cr_assert_not_null(p, "bad test params %s", params);
	json_object *r = NULL;
	int rc = fn(NULL, p, &r, err);
	json_object_put(p);
	return rc == 0 ? r : NULL;
}

static json_object *list_ok(const char *params)
{
	struct rpc_error err;
	json_object *r = call(list_rpc, params, &err);
	cr_assert_not_null(r, "list %s failed: %s", params, err.message);
	return r;
}

/* The entries as "path type" lines, for one comparison. */
static char *summary(json_object *r)
{
	json_object *entries;
	cr_assert(json_object_object_get_ex(r, "entries", &entries));
	static char buf[4096];
	size_t o = 0;
	for (size_t i = 0; i < json_object_array_length(entries); i++) {
		json_object *e = json_object_array_get_idx(entries, i);
		o += (size_t)snprintf(buf + o, sizeof buf - o, "%s %s\n", jstr(e, "path"), jstr(e, "type"));
	}
	buf[o] = '\0';
	cr_assert_eq(jint(r, "count"), (int64_t)json_object_array_length(entries));
	return buf;
}

static json_object *entry(json_object *r, const char *path)
{
	json_object *entries;
	cr_assert(json_object_object_get_ex(r, "entries", &entries));
	for (size_t i = 0; i < json_object_array_length(entries); i++) {
		json_object *e = json_object_array_get_idx(entries, i);
		if (!strcmp(jstr(e, "path"), path))
			return e;
	}
	cr_assert_fail("no entry %s", path);
	return NULL;
}

Test(list, depth_one_is_the_directory_entries_sorted)
{
	json_object *r = list_ok("{\"depth\":1}");
	cr_assert_str_eq(summary(r), ".git dir\n"
	                             "a dir\n"
	                             "a.txt file\n"
	                             "b.txt file\n"
	                             "dlink symlink\n"
	                             "link symlink\n");
	cr_assert_str_eq(jstr(r, "path"), dir);
	cr_assert_not(jbool(r, "truncated"));
	json_object_put(r);
}

Test(list, default_depth_two_lists_a_directory_before_its_contents)
{
	json_object *r = list_ok("{}");
	cr_assert_str_eq(summary(r), ".git dir\n"
	                             "a dir\n"
	                             "a/sub dir\n"
	                             "a/x.c file\n"
	                             "a.txt file\n"
	                             "b.txt file\n"
	                             "dlink symlink\n"
	                             "link symlink\n");
	json_object_put(r);
	r = list_ok("{\"depth\":3}");
	cr_assert_str_eq(summary(r), ".git dir\n"
	                             "a dir\n"
	                             "a/sub dir\n"
	                             "a/sub/deep.txt file\n"
	                             "a/x.c file\n"
	                             "a.txt file\n"
	                             "b.txt file\n"
	                             "dlink symlink\n"
	                             "link symlink\n");
	json_object_put(r);
}

Test(list, sizes_symlink_targets_and_git_marked)
{
	json_object *r = list_ok("{\"depth\":3}");
	cr_assert_eq(jint(entry(r, "b.txt"), "size"), 3);
	cr_assert_eq(jint(entry(r, "a.txt"), "size"), 0);
	cr_assert_eq(jint(entry(r, "a/x.c"), "size"), 5);
	cr_assert_eq(jint(entry(r, "a"), "size"), -1); /* no size for directories */
	cr_assert_str_eq(jstr(entry(r, "link"), "target"), "b.txt");
	cr_assert_str_eq(jstr(entry(r, "dlink"), "target"), "a");
	cr_assert_eq(jint(entry(r, "link"), "size"), -1);
	cr_assert(jbool(entry(r, ".git"), "contents_skipped"));
	cr_assert_not(jbool(entry(r, "a"), "contents_skipped"));
	json_object_put(r);
}

Test(list, glob_filters_files_not_directories)
{
	json_object *r = list_ok("{\"depth\":5,\"glob\":\"*.txt\"}");
	cr_assert_str_eq(summary(r), ".git dir\n"
	                             "a dir\n"
	                             "a/sub dir\n"
	                             "a/sub/deep.txt file\n"
	                             "a.txt file\n"
	                             "b.txt file\n");
	json_object_put(r);
	r = list_ok("{\"depth\":5,\"glob\":\"a/*\"}");
	cr_assert_str_eq(summary(r), ".git dir\n"
	                             "a dir\n"
	                             "a/sub dir\n"
	                             "a/sub/deep.txt file\n"
	                             "a/x.c file\n");
	json_object_put(r);
}

Test(list, max_entries_truncates)
{
	json_object *r = list_ok("{\"depth\":1,\"max_entries\":3}");
	cr_assert_str_eq(summary(r), ".git dir\na dir\na.txt file\n");
	cr_assert(jbool(r, "truncated"));
	json_object_put(r);
	r = list_ok("{\"depth\":1,\"max_entries\":6}");
	cr_assert_eq(jint(r, "count"), 6);
	cr_assert_not(jbool(r, "truncated"));
	json_object_put(r);
}

Test(list, subdirectory_and_errors)
{
	json_object *r = list_ok("{\"path\":\"a\",\"depth\":1}");
	cr_assert_str_eq(summary(r), "sub dir\nx.c file\n");
	char want[128];
	snprintf(want, sizeof want, "%s/a", dir);
	cr_assert_str_eq(jstr(r, "path"), want);
	json_object_put(r);
	/* A symlink to a directory named as the path is followed. */
	r = list_ok("{\"path\":\"dlink\",\"depth\":1}");
	cr_assert_str_eq(summary(r), "sub dir\nx.c file\n");
	json_object_put(r);
	struct rpc_error err;
	cr_assert_null(call(list_rpc, "{\"path\":\"b.txt\"}", &err));
	cr_assert_str_eq(err.data_code, "INVALID_ARGUMENT");
	cr_assert(strstr(err.message, "not a directory"), "%s", err.message);
	cr_assert_null(call(list_rpc, "{\"path\":\"missing\"}", &err));
	cr_assert_str_eq(err.data_code, "NOT_FOUND");
	cr_assert_null(call(list_rpc, "{\"depth\":0}", &err));
	cr_assert_str_eq(err.data_code, "INVALID_ARGUMENT");
	cr_assert(strstr(err.message, "depth"), "%s", err.message);
}

Test(list, walker_is_bounded_and_deep_trees_need_no_recursion)
{
	/* 200 nested directories: the walk uses a stack, not the C stack. */
	char p[2048];
	int n = snprintf(p, sizeof p, "%s", dir);
	for (int i = 0; i < 200; i++)
		n += snprintf(p + n, sizeof p - (size_t)n, "/d");
	cr_assert_eq(paths_mkdir_p(p, 0755), 0);
	struct walk w;
	cr_assert_eq(walk_init(&w, dir, 0, WALK_MAX_ENTRIES), 0);
	struct walk_entry e;
	int count = 0, deepest = 0;
	while (walk_next(&w, &e)) {
		count++;
		deepest = e.depth > deepest ? e.depth : deepest;
	}
	cr_assert_not(w.cut);
	walk_free(&w);
	cr_assert_eq(deepest, 200);
	cr_assert_eq(count, 9 + 200); /* the 9 above (.git itself, not its contents) plus d/…/d */
	cr_assert_eq(walk_init(&w, dir, 0, 4), 0);
	count = 0;
	while (walk_next(&w, &e))
		count++;
	cr_assert_eq(count, 4);
	cr_assert(w.cut);
	walk_free(&w);
}

/* ---- file.read "numbered" ---- */

static json_object *read_ok(const char *params)
{
	struct rpc_error err;
	json_object *r = call(files_rpc_read, params, &err);
	cr_assert_not_null(r, "read %s failed: %s", params, err.message);
	return r;
}

Test(list, read_numbered_prefixes_line_numbers)
{
	put("n.txt", "one\ntwo\nthree");
	json_object *r = read_ok("{\"path\":\"n.txt\",\"numbered\":true}");
	cr_assert_str_eq(jstr(r, "content"), "     1\tone\n     2\ttwo\n     3\tthree");
	cr_assert_eq(jint(r, "lines"), 3);
	cr_assert_not(jbool(r, "truncated"));
	json_object_put(r);
	r = read_ok("{\"path\":\"n.txt\",\"numbered\":true,\"offset\":2,\"limit\":1}");
	cr_assert_str_eq(jstr(r, "content"), "     2\ttwo\n");
	cr_assert_eq(jint(r, "start_line"), 2);
	cr_assert_eq(jint(r, "lines"), 1);
	cr_assert(jbool(r, "truncated"));
	json_object_put(r);
	/* Absent or false: the old behaviour. */
	r = read_ok("{\"path\":\"n.txt\"}");
	cr_assert_str_eq(jstr(r, "content"), "one\ntwo\nthree");
	json_object_put(r);
	r = read_ok("{\"path\":\"n.txt\",\"numbered\":false}");
	cr_assert_str_eq(jstr(r, "content"), "one\ntwo\nthree");
	json_object_put(r);
}

Test(list, read_numbered_max_bytes_counts_the_numbers)
{
	put("n.txt", "one\ntwo\nthree\n");
	/* "     1\tone\n" is 11 bytes: 21 holds one line, 22 two. */
	json_object *r = read_ok("{\"path\":\"n.txt\",\"numbered\":true,\"max_bytes\":21}");
	cr_assert_str_eq(jstr(r, "content"), "     1\tone\n");
	cr_assert_eq(jint(r, "lines"), 1);
	cr_assert(jbool(r, "truncated"));
	json_object_put(r);
	r = read_ok("{\"path\":\"n.txt\",\"numbered\":true,\"max_bytes\":22}");
	cr_assert_str_eq(jstr(r, "content"), "     1\tone\n     2\ttwo\n");
	cr_assert_eq(jint(r, "lines"), 2);
	json_object_put(r);
	/* Even the first line does not fit: its start, at a character boundary. */
	put("e.txt", "\xc3\xa9\xc3\xa9\xc3\xa9\n");
	r = read_ok("{\"path\":\"e.txt\",\"numbered\":true,\"max_bytes\":10}");
	cr_assert_str_eq(jstr(r, "content"), "     1\t\xc3\xa9");
	cr_assert_eq(jint(r, "lines"), 1);
	cr_assert(jbool(r, "truncated"));
	json_object_put(r);
	/* Wide numbers grow past 6 columns. */
	char *big = malloc(1000001 * 2 + 1);
	for (int i = 0; i < 1000001; i++)
		memcpy(big + 2 * i, "x\n", 2);
	big[2 * 1000001] = '\0';
	put("big.txt", big);
	free(big);
	r = read_ok("{\"path\":\"big.txt\",\"numbered\":true,\"offset\":999999,\"limit\":3}");
	cr_assert_str_eq(jstr(r, "content"), "999999\tx\n1000000\tx\n1000001\tx\n");
	json_object_put(r);
	/* Empty file: nothing to number. */
	r = read_ok("{\"path\":\"a.txt\",\"numbered\":true}");
	cr_assert_str_eq(jstr(r, "content"), "");
	cr_assert_eq(jint(r, "lines"), 0);
	json_object_put(r);
}

Test(list, round_trip_of_list_and_numbered_read_through_the_helper)
{
	struct harness h;
	harness_start(&h);
	char p[PATH_MAX + 32];
	snprintf(p, sizeof p, "%s/docs", h.workspace);
	cr_assert_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof p, "%s/docs/r.md", h.workspace);
	FILE *f = fopen(p, "w");
	fputs("# title\nbody\n", f);
	fclose(f);
	json_object *r =
	    harness_call(&h, 1, 10000, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"file.list\",\"params\":{}}");
	cr_assert_not_null(r);
	cr_assert_str_eq(jstr(r, "path"), h.workspace);
	cr_assert_eq(jint(r, "count"), 2);
	cr_assert_not(jbool(r, "truncated"));
	json_object *entries;
	cr_assert(json_object_object_get_ex(r, "entries", &entries));
	cr_assert_str_eq(jstr(json_object_array_get_idx(entries, 0), "path"), "docs");
	cr_assert_str_eq(jstr(json_object_array_get_idx(entries, 0), "type"), "dir");
	cr_assert_str_eq(jstr(json_object_array_get_idx(entries, 1), "path"), "docs/r.md");
	cr_assert_eq(jint(json_object_array_get_idx(entries, 1), "size"), 13);
	json_object_put(r);
	r = harness_call(&h, 2, 10000,
	                 "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"file.read\",\"params\":{"
	                 "\"path\":\"docs/r.md\",\"numbered\":true}}");
	cr_assert_not_null(r);
	cr_assert_str_eq(jstr(r, "content"), "     1\t# title\n     2\tbody\n");
	json_object_put(r);
	harness_send(&h, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"file.list\",\"params\":{\"path\":\"nowhere\"}}");
	json_object *rep = harness_wait(&h, 3, 10000);
	json_object *e, *d;
	cr_assert(json_object_object_get_ex(rep, "error", &e));
	cr_assert(json_object_object_get_ex(e, "data", &d));
	cr_assert_str_eq(jstr(d, "code"), "NOT_FOUND");
	json_object_put(rep);
	int st = harness_stop(&h);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "helper loop ended with status 0x%x", st);
}
