/* disk_guard.c: a full disk cannot take chat2sbx (or the host) down (issue
 * 13). Every DISK_GUARD_PERIOD_MS it reads the free space of the data
 * root's filesystem (registry, managed workspaces) and of the engine's data
 * directory (writable layers). Below the watermark (CHAT2SBX_MIN_FREE_DISK)
 * new sandboxes are refused, the sandboxes whose usage grew since the last
 * look are paused (the engine's freezer), and a call on one is told why;
 * once the space is back (the watermark plus some room) they are unpaused.
 * A reserve file in the state directory is given up when the disk is all
 * but full, so the registry can still record what happens. Decides with the
 * numbers; never deletes anything of a sandbox. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "../base/xalloc.h"
#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/log.h"
#include "lifecycle_internal.h"

#define DISK_GUARD_PERIOD_MS 2000
/* The state directory keeps this much room for the registry. */
#define DISK_RESERVE_BYTES ((int64_t)16 * 1024 * 1024)
/* Unpause once free space is back above the watermark by a tenth of it, at
 * least 1 MiB and at most 64 MiB, so a sandbox is not paused and unpaused on
 * every pass (and a small disk holding the reserve can still resume). */
#define DISK_RESUME_ROOM_MIN ((int64_t)1024 * 1024)
#define DISK_RESUME_ROOM_MAX ((int64_t)64 * 1024 * 1024)
/* Measuring a managed workspace walks its files: at most this long each. */
#define DISK_WALK_BUDGET_MS 2000

struct disk_fs {
	char path[4096];
	char what[64]; /* "the data root", "the engine's data" */
	dev_t dev;
	int64_t total, avail, watermark;
};

struct disk_mark {
	char id[64];
	int64_t bytes; /* usage at the last look */
	int paused;    /* paused by the guard */
};

struct lifecycle_disk_guard {
	struct lifecycle *lc;
	pthread_mutex_t lock; /* guards everything below */
	pthread_cond_t wake;
	pthread_t thread;
	int stop, running;
	struct disk_fs fs[2];
	size_t n_fs;
	int low;          /* below the watermark on some filesystem */
	char reason[600]; /* why, with the numbers */
	struct disk_mark *marks;
	size_t n_marks;
	char reserve[4200]; /* the reserve file's path */
	int reserve_held;
};

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct disk_mark *mark_of(struct lifecycle_disk_guard *g, const char *id, int create)
{
	for (size_t i = 0; i < g->n_marks; i++)
		if (!strcmp(g->marks[i].id, id))
			return &g->marks[i];
	if (!create)
		return NULL;
	struct disk_mark *m = xrealloc(g->marks, (g->n_marks + 1) * sizeof(*m));
	if (!m)
		return NULL;
	g->marks = m;
	m = &g->marks[g->n_marks++];
	*m = (struct disk_mark){0};
	snprintf(m->id, sizeof(m->id), "%s", id);
	return m;
}

/* Bytes a directory tree holds (st_blocks), not crossing mounts nor
 * following links, for at most DISK_WALK_BUDGET_MS. */
static __thread int64_t walk_bytes, walk_deadline;
static int walk_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)path;
	(void)flag;
	(void)ftw;
	walk_bytes += (int64_t)st->st_blocks * 512;
	return mono_ms() > walk_deadline ? 1 : 0;
}

static int64_t tree_bytes(const char *dir)
{
	walk_bytes = 0;
	walk_deadline = mono_ms() + DISK_WALK_BUDGET_MS;
	nftw(dir, walk_entry, 16, FTW_PHYS | FTW_MOUNT);
	return walk_bytes;
}

/* Free space of each watched filesystem, and the watermark for it. */
static void read_space(struct lifecycle_disk_guard *g)
{
	for (size_t i = 0; i < g->n_fs; i++) {
		struct disk_fs *f = &g->fs[i];
		struct statvfs sv;
		if (statvfs(f->path, &sv) < 0)
			continue;
		f->total = (int64_t)sv.f_blocks * (int64_t)sv.f_frsize;
		f->avail = (int64_t)sv.f_bavail * (int64_t)sv.f_frsize;
		struct cp_error *e = NULL;
		if (policy_min_free_parse(g->lc->cfg->min_free_disk, f->total, &f->watermark, &e) < 0) {
			cp_error_free(e); /* checked at start (lifecycle_disk_guard_start) */
			f->watermark = 0;
		}
	}
}

/* The reserve file: given up when the data root is all but full, so SQLite
 * finds room for its journal; made again once the disk is not low. */
static void tend_reserve(struct lifecycle_disk_guard *g)
{
	const struct disk_fs *data = &g->fs[0];
	if (g->reserve_held && data->avail < DISK_RESERVE_BYTES) {
		if (unlink(g->reserve) == 0) {
			g->reserve_held = 0;
			log_warn("lifecycle",
			         "the disk of '%s' is all but full (%lld KiB free): gave up the %lld MiB "
			         "reserve '%s' so the registry can still be written",
			         data->path, (long long)(data->avail >> 10), (long long)(DISK_RESERVE_BYTES >> 20),
			         g->reserve);
		}
	} else if (!g->reserve_held && !g->low && data->avail > data->watermark + 2 * DISK_RESERVE_BYTES) {
		int fd = open(g->reserve, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd >= 0 && posix_fallocate(fd, 0, DISK_RESERVE_BYTES) == 0)
			g->reserve_held = 1;
		else if (fd >= 0)
			unlink(g->reserve);
		if (fd >= 0)
			close(fd);
	}
}

static void audit(struct lifecycle *lc, const char *action, const char *sandbox_id, const char *message)
{
	struct audit_record a = {.at_ms = clock_now_ms(),
	                         .actor = "serve",
	                         .action = action,
	                         .sandbox_id = sandbox_id,
	                         .status = "ok",
	                         .message = message};
	_cleanup_error_ struct cp_error *e = NULL;
	if (store_audit_insert(lc->store, &a, &e) < 0)
		log_warn("lifecycle", "audit %s of %s: %s", action, sandbox_id, e->message);
}

/* Below the watermark: pause every running sandbox whose usage (its
 * writable layer, and its managed workspace when that is on a low
 * filesystem) grew since the last look. Called without g->lock. */
static void pause_writers(struct lifecycle_disk_guard *g, int data_low, int engine_low)
{
	struct lifecycle *lc = g->lc;
	struct sandbox_record *rows = NULL;
	size_t n = 0;
	_cleanup_error_ struct cp_error *e = NULL;
	if (store_sandbox_list(lc->store, 0, &rows, &n, &e) < 0) {
		log_warn("lifecycle", "disk guard: list sandboxes: %s", e->message);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		struct sandbox_record *s = &rows[i];
		if (strcmp(s->status, "running") != 0 || s->pooled || !s->container_id) {
			sandbox_record_clear(s);
			continue;
		}
		int64_t bytes = 0, layer = 0;
		int paused = 0;
		if (engine_low && docker_container_layer_size(lc->engine, s->container_id, &layer, &paused, &e) == 0)
			bytes += layer;
		cp_error_freep(&e);
		struct workspace_record w = {0};
		if (data_low && store_workspace_get(lc->store, s->workspace_id, &w, &e) == 0 &&
		    !strcmp(w.mode, "managed") && w.path) {
			struct stat st;
			if (stat(w.path, &st) == 0 && st.st_dev == g->fs[0].dev)
				bytes += tree_bytes(w.path);
		}
		cp_error_freep(&e);
		workspace_record_clear(&w);

		pthread_mutex_lock(&g->lock);
		struct disk_mark *m = mark_of(g, s->id, 1);
		int grew = m && m->bytes > 0 && bytes > m->bytes && !m->paused;
		if (m)
			m->bytes = bytes;
		pthread_mutex_unlock(&g->lock);
		if (grew && docker_container_pause(lc->engine, s->container_id, &e) == 0) {
			pthread_mutex_lock(&g->lock);
			if ((m = mark_of(g, s->id, 0)))
				m->paused = 1;
			char reason[sizeof(g->reason)];
			snprintf(reason, sizeof(reason), "%s", g->reason);
			pthread_mutex_unlock(&g->lock);
			log_warn("lifecycle", "paused sandbox %s: it was writing while %s", s->id, reason);
			audit(lc, "sandbox.pause", s->id, reason);
		} else if (grew) {
			cp_error_log_free(LOG_LEVEL_WARN, "lifecycle", &e, "disk guard: pause %s", s->id);
		}
		cp_error_freep(&e);
		sandbox_record_clear(s);
	}
	free(rows);
}

/* Space is back: every sandbox the guard paused runs again. */
static void unpause_all(struct lifecycle_disk_guard *g)
{
	struct lifecycle *lc = g->lc;
	pthread_mutex_lock(&g->lock);
	size_t n = g->n_marks;
	struct disk_mark *marks = g->marks;
	g->marks = NULL;
	g->n_marks = 0;
	pthread_mutex_unlock(&g->lock);
	for (size_t i = 0; i < n; i++) {
		if (!marks[i].paused)
			continue;
		struct sandbox_record s = {0};
		_cleanup_error_ struct cp_error *e = NULL;
		if (store_sandbox_get(lc->store, marks[i].id, &s, &e) == 0 && s.container_id &&
		    docker_container_unpause(lc->engine, s.container_id, &e) == 0) {
			log_info("lifecycle", "unpaused sandbox %s: the disk has room again", marks[i].id);
			audit(lc, "sandbox.unpause", marks[i].id, "the disk has room again");
		} else if (e && e->code != CP_ERR_NOT_FOUND) {
			log_warn("lifecycle", "disk guard: unpause %s: %s", marks[i].id, e->message);
		}
		sandbox_record_clear(&s);
	}
	free(marks);
}

static void pass(struct lifecycle_disk_guard *g)
{
	pthread_mutex_lock(&g->lock);
	read_space(g);
	int data_low = g->fs[0].avail < g->fs[0].watermark;
	int engine_low = g->n_fs > 1 && g->fs[1].avail < g->fs[1].watermark;
	int room = 1;
	for (size_t i = 0; i < g->n_fs; i++) {
		int64_t extra = g->fs[i].watermark / 10;
		extra = extra < DISK_RESUME_ROOM_MIN   ? DISK_RESUME_ROOM_MIN
		        : extra > DISK_RESUME_ROOM_MAX ? DISK_RESUME_ROOM_MAX
		                                       : extra;
		room &= g->fs[i].avail >= g->fs[i].watermark + extra;
	}
	int was_low = g->low;
	if (data_low || engine_low) {
		const struct disk_fs *f = data_low ? &g->fs[0] : &g->fs[1];
		snprintf(g->reason, sizeof(g->reason),
		         "the disk holding %s ('%.300s') has %lld MiB free, below the %lld MiB minimum "
		         "(CHAT2SBX_MIN_FREE_DISK)",
		         f->what, f->path, (long long)(f->avail >> 20), (long long)(f->watermark >> 20));
		g->low = 1;
	} else if (room) {
		g->low = 0;
	}
	int low = g->low;
	char reason[sizeof(g->reason)];
	snprintf(reason, sizeof(reason), "%s", g->reason);
	tend_reserve(g);
	pthread_mutex_unlock(&g->lock);

	if (low && !was_low)
		log_warn("lifecycle",
		         "%s: new sandboxes are refused and sandboxes that keep writing are paused "
		         "until space is freed",
		         reason);
	if (data_low || engine_low)
		pause_writers(g, data_low, engine_low);
	else if (!low && was_low) {
		log_info("lifecycle", "the disk has room again: sandboxes may be created, paused ones resume");
		unpause_all(g);
	}
}

static void *guard_main(void *arg)
{
	struct lifecycle_disk_guard *g = arg;
	pthread_mutex_lock(&g->lock);
	while (!g->stop) {
		pthread_mutex_unlock(&g->lock);
		pass(g);
		pthread_mutex_lock(&g->lock);
		struct timespec until = clock_deadline_after(DISK_GUARD_PERIOD_MS);
		while (!g->stop && pthread_cond_timedwait(&g->wake, &g->lock, &until) == 0)
			;
	}
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

static int add_fs(struct lifecycle_disk_guard *g, const char *path, const char *what)
{
	struct stat st;
	if (!path || stat(path, &st) < 0)
		return -1;
	for (size_t i = 0; i < g->n_fs; i++)
		if (g->fs[i].dev == st.st_dev)
			return 0; /* one filesystem: watched once */
	struct disk_fs *f = &g->fs[g->n_fs++];
	snprintf(f->path, sizeof(f->path), "%s", path);
	snprintf(f->what, sizeof(f->what), "%s", what);
	f->dev = st.st_dev;
	return 0;
}

/* The default layer size (CHAT2SBX_DEFAULT_DISK) on this engine's storage:
 * 'auto' is DISK_DEFAULT_AUTO where a size can be given, 'none' none. */
#define DISK_DEFAULT_AUTO ((int64_t)20 * 1024 * 1024 * 1024)
static int default_disk(struct lifecycle *lc, const struct docker_storage *ds, struct cp_error **err)
{
	lc->disk_size_supported = ds->size_supported;
	snprintf(lc->storage_name, sizeof(lc->storage_name), "%s on %s", ds->driver ? ds->driver : "unknown",
	         ds->backing_fs ? ds->backing_fs : "an unknown filesystem");
	const char *v = lc->cfg->default_disk;
	int64_t bytes = 0;
	if (!v || !*v || !strcasecmp(v, "auto"))
		bytes = DISK_DEFAULT_AUTO;
	else if (strcasecmp(v, "none") != 0 && policy_size_parse("CHAT2SBX_DEFAULT_DISK", v, POLICY_DISK_MIN_BYTES,
	                                                         POLICY_DISK_MAX_BYTES, &bytes, err) < 0)
		return -1;
	if (!ds->size_supported && bytes > 0 && v && strcasecmp(v, "auto") != 0)
		log_warn("lifecycle",
		         "CHAT2SBX_DEFAULT_DISK %s is ignored: the engine's storage (%s) cannot limit a "
		         "sandbox's disk; the free-space guard keeps the disk from filling",
		         v, lc->storage_name);
	lc->default_disk_bytes = ds->size_supported ? bytes : 0;
	return 0;
}

int lifecycle_disk_guard_start(struct lifecycle *lc, struct cp_error **err)
{
	int64_t probe = 0;
	if (policy_min_free_parse(lc->cfg->min_free_disk, 1LL << 40, &probe, err) < 0)
		return -1;
	struct docker_storage ds = {0};
	_cleanup_error_ struct cp_error *se = NULL;
	if (docker_engine_storage(lc->engine, &ds, &se) < 0)
		log_warn("lifecycle", "disk guard: %s; sandbox disks are not limited", se->message);
	int r = default_disk(lc, &ds, err);
	if (r < 0) {
		docker_storage_clear(&ds);
		return -1;
	}
	struct lifecycle_disk_guard *g = xcalloc(1, sizeof(*g));
	g->lc = lc;
	pthread_mutex_init(&g->lock, NULL);
	clock_cond_init(&g->wake);
	snprintf(g->reserve, sizeof(g->reserve), "%s/disk-reserve", lc->cfg->state_dir);
	struct stat st;
	g->reserve_held = stat(g->reserve, &st) == 0 && st.st_size >= DISK_RESERVE_BYTES;
	add_fs(g, lc->cfg->data_root, "the data root");
	if (ds.root_dir && add_fs(g, ds.root_dir, "the engine's data") < 0)
		log_info("lifecycle",
		         "disk guard: the engine's data '%s' is not readable here (%s); only the data "
		         "root's disk is watched",
		         ds.root_dir, strerror(errno));
	docker_storage_clear(&ds);
	pass(g); /* the first look before any create */
	if (pthread_create(&g->thread, NULL, guard_main, g) != 0) {
		pthread_cond_destroy(&g->wake);
		pthread_mutex_destroy(&g->lock);
		free(g);
		return cp_error_set(err, CP_ERR_UNAVAILABLE, "start the disk guard thread");
	}
	g->running = 1;
	lc->disk = g;
	return 0;
}

void lifecycle_disk_guard_stop(struct lifecycle *lc)
{
	struct lifecycle_disk_guard *g = lc ? lc->disk : NULL;
	if (!g)
		return;
	pthread_mutex_lock(&g->lock);
	g->stop = 1;
	pthread_cond_signal(&g->wake);
	pthread_mutex_unlock(&g->lock);
	if (g->running)
		pthread_join(g->thread, NULL);
	lc->disk = NULL;
	/* Paused sandboxes stay paused across a stop: the next serve unpauses
	 * them at start (lifecycle_disk_unpause_leftovers) and looks again. */
	pthread_cond_destroy(&g->wake);
	pthread_mutex_destroy(&g->lock);
	free(g->marks);
	free(g);
}

int lifecycle_disk_check_create(struct lifecycle *lc, struct cp_error **err)
{
	struct lifecycle_disk_guard *g = lc->disk;
	if (!g)
		return 0;
	pthread_mutex_lock(&g->lock);
	int low = g->low;
	char reason[sizeof(g->reason)];
	snprintf(reason, sizeof(reason), "%s", g->reason);
	pthread_mutex_unlock(&g->lock);
	if (!low)
		return 0;
	return cp_error_set(err, CP_ERR_LIMIT,
	                    "no sandbox is created while %s; ask the person at this machine to free space "
	                    "(sandbox_destroy what you no longer need), then try again",
	                    reason);
}

const char *lifecycle_disk_note(struct lifecycle *lc)
{
	static __thread char note[300];
	if (lc->disk_size_supported)
		snprintf(note, sizeof(note), "no disk limit was asked (CHAT2SBX_DEFAULT_DISK none)");
	else
		snprintf(note, sizeof(note),
		         "the engine's storage (%s) cannot limit a sandbox's disk; the free-space guard pauses "
		         "sandboxes that keep writing when the host's disk runs low",
		         lc->storage_name[0] ? lc->storage_name : "unknown");
	return note;
}

int lifecycle_disk_paused(struct lifecycle *lc, const char *sandbox_id, char *reason, size_t size)
{
	struct lifecycle_disk_guard *g = lc->disk;
	if (!g)
		return 0;
	pthread_mutex_lock(&g->lock);
	struct disk_mark *m = mark_of(g, sandbox_id, 0);
	int paused = m && m->paused;
	if (paused && reason && size)
		snprintf(reason, size, "%s", g->reason);
	pthread_mutex_unlock(&g->lock);
	return paused;
}

void lifecycle_disk_unpause_leftovers(struct lifecycle *lc)
{
	char label[4300];
	snprintf(label, sizeof(label), "%s=%s", LIFECYCLE_LABEL_REGISTRY, lc->cfg->database_path);
	struct docker_container_state *cs = NULL;
	size_t n = 0;
	_cleanup_error_ struct cp_error *e = NULL;
	if (docker_container_list(lc->engine, label, &cs, &n, &e) < 0)
		return; /* reconcile reports the engine */
	for (size_t i = 0; i < n; i++) {
		if (cs[i].status && !strcmp(cs[i].status, "paused")) {
			if (docker_container_unpause(lc->engine, cs[i].id, &e) == 0)
				log_info("lifecycle",
				         "unpaused container %s, paused by an earlier serve for a full disk; the "
				         "disk guard pauses it again if space is still short",
				         cs[i].name ? cs[i].name : cs[i].id);
			cp_error_freep(&e);
		}
		docker_container_state_clear(&cs[i]);
	}
	free(cs);
}
