/* paths.c: path handling shared by bash sessions and file operations:
 * resolving request paths against the workspace and creating directories.
 * Lexical only; no policy (the whole container belongs to the sandbox, and
 * decisions about host paths happen on the host). */
#include "paths.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "proto.h"
#include "xalloc.h"

static char workspace[PATH_MAX] = PROTO_WORKSPACE;
static char log_dir[PATH_MAX] = PROTO_LOG_DIR;

void paths_configure(const char *ws, const char *logs)
{
	if (ws)
		snprintf(workspace, sizeof workspace, "%s", ws);
	if (logs)
		snprintf(log_dir, sizeof log_dir, "%s", logs);
}

const char *paths_workspace(void)
{
	return workspace;
}

const char *paths_log_dir(void)
{
	return log_dir;
}

int paths_resolve(const char *path, size_t len, const char *what, char **ret_abs, struct rpc_error *err)
{
	if (len == 0)
		return rpc_fail(err, "INVALID_ARGUMENT", "%s is empty; pass an absolute path or one relative to %s",
		                what, workspace);
	if (strlen(path) != len)
		return rpc_fail(err, "INVALID_ARGUMENT", "%s contains a NUL character", what);
	size_t cap = strlen(workspace) + 1 + len + 1;
	char *joined = xmalloc(cap);
	char *out = xmalloc(cap);
	if (path[0] == '/')
		snprintf(joined, cap, "%s", path);
	else
		snprintf(joined, cap, "%s/%s", workspace, path);
	/* Copy component by component, dropping empty and "." components. */
	size_t o = 0;
	for (const char *p = joined; *p;) {
		while (*p == '/')
			p++;
		const char *e = strchrnul(p, '/');
		size_t n = (size_t)(e - p);
		if (n > 0 && !(n == 1 && p[0] == '.')) {
			out[o++] = '/';
			memcpy(out + o, p, n);
			o += n;
		}
		p = e;
	}
	if (o == 0)
		out[o++] = '/';
	out[o] = '\0';
	free(joined);
	if (o >= PATH_MAX) {
		free(out);
		return rpc_fail(err, "INVALID_ARGUMENT", "%s is longer than %d bytes", what, PATH_MAX);
	}
	*ret_abs = out;
	return 0;
}

int paths_mkdir_p(const char *dir, mode_t mode)
{
	char buf[PATH_MAX];
	if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf)
		return -ENAMETOOLONG;
	size_t len = strlen(buf);
	for (size_t i = 1; i <= len; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		char saved = buf[i];
		buf[i] = '\0';
		if (mkdir(buf, mode) < 0) {
			if (errno != EEXIST)
				return -errno;
			struct stat st;
			if (stat(buf, &st) < 0)
				return -errno;
			if (!S_ISDIR(st.st_mode))
				return -ENOTDIR;
		}
		buf[i] = saved;
	}
	return 0;
}

int paths_scope(const char **path, size_t *path_len, const char **glob, size_t glob_len, struct rpc_error *err)
{
	if (!*path) {
		*path = paths_workspace();
		*path_len = strlen(*path);
	}
	if (*glob && strlen(*glob) != glob_len)
		return rpc_fail(err, "INVALID_ARGUMENT", "glob contains a NUL character");
	if (*glob && !**glob)
		*glob = NULL;
	return 0;
}
