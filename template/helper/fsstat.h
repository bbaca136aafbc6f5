/* fsstat.h: fs.stat, the identity of a directory as this container sees it,
 * and fs.mounts, its mount table.
 * The control plane compares it with the host directory it verified before
 * the mount (controlplane/guard/mount_verify.c), to catch a bind source
 * that was swapped (symlink or rename race) between its check and the
 * engine's mount. */
#ifndef CHAT2SBX_HELPER_FSSTAT_H
#define CHAT2SBX_HELPER_FSSTAT_H

#include <json-c/json.h>

#include "rpc.h"

/* fs.stat {"path": absolute} → {"dev_major", "dev_minor", "ino", "type"}
 * from lstat(2) (never follows a final symlink; type is "directory",
 * "symlink" or "other"). A relative path is INVALID_ARGUMENT; lstat errors
 * map as rpc_fail_errno does. id and params are borrowed; *ret_result is
 * owned by the caller. One system call, never blocks otherwise. */
int fsstat_rpc(json_object *id, json_object *params, json_object **ret_result, struct rpc_error *err);

/* Largest mount table fs.mounts returns (a container has a few dozen lines). */
#define FSSTAT_MOUNTINFO_MAX (1024 * 1024)

/* fs.mounts {} → {"mountinfo": the text of /proc/self/mountinfo} (proc(5)),
 * so the control plane can check that each protected path is a mount of
 * its own and that nothing else was mounted (a symlink raced into a mount
 * target). A table over FSSTAT_MOUNTINFO_MAX bytes is LIMIT; read errors
 * map as rpc_fail_errno does. Reads one small proc file. */
int fsmounts_rpc(json_object *id, json_object *params, json_object **ret_result, struct rpc_error *err);

#endif
