/* test_proctree.c: the process table read from /proc and signals by
 * ancestry (proctree.h), on real processes forked here: every descendant of
 * a root is reached whatever its session, the spared root and everything
 * outside stay, zombies are skipped, and a table with a parent cycle (a
 * stale snapshot) neither loops nor counts the cycle in. */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../proctree.h"

/* A child that sleeps until killed (its parent death kills it too, so a
 * failed test leaves nothing behind). */
static pid_t sleeper(void)
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;)
			pause();
	}
	return pid;
}

/* A child that forks a grandchild in a new session, reports the
 * grandchild's pid on fd, then sleeps: root → (setsid) grandchild. */
static pid_t parent_of_escapee(pid_t *ret_grandchild)
{
	int p[2];
	cr_assert_eq(pipe(p), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(p[0]);
		pid_t g = fork();
		if (g == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			setsid();
			for (;;)
				pause();
		}
		if (write(p[1], &g, sizeof g) != sizeof g)
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	cr_assert_eq(read(p[0], ret_grandchild, sizeof *ret_grandchild), (ssize_t)sizeof *ret_grandchild);
	close(p[0]);
	return pid;
}

static bool alive(pid_t pid)
{
	int st;
	pid_t r = waitpid(pid, &st, WNOHANG);
	if (r == pid)
		return false; /* our child, just reaped */
	return kill(pid, 0) == 0;
}

/* The state letter of /proc/PID/stat, or 0 when it is gone. */
static char state_of(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t len = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[len] = '\0';
	char *p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

Test(proctree, scan_finds_this_process_and_its_parent)
{
	struct proctree t = {0};
	cr_assert_eq(proctree_scan(&t), 0);
	bool found = false;
	for (size_t i = 0; i < t.n; i++) {
		if (i > 0)
			cr_assert_gt(t.entries[i].pid, t.entries[i - 1].pid, "entries are sorted by pid");
		if (t.entries[i].pid == getpid()) {
			found = true;
			cr_assert_eq(t.entries[i].ppid, getppid());
			cr_assert_eq(t.entries[i].sid, getsid(0));
			cr_assert_not(t.entries[i].zombie);
		}
	}
	cr_assert(found);
	proctree_free(&t);
	cr_assert_eq(t.n, 0);
}

/* root (spared) → child → setsid grandchild; a sibling outside. */
Test(proctree, signal_reaches_every_descendant_and_spares_the_rest)
{
	pid_t grandchild;
	pid_t root = parent_of_escapee(&grandchild);
	pid_t outside = sleeper();
	struct proctree t = {0};
	/* The grandchild may not have called setsid yet: wait for it. */
	for (int i = 0; i < 500 && getsid(grandchild) != grandchild; i++)
		usleep(2000);
	cr_assert_eq(getsid(grandchild), grandchild);
	cr_assert_eq(proctree_scan(&t), 0);
	cr_assert_eq(proctree_signal(&t, &root, 1, &root, 1, 0), 1, "signal 0 counts the grandchild only");
	cr_assert_eq(proctree_signal(&t, &root, 1, &root, 1, SIGKILL), 1);
	for (int i = 0; i < 500 && state_of(grandchild) != 'Z'; i++)
		usleep(2000); /* its parent does not reap it */
	cr_assert_eq(state_of(grandchild), 'Z');
	cr_assert(alive(root), "the spared root was signalled");
	cr_assert(alive(outside), "a process outside the tree was signalled");
	cr_assert(alive(getpid()));
	/* Without spare the root goes too (its killed child is a zombie now,
	 * not counted); roots not in the table are ignored. */
	cr_assert_eq(proctree_scan(&t), 0);
	pid_t roots[] = {root, 999999999};
	cr_assert_eq(proctree_signal(&t, roots, 2, NULL, 0, SIGKILL), 1);
	waitpid(root, NULL, 0);
	cr_assert(alive(outside));
	reap(outside);
	proctree_free(&t);
}

Test(proctree, zombies_are_not_counted)
{
	pid_t child = fork();
	cr_assert_geq(child, 0);
	if (child == 0)
		_exit(0);
	siginfo_t si = {0};
	cr_assert_eq(waitid(P_PID, (id_t)child, &si, WEXITED | WNOWAIT), 0); /* a zombie now */
	struct proctree t = {0};
	cr_assert_eq(proctree_scan(&t), 0);
	pid_t self = getpid();
	/* Our other children (none but the zombie) would count. */
	cr_assert_eq(proctree_signal(&t, &self, 1, &self, 1, 0), 0);
	waitpid(child, NULL, 0);
	proctree_free(&t);
}

/* A snapshot read over time can link a process to a parent that links
 * back (pids reused while /proc was read): such a chain is outside every
 * root, and the walk ends. */
Test(proctree, a_parent_cycle_is_outside)
{
	pid_t a = sleeper(), b = sleeper();
	pid_t self = getpid();
	struct proctree t = {0};
	cr_assert_eq(proctree_scan(&t), 0);
	for (size_t i = 0; i < t.n; i++) {
		if (t.entries[i].pid == a)
			t.entries[i].ppid = b;
		else if (t.entries[i].pid == b)
			t.entries[i].ppid = a;
	}
	cr_assert_eq(proctree_signal(&t, &self, 1, &self, 1, 0), 0, "the cycle a <-> b is not below us");
	/* A root inside the cycle still has its descendants: the other one. */
	cr_assert_eq(proctree_signal(&t, &a, 1, &a, 1, 0), 1);
	reap(a);
	reap(b);
	proctree_free(&t);
}
