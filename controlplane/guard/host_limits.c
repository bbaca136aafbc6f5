/* host_limits.c: the sandbox limits in force on this machine (issue 13): a
 * default memory ceiling, a sandbox count and process limits derived from
 * the host's memory and kernel.pid_max / threads-max, unless the operator
 * set them (policy_sandbox_limits decides; this file reads /proc). Computed
 * once when the lifecycle starts; status computes the same for its table. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "guard.h"

/* One integer from a /proc file; -1 when it cannot be read. */
static int64_t read_proc_int(const char *path)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	long long v = -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static int64_t mem_total_bytes(void)
{
	FILE *f = fopen("/proc/meminfo", "re");
	if (!f)
		return -1;
	char line[256];
	long long kb = -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemTotal: %lld kB", &kb) == 1)
			break;
	fclose(f);
	return kb > 0 ? kb * 1024 : -1;
}

int guard_host_read(struct policy_host *ret, struct cp_error **err)
{
	struct policy_host h = {
	    .mem_total_bytes = mem_total_bytes(),
	    .pid_max = read_proc_int("/proc/sys/kernel/pid_max"),
	    .threads_max = read_proc_int("/proc/sys/kernel/threads-max"),
	};
	if (h.mem_total_bytes <= 0 || h.pid_max <= 0)
		return cp_error_set(err, CP_ERR_UNAVAILABLE,
		                    "read this machine's memory and process limits (/proc/meminfo, "
		                    "/proc/sys/kernel/pid_max): %s",
		                    strerror(errno ? errno : EIO));
	*ret = h;
	return 0;
}

int guard_host_limits(const struct config *cfg, struct policy_host *ret_host, struct policy_sandbox_limits *ret,
                      struct cp_error **err)
{
	struct policy_host h;
	if (guard_host_read(&h, err) < 0)
		return -1;
	if (policy_sandbox_limits(&h, cfg->default_memory_bytes, cfg->max_active_sandboxes, cfg->pids_limit,
	                          cfg->warm_pool, ret, err) < 0)
		return -1;
	if (ret_host)
		*ret_host = h;
	return 0;
}
