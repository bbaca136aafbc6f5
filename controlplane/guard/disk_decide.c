/* disk_decide.c: the free-space guard's decisions from its numbers (issue
 * 23 item 4): when a filesystem is low or near it, which sandbox to pause
 * and why, and when the disk fills faster than the measured growth
 * explains. Pure: no I/O, no clock, no engine; disk_guard.c gathers the
 * numbers and acts. */
#include <string.h>

#include "disk_internal.h"
#include "guard.h"

#define MIB ((int64_t)1024 * 1024)

static int64_t clamp(int64_t v, int64_t lo, int64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

int64_t disk_resume_room(int64_t watermark)
{
	return clamp(watermark / 10, MIB, 64 * MIB);
}

int64_t disk_watch_band(const struct disk_fs *f)
{
	int64_t band = f->watermark / 2;
	if (band < 64 * MIB)
		band = 64 * MIB;
	int64_t fell = f->prev_avail >= 0 ? f->prev_avail - f->avail : 0;
	if (fell > 0 && 2 * fell > band)
		band = 2 * fell;
	return band;
}

void disk_fs_judge(struct disk_fs *f)
{
	f->low = guard_disk_low_after(f->low, f->avail, f->watermark);
	if (!f->low)
		f->unexplained = 0;
	f->watch = f->low || f->avail < f->watermark + disk_watch_band(f);
}

static int on_low(const struct disk_fs *fs, size_t n_fs, const struct disk_part *p)
{
	return p->fs >= 0 && (size_t)p->fs < n_fs && fs[p->fs].low;
}

enum disk_verdict disk_judge_sandbox(const struct disk_fs *fs, size_t n_fs, const struct disk_part *parts, size_t n)
{
	enum disk_verdict v = DISK_KEEP;
	for (size_t i = 0; i < n; i++) {
		const struct disk_part *p = &parts[i];
		if (!on_low(fs, n_fs, p))
			continue;
		if (p->state == DISK_SIZE_UNKNOWN && v == DISK_KEEP)
			v = DISK_PAUSE_UNMEASURED;
		if (p->state == DISK_SIZE_KNOWN && p->base >= 0 && p->bytes > p->base + DISK_GROWTH_SLACK)
			v = DISK_PAUSE_GREW; /* the plainer reason wins */
	}
	return v;
}

void disk_part_advance(const struct disk_fs *fs, size_t n_fs, struct disk_part *p)
{
	if (p->state == DISK_SIZE_NONE) {
		p->last = p->base = -1; /* a later look starts afresh, not from a stale number */
		return;
	}
	if (p->state != DISK_SIZE_KNOWN)
		return;
	if (!on_low(fs, n_fs, p) || p->base < 0)
		p->base = p->bytes;
	p->last = p->bytes;
}

int64_t disk_part_growth(const struct disk_part *p)
{
	if (p->state != DISK_SIZE_KNOWN || p->last < 0 || p->bytes <= p->last)
		return 0;
	return p->bytes - p->last;
}

int64_t disk_unexplained_limit(int64_t watermark)
{
	return watermark / 4 > 64 * MIB ? watermark / 4 : 64 * MIB;
}

int disk_unexplained_add(struct disk_fs *f, int64_t explained, int64_t *ret_lost)
{
	*ret_lost = 0;
	if (!f->low || !(f->roles & DISK_ROLE_ENGINE)) {
		f->unexplained = 0;
		return 0;
	}
	if (!f->watch || !f->watched_before || f->prev_avail < 0)
		return 0; /* no measurement at one end of the period: nothing to compare */
	int64_t lost = f->prev_avail - f->avail;
	f->unexplained += lost - explained;
	if (f->unexplained < 0)
		f->unexplained = 0;
	if (f->unexplained <= disk_unexplained_limit(f->watermark))
		return 0;
	*ret_lost = f->unexplained;
	f->unexplained = 0;
	return 1;
}

/* One unsigned decimal of at most 18 digits (below 10^18, so no product
 * of two checked below can wrap unseen) starting at *p, which moves past
 * it; -1 for anything else (a sign, a blank, no digit at all). */
static int64_t parse_count(const char **p)
{
	const char *s = *p;
	int64_t v = 0;
	int digits = 0;
	while (*s >= '0' && *s <= '9') {
		if (++digits > 18)
			return -1;
		v = v * 10 + (*s++ - '0');
	}
	if (!digits)
		return -1;
	*p = s;
	return v;
}

int guard_node_disk_parse(const char *out, size_t len, int64_t *ret_total, int64_t *ret_avail)
{
	if (!out || len == 0 || len > GUARD_NODE_DISK_OUTPUT_MAX || memchr(out, '\0', len))
		return -1;
	const char *p = out;
	int64_t v[3];
	for (int i = 0; i < 3; i++) {
		if (i && *p++ != ' ')
			return -1;
		if ((v[i] = parse_count(&p)) < 0)
			return -1;
	}
	if (*p == '\n')
		p++;
	if ((size_t)(p - out) != len)
		return -1; /* a second line, a blank, anything after the numbers */
	int64_t frsize = v[0], blocks = v[1], avail = v[2];
	/* A block size a filesystem can have, and counts that make a size a
	 * disk can have (below 2^62 bytes: about 4.6 EB). */
	if (frsize < 512 || frsize > (1 << 24) || avail > blocks || blocks > (INT64_C(1) << 62) / frsize)
		return -1;
	*ret_total = blocks * frsize;
	*ret_avail = avail * frsize;
	return 0;
}

int guard_disk_low_after(int was_low, int64_t avail, int64_t watermark)
{
	if (avail < watermark)
		return 1;
	if (avail >= watermark + disk_resume_room(watermark))
		return 0;
	return was_low;
}
