/* test_base_child.c: the bounded child runner (base/child.c, issue 23)
 * attacked with what a hostile input makes a program do: run forever
 * (wall deadline, whole group, a grandchild included), spin (CPU), write
 * without end (file size), print without end (stdout bound), a program
 * that is not there; and the plain case: stdin in, stdout out. The memory
 * ceiling is attacked with real git and the delta bomb in
 * test_lifecycle_save_bounds.c. */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cancel.h"
#include "base/child.h"

static const char *const env[] = {"PATH=/usr/bin:/bin", "LC_ALL=C", NULL};

static struct child_result sh(const char *script, struct child_limits lim, const char *in)
{
	const char *argv[] = {"/bin/sh", "-c", script, NULL};
	struct child_spec s = {.path = "/bin/sh",
	                       .argv = argv,
	                       .envp = env,
	                       .in = in,
	                       .in_len = in ? strlen(in) : 0,
	                       .in_fd = -1,
	                       .out_max = 4096,
	                       .limits = lim};
	struct child_result r;
	struct cp_error *err = NULL;
	cr_assert_eq(child_run(&s, &r, &err), 0, "%s", err ? err->message : "");
	return r;
}

Test(base_child, stdin_in_stdout_out_and_the_exit_code)
{
	struct child_result r = sh("cat; echo err >&2; exit 3", (struct child_limits){.wall_ms = 10000}, "hello");
	cr_expect(r.exited && r.code == 3);
	cr_expect_str_eq(r.out, "hello");
	cr_expect_str_eq(r.err_tail, "err\n");
	cr_expect_eq(r.timed_out, 0);
	child_result_clear(&r);
	/* A child that never reads its stdin cannot hurt the caller (no SIGPIPE). */
	char *big = malloc(1 << 20);
	memset(big, 'x', (1 << 20) - 1);
	big[(1 << 20) - 1] = '\0';
	r = sh("exit 0", (struct child_limits){.wall_ms = 10000}, big);
	cr_expect(r.exited && r.code == 0);
	child_result_clear(&r);
	free(big);
}

Test(base_child, stdout_past_its_bound_is_dropped_and_said)
{
	struct child_result r =
	    sh("head -c 100000 /dev/zero | tr '\\0' a", (struct child_limits){.wall_ms = 10000}, NULL);
	cr_expect(r.exited && r.code == 0);
	cr_expect_eq(r.out_over, 1);
	cr_expect_leq(r.out_len, 4096);
	child_result_clear(&r);
}

Test(base_child, the_wall_deadline_kills_the_whole_group)
{
	/* The grandchild's pid comes out first, then the shell waits forever. */
	struct child_result r = sh("sleep 300 & echo $!; wait", (struct child_limits){.wall_ms = 700}, NULL);
	cr_expect_eq(r.timed_out, 1);
	cr_expect(!r.exited && r.signal == SIGKILL);
	cr_expect_lt(r.wall_ms, 5000);
	pid_t g = (pid_t)atoi(r.out);
	cr_assert_gt(g, 1, "the grandchild's pid: %s", r.out);
	/* Gone, or a zombie of its new parent: never running on. */
	for (int i = 0; i < 50; i++) {
		char path[64], stat[256] = "";
		snprintf(path, sizeof path, "/proc/%d/stat", (int)g);
		FILE *f = fopen(path, "r");
		if (!f)
			break;
		size_t n = fread(stat, 1, sizeof stat - 1, f);
		fclose(f);
		stat[n] = '\0';
		const char *close_paren = strrchr(stat, ')');
		if (close_paren && close_paren[2] == 'Z')
			break;
		cr_expect_lt(i, 49, "the grandchild %d still runs: %s", (int)g, stat);
		usleep(20000);
	}
	child_result_clear(&r);
}

Test(base_child, a_spinning_child_meets_the_cpu_bound)
{
	struct child_result r =
	    sh("while :; do :; done", (struct child_limits){.cpu_seconds = 1, .wall_ms = 20000}, NULL);
	/* rusage's CPU figures are sampled: the kernel's own count, which
	 * RLIMIT_CPU uses, can be ahead of them under load. */
	cr_expect(!r.timed_out && !r.exited && (r.signal == SIGXCPU || r.signal == SIGKILL) && r.cpu_ms >= 500,
	          "ended by %s %d after %ld ms of CPU, %ld ms (timed out: %d)", r.exited ? "exit" : "signal",
	          r.exited ? r.code : r.signal, r.cpu_ms, r.wall_ms, r.timed_out);
	child_result_clear(&r);
}

Test(base_child, a_writer_meets_the_file_bound)
{
	char path[] = "/tmp/c2s-fsize-XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	close(fd);
	char script[200];
	snprintf(script, sizeof script, "head -c 3000000 /dev/zero > %s", path);
	struct child_result r = sh(script, (struct child_limits){.file_bytes = 1 << 20, .wall_ms = 10000}, NULL);
	cr_expect(!(r.exited && r.code == 0), "the write of 3 MB with a 1 MiB bound succeeded");
	struct stat st;
	cr_assert_eq(stat(path, &st), 0);
	cr_expect_leq(st.st_size, 1 << 20);
	unlink(path);
	child_result_clear(&r);
}

Test(base_child, a_missing_program_is_unavailable)
{
	const char *argv[] = {"/nonexistent/prog", NULL};
	struct child_spec s = {.path = "/nonexistent/prog",
	                       .argv = argv,
	                       .envp = env,
	                       .in_fd = -1,
	                       .out_max = 10,
	                       .limits = {.wall_ms = 1000}};
	struct child_result r;
	struct cp_error *err = NULL;
	cr_assert_eq(child_run(&s, &r, &err), -1);
	cr_expect_eq(err->code, CP_ERR_UNAVAILABLE);
	cr_expect_eq(err->errnum, ENOENT);
	cp_error_free(err);
}

struct fire_later {
	struct cp_cancel *c;
	unsigned ms;
};

static void *fire_after(void *arg)
{
	struct fire_later *f = arg;
	usleep(f->ms * 1000u);
	cp_cancel_fire(f->c);
	return NULL;
}

/* The owner of a long child (the page's doctor run) stops it: a cancel from
 * another thread kills the whole group at once, long before the deadline. */
Test(base_child, a_cancel_kills_the_group_before_the_deadline)
{
	struct cp_cancel c;
	cp_cancel_init(&c);
	struct fire_later f = {&c, 200};
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, fire_after, &f), 0);
	const char *argv[] = {"/bin/sh", "-c", "sleep 60 & sleep 60; echo never", NULL};
	struct child_spec s = {.path = "/bin/sh",
	                       .argv = argv,
	                       .envp = env,
	                       .in_fd = -1,
	                       .out_max = 4096,
	                       .limits = {.wall_ms = 60000},
	                       .cancel = &c};
	struct child_result r;
	struct cp_error *err = NULL;
	cr_assert_eq(child_run(&s, &r, &err), 0, "%s", err ? err->message : "");
	pthread_join(t, NULL);
	cr_expect_eq(r.cancelled, 1);
	cr_expect_eq(r.timed_out, 0);
	cr_expect_eq(r.exited, 0, "killed, not exited");
	cr_expect_lt(r.wall_ms, 5000, "stopped within %ld ms", r.wall_ms);
	cr_expect_str_eq(r.out, "");
	child_result_clear(&r);
	/* Fired before the start: the child does not outlive the call either. */
	const char *argv2[] = {"/bin/sh", "-c", "sleep 60", NULL};
	s.argv = argv2;
	cr_assert_eq(child_run(&s, &r, &err), 0);
	cr_expect_eq(r.cancelled, 1);
	cr_expect_lt(r.wall_ms, 5000);
	child_result_clear(&r);
	cp_cancel_destroy(&c);
}

Test(base_child, stdout_into_a_file_is_bounded_by_the_file_bound)
{
	char path[] = "/tmp/chat2sbx-child-out-XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	unlink(path);
	const char *argv[] = {"/bin/sh", "-c", "printf 'abc'; head -c 100000 /dev/zero", NULL};
	struct child_spec s = {.path = "/bin/sh",
	                       .argv = argv,
	                       .envp = env,
	                       .in_fd = -1,
	                       .out_fd = fd,
	                       .out_max = 16,
	                       .limits = {.file_bytes = 4096, .wall_ms = 10000}};
	struct child_result r;
	struct cp_error *err = NULL;
	cr_assert_eq(child_run(&s, &r, &err), 0, "%s", err ? err->message : "");
	/* The file holds the bound and no more; head met SIGXFSZ (or EFBIG). */
	cr_expect_eq(lseek(fd, 0, SEEK_END), 4096);
	cr_expect(!(r.exited && r.code == 0), "the writer did not finish");
	cr_expect_eq(r.out_len, 0, "nothing is collected");
	cr_expect_eq(r.out_over, 0);
	char head[4] = "";
	cr_expect_eq(pread(fd, head, 3, 0), 3);
	cr_expect_str_eq(head, "abc");
	child_result_clear(&r);
	close(fd);
}
