/* node_path.c: which directory of another node may become a direct
 * workspace (issue 28, item 4; docs/nodes.md "A direct workspace on another
 * node"). serve cannot resolve another machine's path, so the path is taken
 * as written and must already be the one the node's check will walk
 * component by component without following any symbolic link
 * (lifecycle/node_path.c): absolute, normalized, below one of the roots the
 * operator gave that node (`node add --host-root`). Pure. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/xalloc.h"
#include "policy.h"

const char policy_direct_node_note[] =
    "Direct mode on another node: the sandbox works on that node's directory itself, as root, and can change "
    "or delete every file in it but its .git: chat2sbx cannot watch another machine's .git, so the whole .git "
    "is read-only inside the sandbox (git there reads history and status but cannot commit; commit on the "
    "node; its .git may hold nothing but regular files and directories). Build files and scripts that run "
    "when you next build or test there (Makefile, package.json scripts, .envrc, tests, CI configuration, "
    "hook scripts that core.hooksPath points to inside the directory, files include.path names there) and "
    "repositories nested in the directory, whose own git configuration your git runs when it enters them, "
    "are the sandbox's to change. Look at what changed before you build, test or run git there; clone mode "
    "keeps the sandbox's edits in the sandbox.";

const char *policy_direct_note_for(const char *node)
{
	return node && strcmp(node, "local") != 0 ? policy_direct_node_note : policy_direct_mode_note;
}

/* A character a node path may hold: printable, not the bind-list
 * separators an engine splits on (':' and ','), not a backslash. */
static bool path_char_ok(unsigned char c)
{
	return c >= 0x20 && c < 0x7f && c != ':' && c != ',' && c != '\\';
}

int policy_node_path_shape(const char *path, const char *what, struct cp_error **err)
{
	size_t len = path ? strlen(path) : 0;
	if (len == 0 || path[0] != '/')
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "%s '%s' is not an absolute path; give it as it is on the node, starting with '/'",
		                    what, path ? path : "");
	if (len > POLICY_NODE_PATH_MAX)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "%s '%.80s…' is longer than %d bytes", what, path,
		                    POLICY_NODE_PATH_MAX);
	for (size_t i = 0; i < len; i++)
		if (!path_char_ok((unsigned char)path[i]))
			return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
			                    "%s '%s' holds a character chat2sbx does not pass to another node's engine "
			                    "(a control character, non-ASCII, ':', ',' or '\\' at byte %zu); rename it "
			                    "or use a directory whose path has none",
			                    what, path, i);
	if (len == 1)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "%s '/' is the node's whole file system; give a directory below it", what);
	for (const char *p = path + 1;;) {
		size_t n = strcspn(p, "/");
		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return cp_error_set(
			    err, CP_ERR_INVALID_ARGUMENT,
			    "%s '%s' is not normalized (an empty, '.' or '..' component, or a trailing "
			    "'/'); chat2sbx cannot resolve another machine's path: write it as the node's "
			    "own absolute path with none of those",
			    what, path);
		for (size_t i = 0; policy_credential_dirs[i]; i++)
			if (strlen(policy_credential_dirs[i]) == n && !memcmp(policy_credential_dirs[i], p, n))
				return cp_error_set(
				    err, CP_ERR_DENIED,
				    "%s '%s' runs through '%s', a credential directory; those are never "
				    "mounted into a sandbox",
				    what, path, policy_credential_dirs[i]);
		if (p[n] == '\0')
			break;
		p += n + 1;
	}
	return 0;
}

/* Whether path lies strictly below dir (whole components). */
static bool strictly_below(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	return strncmp(path, dir, n) == 0 && path[n] == '/' && path[n + 1] != '\0';
}

int policy_node_path_check(const char *node, const char *host_roots, const char *path, const char *mode,
                           struct cp_error **err)
{
	if (policy_node_path_shape(path, "host path", err) < 0)
		return cp_error_prefix(err, "node '%s'", node);
	if (!mode || strcmp(mode, "direct") != 0)
		return cp_error_set(
		    err, CP_ERR_INVALID_ARGUMENT,
		    "a directory of node '%s' can only be a direct workspace (workspace_mode "
		    "\"direct\"): clone mode copies a directory of this machine, the one serve runs on; "
		    "leave out 'node' to clone '%s' from here",
		    node, path);
	for (const char *p = path; (p = strstr(p, "/.git")); p += 5)
		if (p[5] == '\0' || p[5] == '/')
			return cp_error_set(
			    err, CP_ERR_DENIED,
			    "host path '%s' of node '%s' is inside a repository's .git directory; direct "
			    "mode would let the sandbox rewrite its configuration and hooks; give the "
			    "working tree that holds the .git",
			    path, node);
	size_t n = 0;
	char **roots = policy_roots_split(host_roots ? host_roots : "", &n);
	bool below = false;
	for (size_t i = 0; i < n && !below; i++)
		below = strictly_below(path, roots[i]);
	policy_roots_free(roots);
	if (below)
		return 0;
	if (n == 0)
		return cp_error_set(err, CP_ERR_DENIED,
		                    "node '%s' offers no host directory: it was added without --host-root, so no "
		                    "path of it may become a workspace; the person who runs chat2sbx can remove it "
		                    "and add it again with '--host-root DIR' (docs/nodes.md)",
		                    node);
	return cp_error_set(err, CP_ERR_DENIED,
	                    "host path '%s' is not below a host root of node '%s' (%s, from 'chat2sbx node add "
	                    "--host-root'); use a directory below one of them",
	                    path, node, host_roots);
}

/* The first k + 1 components of path into buf ("/a/b" for k 1 of /a/b/c). */
static void prefix_of(const char *path, unsigned long k, char *buf, size_t size)
{
	const char *p = path + 1;
	for (unsigned long i = 0; i <= k && *p; i++) {
		const char *slash = strchr(p, '/');
		p = slash ? slash + 1 : p + strlen(p);
	}
	size_t n = (size_t)(p - path);
	if (n > 1 && path[n - 1] == '/')
		n--;
	snprintf(buf, size, "%.*s", (int)n, path);
}

/* Reads one decimal number of at most 20 digits at *p; advances past it. */
static int read_number(const char **p, uint64_t *ret)
{
	const char *s = *p;
	size_t n = 0;
	uint64_t v = 0;
	while (s[n] >= '0' && s[n] <= '9') {
		if (n == 20 || v > (UINT64_MAX - (uint64_t)(s[n] - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(s[n] - '0');
		n++;
	}
	if (n == 0 || (n > 1 && s[0] == '0'))
		return -1;
	*p = s + n;
	*ret = v;
	return 0;
}

static unsigned long components_of(const char *path)
{
	unsigned long n = 0;
	for (const char *p = path; *p; p++)
		n += *p == '/';
	return n;
}

/* "KIND HEX" of a gitbad answer: what was found in the node's .git and
 * where (its path below .git, hex-encoded there, at most 400 bytes),
 * shown with anything not printable as '?'. */
static int gitbad(const char *node, const char *path, const char *p, struct cp_error **err)
{
	static const char *const kinds[][2] = {{"link ", "a symbolic link"},
	                                       {"fifo ", "a FIFO"},
	                                       {"socket ", "a socket"},
	                                       {"device ", "a device node"},
	                                       {"other ", "neither a file nor a directory"}};
	size_t k = 0;
	for (; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		if (!strncmp(p, kinds[k][0], strlen(kinds[k][0])))
			break;
	if (k == sizeof(kinds) / sizeof(kinds[0]))
		goto garbled;
	p += strlen(kinds[k][0]);
	size_t n = strlen(p);
	if (n == 0 || n % 2 || n > 800)
		goto garbled;
	char rel[401];
	for (size_t i = 0; i < n / 2; i++) {
		unsigned v = 0;
		for (int h = 0; h < 2; h++) {
			char c = p[2 * i + (size_t)h];
			unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
			             : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
			                                    : 16;
			if (d == 16)
				goto garbled;
			v = v * 16 + d;
		}
		rel[i] = v >= 0x20 && v < 0x7f ? (char)v : '?';
	}
	rel[n / 2] = '\0';
	return cp_error_set(err, CP_ERR_DENIED,
	                    "'%s/.git/%s' on node '%s' is %s; your git on the node follows links in .git (and a "
	                    "FIFO or device takes what it writes), and chat2sbx cannot watch another machine's "
	                    ".git, so a .git of another node may hold regular files and directories only; look "
	                    "at it there, remove it (a hook: copy the script in) and try again; nothing was "
	                    "created",
	                    path, rel, node, kinds[k][1]);
garbled:
	return cp_error_set(err, CP_ERR_UNAVAILABLE,
	                    "the check of host path '%s' on node '%s' answered something chat2sbx does not read; "
	                    "nothing was created",
	                    path, node);
}

int policy_node_path_answer(const char *node, const char *path, const char *answer, size_t len,
                            struct policy_node_path_facts *ret, struct cp_error **err)
{
	*ret = (struct policy_node_path_facts){0};
	char line[POLICY_NODE_PATH_ANSWER_MAX + 1];
	if (len == 0 || len > POLICY_NODE_PATH_ANSWER_MAX || answer[len - 1] != '\n' || memchr(answer, '\n', len - 1) ||
	    memchr(answer, '\0', len))
		goto garbled;
	memcpy(line, answer, len - 1);
	line[len - 1] = '\0';
	const char *p = line;
	char at[POLICY_NODE_PATH_MAX + 1];
	uint64_t k = 0;
	if (!strncmp(p, "ok ", 3)) {
		p += 3;
		if (read_number(&p, &ret->dev) < 0 || *p++ != ' ' || read_number(&p, &ret->ino) < 0 || *p++ != ' ')
			goto garbled;
		if (!strcmp(p, "none"))
			return 0;
		if (!strncmp(p, "dir ", 4)) {
			ret->git = POLICY_NODE_GIT_DIR;
			p += 4;
			if (read_number(&p, &ret->git_dev) < 0 || *p++ != ' ' || read_number(&p, &ret->git_ino) < 0 ||
			    *p != '\0')
				goto garbled;
			return 0;
		}
		goto garbled;
	}
	if (!strcmp(p, "bare"))
		return cp_error_set(
		    err, CP_ERR_DENIED,
		    "host path '%s' of node '%s' is a git directory (a bare repository: HEAD, objects/, "
		    "refs/); direct mode would let the sandbox rewrite its configuration and hooks; "
		    "give a working tree",
		    path, node);
	if (!strcmp(p, "gitfile"))
		return cp_error_set(err, CP_ERR_DENIED,
		                    "'%s/.git' on node '%s' is a file (a linked worktree or a submodule: it names a "
		                    "git directory elsewhere, whose configuration and hooks the sandbox could reach); "
		                    "a direct workspace of another node must hold its repository's own .git "
		                    "directory; give the main working tree, or clone it; nothing was created",
		                    path, node);
	if (!strcmp(p, "gitcommondir"))
		return cp_error_set(err, CP_ERR_DENIED,
		                    "'%s/.git/commondir' on node '%s' names another directory, from which git would "
		                    "take the repository's configuration and hooks; chat2sbx mounts only a .git "
		                    "that is its own (commondir '.' or none); look at it there; nothing was created",
		                    path, node);
	if (!strcmp(p, "gitbig"))
		return cp_error_set(err, CP_ERR_DENIED,
		                    "'%s/.git' on node '%s' holds more than %d files and directories, a directory "
		                    "more than %d levels deep, or took longer than %d s to check: a link could hide "
		                    "in what was not seen; run 'git gc' there (it packs loose objects and refs), or "
		                    "use clone mode; nothing was created",
		                    path, node, POLICY_GIT_TREE_MAX_ENTRIES, POLICY_GIT_TREE_MAX_DEPTH,
		                    POLICY_GIT_TREE_MAX_MS / 1000);
	if (!strncmp(p, "gitbad ", 7))
		return gitbad(node, path, p + 7, err);
	if (!strcmp(p, "gitlink") || !strcmp(p, "gitother"))
		return cp_error_set(err, CP_ERR_DENIED,
		                    "'%s/.git' on node '%s' is %s; chat2sbx never mounts what a link points to, and "
		                    "a .git is a directory or a gitfile; look at it there, remove it or make it one, "
		                    "and try again; nothing was created",
		                    path, node, p[3] == 'l' ? "a symbolic link" : "neither a directory nor a file");
	const char *kinds[] = {"link ", "missing ", "notdir ", "denied "};
	size_t which = 0;
	for (; which < 4; which++)
		if (!strncmp(p, kinds[which], strlen(kinds[which])))
			break;
	if (which == 4)
		goto garbled;
	p += strlen(kinds[which]);
	if (read_number(&p, &k) < 0 || *p != '\0' || k >= components_of(path))
		goto garbled;
	prefix_of(path, (unsigned long)k, at, sizeof(at));
	switch (which) {
	case 0:
		return cp_error_set(err, CP_ERR_DENIED,
		                    "'%s' on node '%s' is a symbolic link; chat2sbx follows none on the way to a "
		                    "directory of another node (it cannot verify where one leads there); give the "
		                    "path with no link on it; nothing was created",
		                    at, node);
	case 1:
		return cp_error_set(err, CP_ERR_NOT_FOUND,
		                    "host path '%s' does not exist on node '%s' ('%s' is missing there); check the "
		                    "path on that machine",
		                    path, node, at);
	case 2:
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "host path '%s' is not a directory on node '%s' ('%s' is not one)", path, node, at);
	default:
		return cp_error_set(err, CP_ERR_DENIED,
		                    "chat2sbx's check on node '%s' may not read '%s' (permission refused); check "
		                    "the path's permissions on that machine",
		                    node, at);
	}
garbled:
	return cp_error_set(err, CP_ERR_UNAVAILABLE,
	                    "the check of host path '%s' on node '%s' answered something chat2sbx does not read "
	                    "(%zu bytes); nothing was created; is the node's template image chat2sbx's?",
	                    path, node, len);
}
