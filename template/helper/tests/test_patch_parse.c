/* test_patch_parse.c: the parsers of file.apply_patch (patch_parse.c) on
 * text alone, with no file system: V4A operations, anchors and End of File;
 * unified and git diffs with their hints, renames, /dev/null and "\ No
 * newline"; and the errors for text that is not a patch or is malformed
 * (naming the line). */
#include <criterion/criterion.h>
#include <string.h>

#include "../patch_internal.h"

static int parse(const char *text, struct patch *P, struct rpc_error *err)
{
	memset(P, 0, sizeof *P);
	memset(err, 0, sizeof *err);
	return patch_parse(text, strlen(text), P, err);
}

static bool line_is(struct line l, const char *s)
{
	return l.n == strlen(s) && memcmp(l.p, s, l.n) == 0;
}

Test(patch_parse, v4a_every_operation)
{
	const char *text = "*** Begin Patch\n"
	                   "*** Add File: new.txt\n"
	                   "+hello\n"
	                   "+world\n"
	                   "*** Update File: src/a.c\n"
	                   "*** Move to: src/b.c\n"
	                   "@@ int main(void)\n"
	                   " keep\n"
	                   "-old\n"
	                   "+new\n"
	                   "*** End of File\n"
	                   "*** Delete File: gone.txt\n"
	                   "*** End Patch\n";
	struct patch P;
	struct rpc_error err;
	cr_assert_eq(parse(text, &P, &err), 0, "%s", err.message);
	cr_assert_eq(P.n, 3);
	cr_assert_eq(P.ops[0].kind, OP_ADD);
	cr_assert_str_eq(P.ops[0].path, "new.txt");
	cr_assert_eq(P.ops[1].kind, OP_UPDATE);
	cr_assert_str_eq(P.ops[1].path, "src/a.c");
	cr_assert_str_eq(P.ops[1].to, "src/b.c");
	cr_assert_eq(P.ops[1].nhunks, 1);
	const struct hunk *h = &P.ops[1].hunks[0];
	cr_assert_eq(h->anchors.n, 1);
	cr_assert(line_is(h->anchors.v[0], "int main(void)"));
	cr_assert_eq(h->old.n, 2);
	cr_assert(line_is(h->old.v[0], "keep") && line_is(h->old.v[1], "old"));
	cr_assert_eq(h->new.n, 2);
	cr_assert(line_is(h->new.v[0], "keep") && line_is(h->new.v[1], "new"));
	cr_assert(h->eof);
	cr_assert_eq(h->hint, -1);
	cr_assert_eq(P.ops[2].kind, OP_DELETE);
	cr_assert_str_eq(P.ops[2].path, "gone.txt");
	patch_free(&P);
}

Test(patch_parse, unified_and_git_diffs)
{
	const char *text = "diff --git a/x.txt b/y.txt\n"
	                   "similarity index 90%\n"
	                   "rename from x.txt\n"
	                   "rename to y.txt\n"
	                   "--- a/x.txt\n"
	                   "+++ b/y.txt\n"
	                   "@@ -3,2 +3,2 @@\n"
	                   " same\n"
	                   "-before\n"
	                   "+after\n"
	                   "\\ No newline at end of file\n"
	                   "--- /dev/null\n"
	                   "+++ b/added.txt\n"
	                   "@@ -0,0 +1 @@\n"
	                   "+fresh\n";
	struct patch P;
	struct rpc_error err;
	cr_assert_eq(parse(text, &P, &err), 0, "%s", err.message);
	cr_assert_eq(P.n, 2);
	cr_assert_eq(P.ops[0].kind, OP_UPDATE);
	cr_assert_str_eq(P.ops[0].path, "x.txt");
	cr_assert_str_eq(P.ops[0].to, "y.txt");
	cr_assert_eq(P.ops[0].nhunks, 1);
	const struct hunk *h = &P.ops[0].hunks[0];
	cr_assert_eq(h->hint, 2, "the old start is a 0-based hint");
	cr_assert_eq(h->old.n, 2);
	cr_assert(line_is(h->old.v[1], "before"));
	cr_assert(line_is(h->new.v[1], "after"));
	cr_assert(h->new_no_nl && !h->old_no_nl);
	cr_assert_eq(P.ops[1].kind, OP_ADD);
	cr_assert_str_eq(P.ops[1].path, "added.txt");
	patch_free(&P);
}

Test(patch_parse, crlf_patch_text_is_read_as_lf)
{
	struct patch P;
	struct rpc_error err;
	cr_assert_eq(parse("*** Begin Patch\r\n*** Add File: a\r\n+x\r\n*** End Patch\r\n", &P, &err), 0, "%s",
	             err.message);
	cr_assert_eq(P.n, 1);
	cr_assert_str_eq(P.ops[0].path, "a");
	patch_free(&P);
}

Test(patch_parse, refusals_name_what_is_wrong)
{
	struct patch P;
	struct rpc_error err;
	cr_assert_lt(parse("just some text\n", &P, &err), 0);
	cr_assert_str_eq(err.data_code, "INVALID_ARGUMENT");
	cr_assert(strstr(err.message, "not a patch"), "%s", err.message);
	cr_assert_eq(P.n, 0);

	cr_assert_lt(parse("*** Begin Patch\n*** End Patch\n", &P, &err), 0);
	cr_assert(strstr(err.message, "changes no file"), "%s", err.message);

	cr_assert_lt(parse("*** Begin Patch\n*** Update File: a\n@@\n?odd\n*** End Patch\n", &P, &err), 0);
	cr_assert(strstr(err.message, "line 4"), "the malformed line is named: %s", err.message);
	cr_assert(strstr(err.message, "nothing was changed"), "%s", err.message);
	cr_assert_eq(P.n, 0);
}

/* Found by fuzz_patch_parse: a name holding a NUL was cut there, so the patch
 * named another file than it wrote; an empty name named none. */
Test(patch_parse, a_name_with_a_nul_or_nothing_is_refused)
{
	static const char unified[] = "--- a/x\n+++ b/x\0y\n@@ -1 +1 @@\n-a\n+b\n";
	static const char v4a[] = "*** Begin Patch\n*** Update File: a\0b\n-x\n+y\n*** End Patch";
	static const char moved[] = "*** Begin Patch\n*** Update File: a\n*** Move to: c\0d\n-x\n+y\n*** End Patch";
	static const char empty[] = "--- /dev/null\n+++ \"\"\n@@ -0,0 +1 @@\n+x\n";
	const struct {
		const char *text;
		size_t len;
	} cases[] = {
	    {unified, sizeof unified - 1}, {v4a, sizeof v4a - 1}, {moved, sizeof moved - 1}, {empty, sizeof empty - 1}};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct patch P = {0};
		struct rpc_error err = {0};
		cr_assert_eq(patch_parse(cases[i].text, cases[i].len, &P, &err), -1, "case %zu parsed", i);
		cr_assert_str_eq(err.data_code, "INVALID_ARGUMENT");
		cr_assert(strstr(err.message, "malformed patch"), "case %zu: %s", i, err.message);
	}
}
