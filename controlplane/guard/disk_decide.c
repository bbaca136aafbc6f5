/* disk_decide.c: the free-space guard's decisions from its numbers (issue
 * 23 item 4): when a filesystem is low or near it, which sandbox to pause
 * and why, and when the disk fills faster than the measured growth
 * explains. Pure: no I/O, no clock, no engine; disk_guard.c gathers the
 * numbers and acts. */
#include "disk_internal.h"

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
	if (f->avail < f->watermark)
		f->low = 1;
	else if (f->avail >= f->watermark + disk_resume_room(f->watermark))
		f->low = 0;
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
