/* test_policy_host_path.c: the host-path rules (policy_host_path_check) on a
 * real directory tree built per test in a mkdtemp folder T, shaped like a
 * home: T/home/.ssh, T/home/repositories/{proj,proj2,.sshx,ssh} (the allowed
 * root), T/home/repositories2, T/data (the data root), T/elsewhere. */
#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/policy.h"

static char T[256]; /* resolved, so expected resolutions can be spelled */
static char root_dir[PATH_MAX];
static char data_dir[PATH_MAX];
static const char *root_list[1];
static struct policy_host_roots roots;

/* T-relative path in one of a few rotating buffers (tests use several at once). */
static const char *P(const char *fmt, ...)
{
	static char bufs[8][PATH_MAX];
	static int next;
	char rel[PATH_MAX - 512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	char *b = bufs[next++ % 8];
	snprintf(b, PATH_MAX, "%s/%s", T, rel);
	return b;
}

static void mkdir_p(const char *rel)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", T, rel);
	for (char *p = path + strlen(T) + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		cr_assert(mkdir(path, 0700) == 0 || errno == EEXIST, "mkdir %s", path);
		*p = '/';
	}
	cr_assert(mkdir(path, 0700) == 0 || errno == EEXIST, "mkdir %s", path);
}

static void link_to(const char *target, const char *rel)
{
	cr_assert_eq(symlink(target, P("%s", rel)), 0, "symlink %s -> %s", rel, target);
}

static void setup(void)
{
	char tmpl[] = "/tmp/cp_host_path_XXXXXX";
	cr_assert_not_null(mkdtemp(tmpl));
	char *real = realpath(tmpl, NULL);
	cr_assert_not_null(real);
	cr_assert_lt(strlen(real), sizeof(T));
	strcpy(T, real);
	free(real);
	mkdir_p("home/.ssh");
	mkdir_p("home/repositories/proj/src");
	mkdir_p("home/repositories/proj2");
	mkdir_p("home/repositories/.sshx");
	mkdir_p("home/repositories/ssh");
	mkdir_p("home/repositories/a");
	mkdir_p("home/repositories2/x");
	mkdir_p("data");
	mkdir_p("elsewhere");
	FILE *f = fopen(P("home/repositories/file.txt"), "w");
	cr_assert_not_null(f);
	fputs("not a directory\n", f);
	fclose(f);
	snprintf(root_dir, sizeof(root_dir), "%s/home/repositories", T);
	snprintf(data_dir, sizeof(data_dir), "%s/data", T);
	root_list[0] = root_dir;
	roots = (struct policy_host_roots){.roots = root_list, .n = 1, .data_root = data_dir};
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static void teardown(void)
{
	if (T[0])
		nftw(T, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(policy_host_path, .init = setup, .fini = teardown);

/* Checks path against r, expecting acceptance with resolution `want`. */
static void expect_ok(const struct policy_host_roots *r, const char *path, const char *want)
{
	struct cp_error *err = NULL;
	char *real = NULL;
	int rc = policy_host_path_check(r, path, &real, &err);
	cr_assert_eq(rc, 0, "'%s' refused: %s", path, err ? err->message : "(no error)");
	cr_expect_null(err);
	cr_assert_not_null(real);
	cr_expect_str_eq(real, want, "'%s'", path);
	free(real);
}

/* Checks path against r, expecting refusal with code and a message holding
 * both the given path and `words`; *ret_real must stay untouched. */
static void expect_refused(const struct policy_host_roots *r, const char *path, enum cp_error_code code,
                           const char *words)
{
	struct cp_error *err = NULL;
	char sentinel = 0;
	char *real = &sentinel;
	int rc = policy_host_path_check(r, path, &real, &err);
	cr_assert_lt(rc, 0, "'%s' was accepted", path);
	cr_expect(real == &sentinel, "*ret_real set on failure");
	cr_assert_not_null(err);
	cr_expect_eq(err->code, code, "'%s': code %s, want %s (%s)", path, cp_error_code_name(err->code),
	             cp_error_code_name(code), err->message);
	cr_expect_not_null(strstr(err->message, words), "'%s': message '%s' lacks '%s'", path, err->message, words);
	if (path[0])
		cr_expect_not_null(strstr(err->message, path), "message '%s' does not name '%s'", err->message, path);
	cp_error_free(err);
}

/* ---- accepted ---- */

Test(policy_host_path, accepts_a_project_below_the_root)
{
	const char *want = P("home/repositories/proj");
	expect_ok(&roots, want, want);
	expect_ok(&roots, P("home/repositories/proj/"), want);
	expect_ok(&roots, P("home/repositories/proj///"), want);
	expect_ok(&roots, P("/home//repositories///proj"), want);
	expect_ok(&roots, P("home/repositories/./proj/."), want);
	expect_ok(&roots, P("home/repositories/a/../proj"), want);
	expect_ok(&roots, P("home/repositories/proj/src/../../proj2"), P("home/repositories/proj2"));
	expect_ok(&roots, P("home/repositories/proj/src"), P("home/repositories/proj/src"));
}

Test(policy_host_path, accepts_names_that_only_resemble_credential_dirs)
{
	expect_ok(&roots, P("home/repositories/.sshx"), P("home/repositories/.sshx"));
	expect_ok(&roots, P("home/repositories/ssh"), P("home/repositories/ssh"));
	mkdir_p("home/repositories/.ssh-backup/.configs/aws/x.ssh");
	expect_ok(&roots, P("home/repositories/.ssh-backup/.configs/aws/x.ssh"),
	          P("home/repositories/.ssh-backup/.configs/aws/x.ssh"));
}

Test(policy_host_path, accepts_a_symlink_that_stays_inside_the_root)
{
	link_to("proj", "home/repositories/alias");
	link_to(P("home/repositories/proj2"), "home/repositories/abs_alias");
	expect_ok(&roots, P("home/repositories/alias"), P("home/repositories/proj"));
	expect_ok(&roots, P("home/repositories/abs_alias/"), P("home/repositories/proj2"));
	/* ".." after a symlink is its target's parent, as in realpath(3). */
	link_to("proj/src", "home/repositories/srclink");
	expect_ok(&roots, P("home/repositories/srclink/../../proj2"), P("home/repositories/proj2"));
}

Test(policy_host_path, resolves_each_root_and_skips_missing_ones)
{
	link_to(root_dir, "rootlink");
	const char *list[] = {P("missing-root"), "relative/root", NULL, P("rootlink")};
	struct policy_host_roots r = {.roots = list, .n = 4, .data_root = data_dir};
	expect_ok(&r, P("home/repositories/proj"), P("home/repositories/proj"));
	expect_ok(&r, P("rootlink/proj"), P("home/repositories/proj"));
	expect_refused(&r, P("home/repositories"), CP_ERR_DENIED, "is an allowed root itself");
}

Test(policy_host_path, accepts_a_null_ret_real)
{
	struct cp_error *err = NULL;
	cr_expect_eq(policy_host_path_check(&roots, P("home/repositories/proj"), NULL, &err), 0);
	cr_expect_null(err);
}

/* ---- rule 1: absolute ---- */

Test(policy_host_path, refuses_relative_paths)
{
	const char *cases[] = {"home/repositories/proj", "./proj", "../proj", "~/x", "~", "~root/x", ""};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		expect_refused(&roots, cases[i], CP_ERR_INVALID_ARGUMENT, "is relative; give an absolute path");
	struct cp_error *err = NULL;
	cr_expect_lt(policy_host_path_check(&roots, NULL, NULL, &err), 0);
	cr_expect(err && err->code == CP_ERR_INVALID_ARGUMENT);
	cp_error_free(err);
}

/* ---- rule 2: exists, a directory ---- */

Test(policy_host_path, refuses_a_missing_path)
{
	expect_refused(&roots, P("home/repositories/nope"), CP_ERR_NOT_FOUND, "does not exist");
	expect_refused(&roots, P("home/repositories/nope/deeper"), CP_ERR_NOT_FOUND, "does not exist");
	link_to("nowhere", "home/repositories/dangling");
	expect_refused(&roots, P("home/repositories/dangling"), CP_ERR_NOT_FOUND, "does not exist");
}

Test(policy_host_path, refuses_a_file)
{
	expect_refused(&roots, P("home/repositories/file.txt"), CP_ERR_INVALID_ARGUMENT, "is not a directory");
	expect_refused(&roots, P("home/repositories/file.txt/"), CP_ERR_INVALID_ARGUMENT, "is not a directory");
	link_to("file.txt", "home/repositories/filelink");
	expect_refused(&roots, P("home/repositories/filelink"), CP_ERR_INVALID_ARGUMENT, "is not a directory");
	/* A file in the middle does not resolve, even when ".." follows it. */
	expect_refused(&roots, P("home/repositories/file.txt/../proj"), CP_ERR_NOT_FOUND, "is not a directory");
}

Test(policy_host_path, refuses_a_symlink_loop)
{
	link_to("loop2", "home/repositories/loop1");
	link_to("loop1", "home/repositories/loop2");
	link_to("self", "home/repositories/self");
	expect_refused(&roots, P("home/repositories/loop1"), CP_ERR_NOT_FOUND, "symbolic links");
	expect_refused(&roots, P("home/repositories/self/x"), CP_ERR_NOT_FOUND, "symlink loop");
}

/* ---- rule 3: credential directories ---- */

Test(policy_host_path, refuses_every_credential_dir_in_the_given_path)
{
	for (size_t i = 0; policy_credential_dirs[i]; i++) {
		mkdir_p("home/repositories/proj");
		char rel[PATH_MAX];
		snprintf(rel, sizeof(rel), "home/repositories/proj/%s/x", policy_credential_dirs[i]);
		mkdir_p(rel);
		char words[64];
		snprintf(words, sizeof(words), "credential directory '%s'", policy_credential_dirs[i]);
		expect_refused(&roots, P("%s", rel), CP_ERR_DENIED, words);
		/* Refused before the file system is asked: no existence oracle. */
		snprintf(rel, sizeof(rel), "nowhere/%s", policy_credential_dirs[i]);
		expect_refused(&roots, P("%s", rel), CP_ERR_DENIED, words);
	}
	size_t n = 0;
	while (policy_credential_dirs[n])
		n++;
	cr_expect_eq(n, 9, "nine names, NULL-terminated");
}

Test(policy_host_path, refuses_a_config_component_even_when_resolved_away)
{
	mkdir_p("home/repositories/proj/.config");
	expect_refused(&roots, P("home/repositories/proj/.config"), CP_ERR_DENIED, "credential directory '.config'");
	expect_refused(&roots, P("home/repositories/proj/.config/.."), CP_ERR_DENIED, "credential directory '.config'");
	expect_refused(&roots, P("home/.ssh/../repositories/proj"), CP_ERR_DENIED, "credential directory '.ssh'");
}

Test(policy_host_path, refuses_a_symlink_chain_ending_in_ssh)
{
	link_to("link2", "home/repositories/link1");
	link_to(P("home/.ssh"), "home/repositories/link2");
	expect_refused(&roots, P("home/repositories/link1"), CP_ERR_DENIED, "credential directory '.ssh'");
	expect_refused(&roots, P("home/repositories/link1/"), CP_ERR_DENIED, "never mounted");
}

Test(policy_host_path, refuses_a_symlink_passing_through_ssh)
{
	/* Both end back inside the root, at proj: only the target shows .ssh. */
	link_to(P("home/.ssh/../repositories/proj"), "home/repositories/sneaky");
	link_to("../.ssh/../repositories/proj", "home/repositories/sneaky_rel");
	expect_refused(&roots, P("home/repositories/sneaky"), CP_ERR_DENIED, "credential directory '.ssh'");
	expect_refused(&roots, P("home/repositories/sneaky_rel"), CP_ERR_DENIED, "credential directory '.ssh'");
	/* Through a chain, and when a later ".." leaves the link behind. */
	link_to("sneaky_rel", "home/repositories/outer");
	expect_refused(&roots, P("home/repositories/outer"), CP_ERR_DENIED, "credential directory '.ssh'");
	link_to(P("home/.ssh"), "home/repositories/proj/keys");
	expect_refused(&roots, P("home/repositories/proj/keys/../../proj2"), CP_ERR_DENIED,
	               "credential directory '.ssh'");
}

/* ---- rule 4: strictly below an allowed root ---- */

Test(policy_host_path, refuses_the_root_itself)
{
	expect_refused(&roots, root_dir, CP_ERR_DENIED, "is an allowed root itself; approve a directory below it");
	expect_refused(&roots, P("home/repositories/"), CP_ERR_DENIED, "is an allowed root itself");
	expect_refused(&roots, P("home/repositories/proj/.."), CP_ERR_DENIED, "is an allowed root itself");
}

Test(policy_host_path, refuses_a_sibling_sharing_the_root_prefix)
{
	expect_refused(&roots, P("home/repositories2"), CP_ERR_DENIED, "is not below an allowed root");
	expect_refused(&roots, P("home/repositories2/x"), CP_ERR_DENIED, "is not below an allowed root");
}

Test(policy_host_path, refuses_paths_outside_the_roots)
{
	char words[PATH_MAX + 64];
	snprintf(words, sizeof(words), "is not below an allowed root (CHAT2SBX_ALLOWED_HOST_ROOTS: %s)", root_dir);
	expect_refused(&roots, P("elsewhere"), CP_ERR_DENIED, words);
	expect_refused(&roots, "/", CP_ERR_DENIED, words);
	expect_refused(&roots, P("home"), CP_ERR_DENIED, words);
	struct stat st;
	if (stat("/etc", &st) == 0)
		expect_refused(&roots, "/etc", CP_ERR_DENIED, words);
}

Test(policy_host_path, refuses_dotdot_escaping_the_root)
{
	expect_refused(&roots, P("home/repositories/proj/../../../elsewhere"), CP_ERR_DENIED,
	               "not below an allowed root");
	expect_refused(&roots, P("home/repositories/../repositories2/x"), CP_ERR_DENIED, "not below an allowed root");
	expect_refused(&roots, P("home/repositories/a/../../../../../../../../../.."), CP_ERR_DENIED,
	               "resolved to '/'");
}

Test(policy_host_path, refuses_symlinks_leaving_the_root)
{
	link_to("/", "home/repositories/slash");
	link_to(P("elsewhere"), "home/repositories/away");
	link_to("../../elsewhere", "home/repositories/away_rel");
	expect_refused(&roots, P("home/repositories/slash"), CP_ERR_DENIED, "(resolved to '/') is not below");
	expect_refused(&roots, P("home/repositories/away"), CP_ERR_DENIED, "not below an allowed root");
	expect_refused(&roots, P("home/repositories/away_rel/"), CP_ERR_DENIED, "not below an allowed root");
	char words[PATH_MAX + 32];
	snprintf(words, sizeof(words), "resolved to '%s'", P("elsewhere"));
	expect_refused(&roots, P("home/repositories/away"), CP_ERR_DENIED, words);
}

Test(policy_host_path, refuses_when_no_root_exists)
{
	const char *list[] = {P("missing1"), P("missing2")};
	struct policy_host_roots r = {.roots = list, .n = 2, .data_root = data_dir};
	char words[2 * PATH_MAX + 64];
	snprintf(words, sizeof(words), "no allowed root exists (CHAT2SBX_ALLOWED_HOST_ROOTS: %s:%s)", list[0], list[1]);
	expect_refused(&r, P("home/repositories/proj"), CP_ERR_DENIED, words);
	struct policy_host_roots none = {.roots = NULL, .n = 0, .data_root = data_dir};
	expect_refused(&none, P("home/repositories/proj"), CP_ERR_DENIED, "no allowed root exists");
}

/* ---- rule 5: the data root ---- */

Test(policy_host_path, refuses_the_data_root_and_its_relatives)
{
	mkdir_p("home/repositories/box/data/workspaces/ws_a");
	struct policy_host_roots r = roots;
	r.data_root = P("home/repositories/box/data");
	expect_refused(&r, P("home/repositories/box/data"), CP_ERR_DENIED, "is chat2sbx's data root");
	expect_refused(&r, P("home/repositories/box/data/workspaces/ws_a"), CP_ERR_DENIED,
	               "is inside chat2sbx's data root");
	expect_refused(&r, P("home/repositories/box"), CP_ERR_DENIED, "contains chat2sbx's data root");
	expect_refused(&r, "/", CP_ERR_DENIED, "not below an allowed root");
	expect_ok(&r, P("home/repositories/proj"), P("home/repositories/proj"));
	/* Given through a symlink, it is still compared by its resolution. */
	link_to(P("home/repositories/box/data"), "datalink");
	r.data_root = P("datalink/");
	expect_refused(&r, P("home/repositories/box"), CP_ERR_DENIED, "contains chat2sbx's data root");
	/* One that does not exist yet still protects where it will be. */
	r.data_root = P("home/repositories/box/future/");
	expect_refused(&r, P("home/repositories/box"), CP_ERR_DENIED, "contains chat2sbx's data root");
	r.data_root = NULL;
	expect_ok(&r, P("home/repositories/box"), P("home/repositories/box"));
}

/* chat2sbx's own files configured outside the data root (state dir,
 * registry, workspace root, helper, secrets) are protected alike. */
Test(policy_host_path, refuses_own_paths_outside_the_data_root)
{
	mkdir_p("home/repositories/shared/state");
	mkdir_p("home/repositories/tools/bin");
	struct policy_host_roots r = roots;
	char state_dir[PATH_MAX], helper_dir[PATH_MAX]; /* P's buffers rotate */
	snprintf(state_dir, sizeof(state_dir), "%s", P("home/repositories/shared/state"));
	snprintf(helper_dir, sizeof(helper_dir), "%s", P("home/repositories/tools/bin"));
	const char *own[] = {NULL, state_dir, helper_dir};
	r.own_paths = own;
	r.n_own_paths = 3;
	expect_refused(&r, P("home/repositories/shared"), CP_ERR_DENIED, "contains chat2sbx's own files");
	expect_refused(&r, P("home/repositories/shared/state"), CP_ERR_DENIED, "is chat2sbx's own files");
	expect_refused(&r, P("home/repositories/tools"), CP_ERR_DENIED, "contains chat2sbx's own files");
	expect_ok(&r, P("home/repositories/proj"), P("home/repositories/proj"));
}

/* ---- re-checking ---- */

Test(policy_host_path, refuses_a_path_that_became_a_symlink_after_approval)
{
	mkdir_p("home/repositories/later");
	expect_ok(&roots, P("home/repositories/later"), P("home/repositories/later"));
	cr_assert_eq(rmdir(P("home/repositories/later")), 0);
	link_to(P("elsewhere"), "home/repositories/later");
	expect_refused(&roots, P("home/repositories/later"), CP_ERR_DENIED, "not below an allowed root");
	cr_assert_eq(unlink(P("home/repositories/later")), 0);
	link_to(P("home/.ssh"), "home/repositories/later");
	expect_refused(&roots, P("home/repositories/later"), CP_ERR_DENIED, "credential directory '.ssh'");
}

/* ---- policy_roots_split ---- */

Test(policy_host_path, roots_split)
{
	struct {
		const char *in;
		size_t n;
		const char *want[3];
	} cases[] = {
	    {"/root/repositories", 1, {"/root/repositories"}},
	    {"/a:/b c:/d", 3, {"/a", "/b c", "/d"}},
	    {"::/a::/b:", 2, {"/a", "/b"}},
	    {"", 0, {NULL}},
	    {":", 0, {NULL}},
	    {NULL, 0, {NULL}},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = 99;
		char **v = policy_roots_split(cases[i].in, &n);
		cr_assert_not_null(v);
		cr_expect_eq(n, cases[i].n, "'%s'", cases[i].in ? cases[i].in : "(null)");
		for (size_t j = 0; j < cases[i].n && j < n; j++)
			cr_expect_str_eq(v[j], cases[i].want[j]);
		cr_expect_null(v[n], "NULL-terminated");
		policy_roots_free(v);
	}
	policy_roots_free(NULL);
}
