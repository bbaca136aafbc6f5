/* fsstat.c: fs.stat (fsstat.h). Deliberately not confined to /workspace:
 * the mount targets it is asked about (/workspace, /.chat2sbx/source) are
 * fixed by the control plane, and a stat tells nothing a shell in the
 * sandbox could not learn itself. */
#include "fsstat.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

int fsstat_rpc(json_object *id, json_object *params, json_object **ret_result, struct rpc_error *err)
{
	(void)id;
	const char *path = NULL;
	size_t len = 0;
	if (rpc_param_string(params, "path", true, &path, &len, err) < 0)
		return -1;
	if (strlen(path) != len || path[0] != '/')
		return rpc_fail(err, "INVALID_ARGUMENT", "fs.stat needs an absolute path without NUL characters");
	struct stat st;
	if (lstat(path, &st) < 0)
		return rpc_fail_errno(err, errno, "stat", path);
	json_object *r = json_object_new_object();
	json_object_object_add(r, "dev_major", json_object_new_int64((int64_t)major(st.st_dev)));
	json_object_object_add(r, "dev_minor", json_object_new_int64((int64_t)minor(st.st_dev)));
	json_object_object_add(r, "ino", json_object_new_int64((int64_t)st.st_ino));
	json_object_object_add(r, "type",
	                       json_object_new_string(S_ISDIR(st.st_mode)   ? "directory"
	                                              : S_ISLNK(st.st_mode) ? "symlink"
	                                                                    : "other"));
	*ret_result = r;
	return 0;
}
