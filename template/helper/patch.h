/* patch.h: file.apply_patch (proto.h): apply a V4A patch ("*** Begin
 * Patch", the format OpenAI models emit) or a unified diff (diff -u, git
 * diff) to files, all or nothing. */
#ifndef CHAT2SBX_HELPER_PATCH_H
#define CHAT2SBX_HELPER_PATCH_H

#include <json-c/json.h>

#include "rpc.h"

#define PATCH_TOTAL_MAX (256ull * 1024 * 1024) /* bytes of existing files one patch may read */
#define PATCH_QUOTE_MAX 160                    /* bytes of a line quoted in a message */

/* Request handler for file.apply_patch (id and params borrowed). Parses the
 * whole patch, computes every new file in memory, and writes only when
 * every hunk applies: changed and added files first (each atomically, as
 * file.write), then deletions (and the old names of moved files). */
int patch_rpc(json_object *id, json_object *params, json_object **ret_result, struct rpc_error *err);

#endif
