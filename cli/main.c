/* main.c: the `chat2sbx` command: a table of verbs, global flags and config
 * loading. How an error becomes a message and an exit status is output.c's. */
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "store/store.h"
#include "cli.h"

struct command {
	const char *name;
	int (*run)(struct cli *cli, int argc, char **argv);
	const char *usage;
};

static const struct command commands[] = {
    {"setup", cmd_setup,
     "setup                      check the engine, build the template, create the data directories, check the\n"
     "                             tunnel; says what changed (a second run changes nothing)\n"
     "  setup --install-service    run serve as a systemd user service (--uninstall-service, --print-service)\n"
     "  setup --install-firewall   keep sandboxes off this host's services, as root (--uninstall-firewall,\n"
     "                             --print-firewall)"},
    {"status", cmd_status,
     "status [--json]            service, MCP, tunnel, engine, template, sandboxes; exit 6 if not ready"},
    {"token", cmd_token,
     "token                      print the MCP bearer token (STATE_DIR/token) for clients on the TCP port:\n"
     "                             Authorization: Bearer $(chat2sbx token)"},
    {"doctor", cmd_doctor,
     "doctor [--json]            attack a probe sandbox from inside; exit 1 if an attack succeeds"},
    {"serve", cmd_serve,
     "serve [--stdio] [--verify-isolation]\n"
     "                             run the MCP server (HTTP on CHAT2SBX_HOST:PORT, or stdio); with\n"
     "                             --verify-isolation, refuse to serve unless the doctor's attacks fail"},
    {"sandbox", cmd_sandbox,
     "sandbox list [--json]      list sandboxes\n"
     "  sandbox destroy ID [--force]   remove a sandbox's container (its workspace is kept; a clone's work\n"
     "                             is saved first, --force removes it even when that save fails)"},
    {"export", cmd_export,
     "export list [--json]       saved work of clone sandboxes (exports) and whether it was applied\n"
     "  export show ID             its branches, commits with their subjects, files changed, snapshot\n"
     "  export apply ID [--to DIR] fetch it into the approved repository under refs/remotes/chat2sbx/<sandbox>/\n"
     "                             (never its working tree, branches or config); --to DIR: a plain copy\n"
     "  export delete ID           move it to DATA_ROOT/trash (it no longer counts against the caps)"},
    {"workspace", cmd_workspace,
     "workspace list [--json]    list workspaces, their state and sandbox\n"
     "  workspace add PATH --mode clone|direct   register an approved host directory"},
    {"approval", cmd_approval,
     "approval list [--json]     host-directory requests and decisions\n"
     "  approval approve ID        allow the directory (checked against the policy again)\n"
     "  approval reject ID         refuse it; the decision is kept"},
};

static void usage(FILE *out)
{
	fprintf(out, "usage: chat2sbx COMMAND [ARGS]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %s\n", commands[i].usage);
	fprintf(out, "  version                    print the version\n  help                       this text\n\n"
	             "Configuration: environment variables (see .env.example), ./.env, ~/.chat2sbx/config.yaml.\n");
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (argc < 2 || !strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version")) {
		printf("chat2sbx %s (%s)\n", CHAT2SBX_VERSION, CHAT2SBX_GIT_VERSION);
		return 0;
	}
	const struct command *cmd = NULL;
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			cmd = &commands[i];
	if (!cmd) {
		fprintf(stderr, "chat2sbx: unknown command '%s'\n\n", argv[1]);
		usage(stderr);
		return 2;
	}

	struct cli cli = {0};
	int rest = 0;
	char *args[argc];
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			cli.json = 1;
		else
			args[rest++] = argv[i];
	}
	args[rest] = NULL;

	struct config_env env = config_env_process();
	struct cp_error *err = NULL;
	if (config_load(&env, &cli.cfg, &err) < 0)
		return cli_fail(err);
	log_set_debug(cli.cfg->log_debug);
	log_set_json(cli.cfg->log_json);
	int status = cmd->run(&cli, rest, args);
	config_free(cli.cfg);
	return status;
}
