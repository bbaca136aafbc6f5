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

int lifecycle_create_limits(struct lifecycle *lc, const struct lifecycle_create_options *opts,
                            struct lifecycle_limits *ret, struct cp_error **err)
{
	/* Every sandbox has a memory ceiling and a process limit (issue 13). */
	struct lifecycle_limits lim = {.network = !opts->network_off,
	                               .pids_limit = lc->limits.pids_default,
	                               .memory_bytes = lc->limits.default_memory_bytes};
	if (opts->memory && policy_memory_parse(opts->memory, &lim.memory_bytes, err) < 0)
		return -1;
	if (opts->memory && lc->limits.max_memory_bytes > 0 && lim.memory_bytes > lc->limits.max_memory_bytes)
		return cp_error_set(
		    err, CP_ERR_INVALID_ARGUMENT,
		    "memory '%s' is more than this machine has (%lld MiB); ask for less, or leave it out "
		    "for the default ceiling of %lld MiB",
		    opts->memory, (long long)(lc->limits.max_memory_bytes >> 20),
		    (long long)(lc->limits.default_memory_bytes >> 20));
	/* The engine is on this machine (a Unix socket), so its CPUs are ours. */
	if (opts->cpus && policy_cpus_parse(opts->cpus, sysconf(_SC_NPROCESSORS_ONLN), &lim.nano_cpus, err) < 0)
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
	struct node_record n = {0};
	if (store_node_get(lc->store, node, &n, err) < 0)
		return -1;
	*ret_max = policy_placement_node_limit(n.labels.memory_bytes);
	node_record_clear(&n);
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
