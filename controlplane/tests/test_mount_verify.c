/* test_mount_verify.c: the defences against a bind source swapped between
 * its check and the engine's mount: the nesting rule
 * (policy_host_nesting_check, and guard_host_nesting_check over a real
 * registry), the openat2 identity check (guard_mount_identity: a
 * symlink component is refused), and the stored identity (migration 0007). */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "lifecycle/lifecycle_internal.h"
#include "policy/policy.h"
#include "store/store.h"

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/c2s-mount-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(mount_verify, .init = setup, .fini = teardown);

static const struct policy_host_workspace others[] = {
    {.id = "ws_direct", .path = "/r/proj", .mode = "direct"},
    {.id = "ws_clone", .path = "/r/clone", .mode = "clone"},
    {.id = "ws_managed", .path = "/d/ws_1", .mode = "managed"},
};
#define N_OTHERS (sizeof(others) / sizeof(others[0]))

static void refused(const char *real, const char *mode, const char *names)
{
	struct cp_error *err = NULL;
	cr_assert_eq(policy_host_nesting_check(real, mode, others, N_OTHERS, &err), -1, "%s %s allowed", real, mode);
	cr_assert_eq(err->code, CP_ERR_DENIED);
	cr_assert_not_null(strstr(err->message, names), "%s", err->message);
	cp_error_free(err);
}

static void allowed(const char *real, const char *mode)
{
	struct cp_error *err = NULL;
	cr_assert_eq(policy_host_nesting_check(real, mode, others, N_OTHERS, &err), 0, "%s %s: %s", real, mode,
	             err ? err->message : "");
}

Test(mount_verify, nesting_inside_direct_is_refused_in_any_mode)
{
	refused("/r/proj/sub", "direct", "ws_direct");
	refused("/r/proj/sub", "clone", "ws_direct");
	refused("/r/proj/a/b/c", "clone", "lies inside '/r/proj'");
}

Test(mount_verify, direct_ancestor_of_a_workspace_is_refused)
{
	refused("/r", "direct", "ws_direct");
	struct cp_error *err = NULL;
	const struct policy_host_workspace only_clone[] = {{.id = "ws_c", .path = "/r/clone/inner", .mode = "clone"}};
	cr_assert_eq(policy_host_nesting_check("/r/clone", "direct", only_clone, 1, &err), -1);
	cr_assert_not_null(strstr(err->message, "ws_c"));
	cp_error_freep(&err);
	/* A clone ancestor gives no write access: nothing to swap. */
	cr_assert_eq(policy_host_nesting_check("/r/clone", "clone", only_clone, 1, &err), 0);
}

Test(mount_verify, unrelated_and_lookalike_paths_are_allowed)
{
	allowed("/r/project", "direct"); /* "/r/proj" is not a component prefix */
	allowed("/r/proj2/x", "clone");
	allowed("/r/clone/sub", "clone"); /* inside a clone workspace: read-only */
	allowed("/d/ws_1/x", "direct");   /* managed ones are ignored */
	allowed("/r/other", "direct");
}

Test(mount_verify, identity_matches_stat_and_symlink_component_is_refused)
{
	char real[128], link[128], through[160];
	snprintf(real, sizeof(real), "%s/real", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	snprintf(through, sizeof(through), "%s/link/inner", dir);
	cr_assert_eq(mkdir(real, 0700), 0);
	char inner[160];
	snprintf(inner, sizeof(inner), "%s/inner", real);
	cr_assert_eq(mkdir(inner, 0700), 0);
	cr_assert_eq(symlink(real, link), 0);

	uint64_t dev = 0, ino = 0;
	struct cp_error *err = NULL;
	cr_assert_eq(guard_mount_identity(inner, &dev, &ino, &err), 0, "%s", err ? err->message : "");
	struct stat st;
	cr_assert_eq(stat(inner, &st), 0);
	cr_assert_eq(dev, (uint64_t)st.st_dev);
	cr_assert_eq(ino, (uint64_t)st.st_ino);

	/* A symlink as a middle component and as the last one. */
	cr_assert_eq(guard_mount_identity(through, &dev, &ino, &err), -1);
	cr_assert_eq(err->code, CP_ERR_CONFLICT);
	cr_assert_not_null(strstr(err->message, "changed while it was being mounted"), "%s", err->message);
	cr_assert_not_null(strstr(err->message, "nothing was mounted"), "%s", err->message);
	cp_error_freep(&err);
	cr_assert_eq(guard_mount_identity(link, &dev, &ino, &err), -1);
	cr_assert_eq(err->code, CP_ERR_CONFLICT);
	cp_error_freep(&err);
}

Test(mount_verify, runtime_verifiable)
{
	cr_assert(guard_mount_runtime_verifiable(NULL));
	cr_assert(guard_mount_runtime_verifiable(""));
	cr_assert(guard_mount_runtime_verifiable("runc"));
	cr_assert_not(guard_mount_runtime_verifiable("runsc"));
}

static void add_ws(struct store *s, const char *id, const char *path, const char *mode)
{
	struct workspace_record w = {.id = (char *)id, .mode = (char *)mode, .path = (char *)path, .created_at_ms = 1};
	struct cp_error *err = NULL;
	cr_assert_eq(store_workspace_insert(s, &w, &err), 0, "%s", err ? err->message : "");
}

Test(mount_verify, registry_nesting_and_stored_identity)
{
	char db[128];
	snprintf(db, sizeof(db), "%s/reg.sqlite", dir);
	struct store *s = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(store_open(db, &s, &err), 0, "%s", err ? err->message : "");
	add_ws(s, "ws_p", "/r/proj", "direct");
	add_ws(s, "ws_sub", "/r/proj/sub", "direct"); /* approved before the rule existed */

	/* Mount time of ws_sub: it lies inside ws_p. */
	cr_assert_eq(guard_host_nesting_check(s, "/r/proj/sub", "direct", "ws_sub", &err), -1);
	cr_assert_not_null(strstr(err->message, "ws_p"), "%s", err->message);
	cp_error_freep(&err);
	/* The same directory again (a reused workspace) is not a conflict. */
	cr_assert_eq(guard_host_nesting_check(s, "/r/other", "direct", NULL, &err), 0);

	struct sandbox_record row = {.id = "sbx_1",
	                             .workspace_id = "ws_p",
	                             .status = SANDBOX_CREATING,
	                             .container_name = "sbx_1",
	                             .image = "img",
	                             .network = 1,
	                             .created_at_ms = 1};
	cr_assert_eq(store_sandbox_insert(s, &row, &err), 0, "%s", err ? err->message : "");
	uint64_t dev = 0, ino = 0;
	cr_assert_eq(store_sandbox_get_mount_identity(s, "sbx_1", &dev, &ino, &err), 0);
	cr_assert_eq(store_sandbox_set_mount_identity(s, "sbx_1", 0xfe00, 1ULL << 40, &err), 0);
	cr_assert_eq(store_sandbox_get_mount_identity(s, "sbx_1", &dev, &ino, &err), 1);
	cr_assert_eq(dev, 0xfe00);
	cr_assert_eq(ino, 1ULL << 40);
	cr_assert_eq(store_sandbox_get_mount_identity(s, "sbx_none", &dev, &ino, &err), -1);
	cr_assert_eq(err->code, CP_ERR_NOT_FOUND);
	cp_error_freep(&err);
	store_free(s);
}

/* gVisor cannot verify mounts: a path on a bind mount of a subdirectory
 * (mountinfo root not "/") is refused; an ordinary directory passes. The
 * bind-mount half runs only where this process may mount (root). */
Test(mount_verify, alias_check_refuses_bind_mounted_subdirectories)
{
	struct cp_error *err = NULL;
	cr_assert_eq(guard_mount_alias_check(dir, &err), 0, "%s", err ? err->message : "");
	char src[128], dst[128];
	snprintf(src, sizeof(src), "%s/a/sub", dir);
	snprintf(dst, sizeof(dst), "%s/x", dir);
	cr_assert_eq(mkdir(dst, 0700), 0);
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/y && mount --bind %s %s 2>/dev/null", src, src, dst);
	if (system(cmd) != 0)
		return; /* not allowed to mount here: nothing more to check */
	char inside[160];
	snprintf(inside, sizeof(inside), "%s/y", dst);
	int r = guard_mount_alias_check(inside, &err);
	snprintf(cmd, sizeof(cmd), "umount %s", dst);
	cr_assert_eq(system(cmd), 0);
	cr_assert_eq(r, -1, "a path on a bind mount passed");
	cr_assert_eq(err->code, CP_ERR_DENIED);
	cr_assert_not_null(strstr(err->message, "bind mount"), "%s", err->message);
	cp_error_free(err);
}

/* A direct workspace that is the git directory itself: the repository's
 * config and hooks would be the sandbox's to rewrite. A ".git" component
 * and a bare repository are refused in direct mode, allowed in clone mode;
 * a working tree holding a .git is fine. */
Test(mount_verify, direct_mode_on_a_git_directory_is_refused)
{
	char db[128], tree[128], gitdir[160], bare[128], sub[256];
	snprintf(db, sizeof(db), "%s/reg.sqlite", dir);
	snprintf(tree, sizeof(tree), "%s/proj", dir);
	snprintf(gitdir, sizeof(gitdir), "%s/proj/.git", dir);
	snprintf(bare, sizeof(bare), "%s/bare.git", dir);
	struct store *s = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(store_open(db, &s, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(mkdir(tree, 0755), 0);
	cr_assert_eq(mkdir(gitdir, 0755), 0);
	cr_assert_eq(mkdir(bare, 0755), 0);
	const char *parts[] = {"objects", "refs"};
	for (size_t i = 0; i < 2; i++) {
		snprintf(sub, sizeof(sub), "%s/%s", bare, parts[i]);
		cr_assert_eq(mkdir(sub, 0755), 0);
	}
	snprintf(sub, sizeof(sub), "%s/HEAD", bare);
	FILE *f = fopen(sub, "w");
	cr_assert_not_null(f);
	fputs("ref: refs/heads/main\n", f);
	fclose(f);

	cr_assert_eq(guard_host_nesting_check(s, gitdir, "direct", NULL, &err), -1);
	cr_assert_eq(err->code, CP_ERR_DENIED);
	cr_assert(strstr(err->message, ".git directory"), "%s", err->message);
	cp_error_freep(&err);
	snprintf(sub, sizeof(sub), "%s/hooks", gitdir);
	cr_assert_eq(guard_host_nesting_check(s, sub, "direct", NULL, &err), -1, "below .git too");
	cp_error_freep(&err);
	cr_assert_eq(guard_host_nesting_check(s, bare, "direct", NULL, &err), -1);
	cr_assert(strstr(err->message, "bare repository"), "%s", err->message);
	cp_error_freep(&err);
	cr_assert_eq(guard_host_nesting_check(s, tree, "direct", NULL, &err), 0);
	cr_assert_eq(guard_host_nesting_check(s, gitdir, "clone", NULL, &err), 0);
	cr_assert_eq(guard_host_nesting_check(s, bare, "clone", NULL, &err), 0);
	snprintf(sub, sizeof(sub), "%s/proj/.github", dir);
	cr_assert_eq(guard_host_nesting_check(s, sub, "direct", NULL, &err), 0, "a lookalike name is fine");
	store_free(s);
}

static void add_ws_on(struct store *s, const char *node, const char *id, const char *path, const char *mode)
{
	struct workspace_record w = {
	    .id = (char *)id, .mode = (char *)mode, .path = (char *)path, .created_at_ms = 1, .node = (char *)node};
	struct cp_error *err = NULL;
	cr_assert_eq(store_workspace_insert(s, &w, &err), 0, "%s", err ? err->message : "");
}

/* Migration 0018: the nesting rule compares directories of one machine;
 * another node's /r/proj is not this machine's. */
Test(mount_verify, nesting_is_per_machine)
{
	char db[128];
	snprintf(db, sizeof(db), "%s/reg.sqlite", dir);
	struct store *s = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(store_open(db, &s, &err), 0, "%s", err ? err->message : "");
	add_ws_on(s, "n1", "ws_n1", "/r/proj", "direct");
	add_ws_on(s, "n1", "ws_kept", "/r/kept", "managed"); /* a volume there; its directory here */
	cr_expect_eq(guard_host_nesting_check(s, "/r/proj/sub", "direct", NULL, &err), 0,
	             "this machine's /r/proj/sub: %s", err ? err->message : "");
	cr_expect_eq(guard_node_nesting_check(s, "n1", "/r/proj/sub", "direct", NULL, &err), -1);
	cr_expect(err && strstr(err->message, "ws_n1") && strstr(err->message, "node 'n1'"), "%s",
	          err ? err->message : "");
	cp_error_freep(&err);
	cr_expect_eq(guard_node_nesting_check(s, "n2", "/r/proj/sub", "direct", NULL, &err), 0,
	             "n2 is another machine");
	cr_expect_eq(guard_node_nesting_check(s, "n1", "/r", "direct", NULL, &err), -1, "around n1's workspace");
	cp_error_freep(&err);
	cr_expect_eq(guard_node_nesting_check(s, "n1", "/r/proj", "direct", "ws_n1", &err), 0, "itself");
	/* A managed workspace kept on n1 is a volume there: its directory is
	 * this machine's, as before. */
	add_ws_on(s, "local", "ws_here", "/q/proj", "direct");
	cr_expect_eq(guard_host_nesting_check(s, "/r/kept/x", "clone", NULL, &err), 0, "%s", err ? err->message : "");
	cr_expect_eq(guard_host_nesting_check(s, "/q/proj/x", "clone", NULL, &err), -1);
	cp_error_freep(&err);
	cr_expect_eq(guard_node_nesting_check(s, "n1", "/q/proj/x", "direct", NULL, &err), 0);
	store_free(s);
}

/* Another node's sandbox has no helper mount (it is copied in); the judge
 * wants its workspace and the read-only .git only. */
Test(mount_verify, remote_mount_table_has_no_helper_mount)
{
	char db[128];
	snprintf(db, sizeof(db), "%s/reg.sqlite", dir);
	struct cp_error *err = NULL;
	struct config cfg = {0};
	struct guard_host h = {.cfg = &cfg};
	cr_assert_eq(store_open(db, &h.store, &err), 0, "%s", err ? err->message : "");
	struct sandbox_record s = {.id = "sbx_r", .node = "n1", .runtime = "runc"};
	struct sandbox_mount_record m = {.target = "/workspace/.git", .read_only = 1};
	const char *info = "1 0 8:1 / / rw - overlay overlay rw\n"
	                   "2 1 8:2 /srv/w/proj /workspace rw,relatime - ext4 /dev/sdb rw\n"
	                   "3 2 8:2 /srv/w/proj/.git /workspace/.git ro,relatime - ext4 /dev/sdb rw\n"
	                   "4 1 0:5 / /proc rw - proc proc rw\n";
	struct json_object *reply = json_object_new_object();
	json_object_object_add(reply, "mountinfo", json_object_new_string(info));
	cr_expect_eq(guard_mounts_judge(&h, &s, "direct", &m, 1, reply, &err), 0, "%s", err ? err->message : "");
	json_object_put(reply);
	/* The same table on this machine lacks the helper's mount. */
	s.node = "local";
	reply = json_object_new_object();
	json_object_object_add(reply, "mountinfo", json_object_new_string(info));
	cr_expect_eq(guard_mounts_judge(&h, &s, "direct", &m, 1, reply, &err), -1);
	cr_expect(err && strstr(err->message, "not a mount point"), "%s", err ? err->message : "");
	cp_error_freep(&err);
	json_object_put(reply);
	/* A read-write .git is refused on a node too. */
	s.node = "n1";
	const char *rw = "1 0 8:1 / / rw - overlay overlay rw\n"
	                 "2 1 8:2 /srv/w/proj /workspace rw - ext4 /dev/sdb rw\n"
	                 "3 2 8:2 /srv/w/proj/.git /workspace/.git rw - ext4 /dev/sdb rw\n";
	reply = json_object_new_object();
	json_object_object_add(reply, "mountinfo", json_object_new_string(rw));
	cr_expect_eq(guard_mounts_judge(&h, &s, "direct", &m, 1, reply, &err), -1);
	cr_expect(err && strstr(err->message, "read-write"), "%s", err ? err->message : "");
	cp_error_freep(&err);
	json_object_put(reply);
	store_free(h.store);
}
