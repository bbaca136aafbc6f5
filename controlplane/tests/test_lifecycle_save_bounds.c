/* test_lifecycle_save_bounds.c: the bounds of host work on a save (issue
 * 23), attacked. The delta bomb (ops_delta_bomb_pack: real ids, so git
 * resolves it) is refused by the pack check, and fed to host git without
 * the check it dies at the memory ceiling with its peak under it (and a
 * small bomb under a large ceiling passes, so the pack is real); too many
 * new refs are refused before git; saves of one sandbox wait for each
 * other and give up at their deadline; at most two verifications run at
 * once; the orphan sweep removes what killed saves left and nothing else;
 * the one-walk details keep a hostile file name a file name. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/clock.h"
#include "base/id.h"
#include "export/export.h"
#include "ops/ops.h"
#include "pack_builder.h"

static char root[64];

static void setup(void)
{
	snprintf(root, sizeof root, "/tmp/c2s-bounds-XXXXXX");
	cr_assert_not_null(mkdtemp(root));
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", root);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(save_bounds, .init = setup, .fini = teardown, .timeout = 120);

static char *new_id(const char *prefix)
{
	char *id = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(id_new(prefix, &id, &err), 0);
	return id;
}

Test(save_bounds, the_bomb_is_refused_by_the_check_and_stopped_by_the_ceiling_without_it)
{
	unsigned char *pack = NULL;
	size_t len = 0;
	ops_delta_bomb_pack(12, 64 << 10, &pack, &len); /* 256 MiB at the top */
	cr_expect_lt(len, 4096, "a small pack: %zu bytes", len);
	int fd = pack_tmpfile(pack, len);
	/* The check, with a 256 MiB ceiling: a 128 MiB result is over its quarter. */
	struct export_pack_limits lim = export_pack_limits_for(256ull << 20, 2ull << 30, 40);
	struct cp_error *err = NULL;
	cr_assert_eq(export_pack_check_fd(fd, &lim, NULL, &err), -1);
	cr_expect_eq(err->code, CP_ERR_LIMIT);
	cr_expect(strstr(err->message, "per-object bound of 64.0 MiB"), "%s", err->message);
	cp_error_free(err);
	err = NULL;
	/* Host git alone, at a 64 MiB ceiling: stopped there, never past it. */
	cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
	long peak = 0;
	int64_t t0 = clock_monotonic_ms();
	cr_assert_eq(export_index_unchecked(fd, 64ull << 20, &peak, &err), -1);
	cr_expect_eq(err->code, CP_ERR_LIMIT, "%s", err->message);
	cr_expect(strstr(err->message, "memory ceiling of 64 MiB") && strstr(err->message, "SAVE_MEMORY"), "%s",
	          err->message);
	cr_expect_gt(peak, 0);
	cr_expect_leq(peak, 64 * 1024, "peak %ld KiB", peak);
	cr_expect_lt(clock_monotonic_ms() - t0, 60000);
	cp_error_free(err);
	err = NULL;
	close(fd);
	free(pack);
	/* The same shape, small, under a large ceiling: git takes it whole,
	 * so the refusal above was the ceiling's and the pack is real. */
	ops_delta_bomb_pack(3, 64 << 10, &pack, &len);
	fd = pack_tmpfile(pack, len);
	cr_expect_eq(export_index_unchecked(fd, 1ull << 30, &peak, &err), 0, "%s", err ? err->message : "");
	cp_error_free(err);
	close(fd);
	free(pack);
}

static struct export_ref *refs_n(size_t n, const char *prefix)
{
	struct export_ref *v = calloc(n + 1, sizeof(*v));
	for (size_t i = 0; i < n; i++) {
		char name[64];
		snprintf(name, sizeof name, "refs/heads/%s%zu", prefix, i);
		v[i].name = strdup(name);
		memset(v[i].oid, 'a', 40);
		v[i].kind = POLICY_REF_BRANCH;
	}
	return v;
}

Test(save_bounds, too_many_new_refs_are_refused_before_git)
{
	/* 600 branches the approved repository never had: refused, naming
	 * the bound; no scratch repository was made (no git ran). */
	struct export_ref *list = refs_n(600, "b");
	struct export_verify_in in = {.dir = root, .list = list, .n_list = 600, .sandbox_id = "sbx_t"};
	struct export_manifest m = {0};
	int missing = 0;
	struct cp_error *err = NULL;
	cr_assert_eq(export_verify_git(&in, &m, &missing, &err), -1);
	cr_expect_eq(err->code, CP_ERR_LIMIT);
	cr_expect(strstr(err->message, "600 branches") && strstr(err->message, "at most 500"), "%s", err->message);
	cr_expect(strstr(err->message, "keeps its work"), "%s", err->message);
	cp_error_free(err);
	err = NULL;
	char scratch[128];
	snprintf(scratch, sizeof scratch, "%s/.scratch", root);
	cr_expect_eq(access(scratch, F_OK), -1, "no git ran");
	/* The same 600 as the approved repository had them: nothing new, so
	 * the bound does not apply (it fails later, at git, on fake ids). */
	in.base = list;
	in.n_base = 600;
	cr_assert_eq(export_verify_git(&in, &m, &missing, &err), -1);
	cr_expect_neq(err->code, CP_ERR_LIMIT, "%s", err->message);
	cp_error_free(err);
	export_manifest_clear(&m);
	export_refs_free(list, 600);
}

/* ---- turns ---- */

struct holder {
	struct config *cfg;
	const char *sandbox_id;
	int64_t hold_ms;
	int64_t started, ended;
	int rc;
};

static void *hold_slot(void *arg)
{
	struct holder *h = arg;
	struct export_slot *slot = NULL;
	struct cp_error *err = NULL;
	h->rc = export_save_slot_take(h->cfg, h->sandbox_id, clock_monotonic_ms() + 10000, &slot, &err);
	h->started = clock_monotonic_ms();
	if (h->rc == 0) {
		usleep((useconds_t)h->hold_ms * 1000);
		h->ended = clock_monotonic_ms();
		export_save_slot_release(slot);
	}
	cp_error_free(err);
	return NULL;
}

Test(save_bounds, saves_of_one_sandbox_take_turns_and_give_up_at_their_deadline)
{
	struct config cfg = {.data_root = root};
	_cleanup_free_ char *a = new_id("sbx_"), *b = new_id("sbx_");
	struct holder h[3] = {{.cfg = &cfg, .sandbox_id = a, .hold_ms = 300},
	                      {.cfg = &cfg, .sandbox_id = a, .hold_ms = 300},
	                      {.cfg = &cfg, .sandbox_id = b, .hold_ms = 300}};
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, hold_slot, &h[i]);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(h[i].rc, 0);
	/* The two saves of a did not overlap; b ran beside them. */
	int first = h[0].started < h[1].started ? 0 : 1;
	cr_expect_geq(h[1 - first].started, h[first].ended, "saves of one sandbox overlapped");
	cr_expect_lt(h[2].started, h[first].ended + 100, "another sandbox's save waited");
	/* Held by another process (the flock): a deadline in 300 ms ends the wait. */
	char dir[200];
	snprintf(dir, sizeof dir, "%s/exports/%s", root, a);
	cr_expect_eq(access(dir, F_OK), -1, "a save that kept nothing leaves no directory");
	struct export_slot *slot = NULL;
	struct cp_error *err = NULL;
	int fd = -1;
	cr_assert_eq(export_dir_open_sandbox(&cfg, a, &fd, &err), 0);
	cr_assert_eq(flock(fd, LOCK_EX), 0);
	int64_t t0 = clock_monotonic_ms();
	cr_assert_eq(export_save_slot_take(&cfg, a, t0 + 300, &slot, &err), -1);
	cr_expect_eq(err->code, CP_ERR_TIMEOUT);
	cr_expect_geq(clock_monotonic_ms() - t0, 300);
	cp_error_free(err);
	err = NULL;
	close(fd);
	cr_assert_eq(export_save_slot_take(&cfg, a, clock_monotonic_ms() + 300, &slot, &err), 0);
	export_save_slot_release(slot);
}

static int in_turn, most_in_turn;
static pthread_mutex_t turn_lock = PTHREAD_MUTEX_INITIALIZER;

static void *take_turn(void *arg)
{
	(void)arg;
	struct cp_error *err = NULL;
	cr_assert_eq(export_verify_turn_take(clock_monotonic_ms() + 10000, &err), 0);
	pthread_mutex_lock(&turn_lock);
	if (++in_turn > most_in_turn)
		most_in_turn = in_turn;
	pthread_mutex_unlock(&turn_lock);
	usleep(100000);
	pthread_mutex_lock(&turn_lock);
	in_turn--;
	pthread_mutex_unlock(&turn_lock);
	export_verify_turn_release();
	return NULL;
}

Test(save_bounds, at_most_two_verifications_at_once)
{
	pthread_t t[5];
	for (int i = 0; i < 5; i++)
		pthread_create(&t[i], NULL, take_turn, NULL);
	for (int i = 0; i < 5; i++)
		pthread_join(t[i], NULL);
	cr_expect_eq(most_in_turn, EXPORT_VERIFY_AT_ONCE);
	/* Both turns held: the next gives up at its deadline. */
	struct cp_error *err = NULL;
	cr_assert_eq(export_verify_turn_take(clock_monotonic_ms() + 1000, &err), 0);
	cr_assert_eq(export_verify_turn_take(clock_monotonic_ms() + 1000, &err), 0);
	cr_assert_eq(export_verify_turn_take(clock_monotonic_ms() + 200, &err), -1);
	cr_expect_eq(err->code, CP_ERR_TIMEOUT);
	cr_expect(strstr(err->message, "2 saves at a time"), "%s", err->message);
	cp_error_free(err);
	export_verify_turn_release();
	export_verify_turn_release();
}

/* ---- the orphan sweep ---- */

static void touch(const char *path)
{
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f, "%s", path);
	fputs("x", f);
	fclose(f);
}

Test(save_bounds, the_sweep_removes_what_killed_saves_left_and_nothing_else)
{
	struct config cfg = {.data_root = root};
	char db[128];
	snprintf(db, sizeof db, "%s/reg.sqlite", root);
	struct store *st = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(store_open(db, &st, &err), 0);
	struct workspace_record w = {.id = "ws_a", .mode = "clone", .path = "/tmp/x", .created_at_ms = 1};
	cr_assert_eq(store_workspace_insert(st, &w, &err), 0);
	_cleanup_free_ char *s1 = new_id("sbx_"), *s2 = new_id("sbx_"), *s3 = new_id("sbx_");
	_cleanup_free_ char *orphan = new_id("exp_"), *kept = new_id("exp_"), *busy = new_id("exp_");
	char *p = NULL;
	int fd = -1;
	/* s1: an orphan with a partial bundle, a kept export with leftovers. */
	cr_assert_eq(export_dir_open(&cfg, s1, orphan, &p, &fd, &err), 0);
	char path[400];
	snprintf(path, sizeof path, "%s/bundle.partial", p);
	touch(path);
	close(fd);
	free(p);
	cr_assert_eq(export_dir_open(&cfg, s1, kept, &p, &fd, &err), 0);
	snprintf(path, sizeof path, "%s/bundle", p);
	touch(path);
	snprintf(path, sizeof path, "%s/workspace.tar.partial", p);
	touch(path);
	struct export_record x = {.id = kept,
	                          .sandbox_id = s1,
	                          .workspace_id = "ws_a",
	                          .kind = "git",
	                          .reason = "destroy",
	                          .path = p,
	                          .created_at_ms = 1};
	cr_assert_eq(store_export_insert(st, &x, &err), 0);
	char kept_dir[300];
	snprintf(kept_dir, sizeof kept_dir, "%s", p);
	close(fd);
	free(p);
	/* A symlink named like an export, aimed at a directory of ours. */
	char target[200], link[300];
	snprintf(target, sizeof target, "%s/target", root);
	cr_assert_eq(mkdir(target, 0700), 0);
	snprintf(path, sizeof path, "%s/keep-me", target);
	touch(path);
	_cleanup_free_ char *linked = new_id("exp_");
	snprintf(link, sizeof link, "%s/exports/%s/%s", root, s1, linked);
	cr_assert_eq(symlink(target, link), 0);
	/* Something that is not ours by name. */
	char stranger[300];
	snprintf(stranger, sizeof stranger, "%s/exports/%s/notes", root, s1);
	cr_assert_eq(mkdir(stranger, 0700), 0);
	/* s2: a save in flight (its flock held): untouched. */
	struct export_slot *slot = NULL;
	cr_assert_eq(export_save_slot_take(&cfg, s2, clock_monotonic_ms() + 1000, &slot, &err), 0);
	cr_assert_eq(export_dir_open(&cfg, s2, busy, &p, &fd, &err), 0);
	char busy_dir[300];
	snprintf(busy_dir, sizeof busy_dir, "%s", p);
	close(fd);
	free(p);
	/* s3: an empty sandbox directory. */
	cr_assert_eq(export_dir_open_sandbox(&cfg, s3, &fd, &err), 0);
	close(fd);

	int n = export_orphans_run(&cfg, st, &err);
	cr_assert_geq(n, 0, "%s", err ? err->message : "");
	char orphan_dir[300];
	snprintf(orphan_dir, sizeof orphan_dir, "%s/exports/%s/%s", root, s1, orphan);
	cr_expect_eq(access(orphan_dir, F_OK), -1, "the orphan is gone");
	snprintf(path, sizeof path, "%s/bundle", kept_dir);
	cr_expect_eq(access(path, F_OK), 0, "a kept export stays");
	snprintf(path, sizeof path, "%s/workspace.tar.partial", kept_dir);
	cr_expect_eq(access(path, F_OK), -1, "its leftover partial is gone");
	cr_expect_eq(access(link, F_OK), -1, "the link is removed as a link");
	snprintf(path, sizeof path, "%s/keep-me", target);
	cr_expect_eq(access(path, F_OK), 0, "nothing was followed through it");
	cr_expect_eq(access(stranger, F_OK), 0, "names not ours are left alone");
	cr_expect_eq(access(busy_dir, F_OK), 0, "a save in flight is never touched");
	snprintf(path, sizeof path, "%s/exports/%s", root, s3);
	cr_expect_eq(access(path, F_OK), -1, "an empty sandbox directory goes");
	export_save_slot_release(slot);
	/* Its save done (no row: it failed), the next pass takes it. */
	cr_assert_geq(export_orphans_run(&cfg, st, &err), 1);
	cr_expect_eq(access(busy_dir, F_OK), -1);
	store_free(st);
}

/* ---- one walk ---- */

Test(save_bounds, the_walk_keeps_a_hostile_file_name_a_file_name)
{
	/* Three commits, newest first: c3 (parent c2) touching a file named
	 * like a commit line, c2 (parent c1, outside the walk) touching two,
	 * and c9 on another branch. */
#define C1 "1111111111111111111111111111111111111111"
#define C2 "2222222222222222222222222222222222222222"
#define C3 "3333333333333333333333333333333333333333"
#define C9 "9999999999999999999999999999999999999999"
	static const char text[] = "\x01" C3 " " C2 "\x1fthird \x1b[31m\0"
	                           "\n:100644 100644 aaa bbb M\0\x01" C9 " " C1 "\x1f"
	                           "fake\0"
	                           "\x01" C2 " " C1 "\x1fsecond\0"
	                           "\n:000000 100644 000 ccc A\0a.txt\0:000000 100644 000 ddd A\0b.txt\0"
	                           "\x01" C9 " " C1 "\x1fside\0";
	char *out = malloc(sizeof(text));
	memcpy(out, text, sizeof(text));
	struct export_walk *w = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(export_walk_parse(out, sizeof(text) - 1, 100, &w, &err), 0, "%s", err ? err->message : "");
	cr_expect_eq(export_walk_commits(w), 3);
	struct export_manifest_ref r = {.ref = {.name = "refs/heads/main", .oid = C3}};
	export_walk_ref_details(w, &r, 1);
	cr_expect_eq(r.new_commits, 2);
	cr_expect_str_eq(json_object_to_json_string_ext(r.files, JSON_C_TO_STRING_PLAIN),
	                 "[\"\\\\x01" C9 " " C1 "\\\\x1ffake\",\"a.txt\",\"b.txt\"]");
	const char *subject =
	    json_object_get_string(json_object_object_get(json_object_array_get_idx(r.commits, 0), "subject"));
	cr_expect_str_eq(subject, "third \\x1b[31m", "control bytes escaped");
	struct export_manifest_ref side = {.ref = {.name = "refs/heads/side", .oid = C9}};
	export_walk_ref_details(w, &side, 2);
	cr_expect_eq(side.new_commits, 1);
	struct export_manifest_ref old = {.ref = {.name = "refs/heads/old", .oid = C1}};
	export_walk_ref_details(w, &old, 3);
	cr_expect_eq(old.new_commits, 0, "a commit outside the walk is nothing new");
	json_object_put(r.commits);
	json_object_put(r.files);
	json_object_put(side.commits);
	json_object_put(side.files);
	json_object_put(old.commits);
	json_object_put(old.files);
	export_walk_free(w);
	/* Cut at two commits: said. */
	memcpy(out, text, sizeof(text));
	cr_assert_eq(export_walk_parse(out, sizeof(text) - 1, 2, &w, &err), 0);
	cr_expect_eq(export_walk_truncated(w), 1);
	export_walk_free(w);
	/* Not the walk's format. */
	char junk[] = "hello\0";
	cr_expect_eq(export_walk_parse(junk, sizeof(junk) - 1, 10, &w, &err), -1);
	cp_error_free(err);
	free(out);
}

Test(save_bounds, export_apply_checks_the_pack_before_its_fetch)
{
	/* A saved bundle whose pack is the bomb: export apply's check (before
	 * git fetch inflates it in the person's repository) refuses it. */
	export_git_configure(256ull << 20, 2ull << 30); /* per-object bound 64 MiB */
	unsigned char *pack = NULL;
	size_t len = 0;
	ops_delta_bomb_pack(12, 64 << 10, &pack, &len);
	char path[128];
	snprintf(path, sizeof path, "%s/bundle", root);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fprintf(f, "# v2 git bundle\n%040d refs/heads/main\n\n", 1);
	cr_assert_eq(fwrite(pack, 1, len, f), len);
	fclose(f);
	free(pack);
	struct cp_error *err = NULL;
	cr_assert_eq(export_bundle_check(path, &err), -1);
	cr_expect_eq(err->code, CP_ERR_LIMIT);
	cr_expect(strstr(err->message, "before the host ran git") && strstr(err->message, "nothing was changed") &&
	              strstr(err->message, "per-object bound of 64.0 MiB"),
	          "%s", err->message);
	cp_error_free(err);
}
