/* cmd_workspace.c: `chat2sbx workspace list [--json]`. Reads the registry
 * directly, so it works with or without serve running. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "controlplane.h"

int cmd_workspace(struct cli *cli, int argc, char **argv)
{
	if (argc != 1 || strcmp(argv[0], "list")) {
		fprintf(stderr, "usage: chat2sbx workspace list [--json]\n");
		return 2;
	}
	struct store *store = NULL;
	struct cp_error *err = NULL;
	if (controlplane_open_store(cli->cfg, &store, &err) < 0)
		return cli_fail(err);
	struct workspace_record *rows = NULL;
	size_t n = 0;
	if (store_workspace_list(store, &rows, &n, &err) < 0) {
		store_free(store);
		return cli_fail(err);
	}
	struct json_object *list = json_object_new_array();
	if (!cli->json)
		printf("%-25s %-8s %-26s %s\n", "WORKSPACE", "MODE", "SANDBOX", "PATH");
	for (size_t i = 0; i < n; i++) {
		struct workspace_record *w = &rows[i];
		if (cli->json) {
			struct json_object *o = json_object_new_object();
			json_object_object_add(o, "workspace_id", json_object_new_string(w->id));
			json_object_object_add(o, "mode", json_object_new_string(w->mode));
			json_object_object_add(o, "path", json_object_new_string(w->path));
			if (w->sandbox_id)
				json_object_object_add(o, "sandbox_id", json_object_new_string(w->sandbox_id));
			json_object_array_add(list, o);
		} else {
			printf("%-25s %-8s %-26s %s\n", w->id, w->mode, w->sandbox_id ? w->sandbox_id : "-", w->path);
		}
		workspace_record_clear(w);
	}
	free(rows);
	if (cli->json)
		printf("%s\n",
		       json_object_to_json_string_ext(list, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(list);
	store_free(store);
	return 0;
}
