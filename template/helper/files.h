/* files.h: file.read and file.write (proto.h), plus the pieces they are
 * built from, exposed for unit tests. */
#ifndef CHAT2SBX_HELPER_FILES_H
#define CHAT2SBX_HELPER_FILES_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "rpc.h"

#define FILES_DEFAULT_LIMIT 2000 /* lines when limit is absent */
#define FILES_MAX_LIMIT 10000000
#define FILES_DEFAULT_MAX_BYTES (256 * 1024) /* content bytes when max_bytes is absent */
#define FILES_MAX_BYTES (4 * 1024 * 1024)
#define FILES_BINARY_PROBE 8192                /* a NUL in these first bytes: binary */
#define FILES_READ_SLACK (64ull * 1024 * 1024) /* read at most st_size + this */
/* Files up to this size are read whole (hashed, lines counted). Larger ones
 * are read only up to the selection, and only when it starts within this
 * many bytes; file.write cannot check expected_sha256 on them. */
#define FILES_WHOLE_MAX PROTO_READ_WHOLE_MAX
#define FILES_MAX_SYMLINKS 40 /* links followed by file.write (Linux MAXSYMLINKS) */

/* The result of selecting lines from a file (see files_read_fd). */
struct files_selection {
	char *content; /* malloc'd, valid UTF-8, NUL-terminated; NULL when binary */
	size_t content_len;
	uint64_t start_line;  /* = offset */
	uint64_t lines;       /* lines in content (a first line cut by max_bytes counts) */
	uint64_t total_lines; /* lines in the file; a last line without '\n' counts */
	uint64_t size;        /* bytes read (whole), else the file's size */
	bool truncated;       /* lines after the selection, or max_bytes cut it */
	bool binary;
	bool whole;       /* the file was read to its end: sha256 is set */
	bool total_known; /* total_lines is set (whole, or the end was reached) */
	char sha256[65];  /* of all bytes read, when whole */
};

/* Read the regular file open on fd from its start and select lines
 * [offset, offset + limit) (1-based), keeping whole lines within max_bytes;
 * a first selected line longer than max_bytes is cut at a character
 * boundary. Streams the file (bounded memory: max_bytes + 64 KiB). A file of
 * at most FILES_WHOLE_MAX bytes is read to its end (hash, line count);
 * a larger one only until the selection is complete, and when the selection
 * does not start within its first FILES_WHOLE_MAX bytes the read fails with
 * LIMIT. So one call reads at most about 128 MiB + max_bytes. Fails with
 * INVALID_ARGUMENT when offset is past the last line, INTERNAL on a read
 * error; path is for messages. The caller frees sel->content. */
int files_read_fd(int fd, const char *path, uint64_t offset, uint64_t limit, size_t max_bytes,
                  struct files_selection *sel, struct rpc_error *err);

/* Replace path's content atomically: write a temporary file in the same
 * directory, fsync it, give it the old file's mode (0644 for a new file, and
 * the old owner when running as root), rename it over path, fsync the
 * directory. When path is a symlink, its chain is followed and the file at
 * its end is replaced (created when the link dangles); the link stays. On
 * failure the old content is untouched and the temporary file is removed.
 * When expected_sha256 is
 * non-NULL the write is refused with CONFLICT unless the current content
 * hashes to it (LIMIT when the file is over FILES_WHOLE_MAX bytes: it is not
 * hashed). *ret_created tells whether path did not exist; ret_sha256
 * (65 bytes) gets the new content's hash. Missing parent: NOT_FOUND unless
 * create_dirs (then created 0755). Blocks for the write and two fsyncs. */
int files_write_atomic(const char *path, const char *content, size_t len, bool create_dirs, const char *expected_sha256,
                       bool *ret_created, char *ret_sha256, struct rpc_error *err);

/* Request handlers (ids and params borrowed; 0 with *ret_result owned by
 * the caller, or -1 with err set). They block for the file I/O. */
int files_rpc_read(json_object *id, json_object *params, json_object **ret_result, struct rpc_error *err);
int files_rpc_write(json_object *id, json_object *params, json_object **ret_result, struct rpc_error *err);

#endif
