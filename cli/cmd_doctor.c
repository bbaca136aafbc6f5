/* cmd_doctor.c: `chat2sbx doctor [--json] [--node NAME]`: proves the
 * isolation on this machine and on every node added (or on the one named)
 * by attacking a probe sandbox there from inside (ops/isolation.c), and the
 * running serve's MCP endpoint from outside (ops/attack_endpoint.c), and
 * prints each attack, with the node it ran on, as passed, failed or
 * skipped. Works while serve runs:
 * the probe is its own sandbox in the same registry (only serve takes
 * serve.lock). Exit 0 when no attack succeeded, 1 when one did, the error's
 * status when the probe could not run. */
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "controlplane.h"
#include "docker/docker.h"
#include "lifecycle/lifecycle.h"
#include "ops/ops.h"
#include "tools/tools.h"
#include "base/cleanup.h"
#include "base/xalloc.h"
#include "base/xjson.h"

/* One check as JSON, with the node it ran on. */
static struct json_object *check_json(const struct ops_check *c)
{
	struct json_object *e = xjson_object();
	xjson_add(e, "node", xjson_string(c->node));
	xjson_add(e, "name", xjson_string(c->name));
	xjson_add(e, "attack", xjson_string(c->attack));
	xjson_add(e, "result", xjson_string(ops_check_result_name(c->result)));
	xjson_add(e, "detail", xjson_string(c->detail ? c->detail : ""));
	return e;
}

static void print_checks(const struct ops_probe_report *r)
{
	for (size_t i = 0; i < r->n; i++) {
		const struct ops_check *c = &r->checks[i];
		const char *mark = c->result == OPS_CHECK_PASSED   ? "passed "
		                   : c->result == OPS_CHECK_FAILED ? "FAILED "
		                                                   : "skipped";
		printf("%s  %-17s %s\n         %17s %s\n", mark, c->name, c->attack, "", c->detail ? c->detail : "");
	}
}

/* The nodes to probe: only --node's, or 'local' and every node row that
 * is not down (a down node is one skipped outcome in *down, saying so).
 * *ret (caller frees each and the array). */
static int nodes_to_probe(struct store *store, const char *only, char ***ret, size_t *ret_n,
                          struct ops_probe_report *down, struct cp_error **err)
{
	*ret = NULL;
	*ret_n = 0;
	if (only) {
		if (strcmp(only, STORE_NODE_LOCAL)) {
			struct node_record n = {0};
			if (store_node_get(store, only, &n, err) < 0)
				return -1;
			node_record_clear(&n);
		}
		*ret = xcalloc(1, sizeof(char *));
		(*ret)[(*ret_n)++] = xstrdup(only);
		return 0;
	}
	struct node_record *rows = NULL;
	size_t n = 0;
	if (store_node_list(store, &rows, &n, err) < 0)
		return -1;
	*ret = xcalloc(n + 1, sizeof(char *));
	(*ret)[(*ret_n)++] = xstrdup(STORE_NODE_LOCAL);
	for (size_t i = 0; i < n; i++) {
		if (rows[i].state == NODE_DOWN) {
			snprintf(down->node, sizeof(down->node), "%s", rows[i].name);
			ops_probe_report_add(
			    down, "node_down", "probe the node", OPS_CHECK_SKIPPED,
			    "node '%s' is down (not answering): not probed; run 'chat2sbx doctor --node "
			    "%s' once it answers",
			    rows[i].name, rows[i].name);
		} else {
			(*ret)[(*ret_n)++] = xstrdup(rows[i].name);
		}
		node_record_clear(&rows[i]);
	}
	free(rows);
	return 0;
}

int cmd_doctor(struct cli *cli, int argc, char **argv)
{
	const char *only = NULL;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--node") && i + 1 < argc)
			only = argv[++i];
		else if (!strncmp(argv[i], "--node=", 7))
			only = argv[i] + 7;
		else {
			fprintf(stderr, "usage: chat2sbx doctor [--json] [--node NAME]\n");
			return 2;
		}
	}
	struct store *store = NULL;
	struct docker_engine *engine = NULL;
	struct lifecycle *lc = NULL;
	struct cp_error *err = NULL;
	struct ops_probe_report down = {0};
	char **nodes = NULL;
	size_t n_nodes = 0, failures = 0, probed = 0;
	struct json_object *list = cli->json ? xjson_array() : NULL;
	int status = 0;
	int ready = controlplane_open_store(cli->cfg, &store, &err) == 0 &&
	            nodes_to_probe(store, only, &nodes, &n_nodes, &down, &err) == 0 &&
	            docker_engine_new(cli->cfg->docker_socket, &engine, &err) == 0 &&
	            lifecycle_new(cli->cfg, store, engine, &lc, &err) == 0;
	if (!ready) {
		status = cli_fail(err);
		goto out;
	}
	lifecycle_channel_receipts_set(lc, &tool_bash_receipts);
	for (size_t i = 0; i < n_nodes; i++) {
		struct ops_probe_report r = {0};
		if (!cli->json)
			printf("%sdoctor: node %s: creating a probe sandbox and attacking it from inside ...\n",
			       i ? "\n" : "", nodes[i]);
		fflush(stdout);
		if (ops_isolation_probe(lc, nodes[i], &r, &err) < 0) {
			/* One node that cannot take a probe does not hide the others. */
			if (n_nodes == 1) {
				status = cli_fail(err);
				goto out;
			}
			snprintf(r.node, sizeof(r.node), "%s", nodes[i]);
			ops_probe_report_add(&r, "probe", "create a probe sandbox on the node", OPS_CHECK_FAILED, "%s",
			                     err->message);
			cp_error_freep(&err);
		} else if (!strcmp(nodes[i], STORE_NODE_LOCAL)) {
			ops_endpoint_probe(cli->cfg, &r); /* the running serve's endpoint, on this machine */
		}
		probed++;
		failures += ops_probe_report_failures(&r);
		for (size_t j = 0; j < r.n; j++)
			if (list)
				xjson_append(list, check_json(&r.checks[j]));
		if (!list)
			print_checks(&r);
		ops_probe_report_clear(&r);
	}
	for (size_t j = 0; j < down.n; j++)
		if (list)
			xjson_append(list, check_json(&down.checks[j]));
	if (!list && down.n) {
		printf("\n");
		print_checks(&down);
	}
	if (list) {
		struct json_object *o = xjson_object();
		xjson_add(o, "passed", xjson_bool(failures == 0));
		xjson_add(o, "checks", TAKE_PTR(list));
		cli_print_json(o);
	} else if (failures) {
		printf("\ndoctor: %zu attack%s succeeded: the sandboxes are NOT isolated on every node probed; fix the "
		       "configuration before serving\n",
		       failures, failures == 1 ? "" : "s");
	} else {
		printf("\ndoctor: every attack failed on %zu node%s: the sandboxes are isolated as designed\n", probed,
		       probed == 1 ? "" : "s");
	}
	status = failures ? 1 : 0;
out:
	json_object_put(list);
	for (size_t i = 0; i < n_nodes; i++)
		free(nodes[i]);
	free(nodes);
	ops_probe_report_clear(&down);
	lifecycle_free(lc);
	docker_engine_free(engine);
	store_free(store);
	return status;
}
