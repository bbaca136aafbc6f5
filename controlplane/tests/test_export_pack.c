/* test_export_pack.c: the pack check a save runs before git index-pack
 * (export/pack_check.c, issue 23), attacked: the delta bomb of
 * the issue (ten chained REF_DELTAs, each copying its base twice), huge
 * declared sizes, lying sizes, deep OFS_DELTA chains, implausible counts,
 * every truncation of an honest pack, bytes after the trailer; and packs
 * git itself wrote pass, whatever the reader's chunk size. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "export/pack.h"
#include "pack_builder.h"

static struct export_pack_limits limits(void)
{
	struct export_pack_limits l = export_pack_limits_for(1ull << 30, 2ull << 30, 40);
	return l;
}

/* Checks data with l (pack_bytes set to len); 0 or the error's code, its
 * message in msg. */
static int check(const void *data, size_t len, struct export_pack_limits l, size_t step, struct export_pack_stats *st,
                 char *msg, size_t size)
{
	l.pack_bytes = len;
	struct cp_error *err = NULL;
	struct export_pack_stats s = {0};
	int r = export_pack_check_buffer(data, len, step, &l, &s, &err);
	if (st)
		*st = s;
	if (r == 0)
		return 0;
	snprintf(msg, size, "%s", err->message);
	int code = err->code;
	cp_error_free(err);
	return code;
}

/* A small honest pack: a blob, a tree, a commit and an OFS_DELTA. */
static void honest(struct pack *p)
{
	static const char blob[] = "hello, pack\nhello, pack\nhello, pack\n";
	pack_begin(p, 4);
	pack_plain(p, 3, sizeof(blob) - 1, blob, sizeof(blob) - 1);
	unsigned char tree[32] = "100644 a\0";
	pack_plain(p, 2, sizeof(tree), tree, sizeof(tree));
	static const char commit[] = "tree 0000000000000000000000000000000000000000\n\nmessage\n";
	pack_plain(p, 1, sizeof(commit) - 1, commit, sizeof(commit) - 1);
	size_t dl = 0;
	unsigned char *d = delta_copies(sizeof(blob) - 1, 2, &dl);
	pack_ofs(p, 0, d, dl);
	free(d);
	pack_end(p);
}

Test(export_pack, an_honest_pack_passes_in_any_chunk_size)
{
	struct pack p;
	honest(&p);
	char msg[300] = "";
	for (size_t step = 0; step < 40; step += step < 4 ? 1 : 9) {
		struct export_pack_stats st;
		cr_assert_eq(check(p.data, p.len, limits(), step, &st, msg, sizeof msg), 0, "step %zu: %s", step, msg);
		cr_expect_eq(st.objects, 4);
		cr_expect_eq(st.deltas, 1);
		cr_expect_eq(st.max_depth, 1);
	}
	int fd = pack_tmpfile(p.data, p.len);
	struct export_pack_limits l = limits();
	struct cp_error *err = NULL;
	cr_expect_eq(export_pack_check_fd(fd, &l, NULL, &err), 0, "%s", err ? err->message : "");
	close(fd);
	pack_free(&p);
}

Test(export_pack, every_truncation_is_refused)
{
	struct pack p;
	honest(&p);
	char msg[300];
	for (size_t len = 0; len < p.len; len++) {
		int code = check(p.data, len, limits(), 0, NULL, msg, sizeof msg);
		cr_assert_neq(code, 0, "a pack cut at %zu of %zu bytes passed", len, p.len);
		cr_expect(code == CP_ERR_DENIED, "cut at %zu: %s", len, msg);
	}
	pack_free(&p);
}

Test(export_pack, bytes_after_the_trailer_are_refused)
{
	struct pack p;
	honest(&p);
	unsigned char *more = malloc(p.len + 1);
	memcpy(more, p.data, p.len);
	more[p.len] = 'x';
	char msg[300];
	cr_expect_eq(check(more, p.len + 1, limits(), 0, NULL, msg, sizeof msg), CP_ERR_DENIED);
	cr_expect(strstr(msg, "follow its trailing hash"), "%s", msg);
	free(more);
	pack_free(&p);
}

/* The bomb: a 1 MiB blob of zeros, then ten REF_DELTAs, each
 * copying the one before twice: 1 GiB at the top, 2 GiB in all. */
Test(export_pack, the_delta_bomb_is_refused_by_the_per_object_bound)
{
	struct pack p;
	pack_begin(&p, 11);
	size_t base = 1 << 20;
	unsigned char *zeros = calloc(1, base);
	pack_plain(&p, 3, base, zeros, base);
	free(zeros);
	unsigned char oid[20];
	for (int level = 0; level < 10; level++) {
		memset(oid, level + 1, sizeof(oid));
		size_t dl = 0;
		unsigned char *d = delta_copies((uint64_t)base << level, 2, &dl);
		pack_ref(&p, oid, d, dl);
		free(d);
	}
	pack_end(&p);
	cr_expect_lt(p.len, 64 * 1024, "the bomb is small: %zu bytes", p.len);
	char msg[300];
	struct export_pack_stats st;
	int code = check(p.data, p.len, limits(), 0, &st, msg, sizeof msg);
	cr_assert_eq(code, CP_ERR_LIMIT, "%s", msg);
	cr_expect(strstr(msg, "per-object bound of 256.0 MiB"), "%s", msg);
	cr_expect(strstr(msg, "a delta result of 512.0 MiB"), "the first level over a quarter of 1 GiB: %s", msg);
	cr_expect_lt(st.inflated, 4u << 20, "refused before inflating much: %llu", (unsigned long long)st.inflated);
	/* With a lower ceiling it stops sooner. */
	struct export_pack_limits small = export_pack_limits_for(128ull << 20, 2ull << 30, 40);
	cr_expect_eq(check(p.data, p.len, small, 0, NULL, msg, sizeof msg), CP_ERR_LIMIT);
	cr_expect(strstr(msg, "a delta result of 64.0 MiB"), "%s", msg);
	pack_free(&p);
}

Test(export_pack, many_objects_under_the_per_object_bound_meet_the_total_bound)
{
	struct pack p;
	pack_begin(&p, 40);
	size_t base = 64 << 10;
	unsigned char *zeros = calloc(1, base);
	pack_plain(&p, 3, base, zeros, base);
	free(zeros);
	size_t dl = 0;
	unsigned char *d = delta_copies(base, 2048, &dl); /* 128 MiB each */
	for (int i = 0; i < 39; i++)
		pack_ofs(&p, 0, d, dl);
	free(d);
	pack_end(&p);
	char msg[300];
	struct export_pack_limits l = limits();
	l.total_max = 1ull << 30;
	cr_expect_eq(check(p.data, p.len, l, 0, NULL, msg, sizeof msg), CP_ERR_LIMIT);
	cr_expect(strstr(msg, "total bound of 1.0 GiB"), "%s", msg);
	pack_free(&p);
}

Test(export_pack, huge_declared_sizes_are_refused_before_inflating)
{
	static const char small[] = "tiny";
	char msg[300];
	/* A commit claiming 1 TiB. */
	struct pack p;
	pack_begin(&p, 1);
	pack_plain(&p, 1, 1ull << 40, small, 4);
	pack_end(&p);
	struct export_pack_stats st;
	cr_expect_eq(check(p.data, p.len, limits(), 0, &st, msg, sizeof msg), CP_ERR_LIMIT);
	cr_expect(strstr(msg, "a commit") && strstr(msg, "1024.0 GiB"), "%s", msg);
	cr_expect_eq(st.inflated, 0);
	pack_free(&p);
	/* A plain blob may be large (git streams it) but not past the total. */
	pack_begin(&p, 1);
	pack_plain(&p, 3, 9ull << 30, small, 4);
	pack_end(&p);
	cr_expect_eq(check(p.data, p.len, limits(), 0, NULL, msg, sizeof msg), CP_ERR_LIMIT);
	cr_expect(strstr(msg, "total bound"), "%s", msg);
	pack_free(&p);
	/* A size varint that never ends within 64 bits. */
	unsigned char bad[12 + 12 + 20] = {'P', 'A', 'C', 'K', 0, 0, 0, 2, 0, 0, 0, 1};
	memset(bad + 12, 0xff, 12);
	cr_expect_eq(check(bad, sizeof(bad), limits(), 0, NULL, msg, sizeof msg), CP_ERR_DENIED);
	cr_expect(strstr(msg, "64 bits"), "%s", msg);
}

Test(export_pack, lying_sizes_are_refused)
{
	static const char data[] = "0123456789";
	char msg[300];
	struct pack p;
	pack_begin(&p, 1);
	pack_plain(&p, 3, 5, data, 10);
	pack_end(&p);
	cr_expect_eq(check(p.data, p.len, limits(), 0, NULL, msg, sizeof msg), CP_ERR_DENIED);
	cr_expect(strstr(msg, "more than the 5 bytes it declares"), "%s", msg);
	pack_free(&p);
	pack_begin(&p, 1);
	pack_plain(&p, 3, 20, data, 10);
	pack_end(&p);
	cr_expect_eq(check(p.data, p.len, limits(), 0, NULL, msg, sizeof msg), CP_ERR_DENIED);
	cr_expect(strstr(msg, "declares 20 bytes but inflates to 10"), "%s", msg);
	pack_free(&p);
	/* Not zlib at all. */
	pack_begin(&p, 1);
	size_t at = p.len;
	pack_plain(&p, 3, 10, data, 10);
	p.data[at + 1] ^= 0xff; /* the zlib header */
	pack_end(&p);
	cr_expect_eq(check(p.data, p.len, limits(), 0, NULL, msg, sizeof msg), CP_ERR_DENIED);
	cr_expect(strstr(msg, "not valid zlib data"), "%s", msg);
	pack_free(&p);
}

Test(export_pack, deep_ofs_chains_meet_the_depth_bound)
{
	static const char blob[] = "a base of sixteen";
	size_t dl = 0;
	unsigned char *d = delta_copies(sizeof(blob) - 1, 1, &dl);
	struct pack p;
	pack_begin(&p, 301);
	pack_plain(&p, 3, sizeof(blob) - 1, blob, sizeof(blob) - 1);
	for (size_t i = 0; i < 300; i++)
		pack_ofs(&p, i, d, dl);
	pack_end(&p);
	free(d);
	char msg[300];
	cr_expect_eq(check(p.data, p.len, limits(), 0, NULL, msg, sizeof msg), CP_ERR_LIMIT);
	cr_expect(strstr(msg, "object 252") && strstr(msg, "more than 250 deltas"), "%s", msg);
	/* The same chain, each on the first object: depth 1 throughout. */
	struct pack q;
	d = delta_copies(sizeof(blob) - 1, 1, &dl);
	pack_begin(&q, 301);
	pack_plain(&q, 3, sizeof(blob) - 1, blob, sizeof(blob) - 1);
	for (size_t i = 0; i < 300; i++)
		pack_ofs(&q, 0, d, dl);
	pack_end(&q);
	free(d);
	struct export_pack_stats st;
	cr_expect_eq(check(q.data, q.len, limits(), 0, &st, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(st.max_depth, 1);
	pack_free(&p);
	pack_free(&q);
}

Test(export_pack, offsets_must_name_an_earlier_entry)
{
	static const char blob[] = "base";
	size_t dl = 0;
	unsigned char *d = delta_copies(4, 1, &dl);
	struct pack p;
	pack_begin(&p, 2);
	pack_plain(&p, 3, 4, blob, 4);
	pack_ofs(&p, 0, d, dl);
	pack_end(&p);
	free(d);
	/* Point the offset one byte later: into the middle of the blob. */
	size_t at = p.starts[1] + 1;
	p.data[at] = (unsigned char)(p.data[at] - 1);
	char msg[300];
	cr_expect_eq(check(p.data, p.len, limits(), 0, NULL, msg, sizeof msg), CP_ERR_DENIED);
	cr_expect(strstr(msg, "where no earlier object starts"), "%s", msg);
	pack_free(&p);
}

Test(export_pack, implausible_counts_and_headers)
{
	char msg[300];
	unsigned char h[12 + 20] = {'P', 'A', 'C', 'K', 0, 0, 0, 2, 0, 0x0f, 0x42, 0x40}; /* 1 000 000 objects */
	cr_expect_eq(check(h, sizeof(h), limits(), 0, NULL, msg, sizeof msg), CP_ERR_DENIED);
	cr_expect(strstr(msg, "more than its 32 bytes can hold"), "%s", msg);
	unsigned char many[12 + 20] = {'P', 'A', 'C', 'K', 0, 0, 0, 2, 0xff, 0xff, 0xff, 0xff};
	cr_expect_eq(check(many, sizeof(many), limits(), 0, NULL, msg, sizeof msg), CP_ERR_LIMIT);
	cr_expect(strstr(msg, "object count bound"), "%s", msg);
	unsigned char v4[12 + 20] = {'P', 'A', 'C', 'K', 0, 0, 0, 4, 0, 0, 0, 0};
	cr_expect_eq(check(v4, sizeof(v4), limits(), 0, NULL, msg, sizeof msg), CP_ERR_DENIED);
	unsigned char type5[12 + 9 + 20] = {'P', 'A', 'C', 'K', 0, 0, 0, 2, 0, 0, 0, 1, 0x50, 0};
	cr_expect_eq(check(type5, sizeof(type5), limits(), 0, NULL, msg, sizeof msg), CP_ERR_DENIED);
	cr_expect(strstr(msg, "invalid type 5"), "%s", msg);
	unsigned char empty[12 + 20] = {'P', 'A', 'C', 'K', 0, 0, 0, 2, 0, 0, 0, 0};
	cr_expect_eq(check(empty, sizeof(empty), limits(), 0, NULL, msg, sizeof msg), 0, "%s", msg);
}

Test(export_pack, a_pack_git_wrote_passes)
{
	char dir[] = "/tmp/c2s-packgit-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char cmd[1024];
	snprintf(cmd, sizeof(cmd),
	         "cd %s && export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 && git init -q r && cd r && "
	         "for i in 1 2 3 4 5 6; do seq 1 $((i * 300)) > f; seq 1 50 > g$i; git add -A; "
	         "git -c user.name=a -c user.email=b@c commit -qm c$i; done && "
	         "git rev-list --objects --all | git pack-objects -q --stdout --delta-base-offset > ../p.pack",
	         dir);
	cr_assert_eq(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "%s/p.pack", dir);
	int fd = open(cmd, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	struct export_pack_limits l = limits();
	struct export_pack_stats st = {0};
	struct cp_error *err = NULL;
	cr_expect_eq(export_pack_check_fd(fd, &l, &st, &err), 0, "%s", err ? err->message : "");
	cr_expect_gt(st.deltas, 0, "git made deltas of f");
	close(fd);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}

Test(export_pack, a_deadline_in_the_past_stops_it)
{
	struct pack p;
	honest(&p);
	struct export_pack_limits l = limits();
	l.deadline_ms = 1;
	char msg[300];
	cr_expect_eq(check(p.data, p.len, l, 0, NULL, msg, sizeof msg), CP_ERR_TIMEOUT, "%s", msg);
	pack_free(&p);
}
