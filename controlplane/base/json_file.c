/* json_file.c: atomic JSON state files (json_file.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json_file.h"

int json_file_write_atomic(const char *path, struct json_object *o, struct cp_error **err)
{
	char tmp[4300];
	if (snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid()) >= (int)sizeof(tmp))
		return cp_error_set(err, CP_ERR_UNAVAILABLE, "write '%s': the path is too long", path);
	const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "write '%s'", tmp);
	size_t len = strlen(text);
	/* fchmod: an old temporary file left by a crash keeps its mode. */
	int ok =
	    fchmod(fd, 0600) == 0 && write(fd, text, len) == (ssize_t)len && write(fd, "\n", 1) == 1 && fsync(fd) == 0;
	int e = errno;
	ok = close(fd) == 0 && ok;
	if (!ok) {
		unlink(tmp);
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, e, "write '%s'", tmp);
	}
	if (rename(tmp, path) < 0) {
		e = errno;
		unlink(tmp);
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, e, "rename '%s' to '%s'", tmp, path);
	}
	return 0;
}
