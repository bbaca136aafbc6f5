/* json_file.h: small state files other processes read (serve.json,
 * tunnel.json), written so a reader never sees half a file. */
#ifndef CP_JSON_FILE_H
#define CP_JSON_FILE_H

#include <json-c/json.h>

#include "error.h"

/* Writes o (borrowed) as one line of JSON to path, mode 0600: to a
 * temporary file beside it (never following a symlink there), fsync, then
 * rename(2) over path, so readers see the old or the new file whole. On
 * failure the temporary file is removed and path is untouched; UNAVAILABLE
 * with the file and errno in the message. */
int json_file_write_atomic(const char *path, struct json_object *o, struct cp_error **err);

#endif
