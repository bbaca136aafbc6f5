/* trash.c: DATA_ROOT/trash/, where kept things go instead of being deleted:
 * exports past retention or deleted by the person, and released managed
 * workspaces (workspace/workspace.c calls down into it). Never deletes,
 * never overwrites an entry already there. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "../base/cleanup.h"
#include "../base/xalloc.h"
#include "export.h"

int export_trash_move(const struct config *cfg, const char *dir, const char *name, char **ret_dest,
                      struct cp_error **err)
{
	_cleanup_free_ char *trash = xasprintf("%s/trash", cfg->data_root);
	if (mkdir(trash, 0700) < 0 && errno != EEXIST)
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "create '%s'", trash);
	for (int i = 0; i < 1000; i++) {
		char *dest = i ? xasprintf("%s/%s.%d", trash, name, i) : xasprintf("%s/%s", trash, name);
		struct stat st;
		if (lstat(dest, &st) == 0) {
			free(dest);
			continue;
		}
		if (rename(dir, dest) < 0) {
			cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "move '%s' to '%s'", dir, dest);
			free(dest);
			return -1;
		}
		*ret_dest = dest;
		return 0;
	}
	return cp_error_set(err, CP_ERR_CONFLICT, "move '%s' to the trash: too many entries named '%s'", dir, name);
}
