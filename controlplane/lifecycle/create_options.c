/* create_options.c: the limits and isolation options of a sandbox_create
 * (memory, cpus, pids, network, the OCI runtime), checked before anything is
 * created, and the sandbox limit checked and taken in one step with the row
 * insert, so concurrent creates never overshoot it. The values themselves
 * are judged by policy/limits.c; this file adds what only the engine and
 * this machine know (CPU count, registered runtimes). Also the release of
 * what a create answers (lifecycle_create_result_clear), which the warm
 * pool uses without calling create.c back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../base/xalloc.h"
#include "../base/cleanup.h"
#include "../base/log.h"
#include "../policy/policy.h"
#include "lifecycle_internal.h"

void lifecycle_node_row_limits(struct lifecycle *lc, const struct node_record *r, struct policy_sandbox_limits *ret)
{
	policy_node_sandbox_limits(r->labels.memory_bytes, r->pid_max, r->threads_max, lc->cfg->default_memory_bytes,
	                           lc->cfg->pids_limit, lc->cfg->warm_pool, ret);
}

int lifecycle_node_limits(struct lifecycle *lc, const char *node, struct policy_sandbox_limits *ret, int64_t *ret_cpus,
                          struct cp_error **err)
{
	if (lifecycle_node_is_local(node)) {
		*ret = lc->limits;
		if (ret_cpus)
			*ret_cpus = sysconf(_SC_NPROCESSORS_ONLN);
		return 0;
	}
	struct node_record n = {0};
	if (store_node_get(lc->store, node, &n, err) < 0)
		return -1;
	lifecycle_node_row_limits(lc, &n, ret);
	if (ret_cpus)
		*ret_cpus = n.labels.cpus;
	node_record_clear(&n);
	return 0;
}

/* The most memory (bytes) and CPUs any node offers, 'local' included, into
 * *mem and *cpus: what a create may ask before placement picks a node. A
 * registry that cannot be read leaves this machine's. */
static void largest_node(struct lifecycle *lc, int64_t *mem, int64_t *cpus)
{
	*mem = lc->limits.max_memory_bytes;
	*cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct node_record *rows = NULL;
	size_t n = 0;
	_cleanup_error_ struct cp_error *e = NULL;
	if (store_node_list(lc->store, &rows, &n, &e) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		if (rows[i].labels.memory_bytes > *mem)
			*mem = rows[i].labels.memory_bytes;
		if (rows[i].labels.cpus > *cpus)
			*cpus = rows[i].labels.cpus;
		node_record_clear(&rows[i]);
	}
	free(rows);
}

int lifecycle_create_limits(struct lifecycle *lc, const struct lifecycle_create_options *opts,
                            struct lifecycle_limits *ret, struct cp_error **err)
{
	/* Every sandbox has a memory ceiling and a process limit (issue 13),
	 * this machine's defaults until a node is chosen
	 * (lifecycle_limits_on_node). */
	struct lifecycle_limits lim = {.network = !opts->network_off,
	                               .pids_limit = lc->limits.pids_default,
	                               .memory_bytes = lc->limits.default_memory_bytes,
	                               .memory_asked = opts->memory != NULL,
	                               .pids_asked = opts->pids_limit != 0,
	                               .disk_asked = opts->disk != NULL};
	int64_t max_memory = lc->limits.max_memory_bytes, max_cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (opts->memory || opts->cpus) /* another node may have more than this machine */
		largest_node(lc, &max_memory, &max_cpus);
	if (opts->memory && policy_memory_parse(opts->memory, &lim.memory_bytes, err) < 0)
		return -1;
	if (opts->memory && max_memory > 0 && lim.memory_bytes > max_memory)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "memory '%s' is more than %s has (%lld MiB); ask for less, or leave it out "
		                    "for the default ceiling of %lld MiB",
		                    opts->memory,
		                    max_memory > lc->limits.max_memory_bytes ? "any node" : "this machine",
		                    (long long)(max_memory >> 20), (long long)(lc->limits.default_memory_bytes >> 20));
	/* Which node's CPUs count is placement's (a node with fewer is left out)
	 * and lifecycle_limits_on_node's. */
	if (opts->cpus && policy_cpus_parse(opts->cpus, max_cpus, &lim.nano_cpus, err) < 0)
		return -1;
	if (opts->pids_limit != 0) {
		if (policy_pids_check(opts->pids_limit, lc->limits.pids_cap, err) < 0)
			return -1;
		lim.pids_limit = opts->pids_limit;
	}
	/* The writable layer's size, where the engine's storage can limit it
	 * (issue 13); elsewhere the free-space guard protects the disk. */
	if (opts->disk) {
		if (policy_size_parse("disk", opts->disk, POLICY_DISK_MIN_BYTES, POLICY_DISK_MAX_BYTES, &lim.disk_bytes,
		                      err) < 0)
			return -1;
		if (!lc->storage.size_supported)
			return cp_error_set(
			    err, CP_ERR_INVALID_ARGUMENT,
			    "disk '%s' cannot be given here: the Docker Engine's storage (%s) cannot limit a "
			    "sandbox's disk (only overlay2 over xfs with pquota, btrfs, zfs and devicemapper "
			    "can); leave disk out (the free-space guard keeps the host's disk from filling)",
			    opts->disk, lc->storage.name);
	} else {
		lim.disk_bytes = lc->storage.size_supported ? lc->storage.default_bytes : 0;
	}
	const char *runtime = lifecycle_runtime(lc, NULL);
	if (policy_runtime_is_vm(runtime)) {
		/* A microVM (guard/vm.c): runc runs its container. */
		if (guard_vm_memory_check(lim.memory_bytes, err) < 0)
			return -1;
		lim.runtime = runtime;
	} else if (runtime) {
		_cleanup_(docker_runtime_info_clear) struct docker_runtime_info rt = {0};
		if (docker_engine_runtime_info(lc->engine, runtime, &rt, err) < 0)
			return cp_error_prefix(err, "check the runtime '%s' (CHAT2SBX_RUNTIME)", runtime);
		if (!rt.found)
			return cp_error_set(
			    err, CP_ERR_UNAVAILABLE,
			    "the Docker Engine has no runtime '%s' (CHAT2SBX_RUNTIME); it has: %s. The "
			    "operator must register it in /etc/docker/daemon.json (\"runtimes\") and "
			    "restart the engine (scripts/ensure-engine.sh does this for runsc), or unset "
			    "CHAT2SBX_RUNTIME; no sandbox was created",
			    runtime, rt.names ? rt.names : "(none)");
		/* gVisor without --oci-seccomp would drop the sandbox profile, and
		 * its gofer sets a setuid bit on the host file (measured; issue 12). */
		if (rt.ignores_seccomp)
			return cp_error_set(
			    err, CP_ERR_UNAVAILABLE,
			    "the Docker Engine's runtime '%s' (CHAT2SBX_RUNTIME) is gVisor registered without "
			    "--oci-seccomp, so it would not apply the sandbox seccomp profile and a sandbox could "
			    "leave setuid programs on host mounts. The operator must add \"--oci-seccomp\" to its "
			    "runtimeArgs in /etc/docker/daemon.json (scripts/engine-runtimes.sh does) and reload the "
			    "engine (kill -HUP the dockerd process; running containers are not touched); no sandbox "
			    "was created",
			    runtime);
		/* Registered with --network=none (gVisor here): its sandboxes have
		 * no network whatever we ask, so the row says so. */
		if (rt.no_network)
			lim.network = 0;
		lim.runtime = runtime;
	}
	*ret = lim;
	return 0;
}

int lifecycle_limits_on_node(struct lifecycle *lc, const char *node, struct lifecycle_limits *lim,
                             struct cp_error **err)
{
	if (lifecycle_node_is_local(node))
		return 0;
	struct policy_sandbox_limits nl;
	int64_t cpus = 0;
	if (lifecycle_node_limits(lc, node, &nl, &cpus, err) < 0)
		return -1;
	if (!lim->memory_asked)
		lim->memory_bytes = nl.default_memory_bytes;
	else if (nl.max_memory_bytes > 0 && lim->memory_bytes > nl.max_memory_bytes)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "memory %lld MiB is more than node '%s' has (%lld MiB); ask for less (for a new "
		                    "workspace, leaving out 'node' lets placement choose a node with enough)",
		                    (long long)(lim->memory_bytes >> 20), node, (long long)(nl.max_memory_bytes >> 20));
	if (!lim->pids_asked)
		lim->pids_limit = nl.pids_default;
	else if (policy_pids_check(lim->pids_limit, nl.pids_cap, err) < 0)
		return cp_error_prefix(err, "on node '%s'", node);
	if (lim->nano_cpus > 0 && cpus > 0 && lim->nano_cpus > cpus * 1000000000LL)
		return cp_error_set(
		    err, CP_ERR_INVALID_ARGUMENT,
		    "cpus %lld.%03lld is more than the %lld CPU(s) of node '%s'; ask for at most \"%lld\" "
		    "(for a new workspace, leaving out 'node' lets placement choose)",
		    (long long)(lim->nano_cpus / 1000000000LL), (long long)(lim->nano_cpus % 1000000000LL / 1000000),
		    (long long)cpus, node, (long long)cpus);
	/* The writable layer's size is this machine's storage's option: another
	 * node's engine is not asked (docs/nodes.md), and a size asked is not
	 * dropped without a word. */
	if (lim->disk_asked)
		return cp_error_set(
		    err, CP_ERR_INVALID_ARGUMENT,
		    "disk cannot be given on node '%s': a sandbox's disk size is given by this machine's "
		    "storage only (node 'local'); leave disk out there (a new workspace that asks for "
		    "disk, without 'node', stays on this machine)",
		    node);
	lim->disk_bytes = 0;
	return 0;
}

/* A memory size (bytes) or CPU count (nano-CPUs, cpus = 1) as a person
 * reads it, "no limit" for 0: "512 MiB", "1.5", never "memory_bytes 0". */
static const char *limit_text(int64_t v, int cpus, char *buf, size_t size)
{
	if (v <= 0)
		snprintf(buf, size, "no limit");
	else if (cpus)
		snprintf(buf, size, "%g", (double)v / 1e9);
	else if (v % (1024 * 1024) == 0)
		snprintf(buf, size, "%lldm", (long long)(v / (1024 * 1024)));
	else
		snprintf(buf, size, "%lld bytes", (long long)v);
	return buf;
}

char *lifecycle_limits_differ(const struct sandbox_record *s, const struct lifecycle_limits *want)
{
	char buf[512] = "";
	size_t len = 0;
#define NOTE(...) len += (size_t)snprintf(buf + len, len < sizeof(buf) ? sizeof(buf) - len : 0, __VA_ARGS__)
	char have[32], asked[32];
	if (want->memory_bytes != s->memory_bytes)
		NOTE("%smemory %s (asked %s)", len ? ", " : "", limit_text(s->memory_bytes, 0, have, sizeof(have)),
		     limit_text(want->memory_bytes, 0, asked, sizeof(asked)));
	if (want->nano_cpus != s->nano_cpus)
		NOTE("%scpus %s (asked %s)", len ? ", " : "", limit_text(s->nano_cpus, 1, have, sizeof(have)),
		     limit_text(want->nano_cpus, 1, asked, sizeof(asked)));
	if (!want->network != !s->network)
		NOTE("%snetwork %s (asked %s)", len ? ", " : "", s->network ? "on" : "off",
		     want->network ? "on" : "off");
	const char *have_rt = s->runtime ? s->runtime : "engine default";
	const char *want_rt = want->runtime ? want->runtime : "engine default";
	if (strcmp(have_rt, want_rt) != 0)
		NOTE("%sruntime %s (asked %s)", len ? ", " : "", have_rt, want_rt);
#undef NOTE
	if (!len)
		return NULL;
	return xasprintf("this workspace already had a running sandbox, returned as it is; it differs from what was "
	                 "asked: %s. To get the new options, sandbox_destroy it and call sandbox_create again with the "
	                 "same workspace_id",
	                 buf);
}

int lifecycle_node_sandbox_limit(struct lifecycle *lc, const char *node, int *ret_max, struct cp_error **err)
{
	if (lifecycle_node_is_local(node)) {
		*ret_max = lc->limits.max_active;
		return 0;
	}
	struct policy_sandbox_limits nl;
	if (lifecycle_node_limits(lc, node, &nl, NULL, err) < 0)
		return -1;
	*ret_max = nl.max_active;
	return 0;
}

int lifecycle_sandbox_insert_limited(struct lifecycle *lc, const struct sandbox_record *row, struct cp_error **err)
{
	/* Count and insert under one lock: two creates cannot both see the
	 * last free place on a node, this machine or another (placement's
	 * count, create_place.c, was taken before the lock). (Only one serve
	 * uses a registry: serve.c's lock.) */
	pthread_mutex_lock(&lc->create_lock);
	int max = 0;
	int r = row->pooled ? 0 : lifecycle_node_sandbox_limit(lc, row->node, &max, err);
	if (r == 0 && max > 0) {
		const char *node = lifecycle_node_is_local(row->node) ? STORE_NODE_LOCAL : row->node;
		int live = 0;
		r = store_sandbox_count_live_on(lc->store, node, &live, err);
		if (r == 0 && live >= max && !strcmp(node, STORE_NODE_LOCAL))
			r = cp_error_set(err, CP_ERR_LIMIT,
			                 "the sandbox limit is reached: %d of %d active; destroy a sandbox you no "
			                 "longer need (sandbox_list, sandbox_destroy) and try again",
			                 live, max);
		else if (r == 0 && live >= max)
			r = cp_error_set(err, CP_ERR_LIMIT,
			                 "node '%s' has no room: %d of its %d sandboxes are active; create without "
			                 "'node' to let placement choose, or destroy a sandbox there",
			                 node, live, max);
	}
	if (r == 0)
		r = store_sandbox_insert(lc->store, row, err);
	pthread_mutex_unlock(&lc->create_lock);
	return r;
}

void lifecycle_create_result_clear(struct lifecycle_create_result *r)
{
	if (!r)
		return;
	approval_record_clear(&r->approval);
	sandbox_record_clear(&r->sandbox);
	free(r->copy_session_id);
	free(r->options_note);
	*r = (struct lifecycle_create_result){0};
}

char *lifecycle_limits_differ_on_node(struct lifecycle *lc, const struct sandbox_record *s,
                                      const struct lifecycle_limits *want)
{
	struct lifecycle_limits w = *want;
	_cleanup_error_ struct cp_error *e = NULL;
	if (lifecycle_limits_on_node(lc, s->node, &w, &e) < 0)
		w = *want; /* a node removed meanwhile: compare with what was asked */
	return lifecycle_limits_differ(s, &w);
}
