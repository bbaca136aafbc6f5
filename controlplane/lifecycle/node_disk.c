/* node_disk.c: the free-space guard of other nodes (issue 28, item 3). The
 * Docker API tells no free space, so on each node serve keeps one probe
 * container of its own (the template image, no network, read-only root,
 * no capability, nothing of a model's ever runs in it) with a volume of
 * the node's engine mounted, and asks it with the exec API for statfs of
 * that volume: the filesystem of the engine's data, where layers and
 * volumes live. A thread per node looks every NODE_DISK_PERIOD_MS, bounded
 * in time, so a node that stalls holds up only its own look. Below
 * CHAT2SBX_MIN_FREE_DISK placement leaves the node out (a create pinned
 * there gets LIMIT) and every running sandbox of the node is paused
 * through its engine, unpaused once space is back above the resume room.
 * Never deletes anything of a sandbox. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/log.h"
#include "../base/periodic.h"
#include "../base/xalloc.h"
#include "lifecycle_internal.h"

/* How often each node's disk is looked at, how often the node rows are
 * read (a node added or removed), and one probe's bound (ms). */
#define NODE_DISK_PERIOD_MS 10000L
#define NODE_DISK_SYNC_MS 2000L
#define NODE_DISK_EXEC_MS 5000L
/* How long a node may take to answer _ping before its probe's removal
 * at stop, or the unpause of its leftovers at start, is skipped (ms). */
#define NODE_DISK_PING_MS 1500L
/* Where the probe's volume is mounted in it, and what the probe runs. */
#define NODE_DISK_TARGET "/df"
/* The volume is the same on every node and for every registry: it holds
 * nothing, so sharing it costs nothing, and a removal while another
 * registry's probe uses it is refused by the engine (ignored). */
#define NODE_DISK_VOLUME "chat2sbx-df"

struct node_disk_watch {
	char *name; /* owned */
	struct lifecycle_node_disks *all;
	struct periodic *worker;
	/* The worker's own (no lock): */
	struct docker_engine *engine; /* borrowed from node_engines.c once opened */
	char *probe;                  /* owned: the probe container's id; NULL none made yet */
	int looked;                   /* a pass reached the engine (leftovers unpaused: a node down at start) */
	int image_missing;            /* the lack of the template image was logged */
	int gone;                     /* the row is gone and the probe removed */
	int unknown_logged;           /* the last look failed and that was logged */
	int reconciling;              /* under all->lock: the node's reconcile runs; no pause meanwhile */
	char *procs_read;             /* owned: the probe whose /proc gave the node's process limits */
	/* Under all->lock: */
	struct node_disk disk; /* what the last look found; total_bytes -1 unknown */
	char reason[400];      /* while low: why, with the numbers */
	char **paused;         /* owned ids this guard paused */
	size_t n_paused;
};

struct lifecycle_node_disks {
	struct lifecycle *lc;
	pthread_mutex_t lock;
	struct periodic *sync;
	struct node_disk_watch **nodes; /* under lock */
	size_t n;
	char probe_name[64];    /* this registry's probe container on every node */
	char label_value[4200]; /* this registry (the database path) */
};

/* ---- the probe container ---- */

static void probe_name_of(const char *registry, char *buf, size_t size)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a: a name per registry, not a secret */
	for (const unsigned char *p = (const unsigned char *)registry; *p; p++)
		h = (h ^ *p) * 1099511628211ULL;
	snprintf(buf, size, "chat2sbx-df-%016llx", (unsigned long long)h);
}

/* Removes the probe container (this one, or an earlier serve's by its
 * name) and, with volume, the volume. */
static void probe_remove(struct node_disk_watch *w, int volume)
{
	_cleanup_error_ struct cp_error *e = NULL;
	const char *which = w->probe ? w->probe : w->all->probe_name;
	if (docker_container_remove(w->engine, which, &e) < 0 && e->code != CP_ERR_NOT_FOUND)
		log_info("lifecycle", "disk of node %s: remove its disk probe: %s", w->name, e->message);
	cp_error_freep(&e);
	if (volume && docker_volume_remove(w->engine, NODE_DISK_VOLUME, &e) < 0)
		cp_error_freep(&e); /* in use by another registry's probe, or gone: either is fine */
	free(w->probe);
	w->probe = NULL;
}

/* Makes and starts the probe (an earlier serve's is removed first).
 * -1 (logged once for a missing image) when it cannot. */
static int probe_make(struct node_disk_watch *w)
{
	struct lifecycle *lc = w->all->lc;
	_cleanup_error_ struct cp_error *e = NULL;
	_cleanup_free_ char *image_id = NULL;
	const char *image = lc->cfg->template_image;
	if (docker_image_inspect(w->engine, image, &image_id, &e) < 0) {
		if (e->code == CP_ERR_NOT_FOUND && !w->image_missing)
			log_warn("lifecycle",
			         "disk of node %s: not known: the node lacks the template image '%s' its probe "
			         "runs; load it there (docs/nodes.md, Set-up)",
			         w->name, image);
		else if (e->code != CP_ERR_NOT_FOUND)
			log_info("lifecycle", "disk of node %s: %s", w->name, e->message);
		w->image_missing = e->code == CP_ERR_NOT_FOUND;
		return -1;
	}
	w->image_missing = 0;
	probe_remove(w, 0);
	const char *labels[] = {POLICY_LABEL_DISK_PROBE, w->all->label_value, NULL};
	/* PID 1 has no default action for SIGTERM: a bare sleep would hold the
	 * node's engine stop (and restart) up for its 10 s grace. */
	const char *entrypoint[] = {"sh", "-c", "trap 'exit 0' TERM; sleep infinity & wait", NULL};
	if (docker_volume_create(w->engine, NODE_DISK_VOLUME, labels, &e) < 0)
		goto fail;
	struct docker_mount mount = {
	    .source = NODE_DISK_VOLUME, .target = NODE_DISK_TARGET, .read_only = 1, .volume = 1};
	struct docker_container_spec spec = {
	    .name = w->all->probe_name,
	    .image = image,
	    .entrypoint = entrypoint,
	    .labels = labels,
	    .mounts = &mount,
	    .n_mounts = 1,
	    .memory_bytes = 16LL * 1024 * 1024,
	    .pids_limit = 8,
	    .network_disabled = 1,
	    LIFECYCLE_SERVICE_CONTAINER,
	};
	char *id = NULL;
	if (docker_container_create(w->engine, &spec, &id, &e) < 0)
		goto fail;
	w->probe = id;
	if (docker_container_start(w->engine, id, &e) < 0)
		goto fail;
	log_info("lifecycle", "disk of node %s: its disk probe %s is running", w->name, w->all->probe_name);
	return 0;
fail:
	if (!w->unknown_logged) /* once until a look succeeds again */
		log_warn("lifecycle", "disk of node %s: not known: make its disk probe: %s", w->name, e->message);
	w->unknown_logged = 1;
	probe_remove(w, 0);
	return -1;
}

/* The free space of the node's engine storage, asked of the probe (made
 * when missing, made again once when it is gone). -1 when not known
 * (logged). */
static int probe_look(struct node_disk_watch *w, int64_t *ret_total, int64_t *ret_avail)
{
	const char *argv[] = {"stat", "-f", "-c", "%S %b %a", NODE_DISK_TARGET, NULL};
	for (int attempt = 0; attempt < 2; attempt++) {
		if (!w->probe && probe_make(w) < 0)
			return -1;
		struct docker_exec_result res = {0};
		_cleanup_error_ struct cp_error *e = NULL;
		int r = docker_container_exec(w->engine, w->probe, argv, NODE_DISK_EXEC_MS, &res, &e);
		if (r < 0 && (e->code == CP_ERR_NOT_FOUND || e->code == CP_ERR_CONFLICT)) {
			free(w->probe); /* gone or stopped: made again */
			w->probe = NULL;
			continue;
		}
		int ok = r == 0 && res.exit_code == 0 && !res.truncated && res.out &&
		         guard_node_disk_parse(res.out, strlen(res.out), ret_total, ret_avail) == 0;
		if (!ok && !w->unknown_logged) /* once until a look succeeds again */
			log_warn("lifecycle", "disk of node %s: not known: %s", w->name,
			         r < 0 ? e->message : "its disk probe's answer is not three numbers");
		w->unknown_logged = !ok;
		docker_exec_result_clear(&res);
		return ok ? 0 : -1;
	}
	return -1;
}

/* The node's kernel.pid_max and kernel.threads-max, read once per probe
 * made, into its row (migration 0019) for its process budget
 * (policy_node_sandbox_limits). Not in the probe: on kernels from 6.14 a
 * pid namespace has a pid_max of its own (a container's shows 4194304 on
 * a host with 32768, measured on 6.18), so they are read in a check
 * container in the node's pid namespace (node_check.c; nobody, no
 * capability, it only reads /proc/sys/kernel). A failure is logged and
 * tried again with the next probe; the assumed default holds meanwhile. */
static void probe_procs(struct node_disk_watch *w)
{
	if (!w->probe || (w->procs_read && !strcmp(w->procs_read, w->probe)))
		return;
	const char *argv[] = {"cat", "/proc/sys/kernel/pid_max", "/proc/sys/kernel/threads-max", NULL};
	struct lifecycle_node_check check = {.argv = argv, .pid_host = 1};
	_cleanup_free_ char *out = NULL;
	_cleanup_error_ struct cp_error *e = NULL;
	int64_t pid_max = 0, threads_max = 0;
	int r = lifecycle_node_check_run(w->all->lc, w->name, &check, &out, &e);
	int ok = r == 0 && policy_node_procs_parse(out, strlen(out), &pid_max, &threads_max) == 0;
	if (!ok) {
		log_info("lifecycle", "node %s: its process limits are not known (%s); its budget assumes %d", w->name,
		         r < 0 ? e->message : "the answer is not two numbers", POLICY_NODE_PROCS_ASSUMED);
	} else if (store_node_set_procs(w->all->lc->store, w->name, pid_max, threads_max, &e) < 0) {
		log_info("lifecycle", "node %s: %s", w->name, e->message);
		return;
	} else {
		log_debug("lifecycle", "node %s: kernel.pid_max %lld, threads-max %lld", w->name, (long long)pid_max,
		          (long long)threads_max);
	}
	free(w->procs_read);
	w->procs_read = xstrdup(w->probe);
}

/* ---- pausing the node's sandboxes ---- */

static int paused_has(const struct node_disk_watch *w, const char *id)
{
	for (size_t i = 0; i < w->n_paused; i++)
		if (!strcmp(w->paused[i], id))
			return 1;
	return 0;
}

/* Every running sandbox of the node (warm-pool members too) that this
 * guard has not paused yet is paused, with reason. */
static void pause_running(struct node_disk_watch *w, const char *reason)
{
	struct lifecycle *lc = w->all->lc;
	struct sandbox_record *rows = NULL;
	size_t n = 0;
	_cleanup_error_ struct cp_error *e = NULL;
	if (store_sandbox_list(lc->store, STORE_SANDBOX_LIST_POOLED, &rows, &n, &e) < 0) {
		log_warn("lifecycle", "disk of node %s: %s", w->name, e->message);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const struct sandbox_record *s = &rows[i];
		pthread_mutex_lock(&w->all->lock);
		/* The node's reconcile began meanwhile: it re-attaches what it
		 * finds, so nothing is paused under it (the pass after it looks
		 * again). */
		int stop = w->reconciling;
		int skip = stop || s->status != SANDBOX_RUNNING || !s->container_id ||
		           !lifecycle_node_same(w->name, s->node) || paused_has(w, s->id);
		pthread_mutex_unlock(&w->all->lock);
		if (stop) {
			for (size_t j = i; j < n; j++)
				sandbox_record_clear(&rows[j]);
			break;
		}
		if (!skip && docker_container_pause(w->engine, s->container_id, &e) < 0 && e->code != CP_ERR_CONFLICT) {
			log_warn("lifecycle", "disk of node %s: pause sandbox %s: %s", w->name, s->id, e->message);
			skip = 1;
		}
		cp_error_freep(&e);
		if (!skip) {
			pthread_mutex_lock(&w->all->lock);
			w->paused = xrealloc(w->paused, (w->n_paused + 1) * sizeof(*w->paused));
			w->paused[w->n_paused++] = xstrdup(s->id);
			pthread_mutex_unlock(&w->all->lock);
			log_warn("lifecycle", "paused sandbox %s: %s", s->id, reason);
			guard_disk_audit(&lc->host, "sandbox.pause", s->id, reason);
		}
		sandbox_record_clear(&rows[i]);
	}
	free(rows);
}

/* Space is back: unpauses what this guard paused (a sandbox removed since
 * is NOT_FOUND, which is fine) and forgets it. One whose unpause failed
 * otherwise (the engine did not answer in time) is kept for the next
 * pass, never left paused with nothing to undo it. */
static void unpause_all(struct node_disk_watch *w)
{
	pthread_mutex_lock(&w->all->lock);
	char **ids = w->paused;
	size_t n = w->n_paused;
	w->paused = NULL;
	w->n_paused = 0;
	pthread_mutex_unlock(&w->all->lock);
	struct lifecycle *lc = w->all->lc;
	size_t kept = 0;
	for (size_t i = 0; i < n; i++) {
		char *id = ids[i];
		struct sandbox_record s = {0};
		_cleanup_error_ struct cp_error *e = NULL;
		if (store_sandbox_get(lc->store, id, &s, &e) == 0 && s.container_id &&
		    docker_container_unpause(w->engine, s.container_id, &e) == 0) {
			log_info("lifecycle", "unpaused sandbox %s: node %s has disk space again", id, w->name);
			guard_disk_audit(&lc->host, "sandbox.unpause", id, "its node has disk space again");
			free(id);
		} else if (e && e->code != CP_ERR_NOT_FOUND && e->code != CP_ERR_CONFLICT) {
			log_warn("lifecycle", "disk of node %s: unpause sandbox %s: %s (tried again at the next pass)",
			         w->name, id, e->message);
			ids[kept++] = id; /* kept <= i: a slot already read */
		} else {
			free(id);
		}
		sandbox_record_clear(&s);
	}
	if (kept) {
		pthread_mutex_lock(&w->all->lock);
		w->paused = xrealloc(w->paused, (w->n_paused + kept) * sizeof(*w->paused));
		memcpy(w->paused + w->n_paused, ids, kept * sizeof(*ids));
		w->n_paused += kept;
		pthread_mutex_unlock(&w->all->lock);
	}
	free(ids);
}

/* ---- one node's pass ---- */

static void remember(struct node_disk_watch *w, const struct node_disk *d, const char *reason)
{
	pthread_mutex_lock(&w->all->lock);
	w->disk = *d;
	if (reason)
		snprintf(w->reason, sizeof(w->reason), "%s", reason);
	pthread_mutex_unlock(&w->all->lock);
	_cleanup_error_ struct cp_error *e = NULL;
	if (store_node_set_disk(w->all->lc->store, w->name, d, &e) < 0 && e->code != CP_ERR_NOT_FOUND)
		log_warn("lifecycle", "disk of node %s: %s", w->name, e->message);
}

/* The node's row is gone (node remove): its probe goes too, through the
 * engine opened before (node_engines.c keeps it until serve stops). */
static void node_gone(struct node_disk_watch *w)
{
	if (w->engine && !w->gone)
		probe_remove(w, 1);
	w->gone = 1;
	unpause_all(w); /* none is left: node remove waits for its sandboxes */
}

static long node_pass(void *arg)
{
	struct node_disk_watch *w = arg;
	struct lifecycle *lc = w->all->lc;
	struct node_record row = {0};
	_cleanup_error_ struct cp_error *e = NULL;
	if (store_node_get(lc->store, w->name, &row, &e) < 0) {
		if (e->code == CP_ERR_NOT_FOUND)
			node_gone(w);
		return NODE_DISK_PERIOD_MS;
	}
	int down = row.state == NODE_DOWN;
	node_record_clear(&row);
	if (w->gone) {
		/* Removed and added again under its name before the watch was
		 * reaped: watched afresh (a new probe, nothing known yet). */
		w->gone = 0;
		w->looked = 0;
		free(w->probe);
		w->probe = NULL;
		pthread_mutex_lock(&w->all->lock);
		w->disk = (struct node_disk){.total_bytes = -1, .free_bytes = -1, .watermark_bytes = -1};
		pthread_mutex_unlock(&w->all->lock);
	}
	pthread_mutex_lock(&w->all->lock);
	int reconciling = w->reconciling;
	pthread_mutex_unlock(&w->all->lock);
	if (reconciling)
		return NODE_DISK_SYNC_MS; /* lifecycle_node_disk_back_done wakes it sooner */
	/* A node that does not answer keeps what was last known (and its
	 * paused sandboxes paused) until it does. */
	if (w->gone || down || !node_health_answering(lc->health, w->name, NULL))
		return NODE_DISK_PERIOD_MS;
	if (!w->engine && lifecycle_node_engine(lc, w->name, &w->engine, &e) < 0) {
		log_info("lifecycle", "disk of node %s: %s", w->name, e->message);
		return NODE_DISK_PERIOD_MS;
	}
	if (!w->looked) {
		/* Sandboxes an earlier serve paused would not answer their
		 * re-attach; paused again below if space is still short. */
		struct guard_host h = {.cfg = lc->cfg, .store = lc->store, .engine = w->engine};
		guard_disk_unpause_leftovers(&h);
		w->looked = 1;
	}
	struct node_disk d = {.total_bytes = -1, .free_bytes = -1, .watermark_bytes = -1, .checked_ms = clock_now_ms()};
	pthread_mutex_lock(&w->all->lock);
	int was_low = w->disk.low;
	pthread_mutex_unlock(&w->all->lock);
	if (probe_look(w, &d.total_bytes, &d.free_bytes) < 0) {
		/* A disk that was low stays so (a full disk can fail the exec
		 * itself); otherwise it is not known, which refuses nothing. */
		if (!was_low) {
			d.total_bytes = d.free_bytes = -1;
			remember(w, &d, NULL);
		}
		return NODE_DISK_PERIOD_MS;
	}
	probe_procs(w);
	d.watermark_bytes =
	    policy_min_free_bytes(lc->cfg->min_free_disk_bytes, lc->cfg->min_free_disk_percent, d.total_bytes);
	d.low = guard_disk_low_after(was_low, d.free_bytes, d.watermark_bytes);
	log_debug("lifecycle", "disk of node %s: %lld of %lld bytes free, watermark %lld%s", w->name,
	          (long long)d.free_bytes, (long long)d.total_bytes, (long long)d.watermark_bytes,
	          d.low ? ": low" : "");
	char reason[400];
	snprintf(reason, sizeof(reason),
	         "the disk of node '%s' (its engine's data) has %lld MiB free, below the %lld MiB minimum "
	         "(CHAT2SBX_MIN_FREE_DISK)",
	         w->name, (long long)(d.free_bytes >> 20), (long long)(d.watermark_bytes >> 20));
	remember(w, &d, d.free_bytes < d.watermark_bytes ? reason : NULL);
	if (d.low && !was_low)
		log_warn("lifecycle",
		         "%s: new sandboxes go to other nodes and the node's running sandboxes are paused until "
		         "space is freed there",
		         reason);
	if (d.low) {
		pthread_mutex_lock(&w->all->lock);
		snprintf(reason, sizeof(reason), "%s", w->reason);
		pthread_mutex_unlock(&w->all->lock);
		pause_running(w, reason);
	} else {
		if (was_low)
			log_info("lifecycle",
			         "node %s has disk space again: sandboxes may be created there, paused "
			         "ones resume",
			         w->name);
		unpause_all(w);
	}
	return NODE_DISK_PERIOD_MS;
}

static struct node_disk_watch *watch_start(struct lifecycle_node_disks *all, const char *name)
{
	struct node_disk_watch *w = xcalloc(1, sizeof(*w));
	w->name = xstrdup(name);
	w->all = all;
	w->disk = (struct node_disk){.total_bytes = -1, .free_bytes = -1, .watermark_bytes = -1};
	w->worker = periodic_start("node disk", 0, NODE_DISK_PERIOD_MS, node_pass, w);
	if (!w->worker)
		log_warn("lifecycle", "disk of node %s: cannot start its thread; its disk is not watched", name);
	return w;
}

/* Stops w's thread (a look under way ends first: at most an exec's bound)
 * and frees it; with remove_probe, the probe container goes too (serve's
 * stop; its empty volume is kept for the next serve's probe). */
static void watch_stop(struct node_disk_watch *w, int remove_probe)
{
	periodic_stop(w->worker);
	_cleanup_error_ struct cp_error *e = NULL;
	/* A node that does not answer keeps its probe (the next serve
	 * replaces it) rather than hold the stop up for a removal's timeout. */
	if (remove_probe && w->engine && !w->gone && docker_engine_ping(w->engine, NODE_DISK_PING_MS, &e) == 0)
		probe_remove(w, 0); /* the volume stays for the next serve's probe */
	for (size_t i = 0; i < w->n_paused; i++)
		free(w->paused[i]); /* stay paused across a stop: the next serve unpauses them */
	free(w->paused);
	free(w->probe);
	free(w->procs_read);
	free(w->name);
	free(w);
}

/* ---- every node ---- */

static struct node_disk_watch *find_locked(struct lifecycle_node_disks *all, const char *name)
{
	for (size_t i = 0; i < all->n; i++)
		if (!strcmp(all->nodes[i]->name, name))
			return all->nodes[i];
	return NULL;
}

/* Starts a watch for a node row without one, wakes the watch of a node
 * whose row is gone (it removes its probe) and frees it the pass after. */
static long sync_pass(void *arg)
{
	struct lifecycle_node_disks *all = arg;
	struct node_record *rows = NULL;
	size_t n_rows = 0;
	_cleanup_error_ struct cp_error *e = NULL;
	if (store_node_list(all->lc->store, &rows, &n_rows, &e) < 0) {
		log_warn("lifecycle", "disk of nodes: %s", e->message);
		return -1;
	}
	for (size_t i = 0; i < n_rows; i++) {
		pthread_mutex_lock(&all->lock);
		int known = find_locked(all, rows[i].name) != NULL;
		pthread_mutex_unlock(&all->lock);
		if (!known) {
			struct node_disk_watch *w = watch_start(all, rows[i].name);
			pthread_mutex_lock(&all->lock);
			all->nodes = xrealloc(all->nodes, (all->n + 1) * sizeof(*all->nodes));
			all->nodes[all->n++] = w;
			pthread_mutex_unlock(&all->lock);
		}
	}
	for (size_t i = 0; i < all->n;) {
		pthread_mutex_lock(&all->lock);
		struct node_disk_watch *w = all->nodes[i];
		int in_rows = 0;
		for (size_t j = 0; j < n_rows && !in_rows; j++)
			in_rows = !strcmp(rows[j].name, w->name);
		int reap = !in_rows && w->gone;
		if (reap)
			all->nodes[i] = all->nodes[--all->n];
		pthread_mutex_unlock(&all->lock);
		if (reap)
			watch_stop(w, 0);
		else
			i++;
		if (!in_rows && !reap)
			periodic_wake(w->worker);
	}
	for (size_t i = 0; i < n_rows; i++)
		node_record_clear(&rows[i]);
	free(rows);
	return -1;
}

void lifecycle_node_disk_start(struct lifecycle *lc)
{
	struct lifecycle_node_disks *all = xcalloc(1, sizeof(*all));
	all->lc = lc;
	pthread_mutex_init(&all->lock, NULL);
	snprintf(all->label_value, sizeof(all->label_value), "%s", lc->cfg->database_path);
	probe_name_of(all->label_value, all->probe_name, sizeof(all->probe_name));
	lc->node_disks = all;
	all->sync = periodic_start("node disks", 0, NODE_DISK_SYNC_MS, sync_pass, all);
	if (!all->sync)
		log_warn("lifecycle", "the disk guard of other nodes cannot start its thread; their disks are not "
		                      "watched");
}

void lifecycle_node_disk_stop(struct lifecycle *lc)
{
	struct lifecycle_node_disks *all = lc ? lc->node_disks : NULL;
	if (!all)
		return;
	periodic_stop(all->sync);
	/* Every node is asked to stop at once, so a node that stalls holds
	 * the stop up once, not once per node. */
	for (size_t i = 0; i < all->n; i++)
		periodic_stop_ask(all->nodes[i]->worker);
	for (size_t i = 0; i < all->n; i++)
		watch_stop(all->nodes[i], 1);
	lc->node_disks = NULL;
	free(all->nodes);
	pthread_mutex_destroy(&all->lock);
	free(all);
}

void lifecycle_node_disk_unpause_leftovers(struct lifecycle *lc)
{
	struct node_record *rows = NULL;
	size_t n = 0;
	_cleanup_error_ struct cp_error *e = NULL;
	if (store_node_list(lc->store, &rows, &n, &e) < 0)
		return; /* reconcile reports the registry */
	for (size_t i = 0; i < n; i++) {
		struct guard_host h = {.cfg = lc->cfg, .store = lc->store};
		if (rows[i].state != NODE_DOWN && lifecycle_node_engine(lc, rows[i].name, &h.engine, &e) == 0 &&
		    docker_engine_ping(h.engine, NODE_DISK_PING_MS, &e) == 0)
			guard_disk_unpause_leftovers(&h);
		cp_error_freep(&e); /* a node that does not answer: reconcile says so */
		node_record_clear(&rows[i]);
	}
	free(rows);
}

void lifecycle_node_disk_back(struct lifecycle *lc, const char *node)
{
	struct lifecycle_node_disks *all = lc->node_disks;
	struct guard_host h = {.cfg = lc->cfg, .store = lc->store};
	_cleanup_error_ struct cp_error *e = NULL;
	if (lifecycle_node_is_local(node) || lifecycle_node_engine(lc, node, &h.engine, &e) < 0)
		return; /* reconcile says why */
	if (all) {
		pthread_mutex_lock(&all->lock);
		struct node_disk_watch *w = find_locked(all, node);
		if (w)
			w->reconciling = 1;
		pthread_mutex_unlock(&all->lock);
	}
	guard_disk_unpause_leftovers(&h);
	/* Forgotten only once they run again: until then a call on one is
	 * told it is paused (lifecycle_node_disk_paused), never re-attached to
	 * a frozen container and marked failed for it. */
	if (all) {
		pthread_mutex_lock(&all->lock);
		struct node_disk_watch *w = find_locked(all, node);
		if (w) {
			for (size_t i = 0; i < w->n_paused; i++)
				free(w->paused[i]);
			free(w->paused);
			w->paused = NULL;
			w->n_paused = 0;
		}
		pthread_mutex_unlock(&all->lock);
	}
}

void lifecycle_node_disk_back_done(struct lifecycle *lc, const char *node)
{
	struct lifecycle_node_disks *all = lc->node_disks;
	if (!all || lifecycle_node_is_local(node))
		return;
	pthread_mutex_lock(&all->lock);
	struct node_disk_watch *w = find_locked(all, node);
	if (w)
		w->reconciling = 0;
	pthread_mutex_unlock(&all->lock);
	if (w)
		periodic_wake(w->worker); /* a look at once: paused again if still low */
}

int lifecycle_node_disk_check(struct lifecycle *lc, const char *node, struct cp_error **err)
{
	struct lifecycle_node_disks *all = lc->node_disks;
	if (!all || lifecycle_node_is_local(node))
		return 0;
	pthread_mutex_lock(&all->lock);
	struct node_disk_watch *w = find_locked(all, node);
	int low = w && w->disk.low;
	char reason[sizeof(w->reason)] = "";
	if (low)
		snprintf(reason, sizeof(reason), "%s", w->reason);
	pthread_mutex_unlock(&all->lock);
	if (!low)
		return 0;
	return cp_error_set(err, CP_ERR_LIMIT,
	                    "no sandbox is created on node '%s' while %s; create it on another node (leave out "
	                    "'node'), or ask the person who runs node '%s' to free space there (what its engine "
	                    "keeps: images, and the volumes of workspaces kept there, which 'chat2sbx workspace "
	                    "list' names; sandbox_destroy frees only a sandbox's own layer), then try again",
	                    node, reason, node);
}

int lifecycle_node_disk_paused(struct lifecycle *lc, const char *sandbox_id, char *reason, size_t size)
{
	struct lifecycle_node_disks *all = lc ? lc->node_disks : NULL;
	if (!all)
		return 0;
	int paused = 0;
	pthread_mutex_lock(&all->lock);
	for (size_t i = 0; i < all->n && !paused; i++) {
		struct node_disk_watch *w = all->nodes[i];
		if (paused_has(w, sandbox_id)) {
			paused = 1;
			if (reason && size)
				snprintf(reason, size, "%s", w->reason);
		}
	}
	pthread_mutex_unlock(&all->lock);
	return paused;
}
