/* private_dir.c: directories only chat2sbx's own user may hold. */
#include "private_dir.h"

#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"

int private_dir_ensure(const char *path, mode_t mode, char *what, size_t size, struct cp_error **err)
{
	char none[1];
	if (!what) {
		what = none;
		size = sizeof(none);
	}
	what[0] = '\0';
	int changed = 0;
	struct stat st;
	if (stat(path, &st) < 0) {
		if (errno != ENOENT || (mkdir(path, mode) < 0 && errno != EEXIST))
			return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "create directory '%s'", path);
		if (stat(path, &st) < 0)
			return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "inspect directory '%s'", path);
		snprintf(what, size, "created %s (%04o)", path, (unsigned)mode);
		changed = 1;
	}
	if (!S_ISDIR(st.st_mode))
		return cp_error_set(err, CP_ERR_UNAVAILABLE, "'%s' exists but is not a directory; move it away", path);
	if (st.st_uid != geteuid())
		return cp_error_set(
		    err, CP_ERR_UNAVAILABLE,
		    "'%s' belongs to uid %u, not to this user (uid %u): that user could read and change "
		    "the registry and the workspaces in it; use a directory of your own "
		    "(CHAT2SBX_DATA_ROOT) or give this one to uid %u",
		    path, (unsigned)st.st_uid, (unsigned)geteuid(), (unsigned)geteuid());
	if ((st.st_mode & 07777) != mode) {
		/* mkdir's mode passed through the umask: set it exactly. */
		if (chmod(path, mode) < 0)
			return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "set mode %o on '%s'", (unsigned)mode,
			                          path);
		if (!changed)
			snprintf(what, size, "mode of %s %04o -> %04o", path, (unsigned)(st.st_mode & 07777),
			         (unsigned)mode);
		changed = 1;
	}
	return changed;
}
