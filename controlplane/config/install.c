/* install.c: finding chat2sbx's own files in its install directories
 * (LIB_DIR, DATA_DIR; install_dirs.c says where they are compiled to be)
 * and the one message a missing one gets. File-system reads only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../base/xalloc.h"
#include "config.h"

/* What a person does when a file of chat2sbx's own is missing. */
static const char *install_fix(void)
{
	return config_installed ? "install chat2sbx again (its package, or 'make install' in its source tree)"
	                        : "build it with 'make' in the source tree";
}

static int missing_in_dir(const char *path, const char *what, const char *dir, const char *var, struct cp_error **err)
{
	return cp_error_set(err, CP_ERR_UNAVAILABLE, "%s '%s' is missing from chat2sbx's directory %s (%s); %s", what,
	                    path, dir, var, install_fix());
}

/* 1 when path is dir or inside it. */
static int path_within(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	while (n > 1 && dir[n - 1] == '/')
		n--;
	return n && !strncmp(path, dir, n) && (path[n] == '/' || path[n] == '\0');
}

int config_install_path(const struct config *c, enum config_dir dir, const char *name, const char *what,
                        char **ret_path, struct cp_error **err)
{
	const char *root = dir == CONFIG_DIR_LIB ? c->lib_dir : c->data_dir;
	const char *var = dir == CONFIG_DIR_LIB ? "CHAT2SBX_LIB_DIR" : "CHAT2SBX_DATA_DIR";
	char *path = xasprintf("%s/%s", root, name);
	if (access(path, R_OK) < 0) {
		missing_in_dir(path, what, root, var, err);
		free(path);
		return -1;
	}
	*ret_path = path;
	return 0;
}

int config_install_require(const struct config *c, const char *path, const char *what, const char *var,
                           struct cp_error **err)
{
	if (access(path, R_OK) == 0)
		return 0;
	if (path_within(path, c->lib_dir))
		return missing_in_dir(path, what, c->lib_dir, "CHAT2SBX_LIB_DIR", err);
	if (path_within(path, c->data_dir))
		return missing_in_dir(path, what, c->data_dir, "CHAT2SBX_DATA_DIR", err);
	return cp_error_set(err, CP_ERR_UNAVAILABLE,
	                    "%s '%s' (%s) is missing; point %s at an existing file or unset it", what, path, var, var);
}
