/* git_guard.c: which parts of a direct workspace's .git are mounted over the
 * sandbox's view (policy.h, "direct-mode git protection"), the checks of the
 * two .git files whose content redirects git (commondir, a gitfile), and the
 * note on what direct mode still allows. Pure: the file system is
 * guard/git_guard.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "../base/xalloc.h"

/* An ordinary repository. ".git" itself is a mount point (so the sandbox
 * cannot rename or remove it: EBUSY) and stays writable, because every git
 * command that changes anything renames a lock file into its top level
 * (index.lock → index, HEAD.lock → HEAD, …). Read-only over it, each a file
 * or directory git reads to decide what programs to run or where its
 * configuration lives (gitrepository-layout(5)):
 *   config           every program-valued setting (core.fsmonitor,
 *                    core.pager, core.hooksPath, include.path, aliases,
 *                    filter and diff drivers, core.sshCommand, …)
 *   config.worktree  the same, read when extensions.worktreeConfig is on;
 *                    created empty when missing, because the owner's own
 *                    `git sparse-checkout init` turns the extension on later
 *   commondir        names the directory git takes config, hooks, objects
 *                    and refs from, in any git dir (setup.c
 *                    get_common_dir_noenv): a planted "../x" swaps the whole
 *                    configuration (measured with git 2.39). Git assumes "."
 *                    when it is missing, so "." is written there
 *   hooks            githooks(5): run by commit, checkout, merge, push, …
 *   modules          submodules' own git dirs (config, hooks); `git
 *                    submodule update` reuses one it finds there, so a
 *                    planted one would be adopted
 *   worktrees        linked worktrees' git dirs (their commondir, gitdir,
 *                    config.worktree); `git worktree add` creates below it,
 *                    so a planted symlink would put a new worktree's git
 *                    dir where the sandbox writes
 * Deliberately not protected (git writes them in ordinary use, and none
 * names a program or another configuration): objects/ (including
 * info/alternates: where objects are read from), refs/, packed-refs, logs/,
 * HEAD, index, shallow, info/ (exclude, attributes and sparse-checkout are
 * data; an attribute only selects a driver the protected config defines,
 * as a .gitattributes file in the working tree can), FETCH_HEAD, ORIG_HEAD,
 * MERGE_*, description, remotes/ and branches/ (URLs of remotes named on
 * the command line when config has none of that name; the ext:: transport
 * that could run a command is refused by git's protocol.allow default).
 * The state of an operation in progress (rebase-merge/, rebase-apply/,
 * sequencer/) can hold `exec` lines that run when someone continues it: it
 * must stay writable for the sandbox's own rebase, so docs/workspaces.md tells the
 * owner never to continue an operation they did not start. */
static const struct policy_git_path directory_paths[] = {
    {".git", true, false, POLICY_GIT_MISSING_NEVER, NULL},
    {".git/config", false, true, POLICY_GIT_MISSING_FILE, ""},
    {".git/config.worktree", false, true, POLICY_GIT_MISSING_FILE, ""},
    {".git/commondir", false, true, POLICY_GIT_MISSING_FILE, ".\n"},
    {".git/hooks", true, true, POLICY_GIT_MISSING_MKDIR, NULL},
    {".git/modules", true, true, POLICY_GIT_MISSING_MKDIR, NULL},
    {".git/worktrees", true, true, POLICY_GIT_MISSING_MKDIR, NULL},
};

/* A linked worktree or a submodule: the gitfile names a git dir outside the
 * directory (lifecycle refuses one inside), which the sandbox never sees;
 * read-only, so it cannot point the owner's git at a git dir it wrote. */
static const struct policy_git_path gitfile_paths[] = {
    {".git", false, true, POLICY_GIT_MISSING_NEVER, NULL},
};

const struct policy_git_path *policy_git_paths(enum policy_git_shape shape, size_t *ret_n)
{
	switch (shape) {
	case POLICY_GIT_DIRECTORY:
		*ret_n = sizeof(directory_paths) / sizeof(directory_paths[0]);
		return directory_paths;
	case POLICY_GIT_GITFILE: *ret_n = sizeof(gitfile_paths) / sizeof(gitfile_paths[0]); return gitfile_paths;
	case POLICY_GIT_NONE: break;
	}
	*ret_n = 0;
	return NULL;
}

int policy_git_commondir_check(const char *path, const char *content, size_t len, struct cp_error **err)
{
	while (len && (content[len - 1] == '\n' || content[len - 1] == '\r'))
		len--;
	if ((len == 1 && content[0] == '.') || (len == 2 && content[0] == '.' && content[1] == '/'))
		return 0;
	return cp_error_set(err, CP_ERR_DENIED,
	                    "'%s' names '%.*s' as the directory git takes this repository's configuration and hooks "
	                    "from; chat2sbx protects only a repository whose configuration is its own .git, so it "
	                    "is not mounted in direct mode; use clone mode, or remove the file if you did not put "
	                    "it there",
	                    path, (int)(len > 200 ? 200 : len), content);
}

/* Appends component c (clen bytes) to the absolute path out (size bytes,
 * "" standing for "/"), folding "." and "..". 0, or -1 when it does not fit. */
static int push_component(char *out, size_t size, const char *c, size_t clen)
{
	if (clen == 0 || (clen == 1 && c[0] == '.'))
		return 0;
	if (clen == 2 && c[0] == '.' && c[1] == '.') {
		char *slash = strrchr(out, '/');
		if (slash)
			*slash = '\0';
		return 0;
	}
	size_t n = strlen(out);
	if (n + 1 + clen + 1 > size)
		return -1;
	out[n] = '/';
	memcpy(out + n + 1, c, clen);
	out[n + 1 + clen] = '\0';
	return 0;
}

static int push_path(char *out, size_t size, const char *p, size_t len)
{
	size_t i = 0;
	while (i < len) {
		while (i < len && p[i] == '/')
			i++;
		size_t start = i;
		while (i < len && p[i] != '/')
			i++;
		if (push_component(out, size, p + start, i - start) < 0)
			return -1;
	}
	return 0;
}

int policy_gitfile_parse(const char *dir, const char *content, size_t len, char **ret_gitdir)
{
	static const char prefix[] = "gitdir: ";
	*ret_gitdir = NULL;
	if (len < sizeof(prefix) - 1 || memcmp(content, prefix, sizeof(prefix) - 1) != 0)
		return 0;
	const char *p = content + sizeof(prefix) - 1;
	size_t n = len - (sizeof(prefix) - 1);
	while (n && (p[n - 1] == '\n' || p[n - 1] == '\r' || p[n - 1] == ' ' || p[n - 1] == '\t'))
		n--;
	if (n == 0 || memchr(p, '\0', n))
		return 0;
	size_t size = strlen(dir) + n + 3;
	char *out = xcalloc(1, size);
	if (!out)
		return 0;
	if ((p[0] != '/' && push_path(out, size, dir, strlen(dir)) < 0) || push_path(out, size, p, n) < 0) {
		free(out);
		return 0;
	}
	if (!out[0])
		strcpy(out, "/");
	*ret_gitdir = out;
	return 1;
}

const char policy_direct_mode_note[] =
    "Direct mode: the sandbox works on the directory itself, as root. The repository's .git configuration "
    "and hooks stay read-only to it, but it can change or delete every other file: build files and scripts "
    "that run when you next build or test there (Makefile, package.json scripts, .envrc, tests, CI "
    "configuration, hook scripts that core.hooksPath points to inside the directory), the history in .git, "
    "and repositories nested in the directory, whose own git configuration your git runs when it enters "
    "them (git status does, for one added to the index; the sandbox can give files your uid, so git's "
    "ownership check does not stop it). Nothing in .git may be anything but a regular file or a directory: a "
    "symbolic link, FIFO or device it puts there (your git writes through links: reflogs, COMMIT_EDITMSG, "
    "MERGE_MSG, FETCH_HEAD) is moved into chat2sbx's quarantine within milliseconds while chat2sbx serve runs "
    "(at its next start otherwise) and the sandbox is stopped, but a git command of yours running at that "
    "very moment can still write through it once. Look at "
    "what changed before you build, test or run git there; clone mode keeps the sandbox's edits in the "
    "sandbox.";
