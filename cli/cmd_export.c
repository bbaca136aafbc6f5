/* cmd_export.c: `chat2sbx export list [--json] | show ID | apply ID [--to
 * DIR] | delete ID`: the person's side of saved clone work (issue 14; delete,
 * a move to the trash, issue 23). The model can
 * only save; bringing work into the approved repository is decided here,
 * by the person, with the registry and the export files alone (serve need
 * not run, no engine is asked). Everything printed that came from a
 * sandbox was escaped when it was saved, and ref names are printed as
 * shell words (text_shell_quote), safe to paste (issue 23). */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/clock.h"
#include "base/id.h"
#include "base/text.h"
#include "base/xjson.h"
#include "cli.h"
#include "controlplane.h"
#include "export/export.h"
#include "lifecycle/lifecycle.h"
#include "tools/tools.h"

static const char *state_of(const struct export_record *x)
{
	if (x->trashed_at_ms)
		return "trashed";
	if (!strcmp(x->kind, "none"))
		return "nothing";
	return x->applied_count ? "applied" : "not-applied";
}

static int export_list(struct cli *cli, struct store *store)
{
	struct export_record *rows = NULL;
	size_t n = 0;
	struct cp_error *err = NULL;
	if (store_export_list(store, NULL, &rows, &n, &err) < 0)
		return cli_fail(err);
	struct json_object *list = xjson_array();
	if (!cli->json)
		printf("%-24s %-26s %-5s %-10s %-11s %5s %7s %5s %s\n", "EXPORT", "SANDBOX", "KIND", "REASON", "STATE",
		       "REFS", "COMMITS", "DIRTY", "CREATED");
	for (size_t i = 0; i < n; i++) {
		struct export_record *x = &rows[i];
		char when[40];
		clock_format_rfc3339(x->created_at_ms, when, sizeof(when));
		if (cli->json) {
			struct json_object *o = xjson_object();
			tools_export_fill(o, x);
			xjson_add(o, "sandbox_id", xjson_string(x->sandbox_id));
			xjson_add(o, "workspace_id", xjson_string(x->workspace_id));
			xjson_add(o, "state", xjson_string(state_of(x)));
			xjson_add(o, "path", xjson_string(x->path));
			xjson_add(o, "applied_count", xjson_int64(x->applied_count));
			if (x->shares_bundle_of)
				xjson_add(o, "shares_bundle_of", xjson_string(x->shares_bundle_of));
			xjson_append(list, o);
		} else {
			printf("%-24s %-26s %-5s %-10s %-11s %5lld %7lld %5lld %s\n", x->id, x->sandbox_id, x->kind,
			       x->reason, state_of(x), (long long)x->refs, (long long)x->commits,
			       (long long)x->dirty_files, when);
		}
		export_record_clear(x);
	}
	free(rows);
	if (cli->json)
		cli_print_json(list);
	else
		json_object_put(list);
	return 0;
}

static const char *str(struct json_object *o, const char *k)
{
	struct json_object *v = NULL;
	return json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_string)
	           ? json_object_get_string(v)
	           : NULL;
}

static long long num(struct json_object *o, const char *k)
{
	struct json_object *v = NULL;
	return json_object_object_get_ex(o, k, &v) ? (long long)json_object_get_int64(v) : 0;
}

static void show_text(const struct export_record *x, struct json_object *m)
{
	printf("export %s (%s, %s) of sandbox %s, workspace %s\n", x->id, x->kind, x->reason, x->sandbox_id,
	       x->workspace_id);
	printf("  from     %s\n", str(m, "host_path") ?: "-");
	printf("  saved    %s, %lld bytes%s, in %s\n", str(m, "created_at") ?: "?", (long long)x->bytes,
	       num(m, "thin") ? " (builds on the approved repository's commits)" : "", x->path);
	if (x->message)
		printf("  message  %s\n", x->message);
	printf("  applied  %lld time(s)\n", (long long)x->applied_count);
	if (str(m, "shares_bundle_of"))
		printf("  shared   its bundle is export %s's (a hard link: nothing new was copied; deleting either "
		       "keeps the other whole)\n",
		       str(m, "shares_bundle_of"));
	if (!strcmp(x->kind, "none"))
		printf("  nothing new since the sandbox was made: no commit, branch or change\n");
	struct json_object *refs = NULL;
	if (json_object_object_get_ex(m, "refs", &refs))
		for (size_t i = 0; i < json_object_array_length(refs); i++) {
			struct json_object *r = json_object_array_get_idx(refs, i);
			const char *kind = str(r, "kind") ?: "?";
			if (!strcmp(kind, "snapshot"))
				continue;
			/* Names came from the sandbox: one shell word each. */
			const char *name = str(r, "name") ?: "?", *host = str(r, "host_ref");
			_cleanup_free_ char *qname = text_shell_quote(name, strlen(name));
			_cleanup_free_ char *qhost = host ? text_shell_quote(host, strlen(host)) : NULL;
			printf("\n%s %s -> %s (%.12s)%s\n", kind, qname,
			       qhost ? qhost : "(not applied: the name collides)", str(r, "oid") ?: "",
			       num(r, "new_commits") ? "" : ", no new commit");
			struct json_object *c = NULL, *f = NULL;
			if (json_object_object_get_ex(r, "commits", &c))
				for (size_t j = 0; j < json_object_array_length(c); j++) {
					struct json_object *e = json_object_array_get_idx(c, j);
					printf("  %.12s %s\n", str(e, "oid") ?: "", str(e, "subject") ?: "");
				}
			if (num(r, "new_commits") > (long long)(c ? json_object_array_length(c) : 0))
				printf("  ... %s%lld commits in all\n", num(m, "commits_partial") ? "at least " : "",
				       num(r, "new_commits"));
			if (json_object_object_get_ex(r, "files", &f) && json_object_array_length(f)) {
				printf("  files changed:\n");
				for (size_t j = 0; j < json_object_array_length(f); j++)
					printf("    %s\n", json_object_get_string(json_object_array_get_idx(f, j)));
			}
		}
	struct json_object *snap = NULL, *files = NULL;
	if (json_object_object_get_ex(m, "snapshot", &snap) && str(snap, "oid")) {
		printf("\nuncommitted and untracked changes (%lld file(s)) -> refs/remotes/chat2sbx/%s/uncommitted\n",
		       num(snap, "file_count"), x->sandbox_id);
		if (json_object_object_get_ex(snap, "files", &files))
			for (size_t j = 0; j < json_object_array_length(files); j++) {
				struct json_object *e = json_object_array_get_idx(files, j);
				printf("  %s %s\n", str(e, "status") ?: "?", str(e, "path") ?: "");
			}
	}
	if (!strcmp(x->kind, "git"))
		printf("\nbring it home: chat2sbx export apply %s\n", x->id);
	else if (!strcmp(x->kind, "tar"))
		printf("\n%lld entries; write the plain copy with: chat2sbx export apply %s --to DIR\n",
		       num(m, "archive_entries"), x->id);
}

static int export_show(struct cli *cli, struct store *store, const char *id)
{
	struct export_record x = {0};
	struct cp_error *err = NULL;
	struct json_object *m = NULL;
	if (store_export_get(store, id, &x, &err) < 0 || export_manifest_json(&x, &m, &err) < 0) {
		export_record_clear(&x);
		return cli_fail(err);
	}
	if (cli->json) {
		xjson_add(m, "path", xjson_string(x.path));
		xjson_add(m, "applied_count", xjson_int64(x.applied_count));
		cli_print_json(m);
	} else {
		show_text(&x, m);
		json_object_put(m);
	}
	export_record_clear(&x);
	return 0;
}

static int cmd_export_apply(struct cli *cli, struct store *store, const char *id, const char *to)
{
	struct export_apply_result res = {0};
	struct cp_error *err = NULL;
	if (export_apply(cli->cfg, store, id, to, &res, &err) < 0) {
		export_apply_result_clear(&res);
		return cli_fail(err);
	}
	if (cli->json) {
		struct json_object *o = xjson_object();
		xjson_add(o, "export_id", xjson_string(id));
		xjson_add(o, "kind", xjson_string(res.kind));
		xjson_add(o, "target", xjson_string(res.target ? res.target : ""));
		xjson_add(o, "refs_updated", xjson_int64(res.refs_updated));
		xjson_add(o, "refs_same", xjson_int64(res.refs_same));
		struct json_object *refs = xjson_array(), *skipped = xjson_array();
		for (char **p = res.refs; p && *p; p++)
			xjson_append(refs, xjson_string(*p));
		for (char **p = res.skipped; p && *p; p++)
			xjson_append(skipped, xjson_string(*p));
		xjson_add(o, "refs", refs);
		xjson_add(o, "skipped", skipped);
		cli_print_json(o);
	} else {
		_cleanup_free_ char *summary = export_apply_summary(id, &res);
		printf("%s%s%s", summary, !strcmp(res.kind, "git") ? "\n" : "", res.next_steps ? res.next_steps : "");
	}
	export_apply_result_clear(&res);
	return 0;
}

static int cmd_export_delete(struct cli *cli, struct store *store, const char *id)
{
	struct export_record x = {0};
	struct cp_error *err = NULL;
	if (export_delete(cli->cfg, store, id, &x, &err) < 0)
		return cli_fail(err);
	if (cli->json) {
		struct json_object *o = xjson_object();
		xjson_add(o, "export_id", xjson_string(x.id));
		xjson_add(o, "path", xjson_string(x.path));
		xjson_add(o, "applied_count", xjson_int64(x.applied_count));
		cli_print_json(o);
	} else {
		printf("moved export %s to the trash: %s\n%s", x.id, x.path,
		       x.applied_count ? ""
		                       : "It was never applied. `chat2sbx export apply` still finds it there; nothing "
		                         "in the trash is deleted automatically.\n");
	}
	export_record_clear(&x);
	return 0;
}

int cmd_export(struct cli *cli, int argc, char **argv)
{
	const char *to = NULL;
	char *rest[3] = {NULL, NULL, NULL};
	int n = 0;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--to") && i + 1 < argc)
			to = argv[++i];
		else if (n < 3)
			rest[n++] = argv[i];
		else
			n++;
	}
	int ok =
	    n >= 1 && ((!strcmp(rest[0], "list") && n == 1 && !to) || (!strcmp(rest[0], "show") && n == 2 && !to) ||
	               (!strcmp(rest[0], "apply") && n == 2) || (!strcmp(rest[0], "delete") && n == 2 && !to));
	if (!ok) {
		fprintf(stderr,
		        "usage: chat2sbx export list [--json] | export show ID [--json] | export apply ID [--to DIR] | "
		        "export delete ID\n");
		return 2;
	}
	if (n == 2 && !id_valid(rest[1], "exp_")) {
		fprintf(
		    stderr,
		    "chat2sbx: '%s' is not an export id (exp_ followed by %d characters); see 'chat2sbx export list'\n",
		    rest[1], ID_RANDOM_CHARS);
		return 2;
	}
	struct store *store = NULL;
	struct cp_error *err = NULL;
	if (controlplane_open_store(cli->cfg, &store, &err) < 0)
		return cli_fail(err);
	int status = !strcmp(rest[0], "list")     ? export_list(cli, store)
	             : !strcmp(rest[0], "show")   ? export_show(cli, store, rest[1])
	             : !strcmp(rest[0], "delete") ? cmd_export_delete(cli, store, rest[1])
	                                          : cmd_export_apply(cli, store, rest[1], to);
	store_free(store);
	return status;
}
