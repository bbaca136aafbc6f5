/* fsstat.c: fs.stat and fs.mounts (fsstat.h). Deliberately not confined to
 * /workspace: the mount targets it is asked about (/workspace,
 * /.chat2sbx/source, /workspace/.git/...) are fixed by the control plane,
 * and neither a stat nor the mount table tells anything a shell in the
 * sandbox could not learn itself. */
#include "fsstat.h"
#include "xalloc.h"
#include "xjson.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
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
	json_object *r = xjson_object();
	xjson_add(r, "dev_major", xjson_int64((int64_t)major(st.st_dev)));
	xjson_add(r, "dev_minor", xjson_int64((int64_t)minor(st.st_dev)));
	xjson_add(r, "ino", xjson_int64((int64_t)st.st_ino));
	xjson_add(r, "type",
	          xjson_string(S_ISDIR(st.st_mode)   ? "directory"
	                       : S_ISLNK(st.st_mode) ? "symlink"
	                                             : "other"));
	*ret_result = r;
	return 0;
}

int fsmounts_rpc(json_object *id, json_object *params, json_object **ret_result, struct rpc_error *err)
{
	(void)id;
	(void)params;
	int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return rpc_fail_errno(err, errno, "open", "/proc/self/mountinfo");
	char *buf = xmalloc(FSSTAT_MOUNTINFO_MAX + 1);
	size_t len = 0;
	ssize_t n = 1;
	while (len < FSSTAT_MOUNTINFO_MAX && (n = read(fd, buf + len, FSSTAT_MOUNTINFO_MAX - len)) > 0)
		len += (size_t)n;
	int e = errno;
	/* One more byte tells a table that fills the buffer from a longer one. */
	char extra;
	int more = n > 0 && read(fd, &extra, 1) > 0;
	close(fd);
	if (n < 0) {
		free(buf);
		return rpc_fail_errno(err, e, "read", "/proc/self/mountinfo");
	}
	if (more) {
		free(buf);
		return rpc_fail(err, "LIMIT", "fs.mounts: /proc/self/mountinfo is longer than %d bytes",
		                FSSTAT_MOUNTINFO_MAX);
	}
	json_object *r = xjson_object();
	xjson_add(r, "mountinfo", xjson_string_len(buf, len));
	free(buf);
	*ret_result = r;
	return 0;
}
