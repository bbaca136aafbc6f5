/* disk_guard.c: a full disk cannot take chat2sbx (or the host) down (issues
 * 13 and 23). Every DISK_GUARD_PERIOD_MS it reads the free space of the data
 * root's filesystem and of the engine's data directory (DockerRootDir, GET
 * /info); one filesystem holding both (one disk, the common case) is watched
 * once in both roles. Below the watermark (CHAT2SBX_MIN_FREE_DISK) creates
 * and saves are refused, and while a disk is low or near it disk_watch.c
 * measures every running sandbox's writable layer and workspace on it and
 * pauses the writers (the engine's freezer; what is measured how, and why,
 * is in its opening comment) until space is back; a reserve file keeps room
 * for the registry. Never deletes anything of a sandbox. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "../base/xalloc.h"
#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/log.h"
#include "../base/periodic.h"
#include "disk_internal.h"
#include "guard.h"

/* The state directory keeps this much room for the registry. */
#define DISK_RESERVE_BYTES ((int64_t)16 * 1024 * 1024)

static int statvfs_space(const char *path, int64_t *ret_total, int64_t *ret_avail)
{
	struct statvfs sv;
	if (statvfs(path, &sv) < 0)
		return -1;
	*ret_total = (int64_t)sv.f_blocks * (int64_t)sv.f_frsize;
	*ret_avail = (int64_t)sv.f_bavail * (int64_t)sv.f_frsize;
	return 0;
}

/* Free space and watermark of each watched filesystem, their judgement,
 * and why the guard is low. Under g->lock. */
static void read_space(struct guard_disk *g)
{
	const struct disk_fs *below = NULL;
	for (size_t i = 0; i < g->n_fs; i++) {
		struct disk_fs *f = &g->fs[i];
		if (g->space(f->path, &f->total, &f->avail) < 0)
			continue;
		const struct config *cfg = g->host->cfg;
		f->watermark = policy_min_free_bytes(cfg->min_free_disk_bytes, cfg->min_free_disk_percent, f->total);
		disk_fs_judge(f);
		if (!below && f->avail < f->watermark)
			below = f;
	}
	g->low = 0;
	for (size_t i = 0; i < g->n_fs; i++)
		g->low |= g->fs[i].low;
	/* Back above the watermark but not yet by the resume room: the last
	 * reason stands. */
	if (below)
		snprintf(g->reason, sizeof(g->reason),
		         "the disk holding %s ('%.300s') has %lld MiB free, below the %lld MiB minimum "
		         "(CHAT2SBX_MIN_FREE_DISK)",
		         below->what, below->path, (long long)(below->avail >> 20),
		         (long long)(below->watermark >> 20));
}

/* The reserve file: given up when the data root is all but full, so SQLite
 * finds room for its journal; made again once the disk is not low. Under
 * g->lock. */
static void tend_reserve(struct guard_disk *g)
{
	const struct disk_fs *data = NULL;
	for (size_t i = 0; i < g->n_fs && !data; i++)
		if (g->fs[i].roles & DISK_ROLE_DATA)
			data = &g->fs[i];
	if (!data || !g->reserve[0])
		return;
	if (g->reserve_held && data->avail < DISK_RESERVE_BYTES) {
		if (unlink(g->reserve) == 0) {
			g->reserve_held = 0;
			log_warn("guard",
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

void disk_guard_pass(struct guard_disk *g)
{
	pthread_mutex_lock(&g->lock);
	int was_low = g->low;
	read_space(g);
	int low = g->low, watch = 0;
	for (size_t i = 0; i < g->n_fs; i++)
		watch |= g->fs[i].watch;
	char reason[sizeof(g->reason)];
	snprintf(reason, sizeof(reason), "%s", g->reason);
	tend_reserve(g);
	pthread_mutex_unlock(&g->lock);

	if (low && !was_low)
		log_warn("guard",
		         "%s: new sandboxes and saves are refused and sandboxes that keep writing are paused "
		         "until space is freed",
		         reason);
	if (!low && was_low) {
		log_info("guard", "the disk has room again: sandboxes may be created, paused ones resume");
		disk_unpause_all(g);
	}
	if (watch)
		disk_watch_sandboxes(g);

	pthread_mutex_lock(&g->lock);
	for (size_t i = 0; i < g->n_fs; i++) {
		g->fs[i].watched_before = g->fs[i].watch;
		g->fs[i].prev_avail = g->fs[i].avail;
	}
	pthread_mutex_unlock(&g->lock);
}

static long guard_pass(void *arg)
{
	disk_guard_pass(arg);
	return -1; /* every DISK_GUARD_PERIOD_MS */
}

struct guard_disk *disk_guard_new(const struct guard_host *h, disk_space_fn space)
{
	struct guard_disk *g = xcalloc(1, sizeof(*g));
	g->host = h;
	g->space = space ? space : statvfs_space;
	g->size_timeout_ms = DISK_SIZE_TIMEOUT_MS;
	pthread_mutex_init(&g->lock, NULL);
	if (h->cfg->state_dir) {
		snprintf(g->reserve, sizeof(g->reserve), "%s/disk-reserve", h->cfg->state_dir);
		struct stat st;
		g->reserve_held = stat(g->reserve, &st) == 0 && st.st_size >= DISK_RESERVE_BYTES;
	}
	return g;
}

int disk_guard_add_fs(struct guard_disk *g, const char *path, unsigned roles)
{
	struct stat st;
	if (!path || stat(path, &st) < 0)
		return -1;
	int i = disk_fs_of_dev(g, st.st_dev);
	if (i < 0) {
		if (g->n_fs == DISK_MAX_FS)
			return -1;
		i = (int)g->n_fs++;
		g->fs[i] = (struct disk_fs){.dev = st.st_dev, .prev_avail = -1};
		snprintf(g->fs[i].path, sizeof(g->fs[i].path), "%s", path);
	}
	struct disk_fs *f = &g->fs[i];
	f->roles |= roles;
	snprintf(f->what, sizeof(f->what), "%s",
	         f->roles == (DISK_ROLE_DATA | DISK_ROLE_ENGINE) ? "the data root and the engine's data"
	         : f->roles & DISK_ROLE_DATA                     ? "the data root"
	                                                         : "the engine's data");
	return 0;
}

void disk_guard_free(struct guard_disk *g)
{
	if (!g)
		return;
	pthread_mutex_destroy(&g->lock);
	free(g->marks);
	free(g);
}

/* ---- the entry points (guard.h) ---- */

/* The default layer size (CHAT2SBX_DEFAULT_DISK) on this engine's storage:
 * 'auto' is DISK_DEFAULT_AUTO where a size can be given, 'none' none. */
#define DISK_DEFAULT_AUTO ((int64_t)20 * 1024 * 1024 * 1024)
static void default_disk(const struct config *cfg, const struct docker_storage *ds, struct guard_storage *ret)
{
	ret->size_supported = ds->size_supported;
	snprintf(ret->name, sizeof(ret->name), "%s on %s", ds->driver ? ds->driver : "unknown",
	         ds->backing_fs ? ds->backing_fs : "an unknown filesystem");
	int64_t v = cfg->default_disk_bytes;
	int64_t bytes = v == CONFIG_SIZE_AUTO ? DISK_DEFAULT_AUTO : v == CONFIG_SIZE_NONE ? 0 : v;
	if (!ds->size_supported && v > 0)
		log_warn("guard",
		         "CHAT2SBX_DEFAULT_DISK %lldm is ignored: the engine's storage (%s) cannot limit a "
		         "sandbox's disk; the free-space guard keeps the disk from filling",
		         (long long)(v >> 20), ret->name);
	ret->default_bytes = ds->size_supported ? bytes : 0;
}

int guard_disk_start(const struct guard_host *h, struct guard_storage *ret_storage, struct guard_disk **ret,
                     struct cp_error **err)
{
	struct docker_storage ds = {0};
	_cleanup_error_ struct cp_error *se = NULL;
	if (docker_engine_storage(h->engine, &ds, &se) < 0)
		log_warn("guard", "disk guard: %s; sandbox disks are not limited", se->message);
	default_disk(h->cfg, &ds, ret_storage);
	struct guard_disk *g = disk_guard_new(h, NULL);
	disk_guard_add_fs(g, h->cfg->data_root, DISK_ROLE_DATA);
	if (ds.root_dir && disk_guard_add_fs(g, ds.root_dir, DISK_ROLE_ENGINE) < 0)
		log_info("guard",
		         "disk guard: the engine's data '%s' is not readable here (%s); only the data root's disk "
		         "is watched and writable layers are not measured",
		         ds.root_dir, strerror(errno));
	for (size_t i = 0; i < g->n_fs; i++)
		log_info("guard", "disk guard: watching the disk of '%s' for %s%s", g->fs[i].path, g->fs[i].what,
		         g->fs[i].roles == (DISK_ROLE_DATA | DISK_ROLE_ENGINE) ? " (one disk)" : "");
	docker_storage_clear(&ds);
	disk_guard_pass(g); /* the first look before any create */
	g->worker = periodic_start("disk guard", DISK_GUARD_PERIOD_MS, DISK_GUARD_PERIOD_MS, guard_pass, g);
	if (!g->worker) {
		disk_guard_free(g);
		return cp_error_set(err, CP_ERR_UNAVAILABLE, "start the disk guard thread");
	}
	*ret = g;
	return 0;
}

void guard_disk_stop(struct guard_disk *g)
{
	if (!g)
		return;
	periodic_stop(g->worker);
	/* Paused sandboxes stay paused across a stop: the next serve unpauses
	 * them at start (guard_disk_unpause_leftovers) and looks again. */
	disk_guard_free(g);
}

int guard_disk_check_create(struct guard_disk *g, struct cp_error **err)
{
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

const char *guard_disk_note(const struct guard_storage *st)
{
	static __thread char note[300];
	if (st->size_supported)
		snprintf(note, sizeof(note), "no disk limit was asked (CHAT2SBX_DEFAULT_DISK none)");
	else
		snprintf(note, sizeof(note),
		         "the engine's storage (%s) cannot limit a sandbox's disk; the free-space guard pauses "
		         "sandboxes that keep writing when the host's disk runs low",
		         st->name[0] ? st->name : "unknown");
	return note;
}

int guard_disk_paused(struct guard_disk *g, const char *sandbox_id, char *reason, size_t size)
{
	if (!g)
		return 0;
	pthread_mutex_lock(&g->lock);
	struct disk_mark *m = disk_mark_of(g, sandbox_id, 0);
	int paused = m && m->paused;
	if (paused && reason && size)
		snprintf(reason, size, "%s", m->reason);
	pthread_mutex_unlock(&g->lock);
	return paused;
}

void guard_disk_unpause_leftovers(const struct guard_host *h)
{
	char label[4300];
	snprintf(label, sizeof(label), "%s=%s", POLICY_LABEL_REGISTRY, h->cfg->database_path);
	struct docker_container_state *cs = NULL;
	size_t n = 0;
	_cleanup_error_ struct cp_error *e = NULL;
	if (docker_container_list(h->engine, label, &cs, &n, &e) < 0)
		return; /* reconcile reports the engine */
	for (size_t i = 0; i < n; i++) {
		if (cs[i].status && !strcmp(cs[i].status, "paused")) {
			if (docker_container_unpause(h->engine, cs[i].id, &e) == 0)
				log_info("guard",
				         "unpaused container %s, paused by an earlier serve for a full disk; the "
				         "disk guard pauses it again if space is still short",
				         cs[i].name ? cs[i].name : cs[i].id);
			cp_error_freep(&e);
		}
		docker_container_state_clear(&cs[i]);
	}
	free(cs);
}
