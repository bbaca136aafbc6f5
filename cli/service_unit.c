/* service_unit.c: the text of the systemd user unit that runs `chat2sbx
 * serve`: the one source of the unit `setup --install-service` writes
 * (cmd_service.c) and of the one `make install` ships
 * (lib/systemd/user/chat2sbx.service, written by cli/gen/gendoc.c). Pure. */
#include "base/xalloc.h"
#include "cli.h"

char *cli_service_unit(const char *exe, const char *workdir, const char *environment, const char *origin)
{
	return xasprintf("# %s\n"
	                 "# Settings: the CHAT2SBX_* variables set when it was written (below), then\n"
	                 "# %s/.env (a source tree's build only) and ~/.chat2sbx/config.yaml; no secrets here:\n"
	                 "# serve reads the tunnel id and key from CHAT2SBX_SECRET_DIR itself.\n"
	                 "[Unit]\n"
	                 "Description=chat2sbx: disposable sandboxes for ChatGPT over MCP\n"
	                 "After=network-online.target\n"
	                 "\n"
	                 "[Service]\n"
	                 "Type=simple\n"
	                 "ExecStart=%s serve\n"
	                 "WorkingDirectory=%s\n"
	                 "%s"
	                 "Restart=on-failure\n"
	                 "RestartSec=5\n"
	                 "# serve stops the tunnel client itself on SIGTERM; sandboxes keep running.\n"
	                 "KillMode=mixed\n"
	                 "TimeoutStopSec=30\n"
	                 "\n"
	                 "[Install]\n"
	                 "WantedBy=default.target\n",
	                 origin, workdir, exe, workdir, environment);
}
