/* test_policy_node_path.c: a directory of another node (issue 28, item 4):
 * the shape chat2sbx passes on as written, the node's host roots, and the
 * node check's answer read strictly (another machine's bytes). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

static int shape(const char *path, enum cp_error_code want)
{
	struct cp_error *err = NULL;
	int r = policy_node_path_shape(path, "host path", &err);
	if (r < 0) {
		cr_expect_eq(err->code, want, "%s: %s", path, err->message);
		cp_error_free(err);
	}
	return r;
}

Test(policy_node_path, shape_refuses_what_cannot_be_passed_as_written)
{
	cr_expect_eq(shape("/srv/work/proj", 0), 0);
	cr_expect_eq(shape("/srv/work/proj-1.2_x y", 0), 0, "a space is a character of a path");
	cr_expect_eq(shape("srv/work", CP_ERR_INVALID_ARGUMENT), -1, "relative");
	cr_expect_eq(shape("", CP_ERR_INVALID_ARGUMENT), -1);
	cr_expect_eq(shape("/", CP_ERR_INVALID_ARGUMENT), -1, "the whole file system");
	cr_expect_eq(shape("/srv/../etc", CP_ERR_INVALID_ARGUMENT), -1, "'..' cannot be resolved here");
	cr_expect_eq(shape("/srv/./work", CP_ERR_INVALID_ARGUMENT), -1);
	cr_expect_eq(shape("/srv//work", CP_ERR_INVALID_ARGUMENT), -1);
	cr_expect_eq(shape("/srv/work/", CP_ERR_INVALID_ARGUMENT), -1, "trailing slash");
	cr_expect_eq(shape("/srv/wo:rk", CP_ERR_INVALID_ARGUMENT), -1, "a bind separator");
	cr_expect_eq(shape("/srv/wo,rk", CP_ERR_INVALID_ARGUMENT), -1);
	cr_expect_eq(shape("/srv/wo\nrk", CP_ERR_INVALID_ARGUMENT), -1, "a control character");
	cr_expect_eq(shape("/srv/w\xc3\xa9", CP_ERR_INVALID_ARGUMENT), -1, "non-ASCII");
	cr_expect_eq(shape("/home/u/.ssh/x", CP_ERR_DENIED), -1, "a credential directory");
	char *longp = malloc(POLICY_NODE_PATH_MAX + 10);
	longp[0] = '/';
	memset(longp + 1, 'a', POLICY_NODE_PATH_MAX + 5);
	longp[POLICY_NODE_PATH_MAX + 6] = '\0';
	cr_expect_eq(shape(longp, CP_ERR_INVALID_ARGUMENT), -1, "too long");
	free(longp);
}

static int check(const char *roots, const char *path, const char *mode, const char *says)
{
	struct cp_error *err = NULL;
	int r = policy_node_path_check("n1", roots, path, mode, &err);
	if (r < 0) {
		cr_expect(says && strstr(err->message, says), "%s: %s", path, err->message);
		cp_error_free(err);
	}
	return r;
}

Test(policy_node_path, only_below_the_nodes_host_roots_and_direct_only)
{
	cr_expect_eq(check("/srv/work:/data", "/srv/work/proj", "direct", NULL), 0);
	cr_expect_eq(check("/srv/work:/data", "/data/a/b", "direct", NULL), 0);
	cr_expect_eq(check("/srv/work:/data", "/srv/work", "direct", "not below a host root"), -1, "a root itself");
	cr_expect_eq(check("/srv/work:/data", "/srv/workshop/x", "direct", "not below"), -1, "whole components");
	cr_expect_eq(check("/srv/work", "/etc/x", "direct", "--host-root"), -1);
	cr_expect_eq(check(NULL, "/srv/work/proj", "direct", "without --host-root"), -1, "no roots: nothing");
	cr_expect_eq(check("", "/srv/work/proj", "direct", "without --host-root"), -1);
	cr_expect_eq(check("/srv/work", "/srv/work/proj", "clone", "only be a direct workspace"), -1);
	cr_expect_eq(check("/srv/work", "/srv/work/proj/.git", "direct", ".git directory"), -1);
	cr_expect_eq(check("/srv/work", "/srv/work/proj/.git/hooks", "direct", ".git directory"), -1);
	cr_expect_eq(check("/srv/work", "/srv/work/proj/.github", "direct", NULL), 0, "a lookalike");
	cr_expect_eq(check("/srv/work", "/srv/work/../etc", "direct", "not normalized"), -1);
}

static int answer(const char *text, struct policy_node_path_facts *f, enum cp_error_code code, const char *says)
{
	struct cp_error *err = NULL;
	int r = policy_node_path_answer("n1", "/srv/work/proj", text, strlen(text), f, &err);
	if (r < 0) {
		cr_expect_eq(err->code, code, "%s", err->message);
		cr_expect(!says || strstr(err->message, says), "%s", err->message);
		cp_error_free(err);
	}
	return r;
}

Test(policy_node_path, answer_ok)
{
	struct policy_node_path_facts f;
	cr_assert_eq(answer("ok 2049 131 none\n", &f, 0, NULL), 0);
	cr_expect_eq(f.dev, 2049);
	cr_expect_eq(f.ino, 131);
	cr_expect_eq(f.git, POLICY_NODE_GIT_NONE);
	cr_assert_eq(answer("ok 2049 131 dir 2049 18446744073709551615\n", &f, 0, NULL), 0);
	cr_expect_eq(f.git, POLICY_NODE_GIT_DIR);
	cr_expect_eq(f.git_ino, UINT64_MAX);
	cr_assert_eq(answer("ok 1 2 dir 3 4\n", &f, 0, NULL), 0);
	cr_expect_eq(f.git_dev, 3);
}

/* What the owner's git on the node would follow or run: refused, named. */
Test(policy_node_path, answer_refuses_a_git_the_owners_git_would_follow)
{
	struct policy_node_path_facts f;
	cr_expect_eq(answer("gitfile\n", &f, CP_ERR_DENIED, "'/srv/work/proj/.git' on node 'n1' is a file"), -1);
	cr_expect_eq(answer("gitcommondir\n", &f, CP_ERR_DENIED, ".git/commondir' on node 'n1' names another"), -1);
	cr_expect_eq(answer("gitbig\n", &f, CP_ERR_DENIED, "more than 200000 files"), -1);
	/* hooks/pre-commit, hex-encoded by the node's program */
	cr_expect_eq(answer("gitbad link 686f6f6b732f7072652d636f6d6d6974\n", &f, CP_ERR_DENIED,
	                    "'/srv/work/proj/.git/hooks/pre-commit' on node 'n1' is a symbolic link"),
	             -1);
	cr_expect_eq(
	    answer("gitbad fifo 6c6f67732f48454144\n", &f, CP_ERR_DENIED, ".git/logs/HEAD' on node 'n1' is a FIFO"),
	    -1);
	/* A byte that is not printable is shown as '?', never passed on. */
	cr_expect_eq(answer("gitbad device 611b5b3263\n", &f, CP_ERR_DENIED, ".git/a?[2c' on node 'n1' is a device"),
	             -1);
	cr_expect_eq(answer("ok 1 2 file 3 4\n", &f, CP_ERR_UNAVAILABLE, "does not read"), -1,
	             "a gitfile is never mounted on a node, whatever the node says");
	const char *bad[] = {"gitbad link\n",    "gitbad link 6\n", "gitbad link 6G\n", "gitbad link 6A\n",
	                     "gitbad pipe 61\n", "gitbad  61\n",    "gitbad link 61 \n"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(answer(bad[i], &f, CP_ERR_UNAVAILABLE, "does not read"), -1, "[%zu] %s", i, bad[i]);
	char big[POLICY_NODE_PATH_ANSWER_MAX];
	snprintf(big, sizeof(big), "gitbad link ");
	size_t n = strlen(big);
	memset(big + n, '6', 802);
	big[n + 802] = '\n';
	big[n + 803] = '\0';
	cr_expect_eq(answer(big, &f, CP_ERR_UNAVAILABLE, "does not read"), -1, "over 400 bytes of path");
}

Test(policy_node_path, answer_refusals_name_the_component)
{
	struct policy_node_path_facts f;
	cr_expect_eq(answer("link 1\n", &f, CP_ERR_DENIED, "'/srv/work' on node 'n1' is a symbolic link"), -1);
	cr_expect_eq(answer("link 2\n", &f, CP_ERR_DENIED, "'/srv/work/proj' on node 'n1' is a symbolic link"), -1);
	cr_expect_eq(answer("missing 0\n", &f, CP_ERR_NOT_FOUND, "('/srv' is missing there)"), -1);
	cr_expect_eq(answer("notdir 2\n", &f, CP_ERR_INVALID_ARGUMENT, "not a directory"), -1);
	cr_expect_eq(answer("denied 1\n", &f, CP_ERR_DENIED, "permission"), -1);
	cr_expect_eq(answer("bare\n", &f, CP_ERR_DENIED, "bare repository"), -1);
	cr_expect_eq(answer("gitlink\n", &f, CP_ERR_DENIED, "'/srv/work/proj/.git' on node 'n1' is a symbolic link"),
	             -1);
	cr_expect_eq(answer("gitother\n", &f, CP_ERR_DENIED, "neither a directory nor a file"), -1);
}

Test(policy_node_path, answer_read_strictly)
{
	struct policy_node_path_facts f;
	const char *bad[] = {
	    "ok 1 2 none",                       /* no newline */
	    "ok 1 2 none\n\n",                   /* a second line */
	    "ok 1 2 none\nok 3 4 none\n",        /* two answers */
	    "ok 01 2 none\n",                    /* a leading zero */
	    "ok -1 2 none\n",                    /* a sign */
	    "ok 1  2 none\n",                    /* two spaces */
	    "ok 1 2 none \n",                    /* a trailing space */
	    "ok 1 2\n",                          /* no .git word */
	    "ok 1 2 dir 3\n",                    /* half an identity */
	    "ok 1 2 dir 3 4 5\n",                /* one too many */
	    "ok 1 2 link 3 4\n",                 /* no such kind */
	    "ok 1 184467440737095516150 none\n", /* 21 digits */
	    "ok 1 18446744073709551616 none\n",  /* above 2^64 - 1 */
	    "link 3\n",                          /* beyond the path's three components */
	    "link\n",
	    "link 1 2\n",
	    "LINK 1\n",
	    "\n",
	    "",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(answer(bad[i], &f, CP_ERR_UNAVAILABLE, "does not read"), -1, "[%zu] %s", i, bad[i]);
	char nul[] = "ok 1 2 none\n";
	nul[4] = '\0';
	struct cp_error *err = NULL;
	cr_expect_eq(policy_node_path_answer("n1", "/srv/work/proj", nul, sizeof(nul) - 1, &f, &err), -1, "a NUL");
	cp_error_free(err);
	char big[POLICY_NODE_PATH_ANSWER_MAX + 2];
	memset(big, '1', sizeof(big));
	memcpy(big, "ok ", 3);
	big[sizeof(big) - 1] = '\n';
	err = NULL;
	cr_expect_eq(policy_node_path_answer("n1", "/srv/work/proj", big, sizeof(big), &f, &err), -1, "too long");
	cp_error_free(err);
}

Test(policy_node_path, the_note_says_whose_git_is_read_only)
{
	cr_expect_eq(policy_direct_note_for(NULL), policy_direct_mode_note);
	cr_expect_eq(policy_direct_note_for("local"), policy_direct_mode_note);
	cr_expect_eq(policy_direct_note_for("n1"), policy_direct_node_note);
	cr_expect(strstr(policy_direct_node_note, "whole .git is read-only"));
	cr_expect(strstr(policy_direct_node_note, "core.hooksPath"), "what the read-only .git does not cover");
}
