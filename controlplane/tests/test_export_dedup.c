/* test_export_dedup.c: a save with nothing new keeps no second bundle
 * (export_dedup.c, issue 23 point 4). The pure decision: a branch renamed,
 * HEAD moved, a tag on a saved commit share the earlier bundle, with each
 * ref mapped to the name the shared file's header carries and its details
 * copied; a new object, a new snapshot, a header that does not carry an
 * object, an unknown commit count keep the ordinary save. Then with real
 * git: the previous export's very bundle file is hard-linked (only when it
 * is the file it saved, never through a symlink), the manifest and
 * registry say what is shared, and `export apply` of the sharing export
 * brings the renamed branch home. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/json_file.h"
#include "export/export.h"

#define O1 "1111111111111111111111111111111111111111"
#define O2 "2222222222222222222222222222222222222222"
#define O3 "3333333333333333333333333333333333333333"
#define O4 "4444444444444444444444444444444444444444"
#define O5 "5555555555555555555555555555555555555555"
#define O9 "9999999999999999999999999999999999999999"
#define SBX "sbx_bbbbbbbbbbbbbbbbbbbb"
#define EXP1 "exp_aaaaaaaaaaaaaaaaaaaa"
#define EXP2 "exp_cccccccccccccccccccc"

static void add_ref(struct export_manifest *m, const char *name, const char *oid, enum policy_ref_kind kind,
                    int in_bundle, int64_t new_commits, const char *commits_json)
{
	struct export_manifest_ref *r = &m->refs[m->n_refs++];
	r->ref.name = strdup(name);
	memcpy(r->ref.oid, oid, 41);
	r->ref.kind = kind;
	r->in_bundle = in_bundle;
	r->new_commits = new_commits;
	r->commits = commits_json ? json_tokener_parse(commits_json) : NULL;
	r->files = commits_json ? json_tokener_parse("[\"f.txt\"]") : NULL;
}

/* A git export's manifest of sandbox SBX with room for 8 refs. */
static struct export_manifest manifest_of(const char *id, int64_t bytes, int64_t commits)
{
	struct export_manifest m = {.bytes = bytes, .commits = commits};
	m.export_id = strdup(id);
	m.sandbox_id = strdup(SBX);
	m.workspace_id = strdup("ws_dddddddddddddddddddd");
	m.reason = strdup("checkpoint");
	m.kind = strdup("git");
	m.refs = calloc(8, sizeof(*m.refs));
	return m;
}

/* main (O1, 2 new commits), work (O2, 1), HEAD at main, the snapshot O4,
 * tag v1 at an approved-repository commit (O5, not in the bundle). */
static struct export_manifest prev_manifest(void)
{
	struct export_manifest m = manifest_of(EXP1, 4242, 3);
	m.thin = 1;
	add_ref(&m, "refs/heads/main", O1, POLICY_REF_BRANCH, 1, 2,
	        "[{\"oid\":\"" O1 "\",\"subject\":\"b\"},{\"oid\":\"" O3 "\",\"subject\":\"a\"}]");
	add_ref(&m, "refs/heads/work", O2, POLICY_REF_BRANCH, 1, 1, "[{\"oid\":\"" O2 "\",\"subject\":\"w\"}]");
	add_ref(&m, "HEAD", O1, POLICY_REF_HEAD, 1, 2,
	        "[{\"oid\":\"" O1 "\",\"subject\":\"b\"},{\"oid\":\"" O3 "\",\"subject\":\"a\"}]");
	add_ref(&m, POLICY_SNAPSHOT_REF, O4, POLICY_REF_SNAPSHOT, 1, 0, NULL);
	add_ref(&m, "refs/tags/v1", O5, POLICY_REF_TAG, 0, 0, "[]");
	memcpy(m.snapshot_oid, O4, 41);
	m.snapshot_file_count = 1;
	m.snapshot_files = json_tokener_parse("[{\"status\":\"M\",\"path\":\"a.txt\"}]");
	return m;
}

static struct export_bundle_header header_of(const char *text)
{
	struct export_bundle_header h = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(export_bundle_parse(text, strlen(text), &h, &err), 0, "%s", err ? err->message : "");
	return h;
}

#define PREV_HEADER                                                                                                    \
	"# v2 git bundle\n-" O5 " base\n" O1 " refs/heads/main\n" O2 " refs/heads/work\n" O1 " HEAD\n" O4              \
	" " POLICY_SNAPSHOT_REF "\n\nPACK"

static struct export_ref *list_of(const char *text, size_t *n)
{
	struct export_ref *refs = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(export_reflist_parse(text, strlen(text), 0, &refs, n, &err), 0, "%s", err ? err->message : "");
	return refs;
}

static const struct export_manifest_ref *ref_named(const struct export_manifest *m, const char *name)
{
	for (size_t i = 0; i < m->n_refs; i++)
		if (!strcmp(m->refs[i].ref.name, name))
			return &m->refs[i];
	cr_assert_fail("no ref %s", name);
	return NULL;
}

Test(export_dedup, a_renamed_branch_shares_the_bundle_under_the_earlier_name)
{
	struct export_manifest prev = prev_manifest(), m = {0};
	struct export_bundle_header h = header_of(PREV_HEADER);
	size_t n = 0;
	struct export_ref *list =
	    list_of(O1 " refs/heads/main\n" O2 " refs/heads/renamed\n" O1 " HEAD\n" O5 " refs/tags/v1\n" O1
	               " refs/tags/new-on-main\n" O4 " " POLICY_SNAPSHOT_REF "\n",
	            &n);
	const char *why = NULL;
	cr_assert_eq(export_dedup_plan(&prev, &h, list, n, SBX, &m, &why), 1, "%s", why ? why : "");
	cr_assert_str_eq(m.kind, "git");
	cr_assert_str_eq(m.shares_bundle_of, EXP1);
	cr_assert_eq(m.bytes, 4242);
	cr_assert_eq(m.thin, 1);
	cr_assert_eq(m.n_refs, n);
	const struct export_manifest_ref *r = ref_named(&m, "refs/heads/renamed");
	cr_assert_eq(r->in_bundle, 1);
	cr_assert_str_eq(r->bundle_ref, "refs/heads/work", "fetched under the name the shared file carries");
	cr_assert_str_eq(r->host_ref, "refs/remotes/chat2sbx/" SBX "/renamed");
	cr_assert_eq(r->new_commits, 1);
	cr_assert_eq(json_object_array_length(r->commits), 1);
	r = ref_named(&m, "refs/heads/main");
	cr_assert_null(r->bundle_ref, "the same name needs no mapping");
	r = ref_named(&m, "refs/tags/new-on-main");
	cr_assert_eq(r->in_bundle, 1);
	cr_assert_str_eq(r->bundle_ref, "refs/heads/main");
	r = ref_named(&m, "refs/tags/v1");
	cr_assert_eq(r->in_bundle, 0, "an approved-repository commit stays an update-ref, as before");
	cr_assert_str_eq(m.snapshot_oid, O4);
	cr_assert_eq(m.snapshot_file_count, 1);
	cr_assert_eq(m.commits, 3, "the union of O1, O3 and O2");
	/* Through the manifest file and back: the mapping is kept and judged. */
	m.export_id = strdup(EXP2);
	m.sandbox_id = strdup(SBX);
	m.workspace_id = strdup("ws_dddddddddddddddddddd");
	m.reason = strdup("checkpoint");
	struct json_object *o = export_manifest_to_json(&m);
	struct export_manifest back = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(export_manifest_from_json(o, &back, &err), 0, "%s", err ? err->message : "");
	cr_assert_str_eq(back.shares_bundle_of, EXP1);
	cr_assert_str_eq(ref_named(&back, "refs/heads/renamed")->bundle_ref, "refs/heads/work");
	export_manifest_clear(&back);
	json_object_put(o);
	export_manifest_clear(&m);
	export_refs_free(list, n);
	export_bundle_header_clear(&h);
	export_manifest_clear(&prev);
}

Test(export_dedup, anything_new_or_unprovable_keeps_the_ordinary_save)
{
	struct export_manifest prev = prev_manifest();
	struct {
		const char *list, *header, *why;
	} cases[] = {
	    {O1 " refs/heads/main\n" O9 " refs/heads/new\n", PREV_HEADER, "does not hold"},
	    {O1 " refs/heads/main\n" O9 " " POLICY_SNAPSHOT_REF "\n", PREV_HEADER, "does not hold"},
	    {O1 " refs/heads/main\n" O2 " " POLICY_SNAPSHOT_REF "\n", PREV_HEADER, "does not hold"},
	    {O4 " refs/heads/at-the-snapshot\n", PREV_HEADER, "does not hold"},
	    {O2 " refs/heads/renamed\n", "# v2 git bundle\n" O1 " refs/heads/main\n\nPACK", "does not carry"},
	    {"", PREV_HEADER, "no ref"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct export_bundle_header h = header_of(cases[i].header);
		size_t n = 0;
		struct export_ref *list = list_of(cases[i].list, &n);
		struct export_manifest m = {0};
		const char *why = NULL;
		cr_assert_eq(export_dedup_plan(&prev, &h, list, n, SBX, &m, &why), 0, "case %zu shared", i);
		cr_assert(why && strstr(why, cases[i].why), "case %zu: %s", i, why ? why : "(none)");
		cr_assert_null(m.refs, "nothing handed out");
		export_refs_free(list, n);
		export_bundle_header_clear(&h);
	}
	free(prev.kind);
	prev.kind = strdup("tar");
	struct export_bundle_header h = header_of(PREV_HEADER);
	size_t n = 0;
	struct export_ref *list = list_of(O1 " refs/heads/main\n", &n);
	struct export_manifest m = {0};
	const char *why = NULL;
	cr_assert_eq(export_dedup_plan(&prev, &h, list, n, SBX, &m, &why), 0);
	export_refs_free(list, n);
	export_bundle_header_clear(&h);
	export_manifest_clear(&prev);
}

Test(export_dedup, a_cut_commit_list_shares_only_when_the_tips_are_the_same_set)
{
	struct export_manifest prev = prev_manifest();
	/* work has 500 new commits; the manifest kept one. */
	prev.refs[1].new_commits = 500;
	prev.commits = 502;
	free(prev.shares_bundle_of);
	prev.shares_bundle_of = strdup(EXP2);
	struct export_bundle_header h = header_of(PREV_HEADER);
	size_t n = 0;
	struct export_ref *list = list_of(O2 " refs/heads/renamed\n", &n);
	struct export_manifest m = {0};
	const char *why = NULL;
	cr_assert_eq(export_dedup_plan(&prev, &h, list, n, SBX, &m, &why), 0, "a subset: the count is not known");
	cr_assert(strstr(why, "not known"), "%s", why);
	export_refs_free(list, n);
	list = list_of(O1 " refs/heads/main\n" O2 " refs/heads/renamed\n" O1 " HEAD\n" O5 " refs/tags/v1\n", &n);
	cr_assert_eq(export_dedup_plan(&prev, &h, list, n, SBX, &m, &why), 1, "%s", why ? why : "");
	cr_assert_eq(m.commits, 502, "the same tips: the earlier count");
	cr_assert_str_eq(m.shares_bundle_of, EXP2, "the export that wrote the file, never a chain");
	cr_assert_str_eq(m.snapshot_oid, "", "no snapshot now");
	export_manifest_clear(&m);
	export_refs_free(list, n);
	export_bundle_header_clear(&h);
	export_manifest_clear(&prev);
}

Test(export_dedup, a_manifest_cannot_carry_a_hostile_mapping)
{
	struct export_manifest prev = prev_manifest();
	struct json_object *o = export_manifest_to_json(&prev);
	struct json_object *r0 = json_object_array_get_idx(json_object_object_get(o, "refs"), 0);
	json_object_object_add(r0, "bundle_ref", json_object_new_string("refs/notes/x"));
	struct export_manifest back = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(export_manifest_from_json(o, &back, &err), -1);
	cr_assert(strstr(err->message, "only HEAD"), "%s", err->message);
	cp_error_freep(&err);
	json_object_object_add(r0, "bundle_ref", json_object_new_string("refs/heads/ok"));
	json_object_object_add(o, "shares_bundle_of", json_object_new_string("../../etc"));
	cr_assert_eq(export_manifest_from_json(o, &back, &err), -1);
	cr_assert(strstr(err->message, "not an export id"), "%s", err->message);
	cp_error_free(err);
	json_object_put(o);
	export_manifest_clear(&prev);
}

/* ---- with real git ---- */

static char root[64];

static void sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
}

static char *out_of(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	FILE *p = popen(cmd, "r");
	static char buf[4096];
	size_t n = fread(buf, 1, sizeof buf - 1, p);
	buf[n] = '\0';
	pclose(p);
	while (n && buf[n - 1] == '\n')
		buf[--n] = '\0';
	return buf;
}

#define GIT "git -c user.name=t -c user.email=t@t -c init.defaultBranch=main"

/* A host repository, a full bundle of main and work (the earlier save) in
 * exports/SBX/EXP1 with its manifest, and the registry rows. */
static void earlier_save(struct store **ret_store, char *oid_work)
{
	snprintf(root, sizeof root, "/tmp/c2s-dedup-XXXXXX");
	cr_assert_not_null(mkdtemp(root));
	sh(GIT " init -q %s/repo && cd %s/repo && echo a > a && git add a && " GIT " commit -qm one", root, root);
	sh("cd %s/repo && " GIT " checkout -qb work && echo w > w && git add w && " GIT
	   " commit -qm work && git checkout -q main",
	   root);
	snprintf(oid_work, 41, "%s", out_of("git -C %s/repo rev-parse work", root));
	char oid_main[41];
	snprintf(oid_main, sizeof oid_main, "%s", out_of("git -C %s/repo rev-parse main", root));
	sh("mkdir -p %s/data/exports/" SBX "/" EXP1 " && cd %s/repo && git bundle create -q %s/data/exports/" SBX
	   "/" EXP1 "/bundle main work HEAD",
	   root, root, root);
	struct stat st;
	char bundle[200];
	snprintf(bundle, sizeof bundle, "%s/data/exports/" SBX "/" EXP1 "/bundle", root);
	cr_assert_eq(stat(bundle, &st), 0);
	struct export_manifest m = manifest_of(EXP1, st.st_size, 2);
	char c1[200], c2[200];
	snprintf(c1, sizeof c1, "[{\"oid\":\"%s\",\"subject\":\"one\"}]", oid_main);
	snprintf(c2, sizeof c2, "[{\"oid\":\"%s\",\"subject\":\"work\"},{\"oid\":\"%s\",\"subject\":\"one\"}]",
	         oid_work, oid_main);
	add_ref(&m, "refs/heads/main", oid_main, POLICY_REF_BRANCH, 1, 1, c1);
	add_ref(&m, "refs/heads/work", oid_work, POLICY_REF_BRANCH, 1, 2, c2);
	add_ref(&m, "HEAD", oid_main, POLICY_REF_HEAD, 1, 1, c1);
	for (size_t i = 0; i < m.n_refs; i++) {
		char host[300];
		struct cp_error *e = NULL;
		cr_assert_eq(policy_ref_map(m.refs[i].ref.name, SBX, host, sizeof host, &e), 0);
		m.refs[i].host_ref = strdup(host);
	}
	char dir[200];
	snprintf(dir, sizeof dir, "%s/data/exports/" SBX "/" EXP1, root);
	char mpath[300];
	snprintf(mpath, sizeof mpath, "%s/manifest.json", dir);
	struct json_object *o = export_manifest_to_json(&m);
	struct cp_error *err = NULL;
	cr_assert_eq(json_file_write_atomic(mpath, o, &err), 0);
	json_object_put(o);
	export_manifest_clear(&m);
	char db[200];
	snprintf(db, sizeof db, "%s/reg.sqlite", root);
	cr_assert_eq(store_open(db, ret_store, &err), 0);
	char repo[200];
	snprintf(repo, sizeof repo, "%s/repo", root);
	struct workspace_record w = {
	    .id = "ws_dddddddddddddddddddd", .mode = "clone", .path = repo, .host_path = repo, .created_at_ms = 1};
	cr_assert_eq(store_workspace_insert(*ret_store, &w, &err), 0);
	struct export_record x = {.id = EXP1,
	                          .sandbox_id = SBX,
	                          .workspace_id = w.id,
	                          .kind = "git",
	                          .reason = "checkpoint",
	                          .path = dir,
	                          .bytes = st.st_size,
	                          .created_at_ms = 1};
	cr_assert_eq(store_export_insert(*ret_store, &x, &err), 0);
}

/* The earlier save, and a new save whose sandbox lists only work, renamed:
 * its list and its new export directory. */
struct renamed {
	struct store *st;
	char oid_work[41];
	struct export_record last;
	struct export_ref *list;
	size_t n;
	int dfd;
};

static void renamed_begin(struct renamed *c)
{
	earlier_save(&c->st, c->oid_work);
	struct cp_error *err = NULL;
	cr_assert_eq(store_export_last(c->st, SBX, &c->last, &err), 0);
	char text[300], dir[200];
	snprintf(text, sizeof text, "%s refs/heads/renamed\n", c->oid_work);
	c->list = list_of(text, &c->n);
	snprintf(dir, sizeof dir, "%s/data/exports/" SBX "/" EXP2, root);
	cr_assert_eq(mkdir(dir, 0700), 0);
	c->dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

static void renamed_end(struct renamed *c)
{
	export_refs_free(c->list, c->n);
	export_record_clear(&c->last);
	close(c->dfd);
	store_free(c->st);
	sh("rm -rf %s", root);
}

Test(export_dedup, the_earlier_file_is_linked_and_apply_brings_the_renamed_branch_home)
{
	struct renamed c = {0};
	renamed_begin(&c);
	struct cp_error *err = NULL;
	struct export_manifest m = {0};
	cr_assert_eq(export_dedup_try(&c.last, 1, c.list, c.n, SBX, c.dfd, &m), 1);
	struct stat a, b;
	char p1[300], p2[300];
	snprintf(p1, sizeof p1, "%s/bundle", c.last.path);
	snprintf(p2, sizeof p2, "%s/data/exports/" SBX "/" EXP2 "/bundle", root);
	cr_assert_eq(stat(p1, &a), 0);
	cr_assert_eq(stat(p2, &b), 0);
	cr_assert_eq(a.st_ino, b.st_ino, "one file, two names: no second copy");
	cr_assert_eq(b.st_nlink, 2);
	cr_assert_str_eq(m.shares_bundle_of, EXP1);

	/* The new export as the save keeps it, then apply. */
	char dir[300];
	snprintf(dir, sizeof dir, "%s/data/exports/" SBX "/" EXP2, root);
	m.export_id = strdup(EXP2);
	m.sandbox_id = strdup(SBX);
	m.workspace_id = strdup("ws_dddddddddddddddddddd");
	m.reason = strdup("checkpoint");
	char mpath[400];
	snprintf(mpath, sizeof mpath, "%s/manifest.json", dir);
	struct json_object *o = export_manifest_to_json(&m);
	cr_assert_eq(json_file_write_atomic(mpath, o, &err), 0);
	json_object_put(o);
	struct export_record x = {.id = EXP2,
	                          .sandbox_id = SBX,
	                          .workspace_id = "ws_dddddddddddddddddddd",
	                          .kind = "git",
	                          .reason = "checkpoint",
	                          .path = dir,
	                          .bytes = m.bytes,
	                          .created_at_ms = 2,
	                          .shares_bundle_of = m.shares_bundle_of};
	cr_assert_eq(store_export_insert(c.st, &x, &err), 0);
	/* The earlier export goes to the trash: the link keeps the file whole. */
	char moved[300];
	snprintf(moved, sizeof moved, "%s/trash-exp1", root);
	cr_assert_eq(rename(c.last.path, moved), 0);
	struct export_apply_result res = {0};
	struct config cfg = {.save_memory_bytes = 1LL << 30, .max_export_bytes = 1LL << 30};
	int r = export_apply(&cfg, c.st, EXP2, NULL, &res, &err);
	cr_assert_eq(r, 0, "%s", err ? err->message : "");
	cr_assert_str_eq(out_of("git -C %s/repo rev-parse refs/remotes/chat2sbx/" SBX "/renamed", root), c.oid_work);
	cr_assert_str_eq(out_of("git -C %s/repo for-each-ref --format='%%(refname)' refs/remotes/chat2sbx/", root),
	                 "refs/remotes/chat2sbx/" SBX "/renamed", "only the renamed branch, under its new name");
	export_apply_result_clear(&res);
	export_manifest_clear(&m);
	renamed_end(&c);
}

Test(export_dedup, only_the_file_the_earlier_export_saved_is_linked)
{
	struct renamed c = {0};
	renamed_begin(&c);
	struct cp_error *err = NULL;
	char bundle[300], elsewhere[300];
	snprintf(bundle, sizeof bundle, "%s/bundle", c.last.path);
	snprintf(elsewhere, sizeof elsewhere, "%s/elsewhere", root);
	struct export_manifest m = {0};
	/* A thin earlier bundle needs the approved repository: not while it
	 * is away. */
	struct export_manifest prev = {0};
	cr_assert_eq(export_manifest_load(c.last.path, &prev, &err), 0);
	prev.thin = 1;
	char mpath[300];
	snprintf(mpath, sizeof mpath, "%s/manifest.json", c.last.path);
	struct json_object *o = export_manifest_to_json(&prev);
	cr_assert_eq(json_file_write_atomic(mpath, o, &err), 0);
	json_object_put(o);
	cr_assert_eq(export_dedup_try(&c.last, 0, c.list, c.n, SBX, c.dfd, &m), 0, "thin, the repository away");
	prev.thin = 0;
	o = export_manifest_to_json(&prev);
	cr_assert_eq(json_file_write_atomic(mpath, o, &err), 0);
	json_object_put(o);
	export_manifest_clear(&prev);
	cr_assert_eq(rename(bundle, elsewhere), 0);
	cr_assert_eq(symlink(elsewhere, bundle), 0);
	cr_assert_eq(export_dedup_try(&c.last, 1, c.list, c.n, SBX, c.dfd, &m), 0, "never through a symlink");
	cr_assert_eq(unlink(bundle), 0);
	sh("cp %s %s && echo x >> %s", elsewhere, bundle, bundle);
	cr_assert_eq(export_dedup_try(&c.last, 1, c.list, c.n, SBX, c.dfd, &m), 0, "not the size it saved");
	cr_assert_eq(rename(elsewhere, bundle), 0);
	free(c.last.kind);
	c.last.kind = strdup("tar");
	cr_assert_eq(export_dedup_try(&c.last, 1, c.list, c.n, SBX, c.dfd, &m), 0, "not a git export");
	struct stat sb;
	char p2[300];
	snprintf(p2, sizeof p2, "%s/data/exports/" SBX "/" EXP2 "/bundle", root);
	cr_assert_eq(stat(p2, &sb), -1, "nothing was linked");
	cr_assert_null(m.refs);
	free(c.last.kind);
	c.last.kind = strdup("git");
	cr_assert_eq(export_dedup_try(&c.last, 1, c.list, c.n, SBX, c.dfd, &m), 1, "the real file again");
	export_manifest_clear(&m);
	renamed_end(&c);
}
