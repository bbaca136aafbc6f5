/* cmd_workspace.c: `chat2sbx workspace list [--json]` and `workspace add PATH
 * --mode clone|direct [--node NODE]` (operator registration under the same policy as an
 * approval). Reads and writes the registry directly, so it works with or
 * without serve running. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/clock.h"
#include "base/xalloc.h"
#include "base/xjson.h"
#include "cli.h"
#include "controlplane.h"
#include "lifecycle/lifecycle.h"
#include "policy/policy.h"
#include "tools/tools.h"

static int list(struct cli *cli, struct store *store)
{
	struct workspace_record *rows = NULL;
	size_t n = 0;
	struct cp_error *err = NULL;
	if (store_workspace_list(store, &rows, &n, &err) < 0)
		return cli_fail(err);
	struct json_object *arr = xjson_array();
	if (!cli->json)
		printf("%-25s %-8s %-9s %-26s %-24s %s\n", "WORKSPACE", "MODE", "STATE", "SANDBOX", "TRASH AT", "PATH");
	for (size_t i = 0; i < n; i++) {
		struct workspace_record *w = &rows[i];
		if (cli->json) {
			struct json_object *o = xjson_object();
			tools_workspace_fill(o, w);
			xjson_append(arr, o);
		} else {
			int64_t trash_at = 0;
			const char *state = workspace_state(w, &trash_at);
			char when[40] = "-";
			if (trash_at)
				clock_format_rfc3339(trash_at, when, sizeof(when));
			/* A workspace kept on another node: its files are a volume there;
			 * a direct one of another node is that node's directory. */
			int remote = w->node && strcmp(w->node, STORE_NODE_LOCAL) != 0;
			_cleanup_free_ char *where = w->volume ? xasprintf("%s on node %s", w->volume, w->node)
			                             : remote  ? xasprintf("%s on node %s", w->path, w->node)
			                                       : xstrdup(w->path);
			printf("%-25s %-8s %-9s %-26s %-24s %s\n", w->id, w->mode, state,
			       w->sandbox_id ? w->sandbox_id : "-", when, where);
		}
		workspace_record_clear(w);
	}
	free(rows);
	if (cli->json)
		cli_print_json(arr);
	else
		json_object_put(arr);
	return 0;
}

static int add(struct cli *cli, struct store *store, int argc, char **argv)
{
	const char *path = NULL, *mode = NULL, *node = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--node") && i + 1 < argc)
			node = argv[++i];
		else if (!strncmp(argv[i], "--node=", 7))
			node = argv[i] + 7;
		else if (!strcmp(argv[i], "--mode") && i + 1 < argc)
			mode = argv[++i];
		else if (!strncmp(argv[i], "--mode=", 7))
			mode = argv[i] + 7;
		else if (!path && argv[i][0] != '-')
			path = argv[i];
		else {
			fprintf(stderr, "chat2sbx workspace add: unexpected '%s'\n", argv[i]);
			return 2;
		}
	}
	if (!path || !mode) {
		fprintf(stderr, "usage: chat2sbx workspace add PATH --mode clone|direct [--node NODE] [--json]\n");
		return 2;
	}
	struct workspace_record w = {0};
	int created = 0;
	struct cp_error *err = NULL;
	int r = workspace_register_on(cli->cfg, store, node, path, mode, &w, &created, &err);
	cli_audit(store, "workspace.add", path, NULL, err);
	if (r < 0)
		return cli_fail(err);
	if (cli->json) {
		struct json_object *o = xjson_object();
		tools_workspace_fill(o, &w);
		xjson_add(o, "created", xjson_bool(created));
		cli_print_json(o);
	} else {
		int remote = w.node && strcmp(w.node, STORE_NODE_LOCAL) != 0;
		printf("%s workspace %s (%s) for %s%s%s\nThe model can use it with sandbox_create {\"workspace_id\": "
		       "\"%s\"}.\n",
		       created ? "registered" : "already registered:", w.id, w.mode, w.path, remote ? " on node " : "",
		       remote ? w.node : "", w.id);
		if (!strcmp(w.mode, "direct"))
			printf("%s\n", policy_direct_note_for(w.node));
	}
	workspace_record_clear(&w);
	return 0;
}

int cmd_workspace(struct cli *cli, int argc, char **argv)
{
	int is_list = argc == 1 && !strcmp(argv[0], "list");
	int is_add = argc >= 1 && !strcmp(argv[0], "add");
	if (!is_list && !is_add) {
		fprintf(stderr, "usage: chat2sbx workspace list [--json] | workspace add PATH --mode clone|direct "
		                "[--node NODE]\n");
		return 2;
	}
	struct store *store = NULL;
	struct cp_error *err = NULL;
	if (controlplane_open_store(cli->cfg, &store, &err) < 0)
		return cli_fail(err);
	int status = is_list ? list(cli, store) : add(cli, store, argc, argv);
	store_free(store);
	return status;
}
