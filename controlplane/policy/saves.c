/* saves.c: how much saved work may be kept (issue 23 point 4): the free
 * space a save needs on the data root's disk (the file it streams, the copy
 * verification makes, the watermark kept) and the caps on the exports kept
 * per sandbox and for the whole data root. Pure: the numbers come in, a
 * decision and a message a model or a person can act on go out. */
#include <stdio.h>

#include "policy.h"

/* What every refusal tells the person to do: the exports are theirs to
 * bring home and put away (nothing is deleted automatically). */
#define SAVE_WHAT_TO_DO                                                                                                \
	"The sandbox keeps its work. Ask the person at this machine to bring older exports home and put them in "      \
	"the trash (chat2sbx export list; chat2sbx export apply ID; chat2sbx export delete ID), then save again"

static double mib(int64_t bytes)
{
	return (double)bytes / (1024.0 * 1024.0);
}

int64_t policy_save_space_need(int64_t remaining, int64_t total, int scratch)
{
	if (remaining < 0)
		remaining = 0;
	if (total < 0)
		total = 0;
	return remaining + (scratch ? total : 0) + POLICY_SAVE_SPACE_MARGIN_BYTES;
}

int policy_save_space_check(const struct policy_save_space *s, struct cp_error **err)
{
	int64_t expected = s->expected > s->streamed + s->next ? s->expected : s->streamed + s->next;
	int64_t need = policy_save_space_need(expected - s->streamed, expected, s->scratch);
	if (s->avail - need >= s->watermark)
		return 0;
	char done[160] = "";
	if (s->streamed > 0)
		snprintf(done, sizeof(done), "; it stopped after %.1f MiB of %s, which were dropped", mib(s->streamed),
		         s->expected >= s->streamed + s->next ? "the work" : "more than the sandbox announced");
	return cp_error_set(err, CP_ERR_LIMIT,
	                    "the work of sandbox '%s' was not saved: saving it needs %.1f MiB more on the disk of the "
	                    "data root '%s' (%.1f MiB of work%s, %.1f MiB of room for the manifest), which has "
	                    "%.1f MiB free and keeps %.1f MiB free (CHAT2SBX_MIN_FREE_DISK)%s. Make the work smaller "
	                    "(delete build outputs, downloads or large files in the sandbox) or free space on that "
	                    "disk. %s",
	                    s->sandbox_id, mib(need), s->data_root, mib(expected),
	                    s->scratch ? " and the copy its verification makes" : "",
	                    mib(POLICY_SAVE_SPACE_MARGIN_BYTES), mib(s->avail), mib(s->watermark), done,
	                    SAVE_WHAT_TO_DO);
}

int64_t policy_save_caps_room(const struct policy_save_caps *caps, const struct policy_save_usage *sandbox,
                              const struct policy_save_usage *all)
{
	int64_t a = caps->sandbox_bytes - sandbox->bytes, b = caps->total_bytes - all->bytes;
	int64_t room = a < b ? a : b;
	return room > 0 ? room : 0;
}

int policy_save_caps_check(const struct policy_save_caps *caps, const struct policy_save_usage *sandbox,
                           const struct policy_save_usage *all, int64_t new_bytes, const char *sandbox_id,
                           struct cp_error **err)
{
	if (sandbox->count + 1 > caps->sandbox_count)
		return cp_error_set(err, CP_ERR_LIMIT,
		                    "the work of sandbox '%s' was not saved: it keeps %lld exports already, the most "
		                    "one sandbox may keep (CHAT2SBX_MAX_EXPORTS_PER_SANDBOX=%lld). %s, or raise "
		                    "CHAT2SBX_MAX_EXPORTS_PER_SANDBOX",
		                    sandbox_id, (long long)sandbox->count, (long long)caps->sandbox_count,
		                    SAVE_WHAT_TO_DO);
	if (all->count + 1 > caps->total_count)
		return cp_error_set(err, CP_ERR_LIMIT,
		                    "the work of sandbox '%s' was not saved: the data root keeps %lld exports already, "
		                    "the most all sandboxes together may keep (CHAT2SBX_MAX_EXPORTS_TOTAL=%lld). %s, "
		                    "or raise CHAT2SBX_MAX_EXPORTS_TOTAL",
		                    sandbox_id, (long long)all->count, (long long)caps->total_count, SAVE_WHAT_TO_DO);
	if (new_bytes < 0)
		new_bytes = 0;
	/* A save that adds no bytes (refs only, or a shared bundle) fits even
	 * at a byte cap. */
	if (sandbox->bytes + new_bytes > caps->sandbox_bytes)
		return cp_error_set(err, CP_ERR_LIMIT,
		                    "the work of sandbox '%s' was not saved: its exports keep %.1f MiB and %.1f MiB "
		                    "more would pass the %.1f MiB one sandbox may keep "
		                    "(CHAT2SBX_MAX_EXPORT_BYTES_PER_SANDBOX). %s, or raise "
		                    "CHAT2SBX_MAX_EXPORT_BYTES_PER_SANDBOX",
		                    sandbox_id, mib(sandbox->bytes), mib(new_bytes), mib(caps->sandbox_bytes),
		                    SAVE_WHAT_TO_DO);
	if (all->bytes + new_bytes > caps->total_bytes)
		return cp_error_set(err, CP_ERR_LIMIT,
		                    "the work of sandbox '%s' was not saved: all exports keep %.1f MiB and %.1f MiB "
		                    "more would pass the %.1f MiB they may keep together "
		                    "(CHAT2SBX_MAX_EXPORT_BYTES_TOTAL). %s, or raise CHAT2SBX_MAX_EXPORT_BYTES_TOTAL",
		                    sandbox_id, mib(all->bytes), mib(new_bytes), mib(caps->total_bytes),
		                    SAVE_WHAT_TO_DO);
	return 0;
}
