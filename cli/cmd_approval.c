/* cmd_approval.c: `chat2sbx approval list|approve ID|reject ID`. The person at
 * this machine decides here whether a host directory may become a workspace.
 * Works with or without serve running (same registry, transactions). */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/id.h"
#include "base/xjson.h"
#include "cli.h"
#include "controlplane.h"
#include "lifecycle/lifecycle.h"
#include "policy/policy.h"

static struct json_object *approval_json(const struct approval_record *a)
{
	char when[40];
	struct json_object *o = xjson_object();
	xjson_add(o, "approval_id", xjson_string(a->id));
	xjson_add(o, "status", xjson_string(approval_status_to_string(a->status)));
	xjson_add(o, "mode", xjson_string(a->mode));
	xjson_add(o, "host_path", xjson_string(a->host_path));
	xjson_add(o, "real_path", xjson_string(a->real_path));
	/* The machine whose directory it is (migration 0018). */
	xjson_add(o, "node", xjson_string(a->node ? a->node : STORE_NODE_LOCAL));
	xjson_add(o, "requested_by", xjson_string(a->requested_by));
	xjson_add(o, "requested_at", xjson_string(clock_format_rfc3339(a->requested_at_ms, when, sizeof(when))));
	if (a->decided_at_ms)
		xjson_add(o, "decided_at", xjson_string(clock_format_rfc3339(a->decided_at_ms, when, sizeof(when))));
	if (a->workspace_id)
		xjson_add(o, "workspace_id", xjson_string(a->workspace_id));
	if (!strcmp(a->mode, "direct"))
		xjson_add(o, "note", xjson_string(policy_direct_note_for(a->node)));
	return o;
}

static int list(struct cli *cli, struct store *store)
{
	struct approval_record *rows = NULL;
	size_t n = 0;
	struct cp_error *err = NULL;
	if (store_approval_list(store, &rows, &n, &err) < 0)
		return cli_fail(err);
	struct json_object *arr = xjson_array();
	int direct = 0, direct_node = 0;
	if (!cli->json)
		printf("%-30s %-9s %-7s %-10s %-24s %s\n", "APPROVAL", "STATUS", "MODE", "NODE", "REQUESTED", "PATH");
	for (size_t i = 0; i < n; i++) {
		char when[40];
		direct |=
		    !strcmp(rows[i].mode, "direct") && policy_direct_note_for(rows[i].node) == policy_direct_mode_note;
		direct_node |=
		    !strcmp(rows[i].mode, "direct") && policy_direct_note_for(rows[i].node) != policy_direct_mode_note;
		if (cli->json)
			xjson_append(arr, approval_json(&rows[i]));
		else
			printf("%-30s %-9s %-7s %-10s %-24s %s\n", rows[i].id,
			       approval_status_to_string(rows[i].status), rows[i].mode,
			       rows[i].node ? rows[i].node : STORE_NODE_LOCAL,
			       clock_format_rfc3339(rows[i].requested_at_ms, when, sizeof(when)), rows[i].real_path);
		approval_record_clear(&rows[i]);
	}
	free(rows);
	if (cli->json)
		cli_print_json(arr);
	else
		json_object_put(arr);
	if (!cli->json && direct)
		printf("\n%s\n", policy_direct_mode_note);
	if (!cli->json && direct_node)
		printf("\n%s\n", policy_direct_node_note);
	return 0;
}

static int decide(struct cli *cli, struct store *store, const char *verb, const char *id)
{
	if (!id_valid(id, "approval_")) {
		fprintf(stderr,
		        "chat2sbx: '%s' is not an approval id (approval_ followed by %d characters); see "
		        "'chat2sbx approval list'\n",
		        id, ID_RANDOM_CHARS);
		return 2;
	}
	struct approval_record a = {0};
	struct cp_error *err = NULL;
	int r = !strcmp(verb, "approve") ? workspace_approval_approve(cli->cfg, store, id, &a, &err)
	                                 : store_approval_reject(store, id, clock_now_ms(), &a, &err);
	cli_audit(store, !strcmp(verb, "approve") ? "approval.approve" : "approval.reject", id, NULL, err);
	if (r < 0)
		return cli_fail(err);
	if (cli->json) {
		cli_print_json(approval_json(&a));
	} else if (a.status == APPROVAL_APPROVED) {
		int remote = a.node && strcmp(a.node, STORE_NODE_LOCAL) != 0;
		printf("approved %s: workspace %s (%s) for %s%s%s\nThe model can now call sandbox_create with the same "
		       "workspace_path and workspace_mode%s, or with workspace_id %s.\n",
		       a.id, a.workspace_id, a.mode, a.real_path, remote ? " on node " : "", remote ? a.node : "",
		       remote ? " and node" : "", a.workspace_id);
		if (!strcmp(a.mode, "direct"))
			printf("%s\n", policy_direct_note_for(a.node));
	} else {
		printf("rejected %s: %s (%s) will not be mounted; the decision is kept\n", a.id, a.real_path, a.mode);
	}
	approval_record_clear(&a);
	return 0;
}

int cmd_approval(struct cli *cli, int argc, char **argv)
{
	int is_list = argc == 1 && !strcmp(argv[0], "list");
	int is_decide = argc == 2 && (!strcmp(argv[0], "approve") || !strcmp(argv[0], "reject"));
	if (!is_list && !is_decide) {
		fprintf(stderr, "usage: chat2sbx approval list [--json] | approval approve ID | approval reject ID\n");
		return 2;
	}
	struct store *store = NULL;
	struct cp_error *err = NULL;
	if (controlplane_open_store(cli->cfg, &store, &err) < 0)
		return cli_fail(err);
	int status = is_list ? list(cli, store) : decide(cli, store, argv[0], argv[1]);
	store_free(store);
	return status;
}
