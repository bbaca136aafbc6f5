/* nesting.c: the nesting rule of policy.h ("host workspace nesting"). A
 * direct-mode sandbox can write, rename and replace anything below its
 * directory; a path component it can write can be swapped for a symlink
 * between a check and the engine's mount. So no host workspace may lie
 * inside a direct one, and no direct one may contain another. Pure. */
#include <stdbool.h>
#include <string.h>

#include "policy.h"

bool policy_path_strictly_below(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	if (n == 1 && dir[0] == '/')
		return path[0] == '/' && path[1] != '\0';
	return strncmp(path, dir, n) == 0 && path[n] == '/' && path[n + 1] != '\0';
}

int policy_host_nesting_check(const char *real, const char *mode, const struct policy_host_workspace *others, size_t n,
                              struct cp_error **err)
{
	bool direct = mode && !strcmp(mode, "direct");
	for (size_t i = 0; i < n; i++) {
		const struct policy_host_workspace *o = &others[i];
		if (!o->path || !o->mode || !strcmp(o->mode, "managed"))
			continue;
		if (!strcmp(o->mode, "direct") && policy_path_strictly_below(real, o->path))
			return cp_error_set(
			    err, CP_ERR_DENIED,
			    "host path '%s' lies inside '%s', the directory of the direct-mode workspace '%s'; a "
			    "sandbox that can write there could swap a directory of this path for a symlink, so it is "
			    "never mounted; use workspace '%s' itself or a directory outside it",
			    real, o->path, o->id ? o->id : "?", o->id ? o->id : "?");
		if (direct && policy_path_strictly_below(o->path, real))
			return cp_error_set(
			    err, CP_ERR_DENIED,
			    "host path '%s' (direct mode) contains '%s', the directory of the %s-mode workspace '%s'; "
			    "a sandbox that could write here could swap a directory of that path for a symlink, so "
			    "it is refused; use clone mode or a directory that holds no other workspace",
			    real, o->path, o->mode, o->id ? o->id : "?");
	}
	return 0;
}
