/* remove_tree.c: removing a throwaway tree the git probes made on the host
 * (git_probe.c's repository, git_plant_probe.c's canaries). Never follows a
 * symlink: what a sandbox planted there is removed, not its target. */
#include <ftw.h>
#include <stdio.h>
#include <sys/stat.h>

#include "ops_internal.h"

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* Removes path and everything below it (ops_internal.h). */
void ops_remove_tree(const char *path)
{
	nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}
