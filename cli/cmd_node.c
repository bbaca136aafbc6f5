/* cmd_node.c: `chat2sbx node add|list|show|drain|resume|remove` (issue 28):
 * other machines' Docker Engines as nodes. Acts on the registry directly,
 * as `approval` does, so it works with or without serve running; the
 * engine's TLS files are node/'s and never printed (their directory is). */
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
#include "guard/guard.h"
#include "node/node.h"
#include "policy/policy.h"

#define NODE_USAGE                                                                                                     \
	"usage: chat2sbx node add NAME tcp://HOST:PORT --tls-ca FILE --tls-cert FILE --tls-key FILE\n"                 \
	"                [--host-root DIR]...\n"                                                                       \
	"       chat2sbx node list [--json] | node show NAME [--json] | node drain NAME | node resume NAME |\n"        \
	"       node remove NAME\n"

/* What sandboxes get on node n (the row; NULL: this machine, from its own
 * /proc and settings, as `status` says): the sandbox limit, the default
 * memory ceiling and the process limits (policy_node_sandbox_limits). */
static struct json_object *limits_json(const struct config *cfg, const struct node_record *n)
{
	struct policy_sandbox_limits l = {0};
	if (n) {
		policy_node_sandbox_limits(n->labels.memory_bytes, n->pid_max, n->threads_max,
		                           cfg->default_memory_bytes, cfg->pids_limit, cfg->warm_pool, &l);
	} else {
		_cleanup_error_ struct cp_error *e = NULL;
		if (guard_host_limits(cfg, NULL, &l, &e) < 0)
			return xjson_string(e->message);
	}
	struct json_object *o = xjson_object();
	xjson_add(o, "sandbox_limit", l.max_active > 0 ? json_object_new_int(l.max_active) : NULL);
	xjson_add(o, "default_memory_bytes", json_object_new_int64(l.default_memory_bytes));
	xjson_add(o, "pids_default", json_object_new_int64(l.pids_default));
	xjson_add(o, "pids_cap", json_object_new_int64(l.pids_cap));
	/* A node's budget: read by its disk probe (migration 0019), or the
	 * kernel's default assumed until then. */
	if (n) {
		int known = n->pid_max > 0 && n->threads_max > 0;
		xjson_add(o, "pid_max", json_object_new_int64(known ? n->pid_max : POLICY_NODE_PROCS_ASSUMED));
		xjson_add(o, "threads_max", json_object_new_int64(known ? n->threads_max : POLICY_NODE_PROCS_ASSUMED));
		xjson_add(o, "procs_assumed", json_object_new_boolean(!known));
	}
	return o;
}

static struct json_object *node_json(const struct config *cfg, const struct node_record *n, int64_t sandboxes,
                                     const char *state_dir)
{
	char when[40];
	struct json_object *o = xjson_object();
	xjson_add(o, "name", xjson_string(n->name));
	xjson_add(o, "endpoint", xjson_string(n->endpoint));
	xjson_add(o, "state", xjson_string(node_state_to_string(n->state)));
	xjson_add(o, "runtimes", xjson_string(n->labels.runtimes ? n->labels.runtimes : ""));
	xjson_add(o, "kvm", n->labels.kvm < 0 ? NULL : json_object_new_boolean(n->labels.kvm));
	xjson_add(o, "memory_bytes", json_object_new_int64(n->labels.memory_bytes));
	xjson_add(o, "cpus", json_object_new_int64(n->labels.cpus));
	xjson_add(o, "engine_version", n->labels.engine_version ? xjson_string(n->labels.engine_version) : NULL);
	xjson_add(o, "last_contact",
	          n->last_contact_ms ? xjson_string(clock_format_rfc3339(n->last_contact_ms, when, sizeof(when)))
	                             : NULL);
	xjson_add(o, "sandboxes", json_object_new_int64(sandboxes));
	xjson_add(o, "limits", limits_json(cfg, state_dir ? n : NULL));
	/* Where direct workspaces may be asked for: a node's --host-root
	 * (migration 0018), this machine's CHAT2SBX_ALLOWED_HOST_ROOTS. */
	size_t n_roots = 0;
	char **roots =
	    policy_roots_split(state_dir ? (n->host_roots ? n->host_roots : "") : cfg->allowed_host_roots, &n_roots);
	struct json_object *arr = xjson_array();
	for (size_t i = 0; i < n_roots; i++)
		xjson_append(arr, xjson_string(roots[i]));
	policy_roots_free(roots);
	xjson_add(o, "host_roots", arr);
	/* What serve's node disk guard found (lifecycle/node_disk.c); 'local'
	 * is this machine's guard's, and a node never looked at is not known. */
	int disk = state_dir && n->disk.checked_ms && n->disk.total_bytes >= 0;
	xjson_add(o, "disk_free_bytes", disk ? json_object_new_int64(n->disk.free_bytes) : NULL);
	xjson_add(o, "disk_total_bytes", disk ? json_object_new_int64(n->disk.total_bytes) : NULL);
	xjson_add(o, "disk_watermark_bytes", disk ? json_object_new_int64(n->disk.watermark_bytes) : NULL);
	xjson_add(o, "disk_low", disk ? json_object_new_boolean(n->disk.low) : NULL);
	xjson_add(o, "disk_checked_at",
	          state_dir && n->disk.checked_ms
	              ? xjson_string(clock_format_rfc3339(n->disk.checked_ms, when, sizeof(when)))
	              : NULL);
	if (state_dir) {
		char dir[4096];
		snprintf(dir, sizeof(dir), "%s/nodes/%s", state_dir, n->name);
		xjson_add(o, "tls_dir", xjson_string(dir));
		xjson_add(o, "created_at", xjson_string(clock_format_rfc3339(n->created_at_ms, when, sizeof(when))));
	} else {
		xjson_add(o, "implicit", json_object_new_boolean(1));
	}
	return o;
}

static void node_line(const struct node_record *n, int64_t sandboxes, int remote)
{
	/* "12.0 GiB", "LOW 0.4 GiB" (below its watermark) or "-" (not known). */
	char disk[40] = "-";
	if (remote && n->disk.checked_ms && n->disk.total_bytes >= 0)
		snprintf(disk, sizeof(disk), "%s%.1f GiB", n->disk.low ? "LOW " : "",
		         (double)n->disk.free_bytes / (1 << 30));
	printf("%-16s %-9s %9lld %4lld %8.1f GiB  %-13s %-16s %-30s %s\n", n->name, node_state_to_string(n->state),
	       (long long)sandboxes, (long long)n->labels.cpus, (double)n->labels.memory_bytes / (1 << 30), disk,
	       n->labels.engine_version ? n->labels.engine_version : "-", n->endpoint,
	       n->labels.runtimes ? n->labels.runtimes : "");
}

/* n is node 'local' as its engine answered: draining when recorded so. */
static void local_drained(struct store *store, struct node_record *n)
{
	enum node_state st = NODE_READY;
	_cleanup_error_ struct cp_error *e = NULL;
	if (store_node_local_state(store, &st, &e) == 0 && st == NODE_DRAINING)
		n->state = NODE_DRAINING;
}

static int64_t sandboxes_on(struct store *store, const char *name)
{
	int64_t count = 0;
	struct cp_error *err = NULL;
	if (store_node_count_sandboxes(store, name, &count, &err) < 0) {
		cp_error_free(err);
		return -1;
	}
	return count;
}

static int list(struct cli *cli, struct store *store)
{
	struct node_record *rows = NULL, local = {0};
	size_t n = 0;
	struct cp_error *err = NULL;
	if (store_node_list(store, &rows, &n, &err) < 0)
		return cli_fail(err);
	int local_up = node_local_record(cli->cfg, clock_now_ms(), &local, &err) == 0;
	if (!local_up) {
		/* This machine's engine does not answer: say so in its row. */
		local = (struct node_record){.name = xstrdup(STORE_NODE_LOCAL), .state = NODE_DOWN};
		local.endpoint = xasprintf("unix://%s", cli->cfg->docker_socket);
	} else {
		local_drained(store, &local);
	}
	struct json_object *arr = xjson_array();
	if (!cli->json)
		printf("%-16s %-9s %9s %4s %12s  %-13s %-16s %-30s %s\n", "NODE", "STATE", "SANDBOXES", "CPUS",
		       "MEMORY", "DISK FREE", "ENGINE", "ENDPOINT", "RUNTIMES");
	for (size_t i = 0; i <= n; i++) {
		const struct node_record *r = i == 0 ? &local : &rows[i - 1];
		int64_t count = sandboxes_on(store, r->name);
		if (cli->json)
			xjson_append(arr, node_json(cli->cfg, r, count, i == 0 ? NULL : cli->cfg->state_dir));
		else
			node_line(r, count, i > 0);
	}
	if (!local_up && !cli->json)
		printf("\nnode 'local': %s\n", err->message);
	cp_error_free(err);
	for (size_t i = 0; i < n; i++)
		node_record_clear(&rows[i]);
	free(rows);
	node_record_clear(&local);
	if (cli->json)
		cli_print_json(arr);
	else
		json_object_put(arr);
	return 0;
}

static int show(struct cli *cli, struct store *store, const char *name)
{
	struct node_record n = {0};
	struct cp_error *err = NULL;
	int local = !strcmp(name, STORE_NODE_LOCAL);
	if ((local ? node_local_record(cli->cfg, clock_now_ms(), &n, &err) : store_node_get(store, name, &n, &err)) < 0)
		return cli_fail(err);
	if (local)
		local_drained(store, &n);
	struct json_object *o = node_json(cli->cfg, &n, sandboxes_on(store, name), local ? NULL : cli->cfg->state_dir);
	if (cli->json) {
		cli_print_json(o);
	} else {
		json_object_object_foreach(o, key, val)
		    printf("%-15s %s\n", key, val ? json_object_get_string(val) : "-");
		json_object_put(o);
	}
	node_record_clear(&n);
	return 0;
}

/* The value of --NAME VALUE or --NAME=VALUE at argv[*i] (advancing *i), or NULL. */
static const char *option(int argc, char **argv, int *i, const char *name)
{
	size_t n = strlen(name);
	if (strncmp(argv[*i], name, n) != 0)
		return NULL;
	if (argv[*i][n] == '=')
		return argv[*i] + n + 1;
	if (argv[*i][n] || *i + 1 >= argc)
		return NULL;
	return argv[++*i];
}

static int add(struct cli *cli, struct store *store, int argc, char **argv)
{
	struct docker_tls_files tls = {0};
	const char *pos[2] = {NULL, NULL};
	size_t npos = 0;
	_cleanup_free_ char *roots = NULL; /* ':'-separated, as the row keeps them */
	for (int i = 1; i < argc; i++) {
		const char *v;
		if ((v = option(argc, argv, &i, "--host-root"))) {
			struct cp_error *e = NULL;
			if (policy_node_path_shape(v, "--host-root", &e) < 0)
				return cli_fail(e);
			char *joined = roots ? xasprintf("%s:%s", roots, v) : xstrdup(v);
			free(roots);
			roots = joined;
		} else if ((v = option(argc, argv, &i, "--tls-ca")))
			tls.ca = v;
		else if ((v = option(argc, argv, &i, "--tls-cert")))
			tls.cert = v;
		else if ((v = option(argc, argv, &i, "--tls-key")))
			tls.key = v;
		else if (argv[i][0] != '-' && npos < 2)
			pos[npos++] = argv[i];
		else {
			fprintf(stderr, "chat2sbx: node add: unexpected '%s'\n%s", argv[i], NODE_USAGE);
			return 2;
		}
	}
	if (npos != 2) {
		fprintf(stderr, "%s", NODE_USAGE);
		return 2;
	}
	struct node_record n = {0};
	struct cp_error *err = NULL;
	int r = node_add(cli->cfg, store, pos[0], pos[1], &tls, roots, clock_now_ms(), &n, &err);
	cli_audit(store, "node.add", pos[0], NULL, err);
	if (r < 0)
		return cli_fail(err);
	if (cli->json)
		cli_print_json(node_json(cli->cfg, &n, 0, cli->cfg->state_dir));
	else
		printf("added node %s at %s: engine %s, %lld CPUs, %.1f GiB, runtimes %s; its TLS files are in "
		       "%s/nodes/%s (0600)\n",
		       n.name, n.endpoint, n.labels.engine_version ? n.labels.engine_version : "?",
		       (long long)n.labels.cpus, (double)n.labels.memory_bytes / (1 << 30), n.labels.runtimes,
		       cli->cfg->state_dir, n.name);
	cli_firewall_follow_nodes(cli, n.name);
	node_record_clear(&n);
	return 0;
}

/* After node name is removed: its managed workspaces kept there (their
 * volumes stay on its engine, as their rows stay here) are said, with how
 * to use them again, and those retired after 30 days without a sandbox
 * (workspace.c: their volumes are never removed either), as files left
 * there for the person. */
static void say_kept_workspaces(struct store *store, const char *name)
{
	struct workspace_record *rows = NULL;
	size_t n = 0, count[2] = {0, 0}; /* kept, retired */
	_cleanup_error_ struct cp_error *e = NULL;
	if (store_workspace_list(store, &rows, &n, &e) < 0)
		return;
	size_t direct = 0; /* direct workspaces of the node: its own directories */
	for (int retired = 0; retired < 2; retired++) {
		for (size_t i = 0; i < n; i++)
			if (rows[i].volume && rows[i].node && !strcmp(rows[i].node, name) &&
			    (rows[i].trashed_at_ms > 0) == retired)
				printf("%s %s (volume %s)",
				       count[retired]++ ? ","
				       : retired        ? "  retired there, files kept:"
				                        : "  kept there:",
				       rows[i].id, rows[i].volume);
		if (count[retired])
			printf("\n");
	}
	for (size_t i = 0; i < n; i++) {
		if (rows[i].node && !strcmp(rows[i].node, name) && !strcmp(rows[i].mode, "direct"))
			direct++;
		workspace_record_clear(&rows[i]);
	}
	if (direct)
		printf("%zu direct workspace%s of node %s (its own directories, untouched) can be used again once "
		       "the node is added again as '%s'\n",
		       direct, direct == 1 ? "" : "s", name, name);
	free(rows);
	size_t kept = count[0], retired = count[1];
	if (kept)
		printf("%zu workspace%s kept on node %s stay%s there as volumes of its engine; add the node again as "
		       "'%s' to use %s, or remove %s there (docker volume rm)\n",
		       kept, kept == 1 ? "" : "s", name, kept == 1 ? "s" : "", name, kept == 1 ? "it" : "them",
		       kept == 1 ? "it" : "them");
	if (retired)
		printf("%zu retired workspace%s (30 days without a sandbox) keep%s files in volumes of node %s; "
		       "remove them there when they are no longer needed (docker volume rm)\n",
		       retired, retired == 1 ? "" : "s", retired == 1 ? "s its" : " their", name);
}

/* drain, resume, remove. */
static int change(struct cli *cli, struct store *store, const char *verb, const char *name)
{
	struct cp_error *err = NULL;
	_cleanup_free_ char *action = xasprintf("node.%s", verb);
	int local = !strcmp(name, STORE_NODE_LOCAL);
	if (local && !strcmp(verb, "remove")) {
		cp_error_set(&err, CP_ERR_INVALID_ARGUMENT,
		             "node 'local' is this machine's engine: it cannot be removed ('chat2sbx node drain local' "
		             "stops new sandboxes here)");
		cli_audit(store, action, name, NULL, err);
		return cli_fail(err);
	}
	int64_t count = 0;
	int r;
	if (!strcmp(verb, "remove")) {
		r = node_remove(cli->cfg, store, name, NULL, &err);
	} else {
		enum node_state before = NODE_READY;
		r = store_node_set_state(store, name, !strcmp(verb, "drain") ? NODE_DRAINING : NODE_READY, &before,
		                         &err);
		if (r == 0)
			r = store_node_count_sandboxes(store, name, &count, &err);
	}
	cli_audit(store, action, name, NULL, err);
	if (r < 0)
		return cli_fail(err);
	if (!strcmp(verb, "remove")) {
		printf("removed node %s and its TLS files\n", name);
		say_kept_workspaces(store, name);
		cli_firewall_follow_nodes(cli, name);
	} else if (!strcmp(verb, "drain"))
		printf("node %s is draining: no new sandbox is placed on it; its %lld sandbox%s keep%s working%s\n",
		       name, (long long)count, count == 1 ? "" : "es", count == 1 ? "s" : "",
		       local ? " (with no other node ready, sandbox_create is refused until 'chat2sbx node resume "
		               "local')"
		             : "");
	else
		printf("node %s is ready: new sandboxes may be placed on it\n", name);
	return 0;
}

int cmd_node(struct cli *cli, int argc, char **argv)
{
	const char *verb = argc ? argv[0] : "";
	int ok =
	    (!strcmp(verb, "list") && argc == 1) || (!strcmp(verb, "add") && argc >= 3) ||
	    ((!strcmp(verb, "show") || !strcmp(verb, "drain") || !strcmp(verb, "resume") || !strcmp(verb, "remove")) &&
	     argc == 2);
	if (!ok) {
		fprintf(stderr, "%s", NODE_USAGE);
		return 2;
	}
	struct store *store = NULL;
	struct cp_error *err = NULL;
	if (controlplane_open_store(cli->cfg, &store, &err) < 0)
		return cli_fail(err);
	int status = !strcmp(verb, "list")   ? list(cli, store)
	             : !strcmp(verb, "add")  ? add(cli, store, argc, argv)
	             : !strcmp(verb, "show") ? show(cli, store, argv[1])
	                                     : change(cli, store, verb, argv[1]);
	store_free(store);
	return status;
}
