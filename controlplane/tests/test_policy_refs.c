/* test_policy_refs.c: the ref names an export may carry (policy/refs.c):
 * git-check-ref-format's rules one by one, the namespaces allowed, hostile
 * bytes shown safely, and where each kind of ref lands in the host
 * repository, reserved names included. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "policy/policy.h"

static int check(const char *name, enum policy_ref_kind *kind, char *msg, size_t size)
{
	struct cp_error *err = NULL;
	int r = policy_ref_name_check(name, strlen(name), kind, &err);
	if (r < 0) {
		cr_assert_eq(err->code, CP_ERR_DENIED);
		snprintf(msg, size, "%s", err->message);
		cp_error_free(err);
	}
	return r;
}

Test(policy_refs, accepted_names_and_their_kinds)
{
	struct {
		const char *name;
		enum policy_ref_kind kind;
	} ok[] = {
	    {"HEAD", POLICY_REF_HEAD},
	    {"refs/heads/main", POLICY_REF_BRANCH},
	    {"refs/heads/feature/x-1.2", POLICY_REF_BRANCH},
	    {"refs/heads/caf\xc3\xa9", POLICY_REF_BRANCH},
	    {"refs/tags/v1.0", POLICY_REF_TAG},
	    {"refs/chat2sbx/uncommitted", POLICY_REF_SNAPSHOT},
	};
	char msg[300];
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		enum policy_ref_kind k = -1;
		cr_assert_eq(check(ok[i].name, &k, msg, sizeof msg), 0, "%s: %s", ok[i].name, msg);
		cr_assert_eq(k, ok[i].kind, "%s", ok[i].name);
	}
}

Test(policy_refs, check_ref_format_rules_and_namespaces)
{
	struct {
		const char *name, *why;
	} bad[] = {
	    {"refs/heads/a..b", "\"..\""},
	    {"refs/heads/a\x1b[31m", "control character"},
	    {"refs/heads/a\nb", "control character"},
	    {"refs/heads/a\x7f", "control character"},
	    {"refs/heads/a b", "space"},
	    {"refs/heads/a~1", "~"},
	    {"refs/heads/a^", "^"},
	    {"refs/heads/a:b", ":"},
	    {"refs/heads/a?", "?"},
	    {"refs/heads/a*", "*"},
	    {"refs/heads/a[", "["},
	    {"refs/heads/a\\b", "\\"},
	    {"refs/heads/.hidden", "starts with '.'"},
	    {"refs/heads/x.lock", ".lock"},
	    {"refs/heads/a//b", "//"},
	    {"refs/heads/a/", "ends with '/'"},
	    {"/refs/heads/a", "starts or ends"},
	    {"refs/heads/a.", "ends with '.'"},
	    {"refs/heads/a@{1}", "@{"},
	    {"@", "\"@\""},
	    {"refs/heads/\xff\xfe", "UTF-8"},
	    {"refs/heads/\xc0\xaf", "UTF-8"},
	    {"refs/remotes/origin/main", "only HEAD"},
	    {"refs/notes/commits", "only HEAD"},
	    {"refs/chat2sbx/other", "only HEAD"},
	    {"refs/heads/", "starts or ends"},
	    {"refs/tags", "only HEAD"},
	    {"main", "only HEAD"},
	    {"../../config", "\"..\""},
	    {"", "empty"},
	};
	char msg[300];
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(check(bad[i].name, NULL, msg, sizeof msg), -1, "%s was accepted", bad[i].name);
		cr_assert(strstr(msg, bad[i].why), "%s: message '%s' lacks '%s'", bad[i].name, msg, bad[i].why);
		for (const char *p = msg; *p; p++)
			cr_assert((unsigned char)*p >= 0x20, "the message shows no raw control byte: %s", msg);
	}
	struct cp_error *err = NULL;
	cr_assert_eq(policy_ref_name_check("refs/heads/a\0b", 14, NULL, &err), -1, "a NUL inside");
	cp_error_free(err);
	char longname[1100] = "refs/heads/";
	memset(longname + 11, 'a', 1050);
	longname[1061] = '\0';
	cr_assert_eq(check(longname, NULL, msg, sizeof msg), -1);
	cr_assert(strstr(msg, "longer than 1024"));
}

Test(policy_refs, escape_shows_hostile_bytes_as_text)
{
	char out[64];
	cr_assert_str_eq(policy_text_escape("a\x1b[2Jb\"\\\n", 9, out, sizeof out), "a\\x1b[2Jb\\\"\\\\\\n");
	cr_assert_str_eq(policy_text_escape("caf\xc3\xa9\xff", 6, out, sizeof out), "caf\xc3\xa9\\xff");
	char tiny[8];
	cr_assert_str_eq(policy_text_escape("abcdefghij", 10, tiny, sizeof tiny), "abcd...");
}

Test(policy_refs, mapping_into_the_sandbox_namespace)
{
	const char *sbx = "sbx_abcdefghijklmnopqrst";
	struct {
		const char *in, *out;
	} cases[] = {
	    {"refs/heads/main", "refs/remotes/chat2sbx/sbx_abcdefghijklmnopqrst/main"},
	    {"refs/heads/feature/x", "refs/remotes/chat2sbx/sbx_abcdefghijklmnopqrst/feature/x"},
	    {"refs/heads/HEADS", "refs/remotes/chat2sbx/sbx_abcdefghijklmnopqrst/HEADS"},
	    {"refs/heads/tagsx", "refs/remotes/chat2sbx/sbx_abcdefghijklmnopqrst/tagsx"},
	    {"refs/tags/v1", "refs/remotes/chat2sbx/sbx_abcdefghijklmnopqrst/tags/v1"},
	    {"refs/chat2sbx/uncommitted", "refs/remotes/chat2sbx/sbx_abcdefghijklmnopqrst/uncommitted"},
	    {"HEAD", "refs/remotes/chat2sbx/sbx_abcdefghijklmnopqrst/HEAD"},
	};
	char buf[300];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cp_error *err = NULL;
		cr_assert_eq(policy_ref_map(cases[i].in, sbx, buf, sizeof buf, &err), 0, "%s", cases[i].in);
		cr_assert_str_eq(buf, cases[i].out);
		char msg[300];
		cr_assert_eq(check(buf, NULL, msg, sizeof msg), -1, "a mapped name is outside what an export carries");
	}
	const char *clash[] = {"refs/heads/HEAD", "refs/heads/uncommitted", "refs/heads/uncommitted/x",
	                       "refs/heads/tags", "refs/heads/tags/v1",     "refs/heads/HEAD/x"};
	for (size_t i = 0; i < sizeof(clash) / sizeof(clash[0]); i++) {
		struct cp_error *err = NULL;
		cr_assert_eq(policy_ref_map(clash[i], sbx, buf, sizeof buf, &err), -1, "%s", clash[i]);
		cr_assert_eq(err->code, CP_ERR_CONFLICT);
		cr_assert(strstr(err->message, "collide"));
		cp_error_free(err);
	}
	struct cp_error *err = NULL;
	cr_assert_eq(policy_ref_map("refs/heads/main", sbx, buf, 20, &err), -1);
	cr_assert_eq(err->code, CP_ERR_LIMIT);
	cp_error_free(err);
}

Test(policy_refs, bidi_and_invisible_characters_are_shown_escaped)
{
	char buf[200];
	/* U+202E (right-to-left override) would reorder the message around it. */
	cr_expect_str_eq(policy_text_escape("a\xe2\x80\xae"
	                                    "b",
	                                    5, buf, sizeof buf),
	                 "a\\u202eb");
	cr_expect_str_eq(policy_text_escape("z\xe2\x80\x8b", 4, buf, sizeof buf), "z\\u200b");
	cr_expect_str_eq(policy_text_escape("t\xf3\xa0\x80\x81", 5, buf, sizeof buf), "t\\U0e0001");
	cr_expect_str_eq(policy_text_escape("caf\xc3\xa9", 5, buf, sizeof buf), "caf\xc3\xa9");
	char msg[300];
	enum policy_ref_kind k;
	/* Accepted (no work is lost over a name), but never shown raw. */
	cr_expect_eq(check("refs/heads/a\xe2\x80\xae"
	                   "b",
	                   &k, msg, sizeof msg),
	             0);
}

/* The branch a clone on another node checks out comes from the host's
 * `git symbolic-ref -q HEAD`: only one line naming a valid branch counts. */
Test(policy_refs, clone_head_branch_from_symbolic_ref)
{
	static const struct {
		const char *out;
		const char *want; /* NULL: refused, buf "" */
	} rows[] = {
	    {"refs/heads/main\n", "main"},
	    {"refs/heads/feature/x\n", "feature/x"},
	    {"refs/heads/main", "main"},
	    {"", NULL},                             /* detached or unborn: nothing printed */
	    {"refs/heads/\n", NULL},                /* no name */
	    {"refs/tags/v1\n", NULL},               /* not a branch */
	    {"refs/heads/a..b\n", NULL},            /* check-ref-format */
	    {"refs/heads/-x y\n", NULL},            /* a space */
	    {"refs/heads/a\nrefs/heads/b\n", NULL}, /* two lines */
	    {"refs/heads/a\x1b[31m\n", NULL},       /* a control byte */
	    {"HEAD\n", NULL},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char buf[64] = "junk";
		int r = policy_clone_head_branch(rows[i].out, strlen(rows[i].out), buf, sizeof(buf));
		cr_expect_eq(r, rows[i].want != NULL, "row %zu '%s'", i, rows[i].out);
		cr_expect_str_eq(buf, rows[i].want ? rows[i].want : "", "row %zu", i);
	}
	char tiny[4];
	cr_expect_eq(policy_clone_head_branch("refs/heads/longer\n", 18, tiny, sizeof(tiny)), 0, "does not fit");
	cr_expect_str_eq(tiny, "");
	cr_expect_eq(policy_clone_head_branch(NULL, 0, tiny, sizeof(tiny)), 0);
}
