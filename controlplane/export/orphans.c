/* export_orphans.c: what a save killed midway (serve or the CLI got
 * SIGKILL, the machine went down) left in DATA_ROOT/exports: exp_*
 * directories no registry row names, and bundle.partial, tar.partial and
 * .scratch leftovers (issue 23, item 8: up to 2 GiB each, cleaned by
 * nothing). A sandbox's directory that a save holds (its flock,
 * export_queue.c) is never looked into; nothing is followed through a
 * symlink; only names shaped like our ids are touched. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/cleanup.h"
#include "../base/id.h"
#include "../base/log.h"
#include "export.h"

static int is_partial(const char *name)
{
	size_t n = strlen(name);
	return n > 8 && !strcmp(name + n - 8, ".partial");
}

/* A listing of the directory fd (taken; closed on failure too). */
static DIR *listing(int fd)
{
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d && fd >= 0)
		close(fd);
	return d;
}

/* Leftovers inside a kept export: *.partial files and .scratch. */
static int sweep_kept(int sbx, const char *export_id)
{
	DIR *d = listing(openat(sbx, export_id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
	if (!d)
		return 0;
	int removed = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if ((is_partial(e->d_name) || !strcmp(e->d_name, ".scratch")) &&
		    export_dir_remove_at(dirfd(d), e->d_name) == 0)
			removed++;
	closedir(d);
	return removed;
}

/* One sandbox's directory, flocked by the caller. -1: the registry failed. */
static int sweep_sandbox(struct store *store, int sbx, const char *sandbox_id, struct cp_error **err)
{
	DIR *d = listing(dup(sbx));
	if (!d)
		return 0;
	int removed = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		struct stat st;
		if (!id_valid(e->d_name, "exp_") || fstatat(sbx, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISLNK(st.st_mode)) { /* no save makes one: the link goes, unfollowed */
			removed += unlinkat(sbx, e->d_name, 0) == 0;
			continue;
		}
		if (!S_ISDIR(st.st_mode))
			continue;
		struct export_record x = {0};
		_cleanup_error_ struct cp_error *ge = NULL;
		if (store_export_get(store, e->d_name, &x, &ge) == 0) {
			export_record_clear(&x);
			removed += sweep_kept(sbx, e->d_name);
			continue;
		}
		if (ge->code != CP_ERR_NOT_FOUND) {
			closedir(d);
			*err = TAKE_PTR(ge);
			return -1;
		}
		if (export_dir_remove_at(sbx, e->d_name) == 0) {
			log_info("lifecycle", "removed %s/%s, the remains of a save that never finished", sandbox_id,
			         e->d_name);
			removed++;
		}
	}
	closedir(d);
	return removed;
}

int export_orphans_run(const struct config *cfg, struct store *store, struct cp_error **err)
{
	_cleanup_close_ int root = -1;
	if (export_dir_open_root(cfg, 0, &root, err) < 0) {
		if ((*err)->code != CP_ERR_NOT_FOUND)
			return -1;
		cp_error_freep(err);
		return 0; /* no save ever ran here */
	}
	DIR *d = listing(dup(root));
	if (!d)
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "read '%s/exports'", cfg->data_root);
	int removed = 0, failed = 0;
	struct dirent *e;
	while (!failed && (e = readdir(d))) {
		if (!id_valid(e->d_name, "sbx_"))
			continue;
		int sbx = openat(root, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		struct stat st;
		if (sbx < 0)
			continue;
		if (fstat(sbx, &st) < 0 || st.st_uid != geteuid() || flock(sbx, LOCK_EX | LOCK_NB) < 0) {
			close(sbx); /* not ours, or a save holds it */
			continue;
		}
		int n = sweep_sandbox(store, sbx, e->d_name, err);
		if (n < 0)
			failed = 1;
		else
			removed += n;
		/* Empty now: gone too (a save that opened it meanwhile sees it
		 * unlinked once it has the flock, and makes it again). */
		if (!failed && unlinkat(root, e->d_name, AT_REMOVEDIR) == 0)
			removed++;
		close(sbx);
	}
	closedir(d);
	return failed ? -1 : removed;
}
