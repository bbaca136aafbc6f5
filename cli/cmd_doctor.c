/* cmd_doctor.c: `chat2sbx doctor [--json]`: proves the isolation on this
 * machine by attacking a probe sandbox from inside (ops/isolation.c) and the
 * running serve's MCP endpoint from outside (ops/attack_endpoint.c), and
 * prints each attack as passed, failed or skipped. Works while serve runs:
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
#include "base/xjson.h"

static void print_report(struct cli *cli, const struct ops_probe_report *r)
{
	size_t failures = ops_probe_report_failures(r);
	if (cli->json) {
		struct json_object *o = xjson_object();
		struct json_object *list = xjson_array();
		for (size_t i = 0; i < r->n; i++) {
			const struct ops_check *c = &r->checks[i];
			struct json_object *e = xjson_object();
			xjson_add(e, "name", xjson_string(c->name));
			xjson_add(e, "attack", xjson_string(c->attack));
			xjson_add(e, "result", xjson_string(ops_check_result_name(c->result)));
			xjson_add(e, "detail", xjson_string(c->detail ? c->detail : ""));
			xjson_append(list, e);
		}
		xjson_add(o, "passed", xjson_bool(failures == 0));
		xjson_add(o, "checks", list);
		cli_print_json(o);
		return;
	}
	for (size_t i = 0; i < r->n; i++) {
		const struct ops_check *c = &r->checks[i];
		const char *mark = c->result == OPS_CHECK_PASSED   ? "passed "
		                   : c->result == OPS_CHECK_FAILED ? "FAILED "
		                                                   : "skipped";
		printf("%s  %-17s %s\n         %17s %s\n", mark, c->name, c->attack, "", c->detail ? c->detail : "");
	}
	if (failures)
		printf("\ndoctor: %zu attack%s succeeded: this machine's sandboxes are NOT isolated; fix the "
		       "configuration before serving\n",
		       failures, failures == 1 ? "" : "s");
	else
		printf("\ndoctor: every attack failed: the sandboxes are isolated as designed\n");
}

int cmd_doctor(struct cli *cli, int argc, char **argv)
{
	(void)argv;
	if (argc != 0) {
		fprintf(stderr, "usage: chat2sbx doctor [--json]\n");
		return 2;
	}
	struct store *store = NULL;
	struct docker_engine *engine = NULL;
	struct lifecycle *lc = NULL;
	struct cp_error *err = NULL;
	struct ops_probe_report r = {0};
	int status;
	if (!cli->json)
		printf("doctor: creating a probe sandbox and attacking it from inside ...\n");
	fflush(stdout);
	int ready = controlplane_open_store(cli->cfg, &store, &err) == 0 &&
	            docker_engine_new(cli->cfg->docker_socket, &engine, &err) == 0 &&
	            lifecycle_new(cli->cfg, store, engine, &lc, &err) == 0;
	if (ready)
		lifecycle_channel_receipts_set(lc, &tool_bash_receipts);
	if (!ready || ops_isolation_probe(lc, &r, &err) < 0) {
		status = cli_fail(err);
	} else {
		ops_endpoint_probe(cli->cfg, &r); /* the running serve's endpoint */
		print_report(cli, &r);
		status = ops_probe_report_failures(&r) ? 1 : 0;
	}
	ops_probe_report_clear(&r);
	lifecycle_free(lc);
	docker_engine_free(engine);
	store_free(store);
	return status;
}
