/* probe_report.c: the outcomes of the doctor's attacks (ops_probe_report):
 * adding one, naming results, counting failures. Owns each outcome's
 * detail text; no I/O. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "../base/log.h"
#include "ops.h"
#include "../base/xalloc.h"

void ops_probe_report_clear(struct ops_probe_report *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++)
		free(r->checks[i].detail);
	*r = (struct ops_probe_report){0};
}

const char *ops_check_result_name(enum ops_check_result r)
{
	switch (r) {
	case OPS_CHECK_PASSED: return "passed";
	case OPS_CHECK_FAILED: return "failed";
	case OPS_CHECK_SKIPPED: return "skipped";
	}
	return "failed";
}

size_t ops_probe_report_failures(const struct ops_probe_report *r)
{
	size_t n = 0;
	for (size_t i = 0; i < r->n; i++)
		n += r->checks[i].result == OPS_CHECK_FAILED;
	return n;
}

void ops_probe_report_add(struct ops_probe_report *r, const char *name, const char *attack,
                          enum ops_check_result result, const char *fmt, ...)
{
	if (r->n >= OPS_PROBE_MAX_CHECKS)
		return;
	va_list ap;
	va_start(ap, fmt);
	char *detail = xvasprintf(fmt, ap);
	va_end(ap);
	struct ops_check *c = &r->checks[r->n++];
	*c = (struct ops_check){.name = name, .attack = attack, .result = result, .detail = detail};
	snprintf(c->node, sizeof(c->node), "%s", r->node[0] ? r->node : "local");
}

int ops_probe_report_require(const struct ops_probe_report *r, struct cp_error **err)
{
	char failed[512] = "";
	size_t o = 0;
	for (size_t i = 0; i < r->n; i++) {
		const struct ops_check *c = &r->checks[i];
		if (c->result == OPS_CHECK_FAILED) {
			log_error("doctor", "%s: FAILED: %s", c->name, c->detail ? c->detail : "");
			if (o < sizeof(failed))
				o += (size_t)snprintf(failed + o, sizeof(failed) - o, "%s%s", o ? ", " : "", c->name);
		} else {
			log_info("doctor", "%s: %s: %s", c->name, ops_check_result_name(c->result),
			         c->detail ? c->detail : "");
		}
	}
	if (o)
		return cp_error_set(err, CP_ERR_DENIED,
		                    "refusing to serve: the isolation probe's attacks succeeded (%s); run 'chat2sbx "
		                    "doctor' for details and fix the configuration",
		                    failed);
	return 0;
}
