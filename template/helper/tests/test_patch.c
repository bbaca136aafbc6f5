/* test_patch.c: file.apply_patch (patch.c): V4A add / update (several
 * hunks, @@ anchors, End of File) / delete / move, CRLF files, missing final
 * newlines, the whitespace tolerance and its limit, all-or-nothing across
 * files, malformed patches, git-style unified diffs, and one round trip
 * through the helper process. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../paths.h"
#include "../patch.h"
#include "../proto.h"
#include "harness.h"

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof dir, "/tmp/chat2sbx-patch-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	paths_configure(dir, NULL);
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(patch, .init = setup, .fini = teardown);

static char *path_of(const char *name)
{
	static char p[256];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	return p;
}

static void put(const char *name, const char *data)
{
	FILE *f = fopen(path_of(name), "wb");
	cr_assert_not_null(f, "%s", name);
	cr_assert_eq(fwrite(data, 1, strlen(data), f), strlen(data));
	fclose(f);
}

static const char *get(const char *name)
{
	static char buf[65536];
	FILE *f = fopen(path_of(name), "rb");
	cr_assert_not_null(f, "%s is missing", name);
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static bool exists(const char *name)
{
	return access(path_of(name), F_OK) == 0;
}

static int apply(const char *patch, json_object **ret, struct rpc_error *err)
{
	json_object *p = json_object_new_object();
	json_object_object_add(p, "patch", json_object_new_string(patch));
	*ret = NULL;
	err->message[0] = '\0';
	int r = patch_rpc(NULL, p, ret, err);
	json_object_put(p);
	return r;
}

/* Apply and expect success; the reply is freed. */
static void ok(const char *patch)
{
	json_object *r;
	struct rpc_error err;
	cr_assert_eq(apply(patch, &r, &err), 0, "%s", err.message);
	json_object_put(r);
}

static void fails(const char *patch, const char *code, const char *part)
{
	json_object *r;
	struct rpc_error err;
	cr_assert_eq(apply(patch, &r, &err), -1, "the patch applied");
	cr_assert_str_eq(err.data_code, code, "%s", err.message);
	cr_assert(strstr(err.message, part), "'%s' not in: %s", part, err.message);
	cr_assert(strstr(err.message, "nothing was changed"), "%s", err.message);
}

Test(patch, add_file)
{
	json_object *r;
	struct rpc_error err;
	cr_assert_eq(
	    apply("*** Begin Patch\n*** Add File: sub/new.txt\n+line one\n+line two\n*** End Patch\n", &r, &err), 0,
	    "%s", err.message);
	cr_assert_str_eq(get("sub/new.txt"), "line one\nline two\n");
	json_object *files = json_object_object_get(r, "files");
	cr_assert_eq(json_object_array_length(files), 1);
	json_object *f = json_object_array_get_idx(files, 0);
	cr_assert_str_eq(jstr(f, "path"), path_of("sub/new.txt"));
	cr_assert_str_eq(jstr(f, "action"), "add");
	cr_assert(strstr(jstr(r, "summary"), "A sub/new.txt"), "%s", jstr(r, "summary"));
	json_object_put(r);
	/* Adding an existing file is a conflict. */
	fails("*** Begin Patch\n*** Add File: sub/new.txt\n+x\n*** End Patch", "CONFLICT", "already exists");
	cr_assert_str_eq(get("sub/new.txt"), "line one\nline two\n");
}

Test(patch, update_with_several_hunks)
{
	put("a.py", "def f():\n    a = 1\n    return a\n\n\ndef g():\n    b = 2\n    return b\n");
	ok("*** Begin Patch\n"
	   "*** Update File: a.py\n"
	   "@@\n"
	   " def f():\n"
	   "-    a = 1\n"
	   "+    a = 10\n"
	   "     return a\n"
	   "@@\n"
	   " def g():\n"
	   "-    b = 2\n"
	   "+    b = 20\n"
	   "+    b += 1\n"
	   "     return b\n"
	   "*** End Patch");
	cr_assert_str_eq(get("a.py"),
	                 "def f():\n    a = 10\n    return a\n\n\ndef g():\n    b = 20\n    b += 1\n    return b\n");
}

Test(patch, update_with_an_anchor)
{
	put("a.py",
	    "class A:\n    def run(self):\n        return 1\n\nclass B:\n    def run(self):\n        return 1\n");
	ok("*** Begin Patch\n"
	   "*** Update File: a.py\n"
	   "@@ class B:\n"
	   "     def run(self):\n"
	   "-        return 1\n"
	   "+        return 2\n"
	   "*** End Patch\n");
	cr_assert_str_eq(
	    get("a.py"),
	    "class A:\n    def run(self):\n        return 1\n\nclass B:\n    def run(self):\n        return 2\n");
	/* An anchor that is only part of a line. */
	ok("*** Begin Patch\n"
	   "*** Update File: a.py\n"
	   "@@ class A\n"
	   "     def run(self):\n"
	   "-        return 1\n"
	   "+        return 3\n"
	   "*** End Patch\n");
	cr_assert_str_eq(
	    get("a.py"),
	    "class A:\n    def run(self):\n        return 3\n\nclass B:\n    def run(self):\n        return 2\n");
	fails("*** Begin Patch\n*** Update File: a.py\n@@ class C:\n-x\n+y\n*** End Patch", "CONFLICT",
	      "@@ line 'class C:'");
}

Test(patch, end_of_file_marker_and_pure_additions)
{
	put("a.txt", "x\nend\nx\nend\n");
	ok("*** Begin Patch\n*** Update File: a.txt\n@@\n x\n-end\n+END\n*** End of File\n*** End Patch");
	cr_assert_str_eq(get("a.txt"), "x\nend\nx\nEND\n");
	ok("*** Begin Patch\n*** Update File: a.txt\n@@\n+appended\n*** End Patch");
	cr_assert_str_eq(get("a.txt"), "x\nend\nx\nEND\nappended\n");
}

Test(patch, delete_file)
{
	put("gone.txt", "bye\n");
	json_object *r;
	struct rpc_error err;
	cr_assert_eq(apply("*** Begin Patch\n*** Delete File: gone.txt\n*** End Patch", &r, &err), 0, "%s",
	             err.message);
	cr_assert(!exists("gone.txt"));
	cr_assert_str_eq(jstr(json_object_array_get_idx(json_object_object_get(r, "files"), 0), "action"), "delete");
	json_object_put(r);
	fails("*** Begin Patch\n*** Delete File: gone.txt\n*** End Patch", "NOT_FOUND", "does not exist");
	fails("*** Begin Patch\n*** Update File: gone.txt\n@@\n-a\n+b\n*** End Patch", "NOT_FOUND", "does not exist");
}

Test(patch, move_with_update)
{
	put("old.sh", "#!/bin/sh\necho old\n");
	cr_assert_eq(chmod(path_of("old.sh"), 0755), 0);
	json_object *r;
	struct rpc_error err;
	cr_assert_eq(apply("*** Begin Patch\n*** Update File: old.sh\n*** Move to: bin/new.sh\n@@\n-echo old\n+echo "
	                   "new\n*** End Patch",
	                   &r, &err),
	             0, "%s", err.message);
	cr_assert(!exists("old.sh"));
	cr_assert_str_eq(get("bin/new.sh"), "#!/bin/sh\necho new\n");
	struct stat st;
	cr_assert_eq(stat(path_of("bin/new.sh"), &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0755);
	json_object *f = json_object_array_get_idx(json_object_object_get(r, "files"), 0);
	cr_assert_str_eq(jstr(f, "action"), "move");
	cr_assert_str_eq(jstr(f, "path"), path_of("old.sh"));
	cr_assert_str_eq(jstr(f, "to"), path_of("bin/new.sh"));
	json_object_put(r);
}

Test(patch, crlf_file_stays_crlf)
{
	put("w.txt", "one\r\ntwo\r\nthree\r\n");
	ok("*** Begin Patch\n*** Update File: w.txt\n@@\n one\n-two\n+TWO\n+two and a half\n three\n*** End Patch");
	cr_assert_str_eq(get("w.txt"), "one\r\nTWO\r\ntwo and a half\r\nthree\r\n");
}

Test(patch, missing_final_newline_stays_missing)
{
	put("a.txt", "one\ntwo");
	ok("*** Begin Patch\n*** Update File: a.txt\n@@\n one\n-two\n+TWO\n*** End Patch");
	cr_assert_str_eq(get("a.txt"), "one\nTWO");
	/* Lines appended at the end end with a newline (issue 18). */
	ok("*** Begin Patch\n*** Update File: a.txt\n@@\n TWO\n+three\n*** End Patch");
	cr_assert_str_eq(get("a.txt"), "one\nTWO\nthree\n");
}

/* Issue 18: hello\nworld (no final newline) + a patch adding tail after world. */
Test(patch, appended_lines_end_with_a_newline_untouched_ends_keep_their_state)
{
	put("a.txt", "hello\nworld");
	ok("*** Begin Patch\n*** Update File: a.txt\n@@\n world\n+tail\n*** End Patch");
	cr_assert_str_eq(get("a.txt"), "hello\nworld\ntail\n");
	/* A change away from the end keeps the missing newline. */
	put("b.txt", "hello\nworld");
	ok("*** Begin Patch\n*** Update File: b.txt\n@@\n-hello\n+HELLO\n world\n*** End Patch");
	cr_assert_str_eq(get("b.txt"), "HELLO\nworld");
	put("c.txt", "a\nb\nc\nd");
	ok("*** Begin Patch\n*** Update File: c.txt\n@@\n a\n-b\n+B\n c\n*** End Patch");
	cr_assert_str_eq(get("c.txt"), "a\nB\nc\nd");
	/* Deleting the last line: the line left last keeps its newline. */
	put("d.txt", "hello\nworld");
	ok("*** Begin Patch\n*** Update File: d.txt\n@@\n hello\n-world\n*** End Patch");
	cr_assert_str_eq(get("d.txt"), "hello\n");
	/* Unified, the same append. */
	put("e.txt", "hello\nworld");
	ok("--- a/e.txt\n+++ b/e.txt\n@@ -1,2 +1,3 @@\n hello\n-world\n\\ No newline at end of file\n+world\n+tail\n");
	cr_assert_str_eq(get("e.txt"), "hello\nworld\ntail\n");
	/* Unified markers are exact: the new side without a final newline. */
	put("f.txt", "hello\nworld\n");
	ok("--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,3 @@\n hello\n world\n+tail\n\\ No newline at end of file\n");
	cr_assert_str_eq(get("f.txt"), "hello\nworld\ntail");
	put("g.txt", "x\ny");
	ok("--- a/g.txt\n+++ b/g.txt\n@@ -1,2 +1,2 @@\n x\n-y\n\\ No newline at end of file\n+Y\n\\ No newline at end "
	   "of file\n");
	cr_assert_str_eq(get("g.txt"), "x\nY");
}

Test(patch, trailing_whitespace_tolerated_but_no_more)
{
	put("a.txt", "a\nx  \nb\n");
	ok("*** Begin Patch\n*** Update File: a.txt\n@@\n a\n x\n-b\n+B\n*** End Patch");
	cr_assert_str_eq(get("a.txt"), "a\nx  \nB\n");
	/* Leading and trailing whitespace. */
	put("c.txt", "if x:\n\treturn 1\n");
	ok("*** Begin Patch\n*** Update File: c.txt\n@@\n if x:\n-    return 1\n+\treturn 2\n*** End Patch");
	cr_assert_str_eq(get("c.txt"), "if x:\n\treturn 2\n");
	/* A line differing in the middle does not match. */
	put("d.txt", "foo  bar\nz\n");
	fails("*** Begin Patch\n*** Update File: d.txt\n@@\n-foo bar\n+baz\n*** End Patch", "CONFLICT",
	      "could not find the lines starting with 'foo bar'");
	cr_assert_str_eq(get("d.txt"), "foo  bar\nz\n");
}

Test(patch, failing_hunk_in_second_file_changes_nothing)
{
	put("one.txt", "1\n2\n3\n");
	put("two.txt", "a\nb\nc\nd\n");
	fails("*** Begin Patch\n"
	      "*** Update File: one.txt\n@@\n 1\n-2\n+TWO\n"
	      "*** Add File: three.txt\n+new\n"
	      "*** Update File: two.txt\n@@\n a\n-b\n+B\n@@\n c\n-x\n+X\n"
	      "*** End Patch",
	      "CONFLICT", "'two.txt' hunk 2 of 2 does not apply");
	cr_assert_str_eq(get("one.txt"), "1\n2\n3\n");
	cr_assert_str_eq(get("two.txt"), "a\nb\nc\nd\n");
	cr_assert(!exists("three.txt"));
	/* The message shows where the closest match stopped. */
	json_object *r;
	struct rpc_error err;
	cr_assert_eq(apply("*** Begin Patch\n*** Update File: two.txt\n@@\n a\n b\n-z\n+Z\n*** End Patch", &r, &err),
	             -1);
	cr_assert(strstr(err.message, "closest match starts at line 1, but line 3 is 'c' where the patch expects 'z'"),
	          "%s", err.message);
}

Test(patch, malformed_patches_are_invalid)
{
	put("a.txt", "a\n");
	fails("just some text\n", "INVALID_ARGUMENT", "not a patch");
	fails("*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n", "INVALID_ARGUMENT", "*** End Patch");
	fails("*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\ngarbage here\n*** End Patch", "INVALID_ARGUMENT",
	      "garbage here");
	fails("*** Begin Patch\n*** Frobnicate File: a.txt\n*** End Patch", "INVALID_ARGUMENT", "line 2");
	fails("*** Begin Patch\n*** Update File: a.txt\n*** End Patch", "INVALID_ARGUMENT", "no hunks");
	cr_assert_str_eq(get("a.txt"), "a\n");
}

Test(patch, several_sections_on_one_file_see_each_other)
{
	put("a.txt", "1\n2\n");
	ok("*** Begin Patch\n*** Update File: a.txt\n@@\n-1\n+one\n*** Update File: a.txt\n@@\n one\n-2\n+two\n*** End "
	   "Patch");
	cr_assert_str_eq(get("a.txt"), "one\ntwo\n");
}

Test(patch, git_diff_add_update_delete)
{
	cr_assert_eq(mkdir(path_of("src"), 0755), 0);
	put("src/main.c", "int main(void)\n{\n\treturn 0;\n}\n");
	put("old.txt", "bye\n");
	json_object *r;
	struct rpc_error err;
	cr_assert_eq(apply("diff --git a/src/main.c b/src/main.c\n"
	                   "index 1111111..2222222 100644\n"
	                   "--- a/src/main.c\n"
	                   "+++ b/src/main.c\n"
	                   "@@ -1,4 +1,5 @@\n"
	                   " int main(void)\n"
	                   " {\n"
	                   "+\tputs(\"hi\");\n"
	                   " \treturn 0;\n"
	                   " }\n"
	                   "diff --git a/new.txt b/new.txt\n"
	                   "new file mode 100644\n"
	                   "index 0000000..3333333\n"
	                   "--- /dev/null\n"
	                   "+++ b/new.txt\n"
	                   "@@ -0,0 +1,2 @@\n"
	                   "+first\n"
	                   "+second\n"
	                   "diff --git a/old.txt b/old.txt\n"
	                   "deleted file mode 100644\n"
	                   "index 4444444..0000000\n"
	                   "--- a/old.txt\n"
	                   "+++ /dev/null\n"
	                   "@@ -1 +0,0 @@\n"
	                   "-bye\n",
	                   &r, &err),
	             0, "%s", err.message);
	cr_assert_str_eq(get("src/main.c"), "int main(void)\n{\n\tputs(\"hi\");\n\treturn 0;\n}\n");
	cr_assert_str_eq(get("new.txt"), "first\nsecond\n");
	cr_assert(!exists("old.txt"));
	json_object *files = json_object_object_get(r, "files");
	cr_assert_eq(json_object_array_length(files), 3);
	cr_assert_str_eq(jstr(json_object_array_get_idx(files, 0), "action"), "update");
	cr_assert_str_eq(jstr(json_object_array_get_idx(files, 1), "action"), "add");
	cr_assert_str_eq(jstr(json_object_array_get_idx(files, 2), "action"), "delete");
	json_object_put(r);
}

Test(patch, unified_line_numbers_are_a_hint)
{
	put("a.txt", "x\ny\nx\ny\nx\ny\n");
	/* The hunk's context matches three places; the header points at the second. */
	ok("--- a/a.txt\n+++ b/a.txt\n@@ -3,2 +3,2 @@\n x\n-y\n+Y\n");
	cr_assert_str_eq(get("a.txt"), "x\ny\nx\nY\nx\ny\n");
	/* Wrong line numbers still apply by context. */
	ok("--- a/a.txt\n+++ b/a.txt\n@@ -40,2 +40,2 @@\n x\n-y\n+Z\n");
	cr_assert_str_eq(get("a.txt"), "x\ny\nx\nY\nx\nZ\n");
}

Test(patch, unified_no_newline_markers)
{
	put("a.txt", "one\ntwo");
	ok("--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,3 @@\n one\n-two\n\\ No newline at end of file\n+two\n+three\n");
	cr_assert_str_eq(get("a.txt"), "one\ntwo\nthree\n");
	ok("--- a/a.txt\n+++ b/a.txt\n@@ -2,2 +2,2 @@\n two\n-three\n+THREE\n\\ No newline at end of file\n");
	cr_assert_str_eq(get("a.txt"), "one\ntwo\nTHREE");
}

Test(patch, round_trip_through_the_helper)
{
	struct harness h;
	harness_start(&h);
	char p[PATH_MAX + 16];
	snprintf(p, sizeof p, "%s/r.txt", h.workspace);
	FILE *f = fopen(p, "w");
	fputs("alpha\nbeta\n", f);
	fclose(f);
	json_object *r = harness_call(&h, 1, 5000,
	                              "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"file.apply_patch\",\"params\":{"
	                              "\"patch\":\"*** Begin Patch\\n*** Update File: r.txt\\n@@\\n alpha\\n-beta\\n+"
	                              "gamma\\n*** Add File: n/new.txt\\n+hi\\n*** End Patch\\n\"}}");
	cr_assert_not_null(r);
	json_object *files = json_object_object_get(r, "files");
	cr_assert_eq(json_object_array_length(files), 2);
	cr_assert_str_eq(jstr(json_object_array_get_idx(files, 0), "path"), p);
	json_object_put(r);
	f = fopen(p, "r");
	char buf[64] = {0};
	cr_assert_eq(fread(buf, 1, sizeof buf - 1, f), 12);
	fclose(f);
	cr_assert_str_eq(buf, "alpha\ngamma\n");
	harness_send(&h, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"file.apply_patch\",\"params\":{"
	                 "\"patch\":\"*** Begin Patch\\n*** Delete File: nope.txt\\n*** End Patch\"}}");
	json_object *rep = harness_wait(&h, 2, 5000), *e, *d;
	cr_assert(json_object_object_get_ex(rep, "error", &e));
	cr_assert(json_object_object_get_ex(e, "data", &d));
	cr_assert_str_eq(jstr(d, "code"), "NOT_FOUND");
	json_object_put(rep);
	int st = harness_stop(&h);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

Test(patch, git_rename_move_onto_existing_and_cwd)
{
	put("a.txt", "same\n");
	ok("diff --git a/a.txt b/b.txt\nsimilarity index 100%\nrename from a.txt\nrename to b.txt\n");
	cr_assert(!exists("a.txt"));
	cr_assert_str_eq(get("b.txt"), "same\n");
	put("c.txt", "other\n");
	fails("*** Begin Patch\n*** Update File: b.txt\n*** Move to: c.txt\n@@\n-same\n+new\n*** End Patch", "CONFLICT",
	      "already exists");
	cr_assert_str_eq(get("b.txt"), "same\n");
	cr_assert_str_eq(get("c.txt"), "other\n");
	/* cwd: relative paths resolve against it. */
	cr_assert_eq(mkdir(path_of("sub"), 0755), 0);
	put("sub/x.txt", "1\n");
	json_object *p = json_tokener_parse("{\"cwd\":\"sub\",\"patch\":\"*** Begin Patch\\n*** Update File: "
	                                    "x.txt\\n@@\\n-1\\n+2\\n*** End Patch\"}");
	json_object *r = NULL;
	struct rpc_error err;
	cr_assert_eq(patch_rpc(NULL, p, &r, &err), 0, "%s", err.message);
	json_object_put(p);
	json_object_put(r);
	cr_assert_str_eq(get("sub/x.txt"), "2\n");
}

Test(patch, nested_anchors_and_addition_after_an_anchor)
{
	put("a.py", "class A:\n    def f(self):\n        pass\nclass B:\n    def f(self):\n        pass\n");
	ok("*** Begin Patch\n*** Update File: a.py\n@@ class B:\n@@     def f(self):\n-        pass\n+        return "
	   "2\n*** End Patch");
	cr_assert_str_eq(get("a.py"),
	                 "class A:\n    def f(self):\n        pass\nclass B:\n    def f(self):\n        return 2\n");
	ok("*** Begin Patch\n*** Update File: a.py\n@@ class A:\n+    x = 1\n*** End Patch");
	cr_assert_str_eq(get("a.py"), "class A:\n    x = 1\n    def f(self):\n        pass\nclass B:\n    def "
	                              "f(self):\n        return 2\n");
}

/* expected_sha256 maps paths to the hashes the model read: a file that moved
 * on refuses the whole patch, changing nothing. */
Test(patch, expected_hashes_guard_every_file)
{
	put("one.txt", "1\n");
	put("two.txt", "2\n");
	const char *sha_one = "4355a46b19d348dc2f57c046f8ef63d4538ebb936000f3c9ee954a27460dd865"; /* "1\n" */
	const char *patch = "*** Begin Patch\n*** Update File: one.txt\n-1\n+one\n*** Update File: two.txt\n-2\n+two\n"
	                    "*** End Patch";
	json_object *p = json_object_new_object();
	json_object_object_add(p, "patch", json_object_new_string(patch));
	json_object *exp = json_object_new_object();
	json_object_object_add(exp, "one.txt", json_object_new_string(sha_one));
	json_object_object_add(exp, "two.txt", json_object_new_string(sha_one)); /* wrong: two.txt holds "2\n" */
	json_object_object_add(p, "expected_sha256", exp);
	json_object *r = NULL;
	struct rpc_error err;
	err.message[0] = '\0';
	cr_assert_eq(patch_rpc(NULL, p, &r, &err), -1);
	cr_assert_str_eq(err.data_code, "CONFLICT");
	cr_assert(strstr(err.message, "'two.txt' changed since it was read"), "%s", err.message);
	cr_assert_str_eq(get("one.txt"), "1\n");
	cr_assert_str_eq(get("two.txt"), "2\n");
	/* With the right hashes it applies. */
	json_object_object_add(
	    exp, "two.txt", json_object_new_string("53c234e5e8472b6ac51c1ae1cab3fe06fad053beb8ebfd8977b010655bfdd3c3"));
	cr_assert_eq(patch_rpc(NULL, p, &r, &err), 0, "%s", err.message);
	json_object_put(r);
	json_object_put(p);
	cr_assert_str_eq(get("one.txt"), "one\n");
	cr_assert_str_eq(get("two.txt"), "two\n");
}

/* A patch the helper would spend its whole deadline on (60 000 files once
 * took it past the call's deadline while it answered nothing else): more
 * files than PROTO_PATCH_FILES_MAX, or more text than PROTO_PATCH_TEXT_MAX,
 * is refused before any file is touched. */
Test(patch, too_many_files_or_bytes_are_refused_before_anything_is_written)
{
	size_t n = PROTO_PATCH_FILES_MAX + 1, cap = 64 + n * 48, len = 0;
	char *text = malloc(cap);
	cr_assert_not_null(text);
	len += (size_t)snprintf(text + len, cap - len, "*** Begin Patch\n");
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(text + len, cap - len, "*** Add File: f%zu.txt\n+x\n", i);
	snprintf(text + len, cap - len, "*** End Patch\n");
	fails(text, "LIMIT", "touches 1001 files; at most 1000");
	cr_assert_not(exists("f0.txt"), "nothing was written");
	free(text);

	/* Exactly the bound applies. */
	len = 0;
	text = malloc(cap);
	len += (size_t)snprintf(text + len, cap - len, "*** Begin Patch\n");
	for (size_t i = 0; i < PROTO_PATCH_FILES_MAX; i++)
		len += (size_t)snprintf(text + len, cap - len, "*** Add File: f%zu.txt\n+x\n", i);
	snprintf(text + len, cap - len, "*** End Patch\n");
	ok(text);
	cr_assert(exists("f999.txt"));
	free(text);

	size_t big = PROTO_PATCH_TEXT_MAX + 1;
	text = malloc(big + 1);
	cr_assert_not_null(text);
	memset(text, 'x', big);
	memcpy(text, "*** Begin Patch\n*** Add File: big.txt\n+", 39);
	text[big] = '\0';
	fails(text, "LIMIT", "at most 8388608 bytes per apply_patch call");
	cr_assert_not(exists("big.txt"));
	free(text);
}
