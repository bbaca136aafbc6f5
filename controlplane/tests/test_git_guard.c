/* test_git_guard.c: a direct workspace's .git protection without an engine:
 * the protected paths for each .git shape (policy_git_paths), the commondir
 * and gitfile checks, guard_git_prepare on temporary directories
 * (placeholders, mount specs, identities, and the refusals of a planted
 * symlink or a wrong type, which create nothing), the host-side re-check
 * after a rename over a protected file, the recorded mounts (migration
 * 0009) and the doctor's verdict. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "lifecycle/lifecycle_internal.h"
#include "ops/ops.h"
#include "policy/policy.h"
#include "store/store.h"

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/c2s-gitguard-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(git_guard, .init = setup, .fini = teardown);

static void put(const char *rel, const char *text)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	FILE *f = fopen(p, "w");
	cr_assert_not_null(f, "%s", p);
	fputs(text, f);
	fclose(f);
}

static void mk(const char *rel)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	cr_assert_eq(mkdir(p, 0755), 0, "%s", p);
}

static void link_to(const char *target, const char *rel)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	cr_assert_eq(symlink(target, p), 0, "%s", p);
}

static int exists(const char *rel)
{
	char p[256];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	return lstat(p, &st) == 0;
}

/* A repository as `git init` leaves it, minus what git_guard creates. */
static void repo(void)
{
	mk(".git");
	mk(".git/objects");
	mk(".git/refs");
	mk(".git/hooks");
	put(".git/HEAD", "ref: refs/heads/main\n");
	put(".git/config", "[core]\n\tbare = false\n");
}

/* prepare on dir; returns its result, *g filled (caller clears), *err on failure. */
static int prepare(struct guard_git *g, struct cp_error **err)
{
	int fd = -1;
	uint64_t dev, ino;
	cr_assert_eq(guard_mount_open(dir, &fd, &dev, &ino, err), 0);
	int r = guard_git_prepare(fd, dir, "/workspace", g, err);
	close(fd);
	return r;
}

static void refused(const char *needle)
{
	struct guard_git g = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(prepare(&g, &err), -1, "prepared although '%s' was expected", needle);
	cr_assert_eq(err->code, CP_ERR_DENIED, "%s", err->message);
	cr_assert_not_null(strstr(err->message, needle), "%s", err->message);
	cr_assert_eq(g.n, 0);
	/* A refusal creates nothing: no placeholder the test did not put there. */
	static const char *const placeholders[] = {"commondir", "config.worktree", "modules", "worktrees"};
	for (size_t i = 0; i < sizeof(placeholders) / sizeof(placeholders[0]); i++) {
		char rel[64];
		snprintf(rel, sizeof(rel), ".git/%s", placeholders[i]);
		if (!strstr(needle, rel))
			cr_assert_not(exists(rel), "%s was created before the refusal: %s", rel, err->message);
	}
	cp_error_free(err);
}

Test(git_guard, protected_paths_for_each_shape)
{
	size_t n = 99;
	cr_assert_null(policy_git_paths(POLICY_GIT_NONE, &n));
	cr_assert_eq(n, 0);

	const struct policy_git_path *p = policy_git_paths(POLICY_GIT_DIRECTORY, &n);
	static const struct {
		const char *rel;
		bool dir, ro;
		enum policy_git_missing missing;
	} want[] = {
	    {".git", true, false, POLICY_GIT_MISSING_NEVER},
	    {".git/config", false, true, POLICY_GIT_MISSING_FILE},
	    {".git/config.worktree", false, true, POLICY_GIT_MISSING_FILE},
	    {".git/commondir", false, true, POLICY_GIT_MISSING_FILE},
	    {".git/hooks", true, true, POLICY_GIT_MISSING_MKDIR},
	    {".git/modules", true, true, POLICY_GIT_MISSING_MKDIR},
	    {".git/worktrees", true, true, POLICY_GIT_MISSING_MKDIR},
	};
	cr_assert_eq(n, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < n; i++) {
		cr_assert_str_eq(p[i].rel, want[i].rel);
		cr_assert_eq(p[i].directory, want[i].dir, "%s", p[i].rel);
		cr_assert_eq(p[i].read_only, want[i].ro, "%s", p[i].rel);
		cr_assert_eq(p[i].missing, want[i].missing, "%s", p[i].rel);
	}
	/* The placeholders change nothing for git: an empty config file, and
	 * "this directory" as the common directory. */
	cr_assert_str_eq(p[2].content, "");
	cr_assert_str_eq(p[3].content, ".\n");

	p = policy_git_paths(POLICY_GIT_GITFILE, &n);
	cr_assert_eq(n, 1);
	cr_assert_str_eq(p[0].rel, ".git");
	cr_assert(p[0].read_only);
	cr_assert_not(p[0].directory);
}

Test(git_guard, commondir_content)
{
	struct cp_error *err = NULL;
	static const char *const ok[] = {".", "./", ".\n", ".\r\n"};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		cr_assert_eq(policy_git_commondir_check("/r/.git/commondir", ok[i], strlen(ok[i]), &err), 0, "%s",
		             ok[i]);
	static const char *const bad[] = {"../evil\n", "", "/elsewhere", "..", " ."};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(policy_git_commondir_check("/r/.git/commondir", bad[i], strlen(bad[i]), &err), -1, "'%s'",
		             bad[i]);
		cr_assert_eq(err->code, CP_ERR_DENIED);
		cr_assert_not_null(strstr(err->message, "/r/.git/commondir' names"), "%s", err->message);
		cp_error_freep(&err);
	}
}

Test(git_guard, gitfile_parse)
{
	char *g = NULL;
	const char *rel = "gitdir: ../main/.git/worktrees/wt\n";
	cr_assert_eq(policy_gitfile_parse("/r/wt", rel, strlen(rel), &g), 1);
	cr_assert_str_eq(g, "/r/main/.git/worktrees/wt");
	free(g);
	const char *abs = "gitdir: /x/./y//z/../w \r\n";
	cr_assert_eq(policy_gitfile_parse("/r/wt", abs, strlen(abs), &g), 1);
	cr_assert_str_eq(g, "/x/y/w");
	free(g);
	cr_assert_eq(policy_gitfile_parse("/r/wt", "gitdir: .", 9, &g), 1);
	cr_assert_str_eq(g, "/r/wt");
	free(g);
	cr_assert_eq(policy_gitfile_parse("/r", "gitdir: ../../..", 16, &g), 1);
	cr_assert_str_eq(g, "/");
	free(g);
	/* Not what git follows: no "gitdir: " prefix, nothing after it, a NUL. */
	cr_assert_eq(policy_gitfile_parse("/r", "gitdir: a\0b", 11, &g), 0);
	cr_assert_eq(policy_gitfile_parse("/r", "gitdir:x", 8, &g), 0);
	cr_assert_null(g);
	cr_assert_eq(policy_gitfile_parse("/r", "gitdir: \n", 9, &g), 0);
	cr_assert_eq(policy_gitfile_parse("/r", "hello", 5, &g), 0);
}

Test(git_guard, no_git_means_no_mounts)
{
	struct guard_git g = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(prepare(&g, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(g.shape, POLICY_GIT_NONE);
	cr_assert_eq(g.n, 0);
	cr_assert_not(exists(".git"), "nothing is created in a directory without .git");
}

Test(git_guard, directory_placeholders_mount_specs_and_identities)
{
	repo();
	struct guard_git g = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(prepare(&g, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(g.shape, POLICY_GIT_DIRECTORY);
	cr_assert_eq(g.n, 7);
	static const char *const rels[] = {".git",       ".git/config",  ".git/config.worktree", ".git/commondir",
	                                   ".git/hooks", ".git/modules", ".git/worktrees"};
	for (size_t i = 0; i < g.n; i++) {
		char src[256], tgt[256];
		snprintf(src, sizeof(src), "%s/%s", dir, rels[i]);
		snprintf(tgt, sizeof(tgt), "/workspace/%s", rels[i]);
		cr_assert_str_eq(g.mounts[i].source, src);
		cr_assert_str_eq(g.mounts[i].target, tgt);
		cr_assert_eq(g.mounts[i].read_only, i != 0, "%s", rels[i]);
		struct stat st;
		cr_assert_eq(lstat(src, &st), 0, "%s exists now", src);
		cr_assert_eq(g.mounts[i].dev, (uint64_t)st.st_dev);
		cr_assert_eq(g.mounts[i].ino, (uint64_t)st.st_ino);
	}
	char buf[64] = "";
	char p[256];
	snprintf(p, sizeof(p), "%s/.git/commondir", dir);
	FILE *f = fopen(p, "r");
	cr_assert_not_null(f);
	cr_assert_not_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	cr_assert_str_eq(buf, ".\n");
	snprintf(p, sizeof(p), "%s/.git/config", dir);
	struct stat st;
	cr_assert_eq(stat(p, &st), 0);
	cr_assert_eq(st.st_size, (off_t)strlen("[core]\n\tbare = false\n"), "the owner's config is untouched");
	guard_git_clear(&g);

	/* A second prepare finds everything in place and creates nothing new. */
	cr_assert_eq(prepare(&g, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(g.n, 7);
	guard_git_clear(&g);
}

Test(git_guard, planted_symlinks_are_refused)
{
	repo();
	char p[256];
	snprintf(p, sizeof(p), "%s/.git/hooks", dir);
	cr_assert_eq(rmdir(p), 0);
	link_to("/", ".git/hooks");
	refused(".git/hooks' is a symbolic link (to '/')");
	cr_assert_eq(unlink(p), 0);
	mk(".git/hooks");

	snprintf(p, sizeof(p), "%s/.git/config", dir);
	cr_assert_eq(unlink(p), 0);
	link_to("/etc/hostname", ".git/config");
	refused(".git/config' is a symbolic link (to '/etc/hostname')");
	cr_assert_eq(unlink(p), 0);
	put(".git/config", "");

	link_to("/tmp", ".git/modules");
	refused(".git/modules' is a symbolic link");
	snprintf(p, sizeof(p), "%s/.git/modules", dir);
	cr_assert_eq(unlink(p), 0);

	link_to("/etc/hostname", ".git/commondir");
	refused(".git/commondir' is a symbolic link");
	snprintf(p, sizeof(p), "%s/.git/commondir", dir);
	cr_assert_eq(unlink(p), 0);
}

Test(git_guard, dot_git_symlink_and_wrong_types_are_refused)
{
	mk("real");
	mk("real/.git");
	link_to("real/.git", ".git");
	refused("/.git' is a symbolic link (to 'real/.git'); in direct mode");
	char p[256];
	snprintf(p, sizeof(p), "%s/.git", dir);
	cr_assert_eq(unlink(p), 0);

	repo();
	snprintf(p, sizeof(p), "%s/.git/hooks", dir);
	cr_assert_eq(rmdir(p), 0);
	put(".git/hooks", "not a directory");
	refused(".git/hooks' is a regular file where git keeps a directory");
	cr_assert_eq(unlink(p), 0);
	mk(".git/hooks");

	mk(".git/config.worktree");
	refused(".git/config.worktree' is a directory where git keeps a regular file");
	snprintf(p, sizeof(p), "%s/.git/config.worktree", dir);
	cr_assert_eq(rmdir(p), 0);

	snprintf(p, sizeof(p), "%s/.git/worktrees", dir);
	cr_assert_eq(mkfifo(p, 0600), 0);
	refused(".git/worktrees' is a special file");
	cr_assert_eq(unlink(p), 0);

	put(".git/commondir", "../elsewhere\n");
	refused(".git/commondir' names '../elsewhere'");
}

Test(git_guard, gitfile_outside_is_read_only_inside_is_refused)
{
	put(".git", "gitdir: /somewhere/main/.git/worktrees/wt\n");
	struct guard_git g = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(prepare(&g, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(g.shape, POLICY_GIT_GITFILE);
	cr_assert_eq(g.n, 1);
	cr_assert_str_eq(g.mounts[0].target, "/workspace/.git");
	cr_assert(g.mounts[0].read_only);
	guard_git_clear(&g);

	/* A git dir inside the directory: the sandbox could write its config. */
	mk(".realgit");
	put(".git", "gitdir: .realgit\n");
	refused("which lies inside the directory itself");
	put(".git", "gitdir: .\n");
	refused("which lies inside the directory itself");
	/* Through a symlink outside that leads back in. */
	char back[256];
	snprintf(back, sizeof(back), "%s-back", dir);
	unlink(back);
	cr_assert_eq(symlink(dir, back), 0);
	char text[300];
	snprintf(text, sizeof(text), "gitdir: %s/.realgit\n", back);
	put(".git", text);
	refused("which lies inside the directory itself");
	unlink(back);

	/* Not a gitfile git would follow: mounted read-only, nothing else. */
	put(".git", "junk\n");
	cr_assert_eq(prepare(&g, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(g.n, 1);
	guard_git_clear(&g);
}

Test(git_guard, host_side_rename_over_a_protected_file_is_noticed)
{
	repo();
	struct guard_git g = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(prepare(&g, &err), 0, "%s", err ? err->message : "");
	char reason[1500];
	cr_assert_eq(guard_git_host_lost(g.mounts, g.n, reason, sizeof(reason)), 0);
	/* Content changes keep the identity (the mount stays). */
	put(".git/hooks/pre-commit", "#!/bin/sh\n");
	cr_assert_eq(guard_git_host_lost(g.mounts, g.n, reason, sizeof(reason)), 0);
	/* What git config does on the host: a lock file renamed over config. */
	put(".git/config.lock", "[core]\n\tbare = false\n[x]\n\ty = 1\n");
	char from[256], to[256];
	snprintf(from, sizeof(from), "%s/.git/config.lock", dir);
	snprintf(to, sizeof(to), "%s/.git/config", dir);
	cr_assert_eq(rename(from, to), 0);
	cr_assert_eq(guard_git_host_lost(g.mounts, g.n, reason, sizeof(reason)), 2);
	cr_assert_not_null(strstr(reason, "/.git/config' was replaced or removed on the host"), "%s", reason);
	cr_assert_not_null(strstr(reason, "the sandbox was stopped"), "%s", reason);
	guard_git_clear(&g);
}

Test(git_guard, recorded_mounts_round_trip_and_go_with_the_sandbox)
{
	char db[128];
	snprintf(db, sizeof(db), "%s/reg.sqlite", dir);
	struct store *s = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(store_open(db, &s, &err), 0, "%s", err ? err->message : "");
	struct workspace_record w = {
	    .id = "ws_1", .mode = "direct", .path = "/r/p", .host_path = "/r/p", .created_at_ms = 1};
	cr_assert_eq(store_workspace_insert(s, &w, &err), 0, "%s", err ? err->message : "");
	struct sandbox_record row = {.id = "sbx_1",
	                             .workspace_id = "ws_1",
	                             .status = SANDBOX_CREATING,
	                             .container_name = "sbx_1",
	                             .image = "img",
	                             .network = 1,
	                             .created_at_ms = 1};
	cr_assert_eq(store_sandbox_insert(s, &row, &err), 0, "%s", err ? err->message : "");
	struct sandbox_mount_record m[] = {
	    {.target = "/workspace/.git/hooks", .source = "/r/p/.git/hooks", .read_only = 1, .dev = 0xfe01, .ino = 9},
	    {.target = "/workspace/.git", .source = "/r/p/.git", .read_only = 0, .dev = 0xfe01, .ino = 1ULL << 40},
	};
	cr_assert_eq(store_sandbox_mounts_set(s, "sbx_1", m, 2, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(store_sandbox_mounts_set(s, "sbx_1", m, 2, &err), 0, "replacing is idempotent");
	struct sandbox_mount_record *got = NULL;
	size_t n = 0;
	cr_assert_eq(store_sandbox_mounts_list(s, "sbx_1", &got, &n, &err), 0);
	cr_assert_eq(n, 2);
	cr_assert_str_eq(got[0].target, "/workspace/.git", "parents first");
	cr_assert_eq(got[0].ino, 1ULL << 40);
	cr_assert_eq(got[0].read_only, 0);
	cr_assert_str_eq(got[1].source, "/r/p/.git/hooks");
	cr_assert_eq(got[1].dev, 0xfe01);
	for (size_t i = 0; i < n; i++)
		sandbox_mount_record_clear(&got[i]);
	free(got);
	cr_assert_eq(store_sandbox_mounts_set(s, "sbx_none", m, 2, &err), -1);
	cr_assert_eq(err->code, CP_ERR_NOT_FOUND);
	cp_error_freep(&err);

	/* A live sandbox keeps its workspace; once removed, forget deletes the
	 * sandbox row, its mounts and the workspace. */
	cr_assert_eq(store_workspace_forget(s, "ws_1", &err), -1);
	cr_assert_eq(err->code, CP_ERR_CONFLICT);
	cp_error_freep(&err);
	cr_assert_eq(store_sandbox_set_status(s, "sbx_1", SANDBOX_REMOVED, NULL, NULL, 2, &err), 0);
	cr_assert_eq(store_workspace_forget(s, "ws_1", &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(store_sandbox_mounts_list(s, "sbx_1", &got, &n, &err), 0);
	cr_assert_eq(n, 0, "the mounts went with the sandbox row");
	free(got);
	struct workspace_record gone = {0};
	cr_assert_eq(store_workspace_get(s, "ws_1", &gone, &err), -1);
	cp_error_freep(&err);
	store_free(s);
}

Test(git_guard, doctor_verdict)
{
	static const char all_refused[] = "refused config\nrefused hook\nrefused commondir\nrefused lock-rename\n"
	                                  "refused rename-git\n@@end\n";
	struct ops_probe_report r = {0};
	ops_git_guard_judge(all_refused, "same", "same", &r);
	cr_assert_eq(r.n, 1);
	cr_assert_str_eq(r.checks[0].name, "direct_git");
	cr_assert_eq(r.checks[0].result, OPS_CHECK_PASSED, "%s", r.checks[0].detail);
	ops_probe_report_clear(&r);

	ops_git_guard_judge("refused config\nWROTE hook\nrefused commondir\nWROTE rename-git\n@@end\n", "a", "a", &r);
	cr_assert_eq(r.checks[0].result, OPS_CHECK_FAILED);
	cr_assert_not_null(strstr(r.checks[0].detail, "hook, rename-git"), "%s", r.checks[0].detail);
	ops_probe_report_clear(&r);

	ops_git_guard_judge(all_refused, "before", "after", &r);
	cr_assert_eq(r.checks[0].result, OPS_CHECK_FAILED, "a changed host .git fails even when all was refused");
	ops_probe_report_clear(&r);

	ops_git_guard_judge("refused config\n", "a", "a", &r);
	cr_assert_eq(r.checks[0].result, OPS_CHECK_FAILED, "an attack cut short is no pass");
	ops_probe_report_clear(&r);
}

Test(git_guard, doctor_verdict_on_plants)
{
	struct ops_git_plant_outcome o[3] = {
	    {.rel = "logs/HEAD", .planted = 1, .stopped = 1, .ms = 40},
	    {.rel = "COMMIT_EDITMSG", .planted = 1, .stopped = 1, .ms = 120},
	    {.rel = "logs", .planted = 1, .stopped = 1, .ms = 60},
	};
	struct ops_probe_report r = {0};
	ops_git_plant_judge(o, 3, 0, &r);
	cr_assert_eq(r.n, 1);
	cr_assert_str_eq(r.checks[0].name, "direct_git_links");
	cr_assert_eq(r.checks[0].result, OPS_CHECK_PASSED, "%s", r.checks[0].detail);
	cr_assert_not_null(strstr(r.checks[0].detail, "each of the 3 plants"), "%s", r.checks[0].detail);
	cr_assert_not_null(strstr(r.checks[0].detail, "within 120 ms"), "%s", r.checks[0].detail);
	ops_probe_report_clear(&r);

	o[1].stopped = 0;
	o[2].still_there = 1;
	ops_git_plant_judge(o, 3, 0, &r);
	cr_assert_eq(r.checks[0].result, OPS_CHECK_FAILED);
	cr_assert_not_null(strstr(r.checks[0].detail, ".git/COMMIT_EDITMSG: the sandbox kept running; .git/logs: it is "
	                                              "still in .git"),
	                   "%s", r.checks[0].detail);
	ops_probe_report_clear(&r);

	o[1].stopped = 1;
	o[2].still_there = 0;
	ops_git_plant_judge(o, 3, 1, &r);
	cr_assert_eq(r.checks[0].result, OPS_CHECK_FAILED, "a changed canary fails");
	ops_probe_report_clear(&r);

	o[0] = (struct ops_git_plant_outcome){.rel = "logs/HEAD"};
	ops_git_plant_judge(o, 1, 0, &r);
	cr_assert_eq(r.checks[0].result, OPS_CHECK_FAILED, "a plant that was never made proves nothing");
	cr_assert_not_null(strstr(r.checks[0].detail, "could not be planted"), "%s", r.checks[0].detail);
	ops_probe_report_clear(&r);
	ops_git_plant_judge(o, 0, 0, &r);
	cr_assert_eq(r.checks[0].result, OPS_CHECK_FAILED);
	ops_probe_report_clear(&r);
}

/* A direct sandbox's mount table as runc leaves it (abridged from one). */
static const char good_mountinfo[] =
    "1 0 0:50 / / rw,relatime - overlay overlay rw\n"
    "2 1 0:52 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw\n"
    "3 1 0:53 / /dev rw,nosuid - tmpfs tmpfs rw\n"
    "4 1 0:54 / /sys ro,nosuid,nodev,noexec,relatime - sysfs sysfs ro\n"
    "5 4 0:26 / /sys/fs/cgroup/pids ro,nosuid,nodev,noexec,relatime - cgroup cgroup rw,pids\n"
    "6 1 254:0 /usr/bin/helper /.chat2sbx/helper ro,relatime - ext4 /dev/vda rw\n"
    "7 1 254:0 /r/my\\040repo /workspace rw,relatime - ext4 /dev/vda rw\n"
    "8 7 254:0 /r/my\\040repo/.git /workspace/.git rw,relatime - ext4 /dev/vda rw\n"
    "9 1 254:0 /var/lib/docker/containers/x/hosts /etc/hosts rw,relatime - ext4 /dev/vda rw\n"
    "10 8 254:0 /r/my\\040repo/.git/config /workspace/.git/config ro,relatime - ext4 /dev/vda rw\n"
    "11 8 254:0 /r/my\\040repo/.git/hooks /workspace/.git/hooks ro,relatime - ext4 /dev/vda rw\n"
    "12 2 0:53 /null /proc/keys rw,nosuid - tmpfs tmpfs rw\n";

static const struct guard_mount_want want_mounts[] = {
    {.target = "/.chat2sbx/helper", .read_only = 1},
    {.target = "/workspace"},
    {.target = "/workspace/.git"},
    {.target = "/workspace/.git/config", .read_only = 1},
    {.target = "/workspace/.git/hooks", .read_only = 1},
};

Test(git_guard, mount_table_judged)
{
	char reason[1024];
	size_t n = sizeof(want_mounts) / sizeof(want_mounts[0]);
	cr_assert_eq(guard_mountinfo_judge(good_mountinfo, want_mounts, n, reason, sizeof(reason)), 0, "%s", reason);

	/* The race of a symlink into a mount target: hooks never mounted, the
	 * outside directory mounted where the symlink led. */
	char raced[sizeof(good_mountinfo) + 200];
	snprintf(raced, sizeof(raced), "%.*s%s", (int)(strstr(good_mountinfo, "11 8") - good_mountinfo), good_mountinfo,
	         "11 1 254:0 /tmp/outside /tmp/outside ro,relatime - ext4 /dev/vda rw\n");
	cr_assert_eq(guard_mountinfo_judge(raced, want_mounts, n, reason, sizeof(reason)), -1);
	cr_assert_not_null(strstr(reason, "something was mounted at '/tmp/outside'"), "%s", reason);
	/* Only the outside mount removed: hooks is still missing. */
	snprintf(raced, sizeof(raced), "%.*s", (int)(strstr(good_mountinfo, "11 8") - good_mountinfo), good_mountinfo);
	cr_assert_eq(guard_mountinfo_judge(raced, want_mounts, n, reason, sizeof(reason)), -1);
	cr_assert_not_null(strstr(reason, "'/workspace/.git/hooks' is not a mount point"), "%s", reason);

	/* Read-write where read-only was asked. */
	char rw[sizeof(good_mountinfo)];
	snprintf(rw, sizeof(rw), "%s", good_mountinfo);
	char *p = strstr(rw, "/workspace/.git/config ro,");
	memcpy(p + strlen("/workspace/.git/config "), "rw", 2);
	cr_assert_eq(guard_mountinfo_judge(rw, want_mounts, n, reason, sizeof(reason)), -1);
	cr_assert_not_null(strstr(reason, "'/workspace/.git/config' is mounted read-write"), "%s", reason);

	/* A look-alike of an allowed place is not allowed. */
	static const char procx[] = "1 0 0:50 / /procx rw - x x rw\n";
	cr_assert_eq(guard_mountinfo_judge(procx, NULL, 0, reason, sizeof(reason)), -1);
	/* An optional target may be missing, and is allowed where it is. */
	static const struct guard_mount_want sock[] = {{.target = "/var/run/x.sock", .optional = 1},
	                                               {.target = "/run/x.sock", .optional = 1}};
	static const char at_run[] = "1 0 0:50 / / rw - x x rw\n2 1 0:5 /x.sock /run/x.sock rw - x x rw\n";
	cr_assert_eq(guard_mountinfo_judge(at_run, sock, 2, reason, sizeof(reason)), 0, "%s", reason);
}
