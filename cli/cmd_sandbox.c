/* cmd_sandbox.c: `chat2sbx sandbox list|destroy ID [--force]`.
 * Uses store/ and docker/ directly (through lifecycle/), so they work with or
 * without serve running: the same database, WAL, busy timeout. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/id.h"
#include "base/xjson.h"
#include "cli.h"
#include "controlplane.h"
#include "docker/docker.h"
#include "lifecycle/lifecycle.h"
#include "tools/tools.h"

static const char *when(int64_t ms, char *buf, size_t size)
{
	return ms > 0 ? clock_format_rfc3339(ms, buf, size) : "-";
}

static int sandbox_list(struct cli *cli, struct store *store)
{
	struct sandbox_record *rows = NULL;
	size_t n = 0;
	struct cp_error *err = NULL;
	if (store_sandbox_list(store, 0, &rows, &n, &err) < 0)
		return cli_fail(err);
	struct json_object *list = xjson_array();
	int unsaved = 0;
	if (!cli->json)
		printf("%-26s %-9s %-12s %-25s %-24s %-8s %s\n", "SANDBOX", "STATUS", "NODE", "WORKSPACE", "CREATED",
		       "UNSAVED", "REASON");
	for (size_t i = 0; i < n; i++) {
		struct sandbox_record *s = &rows[i];
		char b1[40], b2[40];
		const char *node = s->node && *s->node ? s->node : STORE_NODE_LOCAL; /* issue 28 */
		if (cli->json) {
			struct json_object *o = xjson_object();
			xjson_add(o, "sandbox_id", xjson_string(s->id));
			xjson_add(o, "status", xjson_string(sandbox_status_to_string(s->status)));
			xjson_add(o, "workspace_id", xjson_string(s->workspace_id));
			xjson_add(o, "node", xjson_string(node));
			xjson_add(o, "image", xjson_string(s->image));
			xjson_add(o, "created_at", xjson_string(when(s->created_at_ms, b1, sizeof(b1))));
			xjson_add(o, "last_activity_at", xjson_string(when(s->last_activity_ms, b2, sizeof(b2))));
			if (s->failure_reason)
				xjson_add(o, "failure_reason", xjson_string(s->failure_reason));
			/* As serve last found it (the CLI never asks a helper). */
			if (s->unsaved >= 0)
				xjson_add(o, "unsaved_work", xjson_bool(s->unsaved));
			xjson_append(list, o);
		} else {
			printf("%-26s %-9s %-12s %-25s %-24s %-8s %s\n", s->id, sandbox_status_to_string(s->status),
			       node, s->workspace_id, when(s->created_at_ms, b1, sizeof(b1)),
			       s->unsaved < 0 ? "-"
			       : s->unsaved   ? "yes"
			                      : "no",
			       s->failure_reason ? s->failure_reason : "");
		}
		unsaved += s->unsaved == 1 || s->status == SANDBOX_EXPIRED;
		sandbox_record_clear(s);
	}
	free(rows);
	int64_t unapplied = 0;
	if (store_export_count_unapplied(store, &unapplied, &err) < 0)
		return cli_fail(err);
	if (cli->json) {
		struct json_object *o = xjson_object();
		xjson_add(o, "sandboxes", list);
		xjson_add(o, "unsaved_count", xjson_int64(unsaved));
		xjson_add(o, "exports_not_applied", xjson_int64(unapplied));
		cli_print_json(o);
	} else {
		json_object_put(list);
		printf("\n%d sandbox(es) with unsaved work (as serve last looked), %lld export(s) not applied yet "
		       "(chat2sbx export list)\n",
		       unsaved, (long long)unapplied);
	}
	return 0;
}

static int sandbox_destroy(struct cli *cli, struct store *store, const char *id, int force)
{
	struct cp_error *err = NULL;
	if (!id || !id_valid(id, "sbx_")) {
		fprintf(stderr,
		        "chat2sbx: '%s' is not a sandbox id (sbx_ followed by %d characters); see 'chat2sbx "
		        "sandbox list'\n",
		        id ? id : "", ID_RANDOM_CHARS);
		return 2;
	}
	struct docker_engine *engine = NULL;
	struct lifecycle *lc = NULL;
	if (docker_engine_new(cli->cfg->docker_socket, &engine, &err) < 0 ||
	    lifecycle_new(cli->cfg, store, engine, &lc, &err) < 0) {
		docker_engine_free(engine);
		return cli_fail(err);
	}
	lifecycle_channel_receipts_set(lc, &tool_bash_receipts);
	struct lifecycle_destroy_result res = {0};
	int r = lifecycle_sandbox_destroy_person(lc, id, force, "cli", &res, &err);
	struct sandbox_record s = res.sandbox;
	res.sandbox = (struct sandbox_record){0};
	if (r == 1) {
		printf("removed orphan container %s (it had no registry row)\n", id);
		if (res.note)
			fprintf(stderr, "chat2sbx: %s\n", res.note);
	}
	lifecycle_free(lc);
	docker_engine_free(engine);
	if (r < 0 && err->code == CP_ERR_NOT_FOUND) {
		/* The store's message names MCP tools; a CLI user runs commands. */
		cp_error_free(err);
		err = NULL;
		cp_error_set(&err, CP_ERR_NOT_FOUND,
		             "sandbox '%s' does not exist; run `chat2sbx sandbox list` to see the sandboxes", id);
	}
	cli_audit(store, "sandbox.destroy", id, id, r < 0 ? err : NULL);
	if (r < 0)
		return cli_fail(err);
	if (r == 0) {
		const struct export_record *x = &res.save.export;
		if (cli->json) {
			struct json_object *o = xjson_object();
			xjson_add(o, "sandbox_id", xjson_string(s.id));
			xjson_add(o, "status", xjson_string(sandbox_status_to_string(s.status)));
			if (x->id)
				xjson_add(o, "export_id", xjson_string(x->id));
			if (res.lost)
				xjson_add(o, "lost", xjson_string(res.lost));
			cli_print_json(o);
		} else {
			printf("destroyed %s (workspace %s kept)\n", s.id, s.workspace_id);
			if (x->id)
				printf("its work is saved as export %s (%s): chat2sbx export show %s\n", x->id, x->kind,
				       x->id);
			if (res.lost)
				printf("warning: %s\n", res.lost);
		}
	}
	lifecycle_destroy_result_clear(&res);
	sandbox_record_clear(&s);
	return 0;
}

int cmd_sandbox(struct cli *cli, int argc, char **argv)
{
	int force = 0, n = 0;
	char *rest[3] = {NULL, NULL, NULL};
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--force"))
			force = 1;
		else if (n < 3)
			rest[n++] = argv[i];
		else
			n++;
	}
	if (n < 1 || (strcmp(rest[0], "list") && strcmp(rest[0], "destroy")) ||
	    (!strcmp(rest[0], "destroy") && n != 2) || (!strcmp(rest[0], "list") && (n != 1 || force))) {
		fprintf(stderr, "usage: chat2sbx sandbox list [--json] | chat2sbx sandbox destroy ID [--force]\n");
		return 2;
	}
	argv = rest;
	struct store *store = NULL;
	struct cp_error *err = NULL;
	if (controlplane_open_store(cli->cfg, &store, &err) < 0)
		return cli_fail(err);
	int status = !strcmp(argv[0], "list") ? sandbox_list(cli, store) : sandbox_destroy(cli, store, argv[1], force);
	store_free(store);
	return status;
}
