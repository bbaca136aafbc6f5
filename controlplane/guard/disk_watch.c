/* disk_watch.c: what each running sandbox writes while a disk is low or
 * near it (disk_guard.c decides when), and pausing the writers (issue 23
 * item 4): measured every pass, judged by disk_decide.c, paused through the
 * engine, unpaused all at once when space is back.
 *
 * What is measured, and how:
 * - The writable layer, through the engine: GET /containers/{id}/json?size=1
 *   (SizeRw). The engine walks the layer's upper directory for it; the host
 *   could too, but only as root (the directories are root's, 0700), and the
 *   engine's answer holds for every storage driver. The walk is bounded by
 *   DISK_SIZE_TIMEOUT_MS; the engine does not stop when we give up, so a
 *   layer that ran out is not asked again for DISK_SIZE_BACKOFF_MS. A layer
 *   that cannot be measured (timeout, SizeRw -1, or a volume, whose bytes
 *   SizeRw leaves out) counts as writing while its disk is low: a sandbox
 *   can make its walk slow on purpose, so unknown must not read as idle.
 * - SizeRw counts regular files only (moby 20.10 pkg/directory.Size). The
 *   hosts, resolv.conf and hostname files the engine mounts read-write into
 *   every container from its own directory are added by lstat where serve
 *   may read them (root). What is still not counted (directories, those
 *   files for a serve that is not root) shows as free space lost beyond the
 *   measured growth (disk_unexplained_add): then every sandbox is paused.
 * - A managed or direct workspace on a watched disk is walked on the host
 *   (st_blocks, not crossing mounts or following links) for at most
 *   DISK_WALK_BUDGET_MS; a walk that runs out or meets an entry it cannot
 *   read is unknown, as above. A clone's source is mounted read-only; its
 *   copy at /workspace is in the layer.
 * Runtimes: runc and gVisor write the container's files into the layer
 * (runsc 20221219, as Debian packages it, writes through its gofer to the
 * same upper directory: 50 MB into /tmp gave SizeRw 50 MB; a runsc
 * registered with --overlay2=root:memory keeps them in the sandbox's memory,
 * under its memory ceiling, not on the disk); the vm runtime's QEMU keeps
 * the guest's disks as qcow2 overlays in the container's layer
 * (template/vm/README.md), so the guest's writes are in SizeRw, and its
 * workspace is a host directory walked as above.
 * Measuring runs one sandbox after another, the cheapest first, and each
 * is judged as soon as it is measured. */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../base/xalloc.h"
#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/log.h"
#include "disk_internal.h"
#include "guard.h"

/* Measuring a workspace walks its files: at most this long each. */
#define DISK_WALK_BUDGET_MS 2000
/* The pause before a layer whose measurement ran out is asked again. */
#define DISK_SIZE_BACKOFF_MS 30000

struct disk_mark *disk_mark_of(struct guard_disk *g, const char *id, int create)
{
	for (size_t i = 0; i < g->n_marks; i++)
		if (!strcmp(g->marks[i].id, id))
			return &g->marks[i];
	if (!create)
		return NULL;
	g->marks = xrealloc(g->marks, (g->n_marks + 1) * sizeof(*g->marks));
	struct disk_mark *m = &g->marks[g->n_marks++];
	*m = (struct disk_mark){0};
	snprintf(m->id, sizeof(m->id), "%s", id);
	for (size_t i = 0; i < DISK_PARTS; i++)
		m->part[i] = (struct disk_part){.fs = -1, .last = -1, .base = -1};
	return m;
}

/* ---- measuring ---- */

/* Bytes a directory tree holds (st_blocks), not crossing mounts nor
 * following links, for at most DISK_WALK_BUDGET_MS. The guard's thread
 * only, hence the thread-local walk state nftw's callback needs. */
static __thread int64_t walk_bytes, walk_deadline;
static __thread int walk_partial;
static int walk_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)path;
	(void)ftw;
	if (flag == FTW_NS || flag == FTW_DNR)
		walk_partial = 1; /* something in it cannot be counted */
	if (flag != FTW_NS)
		walk_bytes += (int64_t)st->st_blocks * 512;
	if (clock_monotonic_ms() > walk_deadline) {
		walk_partial = 1;
		return 1;
	}
	return 0;
}

static enum disk_size tree_bytes(const char *dir, int64_t *ret)
{
	walk_bytes = 0;
	walk_partial = 0;
	walk_deadline = clock_monotonic_ms() + DISK_WALK_BUDGET_MS;
	int r = nftw(dir, walk_entry, 16, FTW_PHYS | FTW_MOUNT);
	if (r < 0 && errno == ENOENT)
		return DISK_SIZE_NONE; /* removed meanwhile */
	*ret = walk_bytes;
	return r != 0 || walk_partial ? DISK_SIZE_UNKNOWN : DISK_SIZE_KNOWN;
}

int disk_fs_of_dev(const struct guard_disk *g, dev_t dev)
{
	for (size_t i = 0; i < g->n_fs; i++)
		if (g->fs[i].dev == dev)
			return (int)i;
	return -1;
}

/* A managed or direct workspace (a clone's source is mounted read-only) on
 * a watched filesystem: its bytes when that filesystem is watched now. */
static void measure_workspace(struct guard_disk *g, const struct disk_fs *fs, const struct sandbox_record *s,
                              struct disk_part *p)
{
	p->state = DISK_SIZE_NONE;
	struct workspace_record w = {0};
	_cleanup_error_ struct cp_error *e = NULL;
	struct stat st;
	if (store_workspace_get(g->host->store, s->workspace_id, &w, &e) == 0 && w.path &&
	    (!strcmp(w.mode, "managed") || !strcmp(w.mode, "direct")) && stat(w.path, &st) == 0) {
		p->fs = disk_fs_of_dev(g, st.st_dev);
		if (p->fs >= 0 && fs[p->fs].watch)
			p->state = tree_bytes(w.path, &p->bytes);
	}
	workspace_record_clear(&w);
}

/* The writable layer and the engine's files mounted into it, when the
 * engine's filesystem (engine_fs) is watched now. Returns -1 when the
 * container is gone. */
static int measure_layer(struct guard_disk *g, const struct disk_fs *fs, int engine_fs, const struct sandbox_record *s,
                         struct disk_mark *m)
{
	struct disk_part *p = &m->part[DISK_PART_LAYER];
	p->fs = engine_fs;
	p->state = DISK_SIZE_NONE;
	if (engine_fs < 0 || !fs[engine_fs].watch)
		return 0;
	int64_t t0 = clock_monotonic_ms();
	if (t0 < m->skip_until_ms) {
		p->state = DISK_SIZE_UNKNOWN;
		return 0;
	}
	struct docker_container_usage u = {0};
	_cleanup_error_ struct cp_error *e = NULL;
	int r = docker_container_usage(g->host->engine, s->container_id, g->size_timeout_ms, &u, &e);
	m->cost_ms = clock_monotonic_ms() - t0;
	if (r < 0) {
		if (e->code == CP_ERR_NOT_FOUND)
			return -1;
		if (e->code == CP_ERR_TIMEOUT) {
			p->state = DISK_SIZE_UNKNOWN;
			m->skip_until_ms = clock_monotonic_ms() + DISK_SIZE_BACKOFF_MS;
		}
		log_warn("guard", "disk guard: %s", e->message);
		return 0;
	}
	if (u.paused) {
		/* Paused by someone else: it writes nothing meanwhile. */
	} else if (u.size_rw < 0 || u.volumes > 0) {
		p->state = DISK_SIZE_UNKNOWN;
	} else {
		p->bytes = u.size_rw;
		for (size_t i = 0; i < sizeof(u.files) / sizeof(u.files[0]); i++) {
			struct stat st;
			if (u.files[i] && lstat(u.files[i], &st) == 0 && S_ISREG(st.st_mode))
				p->bytes += (int64_t)st.st_blocks * 512;
		}
		p->state = DISK_SIZE_KNOWN;
	}
	docker_container_usage_clear(&u);
	return 0;
}

/* ---- acting ---- */

void guard_disk_audit(const struct guard_host *h, const char *action, const char *sandbox_id, const char *message)
{
	struct audit_record a = {.at_ms = clock_now_ms(),
	                         .actor = "serve",
	                         .action = action,
	                         .sandbox_id = sandbox_id,
	                         .status = "ok",
	                         .message = message};
	_cleanup_error_ struct cp_error *e = NULL;
	if (store_audit_insert(h->store, &a, &e) < 0)
		log_warn("guard", "audit %s of %s: %s", action, sandbox_id, e->message);
}

/* Pauses one sandbox for verdict v and records why for its callers. */
static void pause_sandbox(struct guard_disk *g, const struct sandbox_record *s, enum disk_verdict v,
                          int64_t unexplained)
{
	char why[200];
	const char *did; /* for the log, after "paused sandbox X: " */
	if (v == DISK_PAUSE_GREW) {
		did = "it was writing";
		snprintf(why, sizeof(why), "it kept writing to that disk");
	} else if (v == DISK_PAUSE_UNMEASURED) {
		did = "its disk use could not be measured in time";
		snprintf(why, sizeof(why),
		         "how much it writes could not be measured in time, and a sandbox that cannot be measured "
		         "counts as writing");
	} else {
		did = "the disk kept filling beyond what the sandboxes' measured growth explains";
		snprintf(why, sizeof(why),
		         "the disk lost %lld MiB more than the sandboxes' measured growth, so every sandbox on it "
		         "was paused",
		         (long long)(unexplained >> 20));
	}
	_cleanup_error_ struct cp_error *e = NULL;
	if (docker_container_pause(g->host->engine, s->container_id, &e) < 0) {
		log_warn("guard", "disk guard: pause %s: %s", s->id, e->message);
		return;
	}
	char reason[sizeof(((struct disk_mark *)0)->reason)];
	pthread_mutex_lock(&g->lock);
	snprintf(reason, sizeof(reason), "%.470s; %.199s", g->reason, why);
	struct disk_mark *m = disk_mark_of(g, s->id, 1);
	m->paused = 1;
	m->why = v;
	snprintf(m->reason, sizeof(m->reason), "%s", reason);
	pthread_mutex_unlock(&g->lock);
	log_warn("guard", "paused sandbox %s: %s while %s", s->id, did, reason);
	guard_disk_audit(g->host, "sandbox.pause", s->id, reason);
}

void disk_unpause_all(struct guard_disk *g)
{
	const struct guard_host *h = g->host;
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
		if (store_sandbox_get(h->store, marks[i].id, &s, &e) == 0 && s.container_id &&
		    docker_container_unpause(h->engine, s.container_id, &e) == 0) {
			log_info("guard", "unpaused sandbox %s: the disk has room again", marks[i].id);
			guard_disk_audit(h, "sandbox.unpause", marks[i].id, "the disk has room again");
		} else if (e && e->code != CP_ERR_NOT_FOUND) {
			log_warn("guard", "disk guard: unpause %s: %s", marks[i].id, e->message);
		}
		sandbox_record_clear(&s);
	}
	free(marks);
}

/* ---- one look ---- */

struct candidate {
	struct sandbox_record *s;
	int64_t cost_ms;
};

static int by_cost(const void *a, const void *b)
{
	const struct candidate *x = a, *y = b;
	return (x->cost_ms > y->cost_ms) - (x->cost_ms < y->cost_ms);
}

/* The running sandboxes the guard has not paused, cheapest to measure first
 * (a slow one does not delay the verdict on the others); marks of sandboxes
 * no longer running are dropped. *ret_rows owns the records. */
static size_t candidates(struct guard_disk *g, struct sandbox_record **ret_rows, size_t *ret_n, struct candidate **ret)
{
	_cleanup_error_ struct cp_error *e = NULL;
	*ret_rows = NULL;
	*ret_n = 0;
	*ret = NULL;
	if (store_sandbox_list(g->host->store, 0, ret_rows, ret_n, &e) < 0) {
		log_warn("guard", "disk guard: list sandboxes: %s", e->message);
		return 0;
	}
	struct candidate *c = xcalloc(*ret_n + 1, sizeof(*c));
	size_t n = 0;
	pthread_mutex_lock(&g->lock);
	for (size_t i = 0; i < g->n_marks; i++)
		g->marks[i].seen = 0;
	for (size_t i = 0; i < *ret_n; i++) {
		struct sandbox_record *s = &(*ret_rows)[i];
		/* This machine's disks hold only this machine's sandboxes: another
		 * node's are its own disk guard's (not built yet, docs/nodes.md). */
		if (s->status != SANDBOX_RUNNING || s->pooled || !s->container_id ||
		    (s->node && strcmp(s->node, STORE_NODE_LOCAL)))
			continue;
		struct disk_mark *m = disk_mark_of(g, s->id, 1);
		m->seen = 1;
		if (!m->paused)
			c[n++] = (struct candidate){.s = s, .cost_ms = m->cost_ms};
	}
	size_t kept = 0;
	for (size_t i = 0; i < g->n_marks; i++)
		if (g->marks[i].seen || g->marks[i].paused)
			g->marks[kept++] = g->marks[i];
	g->n_marks = kept;
	pthread_mutex_unlock(&g->lock);
	qsort(c, n, sizeof(*c), by_cost);
	*ret = c;
	return n;
}

void disk_watch_sandboxes(struct guard_disk *g)
{
	struct disk_fs fs[DISK_MAX_FS];
	pthread_mutex_lock(&g->lock);
	size_t n_fs = g->n_fs;
	memcpy(fs, g->fs, sizeof(fs));
	pthread_mutex_unlock(&g->lock);
	int engine_fs = -1;
	for (size_t i = 0; i < n_fs; i++)
		if (fs[i].roles & DISK_ROLE_ENGINE)
			engine_fs = (int)i;

	struct sandbox_record *rows = NULL;
	size_t n_rows = 0;
	struct candidate *c = NULL;
	size_t n = candidates(g, &rows, &n_rows, &c);
	int64_t explained[DISK_MAX_FS] = {0};
	int *paused = xcalloc(n + 1, sizeof(*paused));
	for (size_t i = 0; i < n; i++) {
		const struct sandbox_record *s = c[i].s;
		struct disk_mark m;
		pthread_mutex_lock(&g->lock);
		m = *disk_mark_of(g, s->id, 1);
		pthread_mutex_unlock(&g->lock);
		if (measure_layer(g, fs, engine_fs, s, &m) < 0) {
			paused[i] = 1; /* gone: nothing to pause */
			continue;
		}
		measure_workspace(g, fs, s, &m.part[DISK_PART_WORKSPACE]);
		enum disk_verdict v = disk_judge_sandbox(fs, n_fs, m.part, DISK_PARTS);
		for (size_t k = 0; k < DISK_PARTS; k++) {
			if (m.part[k].fs >= 0)
				explained[m.part[k].fs] += disk_part_growth(&m.part[k]);
			disk_part_advance(fs, n_fs, &m.part[k]);
		}
		pthread_mutex_lock(&g->lock);
		struct disk_mark *live = disk_mark_of(g, s->id, 1);
		memcpy(live->part, m.part, sizeof(m.part));
		live->cost_ms = m.cost_ms;
		live->skip_until_ms = m.skip_until_ms;
		pthread_mutex_unlock(&g->lock);
		if (v != DISK_KEEP) {
			pause_sandbox(g, s, v, 0);
			paused[i] = 1;
		}
	}
	for (size_t f = 0; f < n_fs; f++) {
		int64_t lost = 0;
		pthread_mutex_lock(&g->lock);
		int over = disk_unexplained_add(&g->fs[f], explained[f], &lost);
		pthread_mutex_unlock(&g->lock);
		if (!over)
			continue;
		log_warn("guard",
		         "disk guard: '%s' lost %lld MiB more than the sandboxes' measured growth while low "
		         "(directories and the engine's mounted files are not in the engine's count): every "
		         "sandbox on it is paused",
		         fs[f].path, (long long)(lost >> 20));
		for (size_t i = 0; i < n; i++)
			if (!paused[i])
				pause_sandbox(g, c[i].s, DISK_PAUSE_UNEXPLAINED, lost);
		break; /* every candidate is paused (or tried) */
	}
	free(paused);
	free(c);
	for (size_t i = 0; i < n_rows; i++)
		sandbox_record_clear(&rows[i]);
	free(rows);
}
