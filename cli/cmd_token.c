/* cmd_token.c: `chat2sbx token`: prints the MCP bearer token of this data
 * root (STATE_DIR/token, made by serve at its first start) for scripts and
 * MCP clients that connect over TCP: curl -H "Authorization: Bearer $(chat2sbx
 * token)". Reads only; the file's checks are ops_mcp_token_read's. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "ops/ops.h"

int cmd_token(struct cli *cli, int argc, char **argv)
{
	(void)argv;
	if (argc != 0 || cli->json) {
		fprintf(stderr, "usage: chat2sbx token\n");
		return 2;
	}
	char token[OPS_MCP_TOKEN_LEN + 1];
	struct cp_error *err = NULL;
	if (ops_mcp_token_read(cli->cfg->state_dir, token, &err) < 0)
		return cli_fail(err);
	if (!cli->cfg->mcp_token)
		fprintf(stderr, "chat2sbx: warning: CHAT2SBX_MCP_TOKEN=off: serve does not check this token\n");
	printf("%s\n", token);
	explicit_bzero(token, sizeof(token));
	return 0;
}
