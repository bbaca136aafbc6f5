/* host_path.c: the host-path rules of policy.h ("host paths"): which host
 * directories may even be asked for as a workspace. The one file in policy/
 * that touches the file system, and only to read it (lstat, readlink,
 * realpath, stat); it never creates, opens or mounts anything, and it never
 * decides about approvals (that is the caller's, after these rules pass). */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/cleanup.h"
#include "../base/xalloc.h"
#include "policy.h"

/* Symlinks followed for one path before giving up with ELOOP: Linux's own
 * limit for one lookup and glibc's MAXSYMLINKS (path_resolution(7)). */
#define HOST_PATH_MAX_LINKS 40

#define ROOTS_VARIABLE "CHAT2SBX_ALLOWED_HOST_ROOTS"

/* NULL-terminated. Compared with whole components only: ".sshx" is fine. */
const char *const policy_credential_dirs[] = {
    ".aws", ".azure", ".config", ".docker", ".gnupg", ".kube", ".local", ".secrets", ".ssh", NULL,
};

static const char *credential_name(const char *s, size_t len)
{
	for (size_t i = 0; policy_credential_dirs[i]; i++)
		if (strlen(policy_credential_dirs[i]) == len && memcmp(policy_credential_dirs[i], s, len) == 0)
			return policy_credential_dirs[i];
	return NULL;
}

/* Returns the first credential directory among the '/'-separated components
 * of text (lexically: "." and ".." are components like any other and match
 * nothing), and in *ret_end the length of text up to and including it. */
static const char *credential_component(const char *text, size_t *ret_end)
{
	const char *p = text;
	for (;;) {
		while (*p == '/')
			p++;
		if (!*p)
			return NULL;
		const char *start = p;
		while (*p && *p != '/')
			p++;
		const char *name = credential_name(start, (size_t)(p - start));
		if (name) {
			*ret_end = (size_t)(p - text);
			return name;
		}
	}
}

static int credential_denied(struct cp_error **err, const char *path, const char *verb, const char *name,
                             const char *where, size_t where_len)
{
	return cp_error_set(
	    err, CP_ERR_DENIED,
	    "host path '%s' %s the credential directory '%s' ('%.*s'); credential directories are never "
	    "mounted, choose a directory that is not inside one",
	    path, verb, name, (int)where_len, where);
}

/* Rule 2's refusals for a resolution that stopped at `at` with errno e. */
static int resolve_failed(struct cp_error **err, const char *path, const char *at, int e)
{
	switch (e) {
	case ENOENT:
		if (strcmp(at, path) == 0)
			return cp_error_set(err, CP_ERR_NOT_FOUND,
			                    "host path '%s' does not exist; give an existing directory", path);
		return cp_error_set(err, CP_ERR_NOT_FOUND,
		                    "host path '%s' does not exist ('%s' is missing); give an existing directory", path,
		                    at);
	case ENOTDIR:
		return cp_error_set(
		    err, CP_ERR_NOT_FOUND,
		    "host path '%s' does not exist ('%s' is not a directory); give an existing directory", path, at);
	case ELOOP:
		return cp_error_set(
		    err, CP_ERR_NOT_FOUND,
		    "host path '%s' does not resolve: more than %d symbolic links (a symlink loop?); give "
		    "a path without a symlink loop",
		    path, HOST_PATH_MAX_LINKS);
	case ENAMETOOLONG:
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "host path '%s' resolves to a path longer than %d bytes; give a shorter path", path,
		                    PATH_MAX - 1);
	default:
		return cp_error_set_errno(err, CP_ERR_NOT_FOUND, e, "host path '%s' cannot be resolved at '%s'", path,
		                          at);
	}
}

/* Resolves path as realpath(3) does (physical: ".." after a symlink is the
 * parent of its target), one component at a time, so that rule 3 sees every
 * symlink target met on the way, including those a later ".." or symlink
 * leaves behind ("link -> /root/.ssh/../repositories/p"). *ret_resolved is
 * malloc'd. */
static int host_path_walk(const char *path, char **ret_resolved, struct cp_error **err)
{
	_cleanup_free_ char *rest = xstrdup(path); /* what is left to resolve */
	char res[PATH_MAX] = "";                   /* resolved so far; "" stands for "/" */
	size_t len = 0, pos = 0;
	int links = 0;

	for (;;) {
		while (rest[pos] == '/')
			pos++;
		if (!rest[pos])
			break;
		const char *comp = rest + pos;
		size_t clen = strcspn(comp, "/");
		pos += clen;
		if (clen == 1 && comp[0] == '.')
			continue;
		if (clen == 2 && comp[0] == '.' && comp[1] == '.') {
			while (len > 0 && res[len - 1] != '/')
				len--;
			if (len > 0)
				len--;
			res[len] = '\0';
			continue;
		}
		if (len + 1 + clen >= sizeof(res))
			return resolve_failed(err, path, path, ENAMETOOLONG);
		res[len++] = '/';
		memcpy(res + len, comp, clen);
		len += clen;
		res[len] = '\0';

		struct stat st;
		if (lstat(res, &st) < 0)
			return resolve_failed(err, path, res, errno);
		if (S_ISDIR(st.st_mode))
			continue;
		if (!S_ISLNK(st.st_mode)) {
			/* A file may only end the path ("file/.." is ENOTDIR, as in
			 * realpath); trailing slashes are left to the directory check. */
			if (rest[pos + strspn(rest + pos, "/")])
				return resolve_failed(err, path, res, ENOTDIR);
			continue;
		}
		if (++links > HOST_PATH_MAX_LINKS)
			return resolve_failed(err, path, res, ELOOP);
		char target[PATH_MAX];
		ssize_t n = readlink(res, target, sizeof(target));
		if (n < 0)
			return resolve_failed(err, path, res, errno);
		if ((size_t)n >= sizeof(target))
			return resolve_failed(err, path, res, ENAMETOOLONG);
		if (n == 0)
			return resolve_failed(err, path, res, ENOENT);
		target[n] = '\0';
		size_t end = 0;
		const char *name = credential_component(target, &end);
		if (name)
			return cp_error_set(
			    err, CP_ERR_DENIED,
			    "host path '%s' resolves through the credential directory '%s' (symlink '%s' "
			    "points to '%s'); credential directories are never mounted, choose a directory "
			    "that is not inside one",
			    path, name, res, target);

		char *next = xasprintf("%s/%s", target, rest + pos);
		free(rest);
		rest = next; /* ownership: the cleanup of `rest` frees it */
		pos = 0;
		if (target[0] == '/') {
			len = 0;
		} else {
			while (len > 0 && res[len - 1] != '/')
				len--;
			if (len > 0)
				len--;
		}
		res[len] = '\0';
	}
	*ret_resolved = xstrdup(len ? res : "/");
	return 0;
}

/* True when `path` is strictly below `dir` on whole components; both are
 * resolved (absolute, no trailing slash except "/" itself). */
static bool path_below(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	if (n == 1 && dir[0] == '/')
		return path[0] == '/' && path[1] != '\0';
	return strncmp(path, dir, n) == 0 && path[n] == '/' && path[n + 1] != '\0';
}

/* The roots as configured, joined with ':' for messages; malloc'd. */
static char *roots_joined(const struct policy_host_roots *roots)
{
	size_t total = 1;
	for (size_t i = 0; i < roots->n; i++)
		if (roots->roots[i])
			total += strlen(roots->roots[i]) + 1;
	char *s = xmalloc(total);
	if (!s)
		return NULL;
	s[0] = '\0';
	for (size_t i = 0; i < roots->n; i++) {
		if (!roots->roots[i])
			continue;
		if (s[0])
			strcat(s, ":");
		strcat(s, roots->roots[i]);
	}
	return s;
}

/* Rule 4. `shown` names the path and, when it differs, its resolution. */
static int check_roots(const struct policy_host_roots *roots, const char *path, const char *real, const char *shown,
                       struct cp_error **err)
{
	bool any = false;
	for (size_t i = 0; i < roots->n; i++) {
		const char *root = roots->roots[i];
		/* A relative root would depend on the current directory. */
		if (!root || root[0] != '/')
			continue;
		_cleanup_free_ char *rroot = realpath(root, NULL);
		if (!rroot)
			continue;
		any = true;
		if (strcmp(real, rroot) == 0)
			return cp_error_set(err, CP_ERR_DENIED,
			                    "host path %s is an allowed root itself; approve a directory below it",
			                    shown);
		if (path_below(real, rroot))
			return 0;
	}
	_cleanup_free_ char *list = roots_joined(roots);
	if (!any)
		return cp_error_set(
		    err, CP_ERR_DENIED,
		    "host path '%s' cannot be approved: no allowed root exists (%s: %s); create one or set "
		    "%s to existing directories",
		    path, ROOTS_VARIABLE, list && list[0] ? list : "empty", ROOTS_VARIABLE);
	return cp_error_set(err, CP_ERR_DENIED,
	                    "host path %s is not below an allowed root (%s: %s); give a directory below one of them",
	                    shown, ROOTS_VARIABLE, list ? list : "");
}

/* Rule 5. A data root that does not exist (yet) is compared as given, minus
 * trailing slashes, so an ancestor of where it will be is still refused. */
static int check_data_root(const char *data_root, const char *label, const char *real, const char *shown,
                           struct cp_error **err)
{
	if (!data_root || !data_root[0])
		return 0;
	_cleanup_free_ char *rdata = realpath(data_root, NULL);
	if (!rdata) {
		if (data_root[0] != '/')
			return 0;
		rdata = xstrdup(data_root);
		for (size_t n = strlen(rdata); n > 1 && rdata[n - 1] == '/'; n--)
			rdata[n - 1] = '\0';
	}
	const char *what = NULL;
	if (strcmp(real, rdata) == 0)
		what = "is";
	else if (path_below(real, rdata))
		what = "is inside";
	else if (path_below(rdata, real))
		what = "contains";
	if (!what)
		return 0;
	return cp_error_set(err, CP_ERR_DENIED,
	                    "host path %s %s chat2sbx's %s '%s'; chat2sbx's own data is never mounted, choose a "
	                    "directory that neither holds it nor lies inside it",
	                    shown, what, label, rdata);
}

int policy_host_path_check(const struct policy_host_roots *roots, const char *path, char **ret_real,
                           struct cp_error **err)
{
	/* Rule 1. "~" is refused like any relative path: the control plane's
	 * home is not the requester's. */
	if (!path || path[0] != '/')
		return cp_error_set(
		    err, CP_ERR_INVALID_ARGUMENT,
		    "host path '%s' is relative; give an absolute path such as /root/repositories/project",
		    path ? path : "");
	if (strlen(path) >= PATH_MAX)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "host path '%.80s...' is longer than %d bytes; give a shorter path", path,
		                    PATH_MAX - 1);

	/* Rule 3 on the path as given, before touching the file system, so a
	 * refused path never tells whether something exists there. */
	size_t end = 0;
	const char *name = credential_component(path, &end);
	if (name)
		return credential_denied(err, path, "names", name, path, end);

	/* Rules 2 and 3: our own walk sees every symlink target; realpath(3)
	 * must agree with it, or the tree changed under us. */
	_cleanup_free_ char *walked = NULL;
	if (host_path_walk(path, &walked, err) < 0 || !walked) /* walked is set on every success */
		return -1;
	struct stat st;
	if (stat(walked, &st) < 0)
		return resolve_failed(err, path, walked, errno);
	if (!S_ISDIR(st.st_mode))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "host path '%s' is not a directory; give the directory that holds the project",
		                    path);
	_cleanup_free_ char *real = realpath(path, NULL);
	if (!real)
		return resolve_failed(err, path, path, errno);
	if (strcmp(real, walked) != 0)
		return cp_error_set(
		    err, CP_ERR_CONFLICT,
		    "host path '%s' changed while it was being checked (it resolved to '%s', then to '%s'); "
		    "try again once it stops changing",
		    path, walked, real);
	name = credential_component(real, &end);
	if (name)
		return credential_denied(err, path, "resolves through", name, real, end);

	_cleanup_free_ char *shown =
	    strcmp(path, real) == 0 ? xasprintf("'%s'", path) : xasprintf("'%s' (resolved to '%s')", path, real);
	if (check_roots(roots, path, real, shown, err) < 0)
		return -1;
	for (size_t i = 0; i < roots->n_own_paths; i++)
		if (check_data_root(roots->own_paths[i], "own files", real, shown, err) < 0)
			return -1;
	if (check_data_root(roots->data_root, "data root", real, shown, err) < 0)
		return -1;

	if (ret_real)
		*ret_real = TAKE_PTR(real); /* ownership: the caller frees it */
	return 0;
}

char **policy_roots_split(const char *colon_list, size_t *ret_n)
{
	size_t cap = 1;
	for (const char *p = colon_list; p && *p; p++)
		if (*p == ':')
			cap++;
	char **out = xcalloc(cap + 1, sizeof(*out));
	size_t n = 0;
	for (const char *p = colon_list; p && *p;) {
		size_t len = strcspn(p, ":");
		if (len > 0) {
			out[n++] = xstrndup(p, len);
		}
		p += len;
		if (*p == ':')
			p++;
	}
	if (ret_n)
		*ret_n = n;
	return out;
}

void policy_roots_free(char **roots)
{
	if (!roots)
		return;
	for (char **p = roots; *p; p++)
		free(*p);
	free(roots);
}
