/* disk_internal.h: private to the free-space guard (disk_guard.c, its
 * decisions in disk_decide.c) and its unit tests: the watched filesystems,
 * what the guard remembers of each sandbox's usage, and the pure decisions
 * made from those numbers. */
#ifndef CP_LIFECYCLE_DISK_INTERNAL_H
#define CP_LIFECYCLE_DISK_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct guard_host;

#define DISK_GUARD_PERIOD_MS 2000
/* One layer's measurement by the engine (the guard's size_timeout_ms). */
#define DISK_SIZE_TIMEOUT_MS 5000L
/* Roles of a watched filesystem; one filesystem may have both (one disk). */
#define DISK_ROLE_DATA 1u   /* holds DATA_ROOT: registry, managed workspaces, saved work */
#define DISK_ROLE_ENGINE 2u /* holds the engine's DockerRootDir: writable layers */
#define DISK_MAX_FS 2
/* Growth below this much since the disk went low is not "writing" (a few
 * log lines, a shell's history). */
#define DISK_GROWTH_SLACK ((int64_t)1024 * 1024)

struct disk_fs {
	char path[4096];
	char what[64]; /* "the data root", "the engine's data", or both */
	dev_t dev;
	unsigned roles;
	int64_t total, avail, watermark; /* bytes, from the latest look */
	int64_t prev_avail;              /* at the previous pass; -1 before the first */
	int low;                         /* fell below the watermark and is not back above it plus the resume room */
	int watch;                       /* low or near it: its sandboxes' usage is measured this pass */
	int watched_before;              /* the previous pass measured it too */
	int64_t unexplained;             /* bytes it lost beyond the sandboxes' measured growth, while low */
};

enum disk_size {
	DISK_SIZE_NONE,    /* not on a watched filesystem, not measured this pass, or gone */
	DISK_SIZE_KNOWN,   /* bytes holds this pass's measurement */
	DISK_SIZE_UNKNOWN, /* should have been measured and could not be (in time, or at all) */
};

/* One place a sandbox writes to: [DISK_PART_LAYER] its writable layer
 * (with the files the engine mounts into it) on the engine's filesystem,
 * [DISK_PART_WORKSPACE] its managed or direct workspace on whichever
 * watched filesystem holds it. */
enum { DISK_PART_LAYER, DISK_PART_WORKSPACE, DISK_PARTS };
struct disk_part {
	int fs;               /* index into the guard's filesystems; -1: none watched holds it */
	enum disk_size state; /* this pass */
	int64_t bytes;        /* this pass, when KNOWN */
	int64_t last;         /* at the previous look; -1 none */
	int64_t base;         /* at the last look before its filesystem went low (or the first
	                       * look while low); -1 none */
};

enum disk_verdict {
	DISK_KEEP,
	DISK_PAUSE_GREW,        /* grew by more than DISK_GROWTH_SLACK since its disk went low */
	DISK_PAUSE_UNMEASURED,  /* on a low disk and its usage could not be measured */
	DISK_PAUSE_UNEXPLAINED, /* the disk fills faster than the measured growth explains */
};

struct disk_mark {
	char id[64];
	struct disk_part part[DISK_PARTS];
	int paused;            /* paused by the guard */
	enum disk_verdict why; /* when paused */
	char reason[680];      /* when paused: what a call on it is told */
	int64_t cost_ms;       /* how long its last measurement took (the cheap ones go first) */
	int64_t skip_until_ms; /* its layer is not asked for again before (the engine may still be walking) */
	int seen;              /* running at this pass */
};

/* Free space of path's filesystem: total and available-to-unprivileged
 * bytes; -1 with errno on failure. statvfs(2) in production; tests give
 * canned numbers. */
typedef int (*disk_space_fn)(const char *path, int64_t *ret_total, int64_t *ret_avail);

struct guard_disk {
	const struct guard_host *host; /* borrowed */
	disk_space_fn space;
	pthread_mutex_t lock;    /* guards everything below */
	struct periodic *worker; /* the pass every DISK_GUARD_PERIOD_MS (base/periodic.c); NULL in tests */
	struct disk_fs fs[DISK_MAX_FS];
	size_t n_fs;
	int low;          /* some filesystem is low */
	char reason[600]; /* why, with the numbers */
	struct disk_mark *marks;
	size_t n_marks;
	char reserve[4200]; /* the reserve file's path */
	int reserve_held;
	long size_timeout_ms; /* one layer measurement's bound */
};

/* ---- the guard without its thread (disk_guard.c; tests drive it) ---- */

/* A guard for h watching nothing yet, its space read by space (NULL:
 * statvfs). Free with disk_guard_free. */
struct guard_disk *disk_guard_new(const struct guard_host *h, disk_space_fn space);
/* Watches path's filesystem in roles (DISK_ROLE_*): a filesystem already
 * watched (same st_dev) gains the roles. -1 when path cannot be stat'ed. */
int disk_guard_add_fs(struct guard_disk *g, const char *path, unsigned roles);
/* One look: free space, the decisions, pauses and unpauses (engine calls,
 * audit rows). Blocks for the measurements: at most size_timeout_ms per
 * sandbox layer and DISK_WALK_BUDGET_MS per workspace. */
void disk_guard_pass(struct guard_disk *g);
void disk_guard_free(struct guard_disk *g);
/* The watched filesystem with st_dev dev (index into g->fs), or -1.
 * g->fs's paths, devices and roles do not change once the guard runs. */
int disk_fs_of_dev(const struct guard_disk *g, dev_t dev);

/* ---- the sandboxes (disk_watch.c) ---- */

/* The mark of sandbox id (made when create is set, else NULL when none).
 * Under g->lock; the pointer is good until the lock is released. */
struct disk_mark *disk_mark_of(struct guard_disk *g, const char *id, int create);
/* Measures every running sandbox the guard has not paused on the
 * filesystems that are watched now, pauses those disk_judge_sandbox names
 * (and all of them when disk_unexplained_add says so), each with its
 * reason; engine calls and audit rows. Called without g->lock. Blocks for
 * the measurements: DISK_SIZE_TIMEOUT_MS per layer, 2 s per workspace. */
void disk_watch_sandboxes(struct guard_disk *g);
/* Space is back: unpauses every sandbox the guard paused and forgets every
 * mark. Called without g->lock. */
void disk_unpause_all(struct guard_disk *g);

/* ---- the decisions (disk_decide.c; pure) ---- */

/* How far above the watermark free space must be back before a low
 * filesystem is not low: a tenth of the watermark, 1 to 64 MiB. */
int64_t disk_resume_room(int64_t watermark);
/* The band above the watermark in which usage is measured, so growth is
 * seen from a look before the crossing: half the watermark, at least
 * 64 MiB, and at least twice what the disk lost since the previous pass. */
int64_t disk_watch_band(const struct disk_fs *f);
/* Sets f->low (below the watermark; cleared once back above it plus
 * disk_resume_room, and then f->unexplained too) and f->watch (low, or
 * within disk_watch_band) from f->avail, f->prev_avail and f->watermark. */
void disk_fs_judge(struct disk_fs *f);
/* What to do with one running sandbox the guard has not paused, from its
 * parts (n of them; part.fs indexes fs): pause it when a part on a low
 * filesystem is UNKNOWN (UNMEASURED: a sandbox can make its measurement
 * slow on purpose, so unknown must not read as idle) or grew by more than
 * DISK_GROWTH_SLACK above its base (GREW); else KEEP. */
enum disk_verdict disk_judge_sandbox(const struct disk_fs *fs, size_t n_fs, const struct disk_part *parts, size_t n);
/* After the verdict: part.last becomes this pass's bytes; part.base
 * follows them while its filesystem is not low and is set once (the first
 * look) while it is. An UNKNOWN part keeps both; a NONE part (not
 * measured: its filesystem is not watched) forgets both. */
void disk_part_advance(const struct disk_fs *fs, size_t n_fs, struct disk_part *p);
/* Bytes the part grew since the previous look (0 unless both are known,
 * never negative: a sparse file's size going away frees nothing). */
int64_t disk_part_growth(const struct disk_part *p);
/* The unexplained loss of an engine filesystem that stayed low and was
 * measured at both ends of the period: f->unexplained += what it lost
 * (prev_avail - avail) - explained (the measured growth on it this
 * period), never below 0; reset while not low. Returns 1 when it passes
 * disk_unexplained_limit, with the amount in *ret_lost (else 0), and
 * resets it: something on that disk writes where the engine's count does
 * not look (directories, the hosts files, extended attributes), so every
 * sandbox on it is to be paused. */
int disk_unexplained_add(struct disk_fs *f, int64_t explained, int64_t *ret_lost);
/* A quarter of the watermark, at least 64 MiB. */
int64_t disk_unexplained_limit(int64_t watermark);

#endif
