/* status.c: the string tables of a sandbox's and an approval's status and of
 * a node's state, and their lookups (base/string_table.h). The strings are
 * the registry's values (migrations 0001, 0010 and 0014); changing one needs
 * a migration. No SQL here. */
#include "../base/string_table.h"
#include "store.h"

static const char *const sandbox_status_table[_SANDBOX_STATUS_MAX] = {
    [SANDBOX_CREATING] = "creating", [SANDBOX_RUNNING] = "running", [SANDBOX_FAILED] = "failed",
    [SANDBOX_REMOVED] = "removed",   [SANDBOX_EXPIRED] = "expired", [SANDBOX_REMOVING] = "removing",
};
DEFINE_STRING_TABLE_LOOKUP(sandbox_status, enum sandbox_status, _SANDBOX_STATUS_MAX)

int sandbox_status_is(const char *status, enum sandbox_status st)
{
	return sandbox_status_from_string(status) == st;
}

static const char *const approval_status_table[_APPROVAL_STATUS_MAX] = {
    [APPROVAL_PENDING] = "pending",
    [APPROVAL_APPROVED] = "approved",
    [APPROVAL_REJECTED] = "rejected",
};
DEFINE_STRING_TABLE_LOOKUP(approval_status, enum approval_status, _APPROVAL_STATUS_MAX)

static const char *const node_state_table[_NODE_STATE_MAX] = {
    [NODE_READY] = "ready",
    [NODE_DRAINING] = "draining",
    [NODE_DOWN] = "down",
};
DEFINE_STRING_TABLE_LOOKUP(node_state, enum node_state, _NODE_STATE_MAX)
