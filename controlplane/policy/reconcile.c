/* reconcile.c: the decision reconcile makes at start for each pair of a
 * registry row and an engine container (lifecycle/reconcile.c carries it
 * out): the row's and the container's state from their strings, and the
 * table from the two to an action with its reason. Pure: no I/O. */
#include <stdio.h>
#include <string.h>

#include "../base/string_table.h"
#include "policy.h"

/* The registry's words for a row's status (store/status.c holds the same
 * table for enum sandbox_status; policy/ sits beside store/ and cannot
 * include it). NONE has no word. */
static const char *const row_state_table[] = {
    [POLICY_ROW_CREATING] = "creating", [POLICY_ROW_RUNNING] = "running", [POLICY_ROW_FAILED] = "failed",
    [POLICY_ROW_REMOVED] = "removed",   [POLICY_ROW_EXPIRED] = "expired", [POLICY_ROW_REMOVING] = "removing",
};

enum policy_row_state policy_row_state_of(const char *status)
{
	if (!status)
		return POLICY_ROW_NONE;
	ssize_t i = string_table_lookup(row_state_table, sizeof(row_state_table) / sizeof(row_state_table[0]), status);
	return i < 0 ? POLICY_ROW_REMOVED : (enum policy_row_state)i;
}

enum policy_container_state policy_container_state_of(const char *engine_status)
{
	if (!engine_status)
		return POLICY_CONTAINER_ABSENT;
	if (strcmp(engine_status, "running") == 0)
		return POLICY_CONTAINER_RUNNING;
	if (strcmp(engine_status, "restarting") == 0)
		return POLICY_CONTAINER_RESTARTING;
	return POLICY_CONTAINER_STOPPED; /* created, paused, exited, dead, removing */
}

void policy_reconcile_decide(enum policy_row_state row, enum policy_container_state container,
                             const char *engine_status, int exit_code, struct policy_reconcile_decision *ret)
{
	struct policy_reconcile_decision d = {.action = POLICY_RECONCILE_NOTHING};
	const char *status = engine_status ? engine_status : "stopped";
	switch (row) {
	case POLICY_ROW_NONE:
		/* Not ours to judge: another serve's leftover, or a row deleted by
		 * hand. Reported; `chat2sbx sandbox destroy` removes it. */
		if (container != POLICY_CONTAINER_ABSENT) {
			d.action = POLICY_RECONCILE_REPORT_ORPHAN;
			snprintf(d.reason, sizeof(d.reason), "a labelled container (%s) has no sandbox row", status);
		}
		break;
	case POLICY_ROW_CREATING:
		/* serve died in the middle of a create: the steps after the
		 * container (attach, hello, copy) may be missing, so it is never
		 * half-usable: the container goes, the row says why. */
		if (container == POLICY_CONTAINER_ABSENT) {
			d.action = POLICY_RECONCILE_MARK_FAILED;
			snprintf(d.reason, sizeof(d.reason),
			         "chat2sbx stopped while creating it, before its container existed");
		} else {
			d.action = POLICY_RECONCILE_REMOVE_AND_FAIL;
			snprintf(d.reason, sizeof(d.reason),
			         "chat2sbx stopped while creating it; its container was removed");
		}
		break;
	case POLICY_ROW_RUNNING:
		switch (container) {
		case POLICY_CONTAINER_RUNNING: d.action = POLICY_RECONCILE_REATTACH; break;
		case POLICY_CONTAINER_RESTARTING:
			/* The engine's restart policy brings it back; the next tool call
			 * re-attaches (or fails it with the reason then). */
			snprintf(d.reason, sizeof(d.reason), "its container is restarting");
			break;
		case POLICY_CONTAINER_ABSENT:
			d.action = POLICY_RECONCILE_MARK_FAILED;
			snprintf(d.reason, sizeof(d.reason), "its container no longer exists");
			break;
		case POLICY_CONTAINER_STOPPED:
			d.action = POLICY_RECONCILE_MARK_FAILED;
			snprintf(d.reason, sizeof(d.reason), "its container is %s (exit code %d)", status, exit_code);
			break;
		}
		break;
	case POLICY_ROW_EXPIRED:
		/* Idle past the timeout and its save failed: the container stays
		 * stopped with its clone until a save works (expiry retries) or
		 * sandbox_create starts it again. Gone meanwhile: say so. */
		if (container == POLICY_CONTAINER_ABSENT) {
			d.action = POLICY_RECONCILE_MARK_FAILED;
			snprintf(d.reason, sizeof(d.reason),
			         "it had expired and its container no longer exists; its unsaved work is gone");
		}
		break;
	case POLICY_ROW_REMOVING:
		/* A removal was put on record and not finished (issue 13: a full
		 * disk refused the final write, or serve stopped midway): finish
		 * it, removing the container again if it is still there. */
		d.action = POLICY_RECONCILE_FINISH_REMOVAL;
		if (container == POLICY_CONTAINER_ABSENT)
			snprintf(d.reason, sizeof(d.reason), "its removal was interrupted after its container went");
		else
			snprintf(d.reason, sizeof(d.reason), "its removal was interrupted; its container (%s) remained",
			         status);
		break;
	case POLICY_ROW_FAILED:
		/* Already reported; its container (if any) stays for inspection
		 * until the user destroys the sandbox. */
		break;
	case POLICY_ROW_REMOVED:
		/* The user (or expiry) destroyed it and the container is still
		 * there (its removal failed midway): finish what was asked. */
		if (container != POLICY_CONTAINER_ABSENT) {
			d.action = POLICY_RECONCILE_REMOVE_CONTAINER;
			snprintf(d.reason, sizeof(d.reason),
			         "the sandbox was destroyed but its container (%s) remained", status);
		}
		break;
	}
	*ret = d;
}
