/* git_tree_bench.c: what the per-call check of a direct workspace's .git
 * costs (issue 23; guard/git_tree.c). Makes a repository with about
 * 5 000 loose objects and 300 branches (git hash-object, git update-ref),
 * then times: the first walk (every directory read), a walk with nothing
 * changed (what nearly every tool call pays), the same with inotify watches
 * on, and a walk after one new object (one directory read again).
 * Usage: git_tree_bench [DIR] [OBJECTS] [REFS]; DIR defaults to a new
 * temporary directory, removed at the end. Prints one line per figure. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "guard/guard.h"

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void run(const char *cmd)
{
	if (system(cmd) != 0) {
		fprintf(stderr, "git_tree_bench: failed: %s\n", cmd);
		exit(1);
	}
}

static void walk_or_die(struct guard_git_tree *t, const char *git, struct guard_git_scan *scan)
{
	int fd = open(git, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct cp_error *err = NULL;
	int r = fd < 0 ? -1 : guard_git_tree_walk(t, fd, scan, &err);
	if (fd >= 0)
		close(fd);
	if (r != 0) {
		fprintf(stderr, "git_tree_bench: walk: %s\n", err ? err->message : "something refused");
		exit(1);
	}
}

/* Mean µs of n walks of t. */
static double timed(struct guard_git_tree *t, const char *git, int n, size_t *ret_reread)
{
	double t0 = now_us();
	size_t reread = 0;
	for (int i = 0; i < n; i++) {
		struct guard_git_scan scan;
		walk_or_die(t, git, &scan);
		reread += scan.reread;
		guard_git_scan_clear(&scan);
	}
	*ret_reread = reread;
	return (now_us() - t0) / n;
}

int main(int argc, char **argv)
{
	char dir[256] = "/tmp/c2s-gittree-bench-XXXXXX";
	int own = argc < 2;
	if (own ? !mkdtemp(dir) : snprintf(dir, sizeof(dir), "%s", argv[1]) < 0)
		return 1;
	int objects = argc > 2 ? atoi(argv[2]) : 5000, refs = argc > 3 ? atoi(argv[3]) : 300;
	char cmd[1024], git[300];
	snprintf(git, sizeof(git), "%s/.git", dir);
	snprintf(cmd, sizeof(cmd),
	         "set -e; cd %s; export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1; git init -q -b main; "
	         "git -c user.name=b -c user.email=b@b commit -q --allow-empty -m one; mkdir -p /tmp/c2s-gtb-$$; "
	         "for i in $(seq %d); do echo \"object $i $$\" > /tmp/c2s-gtb-$$/$i; done; "
	         "ls -d /tmp/c2s-gtb-$$/* | git hash-object -w --stdin-paths > /dev/null; rm -rf /tmp/c2s-gtb-$$; "
	         "h=$(git rev-parse HEAD); for i in $(seq %d); do echo \"create refs/heads/b$i $h\"; done | "
	         "git update-ref --stdin",
	         dir, objects, refs);
	run(cmd);
	usleep(300 * 1000); /* past the walker's racy window */

	struct guard_git_tree *t = guard_git_tree_new(-1);
	struct guard_git_scan scan;
	double t0 = now_us();
	walk_or_die(t, git, &scan);
	printf("first walk: %.0f us (%zu entries, %zu directories)\n", now_us() - t0, scan.entries, scan.dirs);
	guard_git_scan_clear(&scan);
	usleep(300 * 1000);
	size_t reread;
	double idle = timed(t, git, 2000, &reread);
	printf("walk, nothing changed: %.1f us per call (mean of 2000; %zu directories read again)\n", idle, reread);

	int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	struct guard_git_tree *w = guard_git_tree_new(in);
	walk_or_die(w, git, &scan);
	guard_git_scan_clear(&scan);
	usleep(300 * 1000);
	double watched = timed(w, git, 2000, &reread);
	printf("walk with inotify watches, nothing changed: %.1f us per call (watch errno %d)\n", watched,
	       guard_git_tree_watch_errno(w));

	snprintf(cmd, sizeof(cmd),
	         "cd %s && echo one-more | GIT_CONFIG_NOSYSTEM=1 git hash-object -w --stdin >/dev/null", dir);
	run(cmd);
	t0 = now_us();
	walk_or_die(t, git, &scan);
	printf("walk after one new object: %.0f us (%zu directories read again)\n", now_us() - t0, scan.reread);
	guard_git_scan_clear(&scan);

	guard_git_tree_free(w);
	close(in);
	guard_git_tree_free(t);
	if (own) {
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		run(cmd);
	}
	return 0;
}
