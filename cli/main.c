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
};

/* The words of each are help.c's (cli_help, same names). */
static const struct command commands[] = {
    {"setup", cmd_setup},       {"status", cmd_status},   {"token", cmd_token},   {"doctor", cmd_doctor},
    {"serve", cmd_serve},       {"sandbox", cmd_sandbox}, {"export", cmd_export}, {"workspace", cmd_workspace},
    {"approval", cmd_approval}, {"node", cmd_node},       {"ui", cmd_ui},
};

static void usage(FILE *out)
{
	fprintf(out, "usage: chat2sbx COMMAND [ARGS]\n\ncommands:\n");
	for (size_t i = 0; cli_help[i].name; i++)
		fprintf(out, "  %s\n", cli_help[i].usage);
	fprintf(out,
	        "\nConfiguration: environment variables, ./.env, ~/.chat2sbx/config.yaml (chat2sbx.conf(5); every\n"
	        "setting with its default in .env.example). More: man chat2sbx.\n");
}

/* `chat2sbx COMMAND --help`: that command's words on stdout. */
static int command_usage(const char *name)
{
	for (size_t i = 0; cli_help[i].name; i++)
		if (!strcmp(cli_help[i].name, name)) {
			printf("usage: chat2sbx %s\n", cli_help[i].usage);
			return 0;
		}
	return 2;
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

	if (argc == 3 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h")))
		return command_usage(cmd->name);

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
