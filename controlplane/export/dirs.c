/* export_dirs.c: DATA_ROOT/exports/<sandbox_id>/<export_id>/, where saved
 * clone work lands. No sandbox can reach DATA_ROOT/exports (only managed
 * workspaces below DATA_ROOT/workspaces are ever mounted, and the host-path
 * policy keeps approved directories out of DATA_ROOT), and each level is
 * opened without following symlinks, so nothing is written through a path
 * that someone else could have bent. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/xalloc.h"
#include "../base/cleanup.h"
#include "export.h"

/* Opens (making it 0700 when missing) the directory name below dirfd. */
static int open_level(int dirfd, const char *name, const char *shown, struct cp_error **err)
{
	if (mkdirat(dirfd, name, 0700) < 0 && errno != EEXIST)
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "create '%s'", shown);
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return cp_error_set_errno(err, errno == ELOOP || errno == ENOTDIR ? CP_ERR_DENIED : CP_ERR_UNAVAILABLE,
		                          errno, "open '%s' (it must be a directory, not a symlink)", shown);
	struct stat st;
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid()) {
		close(fd);
		return cp_error_set(err, CP_ERR_DENIED, "'%s' is not owned by this user; nothing was saved there",
		                    shown);
	}
	if ((st.st_mode & 0077) && fchmod(fd, 0700) < 0) {
		close(fd);
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "make '%s' private", shown);
	}
	return fd;
}

int export_dir_open_root(const struct config *cfg, int create, int *ret_fd, struct cp_error **err)
{
	_cleanup_close_ int root = open(cfg->data_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "open the data root '%s'", cfg->data_root);
	char shown[4400];
	snprintf(shown, sizeof(shown), "%s/exports", cfg->data_root);
	struct stat st;
	if (!create && fstatat(root, "exports", &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
		return cp_error_set(err, CP_ERR_NOT_FOUND, "'%s' does not exist", shown);
	int fd = open_level(root, "exports", shown, err);
	if (fd < 0)
		return -1;
	*ret_fd = fd;
	return 0;
}

int export_dir_open_sandbox(const struct config *cfg, const char *sandbox_id, int *ret_fd, struct cp_error **err)
{
	_cleanup_close_ int exports = -1;
	if (export_dir_open_root(cfg, 1, &exports, err) < 0)
		return -1;
	char shown[4400];
	snprintf(shown, sizeof(shown), "%s/exports/%s", cfg->data_root, sandbox_id);
	int fd = open_level(exports, sandbox_id, shown, err);
	if (fd < 0)
		return -1;
	*ret_fd = fd;
	return 0;
}

int export_dir_open(const struct config *cfg, const char *sandbox_id, const char *export_id, char **ret_path,
                    int *ret_fd, struct cp_error **err)
{
	_cleanup_close_ int sbx = -1;
	if (export_dir_open_sandbox(cfg, sandbox_id, &sbx, err) < 0)
		return -1;
	char shown[4400];
	snprintf(shown, sizeof(shown), "%s/exports/%s/%s", cfg->data_root, sandbox_id, export_id);
	int fd = open_level(sbx, export_id, shown, err);
	if (fd < 0)
		return -1;
	*ret_path = xstrdup(shown);
	*ret_fd = fd;
	return 0;
}

/* Deepest directory removed: export directories are shallow, a plain copy
 * extracted for `export apply --to` is at most EXPORT_EXTRACT_DEPTH_MAX
 * deep (export_extract.c). */
#define REMOVE_DEPTH_MAX (EXPORT_EXTRACT_DEPTH_MAX + 2)

/* Removes the entries of directory fd (depth-first, never following a
 * symlink; a directory that cannot be opened is made 0700 first, as an
 * archive may have left one unreadable) and closes it. */
static void remove_below(int fd, int depth)
{
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (unlinkat(dirfd(d), e->d_name, 0) == 0 || depth > REMOVE_DEPTH_MAX)
			continue;
		int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0 && fchmodat(dirfd(d), e->d_name, 0700, 0) == 0)
			sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub >= 0) {
			fchmod(sub, 0700);
			remove_below(sub, depth + 1);
			unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
		}
	}
	closedir(d);
}

void export_dir_remove(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	remove_below(fd, 0);
	rmdir(path);
}

int export_dir_remove_at(int dirfd, const char *name)
{
	if (unlinkat(dirfd, name, 0) == 0)
		return 0; /* a file or a symlink: gone, nothing followed */
	int sub = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub >= 0)
		remove_below(sub, 0);
	return unlinkat(dirfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT ? 0 : -1;
}
