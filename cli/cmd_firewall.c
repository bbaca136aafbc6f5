/* cmd_firewall.c: `chat2sbx setup --install-firewall | --uninstall-firewall |
 * --print-firewall`: the host-edge firewall (table inet chat2sbx, issue 12)
 * for a machine whose serve does not run as root, its removal, and its text
 * for an operator whose own firewall should do the same. The rules and
 * their checks live in controlplane/firewall and ops/firewall.c. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "docker/docker.h"
#include "lifecycle/lifecycle.h"
#include "ops/ops.h"

/* The engine, when it answers (older networks' bridges come from it); a
 * firewall without them still covers every bridge chat2sbx names itself. */
static struct docker_engine *engine_or_null(const struct config *cfg)
{
	struct docker_engine *engine = NULL;
	struct cp_error *e = NULL;
	if (docker_engine_new(cfg->docker_socket, &engine, &e) < 0) {
		fprintf(stderr,
		        "chat2sbx: warning: %s; bridges of networks an older chat2sbx made are not named (the %s* ones "
		        "are)\n",
		        e->message, POLICY_BRIDGE_PREFIX);
		cp_error_free(e);
		return NULL;
	}
	return engine;
}

/* Before the engine is asked anything: without CAP_NET_ADMIN nothing can be done. */
static int require_root(const char *flag)
{
	if (firewall_permitted())
		return 0;
	fprintf(stderr,
	        "chat2sbx: setup %s changes the machine's nftables ruleset, which needs root (CAP_NET_ADMIN); run "
	        "'sudo chat2sbx setup %s'\n",
	        flag, flag);
	return cp_error_exit_status(CP_ERR_DENIED);
}

static int install(struct cli *cli)
{
	if (require_root("--install-firewall"))
		return cp_error_exit_status(CP_ERR_DENIED);
	struct docker_engine *engine = engine_or_null(cli->cfg);
	struct cp_error *err = NULL;
	int changed = 0;
	char detail[1024];
	int r = ops_firewall_install(cli->cfg, engine, &changed, NULL, detail, sizeof(detail), &err);
	docker_engine_free(engine);
	if (r < 0)
		return cli_fail(err);
	printf("setup: firewall  %s%s\n", changed ? "changed: " : "ok: ", detail);
	printf("setup: the table lasts until the next reboot; a chat2sbx serve running as root installs it at every "
	       "start, a serve running as a normal user trusts the note %s written now; otherwise run this again "
	       "after a reboot (the package's chat2sbx-firewall unit runs it at boot and after engine restarts)%s\n",
	       OPS_FIREWALL_NOTE,
	       cli->cfg->firewall ? "" : " (CHAT2SBX_FIREWALL=0: serve will neither install nor check it)");
	return 0;
}

static int uninstall(struct cli *cli)
{
	if (require_root("--uninstall-firewall"))
		return cp_error_exit_status(CP_ERR_DENIED);
	struct cp_error *err = NULL;
	int removed = 0;
	if (ops_firewall_uninstall(&removed, &err) < 0)
		return cli_fail(err);
	printf("setup: firewall  %s\n", removed ? "changed: removed table inet chat2sbx"
	                                        : "ok: there is no table inet chat2sbx (nothing to do)");
	printf("setup: sandboxes can now reach every service of this host that listens on all interfaces%s\n",
	       cli->cfg->firewall ? "; a chat2sbx serve running as root puts the table back within a minute unless "
	                            "it runs with CHAT2SBX_FIREWALL=0"
	                          : "");
	return 0;
}

static int print_rules(struct cli *cli)
{
	struct docker_engine *engine = engine_or_null(cli->cfg);
	struct firewall_ruleset rs = {0};
	struct cp_error *err = NULL;
	int r = ops_firewall_build(cli->cfg, engine, &rs, &err);
	docker_engine_free(engine);
	if (r < 0)
		return cli_fail(err);
	fputs(rs.text, stdout);
	firewall_ruleset_clear(&rs);
	return 0;
}

void cli_firewall_follow_nodes(struct cli *cli, const char *node)
{
	if (!cli->cfg->firewall)
		return;
	if (!firewall_permitted()) {
		fprintf(
		    stderr,
		    "chat2sbx: the host-edge firewall must learn the nodes' addresses, so that sandboxes on node %s "
		    "cannot reach this machine's services: run 'sudo chat2sbx setup --install-firewall' (a chat2sbx "
		    "serve running as root does it within a minute; one that is not root refuses to start until it "
		    "is done)\n",
		    node);
		return;
	}
	struct docker_engine *engine = engine_or_null(cli->cfg);
	struct cp_error *err = NULL;
	int changed = 0;
	char detail[1024];
	if (ops_firewall_install(cli->cfg, engine, &changed, NULL, detail, sizeof(detail), &err) < 0) {
		fprintf(stderr, "chat2sbx: warning: the firewall did not learn the nodes' addresses: %s\n",
		        err->message);
		cp_error_free(err);
	} else {
		fprintf(stderr, "chat2sbx: firewall %s\n", detail);
	}
	docker_engine_free(engine);
}

int cli_setup_firewall(struct cli *cli, const char *action)
{
	if (!strcmp(action, "install-firewall"))
		return install(cli);
	if (!strcmp(action, "uninstall-firewall"))
		return uninstall(cli);
	return print_rules(cli);
}
