/* tools.h: the MCP tool table (one row per tool: name, description, schemas,
 * annotations, handler) and the application context handlers receive.
 * Dispatch order for every tool: lookup (mcp/) → validate (args.c) → policy →
 * handler → reply. One file per family: sandbox.c, bash.c, files.c. */
#ifndef CP_TOOLS_H
#define CP_TOOLS_H

#include <stddef.h>

#include "../config/config.h"
#include "../lifecycle/lifecycle.h"
#include "../mcp/mcp.h"
#include "../store/store.h"

struct tools_app {
	const struct config *cfg; /* borrowed */
	struct store *store;      /* borrowed */
	struct lifecycle *lc;     /* borrowed */
};

/* The tool table served to mcp/ (static storage) and its length: every
 * handler is wrapped so each call leaves an audit row (audit.c). */
const struct mcp_tool *tools_table(size_t *ret_n);
/* The same table with the plain handlers (table.c). */
const struct mcp_tool *tools_table_plain(size_t *ret_n);

/* initialize's instructions: the workflow in a few lines; the first 512
 * characters stand alone (DESIGN.md, MCP surface). */
extern const char tools_instructions[];

#endif
