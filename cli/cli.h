/* cli.h: the `chat2sbx` command table's shared pieces. Each command is a
 * function cmd_<verb>(ctx, argc, argv) returning the process exit status;
 * errors are printed once, here at the boundary, with their exit status
 * (cp_error_exit_status). */
#ifndef CHAT2SBX_CLI_H
#define CHAT2SBX_CLI_H

#include "base/error.h"
#include "config/config.h"

struct cli {
	struct config *cfg; /* owned by main */
	int json;           /* --json given */
};

/* Prints "chat2sbx: <message>" to stderr and returns the exit status for err's
 * code. Frees err. */
int cli_fail(struct cp_error *err);

struct store;
/* Appends an audit row for a CLI decision (actor "cli"); err (may be NULL)
 * gives the status and message. Never fails the command: a failed audit
 * write is reported on stderr. */
void cli_audit(struct store *store, const char *action, const char *target, const char *sandbox_id,
               const struct cp_error *err);

struct json_object;
/* Prints o as pretty JSON on stdout and puts it (takes the reference). */
void cli_print_json(struct json_object *o);

/* One command's help (help.c): NAME, and its synopsis lines with their
 * explanation as `chat2sbx --help` prints them (the first line starts with
 * NAME, further lines with two spaces and NAME). */
struct cli_help {
	const char *name;
	const char *usage;
};
/* Every command's, in --help's order, ended by {NULL, NULL}. */
extern const struct cli_help cli_help[];

int cmd_serve(struct cli *cli, int argc, char **argv);
int cmd_sandbox(struct cli *cli, int argc, char **argv);
int cmd_export(struct cli *cli, int argc, char **argv);
int cmd_workspace(struct cli *cli, int argc, char **argv);
int cmd_approval(struct cli *cli, int argc, char **argv);
int cmd_node(struct cli *cli, int argc, char **argv);
int cmd_setup(struct cli *cli, int argc, char **argv);
int cmd_status(struct cli *cli, int argc, char **argv);
int cmd_doctor(struct cli *cli, int argc, char **argv);
int cmd_token(struct cli *cli, int argc, char **argv);
int cmd_ui(struct cli *cli, int argc, char **argv);

/* The systemd user unit running `EXE serve` in WORKDIR (absolute, or a
 * systemd specifier such as %h), with ENVIRONMENT (Environment= lines, may
 * be "") and ORIGIN as its first comment line. All borrowed; the caller
 * frees the result. Pure. */
char *cli_service_unit(const char *exe, const char *workdir, const char *environment, const char *origin);

/* `setup --install-service|--uninstall-service|--print-service` (action
 * without the dashes): the systemd user unit (cmd_service.c). Returns the
 * exit status; 6 when systemd's user manager is not available. */
int cli_setup_service(struct cli *cli, const char *action);

/* `setup --install-firewall|--uninstall-firewall|--print-firewall` (action
 * without the dashes): the host-edge firewall, table inet chat2sbx
 * (cmd_firewall.c). Returns the exit status; 5 when not run as root. */
int cli_setup_firewall(struct cli *cli, const char *action);
/* After node add or remove (node: its name, for the message): the
 * host-edge firewall is installed again with the nodes' addresses when this
 * process may (root), or stderr says what to run. Says, never fails. */
void cli_firewall_follow_nodes(struct cli *cli, const char *node);

#endif
