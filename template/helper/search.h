/* search.h: file.search (proto.h): PCRE2 over the lines of a file or of
 * every text file under a directory, bounded in matches, bytes, files and
 * wall time. */
#ifndef CHAT2SBX_HELPER_SEARCH_H
#define CHAT2SBX_HELPER_SEARCH_H

#include <json-c/json.h>

#include "rpc.h"

#define SEARCH_DEFAULT_MAX_MATCHES 200
#define SEARCH_MAX_MATCHES 5000
#define SEARCH_DEFAULT_MAX_BYTES 60000 /* bound on the "matches" text */
#define SEARCH_MAX_BYTES (4 * 1024 * 1024)
#define SEARCH_LINE_MAX 500                   /* bytes of a matching line shown, then "…" */
#define SEARCH_FILE_MAX PROTO_SEARCH_FILE_MAX /* larger files are skipped */
#define SEARCH_TIME_MS PROTO_SEARCH_TIME_MS   /* wall time of one search, then truncated ("time") */
#define SEARCH_MATCH_LIMIT 10000000           /* PCRE2 match limit per line */

/* file.search (ids and params borrowed; 0 with *ret_result owned by the
 * caller, or -1 with err set). Blocks for at most about SEARCH_TIME_MS. */
int search_rpc(json_object *id, json_object *params, json_object **ret_result, struct rpc_error *err);

/* Test hook: the wall-time bound in ms (SEARCH_TIME_MS unless set). */
void search_set_time_limit_ms(long ms);

#endif
