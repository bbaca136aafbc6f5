/* cmd_serve.c: `chat2sbx serve [--stdio] [--verify-isolation]`. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "controlplane.h"

int cmd_serve(struct cli *cli, int argc, char **argv)
{
	struct serve_options opts = {0};
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--stdio")) {
			opts.stdio = 1;
		} else if (!strcmp(argv[i], "--verify-isolation")) {
			opts.verify_isolation = 1;
		} else {
			fprintf(stderr, "chat2sbx serve: unknown option '%s' (accepted: --stdio, --verify-isolation)\n",
			        argv[i]);
			return 2;
		}
	}
	struct cp_error *err = NULL;
	if (controlplane_serve(cli->cfg, &opts, &err) < 0)
		return cli_fail(err);
	return 0;
}
