/* private_dir.h: the data root, state and workspace directories, which
 * only chat2sbx's own user may hold (a registry another user can read and
 * write would hand them approvals, workspace paths and the audit trail). */
#ifndef CP_BASE_PRIVATE_DIR_H
#define CP_BASE_PRIVATE_DIR_H

#include <stddef.h>
#include <sys/types.h>

struct cp_error;

/* Makes path (borrowed, absolute or relative) a directory of exactly mode
 * (e.g. 0700) owned by this process's effective uid: created when missing,
 * its mode set when it differs. A path that resolves to something else
 * than a directory, or to a directory of another uid, is refused and left
 * as it is: UNAVAILABLE, naming the owner and what to do. When what is not
 * NULL, what (size bytes) says what changed ("created …", "mode of …"), or
 * is "". Returns 1 when something changed, 0 when it already was so, -1. */
int private_dir_ensure(const char *path, mode_t mode, char *what, size_t size, struct cp_error **err);

#endif
