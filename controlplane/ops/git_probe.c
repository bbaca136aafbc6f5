/* git_probe.c: the doctor's attack on a direct workspace's git (issue 12):
 * a throwaway repository under an allowed host root, registered as a direct
 * workspace, a probe sandbox on it that tries to plant what the owner's git
 * would run, and a byte-for-byte look at the host's .git afterwards. Owns
 * the repository, its registry rows and the probe, and removes them
 * whatever happens; never runs git on the host (a successful plant would
 * run there). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/cleanup.h"
#include "../base/xalloc.h"
#include "../base/log.h"
#include "../lifecycle/lifecycle.h"
#include "../policy/policy.h"
#include "ops_internal.h"

#define ATTACK                                                                                                         \
	"in a direct workspace, write .git/config, add a hook, redirect .git/commondir, rename a lock file over "      \
	".git/config and rename .git"

/* Each attempt prints "refused NAME" or "WROTE NAME"; run from /workspace. */
static const char attack_command[] =
    "cd /workspace || exit 1\n"
    "t() { n=$1; shift; if ( \"$@\" ) >/dev/null 2>&1; then echo \"WROTE $n\"; else echo \"refused $n\"; fi; }\n"
    "t config sh -c 'printf \"[core]\\n\\tfsmonitor = touch /tmp/c2s-doctor\\n\" >> .git/config'\n"
    "t hook sh -c 'printf \"#!/bin/sh\\nexit 0\\n\" > .git/hooks/post-checkout'\n"
    "t commondir sh -c 'echo ../elsewhere > .git/commondir'\n"
    "t lock-rename sh -c 'cp .git/config .git/config.lock && mv -f .git/config.lock .git/config'\n"
    "t rename-git mv .git .git-moved\n"
    "echo @@end\n";

static int write_text(int dirfd, const char *name, const char *text)
{
	_cleanup_close_ int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	size_t len = strlen(text);
	return fd >= 0 && write(fd, text, len) == (ssize_t)len ? 0 : -1;
}

/* A minimal repository git accepts (gitrepository-layout(5)): HEAD,
 * objects/, refs/heads/, hooks/ and config, written here. */
static int make_repository(const char *dir)
{
	char git[4300];
	snprintf(git, sizeof(git), "%s/.git", dir);
	if (mkdir(git, 0755) < 0)
		return -1;
	_cleanup_close_ int g = open(git, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (g < 0 || mkdirat(g, "objects", 0755) < 0 || mkdirat(g, "refs", 0755) < 0 ||
	    mkdirat(g, "refs/heads", 0755) < 0 || mkdirat(g, "hooks", 0755) < 0 ||
	    write_text(g, "HEAD", "ref: refs/heads/main\n") < 0 ||
	    write_text(g, "config", "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n") < 0)
		return -1;
	return 0;
}

/* What the owner's git reads from .git, as one string (caller frees):
 * config and commondir bytes, the hook names, the inode of .git. */
static char *snapshot(const char *dir)
{
	char path[4300], buf[8192];
	char *out = NULL;
	size_t size = 0;
	FILE *f = xopen_memstream(&out, &size);
	struct stat st;
	snprintf(path, sizeof(path), "%s/.git", dir);
	fprintf(f, "git %s ino %llu\n", lstat(path, &st) == 0 && S_ISDIR(st.st_mode) ? "dir" : "missing",
	        lstat(path, &st) == 0 ? (unsigned long long)st.st_ino : 0ULL);
	static const char *const files[] = {"config", "commondir", "config.worktree"};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/.git/%s", dir, files[i]);
		int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;
		if (fd >= 0)
			close(fd);
		fprintf(f, "%s: %.*s\n", files[i], n > 0 ? (int)n : 0, buf);
	}
	snprintf(path, sizeof(path), "%s/.git/hooks", dir);
	int h = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = h >= 0 ? fdopendir(h) : NULL; /* takes h over */
	if (!d && h >= 0)
		close(h);
	if (d) {
		struct dirent *e;
		while ((e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
				fprintf(f, "hook %s\n", e->d_name);
		closedir(d);
	}
	fclose(f);
	return out;
}

/* vm (issue 15): QEMU never writes a root-owned direct workspace, so a
 * root doctor gives the throwaway repository to the vm uid, as a person's
 * repository belongs to its person. */
static int give_to_vm_uid(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return lchown(path, POLICY_VM_UID, POLICY_VM_UID);
}

/* A writable directory of its own in the first allowed root that exists
 * and is writable, into dir (size bytes); 0, or -1 with why in reason. */
static int make_dir(const struct config *cfg, char *dir, size_t size, char *reason, size_t rsize)
{
	size_t n = 0;
	char **roots = policy_roots_split(cfg->allowed_host_roots, &n);
	int r = -1;
	snprintf(reason, rsize, "no allowed host root (CHAT2SBX_ALLOWED_HOST_ROOTS='%s') exists and is writable",
	         cfg->allowed_host_roots ? cfg->allowed_host_roots : "");
	for (size_t i = 0; roots && i < n && r < 0; i++) {
		struct stat st;
		if (stat(roots[i], &st) < 0 || !S_ISDIR(st.st_mode) || access(roots[i], W_OK) < 0)
			continue;
		snprintf(dir, size, "%s/chat2sbx-doctor-git-XXXXXX", roots[i]);
		if (mkdtemp(dir))
			r = 0;
	}
	policy_roots_free(roots);
	return r;
}

void ops_git_guard_judge(const char *out, const char *before, const char *after, struct ops_probe_report *r)
{
	char wrote[200] = "";
	size_t o = 0;
	for (const char *p = out; (p = strstr(p, "WROTE ")); p++) {
		size_t len = strcspn(p + 6, "\n");
		if (o < sizeof(wrote))
			o += (size_t)snprintf(wrote + o, sizeof(wrote) - o, "%s%.*s", o ? ", " : "", (int)len, p + 6);
	}
	if (o)
		ops_probe_report_add(r, "direct_git", ATTACK, OPS_CHECK_FAILED,
		                     "the sandbox wrote the owner's .git: %s; the owner's next git command would run "
		                     "what it planted",
		                     wrote);
	else if (!strstr(out, "@@end") || !strstr(out, "refused config"))
		ops_probe_report_add(r, "direct_git", ATTACK, OPS_CHECK_FAILED,
		                     "the attack did not run to its end: %.200s", out);
	else if (strcmp(before, after))
		ops_probe_report_add(r, "direct_git", ATTACK, OPS_CHECK_FAILED,
		                     "the host's .git changed while every write inside was refused");
	else
		ops_probe_report_add(r, "direct_git", ATTACK, OPS_CHECK_PASSED,
		                     "all five refused inside (read-only or busy); .git/config, hooks and commondir on "
		                     "the host unchanged");
}

void ops_git_guard_probe(struct lifecycle *lc, struct ops_probe_report *r)
{
	const struct config *cfg = lifecycle_config(lc);
	struct store *store = lifecycle_store(lc);
	char dir[4200], reason[512];
	if (make_dir(cfg, dir, sizeof(dir), reason, sizeof(reason)) < 0) {
		ops_probe_report_add(r, "direct_git", ATTACK, OPS_CHECK_SKIPPED, "%s", reason);
		return;
	}
	struct workspace_record ws = {0};
	struct lifecycle_create_result res = {0};
	_cleanup_error_ struct cp_error *e = NULL;
	_cleanup_free_ char *before = NULL, *after = NULL, *out = NULL;
	int created = 0;
	if (make_repository(dir) < 0) {
		ops_probe_report_add(r, "direct_git", ATTACK, OPS_CHECK_FAILED,
		                     "write a throwaway repository in '%s': %s", dir, strerror(errno));
		goto out;
	}
	if (policy_runtime_is_vm(lifecycle_runtime(lc, NULL)) && geteuid() == 0 &&
	    nftw(dir, give_to_vm_uid, 16, FTW_PHYS) != 0) {
		ops_probe_report_add(r, "direct_git", ATTACK, OPS_CHECK_FAILED,
		                     "give the throwaway repository '%s' to uid %d: %s", dir, POLICY_VM_UID,
		                     strerror(errno));
		goto out;
	}
	if (workspace_register(cfg, store, dir, "direct", &ws, &created, &e) < 0) {
		/* The host-path policy refusing the place (nested roots, a direct
		 * workspace around it) is no attack that got through. */
		ops_probe_report_add(r, "direct_git", ATTACK,
		                     e->code == CP_ERR_DENIED ? OPS_CHECK_SKIPPED : OPS_CHECK_FAILED,
		                     "register '%s' as a direct workspace: %s", dir, e->message);
		goto out;
	}
	struct lifecycle_create_options o = {.workspace_id = ws.id};
	if (lifecycle_sandbox_create(lc, &o, &res, &e) < 0) {
		ops_probe_report_add(r, "direct_git", ATTACK, OPS_CHECK_FAILED, "create the probe on '%s': %s", dir,
		                     e->message);
		goto out;
	}
	before = snapshot(dir); /* after the create: its placeholders are the owner's .git now */
	if (ops_probe_run(lc, res.sandbox.id, attack_command, &out, &e) < 0) {
		ops_probe_report_add(r, "direct_git", ATTACK, OPS_CHECK_FAILED, "run the attack: %s", e->message);
		goto out;
	}
	after = snapshot(dir);
	ops_git_guard_judge(out, before ? before : "", after ? after : "?", r);
	/* Then the links git writes through (git_plant_probe.c), on the same
	 * repository once this probe is gone (one sandbox per workspace). */
	if (lifecycle_sandbox_destroy(lc, res.sandbox.id, NULL, &e) < 0)
		cp_error_log_free(LOG_LEVEL_WARN, "doctor", &e, "remove the git probe %s", res.sandbox.id);
	else
		ops_git_plant_probe(lc, dir, ws.id, r);
out:
	cp_error_freep(&e);
	if (res.sandbox.id && lifecycle_sandbox_destroy(lc, res.sandbox.id, NULL, &e) < 0)
		cp_error_log_free(LOG_LEVEL_WARN, "doctor", &e, "remove the git probe %s", res.sandbox.id);
	if (ws.id && store_workspace_forget(store, ws.id, &e) < 0)
		cp_error_log_free(LOG_LEVEL_WARN, "doctor", &e, "forget the git probe's workspace %s", ws.id);
	ops_remove_tree(dir);
	lifecycle_create_result_clear(&res);
	workspace_record_clear(&ws);
}
