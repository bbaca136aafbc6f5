/* test_git_tree.c: a direct workspace's whole .git (issue 23) without an
 * engine, then with the fake one: the judgement and its words
 * (policy/git_tree.c, names from a sandbox escaped), the walker on
 * temporary trees (symlinks planted at every depth, FIFOs, sockets,
 * devices, a symlinked directory that must not be followed, each bound
 * refused, a change between two walks found through the cache even with
 * the directory's mtime put back, watches that fire), the create's refusal
 * (nothing created), the quarantine (moved, never followed, recorded), and
 * a running sandbox stopped by the call's check and by the watcher alone. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "lifecycle_fixture.h"
#include "policy/policy.h"

static char dir[64]; /* the workspace; its .git is dir/.git */

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/c2s-gittree-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[200];
	snprintf(cmd, sizeof(cmd), "chmod -R u+rwx %s 2>/dev/null; rm -rf %s", dir, dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(git_tree, .init = setup, .fini = teardown);

static const char *at(const char *rel)
{
	static char p[8][512];
	static int i;
	i = (i + 1) % 8;
	snprintf(p[i], sizeof(p[i]), "%s/%s", dir, rel);
	return p[i];
}

static void mkdirs(const char *rel)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", at(rel));
	cr_assert_eq(system(cmd), 0, "%s", rel);
}

static void put(const char *rel, const char *text)
{
	FILE *f = fopen(at(rel), "w");
	cr_assert_not_null(f, "%s", rel);
	fputs(text, f);
	fclose(f);
}

static void link_at(const char *target, const char *rel)
{
	cr_assert_eq(symlink(target, at(rel)), 0, "%s: %s", rel, strerror(errno));
}

/* A repository's .git as git leaves it: objects, refs, reflogs, an index. */
static void repo(void)
{
	mkdirs(".git/objects/info");
	mkdirs(".git/objects/pack");
	for (int i = 0; i < 16; i++) {
		char rel[64];
		snprintf(rel, sizeof(rel), ".git/objects/%02x", i);
		mkdirs(rel);
		snprintf(rel, sizeof(rel), ".git/objects/%02x/0123456789abcdef0123456789abcdef012345", i);
		put(rel, "x");
	}
	mkdirs(".git/refs/heads/feature");
	mkdirs(".git/refs/tags");
	mkdirs(".git/logs/refs/heads/feature");
	mkdirs(".git/hooks");
	put(".git/HEAD", "ref: refs/heads/main\n");
	put(".git/config", "[core]\n");
	put(".git/index", "DIRC");
	put(".git/refs/heads/main", "0123\n");
	put(".git/refs/heads/feature/x", "0123\n");
	put(".git/logs/HEAD", "0 1 o <o> 1 +0000\tcommit\n");
	put(".git/logs/refs/heads/main", "0 1 o <o> 1 +0000\tcommit\n");
}

static int git_fd(void)
{
	int fd = open(at(".git"), O_PATH | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	return fd;
}

/* One walk of t (fresh when NULL); *scan filled (caller clears). */
static int walk(struct guard_git_tree *t, struct guard_git_scan *scan)
{
	struct guard_git_tree *own = t ? NULL : guard_git_tree_new(-1);
	int fd = git_fd();
	struct cp_error *err = NULL;
	int r = guard_git_tree_walk(t ? t : own, fd, scan, &err);
	cr_assert_geq(r, 0, "%s", err ? err->message : "");
	close(fd);
	guard_git_tree_free(own);
	return r;
}

static void settle(void)
{
	usleep(250 * 1000); /* past the walker's racy window: directories come from its cache */
}

Test(git_tree, entry_judge_and_names)
{
	cr_assert_eq(policy_git_entry_judge(S_IFREG | 0644), POLICY_GIT_ENTRY_OK);
	cr_assert_eq(policy_git_entry_judge(S_IFDIR | 0755), POLICY_GIT_ENTRY_OK);
	cr_assert_eq(policy_git_entry_judge(S_IFLNK | 0777), POLICY_GIT_ENTRY_SYMLINK);
	cr_assert_eq(policy_git_entry_judge(S_IFIFO | 0644), POLICY_GIT_ENTRY_FIFO);
	cr_assert_eq(policy_git_entry_judge(S_IFSOCK | 0755), POLICY_GIT_ENTRY_SOCKET);
	cr_assert_eq(policy_git_entry_judge(S_IFCHR | 0600), POLICY_GIT_ENTRY_CHAR_DEVICE);
	cr_assert_eq(policy_git_entry_judge(S_IFBLK | 0600), POLICY_GIT_ENTRY_BLOCK_DEVICE);
	cr_assert_eq(policy_git_entry_judge(0), POLICY_GIT_ENTRY_UNKNOWN);
	cr_assert_str_eq(policy_git_entry_name(POLICY_GIT_ENTRY_SYMLINK), "symbolic link");
	cr_assert_str_eq(policy_git_entry_name(POLICY_GIT_ENTRY_FIFO), "FIFO");
}

Test(git_tree, refusal_names_what_and_escapes_the_sandbox_s_bytes)
{
	struct policy_git_finding f[6] = {
	    {.rel = "logs/refs/stash", .kind = POLICY_GIT_ENTRY_SYMLINK, .target = "/home/me/.bashrc"},
	    {.rel = "COMMIT_EDITMSG\x1b[31m\n", .kind = POLICY_GIT_ENTRY_FIFO},
	    {.rel = "x", .kind = POLICY_GIT_ENTRY_SYMLINK, .target = "/a'b\"c"},
	    {.rel = "y", .kind = POLICY_GIT_ENTRY_SOCKET},
	    {.rel = "z", .kind = POLICY_GIT_ENTRY_CHAR_DEVICE},
	    {.rel = "w", .kind = POLICY_GIT_ENTRY_SYMLINK, .target = "/"},
	};
	struct cp_error *err = NULL;
	cr_assert_eq(policy_git_tree_refusal("/r/.git", f, 1, 0, &err), -1);
	cr_assert_eq(err->code, CP_ERR_DENIED);
	cr_assert_not_null(strstr(err->message, "'/r/.git/logs/refs/stash' (a symbolic link to '/home/me/.bashrc')"),
	                   "%s", err->message);
	cr_assert_not_null(strstr(err->message, "nothing was created"), "%s", err->message);
	cr_assert_not_null(strstr(err->message, "clone mode"), "%s", err->message);
	cp_error_freep(&err);
	cr_assert_eq(policy_git_tree_refusal("/r/.git", f, 6, 3, &err), -1);
	cr_assert_null(strchr(err->message, '\x1b'), "an escape sequence reached the message: %s", err->message);
	cr_assert_null(strchr(err->message, '\n'), "%s", err->message);
	cr_assert_not_null(strstr(err->message, "COMMIT_EDITMSG\\x1b[31m\\n' (a FIFO)"), "%s", err->message);
	cr_assert_not_null(strstr(err->message, "and 5 more"), "%s", err->message);
	cp_error_freep(&err);

	cr_assert_eq(policy_git_tree_bound_refusal("/r/.git", POLICY_GIT_BOUND_ENTRIES, NULL, &err), -1);
	cr_assert_eq(err->code, CP_ERR_DENIED);
	cr_assert_not_null(strstr(err->message, "'/r/.git' holds more than 200000 files"), "%s", err->message);
	cr_assert_not_null(strstr(err->message, "git gc"), "%s", err->message);
	cp_error_freep(&err);
	cr_assert_eq(policy_git_tree_bound_refusal("/r/.git", POLICY_GIT_BOUND_DEPTH, "a/b\x07", &err), -1);
	cr_assert_not_null(strstr(err->message, "(at 'a/b\\x07')"), "%s", err->message);
	cp_error_freep(&err);
}

Test(git_tree, failure_reason_says_what_where_and_what_to_check)
{
	struct policy_git_finding f[2] = {
	    {.rel = "logs/refs/stash", .kind = POLICY_GIT_ENTRY_SYMLINK, .target = "/home/me/.bashrc", .moved_as = "1"},
	    {.rel = "refs/heads/x", .kind = POLICY_GIT_ENTRY_SYMLINK, .target = "/etc", .move_errno = EACCES},
	};
	char *r = policy_git_tree_reason("/r/.git", f, 2, 0, POLICY_GIT_BOUND_NONE, "/d/quarantine/q1");
	cr_assert_not_null(strstr(r, "'/r/.git/logs/refs/stash' (a symbolic link to '/home/me/.bashrc')"), "%s", r);
	cr_assert_not_null(strstr(r, "moved what it could to '/d/quarantine/q1'"), "%s", r);
	cr_assert_not_null(strstr(r, "'/r/.git/refs/heads/x' is still there (Permission denied)"), "%s", r);
	cr_assert_not_null(strstr(r, "The sandbox was stopped"), "%s", r);
	cr_assert_not_null(strstr(r, "check the files the links name"), "%s", r);
	free(r);
	f[1].move_errno = ENOENT; /* another chat2sbx took it first */
	r = policy_git_tree_reason("/r/.git", f, 2, 0, POLICY_GIT_BOUND_NONE, "/q");
	cr_assert_not_null(strstr(r, "'/r/.git/refs/heads/x' was gone before chat2sbx could move it"), "%s", r);
	cr_assert_null(strstr(r, "still there"), "%s", r);
	free(r);
	r = policy_git_tree_reason("/r/.git", f, 1, 0, POLICY_GIT_BOUND_NONE, "/q");
	cr_assert_not_null(strstr(r, "moved it to '/q'"), "%s", r);
	free(r);
	r = policy_git_tree_reason("/r/.git", NULL, 0, 0, POLICY_GIT_BOUND_ENTRIES, NULL);
	cr_assert_not_null(strstr(r, "more than 200000 files and directories"), "%s", r);
	cr_assert_not_null(strstr(r, "find '/r/.git' ! -type f ! -type d"), "%s", r);
	free(r);
	/* No command to paste around a path that would need more quoting. */
	r = policy_git_tree_reason("/r'x/.git", NULL, 0, 0, POLICY_GIT_BOUND_TIME, NULL);
	cr_assert_null(strstr(r, "find '"), "%s", r);
	free(r);
}

Test(git_tree, a_clean_tree_passes_and_is_counted)
{
	repo();
	struct guard_git_scan scan;
	cr_assert_eq(walk(NULL, &scan), 0);
	cr_assert_eq(scan.n, 0);
	cr_assert_eq(scan.bound, POLICY_GIT_BOUND_NONE);
	/* 16 objects dirs + info + pack + 16 objects, refs (3 dirs, 2 files), logs (4 dirs, 2 files),
	 * hooks, HEAD, config, index, and the top level's own entries. */
	cr_assert_geq(scan.entries, 50, "%zu", scan.entries);
	cr_assert_eq(scan.dirs, scan.reread, "a first walk reads every directory");
	guard_git_scan_clear(&scan);
}

Test(git_tree, symlinks_planted_at_every_depth_are_found)
{
	repo();
	static const char *const rels[] = {
	    "COMMIT_EDITMSG",       "ORIG_HEAD",       "logs/HEAD.x", "logs/refs/stash", "logs/refs/heads/feature/y",
	    "refs/heads/feature/z", "objects/0a/link",
	};
	for (size_t i = 0; i < sizeof(rels) / sizeof(rels[0]); i++) {
		char rel[128];
		snprintf(rel, sizeof(rel), ".git/%s", rels[i]);
		link_at("/tmp/c2s-victim/.bashrc", rel);
		struct guard_git_scan scan;
		cr_assert_eq(walk(NULL, &scan), 1, "%s not found", rels[i]);
		cr_assert_eq(scan.n, 1, "%s: %zu findings", rels[i], scan.n);
		cr_assert_str_eq(scan.found[0].rel, rels[i]);
		cr_assert_eq(scan.found[0].kind, POLICY_GIT_ENTRY_SYMLINK);
		cr_assert_str_eq(scan.found[0].target, "/tmp/c2s-victim/.bashrc");
		guard_git_scan_clear(&scan);
		cr_assert_eq(unlink(at(rel)), 0);
	}
	/* Deep below .git, in directories the sandbox made. */
	mkdirs(".git/refs/heads/a/b/c/d/e/f/g/h/i/j");
	link_at("/", ".git/refs/heads/a/b/c/d/e/f/g/h/i/j/k");
	struct guard_git_scan scan;
	cr_assert_eq(walk(NULL, &scan), 1);
	cr_assert_str_eq(scan.found[0].rel, "refs/heads/a/b/c/d/e/f/g/h/i/j/k");
	guard_git_scan_clear(&scan);
	/* And the top: .git's own entries. */
	unlink(at(".git/refs/heads/a/b/c/d/e/f/g/h/i/j/k"));
	link_at("/etc/passwd", ".git/FETCH_HEAD");
	cr_assert_eq(walk(NULL, &scan), 1);
	cr_assert_str_eq(scan.found[0].rel, "FETCH_HEAD");
	guard_git_scan_clear(&scan);
}

Test(git_tree, fifos_sockets_and_devices_are_refused)
{
	repo();
	cr_assert_eq(mkfifo(at(".git/MERGE_MSG"), 0644), 0);
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", at(".git/logs/sock"));
	cr_assert_eq(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0, "%s", strerror(errno));
	close(s);
	int device = mknod(at(".git/objects/00/dev"), S_IFCHR | 0600, makedev(1, 3)) == 0; /* root only */
	struct guard_git_scan scan;
	cr_assert_eq(walk(NULL, &scan), 1);
	cr_assert_eq(scan.n, 2 + (size_t)device);
	int fifo = 0, sock = 0, chr = 0;
	for (size_t i = 0; i < scan.n; i++) {
		fifo += !strcmp(scan.found[i].rel, "MERGE_MSG") && scan.found[i].kind == POLICY_GIT_ENTRY_FIFO;
		sock += !strcmp(scan.found[i].rel, "logs/sock") && scan.found[i].kind == POLICY_GIT_ENTRY_SOCKET;
		chr +=
		    !strcmp(scan.found[i].rel, "objects/00/dev") && scan.found[i].kind == POLICY_GIT_ENTRY_CHAR_DEVICE;
		cr_assert_null(scan.found[i].target);
	}
	cr_assert_eq(fifo + sock + chr, (int)scan.n, "each found as what it is");
	guard_git_scan_clear(&scan);
}

Test(git_tree, a_symlinked_directory_is_refused_and_never_followed)
{
	repo();
	/* Outside: a directory full of what would be refused inside. */
	char outside[128];
	snprintf(outside, sizeof(outside), "%s/outside", dir);
	mkdirs("outside/refs");
	cr_assert_eq(mkfifo(at("outside/fifo"), 0644), 0);
	link_at("/", "outside/refs/root");
	cr_assert_eq(rename(at(".git/logs"), at(".git/logs.real")), 0);
	link_at(outside, ".git/logs");
	struct guard_git_scan scan;
	cr_assert_eq(walk(NULL, &scan), 1);
	cr_assert_eq(scan.n, 1, "only the link itself: %zu (%s)", scan.n, scan.n > 1 ? scan.found[1].rel : "");
	cr_assert_str_eq(scan.found[0].rel, "logs");
	cr_assert_str_eq(scan.found[0].target, outside);
	guard_git_scan_clear(&scan);
}

Test(git_tree, every_bound_is_a_refusal_not_a_pass)
{
	repo();
	for (int i = 0; i < 300; i++) {
		char rel[64];
		snprintf(rel, sizeof(rel), ".git/objects/pack/p%03d", i);
		put(rel, "");
	}
	/* A link after the bound could hide: the bound itself is the answer. */
	link_at("/", ".git/refs/tags/zz");
	struct guard_git_tree *t = guard_git_tree_new(-1);
	guard_git_tree_set_bounds(t, 200, POLICY_GIT_TREE_MAX_DEPTH, POLICY_GIT_TREE_MAX_MS);
	struct guard_git_scan scan;
	cr_assert_eq(walk(t, &scan), 1);
	cr_assert_eq(scan.bound, POLICY_GIT_BOUND_ENTRIES);
	guard_git_scan_clear(&scan);
	/* Still refused at the next walk (the cache does not turn it into a pass). */
	cr_assert_eq(walk(t, &scan), 1);
	cr_assert_eq(scan.bound, POLICY_GIT_BOUND_ENTRIES);
	guard_git_scan_clear(&scan);
	guard_git_tree_free(t);

	unlink(at(".git/refs/tags/zz"));
	mkdirs(".git/refs/heads/d1/d2/d3/d4/d5/d6");
	t = guard_git_tree_new(-1);
	guard_git_tree_set_bounds(t, 100000, 4, POLICY_GIT_TREE_MAX_MS);
	cr_assert_eq(walk(t, &scan), 1);
	cr_assert_eq(scan.bound, POLICY_GIT_BOUND_DEPTH);
	cr_assert_not_null(scan.bound_rel);
	cr_assert_not_null(strstr(scan.bound_rel, "refs/heads/d1/d2"), "%s", scan.bound_rel);
	guard_git_scan_clear(&scan);
	guard_git_tree_free(t);

	t = guard_git_tree_new(-1);
	guard_git_tree_set_bounds(t, 100000, 100, 0);
	cr_assert_eq(walk(t, &scan), 1);
	cr_assert_eq(scan.bound, POLICY_GIT_BOUND_TIME);
	guard_git_scan_clear(&scan);
	guard_git_tree_free(t);
}

Test(git_tree, the_cache_rereads_only_what_changed_and_misses_no_plant)
{
	repo();
	settle();
	struct guard_git_tree *t = guard_git_tree_new(-1);
	struct guard_git_scan scan;
	cr_assert_eq(walk(t, &scan), 0);
	size_t dirs = scan.dirs, entries = scan.entries;
	cr_assert_eq(scan.reread, dirs);
	guard_git_scan_clear(&scan);
	cr_assert_eq(walk(t, &scan), 0);
	cr_assert_eq(scan.reread, 0, "nothing changed, nothing read: %zu", scan.reread);
	cr_assert_eq(scan.dirs, dirs);
	cr_assert_eq(scan.entries, entries);
	guard_git_scan_clear(&scan);

	/* A plant deep in an existing directory, its mtime put back as it was
	 * (a sandbox hiding it from a cache on mtime: the ctime still moves). */
	struct stat before;
	cr_assert_eq(stat(at(".git/logs/refs/heads/feature"), &before), 0);
	link_at("/home", ".git/logs/refs/heads/feature/stash");
	struct timespec times[2] = {before.st_atim, before.st_mtim};
	cr_assert_eq(utimensat(AT_FDCWD, at(".git/logs/refs/heads/feature"), times, AT_SYMLINK_NOFOLLOW), 0);
	cr_assert_eq(walk(t, &scan), 1);
	cr_assert_eq(scan.n, 1);
	cr_assert_str_eq(scan.found[0].rel, "logs/refs/heads/feature/stash");
	cr_assert_leq(scan.reread, 2, "only the changed directory: %zu", scan.reread);
	guard_git_scan_clear(&scan);
	/* Found again while it is there. */
	cr_assert_eq(walk(t, &scan), 1);
	guard_git_scan_clear(&scan);
	unlink(at(".git/logs/refs/heads/feature/stash"));
	cr_assert_eq(walk(t, &scan), 0);
	guard_git_scan_clear(&scan);

	/* A leaf directory replaced by a link, and a new directory holding one. */
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", at(".git/objects/0b"));
	cr_assert_eq(system(cmd), 0);
	link_at("/root", ".git/objects/0b");
	mkdirs(".git/refs/remotes/origin");
	link_at("/", ".git/refs/remotes/origin/HEAD");
	cr_assert_eq(walk(t, &scan), 1);
	cr_assert_eq(scan.n, 2, "%zu", scan.n);
	int leaf = 0, fresh = 0;
	for (size_t i = 0; i < scan.n; i++) {
		leaf += !strcmp(scan.found[i].rel, "objects/0b");
		fresh += !strcmp(scan.found[i].rel, "refs/remotes/origin/HEAD");
	}
	cr_assert(leaf && fresh);
	guard_git_scan_clear(&scan);
	guard_git_tree_free(t);
}

/* 1 when fd has an event within ms, draining it. */
static int event_within(int fd, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	if (poll(&p, 1, ms) != 1)
		return 0;
	char buf[4096];
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	return 1;
}

Test(git_tree, every_directory_is_watched_new_ones_too)
{
	repo();
	int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	cr_assert_geq(in, 0);
	struct guard_git_tree *t = guard_git_tree_new(in);
	struct guard_git_scan scan;
	cr_assert_eq(walk(t, &scan), 0);
	guard_git_scan_clear(&scan);
	cr_assert_eq(guard_git_tree_watch_errno(t), 0);
	event_within(in, 0);
	link_at("/", ".git/logs/refs/heads/feature/p");
	cr_assert(event_within(in, 1000), "no event for a plant deep in the tree");
	unlink(at(".git/logs/refs/heads/feature/p"));
	event_within(in, 100);
	mkdirs(".git/refs/new");
	cr_assert(event_within(in, 1000), "no event for a new directory");
	cr_assert_eq(walk(t, &scan), 0); /* watches the new directory */
	guard_git_scan_clear(&scan);
	event_within(in, 0);
	link_at("/", ".git/refs/new/p");
	cr_assert(event_within(in, 1000), "no event inside the new directory");
	guard_git_tree_free(t);
	close(in);
}

Test(git_tree, a_create_refuses_a_planted_tree_and_creates_nothing)
{
	repo();
	mkdirs(".git/logs/refs");
	link_at("/tmp/c2s-victim/.bashrc", ".git/logs/refs/stash");
	int fd = -1;
	uint64_t dev, ino;
	struct cp_error *err = NULL;
	cr_assert_eq(guard_mount_open(dir, &fd, &dev, &ino, &err), 0);
	struct guard_git g = {0};
	cr_assert_eq(guard_git_prepare(fd, dir, "/workspace", &g, &err), -1);
	close(fd);
	cr_assert_eq(err->code, CP_ERR_DENIED);
	cr_assert_not_null(
	    strstr(err->message, "/.git/logs/refs/stash' (a symbolic link to '/tmp/c2s-victim/.bashrc')"), "%s",
	    err->message);
	cr_assert_not_null(strstr(err->message, "nothing was created"), "%s", err->message);
	struct stat st;
	cr_assert_neq(lstat(at(".git/commondir"), &st), 0, "a placeholder was created before the refusal");
	cr_assert_neq(lstat(at(".git/modules"), &st), 0);
	cp_error_free(err);
	guard_git_clear(&g);
}

/* Reads the quarantine's only directory's record.json (caller puts). */
static struct json_object *quarantine_record(const char *data_root, char *qdir, size_t size)
{
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "ls -d %s/quarantine/*/ | head -1 | tr -d '\\n'", data_root);
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	cr_assert_not_null(fgets(qdir, (int)size, p));
	pclose(p);
	char path[600];
	snprintf(path, sizeof(path), "%srecord.json", qdir);
	struct json_object *o = json_object_from_file(path);
	cr_assert_not_null(o, "%s", path);
	return o;
}

Test(git_tree, the_quarantine_moves_without_following_and_records)
{
	repo();
	mkdirs("data");
	mkdirs("victim");
	put("victim/.bashrc", "mine\n");
	char victim[128];
	snprintf(victim, sizeof(victim), "%s/victim/.bashrc", dir);
	link_at(victim, ".git/logs/refs/heads/main.lnk");
	cr_assert_eq(mkfifo(at(".git/COMMIT_EDITMSG"), 0644), 0);
	struct guard_git_scan scan;
	cr_assert_eq(walk(NULL, &scan), 1);
	cr_assert_eq(scan.n, 2);
	char data_root[128];
	snprintf(data_root, sizeof(data_root), "%s/data", dir);
	struct config cfg = {.data_root = data_root};
	struct guard_git_quarantine q;
	guard_git_quarantine_init(&q);
	struct cp_error *err = NULL;
	int fd = git_fd();
	cr_assert_eq(guard_git_quarantine_move(&q, &cfg, "sbx_t", at(".git"), fd, scan.found, scan.n, &err), 0, "%s",
	             err ? err->message : "");
	close(fd);
	for (size_t i = 0; i < scan.n; i++) {
		cr_assert_not_null(scan.found[i].moved_as, "%s not moved: %s", scan.found[i].rel,
		                   strerror(scan.found[i].move_errno));
		cr_assert_eq(scan.found[i].move_errno, 0);
	}
	struct stat st;
	cr_assert_neq(lstat(at(".git/logs/refs/heads/main.lnk"), &st), 0, "the link is still in .git");
	cr_assert_neq(lstat(at(".git/COMMIT_EDITMSG"), &st), 0, "the FIFO is still in .git");
	guard_git_quarantine_close(&q);
	char qdir[400];
	struct json_object *rec = quarantine_record(data_root, qdir, sizeof(qdir));
	cr_assert_eq(json_object_array_length(rec), 2);
	const char *text = json_object_to_json_string(rec);
	cr_assert_not_null(strstr(text, "\".git\\/logs\\/refs\\/heads\\/main.lnk\""), "%s", text);
	cr_assert_not_null(strstr(text, "victim\\/.bashrc"), "%s", text);
	json_object_put(rec);
	/* In the quarantine, still a link (never followed); the file it names untouched. */
	char moved[600], target[256];
	size_t link = !strcmp(scan.found[0].rel, "COMMIT_EDITMSG"); /* the other one */
	snprintf(moved, sizeof(moved), "%s%s", qdir, scan.found[link].moved_as);
	ssize_t n = readlink(moved, target, sizeof(target) - 1);
	cr_assert_gt(n, 0, "%s", moved);
	target[n] = '\0';
	cr_assert_str_eq(target, victim);
	FILE *f = fopen(victim, "r");
	char line[32] = "";
	cr_assert_not_null(fgets(line, sizeof(line), f));
	fclose(f);
	cr_assert_str_eq(line, "mine\n");
	cr_assert_eq(stat(qdir, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0700);
	guard_git_scan_clear(&scan);
	/* Nothing is left to find. */
	cr_assert_eq(walk(NULL, &scan), 0);
	guard_git_scan_clear(&scan);
}

Test(git_tree, from_another_file_system_the_link_is_made_again_in_the_quarantine)
{
	struct stat a, b;
	if (stat("/dev/shm", &b) < 0 || stat(dir, &a) < 0 || a.st_dev == b.st_dev)
		cr_skip_test("needs /dev/shm on another file system than /tmp");
	repo();
	char data_root[64];
	snprintf(data_root, sizeof(data_root), "/dev/shm/c2s-gittree-XXXXXX");
	cr_assert_not_null(mkdtemp(data_root));
	link_at("/etc/hostname", ".git/ORIG_HEAD");
	struct guard_git_scan scan;
	cr_assert_eq(walk(NULL, &scan), 1);
	struct config cfg = {.data_root = data_root};
	struct guard_git_quarantine q;
	guard_git_quarantine_init(&q);
	struct cp_error *err = NULL;
	int fd = git_fd();
	cr_assert_eq(guard_git_quarantine_move(&q, &cfg, "sbx_x", at(".git"), fd, scan.found, scan.n, &err), 0);
	close(fd);
	cr_assert_str_eq(scan.found[0].moved_as, "1");
	cr_assert_neq(lstat(at(".git/ORIG_HEAD"), &a), 0);
	guard_git_quarantine_close(&q);
	char qdir[400];
	json_object_put(quarantine_record(data_root, qdir, sizeof(qdir)));
	char moved[600], target[64];
	snprintf(moved, sizeof(moved), "%s1", qdir);
	ssize_t n = readlink(moved, target, sizeof(target) - 1);
	cr_assert_gt(n, 0);
	target[n] = '\0';
	cr_assert_str_eq(target, "/etc/hostname");
	guard_git_scan_clear(&scan);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", data_root);
	cr_assert_eq(system(cmd), 0);
}

/* ---- a running sandbox, against the fake engine ---- */

static const struct fake_route routes[] = {
    {"GET", "/version", {.fixture = "version.http"}},
    {"POST", "/pause", {.fixture = "start_ok.http"}},
    {"POST", "/stop", {.fixture = "start_ok.http"}},
};

static void running_sandbox(struct sandbox_record *s)
{
	lc_fixture_setup("gittree", routes, sizeof(routes) / sizeof(routes[0]));
	lc_fixture_workspace("ws_d", "direct", dir, 1);
	lc_fixture_sandbox("sbx_d", "ws_d", "running", clock_now_ms());
	struct stat st;
	cr_assert_eq(stat(at(".git"), &st), 0);
	struct sandbox_mount_record m = {.target = "/workspace/.git",
	                                 .source = (char *)at(".git"),
	                                 .read_only = 0,
	                                 .dev = (uint64_t)st.st_dev,
	                                 .ino = (uint64_t)st.st_ino};
	struct cp_error *err = NULL;
	cr_assert_eq(store_sandbox_mounts_set(fx.store, "sbx_d", &m, 1, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(store_sandbox_get(fx.store, "sbx_d", s, &err), 0);
}

static char *reason_of(const char *id)
{
	struct sandbox_record s = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(store_sandbox_get(fx.store, id, &s, &err), 0);
	char *r = s.failure_reason ? strdup(s.failure_reason) : NULL;
	sandbox_record_clear(&s);
	return r;
}

/* Sandbox id was stopped for rel: failed with a reason naming needle,
 * paused and stopped once, rel gone from .git. */
static void assert_stopped(const char *id, const char *rel, const char *needle)
{
	char *reason = reason_of(id);
	cr_assert_not_null(reason, "%s has no failure reason", id);
	cr_assert_not_null(strstr(reason, needle), "%s", reason);
	cr_assert_not_null(strstr(reason, "The sandbox was stopped"), "%s", reason);
	free(reason);
	char path[64];
	snprintf(path, sizeof(path), "/containers/%s/pause", id);
	cr_assert_eq(fake_count("POST", path), 1);
	snprintf(path, sizeof(path), "/containers/%s/stop", id);
	cr_assert_eq(fake_count("POST", path), 1);
	struct stat st;
	cr_assert_neq(lstat(at(rel), &st), 0, "%s is still in .git", rel);
}

/* Waits up to 5 s for the watcher to fail sandbox id. */
static void wait_failed(const char *id)
{
	int64_t until = clock_monotonic_ms() + 5000;
	while (strcmp(lc_fixture_status(id), "failed") && clock_monotonic_ms() < until)
		usleep(20 * 1000);
	cr_assert_str_eq(lc_fixture_status(id), "failed", "the watcher did not stop %s", id);
}

/* A call's guard check, with the mounts the registry holds for s. */
static int guard_check(const struct sandbox_record *s, struct cp_error **err)
{
	struct sandbox_mount_record *m = NULL;
	size_t n = 0;
	if (lifecycle_call_mounts(fx.lc, s->id, &m, &n, err) < 0)
		return -1;
	int r = guard_git_check(fx.lc->git_watch, s, m, n, err);
	for (size_t i = 0; i < n; i++)
		sandbox_mount_record_clear(&m[i]);
	free(m);
	return r;
}

/* A direct workspace of another node (issue 28): its path names that
 * machine's directory, so this machine's directory of the same path is
 * never judged, quarantined or taken for its .git. */
Test(git_tree, another_nodes_sandbox_leaves_this_machines_path_alone)
{
	repo();
	struct sandbox_record s = {0};
	running_sandbox(&s);
	link_at("/tmp/c2s-victim/.bashrc", ".git/logs/refs/stash");
	char *node = s.node;
	s.node = "n1";
	struct cp_error *err = NULL;
	cr_assert_eq(guard_check(&s, &err), 0, "%s", err ? err->message : "");
	s.node = node;
	cr_assert_str_eq(lc_fixture_status("sbx_d"), "running");
	struct stat st;
	cr_assert_eq(lstat(at(".git/logs/refs/stash"), &st), 0, "not moved to the quarantine");
	cr_assert(S_ISLNK(st.st_mode));
	sandbox_record_clear(&s);
}

Test(git_tree, a_call_stops_a_sandbox_whose_git_holds_a_link)
{
	repo();
	struct sandbox_record s = {0};
	running_sandbox(&s);
	link_at("/tmp/c2s-victim/.bashrc", ".git/logs/refs/stash");
	struct cp_error *err = NULL;
	cr_assert_eq(guard_check(&s, &err), -1);
	cr_assert_eq(err->code, CP_ERR_CONFLICT);
	cr_assert_not_null(strstr(err->message, "has failed"), "%s", err->message);
	cr_assert_not_null(strstr(err->message, ".git/logs/refs/stash' (a symbolic link to '/tmp/c2s-victim/.bashrc')"),
	                   "%s", err->message);
	cr_assert_not_null(strstr(err->message, "/quarantine/sbx_d-"), "%s", err->message);
	cp_error_freep(&err);
	cr_assert_str_eq(lc_fixture_status("sbx_d"), "failed");
	assert_stopped("sbx_d", ".git/logs/refs/stash", "(a symbolic link to '/tmp/c2s-victim/.bashrc')");
	sandbox_record_clear(&s);
	lc_fixture_teardown();
}

Test(git_tree, the_watcher_stops_it_without_any_call)
{
	repo();
	struct sandbox_record s = {0};
	running_sandbox(&s);
	struct cp_error *err = NULL;
	cr_assert_eq(guard_check(&s, &err), 0, "%s", err ? err->message : "");
	cr_assert_str_eq(lc_fixture_status("sbx_d"), "running");
	cr_assert_eq(mkfifo(at(".git/logs/refs/heads/feature/fifo"), 0644), 0);
	wait_failed("sbx_d");
	assert_stopped("sbx_d", ".git/logs/refs/heads/feature/fifo", ".git/logs/refs/heads/feature/fifo' (a FIFO)");
	sandbox_record_clear(&s);
	lc_fixture_teardown();
}

Test(git_tree, a_destroyed_sandbox_s_watch_stops_the_workspace_s_next_one)
{
	/* The watch belongs to the .git: the sandbox that asked first is gone,
	 * the next one on the workspace (which never asked) made the plant. */
	repo();
	struct sandbox_record s = {0};
	running_sandbox(&s);
	struct cp_error *err = NULL;
	cr_assert_eq(guard_check(&s, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(store_sandbox_set_status(fx.store, "sbx_d", SANDBOX_REMOVED, NULL, NULL, clock_now_ms(), &err), 0);
	lc_fixture_sandbox("sbx_e", "ws_d", "running", clock_now_ms());
	link_at("/", ".git/refs/heads/feature/p");
	wait_failed("sbx_e");
	assert_stopped("sbx_e", ".git/refs/heads/feature/p", ".git/refs/heads/feature/p' (a symbolic link to '/')");
	cr_assert_eq(fake_count("POST", "/containers/sbx_d/stop"), 0);
	sandbox_record_clear(&s);
	lc_fixture_teardown();
}

Test(git_tree, ordinary_git_inside_raises_nothing)
{
	/* git's own commands on a real repository make only files and
	 * directories: commit, branch, stash, merge, rebase, gc. */
	char cmd[1024];
	snprintf(cmd, sizeof(cmd),
	         "cd %s && export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 && g='git -c user.name=m -c "
	         "user.email=m@s' && $g init -q -b main && echo a > a && $g add a && $g commit -qm one && $g branch "
	         "f && $g checkout -q f && echo b > b && $g add b && $g commit -qm two && $g checkout -q main && "
	         "echo c >> a && $g stash -q && $g stash pop -q && $g commit -qam three && $g merge -q --no-edit f "
	         "&& $g rebase -q HEAD~1 2>/dev/null; $g tag -a -m t t1 && $g gc -q && $g fetch -q . f:g",
	         dir);
	if (system(cmd) != 0)
		cr_skip_test("git is not usable here");
	struct guard_git_scan scan;
	cr_assert_eq(walk(NULL, &scan), 0, "%s", scan.n ? scan.found[0].rel : "a bound");
	guard_git_scan_clear(&scan);
}
