/* install.c: finding chat2sbx's own files in its install directories
 * (LIB_DIR, DATA_DIR; install_dirs.c says where they are compiled to be)
 * and the one message a missing one gets. File-system reads only. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/cleanup.h"
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

/* 1 when a group-writable mode on st is harmless: the group is root's
 * (gid 0), Debian's "staff" (its members may write /usr/local and so are
 * root already: Debian Policy 9.1.2), or the owner's own user-private group
 * (the owner's primary group, named as the owner, with no other members, as
 * adduser makes them). */
static int harmless_group(const struct stat *st)
{
	if (st->st_gid == 0)
		return 1;
	struct passwd pw, *pwp = NULL;
	struct group gr, *grp = NULL;
	char pwbuf[4096], grbuf[4096];
	if (getpwuid_r(st->st_uid, &pw, pwbuf, sizeof(pwbuf), &pwp) != 0)
		pwp = NULL;
	if (getgrgid_r(st->st_gid, &gr, grbuf, sizeof(grbuf), &grp) != 0 || !grp)
		return 0;
	if (!strcmp(gr.gr_name, "staff"))
		return 1;
	/* A private group bears its user's name: with USERGROUPS=no, everyone
	 * shares a primary group ("users") that lists no members. */
	return pwp && pw.pw_gid == st->st_gid && !strcmp(gr.gr_name, pw.pw_name) && (!gr.gr_mem || !gr.gr_mem[0]);
}

/* 0 when no one but root, this user or the owner of this program could
 * have written PATH: every component of its real path, up to "/", is owned
 * by one of them and writable by no one else (a sticky directory such as
 * /tmp may be other-writable: no one else can replace what it holds).
 * Otherwise DENIED naming the component, its owner and mode, and what to
 * do. A file of chat2sbx's own is run on the host or copied into every
 * sandbox; one another local user could swap is theirs to run. */
/* DENIED when COMPONENT (its stat in st), on the way to PATH, could have
 * been written by another local user; 0 otherwise. */
static int check_component(const char *component, const struct stat *st, uid_t me, uid_t program_owner,
                           const char *what, const char *path, struct cp_error **err)
{
	int owner_ok = st->st_uid == 0 || st->st_uid == me || st->st_uid == program_owner;
	int sticky_dir = S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX);
	int others_write = (st->st_mode & S_IWOTH) && !sticky_dir;
	int group_write = (st->st_mode & S_IWGRP) && !sticky_dir && !harmless_group(st);
	if (owner_ok && !others_write && !group_write)
		return 0;
	return cp_error_set(err, CP_ERR_DENIED,
	                    "%s '%s' is not used: '%s' (owner uid %u, mode %04o) %s; only root, you or the owner of "
	                    "chat2sbx may own it and no one else may write it; fix with chown/chmod or install "
	                    "chat2sbx again",
	                    what, path, component, (unsigned)st->st_uid, (unsigned)(st->st_mode & 07777),
	                    !owner_ok ? "belongs to another user" : "can be written by others");
}

/* The same judgement for every component of PATH as given (lstat: a
 * symbolic link is judged by its owner, its own mode being always 0777),
 * from its last component up to "/" (a relative PATH: to the current
 * directory, which the real path's walk then covers). A link another user
 * owns, in any folder the path passes, could be pointed elsewhere after
 * the check; the real path alone would not show it. */
static int check_given(const char *path, uid_t me, uid_t program_owner, const char *what, struct cp_error **err)
{
	_cleanup_free_ char *given = xstrdup(path);
	for (;;) {
		size_t len = strlen(given);
		while (len > 1 && given[len - 1] == '/')
			given[--len] = '\0';
		struct stat st;
		if (lstat(given, &st) < 0)
			return cp_error_set(err, CP_ERR_UNAVAILABLE, "%s: '%s' cannot be read: %s", what, given,
			                    strerror(errno));
		if (S_ISLNK(st.st_mode))
			st.st_mode &= ~(mode_t)(S_IWGRP | S_IWOTH);
		if (check_component(given, &st, me, program_owner, what, path, err) < 0)
			return -1;
		char *slash = strrchr(given, '/');
		if (!slash || slash == given)
			return 0;
		*slash = '\0';
	}
}

static int check_trusted(const char *path, const char *what, struct cp_error **err)
{
	struct stat self;
	uid_t program_owner = stat("/proc/self/exe", &self) == 0 ? self.st_uid : 0;
	uid_t me = geteuid();
	if (check_given(path, me, program_owner, what, err) < 0)
		return -1;
	_cleanup_free_ char *real = realpath(path, NULL);
	if (!real)
		return cp_error_set(err, CP_ERR_UNAVAILABLE, "%s '%s' cannot be resolved: %s", what, path,
		                    strerror(errno));
	for (char *end = real + strlen(real);;) {
		struct stat st;
		const char *component = end == real ? "/" : real;
		if (stat(component, &st) < 0)
			return cp_error_set(err, CP_ERR_UNAVAILABLE, "%s: '%s' cannot be read: %s", what, component,
			                    strerror(errno));
		if (check_component(component, &st, me, program_owner, what, path, err) < 0)
			return -1;
		if (end == real)
			return 0;
		char *slash = strrchr(real, '/');
		*slash = '\0';
		end = slash;
	}
}

/* 1 when path is dir or inside it. */
static int path_within(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	while (n > 1 && dir[n - 1] == '/')
		n--;
	return n && !strncmp(path, dir, n) && (path[n] == '/' || path[n] == '\0');
}

/* check_component for every entry of the folder PATH is in (not deeper):
 * a build script reads the files beside it (template/build.sh its
 * Dockerfile and packages.txt), each of which must be as trusted as it. */
static int check_siblings(const char *path, const char *what, struct cp_error **err)
{
	_cleanup_free_ char *dir = xstrdup(path);
	char *slash = strrchr(dir, '/');
	if (!slash)
		return 0;
	*slash = '\0';
	DIR *d = opendir(*dir ? dir : "/");
	if (!d)
		return cp_error_set(err, CP_ERR_UNAVAILABLE, "%s: the folder '%s' cannot be read: %s", what, dir,
		                    strerror(errno));
	struct stat self;
	uid_t program_owner = stat("/proc/self/exe", &self) == 0 ? self.st_uid : 0;
	int r = 0;
	for (struct dirent *e; r == 0 && (e = readdir(d));) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		struct stat st;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* gone meanwhile */
		if (S_ISLNK(st.st_mode))
			st.st_mode &= ~(mode_t)(S_IWGRP | S_IWOTH);
		_cleanup_free_ char *entry = xasprintf("%s/%s", dir, e->d_name);
		r = check_component(entry, &st, geteuid(), program_owner, what, path, err);
	}
	closedir(d);
	return r;
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
	if (check_trusted(path, what, err) < 0 || check_siblings(path, what, err) < 0) {
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
		return check_trusted(path, what, err);
	if (path_within(path, c->lib_dir))
		return missing_in_dir(path, what, c->lib_dir, "CHAT2SBX_LIB_DIR", err);
	if (path_within(path, c->data_dir))
		return missing_in_dir(path, what, c->data_dir, "CHAT2SBX_DATA_DIR", err);
	return cp_error_set(err, CP_ERR_UNAVAILABLE,
	                    "%s '%s' (%s) is missing; point %s at an existing file or unset it", what, path, var, var);
}
