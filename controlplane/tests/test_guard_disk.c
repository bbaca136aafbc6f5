/* test_guard_disk.c: the free-space guard (issue 23 item 4). The
 * decisions alone (disk_decide.c) with canned numbers: when a disk is low
 * or watched, which sandbox is paused on one disk and on two, growth below
 * the slack, a first look, an unmeasurable sandbox, the unexplained loss.
 * Then whole passes (disk_guard.c, disk_watch.c) against the fake engine
 * with canned free space: the writer is paused and its call told why, the
 * others keep running, all resume once space is back; a layer measurement
 * that times out, a volume, a grown /etc/hosts and directories the
 * engine's count misses are attacks that must end paused. (A save's own
 * check at every chunk is export_space.c's, tested in test_policy_saves.c.) */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "guard/disk_internal.h"
#include "lifecycle_fixture.h"

#define MIB ((int64_t)1024 * 1024)

/* ---- the decisions ---- */

static struct disk_fs fs_at(unsigned roles, int64_t avail_mib, int64_t watermark_mib)
{
	struct disk_fs f = {
	    .roles = roles, .avail = avail_mib * MIB, .watermark = watermark_mib * MIB, .prev_avail = -1};
	disk_fs_judge(&f);
	return f;
}

static struct disk_part part(int fs, enum disk_size state, int64_t bytes_mib, int64_t base_mib)
{
	return (struct disk_part){
	    .fs = fs, .state = state, .bytes = bytes_mib * MIB, .last = base_mib * MIB, .base = base_mib * MIB};
}

TestSuite(disk_decide, .timeout = 10);

Test(disk_decide, low_watch_and_resume_room)
{
	struct disk_fs f = fs_at(DISK_ROLE_DATA, 99, 100);
	cr_expect(f.low && f.watch);
	f.avail = 104 * MIB; /* above the watermark, not by the room (10 MiB) */
	disk_fs_judge(&f);
	cr_expect(f.low, "stays low until back above the watermark plus room");
	f.avail = 110 * MIB;
	disk_fs_judge(&f);
	cr_expect(!f.low);
	cr_expect(f.watch, "within the band (64 MiB) above the watermark: measured");
	f.avail = 170 * MIB;
	disk_fs_judge(&f);
	cr_expect(!f.watch, "far above: not measured");
	/* Falling 250 MiB a period: the band widens to twice that. */
	f.prev_avail = 750 * MIB;
	f.avail = 500 * MIB;
	disk_fs_judge(&f);
	cr_expect(f.watch, "a fast fall is watched %lld MiB early", (long long)(disk_watch_band(&f) / MIB));
	cr_expect_eq(disk_resume_room(100 * MIB), 10 * MIB);
	cr_expect_eq(disk_resume_room(1), MIB);
	cr_expect_eq(disk_resume_room(4096 * MIB), 64 * MIB);
}

Test(disk_decide, one_disk_pauses_layer_and_workspace_writers)
{
	struct disk_fs fs[1] = {fs_at(DISK_ROLE_DATA | DISK_ROLE_ENGINE, 90, 100)};
	struct disk_part layer_grew[2] = {part(0, DISK_SIZE_KNOWN, 500, 100), part(0, DISK_SIZE_KNOWN, 5, 5)};
	cr_expect_eq(disk_judge_sandbox(fs, 1, layer_grew, 2), DISK_PAUSE_GREW, "dd into /tmp");
	struct disk_part ws_grew[2] = {part(0, DISK_SIZE_KNOWN, 100, 100), part(0, DISK_SIZE_KNOWN, 50, 5)};
	cr_expect_eq(disk_judge_sandbox(fs, 1, ws_grew, 2), DISK_PAUSE_GREW, "a managed workspace writer");
	struct disk_part idle[2] = {part(0, DISK_SIZE_KNOWN, 100, 100), part(0, DISK_SIZE_KNOWN, 5, 5)};
	cr_expect_eq(disk_judge_sandbox(fs, 1, idle, 2), DISK_KEEP);
	struct disk_part slack[2] = {part(0, DISK_SIZE_KNOWN, 100, 100), part(-1, DISK_SIZE_NONE, 0, -1)};
	slack[0].bytes += DISK_GROWTH_SLACK;
	cr_expect_eq(disk_judge_sandbox(fs, 1, slack, 2), DISK_KEEP, "a few log lines are not writing");
	slack[0].bytes += 1;
	cr_expect_eq(disk_judge_sandbox(fs, 1, slack, 2), DISK_PAUSE_GREW);
	struct disk_part unknown[2] = {part(0, DISK_SIZE_UNKNOWN, 0, 100), part(0, DISK_SIZE_KNOWN, 5, 5)};
	cr_expect_eq(disk_judge_sandbox(fs, 1, unknown, 2), DISK_PAUSE_UNMEASURED, "a slow walk is no hiding place");
	struct disk_part both[2] = {part(0, DISK_SIZE_UNKNOWN, 0, 100), part(0, DISK_SIZE_KNOWN, 50, 5)};
	cr_expect_eq(disk_judge_sandbox(fs, 1, both, 2), DISK_PAUSE_GREW, "the plainer reason wins");
	struct disk_part first[2] = {part(0, DISK_SIZE_KNOWN, 500, -1), part(0, DISK_SIZE_KNOWN, 5, -1)};
	cr_expect_eq(disk_judge_sandbox(fs, 1, first, 2), DISK_KEEP, "a first look is a base, not growth");
	/* Above the watermark nothing is paused, however fast it grows. */
	fs[0] = fs_at(DISK_ROLE_DATA | DISK_ROLE_ENGINE, 120, 100);
	cr_expect(fs[0].watch && !fs[0].low);
	cr_expect_eq(disk_judge_sandbox(fs, 1, layer_grew, 2), DISK_KEEP);
	cr_expect_eq(disk_judge_sandbox(fs, 1, unknown, 2), DISK_KEEP);
}

Test(disk_decide, two_disks_pause_only_writers_to_the_low_one)
{
	/* fs 0: the data root (workspaces), fs 1: the engine's data (layers). */
	struct disk_fs fs[2] = {fs_at(DISK_ROLE_DATA, 90, 100), fs_at(DISK_ROLE_ENGINE, 5000, 100)};
	struct disk_part layer_grew[2] = {part(1, DISK_SIZE_KNOWN, 500, 100), part(0, DISK_SIZE_KNOWN, 5, 5)};
	struct disk_part ws_grew[2] = {part(1, DISK_SIZE_KNOWN, 100, 100), part(0, DISK_SIZE_KNOWN, 50, 5)};
	struct disk_part layer_unknown[2] = {part(1, DISK_SIZE_UNKNOWN, 0, 100), part(0, DISK_SIZE_KNOWN, 5, 5)};
	cr_expect_eq(disk_judge_sandbox(fs, 2, layer_grew, 2), DISK_KEEP, "its layer is on the roomy disk");
	cr_expect_eq(disk_judge_sandbox(fs, 2, ws_grew, 2), DISK_PAUSE_GREW);
	cr_expect_eq(disk_judge_sandbox(fs, 2, layer_unknown, 2), DISK_KEEP);
	fs[0] = fs_at(DISK_ROLE_DATA, 5000, 100);
	fs[1] = fs_at(DISK_ROLE_ENGINE, 90, 100);
	cr_expect_eq(disk_judge_sandbox(fs, 2, layer_grew, 2), DISK_PAUSE_GREW);
	cr_expect_eq(disk_judge_sandbox(fs, 2, ws_grew, 2), DISK_KEEP, "its workspace is on the roomy disk");
	cr_expect_eq(disk_judge_sandbox(fs, 2, layer_unknown, 2), DISK_PAUSE_UNMEASURED);
	/* A direct workspace on neither watched disk is nobody's concern here. */
	struct disk_part elsewhere[2] = {part(1, DISK_SIZE_KNOWN, 100, 100), part(-1, DISK_SIZE_NONE, 0, -1)};
	cr_expect_eq(disk_judge_sandbox(fs, 2, elsewhere, 2), DISK_KEEP);
}

Test(disk_decide, base_follows_until_low_and_holds_while_low)
{
	struct disk_fs fs[1] = {fs_at(DISK_ROLE_ENGINE, 150, 100)};
	struct disk_part p = part(0, DISK_SIZE_KNOWN, 10, -1);
	disk_part_advance(fs, 1, &p);
	cr_expect_eq(p.base, 10 * MIB);
	p.bytes = 40 * MIB;
	cr_expect_eq(disk_part_growth(&p), 30 * MIB);
	disk_part_advance(fs, 1, &p);
	cr_expect_eq(p.base, 40 * MIB, "not low: the base follows");
	fs[0] = fs_at(DISK_ROLE_ENGINE, 90, 100);
	/* A slow writer: under the slack each period, over it in sum. */
	for (int i = 1; i <= 3; i++) {
		p.bytes = 40 * MIB + i * (DISK_GROWTH_SLACK / 2);
		enum disk_verdict v = disk_judge_sandbox(fs, 1, &p, 1);
		cr_expect_eq(v, i < 3 ? DISK_KEEP : DISK_PAUSE_GREW, "period %d", i);
		disk_part_advance(fs, 1, &p);
		cr_expect_eq(p.base, 40 * MIB, "low: the base holds");
	}
	p.state = DISK_SIZE_UNKNOWN;
	disk_part_advance(fs, 1, &p);
	cr_expect_eq(p.base, 40 * MIB);
	p.state = DISK_SIZE_NONE;
	disk_part_advance(fs, 1, &p);
	cr_expect(p.base == -1 && p.last == -1, "not measured: forgotten, no stale base later");
	/* A sparse file's size going away is no growth. */
	struct disk_part shrink = part(0, DISK_SIZE_KNOWN, 10, 5000);
	cr_expect_eq(disk_part_growth(&shrink), 0);
}

Test(disk_decide, unexplained_loss_on_the_engine_disk)
{
	struct disk_fs f = fs_at(DISK_ROLE_DATA | DISK_ROLE_ENGINE, 400, 400);
	f.watched_before = 1;
	f.prev_avail = 400 * MIB;
	int64_t lost = 0;
	cr_expect_eq(disk_unexplained_limit(400 * MIB), 100 * MIB);
	cr_expect_eq(disk_unexplained_limit(40 * MIB), 64 * MIB);
	/* 60 MiB gone, 10 of them measured growth: 50 unexplained. */
	f.avail = 340 * MIB;
	disk_fs_judge(&f);
	cr_expect_eq(disk_unexplained_add(&f, 10 * MIB, &lost), 0);
	cr_expect_eq(f.unexplained, 50 * MIB);
	/* Sparse files: more growth than loss never builds credit. */
	f.prev_avail = f.avail;
	cr_expect_eq(disk_unexplained_add(&f, 900 * MIB, &lost), 0);
	cr_expect_eq(f.unexplained, 0);
	/* Directories: 4 KiB each, no growth at all in SizeRw. */
	for (int i = 0; i < 3; i++) {
		f.prev_avail = f.avail;
		f.avail -= 40 * MIB;
		disk_fs_judge(&f);
		int over = disk_unexplained_add(&f, 0, &lost);
		cr_expect_eq(over, i == 2, "pass %d: %lld MiB", i, (long long)(f.unexplained / MIB));
	}
	cr_expect_eq(lost, 120 * MIB);
	cr_expect_eq(f.unexplained, 0, "reset after it fired");
	/* A period with no measurement at its start says nothing. */
	f.watched_before = 0;
	f.prev_avail = f.avail + 500 * MIB;
	cr_expect_eq(disk_unexplained_add(&f, 0, &lost), 0);
	cr_expect_eq(f.unexplained, 0);
	/* Only the engine's disk: a data-only disk's workspaces are walked by
	 * blocks, directories included. */
	struct disk_fs d = fs_at(DISK_ROLE_DATA, 10, 400);
	d.watched_before = 1;
	d.prev_avail = 2000 * MIB;
	cr_expect_eq(disk_unexplained_add(&d, 0, &lost), 0);
	/* Not low: nothing accumulates. */
	struct disk_fs e = fs_at(DISK_ROLE_ENGINE, 600, 400);
	e.watched_before = 1;
	e.prev_avail = 2000 * MIB;
	cr_expect_eq(disk_unexplained_add(&e, 0, &lost), 0);
	cr_expect_eq(e.unexplained, 0);
}

/* ---- whole passes against the fake engine ---- */

/* Canned free space per watched path. */
static struct {
	char path[2][256];
	int64_t avail[2];
} space;

static int fake_space(const char *path, int64_t *ret_total, int64_t *ret_avail)
{
	for (int i = 0; i < 2; i++)
		if (!strcmp(path, space.path[i])) {
			*ret_total = 10000 * MIB;
			*ret_avail = space.avail[i];
			return 0;
		}
	return -1;
}

/* Inspect replies written at run time into the fixture's directory, so a
 * test can change SizeRw between passes and point HostsPath at a file of
 * its own; fake_read_fixture reads "<tests>/data/docker/<name>", and enough
 * "../" from there reach the root. */
static char fixture_a[600], fixture_b[600];
static void fixture_name(char *buf, size_t size, const char *file)
{
	size_t n = 0;
	for (int i = 0; i < 48; i++)
		n += (size_t)snprintf(buf + n, size - n, "../");
	snprintf(buf + n, size - n, "%s/%s", fx.root + 1, file);
}

/* The inspect answer of file: SizeRw, a volume mount when volume is set,
 * HostsPath when hosts is not NULL. */
static void inspect_reply(const char *file, int64_t size_rw, int volume, const char *hosts)
{
	char path[300];
	snprintf(path, sizeof(path), "%s/%s", fx.root, file);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fprintf(f,
	        "HTTP/1.1 200 OK\nContent-Type: application/json\n\n"
	        "{\"Id\":\"c0ffee\",\"State\":{\"Status\":\"running\",\"Running\":true,\"Paused\":false},"
	        "\"SizeRw\":%lld,\"Mounts\":[{\"Type\":\"bind\",\"Source\":\"/x\",\"Destination\":\"/workspace\"}%s]",
	        (long long)size_rw, volume ? ",{\"Type\":\"volume\",\"Name\":\"v\"}" : "");
	if (hosts)
		fprintf(f, ",\"HostsPath\":\"%s\"", hosts);
	fprintf(f, "}");
	fclose(f);
}

static struct fake_route routes[] = {
    {"GET", "/version", {.fixture = "version.http"}},
    {"GET", "/containers/sbx_a/json", {.fixture = fixture_a}},
    {"GET", "/containers/sbx_b/json", {.fixture = fixture_b}},
    {"POST", "/pause", {.fixture = "start_ok.http"}},
    {"POST", "/unpause", {.fixture = "start_ok.http"}},
};

static struct guard_disk *guard;

static void sandbox(const char *id, const char *ws)
{
	char dir[300];
	snprintf(dir, sizeof(dir), "%s/%s", fx.ws_root, ws);
	cr_assert_eq(mkdir(dir, 0700), 0);
	lc_fixture_workspace(ws, "managed", dir, 1);
	struct cp_error *err = NULL;
	struct sandbox_record s = {.id = (char *)id,
	                           .workspace_id = (char *)ws,
	                           .status = SANDBOX_RUNNING,
	                           .container_name = (char *)id,
	                           .container_id = (char *)id,
	                           .image = "img",
	                           .created_at_ms = 1};
	cr_assert_eq(store_sandbox_insert(fx.store, &s, &err), 0, "%s", err ? err->message : "");
}

/* Two running sandboxes with managed workspaces, SizeRw 10 MiB each, a
 * watermark of 100 MiB; engine_dir NULL: one disk (the data root holds
 * the engine's data too), else the engine's data is there. */
static void start(const char *engine_dir)
{
	lc_fixture_init("disk");
	fx.cfg.min_free_disk_bytes = 100 * MIB;
	fixture_name(fixture_a, sizeof(fixture_a), "a.http");
	fixture_name(fixture_b, sizeof(fixture_b), "b.http");
	inspect_reply("a.http", 10 * MIB, 0, NULL);
	inspect_reply("b.http", 10 * MIB, 0, NULL);
	lc_fixture_start(routes, sizeof(routes) / sizeof(routes[0]));
	sandbox("sbx_a", "ws_a");
	sandbox("sbx_b", "ws_b");
	guard = disk_guard_new(&fx.lc->host, fake_space);
	snprintf(space.path[0], sizeof(space.path[0]), "%s", fx.data_root);
	snprintf(space.path[1], sizeof(space.path[1]), "%s", engine_dir ? engine_dir : "");
	space.avail[0] = space.avail[1] = 5000 * MIB;
	cr_assert_eq(disk_guard_add_fs(guard, fx.data_root, DISK_ROLE_DATA), 0);
	cr_assert_eq(disk_guard_add_fs(guard, engine_dir ? engine_dir : fx.data_root, DISK_ROLE_ENGINE), 0);
	cr_assert_eq(guard->n_fs, engine_dir ? 2u : 1u);
	fx.lc->disk = guard;
}

static void teardown(void)
{
	if (fx.lc)
		fx.lc->disk = NULL;
	disk_guard_free(guard);
	guard = NULL;
	lc_fixture_teardown();
}

TestSuite(disk_guard, .fini = teardown, .timeout = 30);

static void pass_at(int64_t data_mib, int64_t engine_mib)
{
	space.avail[0] = data_mib * MIB;
	space.avail[1] = engine_mib * MIB;
	disk_guard_pass(guard);
}

static size_t pauses(const char *id)
{
	char p[64];
	snprintf(p, sizeof(p), "/containers/%s/pause", id);
	return fake_count("POST", p);
}

static void expect_paused_because(const char *id, const char *part)
{
	char reason[700] = "";
	cr_assert(lifecycle_disk_paused(fx.lc, id, reason, sizeof(reason)), "%s paused", id);
	cr_expect(strstr(reason, part) != NULL, "%s: %s", id, reason);
	cr_log_info("%s: %s", id, reason);
}

static void write_file(const char *path, size_t bytes)
{
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	char buf[65536] = {1};
	for (size_t n = 0; n < bytes; n += sizeof(buf))
		cr_assert_eq(fwrite(buf, 1, sizeof(buf), f), sizeof(buf));
	fclose(f);
}

Test(disk_guard, one_disk_pauses_the_layer_writer_and_resumes_it)
{
	start(NULL);
	cr_expect_str_eq(guard->fs[0].what, "the data root and the engine's data");
	pass_at(5000, 5000);
	cr_expect_eq(fake_count("GET", "size=1"), 0, "far from low: nothing is measured");
	pass_at(150, 150);
	cr_expect_eq(fake_count("GET", "/containers/sbx_a/json?size=1"), 1, "near low: measured");
	cr_expect_eq(fake_count("GET", "/containers/sbx_b/json?size=1"), 1);
	inspect_reply("a.http", 70 * MIB, 0, NULL); /* dd into /tmp */
	pass_at(90, 90);
	cr_expect_eq(pauses("sbx_a"), 1);
	cr_expect_eq(pauses("sbx_b"), 0, "the idle one keeps running");
	expect_paused_because("sbx_a", "the disk holding the data root and the engine's data");
	expect_paused_because("sbx_a", "below the 100 MiB minimum (CHAT2SBX_MIN_FREE_DISK); it kept writing");
	cr_expect(!lifecycle_disk_paused(fx.lc, "sbx_b", NULL, 0));
	struct cp_error *err = NULL;
	cr_expect_eq(lifecycle_disk_check_create(fx.lc, &err), -1);
	cr_expect_eq(err->code, CP_ERR_LIMIT);
	cp_error_free(err);
	err = NULL;
	/* Still low: the paused one is not measured (it cannot write). */
	pass_at(80, 80);
	cr_expect_eq(fake_count("GET", "/containers/sbx_a/json?size=1"), 2);
	cr_expect_eq(pauses("sbx_a"), 1);
	/* Above the watermark but not by the room: still paused. */
	pass_at(105, 105);
	cr_expect_eq(fake_count("POST", "/unpause"), 0);
	pass_at(400, 400);
	cr_expect_eq(fake_count("POST", "/containers/sbx_a/unpause"), 1);
	cr_expect_eq(fake_count("POST", "/unpause"), 1);
	cr_expect(!lifecycle_disk_paused(fx.lc, "sbx_a", NULL, 0));
	cr_expect_eq(lifecycle_disk_check_create(fx.lc, &err), 0);
	/* The audit trail. */
	int64_t pause = 0, unpause = 0;
	cr_assert_eq(store_audit_count(fx.store, "sandbox.pause", &pause, &err), 0);
	cr_assert_eq(store_audit_count(fx.store, "sandbox.unpause", &unpause, &err), 0);
	cr_expect(pause == 1 && unpause == 1, "pause %lld unpause %lld", (long long)pause, (long long)unpause);
}

Test(disk_guard, one_disk_pauses_a_workspace_writer)
{
	start(NULL);
	pass_at(150, 150);
	char big[400];
	snprintf(big, sizeof(big), "%s/ws_b/big", fx.ws_root);
	write_file(big, 3 * MIB);
	pass_at(90, 90);
	cr_expect_eq(pauses("sbx_b"), 1);
	cr_expect_eq(pauses("sbx_a"), 0);
}

Test(disk_guard, two_disks_engine_low_pauses_layer_writers_only)
{
	start("/proc"); /* any other filesystem: only its st_dev matters */
	cr_expect_str_eq(guard->fs[0].what, "the data root");
	cr_expect_str_eq(guard->fs[1].what, "the engine's data");
	pass_at(5000, 150);
	char big[400];
	snprintf(big, sizeof(big), "%s/ws_b/big", fx.ws_root);
	write_file(big, 3 * MIB); /* on the roomy data disk */
	inspect_reply("a.http", 70 * MIB, 0, NULL);
	pass_at(5000, 90);
	cr_expect_eq(pauses("sbx_a"), 1);
	cr_expect_eq(pauses("sbx_b"), 0, "its workspace is on the disk with room");
	expect_paused_because("sbx_a", "the disk holding the engine's data ('/proc')");
}

Test(disk_guard, two_disks_data_low_pauses_workspace_writers_only)
{
	start("/proc");
	pass_at(150, 5000);
	cr_expect_eq(fake_count("GET", "size=1"), 0, "the engine's disk has room: layers are not measured");
	char big[400];
	snprintf(big, sizeof(big), "%s/ws_b/big", fx.ws_root);
	write_file(big, 3 * MIB);
	inspect_reply("a.http", 70 * MIB, 0, NULL);
	pass_at(90, 5000);
	cr_expect_eq(pauses("sbx_b"), 1);
	cr_expect_eq(pauses("sbx_a"), 0);
	expect_paused_because("sbx_b", "the disk holding the data root (");
}

Test(disk_guard, a_measurement_that_times_out_counts_as_writing)
{
	start(NULL);
	guard->size_timeout_ms = 200;
	routes[2].reply.delay_ms = 1500; /* sbx_b's layer is slow to walk, on purpose */
	pass_at(90, 90);
	routes[2].reply.delay_ms = 0;
	cr_expect_eq(pauses("sbx_b"), 1);
	cr_expect_eq(pauses("sbx_a"), 0, "a first look at a quick one is its base");
	expect_paused_because("sbx_b", "could not be measured in time");
}

Test(disk_guard, a_timed_out_layer_is_not_asked_again_at_once)
{
	start(NULL);
	guard->size_timeout_ms = 200;
	routes[2].reply.delay_ms = 1500;
	pass_at(150, 150); /* near: measured, not paused */
	routes[2].reply.delay_ms = 0;
	cr_expect_eq(pauses("sbx_b"), 0);
	pass_at(150, 150);
	cr_expect_eq(fake_count("GET", "/containers/sbx_b/json?size=1"), 1, "the engine may still be walking");
	pass_at(90, 90);
	cr_expect_eq(pauses("sbx_b"), 1, "still unknown once low");
}

Test(disk_guard, a_volume_counts_as_unmeasured)
{
	start(NULL);
	inspect_reply("b.http", 10 * MIB, 1, NULL);
	pass_at(150, 150);
	pass_at(90, 90);
	cr_expect_eq(pauses("sbx_b"), 1);
	cr_expect_eq(pauses("sbx_a"), 0);
}

Test(disk_guard, a_layer_the_engine_cannot_size_counts_as_unmeasured)
{
	start(NULL);
	inspect_reply("b.http", -1, 0, NULL); /* the driver failed: moby answers -1 */
	pass_at(150, 150);
	pass_at(90, 90);
	cr_expect_eq(pauses("sbx_b"), 1);
	cr_expect_eq(pauses("sbx_a"), 0);
}

Test(disk_guard, a_grown_etc_hosts_counts_as_writing)
{
	start(NULL);
	char hosts[300];
	snprintf(hosts, sizeof(hosts), "%s/hosts", fx.root);
	write_file(hosts, 64 * 1024);
	inspect_reply("a.http", 10 * MIB, 0, hosts);
	pass_at(150, 150);
	write_file(hosts, 8 * MIB); /* SizeRw stays 10 MiB */
	pass_at(90, 90);
	cr_expect_eq(pauses("sbx_a"), 1);
	cr_expect_eq(pauses("sbx_b"), 0);
}

Test(disk_guard, a_disk_filling_beyond_the_measured_growth_pauses_everyone)
{
	start(NULL);
	pass_at(150, 150);
	pass_at(90, 90); /* 60 MiB lost, no growth measured */
	cr_expect_eq(fake_count("POST", "/pause"), 0);
	pass_at(80, 80); /* 70 MiB: past the 64 MiB limit */
	cr_expect_eq(pauses("sbx_a"), 1);
	cr_expect_eq(pauses("sbx_b"), 1);
	expect_paused_because("sbx_b", "more than the sandboxes' measured growth");
	pass_at(400, 400);
	cr_expect_eq(fake_count("POST", "/unpause"), 2);
}

Test(disk_guard, measured_growth_explains_the_loss)
{
	start(NULL);
	pass_at(150, 150);
	pass_at(140, 140);
	inspect_reply("a.http", 80 * MIB, 0, NULL);
	pass_at(80, 80); /* 60 MiB lost, 70 MiB of it sbx_a's growth */
	cr_expect_eq(pauses("sbx_a"), 1);
	pass_at(70, 70); /* 10 more: not past the limit */
	cr_expect_eq(pauses("sbx_b"), 0);
}

/* ---- another node's disk: the probe's answer and the hysteresis ---- */

TestSuite(node_disk, .timeout = 10);

static int parse(const char *s, int64_t *total, int64_t *avail)
{
	return guard_node_disk_parse(s, strlen(s), total, avail);
}

Test(node_disk, parses_three_numbers)
{
	int64_t total = 0, avail = 0;
	cr_assert_eq(parse("4096 1000 250\n", &total, &avail), 0);
	cr_expect_eq(total, 4096 * 1000);
	cr_expect_eq(avail, 4096 * 250);
	cr_expect_eq(parse("512 1 0", &total, &avail), 0, "no newline: fine");
	cr_expect_eq(total, 512);
	cr_expect_eq(avail, 0);
	/* The biggest accepted: just under 2^62 bytes. */
	cr_expect_eq(parse("4096 1125899906842624 1\n", &total, &avail), 0);
	cr_expect_eq(total, (int64_t)1 << 62);
}

Test(node_disk, refuses_anything_else)
{
	const char *bad[] = {
	    "",                             /* nothing */
	    "\n",                           /* an empty line */
	    "4096 1000\n",                  /* two numbers */
	    "4096 1000 250 7\n",            /* four */
	    "4096 1000 250\n\n",            /* a second line */
	    "4096 1000 250\nrm -rf /\n",    /* more after the line */
	    "4096  1000 250\n",             /* two blanks */
	    " 4096 1000 250\n",             /* a leading blank */
	    "4096 1000 250 \n",             /* a trailing blank */
	    "4096\t1000\t250\n",            /* tabs */
	    "-4096 1000 250\n",             /* negative */
	    "4096 -1 250\n",                /* negative */
	    "4096 1000 +250\n",             /* a sign */
	    "4096 1000 25O\n",              /* a letter */
	    "0x1000 1000 250\n",            /* hex */
	    "4096 1000 250.5\n",            /* a fraction */
	    "4096 1000 250\r\n",            /* CR */
	    "4096 1000 2500\n",             /* more free than the whole */
	    "4096 1000000000000000000 1\n", /* 19 digits */
	    "4096 999999999999999999 1\n",  /* 18 digits but past 2^62 bytes */
	    "0 1000 250\n",                 /* block size 0 */
	    "511 1000 250\n",               /* too small a block */
	    "33554432 1000 250\n",          /* 32 MiB blocks */
	    "99999999999999999999999999999999 1 1\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		int64_t total = -7, avail = -7;
		cr_expect_eq(parse(bad[i], &total, &avail), -1, "refused: '%s'", bad[i]);
		cr_expect(total == -7 && avail == -7, "outputs untouched for '%s'", bad[i]);
	}
	int64_t total, avail;
	const char nul[] = "4096 1000 250\0\n";
	cr_expect_eq(guard_node_disk_parse(nul, sizeof(nul) - 1, &total, &avail), -1, "a NUL inside");
	char longer[GUARD_NODE_DISK_OUTPUT_MAX + 2];
	memset(longer, '1', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	cr_expect_eq(parse(longer, &total, &avail), -1, "longer than the bound");
	cr_expect_eq(guard_node_disk_parse(NULL, 0, &total, &avail), -1);
}

Test(node_disk, low_until_back_above_the_resume_room)
{
	int64_t wm = 100 * MIB; /* resume room: 10 MiB */
	cr_expect(!guard_disk_low_after(0, 100 * MIB, wm), "at the watermark: not low");
	cr_expect(guard_disk_low_after(0, 100 * MIB - 1, wm), "one byte below: low");
	cr_expect(guard_disk_low_after(1, 100 * MIB, wm), "back at the watermark: still low");
	cr_expect(guard_disk_low_after(1, 110 * MIB - 1, wm), "not yet by the room: still low");
	cr_expect(!guard_disk_low_after(1, 110 * MIB, wm), "above by the room: not low");
	cr_expect(!guard_disk_low_after(0, 105 * MIB, wm), "in the room, never low: stays not low");
	/* A huge watermark's room is at most 64 MiB; a tiny one's at least 1 MiB. */
	cr_expect(guard_disk_low_after(1, 1000 * MIB + 63 * MIB, 1000 * MIB));
	cr_expect(!guard_disk_low_after(1, 1000 * MIB + 64 * MIB, 1000 * MIB));
	cr_expect(guard_disk_low_after(1, 2 * MIB + MIB - 1, 2 * MIB));
	cr_expect(!guard_disk_low_after(1, 3 * MIB, 2 * MIB));
}
