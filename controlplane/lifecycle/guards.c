/* guards.c: the guards a lifecycle holds (guard/): the runtime decided at
 * start, the free-space guard serve starts and stops, and what the rest of
 * chat2sbx asks of them through the lifecycle. Thin: every rule is in
 * guard/; this file only keeps their state beside the sandboxes. */
#include <string.h>

#include "../base/log.h"
#include "lifecycle_internal.h"

int lifecycle_vm_select(struct lifecycle *lc, struct cp_error **err)
{
	struct guard_runtime_choice c;
	if (guard_runtime_probe(lc->cfg, lc->engine, &c, err) < 0)
		return -1;
	lc->runtime = c;
	if (c.accel && !strcmp(c.accel, "tcg"))
		log_warn("lifecycle",
		         "vm sandboxes run under TCG (emulation)%s%s: each is many times slower than with KVM (boot, "
		         "builds, Docker inside)",
		         c.accel_why ? ": " : "", c.accel_why ? c.accel_why : "");
	return 0;
}

const char *lifecycle_runtime(const struct lifecycle *lc, const char **ret_why)
{
	if (ret_why)
		*ret_why = lc->runtime.why;
	return lc->runtime.runtime;
}

const char *lifecycle_vm_accel(const struct lifecycle *lc, const char **ret_why)
{
	if (ret_why)
		*ret_why = lc->runtime.accel_why;
	return lc->runtime.accel;
}

const char *lifecycle_sandbox_image(const struct lifecycle *lc)
{
	return policy_runtime_is_vm(lc->runtime.runtime) ? lc->cfg->vm_image : lc->cfg->template_image;
}

const struct policy_sandbox_limits *lifecycle_limits_in_force(const struct lifecycle *lc)
{
	return &lc->limits;
}

int lifecycle_disk_guard_start(struct lifecycle *lc, struct cp_error **err)
{
	if (guard_disk_start(&lc->host, &lc->storage, &lc->disk, err) < 0)
		return -1;
	lifecycle_node_disk_start(lc); /* other nodes' disks (node_disk.c) */
	return 0;
}

void lifecycle_disk_guard_stop(struct lifecycle *lc)
{
	if (!lc)
		return;
	lifecycle_node_disk_stop(lc);
	guard_disk_stop(lc->disk);
	lc->disk = NULL;
}

int lifecycle_disk_check_create(struct lifecycle *lc, struct cp_error **err)
{
	return guard_disk_check_create(lc->disk, err);
}

const char *lifecycle_disk_note(struct lifecycle *lc)
{
	return guard_disk_note(&lc->storage);
}

int lifecycle_disk_paused(struct lifecycle *lc, const char *sandbox_id, char *reason, size_t size)
{
	return guard_disk_paused(lc->disk, sandbox_id, reason, size) ||
	       lifecycle_node_disk_paused(lc, sandbox_id, reason, size);
}

void lifecycle_disk_unpause_leftovers(struct lifecycle *lc)
{
	guard_disk_unpause_leftovers(&lc->host);
	lifecycle_node_disk_unpause_leftovers(lc); /* and on every node */
}
