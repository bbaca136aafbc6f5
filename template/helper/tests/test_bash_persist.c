/* test_bash_persist.c: sessions survive a restart of the helper as records
 * (sessmeta.c + bash_restore): a session that had ended keeps its status,
 * exit code and undelivered output; one that was running is "lost" with a
 * reason and the rest of its log. The helper is stopped the way an engine
 * restart stops it (SIGTERM from outside) or the way a crash does
 * (SIGKILL), and started again on the same log directory (harness.c).
 * Also: as PID 1 of a pid namespace, a `kill -TERM 1` from a session is
 * ignored while a SIGTERM from outside stops the helper. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../bash.h"
#include "../loop.h"
#include "../sessmeta.h"
#include "harness.h"

#define RPC "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\",\"params\":%s}"

static json_object *call(struct harness *h, int id, const char *method, const char *params)
{
	json_object *r = harness_call(h, id, 10000, RPC, id, method, params);
	cr_assert_not_null(r, "%s %s failed", method, params);
	harness_ack(h, r, true); /* as the control plane's channel does */
	return r;
}

static json_object *start(struct harness *h, int id, const char *sid, const char *command, int yield_ms)
{
	char params[1024];
	snprintf(params, sizeof params, "{\"session_id\":\"%s\",\"command\":\"%s\",\"yield_time_ms\":%d}", sid, command,
	         yield_ms);
	return call(h, id, "bash.start", params);
}

static json_object *poll_session(struct harness *h, int id, const char *sid)
{
	char params[256];
	snprintf(params, sizeof params, "{\"session_id\":\"%s\",\"yield_time_ms\":0}", sid);
	return call(h, id, "bash.poll", params);
}

/* The entry of sid in a bash.list result (borrowed), or NULL. */
static json_object *listed(json_object *list, const char *sid)
{
	json_object *a = NULL;
	cr_assert(json_object_object_get_ex(list, "sessions", &a));
	for (size_t i = 0; i < json_object_array_length(a); i++) {
		json_object *o = json_object_array_get_idx(a, i);
		if (strcmp(jstr(o, "session_id"), sid) == 0)
			return o;
	}
	return NULL;
}

static char *read_log(struct harness *h, const char *sid)
{
	char path[PATH_MAX + BASH_ID_MAX + 8];
	snprintf(path, sizeof path, "%s/%s.log", h->logs, sid);
	FILE *f = fopen(path, "r");
	if (!f)
		return strdup("");
	char *buf = calloc(1, 65536);
	size_t n = fread(buf, 1, 65535, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* Waits (bounded) until the log of sid holds exactly want. */
static void wait_log(struct harness *h, const char *sid, const char *want)
{
	for (int i = 0; i < 500; i++) {
		char *got = read_log(h, sid);
		bool same = strcmp(got, want) == 0;
		free(got);
		if (same)
			return;
		usleep(20 * 1000);
	}
	cr_assert_fail("the log of %s never held '%s'", sid, want);
}

/* Waits (bounded) until bash.list shows sid ended (does not deliver output). */
static void wait_ended(struct harness *h, int *id, const char *sid)
{
	for (int i = 0; i < 500; i++) {
		json_object *l = call(h, (*id)++, "bash.list", "{}");
		const char *st = jstr(listed(l, sid), "status");
		bool ended = st && strcmp(st, "running") != 0;
		json_object_put(l);
		if (ended)
			return;
		usleep(20 * 1000);
	}
	cr_assert_fail("session %s never ended", sid);
}

static char *concat(const char *a, const char *b)
{
	char *s = NULL;
	cr_assert_geq(asprintf(&s, "%s%s", a ? a : "", b ? b : ""), 0);
	return s;
}

static void restart_keeps_sessions(int sig)
{
	struct harness h;
	harness_start(&h);
	int id = 1;
	json_object *hello1 = call(&h, id++, "hello", "{}");
	char *boot1 = strdup(jstr(hello1, "boot_id"));
	cr_assert_eq(strlen(boot1), 32);
	cr_assert_gt(jint(hello1, "started_at_ms"), 0);
	json_object_put(hello1);

	/* Ended, output delivered. */
	json_object *a = start(&h, id++, "bash_a", "echo a-out; exit 3", 10000);
	cr_assert_str_eq(jstr(a, "status"), "exited");
	cr_assert_eq(jint(a, "exit_code"), 3);
	cr_assert_str_eq(jstr(a, "output"), "a-out\n");
	json_object_put(a);
	/* Ended, output not delivered yet. */
	json_object *e = start(&h, id++, "bash_e", "echo e-out; exit 5", 0);
	char *e_first = strdup(jstr(e, "output"));
	json_object_put(e);
	wait_ended(&h, &id, "bash_e");
	/* Running, part of its output delivered. */
	json_object *b = start(&h, id++, "bash_b", "echo b1; sleep 0.3; echo b2; sleep 600", 0);
	char *b_first = strdup(jstr(b, "output"));
	int b_pid = (int)jint(b, "pid");
	json_object_put(b);
	wait_log(&h, "bash_b", "b1\nb2\n");

	harness_restart(&h, sig);
	if (sig == SIGKILL)
		kill(-b_pid,
		     SIGKILL); /* a crashed helper leaves its sessions behind; the restarted container would not */

	json_object *hello2 = call(&h, id++, "hello", "{}");
	cr_assert_str_neq(jstr(hello2, "boot_id"), boot1, "a new start has a new boot id");
	cr_assert_eq(jint(hello2, "sessions"), 3);
	cr_assert_eq(jint(hello2, "running"), 0);
	json_object_put(hello2);
	free(boot1);

	json_object *l = call(&h, id++, "bash.list", "{}");
	json_object *la = listed(l, "bash_a"), *lb = listed(l, "bash_b"), *le = listed(l, "bash_e");
	cr_assert(la && lb && le, "all three are listed: %s", json_object_to_json_string(l));
	cr_assert_str_eq(jstr(la, "status"), "exited");
	cr_assert_eq(jint(la, "exit_code"), 3);
	cr_assert_str_eq(jstr(la, "command"), "echo a-out; exit 3");
	cr_assert_str_eq(jstr(le, "status"), "exited");
	cr_assert_eq(jint(le, "exit_code"), 5);
	cr_assert_str_eq(jstr(lb, "status"), "lost");
	cr_assert_eq(jint(lb, "exit_code"), -1, "a lost session has no exit code");
	cr_assert_not_null(strstr(jstr(lb, "reason"), "the sandbox restarted at "), "%s", jstr(lb, "reason"));
	cr_assert_not_null(strstr(jstr(lb, "reason"), "the command was interrupted"), "%s", jstr(lb, "reason"));
	cr_assert_not(jbool(lb, "stdin_open"));
	json_object_put(l);

	/* What was not delivered before the restart comes now, once. */
	json_object *pa = poll_session(&h, id++, "bash_a");
	cr_assert_str_eq(jstr(pa, "status"), "exited");
	cr_assert_eq(jint(pa, "exit_code"), 3);
	cr_assert_str_eq(jstr(pa, "output"), "");
	json_object_put(pa);
	json_object *pe = poll_session(&h, id++, "bash_e");
	cr_assert_eq(jint(pe, "exit_code"), 5);
	char *e_all = concat(e_first, jstr(pe, "output"));
	cr_assert_str_eq(e_all, "e-out\n");
	json_object_put(pe);
	json_object *pb = poll_session(&h, id++, "bash_b");
	cr_assert_str_eq(jstr(pb, "status"), "lost");
	cr_assert_not_null(jstr(pb, "reason"));
	char *b_all = concat(b_first, jstr(pb, "output"));
	cr_assert_str_eq(b_all, "b1\nb2\n");
	cr_assert_not(jbool(pb, "has_more_output"));
	json_object_put(pb);
	pb = poll_session(&h, id++, "bash_b");
	cr_assert_str_eq(jstr(pb, "output"), "", "nothing is repeated");
	json_object_put(pb);
	free(e_first);
	free(e_all);
	free(b_first);
	free(b_all);

	/* A lost session takes no input and stops at once; new sessions run. */
	json_object *st = call(&h, id++, "bash.stop", "{\"session_id\":\"bash_b\"}");
	cr_assert_str_eq(jstr(st, "status"), "lost");
	json_object_put(st);
	json_object *n = start(&h, id++, "bash_new", "echo fresh", 10000);
	cr_assert_str_eq(jstr(n, "output"), "fresh\n");
	json_object_put(n);

	/* A second restart keeps the ended ones ended and the lost one lost. */
	harness_restart(&h, SIGTERM);
	l = call(&h, id++, "bash.list", "{}");
	cr_assert_str_eq(jstr(listed(l, "bash_a"), "status"), "exited");
	cr_assert_str_eq(jstr(listed(l, "bash_b"), "status"), "lost");
	cr_assert_str_eq(jstr(listed(l, "bash_new"), "status"), "exited");
	json_object_put(l);
	int stst = harness_stop(&h);
	cr_assert(WIFEXITED(stst) && WEXITSTATUS(stst) == 0, "helper loop ended with status 0x%x", stst);
}

Test(bash_persist, restart_after_sigterm_reports_running_sessions_lost)
{
	restart_keeps_sessions(SIGTERM);
}

Test(bash_persist, restart_after_a_crash_reports_running_sessions_lost)
{
	restart_keeps_sessions(SIGKILL);
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	fputs(text, f);
	fclose(f);
}

Test(bash_persist, malformed_records_are_skipped)
{
	struct harness h;
	harness_start(&h);
	cr_assert_eq(mkdir(h.logs, 0700), 0);
	write_file(h.logs, "bash_x.json", "{\"session_id\":\"bash_other\",\"started_at_ms\":1}");
	write_file(h.logs, "bash_y.json", "not json");
	write_file(h.logs, "bash_z.json", "{\"session_id\":\"bash_z\",\"started_at_ms\":\"soon\"}");
	write_file(h.logs, "bash_s.json", "{\"session_id\":\"bash_s\",\"started_at_ms\":1,\"status\":\"weird\"}");
	write_file(h.logs, ".bash_h.json", "{\"session_id\":\".bash_h\",\"started_at_ms\":1}");
	char *big = malloc(SESSMETA_FILE_MAX + 2);
	memset(big, ' ', SESSMETA_FILE_MAX + 1);
	big[SESSMETA_FILE_MAX + 1] = '\0';
	memcpy(big, "{\"session_id\":\"bash_big\",\"started_at_ms\":1}", 43);
	write_file(h.logs, "bash_big.json", big);
	free(big);
	write_file(h.logs, "bash_ok.json", "{\"session_id\":\"bash_ok\",\"command\":\"true\",\"started_at_ms\":1}");
	harness_restart(&h, SIGTERM);
	json_object *l = call(&h, 1, "bash.list", "{}");
	cr_assert_eq(jint(l, "total"), 1, "only the valid record: %s", json_object_to_json_string(l));
	cr_assert_str_eq(jstr(listed(l, "bash_ok"), "status"), "lost");
	json_object_put(l);
	json_object *p = poll_session(&h, 2, "bash_ok");
	cr_assert_str_eq(jstr(p, "output"), "", "no log: nothing to deliver");
	json_object_put(p);
	harness_stop(&h);
}

Test(bash_persist, sessmeta_round_trip)
{
	char dir[] = "/tmp/chat2sbx-meta-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char cmd[SESSMETA_COMMAND_MAX + 100];
	memset(cmd, 'c', sizeof cmd - 1);
	cmd[sizeof cmd - 1] = '\0';
	struct sessmeta m = {.command = cmd,
	                     .started_at_ms = 42,
	                     .pid = 7,
	                     .interactive = true,
	                     .tty = true,
	                     .ended = true,
	                     .exit_code = 137,
	                     .term_sig = 9,
	                     .ended_at_ms = 43,
	                     .delivered = 5};
	snprintf(m.id, sizeof m.id, "bash_rt");
	snprintf(m.status, sizeof m.status, "killed");
	cr_assert_eq(sessmeta_write(dir, &m), 0);
	snprintf(m.id, sizeof m.id, "bash_older");
	m.started_at_ms = 41;
	m.ended = false;
	cr_assert_eq(sessmeta_write(dir, &m), 0);
	struct sessmeta *all = NULL;
	size_t n = 0;
	cr_assert_eq(sessmeta_load_all(dir, 10, &all, &n), 0);
	cr_assert_eq(n, 2);
	cr_assert_str_eq(all[0].id, "bash_older", "oldest first");
	cr_assert_not(all[0].ended);
	cr_assert_str_eq(all[1].id, "bash_rt");
	cr_assert(all[1].ended && all[1].tty && all[1].interactive);
	cr_assert_str_eq(all[1].status, "killed");
	cr_assert_eq(all[1].exit_code, 137);
	cr_assert_eq(all[1].term_sig, 9);
	cr_assert_eq(all[1].delivered, 5);
	cr_assert_eq(strlen(all[1].command), SESSMETA_COMMAND_MAX, "the command is kept bounded");
	for (size_t i = 0; i < n; i++)
		sessmeta_clear(&all[i]);
	free(all);
	/* max keeps the most recently started. */
	cr_assert_eq(sessmeta_load_all(dir, 1, &all, &n), 0);
	cr_assert_eq(n, 1);
	cr_assert_str_eq(all[0].id, "bash_rt");
	sessmeta_clear(&all[0]);
	free(all);
	cr_assert_eq(sessmeta_remove(dir, "bash_rt"), 0);
	cr_assert_eq(sessmeta_remove(dir, "bash_rt"), -ENOENT);
	cr_assert_eq(sessmeta_remove(dir, "../x"), -EINVAL);
	cr_assert_eq(sessmeta_remove(dir, "bash_older"), 0);
	cr_assert_eq(rmdir(dir), 0, "no temporary file is left: %s", strerror(errno));
	cr_assert_eq(sessmeta_load_all("/nonexistent/chat2sbx", 10, &all, &n), 0);
	cr_assert_eq(n, 0);
}

Test(bash_persist, stop_signals_only_from_outside_when_pid_1)
{
	cr_assert(loop_stop_signal_honoured(0, 1), "the engine's stop (sender outside the namespace)");
	cr_assert_not(loop_stop_signal_honoured(57, 1), "kill -TERM 1 from a session");
	cr_assert(loop_stop_signal_honoured(57, 4242), "not an init: anyone who may signal us");
}

/* ---- the real thing: the helper as PID 1 of a new pid namespace ---- */

struct ns_helper {
	pid_t outer;  /* the intermediate process (our child) */
	pid_t helper; /* the helper, as seen from here */
	struct harness h;
};

/* Forks: the child unshares its pid namespace and forks the helper loop,
 * which is PID 1 there; the child reports its pid and waits for it. Returns
 * false when pid namespaces are not available (not root). */
static bool ns_start(struct ns_helper *n)
{
	memset(n, 0, sizeof *n);
	struct harness *h = &n->h;
	snprintf(h->dir, sizeof h->dir, "/tmp/chat2sbx-test-XXXXXX");
	cr_assert_not_null(mkdtemp(h->dir));
	snprintf(h->workspace, sizeof h->workspace, "%s/workspace", h->dir);
	snprintf(h->logs, sizeof h->logs, "%s/logs", h->dir);
	cr_assert_eq(mkdir(h->workspace, 0755), 0);
	int req[2], rep[2], info[2];
	cr_assert_eq(pipe2(req, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(rep, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(info, O_CLOEXEC), 0);
	fflush(NULL);
	n->outer = fork();
	cr_assert_geq(n->outer, 0);
	if (n->outer == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (unshare(CLONE_NEWPID) < 0)
			_exit(77);
		pid_t p = fork();
		if (p == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			char log[PATH_MAX];
			snprintf(log, sizeof log, "%s/helper.stderr", h->dir);
			int err_fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
			if (dup2(req[0], STDIN_FILENO) < 0 || dup2(rep[1], STDOUT_FILENO) < 0 || err_fd < 0 ||
			    dup2(err_fd, STDERR_FILENO) < 0)
				_exit(120);
			setenv("CHAT2SBX_TEST_LOOP_WORKSPACE", h->workspace, 1);
			setenv("CHAT2SBX_TEST_LOOP_LOGS", h->logs, 1);
			execl("/proc/self/exe", "test_helper (helper loop, pid 1)", (char *)NULL);
			_exit(121);
		}
		if (p < 0 || write(info[1], &p, sizeof p) != (ssize_t)sizeof p)
			_exit(122);
		int st = 0;
		waitpid(p, &st, 0);
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	}
	close(req[0]);
	close(rep[1]);
	close(info[1]);
	h->req_fd = req[1];
	h->rep_fd = rep[0];
	h->stash = json_object_new_array();
	h->pid = n->outer;
	struct pollfd pfd = {.fd = info[0], .events = POLLIN};
	bool ok = poll(&pfd, 1, 10000) == 1 && read(info[0], &n->helper, sizeof n->helper) == sizeof n->helper;
	close(info[0]);
	if (!ok) {
		int st = 0;
		waitpid(n->outer, &st, 0);
		h->exited = true;
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 77, "the pid namespace child failed: 0x%x", st);
		return false;
	}
	return true;
}

Test(bash_persist, kill_term_1_from_inside_is_ignored_as_pid_1)
{
	struct ns_helper n;
	if (!ns_start(&n)) {
		harness_stop(&n.h);
		cr_skip_test("no pid namespaces here (needs root)");
	}
	struct harness *h = &n.h;
	json_object *hello = call(h, 1, "hello", "{}");
	cr_assert_eq(jint(hello, "pid"), 1, "the helper is PID 1 of its namespace");
	json_object_put(hello);
	json_object *r = start(h, 2, "bash_k", "kill -TERM 1; kill -INT 1; echo sent", 10000);
	cr_assert_str_eq(jstr(r, "status"), "exited");
	cr_assert_str_eq(jstr(r, "output"), "sent\n");
	json_object_put(r);
	hello = call(h, 3, "hello", "{}");
	cr_assert_eq(jint(hello, "sessions"), 1, "still the same helper");
	json_object_put(hello);
	/* From outside the namespace (as the engine's stop): the helper stops. */
	cr_assert_eq(kill(n.helper, SIGTERM), 0);
	cr_assert(harness_wait_exit(h, 10000), "the helper did not stop on a SIGTERM from outside");
	cr_assert(WIFEXITED(h->status) && WEXITSTATUS(h->status) == 0, "exit status 0x%x", h->status);
	harness_stop(h);
}

/* The control plane's own commands (exports) are sessions like any other
 * but never show in bash.list, also after the helper started again. */
Test(bash_persist, hidden_sessions_stay_out_of_the_list)
{
	struct harness h;
	harness_start(&h);
	json_object *r = call(&h, 1, "bash.start",
	                      "{\"session_id\":\"bash_hidden\",\"command\":\"echo secret-ish\",\"yield_time_ms\":5000,"
	                      "\"hidden\":true}");
	cr_assert_str_eq(jstr(r, "status"), "exited");
	json_object_put(r);
	json_object_put(start(&h, 2, "bash_shown", "echo shown", 5000));
	json_object *list = call(&h, 3, "bash.list", "{}");
	cr_assert_null(listed(list, "bash_hidden"));
	cr_assert_not_null(listed(list, "bash_shown"));
	cr_assert_eq(jint(list, "total"), 1);
	json_object_put(list);
	r = poll_session(&h, 4, "bash_hidden");
	cr_assert_str_eq(jstr(r, "status"), "exited", "it can still be polled");
	json_object_put(r);
	harness_restart(&h, SIGTERM);
	list = call(&h, 5, "bash.list", "{}");
	cr_assert_null(listed(list, "bash_hidden"), "the record keeps it hidden");
	cr_assert_not_null(listed(list, "bash_shown"));
	json_object_put(list);
	harness_stop(&h);
}
