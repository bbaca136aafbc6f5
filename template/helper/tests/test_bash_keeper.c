/* test_bash_keeper.c: every process a session starts ends with it. The loop
 * runs in a child over pipes (harness.c); each session's shell runs below
 * its keeper (keeper.h), so bash.stop, timeout_ms and the helper's own stop
 * reach processes that called setsid or double-forked, before and after the
 * shell's exit; a keeper killed or stopped from inside the sandbox does not
 * leave a session behind; exit codes, signals and pids are as before; the
 * keeper holds none of the helper's descriptors. */
#include <criterion/criterion.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../keeper.h"
#include "../proto.h"
#include "../spare.h"
#include "harness.h"

static void stop_clean(struct harness *h)
{
	int st = harness_stop(h);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "helper loop ended with status 0x%x", st);
}

/* bash.start of command (a JSON string body, already escaped) with extra
 * parameters (",\"k\":v" or ""); the result. */
static json_object *start(struct harness *h, int64_t id, const char *sid, const char *command, const char *extra,
                          int yield_ms)
{
	json_object *r = harness_call(h, id, yield_ms + 10000,
	                              "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":\"bash.start\",\"params\":{"
	                              "\"session_id\":\"%s\",\"command\":\"%s\",\"yield_time_ms\":%d%s}}",
	                              (long long)id, sid, command, yield_ms, extra);
	cr_assert_not_null(r, "bash.start of '%s' failed", sid);
	return r;
}

static json_object *simple(struct harness *h, int64_t id, const char *method, const char *sid)
{
	json_object *r = harness_call(h, id, 15000,
	                              "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":\"%s\",\"params\":{"
	                              "\"session_id\":\"%s\"}}",
	                              (long long)id, method, sid);
	cr_assert_not_null(r, "%s of '%s' failed", method, sid);
	return r;
}

/* A snapshot of an ended session: status, exit code and signal name (NULL:
 * none). r is borrowed. */
static void assert_ended(json_object *r, const char *status, int exit_code, const char *signal)
{
	cr_assert_str_eq(jstr(r, "status"), status, "%s", json_object_to_json_string(r));
	cr_assert_eq(jint(r, "exit_code"), exit_code, "%s", json_object_to_json_string(r));
	if (signal)
		cr_assert_str_eq(jstr(r, "signal"), signal);
	else
		cr_assert_null(jstr(r, "signal"));
}

/* Polls while the session runs (at most 20 polls); the last snapshot. */
static json_object *poll_while_running(struct harness *h, json_object *r, const char *sid)
{
	for (int k = 0; strcmp(jstr(r, "status"), "running") == 0 && k < 20; k++) {
		json_object_put(r);
		r = simple(h, 9000 + k, "bash.poll", sid);
	}
	return r;
}

/* Field n (1-based, proc(5)) of /proc/PID/stat, after the command name;
 * -1 when the process is gone. */
static long stat_field(pid_t pid, int n)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t len = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[len] = '\0';
	char *p = strrchr(buf, ')');
	if (!p)
		return -1;
	p += 2; /* field 3, the state */
	for (int i = 3; i < n && p; i++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	return p ? strtol(p, NULL, 10) : -1;
}

static pid_t parent_of(pid_t pid)
{
	return (pid_t)stat_field(pid, 4);
}

static pid_t session_of(pid_t pid)
{
	return (pid_t)stat_field(pid, 6);
}

/* Alive and not a zombie. */
static bool alive(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	size_t len = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[len] = '\0';
	char *p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

/* Gone entirely: not even a zombie (whoever adopted it reaped it). */
static bool gone(pid_t pid)
{
	return kill(pid, 0) < 0 && errno == ESRCH;
}

static bool wait_gone(pid_t pid, int timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;
	while (!gone(pid) && now_ms() < deadline)
		usleep(20 * 1000);
	return gone(pid);
}

/* The pid a command wrote into the workspace file name, waiting for it. */
static pid_t pid_file(struct harness *h, const char *name)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/%s", h->workspace, name);
	int64_t deadline = now_ms() + 10000;
	for (;;) {
		FILE *f = fopen(path, "r");
		long v = 0;
		if (f) {
			if (fscanf(f, "%ld", &v) != 1)
				v = 0;
			fclose(f);
		}
		if (v > 1)
			return (pid_t)v;
		cr_assert_lt(now_ms(), deadline, "the command did not write %s", name);
		usleep(20 * 1000);
	}
}

/* How many live processes have marker in their command line. */
static int count_marked(const char *marker)
{
	DIR *d = opendir("/proc");
	cr_assert_not_null(d);
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		char path[300], buf[4096];
		snprintf(path, sizeof path, "/proc/%s/cmdline", de->d_name);
		int fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		ssize_t len = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (len <= 0)
			continue;
		for (ssize_t i = 0; i < len; i++)
			if (!buf[i])
				buf[i] = ' ';
		buf[len] = '\0';
		if (strstr(buf, marker) && alive((pid_t)atoi(de->d_name)))
			n++;
	}
	closedir(d);
	return n;
}

/* One process that left the shell's session with setsid, one daemonized
 * by a double fork (setsid, stdio to /dev/null, its parent gone), both
 * writing their pids into the workspace (files P-setsid.pid, P-daemon.pid). */
#define ESCAPEES_AS(p)                                                                                                 \
	"setsid sleep 300 & echo $! > " p "-setsid.pid; "                                                              \
	"( setsid sh -c 'sleep 301 & echo $! > " p "-daemon.pid' </dev/null >/dev/null 2>&1 & ); "
#define ESCAPEES ESCAPEES_AS("esc")

/* Waits (bounded) until pid leads a session of its own: setsid runs a
 * moment after its pid was written. */
static pid_t session_settled(pid_t pid)
{
	int64_t deadline = now_ms() + 5000;
	while (session_of(pid) != pid && now_ms() < deadline)
		usleep(10 * 1000);
	return session_of(pid);
}

/* Whether pid is a keeper (its command name). */
static bool is_keeper(pid_t pid)
{
	char path[64], comm[64] = "";
	snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
	FILE *f = pid > 0 ? fopen(path, "r") : NULL;
	if (!f)
		return false;
	bool yes = fgets(comm, sizeof comm, f) && strcmp(comm, KEEPER_ARGV0 "\n") == 0;
	fclose(f);
	return yes;
}

/* Both escapees run and really left the shell's process group and session
 * (the old kill(-pgid) could not reach them); returns the shell's keeper. */
static pid_t escapees_check(pid_t shell, pid_t setsid_pid, pid_t daemon_pid)
{
	cr_assert(alive(setsid_pid) && alive(daemon_pid), "an escapee is not running");
	cr_assert_eq(session_settled(setsid_pid), setsid_pid, "setsid sleep did not get its own session");
	cr_assert_neq(session_of(daemon_pid), session_of(shell), "the daemon stayed in the shell's session");
	/* The daemon's pid is written by its parent sh, which exits a moment
	 * later: wait (bounded) for the re-parenting. Orphans go to the keeper,
	 * the nearest subreaper, not to the helper. */
	int64_t deadline = now_ms() + 5000;
	while (!is_keeper(parent_of(daemon_pid)) && now_ms() < deadline)
		usleep(10 * 1000);
	pid_t keeper = parent_of(daemon_pid);
	cr_assert(is_keeper(keeper), "the daemon's parent %d is no keeper", (int)keeper);
	pid_t setsid_parent = parent_of(setsid_pid);
	cr_assert(setsid_parent == shell || setsid_parent == keeper, "setsid sleep's parent is %d", (int)setsid_parent);
	return keeper;
}

/* Whether any live process has parent pid. */
static bool has_children(pid_t pid)
{
	DIR *d = opendir("/proc");
	cr_assert_not_null(d);
	bool found = false;
	struct dirent *de;
	while (!found && (de = readdir(d)))
		if (isdigit((unsigned char)de->d_name[0])) {
			pid_t p = (pid_t)atoi(de->d_name);
			found = parent_of(p) == pid && alive(p);
		}
	closedir(d);
	return found;
}

/* A keeper whose session is over either exited or waits idle, with no
 * process left below it, for the next session (keeper.h). */
static bool keeper_released(pid_t keeper, int timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;
	while (!gone(keeper) && has_children(keeper) && now_ms() < deadline)
		usleep(20 * 1000);
	return gone(keeper) || !has_children(keeper);
}

static void escapees_case(bool by_timeout, bool shell_exits)
{
	struct harness h;
	harness_start(&h);
	const char *tail = shell_exits ? "echo ready; exit 7" : "echo ready; sleep 1000";
	char command[512], extra[64] = "";
	snprintf(command, sizeof command, "%s%s", ESCAPEES, tail);
	if (by_timeout)
		snprintf(extra, sizeof extra, ",\"timeout_ms\":%d", shell_exits ? 3000 : 4000);
	/* The yield is generous: on a loaded machine the shell may take a while to
	 * start everything and print "ready" (the reply comes at the yield). */
	json_object *r = start(&h, 1, "bash_esc", command, extra, shell_exits ? 5000 : 2500);
	pid_t shell = (pid_t)jint(r, "pid");
	cr_assert_str_eq(jstr(r, "output"), "ready\n");
	cr_assert_str_eq(jstr(r, "status"), shell_exits ? "exited" : "running");
	json_object_put(r);
	pid_t setsid_pid = pid_file(&h, "esc-setsid.pid"), daemon_pid = pid_file(&h, "esc-daemon.pid");
	pid_t keeper = escapees_check(shell, setsid_pid, daemon_pid);

	if (by_timeout) {
		r = simple(&h, 2, "bash.poll", "bash_esc");
		if (!shell_exits) {
			/* The poll returns at the shell's end: the expiry. */
			while (strcmp(jstr(r, "status"), "running") == 0) {
				json_object_put(r);
				r = simple(&h, 3, "bash.poll", "bash_esc");
			}
		}
		cr_assert_str_eq(jstr(r, "status"), shell_exits ? "exited" : "timed_out");
		json_object_put(r);
		cr_assert(wait_gone(setsid_pid, 10000), "setsid sleep survived timeout_ms");
		cr_assert(wait_gone(daemon_pid, 10000), "the daemon survived timeout_ms");
	} else {
		r = simple(&h, 2, "bash.stop", "bash_esc");
		cr_assert_str_eq(jstr(r, "status"), shell_exits ? "exited" : "killed");
		cr_assert_eq(jint(r, "exit_code"), shell_exits ? 7 : 128 + SIGTERM);
		json_object_put(r);
		/* The reply waits until nothing of the session is left. */
		cr_assert(gone(setsid_pid), "setsid sleep survived bash.stop");
		cr_assert(gone(daemon_pid), "the daemon survived bash.stop");
	}
	cr_assert(keeper_released(keeper, 5000), "the keeper still holds processes once its session was empty");
	r = simple(&h, 4, "bash.poll", "bash_esc");
	cr_assert_str_eq(jstr(r, "status"), shell_exits ? "exited" : by_timeout ? "timed_out" : "killed");
	cr_assert_eq(jint(r, "exit_code"), shell_exits ? 7 : 128 + SIGTERM);
	json_object_put(r);
	stop_clean(&h);
}

Test(bash_keeper, escapees_gone_after_stop_while_the_shell_runs)
{
	escapees_case(false, false);
}

Test(bash_keeper, escapees_gone_after_stop_once_the_shell_exited)
{
	escapees_case(false, true);
}

Test(bash_keeper, escapees_gone_after_timeout_while_the_shell_runs)
{
	escapees_case(true, false);
}

Test(bash_keeper, escapees_gone_after_timeout_once_the_shell_exited)
{
	escapees_case(true, true);
}

/* What a session reports is the shell's, as before the keeper: its pid
 * (also its process group), exit codes, 128+N and the signal's name. */
Test(bash_keeper, pid_exit_codes_and_signals_are_the_shells)
{
	struct harness h;
	harness_start(&h);
	json_object *r = start(&h, 1, "bash_pid", "echo $$; cut -d' ' -f5 /proc/$$/stat; exit 3", "", 5000);
	char want[64];
	snprintf(want, sizeof want, "%lld\n%lld\n", (long long)jint(r, "pid"), (long long)jint(r, "pid"));
	cr_assert_str_eq(jstr(r, "output"), want);
	assert_ended(r, "exited", 3, NULL);
	cr_assert_null(jstr(r, "reason"));
	json_object_put(r);
	r = start(&h, 2, "bash_usr1", "kill -USR1 $$", "", 5000);
	assert_ended(r, "exited", 128 + SIGUSR1, "SIGUSR1");
	json_object_put(r);
	/* A stop of a shell that ignores SIGTERM: SIGKILL after the grace. */
	r = start(&h, 3, "bash_stubborn", "trap '' TERM; echo go; sleep 1000; true", "", 300);
	cr_assert_str_eq(jstr(r, "output"), "go\n");
	json_object_put(r);
	int64_t t0 = now_ms();
	r = simple(&h, 4, "bash.stop", "bash_stubborn");
	cr_assert_geq(now_ms() - t0, PROTO_KILL_GRACE_MS - 100);
	assert_ended(r, "killed", 128 + SIGKILL, "SIGKILL");
	json_object_put(r);
	/* bash.list and the snapshot agree on the pid. */
	r = harness_call(&h, 5, 5000, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"bash.list\",\"params\":{}}");
	json_object *e = json_object_array_get_idx(json_object_object_get(r, "sessions"), 0);
	cr_assert_eq(jint(e, "pid"), atoll(want));
	json_object_put(r);
	stop_clean(&h);
}

/* kill -9 of the keeper (the shell's parent) from inside the sandbox: the
 * helper ends the session with a reason and stops what is left, also the
 * orphans that went from the dead keeper to the helper. */
Test(bash_keeper, keeper_killed_from_inside_ends_the_session)
{
	struct harness h;
	harness_start(&h);
	json_object *r = start(&h, 1, "bash_kk",
	                       "(sleep 302 & echo $! > orphan.pid); setsid sleep 303 & echo $! > setsid.pid; "
	                       "echo $PPID > keeper.pid; kill -9 $PPID; sleep 1000",
	                       "", 8000);
	cr_assert_str_eq(jstr(r, "status"), "killed");
	cr_assert_eq(jint(r, "exit_code"), 128 + SIGTERM);
	const char *reason = jstr(r, "reason");
	cr_assert(reason && strstr(reason, "keeper") && strstr(reason, "SIGKILL"), "reason: %s", reason);
	json_object_put(r);
	pid_t orphan = pid_file(&h, "orphan.pid"), escapee = pid_file(&h, "setsid.pid");
	pid_t keeper = pid_file(&h, "keeper.pid");
	cr_assert(gone(keeper));
	r = simple(&h, 2, "bash.stop", "bash_kk");
	cr_assert_str_eq(jstr(r, "status"), "killed");
	json_object_put(r);
	cr_assert(gone(orphan), "the keeper's orphan survived");
	cr_assert(gone(escapee), "setsid sleep survived");
	/* The session is over; the helper goes on. */
	r = start(&h, 3, "bash_after", "echo fine", "", 5000);
	cr_assert_str_eq(jstr(r, "output"), "fine\n");
	json_object_put(r);
	stop_clean(&h);
}

/* A keeper stopped from inside the sandbox would never report the shell's
 * end: the helper continues it. */
Test(bash_keeper, stopped_keeper_is_continued)
{
	struct harness h;
	harness_start(&h);
	json_object *r = start(&h, 1, "bash_ks", "kill -STOP $PPID; sleep 0.3; echo done; exit 3", "", 8000);
	cr_assert_str_eq(jstr(r, "status"), "exited");
	cr_assert_eq(jint(r, "exit_code"), 3);
	cr_assert_str_eq(jstr(r, "output"), "done\n");
	json_object_put(r);
	stop_clean(&h);
}

/* A loop that keeps forking orphans that ignore SIGTERM while it is being
 * stopped: SIGKILL rounds catch those forked meanwhile, and bash.stop
 * answers only once none is left. */
Test(bash_keeper, fork_loop_is_stopped)
{
	struct harness h;
	harness_start(&h);
	/* Every other child leaves the session with setsid (its own group and
	 * session), the rest are orphaned by their subshell at once. */
	json_object *r = start(&h, 1, "bash_loop",
	                       "(trap '' TERM; for i in $(seq 3000); do (setsid sleep 4243.25 &); (sleep 4243.25 &); "
	                       "done) & sleep 1000",
	                       "", 400);
	json_object_put(r);
	cr_assert_gt(count_marked("4243.25"), 0, "the loop did not start");
	r = simple(&h, 2, "bash.stop", "bash_loop");
	cr_assert_str_eq(jstr(r, "status"), "killed");
	json_object_put(r);
	cr_assert_eq(count_marked("4243.25"), 0, "processes of the loop survived bash.stop");
	stop_clean(&h);
}

/* SIGTERM to the helper (docker stop) ends every session's processes. */
Test(bash_keeper, helper_shutdown_ends_escapees)
{
	struct harness h;
	harness_start(&h);
	json_object *r = start(&h, 1, "bash_sd", ESCAPEES "echo ready; sleep 1000", "", 300);
	pid_t shell = (pid_t)jint(r, "pid");
	json_object_put(r);
	r = start(&h, 2, "bash_sd2", ESCAPEES_AS("sd2") "echo ready; exit 0", "", 5000);
	json_object_put(r);
	pid_t setsid_pid = pid_file(&h, "esc-setsid.pid"), daemon_pid = pid_file(&h, "esc-daemon.pid");
	escapees_check(shell, setsid_pid, daemon_pid);
	pid_t setsid2 = pid_file(&h, "sd2-setsid.pid"), daemon2 = pid_file(&h, "sd2-daemon.pid");
	cr_assert_eq(session_settled(setsid2), setsid2);
	stop_clean(&h);
	cr_assert(gone(setsid_pid), "setsid sleep survived the helper's stop");
	cr_assert(gone(daemon_pid), "the daemon survived the helper's stop");
	cr_assert(gone(setsid2) && gone(daemon2), "what an exited shell left survived the helper's stop");
}

/* On a terminal the keeper holds the controlling terminal: a program that
 * closes its end of the terminal before it exits is not hung up (it was,
 * about one run in three, as the session leader); ^C still reaches the
 * shell's foreground group; the shell's jobs still get SIGHUP when it
 * exits, as when the shell led the terminal. */
Test(bash_keeper, tty_sessions_behind_the_keeper)
{
	struct harness h;
	harness_start(&h);
	int64_t id = 1;
	for (int i = 0; i < 20; i++, id += 3) {
		char sid[32];
		snprintf(sid, sizeof sid, "bash_wc%d", i);
		json_object_put(start(&h, id, sid, "wc -c", ",\"tty\":true", 0));
		json_object *r = harness_call(&h, id + 1, 5000,
		                              "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":\"bash.input\",\"params\":{"
		                              "\"session_id\":\"%s\",\"data\":\"hello\",\"close\":true}}",
		                              (long long)(id + 1), sid);
		json_object_put(r);
		r = harness_call(&h, id + 2, 15000,
		                 "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":\"bash.poll\",\"params\":{"
		                 "\"session_id\":\"%s\",\"yield_time_ms\":10000}}",
		                 (long long)(id + 2), sid);
		/* The first poll may come before the exit (output first). */
		r = poll_while_running(&h, r, sid);
		assert_ended(r, "exited", 0, NULL);
		json_object_put(r);
	}
	json_object_put(start(&h, 100, "bash_int", "sleep 1000", ",\"tty\":true", 200));
	json_object_put(harness_call(&h, 101, 5000,
	                             "{\"jsonrpc\":\"2.0\",\"id\":101,\"method\":\"bash.input\",\"params\":{"
	                             "\"session_id\":\"bash_int\",\"data\":\"\\u0003\"}}"));
	json_object *r = poll_while_running(&h, simple(&h, 102, "bash.poll", "bash_int"), "bash_int");
	assert_ended(r, "exited", 128 + SIGINT, "SIGINT");
	json_object_put(r);
	r = start(&h, 200, "bash_job", "sleep 1000 & echo $! > job.pid; exit 0", ",\"tty\":true", 5000);
	cr_assert_str_eq(jstr(r, "status"), "exited");
	json_object_put(r);
	cr_assert(wait_gone(pid_file(&h, "job.pid"), 5000), "the job of a tty shell did not get SIGHUP at its exit");
	stop_clean(&h);
}

/* The keeper is the helper's child, holds only /dev/null and its socket,
 * and, like the helper, cannot be reached through /proc by a command
 * running without CAP_SYS_PTRACE (as in a container). */
Test(bash_keeper, keeper_holds_nothing_of_the_helper)
{
	struct harness h;
	harness_start_flags(&h, HARNESS_NO_SYS_PTRACE);
	json_object *r = start(&h, 1, "bash_probe",
	                       "K=$PPID; echo $K > keeper.pid; "
	                       "ls -l /proc/$K/fd/ 2>&1 | grep -q -- '->' && echo LEAK:fdlist; "
	                       ": >> /proc/$K/fd/3 && echo LEAK:fd3; "
	                       ": < /proc/$K/fd/0 && echo LEAK:fd0; "
	                       "echo comm=$(cat /proc/$K/comm); sleep 1000",
	                       "", 1000);
	const char *out = jstr(r, "output");
	cr_assert_null(strstr(out, "LEAK"), "%s", out);
	cr_assert(strstr(out, "comm=" KEEPER_ARGV0 "\n"), "%s", out);
	json_object_put(r);
	pid_t keeper = pid_file(&h, "keeper.pid");
	cr_assert_eq(parent_of(keeper), h.pid);
	char dir[64];
	snprintf(dir, sizeof dir, "/proc/%d/fd", (int)keeper);
	DIR *d = opendir(dir);
	cr_assert_not_null(d, "cannot list %s: %s", dir, strerror(errno));
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char path[384], target[256];
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		ssize_t len = readlink(path, target, sizeof target - 1);
		cr_assert_gt(len, 0);
		target[len] = '\0';
		int fd = atoi(de->d_name);
		if (fd <= 2)
			cr_assert_str_eq(target, "/dev/null", "fd %d is %s", fd, target);
		else
			cr_assert(fd == 3 && strncmp(target, "socket:", 7) == 0, "fd %d is %s", fd, target);
		n++;
	}
	closedir(d);
	cr_assert_eq(n, 4);
	json_object_put(simple(&h, 2, "bash.stop", "bash_probe"));
	stop_clean(&h);
}

/* Stopping one session never touches another's processes, nor the
 * helper: neither through bash.stop nor when a keeper was killed and the
 * helper stops the orphans it adopted (the other session's processes are
 * below their own live keeper, not the helper's children). */
Test(bash_keeper, other_sessions_survive_a_stop)
{
	struct harness h;
	harness_start(&h);
	json_object *r = start(&h, 1, "bash_keep",
	                       "setsid sleep 305 & echo $! > keep_setsid.pid; (sleep 306 & echo $! > keep_orphan.pid); "
	                       "echo ready; sleep 1000",
	                       "", 300);
	cr_assert_str_eq(jstr(r, "output"), "ready\n");
	pid_t keep_shell = (pid_t)jint(r, "pid");
	json_object_put(r);
	pid_t keep_setsid = pid_file(&h, "keep_setsid.pid"), keep_orphan = pid_file(&h, "keep_orphan.pid");

	r = start(&h, 2, "bash_victim", ESCAPEES "echo ready; sleep 1000", "", 300);
	json_object_put(r);
	pid_t v_setsid = pid_file(&h, "esc-setsid.pid"), v_daemon = pid_file(&h, "esc-daemon.pid");
	json_object_put(simple(&h, 3, "bash.stop", "bash_victim"));
	cr_assert(gone(v_setsid) && gone(v_daemon), "the stopped session's escapees survived");
	cr_assert(alive(keep_shell) && alive(keep_setsid) && alive(keep_orphan),
	          "bash.stop of one session killed another's processes");

	/* A session that kills its own keeper: the helper stops what it adopted. */
	r = start(&h, 4, "bash_kk2", "(sleep 307 & echo $! > kk_orphan.pid); kill -9 $PPID; sleep 1000", "", 8000);
	cr_assert_str_eq(jstr(r, "status"), "killed", "%s", json_object_to_json_string(r));
	json_object_put(r);
	pid_t kk_orphan = pid_file(&h, "kk_orphan.pid");
	json_object_put(simple(&h, 5, "bash.stop", "bash_kk2"));
	cr_assert(gone(kk_orphan), "the dead keeper's orphan survived");
	cr_assert(alive(keep_shell) && alive(keep_setsid) && alive(keep_orphan),
	          "stopping a dead keeper's orphans killed another session's processes");
	cr_assert(alive(h.pid), "the helper was killed");
	r = harness_call(&h, 6, 5000,
	                 "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"bash.poll\",\"params\":{"
	                 "\"session_id\":\"bash_keep\",\"yield_time_ms\":0}}");
	cr_assert_not_null(r);
	cr_assert_str_eq(jstr(r, "status"), "running");
	json_object_put(r);
	json_object_put(simple(&h, 7, "bash.stop", "bash_keep"));
	cr_assert(gone(keep_setsid) && gone(keep_orphan));
	stop_clean(&h);
}

/* A keeper whose session is over serves the next one (its pid is the next
 * shell's parent) and still catches what that session leaves behind; the
 * keeper of a tty session (its controlling terminal) is never reused. */
Test(bash_keeper, idle_keeper_serves_the_next_session)
{
	struct harness h;
	harness_start(&h);
	pid_t parents[4];
	int reused = 0;
	for (int i = 0; i < 4; i++) {
		char sid[32];
		snprintf(sid, sizeof sid, "bash_reuse%d", i);
		json_object *r = start(&h, 1 + i, sid, "echo $PPID", "", 5000);
		assert_ended(r, "exited", 0, NULL);
		parents[i] = (pid_t)atoi(jstr(r, "output"));
		json_object_put(r);
		cr_assert_gt(parents[i], 1);
		reused += i > 0 && parents[i] == parents[i - 1];
	}
	cr_assert_gt(reused, 0, "no keeper served a second session (parents %d %d %d %d)", (int)parents[0],
	             (int)parents[1], (int)parents[2], (int)parents[3]);
	/* A session in a reused keeper: its escapees still end with bash.stop. */
	json_object *r = start(&h, 10, "bash_again", ESCAPEES_AS("again") "echo $PPID; exit 3", "", 5000);
	assert_ended(r, "exited", 3, NULL);
	json_object_put(r);
	pid_t setsid_pid = pid_file(&h, "again-setsid.pid"), daemon_pid = pid_file(&h, "again-daemon.pid");
	cr_assert_eq(session_settled(setsid_pid), setsid_pid);
	json_object_put(simple(&h, 11, "bash.stop", "bash_again"));
	cr_assert(gone(setsid_pid) && gone(daemon_pid), "an escapee of a reused keeper's session survived bash.stop");
	/* tty: its keeper exits with the session. */
	r = start(&h, 20, "bash_tty", "echo $PPID", ",\"tty\":true", 5000);
	assert_ended(r, "exited", 0, NULL);
	pid_t tty_keeper = (pid_t)atoi(jstr(r, "output"));
	json_object_put(r);
	cr_assert(wait_gone(tty_keeper, 5000), "the keeper of a tty session stayed");
	stop_clean(&h);
}

/* The idle keepers (spare.h: kept for the next bash.start) killed or
 * stopped from the sandbox: the next session still starts, in a keeper of
 * its own, and the helper does not answer a kill loop with a fork loop. */
Test(bash_keeper, spare_keeper_killed_or_stopped)
{
	struct harness h;
	harness_start(&h);
	/* The helper's other keepers: the idle ones (in the helper's
	 * session), never this session's own. */
	const char *others = "H=$(cut -d' ' -f4 /proc/$PPID/stat); for f in /proc/[0-9]*/stat; do "
	                     "{ read -r p c st pp rest < $f; } 2>/dev/null || continue; "
	                     "[ \\\"$c\\\" = '(chat2sbx-keeper)' ] && [ $pp = $H ] && [ $p != $PPID ] && echo $p; done";
	char command[1024];
	for (int round = 0; round < 2; round++) {
		const char *sig = round == 0 ? "KILL" : "STOP";
		/* A fresh idle keeper is started SPARE_DEFER_MS after this
		 * session took the last one: wait (bounded) until it is there. */
		snprintf(
		    command, sizeof command,
		    "others() { %s; }; for i in $(seq 200); do [ $(others | wc -l) -gt 0 ] && break; sleep 0.02; done; "
		    "n=0; for p in $(others); do kill -%s $p; n=$((n+1)); done; echo $n",
		    others, sig);
		char sid[32];
		snprintf(sid, sizeof sid, "bash_spare%d", round);
		json_object *r = start(&h, 10 * round + 1, sid, command, "", 5000);
		assert_ended(r, "exited", 0, NULL);
		int idle = atoi(jstr(r, "output"));
		cr_assert(idle >= 1 && idle <= SPARE_MAX, "%d idle keepers: %s", idle, jstr(r, "output"));
		json_object_put(r);
		snprintf(sid, sizeof sid, "bash_after%d", round);
		r = start(&h, 10 * round + 2, sid, "echo fine", "", 5000);
		assert_ended(r, "exited", 0, NULL);
		cr_assert_str_eq(jstr(r, "output"), "fine\n");
		json_object_put(r);
	}
	stop_clean(&h);
}
