/* test_lifecycle_export.c: the pieces of saved clone work that judge what a
 * sandbox hands over, without a sandbox: the bundle header parser (every
 * malformed or hostile header refused, with the name shown safely), ref
 * lists, the manifest round trip and its checks (a manifest can never aim a
 * ref outside refs/remotes/chat2sbx/<sandbox>/), and the retention of
 * exports (30 days, then the trash, never deleted). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "export/export.h"
#include "lifecycle/lifecycle.h"

#define O1 "1111111111111111111111111111111111111111"
#define O2 "2222222222222222222222222222222222222222"

static int parse(const char *text, struct export_bundle_header *h, char *msg, size_t size)
{
	struct cp_error *err = NULL;
	int r = export_bundle_parse(text, strlen(text), h, &err);
	if (r < 0) {
		snprintf(msg, size, "%s", err->message);
		cp_error_free(err);
	}
	return r;
}

Test(export_bundle, a_v2_and_a_v3_header)
{
	struct export_bundle_header h = {0};
	char msg[400] = "";
	cr_assert_eq(parse("# v2 git bundle\n-" O1 " base commit\n" O2 " refs/heads/main\n" O2 " HEAD\n\nPACK....", &h,
	                   msg, sizeof msg),
	             0, "%s", msg);
	cr_assert_eq(h.version, 2);
	cr_assert_eq(h.n_prereqs, 1);
	cr_assert_str_eq(h.prereqs[0], O1);
	cr_assert_eq(h.n_refs, 2);
	cr_assert_str_eq(h.refs[0].name, "refs/heads/main");
	cr_assert_eq(h.refs[0].kind, POLICY_REF_BRANCH);
	cr_assert_eq(h.refs[1].kind, POLICY_REF_HEAD);
	cr_assert_eq(h.header_len,
	             strlen("# v2 git bundle\n-" O1 " base commit\n" O2 " refs/heads/main\n" O2 " HEAD\n\n"));
	export_bundle_header_clear(&h);
	const char *sha256 = "# v3 git bundle\n@object-format=sha256\n"
	                     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa refs/tags/v1\n\nPACK";
	cr_assert_eq(parse(sha256, &h, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(h.oid_hex, 64);
	cr_assert_eq(h.refs[0].kind, POLICY_REF_TAG);
	export_bundle_header_clear(&h);
}

Test(export_bundle, hostile_headers_are_refused)
{
	struct {
		const char *text, *why;
	} bad[] = {
	    {"# v9 git bundle\n" O1 " refs/heads/a\n\nPACK", "signature"},
	    {"# v2 git bundle\n@filter=blob:none\n" O1 " refs/heads/a\n\nPACK", "capability out of place"},
	    {"# v3 git bundle\n@filter=blob:none\n" O1 " refs/heads/a\n\nPACK", "does not accept"},
	    {"# v2 git bundle\n" O1 " refs/notes/x\n\nPACK", "only HEAD"},
	    {"# v2 git bundle\n" O1 " refs/heads/a..b\n\nPACK", "\"..\""},
	    {"# v2 git bundle\n" O1 " refs/heads/\x1b[2J\n\nPACK", "control character"},
	    {"# v2 git bundle\n" O1 " refs/heads/a\n" O2 " refs/heads/a\n\nPACK", "a second time"},
	    {"# v2 git bundle\nZZZZ refs/heads/a\n\nPACK", "lowercase hex"},
	    {"# v2 git bundle\n" O1 "0 refs/heads/a\n\nPACK", "lowercase hex"},
	    {"# v2 git bundle\n-xyz comment\n" O1 " refs/heads/a\n\nPACK", "prerequisite"},
	    {"# v2 git bundle\n" O1 "\n\nPACK", "not \"<object id> <ref name>\""},
	    {"# v2 git bundle\n" O1 " refs/heads/a\n", "no end"},
	    {"# v2 git bundle\n" O1 " refs/heads/a\n\nJUNK", "no pack"},
	    {"# v2 git bundle\n\nPACK", "names no ref"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct export_bundle_header h = {0};
		char msg[400] = "";
		cr_assert_eq(parse(bad[i].text, &h, msg, sizeof msg), -1, "accepted: %s", bad[i].text);
		cr_assert(strstr(msg, bad[i].why), "case %zu: '%s' lacks '%s'", i, msg, bad[i].why);
		for (const char *p = msg; *p; p++)
			cr_assert((unsigned char)*p >= 0x20, "raw control byte in '%s'", msg);
		cr_assert_eq(h.n_refs, 0, "nothing is handed out on failure");
	}
}

Test(export_bundle, ref_lists)
{
	struct export_ref *refs = NULL;
	size_t n = 0;
	struct cp_error *err = NULL;
	const char *list = O1 " refs/heads/main\n" O2 " refs/tags/v1\n" O1 " refs/remotes/origin/main\n";
	cr_assert_eq(export_reflist_parse(list, strlen(list), 1, &refs, &n, &err), 0);
	cr_assert_eq(n, 2, "the approved repository's own other refs are skipped");
	export_refs_free(refs, n);
	cr_assert_eq(export_reflist_parse(list, strlen(list), 0, &refs, &n, &err), -1, "a sandbox's are refused");
	cr_assert(strstr(err->message, "refs/remotes/origin/main"));
	cp_error_freep(&err);
	cr_assert_eq(export_reflist_parse("", 0, 0, &refs, &n, &err), 0);
	cr_assert_eq(n, 0);
	export_refs_free(refs, n);
}

static struct export_manifest sample(void)
{
	struct export_manifest m = {0};
	m.export_id = strdup("exp_aaaaaaaaaaaaaaaaaaaa");
	m.sandbox_id = strdup("sbx_bbbbbbbbbbbbbbbbbbbb");
	m.workspace_id = strdup("ws_cccccccccccccccccccc");
	m.host_path = strdup("/home/u/repositories/p");
	m.kind = strdup("git");
	m.reason = strdup("destroy");
	m.fingerprint = strdup("ff");
	m.created_at_ms = 1700000000000LL;
	m.bytes = 1234;
	m.thin = 1;
	m.commits = 2;
	m.n_refs = 2;
	m.refs = calloc(2, sizeof(*m.refs));
	m.refs[0].ref.name = strdup("refs/heads/work");
	memcpy(m.refs[0].ref.oid, O1, 41);
	m.refs[0].ref.kind = POLICY_REF_BRANCH;
	m.refs[0].host_ref = strdup("refs/remotes/chat2sbx/sbx_bbbbbbbbbbbbbbbbbbbb/work");
	m.refs[0].in_bundle = 1;
	m.refs[0].new_commits = 2;
	m.refs[0].commits = json_tokener_parse("[{\"oid\":\"" O1 "\",\"subject\":\"a \\\\x1b subject\"}]");
	m.refs[0].files = json_tokener_parse("[\"w.txt\"]");
	m.refs[1].ref.name = strdup("refs/heads/HEAD");
	memcpy(m.refs[1].ref.oid, O2, 41);
	m.refs[1].ref.kind = POLICY_REF_BRANCH;
	memcpy(m.snapshot_oid, O2, 41);
	m.snapshot_file_count = 1;
	m.snapshot_files = json_tokener_parse("[{\"status\":\"M\",\"path\":\"a.txt\"}]");
	return m;
}

Test(export_manifest, round_trip)
{
	struct export_manifest m = sample();
	struct json_object *o = export_manifest_to_json(&m);
	struct export_manifest back = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(export_manifest_from_json(o, &back, &err), 0, "%s", err ? err->message : "");
	cr_assert_str_eq(back.export_id, m.export_id);
	cr_assert_str_eq(back.host_path, m.host_path);
	cr_assert_eq(back.created_at_ms, m.created_at_ms);
	cr_assert_eq(back.bytes, 1234);
	cr_assert_eq(back.thin, 1);
	cr_assert_eq(back.n_refs, 2);
	cr_assert_str_eq(back.refs[0].host_ref, m.refs[0].host_ref);
	cr_assert_null(back.refs[1].host_ref, "a colliding branch keeps no host ref");
	cr_assert_eq(back.refs[0].new_commits, 2);
	cr_assert_str_eq(back.snapshot_oid, O2);
	cr_assert_eq(json_object_array_length(back.snapshot_files), 1);
	const char *text = json_object_to_json_string(o);
	cr_assert(strstr(text, "2023-11-14T22:13:20"), "%s", text);
	export_manifest_clear(&back);
	json_object_put(o);
	export_manifest_clear(&m);
}

static void expect_refused(const char *field, const char *value, const char *why)
{
	struct export_manifest m = sample();
	struct json_object *o = export_manifest_to_json(&m);
	export_manifest_clear(&m);
	struct json_object *target = o;
	if (!strncmp(field, "refs.", 5)) {
		target = json_object_array_get_idx(json_object_object_get(o, "refs"), 0);
		field += 5;
	}
	json_object_object_add(target, field, value ? json_object_new_string(value) : json_object_new_int(99));
	struct export_manifest back = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(export_manifest_from_json(o, &back, &err), -1, "%s=%s accepted", field, value ? value : "99");
	cr_assert(strstr(err->message, why), "'%s' lacks '%s'", err->message, why);
	cp_error_free(err);
	json_object_put(o);
}

Test(export_manifest, a_manifest_cannot_aim_a_ref_elsewhere)
{
	expect_refused("refs.host_ref", "refs/heads/main", "somewhere else");
	expect_refused("refs.host_ref", "refs/remotes/chat2sbx/sbx_other/work", "somewhere else");
	expect_refused("refs.name", "refs/notes/x", "only HEAD");
	expect_refused("refs.oid", "not-an-oid", "not an object id");
	expect_refused("kind", "zip", "not git, tar or none");
	expect_refused("version", NULL, "version 99");
}

Test(export_manifest, load_refuses_a_symlink)
{
	char dir[] = "/tmp/c2s-manifest-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char path[128];
	snprintf(path, sizeof path, "%s/manifest.json", dir);
	cr_assert_eq(symlink("/etc/passwd", path), 0);
	struct export_manifest m = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(export_manifest_load(dir, &m, &err), -1);
	cp_error_free(err);
	unlink(path);
	rmdir(dir);
}

/* ---- retention ---- */

static char root[64];

static struct config cfg_for(const char *data_root)
{
	struct config c = {0};
	c.data_root = (char *)data_root;
	return c;
}

Test(export_retention, old_exports_move_to_the_trash_and_are_never_deleted)
{
	snprintf(root, sizeof root, "/tmp/c2s-ret-XXXXXX");
	cr_assert_not_null(mkdtemp(root));
	struct config cfg = cfg_for(root);
	char db[128];
	snprintf(db, sizeof db, "%s/reg.sqlite", root);
	struct store *st = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(store_open(db, &st, &err), 0);
	struct workspace_record w = {.id = "ws_a", .mode = "clone", .path = "/tmp/x", .created_at_ms = 1};
	cr_assert_eq(store_workspace_insert(st, &w, &err), 0);
	const int64_t day = 24LL * 3600 * 1000, now = 100 * day;
	const char *ids[] = {"exp_old", "exp_young"};
	int64_t created[] = {now - 31 * day, now - 29 * day};
	char paths[2][256];
	for (int i = 0; i < 2; i++) {
		char *p = NULL;
		int fd = -1;
		cr_assert_eq(export_dir_open(&cfg, "sbx_s", ids[i], &p, &fd, &err), 0, "%s", err ? err->message : "");
		snprintf(paths[i], sizeof paths[i], "%s", p);
		char bundle[300];
		snprintf(bundle, sizeof bundle, "%s/bundle", p);
		FILE *f = fopen(bundle, "w");
		fputs("data", f);
		fclose(f);
		close(fd);
		struct export_record x = {.id = (char *)ids[i],
		                          .sandbox_id = "sbx_s",
		                          .workspace_id = "ws_a",
		                          .kind = "git",
		                          .reason = "destroy",
		                          .path = p,
		                          .created_at_ms = created[i]};
		cr_assert_eq(store_export_insert(st, &x, &err), 0);
		free(p);
	}
	struct stat sb;
	char exports[128];
	snprintf(exports, sizeof exports, "%s/exports", root);
	cr_assert_eq(stat(exports, &sb), 0);
	cr_assert_eq(sb.st_mode & 0777, 0700, "DATA_ROOT/exports is private");
	cr_assert_eq(export_retention_run(&cfg, st, now, WORKSPACE_RETENTION_MS, &err), 1);
	struct export_record x = {0};
	cr_assert_eq(store_export_get(st, "exp_old", &x, &err), 0);
	char want[256];
	snprintf(want, sizeof want, "%s/trash/exp_old", root);
	cr_assert_str_eq(x.path, want);
	cr_assert_eq(x.trashed_at_ms, now);
	snprintf(want, sizeof want, "%s/trash/exp_old/bundle", root);
	cr_assert_eq(access(want, R_OK), 0, "moved, not deleted");
	cr_assert_eq(access(paths[0], F_OK), -1);
	export_record_clear(&x);
	cr_assert_eq(store_export_get(st, "exp_young", &x, &err), 0);
	cr_assert_str_eq(x.path, paths[1]);
	cr_assert_eq(x.trashed_at_ms, 0);
	export_record_clear(&x);
	cr_assert_eq(export_retention_run(&cfg, st, now + day / 2, WORKSPACE_RETENTION_MS, &err), 0,
	             "a trashed export stays put");
	cr_assert_eq(export_retention_run(&cfg, st, now + 2 * day, WORKSPACE_RETENTION_MS, &err), 1,
	             "the young one, once 30 days old");
	char sbxdir[128];
	snprintf(sbxdir, sizeof sbxdir, "%s/exports/sbx_s", root);
	cr_assert_eq(access(sbxdir, F_OK), -1, "the sandbox's directory goes when empty");
	store_free(st);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", root);
	cr_assert_eq(system(cmd), 0);
}

Test(export_dirs, a_symlinked_level_is_refused)
{
	char r[] = "/tmp/c2s-dirs-XXXXXX";
	cr_assert_not_null(mkdtemp(r));
	char link[128];
	snprintf(link, sizeof link, "%s/exports", r);
	cr_assert_eq(symlink("/tmp", link), 0);
	struct config cfg = cfg_for(r);
	char *p = NULL;
	int fd = -1;
	struct cp_error *err = NULL;
	cr_assert_eq(export_dir_open(&cfg, "sbx_s", "exp_e", &p, &fd, &err), -1);
	cr_assert_eq(err->code, CP_ERR_DENIED, "%s", err->message);
	cp_error_free(err);
	unlink(link);
	rmdir(r);
}
