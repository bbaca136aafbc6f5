/* paths.h: where the helper works: the workspace that relative paths and
 * the default cwd resolve against, and the session log directory. */
#ifndef CHAT2SBX_HELPER_PATHS_H
#define CHAT2SBX_HELPER_PATHS_H

#include <sys/types.h>

#include "rpc.h"

/* Set the workspace and log directory (both absolute; copied). main passes
 * PROTO_WORKSPACE and PROTO_LOG_DIR; tests pass temporary directories.
 * Until called, the proto.h defaults apply. */
void paths_configure(const char *workspace, const char *log_dir);
const char *paths_workspace(void);
const char *paths_log_dir(void);

/* Resolve a request path: absolute paths as given, relative ones against the
 * workspace; "//" and "." components are removed, ".." is kept for the
 * kernel to resolve. *ret_abs is newly allocated (caller frees). Fails with
 * INVALID_ARGUMENT for an empty path, an embedded NUL (len != strlen) or a
 * result longer than PATH_MAX. what names the parameter in messages. */
int paths_resolve(const char *path, size_t len, const char *what, char **ret_abs, struct rpc_error *err);

/* The scope of a listing or a search, as the request left it: *path (and
 * *path_len) the workspace when the request gave none (*path NULL); *glob
 * NULL when it was empty. INVALID_ARGUMENT when the glob (glob_len bytes)
 * holds a NUL. Everything borrowed. */
int paths_scope(const char **path, size_t *path_len, const char **glob, size_t glob_len, struct rpc_error *err);

/* mkdir -p: create dir and its missing parents with mode (umask applies).
 * Returns 0, or -errno (EEXIST when a component exists and is not a
 * directory: ENOTDIR). Does not block beyond the file system calls. */
int paths_mkdir_p(const char *dir, mode_t mode);

#endif
