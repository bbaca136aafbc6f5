/* edit.h: file.edit (proto.h): replace an exact string in a text file,
 * written atomically like file.write. Also the whole-file text read shared
 * with file.apply_patch (patch.c). */
#ifndef CHAT2SBX_HELPER_EDIT_H
#define CHAT2SBX_HELPER_EDIT_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "rpc.h"

#define EDIT_MAX_LISTED_LINES 20 /* line numbers listed in a "matches N times" message */

/* A whole text file read into memory. */
struct edit_text {
	char *data; /* malloc'd, len bytes plus a NUL */
	size_t len;
	char sha256[65]; /* of the bytes read */
	struct stat st;  /* of the file read (symlinks followed) */
	bool binary;     /* a NUL in the first FILES_BINARY_PROBE bytes */
};

/* Read the regular file at abs whole (symlinks followed). shown names it in
 * messages. Missing: NOT_FOUND; directory, device, FIFO, socket:
 * INVALID_ARGUMENT; more than PROTO_READ_WHOLE_MAX bytes: LIMIT (op names
 * the operation in that message). The caller frees t->data. */
int edit_read_text(const char *abs, const char *shown, const char *op, struct edit_text *t, struct rpc_error *err);

/* Line endings are CRLF: the data contains "\r\n" and no bare "\n". */
bool edit_is_crlf(const char *data, size_t len);

/* The result of replacing old with new in data (exact bytes, matches taken
 * left to right without overlap). */
struct edit_result {
	char *data; /* malloc'd new content (NULL when count is 0) */
	size_t len;
	size_t count;                        /* matches found, overlapping ones too ("aa" twice in "aaa") */
	size_t lines[EDIT_MAX_LISTED_LINES]; /* 1-based line of the first matches */
	size_t replaced;                     /* replacements made (replace_all: left to right, never overlapping) */
};

/* Count every match of old (non-empty) in data, overlapping ones included
 * (issue 18: "aa" in "aaa" is two matches, so no edit is taken as unique
 * that is not); when replace_all or there is exactly one match, also build
 * the new content, replacing left to right without overlap. Fails only when
 * the new content's size would overflow (LIMIT); allocation aborts
 * (xalloc.h). */
int edit_replace(const char *data, size_t len, const char *old, size_t old_len, const char *new, size_t new_len,
                 bool replace_all, struct edit_result *res, struct rpc_error *err);

/* Request handler for file.edit (id and params borrowed). */
int edit_rpc(json_object *id, json_object *params, json_object **ret_result, struct rpc_error *err);

#endif
