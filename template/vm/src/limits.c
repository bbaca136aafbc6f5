/* limits.c: what the container may use, read where the engine put it: the
 * memory ceiling and CPU quota of the container's cgroup (v2 or v1), the
 * host's memory, CPUs and TSC rate. The parsers are pure (unit-tested);
 * vm_limits_read does the reading. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vm.h"

/* Parses a decimal integer followed only by white space. */
static int parse_int64(const char *s, int64_t *ret)
{
	while (*s == ' ' || *s == '\t')
		s++;
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	char *end = NULL;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s)
		return -1;
	while (*end == ' ' || *end == '\t' || *end == '\n')
		end++;
	if (*end)
		return -1;
	*ret = v;
	return 0;
}

int vm_parse_memory_limit(const char *text, int64_t *ret)
{
	if (!strncmp(text, "max", 3) && (text[3] == '\0' || text[3] == '\n')) {
		*ret = 0;
		return 0;
	}
	int64_t v;
	if (parse_int64(text, &v) < 0 || v <= 0)
		return -1;
	/* cgroup v1 writes PAGE_COUNTER_MAX × page size (about 2^63) for none. */
	*ret = v >= ((int64_t)1 << 62) ? 0 : v;
	return 0;
}

int vm_parse_cpu_max(const char *text, int64_t *ret_quota, int64_t *ret_period)
{
	char quota[32] = "";
	long long period = 0;
	if (sscanf(text, "%31s %lld", quota, &period) != 2 || period <= 0)
		return -1;
	int64_t q;
	if (!strcmp(quota, "max"))
		q = -1;
	else if (parse_int64(quota, &q) < 0 || q <= 0)
		return -1;
	*ret_quota = q;
	*ret_period = period;
	return 0;
}

int vm_parse_meminfo_total(const char *text, int64_t *ret)
{
	const char *p = strstr(text, "MemTotal:");
	long long kib = 0;
	if (!p || sscanf(p, "MemTotal: %lld kB", &kib) != 1 || kib <= 0)
		return -1;
	*ret = (int64_t)kib * 1024;
	return 0;
}

int vm_parse_cpu_khz(const char *text, int64_t *ret)
{
	const char *p = strstr(text, "cpu MHz");
	if (!p)
		return -1;
	p = strchr(p, ':');
	double mhz = 0;
	if (!p || sscanf(p + 1, "%lf", &mhz) != 1 || mhz < 1 || mhz > 100000)
		return -1;
	*ret = (int64_t)(mhz * 1000 + 0.5);
	return 0;
}

void vm_limits_read(struct vm_limits *ret)
{
	struct vm_limits lim = {.cpu_quota_us = -1, .cpu_period_us = 100000};
	char buf[8192];
	int64_t v;
	/* v2 first (one unified hierarchy), then v1's memory controller. */
	if ((vm_read_file("/sys/fs/cgroup/memory.max", buf, sizeof buf) >= 0 ||
	     vm_read_file("/sys/fs/cgroup/memory/memory.limit_in_bytes", buf, sizeof buf) >= 0) &&
	    vm_parse_memory_limit(buf, &v) == 0)
		lim.memory_limit = v;
	int64_t q, p;
	if (vm_read_file("/sys/fs/cgroup/cpu.max", buf, sizeof buf) >= 0) {
		if (vm_parse_cpu_max(buf, &q, &p) == 0) {
			lim.cpu_quota_us = q;
			lim.cpu_period_us = p;
		}
	} else {
		static const char *const dirs[] = {"/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu", NULL};
		for (size_t i = 0; dirs[i]; i++) {
			char path[128], qtext[64], ptext[64];
			snprintf(path, sizeof path, "%s/cpu.cfs_quota_us", dirs[i]);
			if (vm_read_file(path, qtext, sizeof qtext) < 0)
				continue;
			snprintf(path, sizeof path, "%s/cpu.cfs_period_us", dirs[i]);
			if (vm_read_file(path, ptext, sizeof ptext) < 0)
				continue;
			/* v1 writes -1 for no quota. */
			char both[140];
			qtext[strcspn(qtext, "\n")] = '\0';
			snprintf(both, sizeof both, "%s %s", !strcmp(qtext, "-1") ? "max" : qtext, ptext);
			if (vm_parse_cpu_max(both, &q, &p) == 0) {
				lim.cpu_quota_us = q;
				lim.cpu_period_us = p;
			}
			break;
		}
	}
	if (vm_read_file("/proc/meminfo", buf, sizeof buf) >= 0 && vm_parse_meminfo_total(buf, &v) == 0)
		lim.host_memory = v;
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	lim.host_cpus = n > 0 ? (int)n : 1;
	if (vm_read_file("/proc/cpuinfo", buf, sizeof buf) >= 0 && vm_parse_cpu_khz(buf, &v) == 0)
		lim.tsc_khz = v;
	*ret = lim;
}
