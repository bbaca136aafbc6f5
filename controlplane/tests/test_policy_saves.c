/* test_policy_saves.c: how much saved work may be kept (policy/saves.c,
 * issue 23 point 4): the free space a save needs (the file, verification's
 * copy of a bundle, the margin) against the watermark, before streaming and
 * at every chunk, including a sandbox that announces less than it sends;
 * and the caps on kept exports, each named in its refusal with what the
 * person can do. */
#include <criterion/criterion.h>
#include <string.h>

#include "policy/policy.h"

#define MiB (1024LL * 1024)

static struct policy_save_space disk(int64_t avail, int64_t watermark, int64_t expected, int scratch)
{
	return (struct policy_save_space){.sandbox_id = "sbx_s",
	                                  .data_root = "/d",
	                                  .avail = avail,
	                                  .watermark = watermark,
	                                  .expected = expected,
	                                  .scratch = scratch};
}

Test(policy_saves, the_need_counts_the_file_the_scratch_copy_and_the_margin)
{
	cr_assert_eq(policy_save_space_need(10 * MiB, 10 * MiB, 1), 20 * MiB + POLICY_SAVE_SPACE_MARGIN_BYTES);
	cr_assert_eq(policy_save_space_need(10 * MiB, 10 * MiB, 0), 10 * MiB + POLICY_SAVE_SPACE_MARGIN_BYTES);
	cr_assert_eq(policy_save_space_need(4 * MiB, 10 * MiB, 1), 14 * MiB + POLICY_SAVE_SPACE_MARGIN_BYTES,
	             "6 MiB are written already: they hold their room, the scratch copy still needs all 10");
	cr_assert_eq(policy_save_space_need(-5, -5, 1), POLICY_SAVE_SPACE_MARGIN_BYTES);
}

Test(policy_saves, a_bundle_that_would_cross_the_watermark_is_refused_before_it_streams)
{
	struct cp_error *err = NULL;
	/* 100 MiB free, 48 kept: 52 to spend; 20 MiB twice plus 8 fits, 25 twice plus 8 does not. */
	struct policy_save_space s = disk(100 * MiB, 48 * MiB, 20 * MiB, 1);
	cr_assert_eq(policy_save_space_check(&s, &err), 0);
	s = disk(100 * MiB, 48 * MiB, 25 * MiB, 1);
	cr_assert_eq(policy_save_space_check(&s, &err), -1);
	cr_assert_eq(err->code, CP_ERR_LIMIT);
	const char *m = err->message;
	cr_assert(strstr(m, "sandbox 'sbx_s'") && strstr(m, "'/d'"), "%s", m);
	cr_assert(strstr(m, "58.0 MiB more") && strstr(m, "100.0 MiB free") && strstr(m, "keeps 48.0 MiB free"), "%s",
	          m);
	cr_assert(strstr(m, "CHAT2SBX_MIN_FREE_DISK") && strstr(m, "copy its verification makes"), "%s", m);
	cr_assert(strstr(m, "keeps its work") && strstr(m, "chat2sbx export delete ID"), "%s", m);
	cp_error_freep(&err);
	s = disk(100 * MiB, 48 * MiB, 25 * MiB, 0);
	cr_assert_eq(policy_save_space_check(&s, &err), 0, "an archive is not copied by its check");
	s = disk(40 * MiB, 48 * MiB, 0, 0);
	cr_assert_eq(policy_save_space_check(&s, &err), -1, "below the watermark already: nothing is begun");
	cp_error_freep(&err);
}

Test(policy_saves, a_sandbox_sending_more_than_it_announced_is_stopped_at_the_chunk_that_would_cross)
{
	struct cp_error *err = NULL;
	/* It announced 1 MiB; 60 MiB free, 20 kept. Each chunk needs itself
	 * plus a scratch copy of everything so far plus the margin. */
	int64_t written = 0, avail = 60 * MiB, stopped_at = -1;
	for (int i = 0; i < 100; i++) {
		struct policy_save_space s = disk(avail, 20 * MiB, 1 * MiB, 1);
		s.streamed = written;
		s.next = 1 * MiB;
		if (policy_save_space_check(&s, &err) < 0) {
			stopped_at = written;
			break;
		}
		written += MiB;
		avail -= MiB;
		cr_assert_geq(avail, 20 * MiB, "never below the watermark");
	}
	cr_assert_neq(stopped_at, -1, "it was stopped");
	cr_assert_geq(avail - written, 20 * MiB, "even verification's copy of what came fits above the watermark");
	cr_assert(strstr(err->message, "more than the sandbox announced"), "%s", err->message);
	cr_assert(strstr(err->message, "were dropped"), "%s", err->message);
	cp_error_free(err);
}

static const struct policy_save_caps caps = {
    .sandbox_count = 3, .sandbox_bytes = 100 * MiB, .total_count = 10, .total_bytes = 200 * MiB};

Test(policy_saves, each_cap_is_named_when_it_refuses)
{
	struct cp_error *err = NULL;
	struct policy_save_usage sbx = {2, 50 * MiB}, all = {5, 120 * MiB};
	cr_assert_eq(policy_save_caps_check(&caps, &sbx, &all, 10 * MiB, "sbx_s", &err), 0);
	struct {
		struct policy_save_usage sbx, all;
		int64_t add;
		const char *name;
	} cases[] = {
	    {{3, 0}, {3, 0}, 0, "CHAT2SBX_MAX_EXPORTS_PER_SANDBOX=3"},
	    {{0, 0}, {10, 0}, 0, "CHAT2SBX_MAX_EXPORTS_TOTAL=10"},
	    {{1, 90 * MiB}, {1, 90 * MiB}, 11 * MiB, "CHAT2SBX_MAX_EXPORT_BYTES_PER_SANDBOX"},
	    {{1, 10 * MiB}, {4, 195 * MiB}, 6 * MiB, "CHAT2SBX_MAX_EXPORT_BYTES_TOTAL"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_assert_eq(policy_save_caps_check(&caps, &cases[i].sbx, &cases[i].all, cases[i].add, "sbx_s", &err),
		             -1, "case %zu passed", i);
		cr_assert_eq(err->code, CP_ERR_LIMIT);
		cr_assert(strstr(err->message, cases[i].name), "case %zu: %s", i, err->message);
		cr_assert(strstr(err->message, "keeps its work"), "%s", err->message);
		cr_assert(strstr(err->message, "chat2sbx export list") &&
		              strstr(err->message, "chat2sbx export apply") &&
		              strstr(err->message, "chat2sbx export delete"),
		          "%s", err->message);
		cp_error_freep(&err);
	}
}

Test(policy_saves, a_save_adding_no_bytes_fits_at_a_byte_cap_but_not_past_a_count)
{
	struct cp_error *err = NULL;
	struct policy_save_usage full = {1, 100 * MiB}, all = {1, 100 * MiB};
	cr_assert_eq(policy_save_caps_check(&caps, &full, &all, 0, "sbx_s", &err), 0,
	             "a shared bundle or refs only adds nothing");
	cr_assert_eq(policy_save_caps_check(&caps, &full, &all, 1, "sbx_s", &err), -1);
	cp_error_freep(&err);
	cr_assert_eq(policy_save_caps_room(&caps, &full, &all), 0);
	struct policy_save_usage some = {1, 30 * MiB}, most = {1, 190 * MiB};
	cr_assert_eq(policy_save_caps_room(&caps, &some, &most), 10 * MiB, "the tighter cap rules");
	struct policy_save_usage over = {1, 300 * MiB};
	cr_assert_eq(policy_save_caps_room(&caps, &over, &over), 0, "never negative");
}
