/* reconcile.c: at start, make the registry and the engine agree. Sandboxes
 * survive a restart of serve: the helper keeps every session, so re-attaching
 * loses nothing. What happens to each pair (registry row × engine container)
 * is one pure decision table (policy/reconcile.c, policy_reconcile_decide),
 * unit-tested row by row; this file then carries the decisions out. A container with no row is
 * only reported: an explicit destroy removes it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/xalloc.h"
#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/log.h"
#include "lifecycle_internal.h"

static void fail_row(struct lifecycle *lc, const char *id, const char *reason)
{
	struct cp_error *e = NULL;
	if (store_sandbox_set_status(lc->store, id, SANDBOX_FAILED, NULL, reason, clock_now_ms(), &e) < 0) {
		cp_error_log_free(LOG_LEVEL_WARN, "lifecycle", &e, "mark sandbox '%s' failed", id);
	} else {
		log_warn("lifecycle", "sandbox %s failed: %s", id, reason);
	}
}

/* Through the removal guard (removal.c): the rows reconcile removes
 * containers for are 'creating' (never handed out) or 'removed' (saved or
 * forced before), so nothing is saved here, and anything else is refused.
 * A 'creating' row's removal is put on record first ('removing'). */
static int remove_container(struct lifecycle *lc, const struct sandbox_record *s, const char *container_id)
{
	struct cp_error *e = NULL;
	struct sandbox_record row = *s;
	row.container_id = (char *)container_id;
	struct lifecycle_destroy_options o = {.reason = "cleanup", .actor = "serve"};
	struct lifecycle_destroy_result dr = {0};
	int r = lifecycle_container_remove_guarded(lc, &row, &o, &dr, &e);
	lifecycle_destroy_result_clear(&dr);
	if (r < 0) {
		cp_error_log_free(LOG_LEVEL_WARN, "lifecycle", &e, "remove the container of sandbox %s", s->id);
		return -1;
	}
	return 0;
}

struct reconcile_counts {
	int attached, failed, removed, orphans;
	int keep_live; /* a row whose channel is open keeps it (a node that came back) */
};

/* Carries out one decision for row s (NULL for an orphan) and container c
 * (NULL when absent). */
static void apply(struct lifecycle *lc, const struct sandbox_record *s, const struct docker_container_state *c,
                  const struct policy_reconcile_decision *d, struct reconcile_counts *n)
{
	struct cp_error *e = NULL;
	switch (d->action) {
	case POLICY_RECONCILE_NOTHING:
		if (d->reason[0])
			log_info("lifecycle", "sandbox %s: %s", s ? s->id : c->name, d->reason);
		break;
	case POLICY_RECONCILE_REATTACH: {
		struct helper_channel *ch = n->keep_live ? lifecycle_channel_get(lc, s->id) : NULL;
		int live = ch && helper_channel_alive(ch);
		helper_channel_unref(ch);
		ch = NULL;
		if (live)
			break; /* its stream outlived the outage: sessions and all */
		if (lifecycle_attach(lc, s->id, s->node, c->id, &ch, &e) < 0) {
			cp_error_log_free(LOG_LEVEL_WARN, "lifecycle", &e,
			                  "re-attach sandbox %s (next tool call retries)", s->id);
		} else {
			/* Calls skip the attach stream again after a restart of serve
			 * (issue 27); the helper's answer to the socket is checked as at
			 * create. */
			lifecycle_channel_go_direct(lc, s, ch);
			helper_channel_unref(ch);
			n->attached++;
		}
		break;
	}
	case POLICY_RECONCILE_REMOVE_AND_FAIL:
		/* A container that cannot be removed now stays listed as the
		 * failed row's; destroy removes it later. */
		remove_container(lc, s, c->id);
		/* fall through */
	case POLICY_RECONCILE_MARK_FAILED:
		fail_row(lc, s->id, d->reason);
		n->failed++;
		break;
	case POLICY_RECONCILE_REMOVE_CONTAINER:
		if (remove_container(lc, s, c->id) == 0) {
			log_info("lifecycle", "sandbox %s: %s; removed it", s->id, d->reason);
			n->removed++;
		}
		break;
	case POLICY_RECONCILE_FINISH_REMOVAL: {
		struct lifecycle_destroy_options o = {.reason = "destroy", .actor = "serve"};
		struct lifecycle_destroy_result dr = {0};
		if (lifecycle_sandbox_destroy_ex(lc, s->id, &o, &dr, &e) < 0) {
			cp_error_log_free(LOG_LEVEL_WARN, "lifecycle", &e,
			                  "sandbox %s: %s; finishing it failed (the maintenance pass retries)", s->id,
			                  d->reason);
		} else {
			log_info("lifecycle", "sandbox %s: %s; finished it", s->id, d->reason);
			n->removed += c != NULL;
		}
		lifecycle_destroy_result_clear(&dr);
		break;
	}
	case POLICY_RECONCILE_REPORT_ORPHAN:
		log_warn("lifecycle",
		         "container %s carries this registry's label but has no sandbox row; remove it with "
		         "'chat2sbx sandbox destroy %s'",
		         c->name, c->name);
		n->orphans++;
		break;
	}
}

static void free_rows(struct sandbox_record *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sandbox_record_clear(&rows[i]);
	free(rows);
}

/* The rows on node against the containers of node's engine (issue 28:
 * reconcile runs on every node). A node that does not answer leaves its
 * rows as they are (*err). */
static int reconcile_node(struct lifecycle *lc, const char *node, struct sandbox_record *rows, size_t n_rows,
                          struct reconcile_counts *n, struct cp_error **err)
{
	char label[4200];
	snprintf(label, sizeof(label), "%s=%s", POLICY_LABEL_REGISTRY, lc->cfg->database_path);
	struct docker_engine *engine = NULL;
	struct docker_container_state *cs = NULL;
	size_t n_cs = 0;
	if (lifecycle_node_engine(lc, node, &engine, err) < 0 ||
	    docker_container_list(engine, label, &cs, &n_cs, err) < 0)
		return -1;
	char *matched = n_cs ? xcalloc(n_cs, 1) : NULL;
	for (size_t i = 0; i < n_rows; i++) {
		struct sandbox_record *s = &rows[i];
		if (!lifecycle_node_same(node, s->node))
			continue;
		struct docker_container_state *c = NULL;
		for (size_t j = 0; j < n_cs && !c; j++)
			if (strcmp(cs[j].name, s->container_name) == 0) {
				c = &cs[j];
				if (matched)
					matched[j] = 1;
			}
		/* Removed rows without a container are the history: skip quickly. */
		if (!c && s->status == SANDBOX_REMOVED)
			continue;
		/* While serve runs, only running rows are this pass's: a create or
		 * a removal under way owns its row and container. */
		if (n->keep_live && s->status != SANDBOX_RUNNING)
			continue;
		struct policy_reconcile_decision d;
		policy_reconcile_decide(policy_row_state_of(sandbox_status_to_string(s->status)),
		                        policy_container_state_of(c ? c->status : NULL), c ? c->status : NULL,
		                        c ? c->exit_code : 0, &d);
		apply(lc, s, c, &d, n);
	}
	for (size_t j = 0; j < n_cs && !n->keep_live; j++) {
		if (matched && matched[j])
			continue;
		struct policy_reconcile_decision d;
		policy_reconcile_decide(POLICY_ROW_NONE, policy_container_state_of(cs[j].status), cs[j].status,
		                        cs[j].exit_code, &d);
		apply(lc, NULL, &cs[j], &d, n);
	}
	free(matched);
	for (size_t j = 0; j < n_cs; j++)
		docker_container_state_clear(&cs[j]);
	free(cs);
	return 0;
}

int lifecycle_node_reconcile(struct lifecycle *lc, const char *node, struct cp_error **err)
{
	struct sandbox_record *rows = NULL;
	size_t n_rows = 0;
	if (store_sandbox_list(lc->store, STORE_SANDBOX_LIST_REMOVED | STORE_SANDBOX_LIST_POOLED, &rows, &n_rows, err) <
	    0)
		return -1;
	struct reconcile_counts n = {.keep_live = 1};
	lifecycle_node_disk_back(lc, node); /* paused for its low disk: unpaused to be re-attached */
	int r = reconcile_node(lc, node, rows, n_rows, &n, err);
	lifecycle_node_disk_back_done(lc, node);
	free_rows(rows, n_rows);
	if (r < 0)
		return cp_error_prefix(err, "reconcile node '%s'", node);
	log_info("lifecycle",
	         "node %s answers again: %d sandbox(es) re-attached, %d marked failed, %d leftover container(s) "
	         "removed, %d container(s) without a row",
	         node, n.attached, n.failed, n.removed, n.orphans);
	return 0;
}

int lifecycle_reconcile(struct lifecycle *lc, struct cp_error **err)
{
	struct sandbox_record *rows = NULL;
	size_t n_rows = 0;
	if (store_sandbox_list(lc->store, STORE_SANDBOX_LIST_REMOVED | STORE_SANDBOX_LIST_POOLED, &rows, &n_rows, err) <
	    0)
		return -1;
	struct reconcile_counts n = {0};
	if (reconcile_node(lc, STORE_NODE_LOCAL, rows, n_rows, &n, err) < 0) {
		free_rows(rows, n_rows);
		return cp_error_prefix(err, "reconcile sandboxes");
	}
	struct node_record *nodes = NULL;
	size_t n_nodes = 0;
	struct cp_error *e = NULL;
	if (store_node_list(lc->store, &nodes, &n_nodes, &e) < 0)
		cp_error_log_free(LOG_LEVEL_WARN, "lifecycle", &e, "reconcile: list the nodes");
	for (size_t i = 0; i < n_nodes; i++) {
		if (reconcile_node(lc, nodes[i].name, rows, n_rows, &n, &e) < 0)
			cp_error_log_free(LOG_LEVEL_WARN, "lifecycle", &e,
			                  "reconcile node %s: its sandboxes' rows are left as they are", nodes[i].name);
		else
			lifecycle_node_check_sweep(lc, nodes[i].name); /* an earlier serve's, if it died mid-check */
		node_record_clear(&nodes[i]);
	}
	free(nodes);
	log_info("lifecycle",
	         "reconciled: %d sandbox(es) re-attached, %d marked failed, %d leftover container(s) removed, %d "
	         "container(s) without a row",
	         n.attached, n.failed, n.removed, n.orphans);
	free_rows(rows, n_rows);
	/* Exposed ports follow the sandboxes' states just decided (expose.c). */
	struct cp_error *expose_err = NULL;
	if (lifecycle_exposures_reconcile(lc, &expose_err) < 0) {
		cp_error_log_free(LOG_LEVEL_WARN, "lifecycle", &expose_err, NULL);
	}
	return 0;
}
