/* help.c: the words of `chat2sbx --help` and `chat2sbx COMMAND --help`, one
 * entry per command, as data: main.c prints them, and cli/gen/gendoc.c
 * writes chat2sbx(1) and the bash completion from the same table, so the
 * three cannot disagree. No code but the table. */
#include "cli.h"

const struct cli_help cli_help[] = {
    {"setup",
     "setup                      check the engine, build the template, create the data directories, check the\n"
     "                             tunnel; says what changed (a second run changes nothing)\n"
     "  setup --template           only (re)build or find the template image (the first build needs root:\n"
     "                             sudo chat2sbx setup --template)\n"
     "  setup --install-service    run serve as a systemd user service (--uninstall-service, --print-service)\n"
     "  setup --install-firewall   keep sandboxes off this host's services, as root (--uninstall-firewall,\n"
     "                             --print-firewall)"},
    {"status", "status [--json]            service, MCP, tunnel, engine, template, sandboxes; exit 6 if not ready"},
    {"token", "token                      print the MCP bearer token (STATE_DIR/token) for clients on the TCP port:\n"
              "                             Authorization: Bearer $(chat2sbx token)"},
    {"ui", "ui [--no-open] [--json]    a one-time login link to the owner's page (approvals, sandboxes, saved\n"
           "                             work, health, activity) served by serve; opened in a browser when a\n"
           "                             desktop is there"},
    {"doctor", "doctor [--json] [--node NAME]  attack a probe sandbox from inside, on every node or one; exit 1 if an "
               "attack succeeds"},
    {"serve", "serve [--stdio] [--verify-isolation]\n"
              "                             run the MCP server (HTTP on CHAT2SBX_HOST:PORT, or stdio); with\n"
              "                             --verify-isolation, refuse to serve unless the doctor's attacks fail"},
    {"sandbox", "sandbox list [--json]      list sandboxes\n"
                "  sandbox destroy ID [--force]   remove a sandbox's container (its workspace is kept; a clone's work\n"
                "                             is saved first, --force removes it even when that save fails)"},
    {"export",
     "export list [--json]       saved work of clone sandboxes (exports) and whether it was applied\n"
     "  export show ID             its branches, commits with their subjects, files changed, snapshot\n"
     "  export apply ID [--to DIR] fetch it into the approved repository under refs/remotes/chat2sbx/<sandbox>/\n"
     "                             (never its working tree, branches or config); --to DIR: a plain copy\n"
     "  export delete ID           move it to DATA_ROOT/trash (it no longer counts against the caps)"},
    {"workspace", "workspace list [--json]    list workspaces, their state and sandbox\n"
                  "  workspace add PATH --mode clone|direct   register an approved host directory\n"
                  "  workspace add PATH --mode direct --node NAME   a directory of that node, below a host root\n"
                  "                             it was added with"},
    {"approval", "approval list [--json]     host-directory requests and decisions\n"
                 "  approval approve ID        allow the directory (checked against the policy again)\n"
                 "  approval reject ID         refuse it; the decision is kept"},
    {"node", "node list [--json]         the engines sandboxes may run on: 'local' (this machine's) and the\n"
             "                             nodes added, with their state, labels from /info and sandboxes\n"
             "  node add NAME tcp://HOST:PORT --tls-ca FILE --tls-cert FILE --tls-key FILE\n"
             "                             add another machine's engine over mutual TLS (plain TCP is refused);\n"
             "                             the files are copied into STATE_DIR/nodes/NAME/ (0600);\n"
             "                             [--host-root DIR]... the node's directories direct workspaces may be\n"
             "                             asked for below (none: no path of it)\n"
             "  node show NAME [--json]    one node\n"
             "  node drain NAME            place no new sandbox on it ('local' too); its sandboxes keep working\n"
             "  node resume NAME           place sandboxes on it again\n"
             "  node remove NAME           forget it and its TLS files (refused while it has sandboxes)"},
    {"version", "version                    print the version"},
    {"help", "help                       this text (COMMAND --help: one command's)"},
    {NULL, NULL},
};
