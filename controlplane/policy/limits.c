/* limits.c: resource values a sandbox_create may ask for (memory, cpus,
 * pids) and the bash yield clamp. Pure functions. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "../base/size.h"
#include "policy.h"

int policy_size_parse(const char *what, const char *text, int64_t min_bytes, int64_t max_bytes, int64_t *ret_bytes,
                      struct cp_error **err)
{
	return size_parse(what, text, min_bytes, max_bytes, ret_bytes, err);
}

int policy_memory_parse(const char *text, int64_t *ret_bytes, struct cp_error **err)
{
	return policy_size_parse("memory", text, POLICY_MEMORY_MIN_BYTES, POLICY_MEMORY_MAX_BYTES, ret_bytes, err);
}

int64_t policy_min_free_bytes(int64_t bytes, int percent, int64_t fs_bytes)
{
	if (percent > 0)
		return fs_bytes / 100 * percent;
	if (bytes > 0)
		return bytes;
	int64_t pct = fs_bytes / 100 * POLICY_MIN_FREE_AUTO_PERCENT;
	return pct < POLICY_MIN_FREE_AUTO_BYTES ? pct : POLICY_MIN_FREE_AUTO_BYTES;
}

int64_t policy_yield_clamp(int64_t requested_ms, int64_t default_ms, int64_t max_ms)
{
	int64_t v = requested_ms < 0 ? default_ms : requested_ms;
	if (v > max_ms)
		v = max_ms;
	if (v < 0)
		v = 0;
	return v;
}

int policy_cpus_parse(const char *text, long host_cpus, int64_t *ret_nano_cpus, struct cp_error **err)
{
	const char *hint = "use a decimal number of CPUs such as \"1.5\" or \"2\"";
	if (!text || !*text)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "cpus '' is not a number; %s", hint);
	/* A negative number is a number, just not an allowed one. */
	if (text[0] == '-' && (isdigit((unsigned char)text[1]) || text[1] == '.'))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "cpus '%s' must be greater than 0; %s, or leave it out for no limit", text, hint);
	/* Digits, an optional '.', digits: no sign, exponent, hex or spaces, so
	 * the value is exact (no floating point). */
	const char *p = text;
	int64_t whole = 0, frac = 0;
	int n_whole = 0, n_frac = 0;
	for (; isdigit((unsigned char)*p); p++, n_whole++) {
		if (whole > 1000000)
			return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "cpus '%s' is too large; %s", text, hint);
		whole = whole * 10 + (*p - '0');
	}
	if (*p == '.')
		for (p++; isdigit((unsigned char)*p); p++, n_frac++) {
			if (n_frac == 9)
				return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
				                    "cpus '%s' has more than 9 decimal places; %s", text, hint);
			frac = frac * 10 + (*p - '0');
		}
	if (*p || n_whole + n_frac == 0)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "cpus '%s' is not a number; %s", text, hint);
	for (int i = n_frac; i < 9; i++)
		frac *= 10;
	int64_t nano = whole * 1000000000LL + frac;
	if (nano <= 0)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "cpus '%s' must be greater than 0; %s, or leave it out for no limit", text, hint);
	if (host_cpus > 0 && nano > (int64_t)host_cpus * 1000000000LL)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "cpus '%s' is more than the %ld CPU(s) of this machine; ask for at most \"%ld\"",
		                    text, host_cpus, host_cpus);
	*ret_nano_cpus = nano;
	return 0;
}

int policy_pids_check(int64_t pids_limit, int64_t cap, struct cp_error **err)
{
	int64_t max = cap > 0 && cap < POLICY_PIDS_MAX ? cap : POLICY_PIDS_MAX;
	if (pids_limit < POLICY_PIDS_MIN || pids_limit > max)
		return cp_error_set(
		    err, CP_ERR_INVALID_ARGUMENT,
		    "pids_limit %lld is outside the accepted range %d-%lld (processes and threads in the "
		    "sandbox%s); leave it out for the server's default",
		    (long long)pids_limit, POLICY_PIDS_MIN, (long long)max,
		    max < POLICY_PIDS_MAX ? "; the upper end is this machine's share for one sandbox, "
		                            "so that all active sandboxes together stay below the "
		                            "kernel's process limit"
		                          : "");
	return 0;
}

static void size_text(int64_t bytes, char *buf, size_t size)
{
	if (bytes % (1024LL * 1024 * 1024) == 0)
		snprintf(buf, size, "%lldg", (long long)(bytes >> 30));
	else
		snprintf(buf, size, "%lldm", (long long)(bytes >> 20));
}

int policy_sandbox_limits(const struct policy_host *h, int64_t want_memory, int want_active, int64_t want_pids,
                          int warm_pool, struct policy_sandbox_limits *ret, struct cp_error **err)
{
	struct policy_sandbox_limits l = {.max_memory_bytes = h->mem_total_bytes};
	char a[32], b[32];
	if (want_memory > 0) {
		if (h->mem_total_bytes > 0 && want_memory > h->mem_total_bytes) {
			size_text(want_memory, a, sizeof(a));
			size_text(h->mem_total_bytes & ~((1LL << 20) - 1), b, sizeof(b));
			return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
			                    "CHAT2SBX_DEFAULT_MEMORY %s is more than this machine's memory (%s); set a "
			                    "smaller ceiling, or 'auto' (half the memory, at most 8g)",
			                    a, b);
		}
		l.default_memory_bytes = want_memory;
	} else {
		int64_t half = h->mem_total_bytes / 2;
		l.default_memory_bytes = half < POLICY_DEFAULT_MEMORY_MAX ? half : POLICY_DEFAULT_MEMORY_MAX;
		l.default_memory_bytes &= ~((1LL << 20) - 1); /* whole MiB */
		if (l.default_memory_bytes < POLICY_MEMORY_MIN_BYTES)
			l.default_memory_bytes = POLICY_MEMORY_MIN_BYTES;
	}

	if (want_active < 0) {
		int64_t n = h->mem_total_bytes / POLICY_ACTIVE_PER_BYTES;
		l.max_active = (int)(n < POLICY_ACTIVE_MIN   ? POLICY_ACTIVE_MIN
		                     : n > POLICY_ACTIVE_MAX ? POLICY_ACTIVE_MAX
		                                             : n);
	} else {
		l.max_active = want_active;
	}

	int64_t procs = h->pid_max < h->threads_max || h->threads_max <= 0 ? h->pid_max : h->threads_max;
	l.pids_budget = procs * POLICY_PIDS_BUDGET_NUM / POLICY_PIDS_BUDGET_DEN;
	int64_t slots =
	    l.max_active > 0 ? (int64_t)l.max_active + (warm_pool > 0 ? warm_pool : 0) : POLICY_PIDS_UNLIMITED_SHARE;
	l.pids_cap = l.pids_budget / slots;
	if (l.pids_cap > POLICY_PIDS_MAX)
		l.pids_cap = POLICY_PIDS_MAX;
	if (l.pids_cap < POLICY_PIDS_MIN)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "CHAT2SBX_MAX_ACTIVE_SANDBOXES %d (+ %d warm) would leave each sandbox %lld of the "
		                    "%lld processes this machine can spare (3/4 of kernel.pid_max %lld / threads-max "
		                    "%lld), fewer than %d; allow fewer sandboxes",
		                    l.max_active, warm_pool, (long long)l.pids_cap, (long long)l.pids_budget,
		                    (long long)h->pid_max, (long long)h->threads_max, POLICY_PIDS_MIN);
	if (want_pids > 0) {
		if (want_pids > l.pids_cap)
			return cp_error_set(
			    err, CP_ERR_INVALID_ARGUMENT,
			    "CHAT2SBX_PIDS_LIMIT %lld is too high for this machine: %s sandboxes at once (+ %d warm) "
			    "could "
			    "hold %lld processes, more than the %lld it can spare (3/4 of kernel.pid_max %lld / "
			    "threads-max "
			    "%lld); set at most %lld, or allow fewer sandboxes (CHAT2SBX_MAX_ACTIVE_SANDBOXES)",
			    (long long)want_pids,
			    l.max_active > 0 ? (snprintf(a, sizeof(a), "%d", l.max_active), a) : "any", warm_pool,
			    (long long)(want_pids * slots), (long long)l.pids_budget, (long long)h->pid_max,
			    (long long)h->threads_max, (long long)l.pids_cap);
		l.pids_default = want_pids;
	} else {
		l.pids_default = l.pids_cap < 4096 ? l.pids_cap : 4096;
	}
	*ret = l;
	return 0;
}

void policy_node_sandbox_limits(int64_t mem_total_bytes, int64_t pid_max, int64_t threads_max, int64_t want_memory,
                                int64_t want_pids, int warm_pool, struct policy_sandbox_limits *ret)
{
	int known = pid_max > 0 && threads_max > 0;
	struct policy_host h = {.mem_total_bytes = mem_total_bytes > 0 ? mem_total_bytes : 0,
	                        .pid_max = known ? pid_max : POLICY_NODE_PROCS_ASSUMED,
	                        .threads_max = known ? threads_max : POLICY_NODE_PROCS_ASSUMED};
	if (want_memory > 0 && h.mem_total_bytes > 0 && want_memory > h.mem_total_bytes)
		want_memory = h.mem_total_bytes;
	int max_active = policy_placement_node_limit(h.mem_total_bytes);
	struct policy_sandbox_limits l = {0};
	struct cp_error *e = NULL;
	int active = max_active > 0 ? max_active : POLICY_ACTIVE_MIN;
	if (policy_sandbox_limits(&h, want_memory, active, -1, warm_pool > 0 ? warm_pool : 0, &l, &e) < 0) {
		/* Only a warm pool so large that each sandbox's share would be
		 * below POLICY_PIDS_MIN (without it, at most POLICY_ACTIVE_MAX
		 * share the assumed budget): each gets that least. */
		cp_error_freep(&e);
		if (policy_sandbox_limits(&h, want_memory, active, -1, 0, &l, &e) < 0) {
			/* A node whose own process limits are smaller still (its
			 * probe read them): the memory rules as with the assumed
			 * budget, never a zeroed ceiling (which means none). */
			cp_error_freep(&e);
			struct policy_host assumed = {.mem_total_bytes = h.mem_total_bytes,
			                              .pid_max = POLICY_NODE_PROCS_ASSUMED,
			                              .threads_max = POLICY_NODE_PROCS_ASSUMED};
			if (policy_sandbox_limits(&assumed, want_memory, active, -1, 0, &l, &e) < 0)
				cp_error_freep(&e);
			l.pids_budget = (known ? (pid_max < threads_max ? pid_max : threads_max) : 0) * 3 / 4;
		}
		l.pids_cap = l.pids_default = POLICY_PIDS_MIN;
	}
	if (h.mem_total_bytes <= 0) /* not known: placement refuses the node (no memory) */
		l.default_memory_bytes = POLICY_MEMORY_MIN_BYTES;
	if (want_pids > 0)
		l.pids_default = want_pids < l.pids_cap ? want_pids : l.pids_cap;
	l.max_active = active;
	l.max_memory_bytes = h.mem_total_bytes;
	*ret = l;
}

/* One line of at most 10 digits, no sign, no leading zero, at *p; advances. */
static int64_t procs_line(const char **p, const char *end)
{
	const char *s = *p;
	int64_t v = 0;
	size_t n = 0;
	while (s + n < end && s[n] >= '0' && s[n] <= '9' && n < 11) {
		v = v * 10 + (s[n] - '0');
		n++;
	}
	if (n == 0 || n > 10 || (n > 1 && s[0] == '0') || s + n >= end || s[n] != '\n')
		return -1;
	*p = s + n + 1;
	return v;
}

int policy_node_procs_parse(const char *out, size_t len, int64_t *ret_pid_max, int64_t *ret_threads_max)
{
	if (!out || len == 0 || len > POLICY_NODE_PROCS_OUTPUT_MAX || memchr(out, '\0', len))
		return -1;
	const char *p = out, *end = out + len;
	int64_t pid_max = procs_line(&p, end);
	int64_t threads_max = pid_max < 0 ? -1 : procs_line(&p, end);
	if (threads_max < 0 || p != end)
		return -1;
	/* What a kernel accepts: pid_max from RESERVED_PIDS + 1 to PID_MAX_LIMIT
	 * (4194304 on 64-bit), threads-max from 20 (MIN_THREADS) to FUTEX_TID_MASK. */
	if (pid_max < 301 || pid_max > 4194304 || threads_max < 20 || threads_max > 0x3fffffff)
		return -1;
	*ret_pid_max = pid_max;
	*ret_threads_max = threads_max;
	return 0;
}
