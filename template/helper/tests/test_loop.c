/* test_loop.c: end-to-end tests of the helper: the event loop runs in a
 * forked child over pipes (harness.c) and gets the requests the control
 * plane sends (bash.start/poll/stop/list, file.read/write), overlapping, as
 * real shells run. No Docker needed. Every test also checks the loop exits
 * cleanly on SIGTERM with no leak (LeakSanitizer runs at the child's exit). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../proto.h"
#include "harness.h"

static void stop_clean(struct harness *h)
{
	int st = harness_stop(h);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "helper loop ended with status 0x%x", st);
}

static json_object *error_of(json_object *reply)
{
	json_object *e = NULL;
	cr_assert_not_null(reply, "no reply");
	cr_assert(json_object_object_get_ex(reply, "error", &e), "expected an error: %s",
	          json_object_to_json_string(reply));
	return e;
}

static const char *data_code(json_object *e)
{
	json_object *d;
	cr_assert(json_object_object_get_ex(e, "data", &d));
	return jstr(d, "code");
}

Test(loop, hello_and_malformed_requests)
{
	struct harness h;
	harness_start(&h);
	json_object *r = harness_call(&h, 1, 5000, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"hello\"}");
	cr_assert_str_eq(jstr(r, "version"), PROTO_VERSION);
	cr_assert_eq(jint(r, "pid"), h.pid);
	cr_assert_eq(jint(r, "sessions"), 0);
	json_object_put(r);

	harness_send(&h, "{\"jsonrpc\":\"2.0\",\"method\":\"hello\"}"); /* no id: ignored */
	harness_send(&h, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"nope\"}");
	harness_send(&h, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"bash.poll\",\"params\":{}}");
	harness_send(&h, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"bash.poll\"");
	harness_send(&h, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"bash.start\",\"params\":"
	                 "{\"session_id\":\"../x\",\"command\":\"true\"}}");
	json_object *rep = harness_wait(&h, 2, 5000);
	json_object *e = error_of(rep);
	cr_assert_eq(jint(e, "code"), PROTO_ERR_METHOD_NOT_FOUND);
	json_object_put(rep);
	rep = harness_wait(&h, 3, 5000);
	e = error_of(rep);
	cr_assert_eq(jint(e, "code"), PROTO_ERR_INVALID_PARAMS);
	cr_assert_str_eq(data_code(e), "INVALID_ARGUMENT");
	cr_assert(strstr(jstr(e, "message"), "session_id"));
	json_object_put(rep);
	rep = harness_wait(&h, 4, 5000);
	cr_assert_eq(jint(error_of(rep), "code"), PROTO_ERR_PARSE);
	json_object_put(rep);
	rep = harness_wait(&h, 5, 5000);
	cr_assert_str_eq(data_code(error_of(rep)), "INVALID_ARGUMENT");
	json_object_put(rep);
	stop_clean(&h);
}

Test(loop, exit_code_and_last_output_in_one_reply)
{
	struct harness h;
	setenv("CHAT2SBX_TEST_MARK", "inherited", 1);
	harness_start(&h);
	json_object *r = harness_call(&h, 1, 10000,
	                              "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"bash.start\",\"params\":"
	                              "{\"session_id\":\"bash_exit\",\"command\":\"echo hi; echo err >&2; "
	                              "exit 3\",\"yield_time_ms\":5000}}");
	cr_assert_str_eq(jstr(r, "status"), "exited");
	cr_assert_eq(jint(r, "exit_code"), 3);
	cr_assert_str_eq(jstr(r, "output"), "hi\nerr\n");
	cr_assert_not(jbool(r, "has_more_output"));
	cr_assert_eq(jint(r, "total_output_bytes"), 7);
	cr_assert(strstr(jstr(r, "log_path"), "/logs/bash_exit.log"));
	json_object_put(r);
	/* The default cwd is the workspace, and the environment is the helper's. */
	r = harness_call(&h, 2, 10000,
	                 "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"bash.start\",\"params\":"
	                 "{\"session_id\":\"bash_pwd\",\"command\":\"pwd; read x; echo \\\"r=$?\\\"; "
	                 "echo $CHAT2SBX_TEST_MARK\","
	                 "\"yield_time_ms\":5000}}");
	char want[PATH_MAX + 16];
	snprintf(want, sizeof want, "%s\nr=1\ninherited\n", h.workspace);
	cr_assert_str_eq(jstr(r, "output"), want);
	json_object_put(r);
	stop_clean(&h);
}

Test(loop, overlapping_requests_answer_in_any_order)
{
	struct harness h;
	harness_start(&h);
	harness_send(&h, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"bash.start\",\"params\":{"
	                 "\"session_id\":\"bash_tick\",\"command\":\"for i in 1 2 3; do echo tick $i; "
	                 "sleep 0.4; done\",\"yield_time_ms\":0}}");
	json_object *r = harness_wait(&h, 1, 5000);
	cr_assert_not_null(r);
	json_object_put(r);
	/* A long poll, then file operations that must not wait for it. */
	harness_send(&h, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"bash.start\",\"params\":{"
	                 "\"session_id\":\"bash_slow\",\"command\":\"sleep 2; echo slow\","
	                 "\"yield_time_ms\":10000}}");
	int64_t t0 = now_ms();
	harness_send(&h, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"file.write\",\"params\":{"
	                 "\"path\":\"notes/a.txt\",\"content\":\"one\\ntwo\\n\",\"create_dirs\":true}}");
	harness_send(&h, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"file.read\",\"params\":{"
	                 "\"path\":\"notes/a.txt\",\"offset\":2}}");
	json_object *w = harness_wait(&h, 3, 5000), *rd = harness_wait(&h, 4, 5000);
	cr_assert_lt(now_ms() - t0, 1500, "file replies waited for the pending bash.start");
	json_object *res;
	cr_assert(json_object_object_get_ex(w, "result", &res));
	cr_assert(jbool(res, "created"));
	cr_assert_eq(jint(res, "bytes_written"), 8);
	cr_assert(json_object_object_get_ex(rd, "result", &res));
	cr_assert_str_eq(jstr(res, "content"), "two\n");
	cr_assert_eq(jint(res, "total_lines"), 2);
	char want[PATH_MAX + 32];
	snprintf(want, sizeof want, "%s/notes/a.txt", h.workspace);
	cr_assert_str_eq(jstr(res, "path"), want);
	json_object_put(w);
	json_object_put(rd);

	/* Polls return new output only, and together see every line once. */
	char all[256] = "";
	for (int id = 10; id < 30; id++) {
		json_object *p = harness_call(&h, id, 5000,
		                              "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"bash.poll\","
		                              "\"params\":{\"session_id\":\"bash_tick\",\"yield_time_ms\":"
		                              "3000}}",
		                              id);
		strncat(all, jstr(p, "output"), sizeof all - strlen(all) - 1);
		bool done = strcmp(jstr(p, "status"), "running") != 0 && !jbool(p, "has_more_output");
		json_object_put(p);
		if (done)
			break;
	}
	cr_assert_str_eq(all, "tick 1\ntick 2\ntick 3\n");
	json_object *slow = harness_wait(&h, 2, 10000);
	cr_assert(json_object_object_get_ex(slow, "result", &res));
	cr_assert_str_eq(jstr(res, "output"), "slow\n");
	json_object_put(slow);

	json_object *l = harness_call(&h, 40, 5000, "{\"jsonrpc\":\"2.0\",\"id\":40,\"method\":\"bash.list\"}");
	json_object *arr;
	cr_assert(json_object_object_get_ex(l, "sessions", &arr));
	cr_assert_eq(json_object_array_length(arr), 2);
	cr_assert_str_eq(jstr(json_object_array_get_idx(arr, 0), "session_id"), "bash_tick");
	cr_assert_str_eq(jstr(json_object_array_get_idx(arr, 1), "status"), "exited");
	json_object_put(l);
	stop_clean(&h);
}

Test(loop, stop_kills_the_process_group)
{
	struct harness h;
	harness_start(&h);
	json_object *r = harness_call(&h, 1, 5000,
	                              "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"bash.start\",\"params\":{"
	                              "\"session_id\":\"bash_sleep\",\"command\":\"echo start; sleep 1000 "
	                              "& sleep 1000\",\"yield_time_ms\":300}}");
	cr_assert_str_eq(jstr(r, "status"), "running");
	cr_assert_str_eq(jstr(r, "output"), "start\n");
	json_object_put(r);
	int64_t t0 = now_ms();
	r = harness_call(&h, 2, 5000,
	                 "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"bash.stop\",\"params\":{"
	                 "\"session_id\":\"bash_sleep\"}}");
	cr_assert_lt(now_ms() - t0, 1000);
	cr_assert_str_eq(jstr(r, "status"), "killed");
	cr_assert_eq(jint(r, "exit_code"), 128 + SIGTERM);
	json_object_put(r);
	/* A group that ignores SIGTERM gets SIGKILL after the grace period. */
	t0 = now_ms();
	r = harness_call(&h, 3, 5000,
	                 "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"bash.start\",\"params\":{"
	                 "\"session_id\":\"bash_stubborn\",\"command\":\"trap '' TERM; sleep 1000; "
	                 "true\",\"yield_time_ms\":200}}");
	json_object_put(r);
	t0 = now_ms();
	r = harness_call(&h, 4, 6000,
	                 "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"bash.stop\",\"params\":{"
	                 "\"session_id\":\"bash_stubborn\"}}");
	int64_t took = now_ms() - t0;
	cr_assert_geq(took, PROTO_KILL_GRACE_MS - 100);
	cr_assert_lt(took, PROTO_KILL_GRACE_MS + 1200);
	cr_assert_str_eq(jstr(r, "status"), "killed");
	cr_assert_eq(jint(r, "exit_code"), 128 + SIGKILL);
	json_object_put(r);
	/* Stopping an ended session reports its real status. */
	r = harness_call(&h, 5, 5000,
	                 "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"bash.start\",\"params\":{"
	                 "\"session_id\":\"bash_done\",\"command\":\"exit 4\",\"yield_time_ms\":5000}}");
	json_object_put(r);
	r = harness_call(&h, 6, 5000,
	                 "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"bash.stop\",\"params\":{"
	                 "\"session_id\":\"bash_done\"}}");
	cr_assert_str_eq(jstr(r, "status"), "exited");
	cr_assert_eq(jint(r, "exit_code"), 4);
	json_object_put(r);
	stop_clean(&h);
}

Test(loop, timeout_ms_ends_the_session)
{
	struct harness h;
	harness_start(&h);
	int64_t t0 = now_ms();
	json_object *r = harness_call(&h, 1, 8000,
	                              "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"bash.start\",\"params\":{"
	                              "\"session_id\":\"bash_to\",\"command\":\"echo before; sleep 1000\","
	                              "\"timeout_ms\":300,\"yield_time_ms\":6000}}");
	cr_assert_lt(now_ms() - t0, 2000);
	cr_assert_str_eq(jstr(r, "status"), "timed_out");
	cr_assert_eq(jint(r, "exit_code"), 128 + SIGTERM);
	cr_assert_str_eq(jstr(r, "output"), "before\n");
	json_object_put(r);
	stop_clean(&h);
}

Test(loop, shell_exit_ends_session_while_background_job_holds_pipe)
{
	struct harness h;
	harness_start(&h);
	int64_t t0 = now_ms();
	json_object *r = harness_call(&h, 1, 8000,
	                              "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"bash.start\",\"params\":{"
	                              "\"session_id\":\"bash_bg\",\"command\":\"(sleep 1; echo late) & "
	                              "echo early\",\"yield_time_ms\":6000}}");
	cr_assert_lt(now_ms() - t0, 900, "bash.start waited for the background job");
	cr_assert_str_eq(jstr(r, "status"), "exited");
	cr_assert_eq(jint(r, "exit_code"), 0);
	cr_assert_str_eq(jstr(r, "output"), "early\n");
	json_object_put(r);
	/* Later output is still collected; an ended session's poll returns at
	 * once, so poll until it shows up. */
	char got[64] = "";
	for (int id = 2; id < 40 && !strstr(got, "late"); id++) {
		usleep(100 * 1000);
		r = harness_call(&h, id, 5000,
		                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"bash.poll\",\"params\":{"
		                 "\"session_id\":\"bash_bg\",\"yield_time_ms\":3000}}",
		                 id);
		strncat(got, jstr(r, "output"), sizeof got - strlen(got) - 1);
		json_object_put(r);
	}
	cr_assert_str_eq(got, "late\n");
	stop_clean(&h);
}

Test(loop, multibyte_character_is_never_split)
{
	struct harness h;
	harness_start(&h);
	json_object *r = harness_call(&h, 1, 5000,
	                              "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"bash.start\",\"params\":{"
	                              "\"session_id\":\"bash_utf8\",\"command\":\"printf 'caf\\\\303'; "
	                              "sleep 0.6; printf '\\\\251\\\\n'\",\"yield_time_ms\":300}}");
	cr_assert_str_eq(jstr(r, "status"), "running");
	cr_assert_str_eq(jstr(r, "output"), "caf");
	cr_assert_eq(jint(r, "output_bytes"), 3);
	cr_assert_eq(jint(r, "total_output_bytes"), 4);
	cr_assert_not(jbool(r, "has_more_output"));
	json_object_put(r);
	r = harness_call(&h, 2, 5000,
	                 "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"bash.poll\",\"params\":{"
	                 "\"session_id\":\"bash_utf8\",\"yield_time_ms\":3000}}");
	cr_assert_str_eq(jstr(r, "output"), "\xc3\xa9\n");
	json_object_put(r);
	/* Invalid bytes become U+FFFD; control bytes survive JSON escaping. */
	r = harness_call(&h, 3, 5000,
	                 "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"bash.start\",\"params\":{"
	                 "\"session_id\":\"bash_bad\",\"command\":\"printf 'a\\\\377b\\\\033c\\\\000d'\","
	                 "\"yield_time_ms\":5000}}");
	json_object *out;
	cr_assert(json_object_object_get_ex(r, "output", &out));
	cr_assert_eq(json_object_get_string_len(out), 9);
	cr_assert_eq(memcmp(json_object_get_string(out),
	                    "a\xef\xbf\xbd"
	                    "b\033c\0d",
	                    9),
	             0);
	json_object_put(r);
	stop_clean(&h);
}

Test(loop, large_output_of_an_ended_session_comes_as_head_and_tail)
{
	struct harness h;
	harness_start(&h);
	json_object *r = harness_call(&h, 1, 10000,
	                              "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"bash.start\",\"params\":{"
	                              "\"session_id\":\"bash_big\",\"command\":\"head -c 300000 "
	                              "/dev/zero | tr '\\\\0' a; printf '\\\\ntail-marker \\\\303\\\\251\\\\n'\","
	                              "\"yield_time_ms\":8000,\"max_output_bytes\":4000}}");
	cr_assert_str_eq(jstr(r, "status"), "exited");
	const char *out = jstr(r, "output");
	/* Head: half the bound; tail: from the start of the last line(s). */
	cr_assert_eq(strspn(out, "a"), 2000);
	cr_assert(strstr(out, "bytes left out here: bytes 2000 to "), "%s", out);
	cr_assert(strstr(out, "tail -c +2001 "), "%s", out);
	size_t n = strlen(out);
	cr_assert_str_eq(out + n - strlen("tail-marker \xc3\xa9\n"), "tail-marker \xc3\xa9\n");
	cr_assert_not(jbool(r, "has_more_output"), "everything is accounted for");
	cr_assert_eq(jint(r, "output_bytes"), 300016);
	cr_assert_eq(jint(r, "total_output_bytes"), 300016);
	cr_assert_eq(jint(r, "omitted_start"), 2000);
	cr_assert_eq(jint(r, "omitted_output_bytes"), jint(r, "omitted_end") - 2000);
	cr_assert_eq(jint(r, "output_end"), 300016);
	json_object_put(r);
	/* Nothing repeated afterwards. */
	r = harness_call(&h, 2, 5000,
	                 "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"bash.poll\",\"params\":{"
	                 "\"session_id\":\"bash_big\",\"yield_time_ms\":0}}");
	cr_assert_str_eq(jstr(r, "output"), "");
	json_object_put(r);
	stop_clean(&h);
}

Test(loop, large_output_of_a_running_session_is_delivered_exactly_with_the_newest_lines)
{
	struct harness h;
	harness_start(&h);
	json_object *r = harness_call(&h, 1, 10000,
	                              "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"bash.start\",\"params\":{"
	                              "\"session_id\":\"bash_run\",\"command\":\"head -c 300000 "
	                              "/dev/zero | tr '\\\\0' a; printf '\\\\nnewest line\\\\n'; sleep 30\","
	                              "\"yield_time_ms\":1500,\"max_output_bytes\":4000}}");
	cr_assert_str_eq(jstr(r, "status"), "running");
	cr_assert_eq(jint(r, "output_bytes"), 3500, "the bound less an eighth for the newest lines: %s",
	             json_object_to_json_string(r));
	cr_assert_str_eq(jstr(r, "latest_output"), "newest line\n");
	cr_assert(jbool(r, "has_more_output"));
	uint64_t end = (uint64_t)jint(r, "output_end"), got = (uint64_t)jint(r, "output_bytes");
	json_object_put(r);
	int polls = 0;
	bool more = true;
	while (more) {
		r = harness_call(&h, 100 + polls, 5000,
		                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"bash.poll\",\"params\":{"
		                 "\"session_id\":\"bash_run\",\"yield_time_ms\":0,\"max_output_bytes\":100000}}",
		                 100 + polls);
		polls++;
		cr_assert_eq((uint64_t)jint(r, "output_start"), end, "no byte skipped or repeated");
		cr_assert_leq(jint(r, "output_bytes"), 100000);
		end = (uint64_t)jint(r, "output_end");
		got += (uint64_t)jint(r, "output_bytes");
		more = jbool(r, "has_more_output");
		json_object_put(r);
	}
	cr_assert_eq(got, 300013);
	cr_assert_eq(polls, 4);
	r = harness_call(
	    &h, 9, 5000,
	    "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"bash.stop\",\"params\":{\"session_id\":\"bash_run\"}}");
	cr_assert_str_eq(jstr(r, "status"), "killed");
	json_object_put(r);
	stop_clean(&h);
}

Test(loop, tail_true_shows_head_and_tail_of_a_running_session)
{
	struct harness h;
	harness_start(&h);
	json_object *r = harness_call(&h, 1, 10000,
	                              "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"bash.start\",\"params\":{"
	                              "\"session_id\":\"bash_tl\",\"command\":\"seq 1 100000; sleep 30\","
	                              "\"yield_time_ms\":1500,\"max_output_bytes\":1000,\"tail\":true}}");
	cr_assert_str_eq(jstr(r, "status"), "running");
	const char *out = jstr(r, "output");
	cr_assert_eq(strncmp(out, "1\n2\n3\n", 6), 0, "%s", out);
	cr_assert(strstr(out, "bytes left out here"), "%s", out);
	cr_assert_str_eq(out + strlen(out) - strlen("\n99999\n100000\n"), "\n99999\n100000\n");
	cr_assert_not(jbool(r, "has_more_output"));
	json_object_put(r);
	r = harness_call(
	    &h, 9, 5000,
	    "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"bash.stop\",\"params\":{\"session_id\":\"bash_tl\"}}");
	json_object_put(r);
	stop_clean(&h);
}

/* Zombie children of pid, from /proc. */
static int zombies_of(pid_t pid)
{
	int n = 0;
	DIR *d = opendir("/proc");
	struct dirent *e;
	while ((e = readdir(d))) {
		char path[300], buf[512];
		snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		size_t len = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
		buf[len] = '\0';
		char *p = strrchr(buf, ')');
		char state;
		int ppid;
		if (p && sscanf(p + 1, " %c %d", &state, &ppid) == 2 && ppid == pid && state == 'Z')
			n++;
	}
	closedir(d);
	return n;
}

Test(loop, orphans_are_reaped)
{
	struct harness h;
	harness_start(&h);
	json_object *r = harness_call(&h, 1, 5000,
	                              "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"bash.start\",\"params\":{"
	                              "\"session_id\":\"bash_orphans\",\"command\":\"(sleep 0.2 &); "
	                              "(sleep 0.3 >/dev/null 2>&1 &); echo ok\",\"yield_time_ms\":3000}}");
	cr_assert_str_eq(jstr(r, "status"), "exited");
	json_object_put(r);
	usleep(900 * 1000);
	/* Nudge the loop once so it surely ran after the last SIGCHLD. */
	r = harness_call(&h, 2, 5000, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"hello\"}");
	json_object_put(r);
	cr_assert_eq(zombies_of(h.pid), 0);
	stop_clean(&h);
}

Test(loop, session_errors)
{
	struct harness h;
	harness_start(&h);
	harness_send(&h, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"bash.start\",\"params\":{"
	                 "\"session_id\":\"bash_cwd\",\"command\":\"true\",\"cwd\":\"missing/dir\"}}");
	json_object *rep = harness_wait(&h, 1, 5000);
	json_object *e = error_of(rep);
	cr_assert_str_eq(data_code(e), "INVALID_ARGUMENT");
	cr_assert(strstr(jstr(e, "message"), "missing/dir"), "%s", jstr(e, "message"));
	json_object_put(rep);
	json_object *r = harness_call(&h, 2, 5000,
	                              "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"bash.start\",\"params\":{"
	                              "\"session_id\":\"bash_dup\",\"command\":\"true\"}}");
	json_object_put(r);
	harness_send(&h, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"bash.start\",\"params\":{"
	                 "\"session_id\":\"bash_dup\",\"command\":\"true\"}}");
	rep = harness_wait(&h, 3, 5000);
	cr_assert_str_eq(data_code(error_of(rep)), "CONFLICT");
	json_object_put(rep);
	harness_send(&h, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"bash.poll\",\"params\":{"
	                 "\"session_id\":\"bash_nobody\"}}");
	rep = harness_wait(&h, 4, 5000);
	e = error_of(rep);
	cr_assert_eq(jint(e, "code"), PROTO_ERR_OPERATION);
	cr_assert_str_eq(data_code(e), "NOT_FOUND");
	json_object_put(rep);
	harness_send(&h, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"file.read\",\"params\":{"
	                 "\"path\":\"/nonexistent/file\"}}");
	rep = harness_wait(&h, 5, 5000);
	cr_assert_str_eq(data_code(error_of(rep)), "NOT_FOUND");
	json_object_put(rep);
	harness_send(&h, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"file.read\",\"params\":{"
	                 "\"path\":\".\"}}");
	rep = harness_wait(&h, 6, 5000);
	cr_assert_str_eq(data_code(error_of(rep)), "INVALID_ARGUMENT");
	json_object_put(rep);
	stop_clean(&h);
}

Test(loop, overlong_request_gets_an_error_and_the_loop_goes_on)
{
	struct harness h;
	harness_start(&h);
	size_t n = PROTO_MAX_FRAME + 1024;
	char *big = malloc(n + 200);
	int k = snprintf(big, 200,
	                 "{\"jsonrpc\":\"2.0\",\"id\":77,\"method\":\"file.write\","
	                 "\"params\":{\"path\":\"x\",\"content\":\"");
	memset(big + k, 'a', n);
	strcpy(big + k + n, "\"}}");
	harness_send(&h, "%s", big);
	free(big);
	json_object *rep = harness_wait(&h, 77, 20000);
	json_object *e = error_of(rep);
	cr_assert_eq(jint(e, "code"), PROTO_ERR_INVALID_REQUEST);
	cr_assert_str_eq(data_code(e), "LIMIT");
	json_object_put(rep);
	json_object *r = harness_call(&h, 78, 5000, "{\"jsonrpc\":\"2.0\",\"id\":78,\"method\":\"hello\"}");
	cr_assert_not_null(r);
	json_object_put(r);
	stop_clean(&h);
}

Test(loop, end_of_input_keeps_sessions_running)
{
	struct harness h;
	harness_start(&h);
	harness_send(&h, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"bash.start\",\"params\":{"
	                 "\"session_id\":\"bash_eof\",\"command\":\"sleep 0.5; echo done\","
	                 "\"yield_time_ms\":5000}}");
	harness_close_input(&h);
	json_object *rep = harness_wait(&h, 1, 8000);
	json_object *res;
	cr_assert(json_object_object_get_ex(rep, "result", &res));
	cr_assert_str_eq(jstr(res, "output"), "done\n");
	json_object_put(rep);
	usleep(200 * 1000);
	cr_assert_eq(kill(h.pid, 0), 0, "the helper exited at end of input");
	stop_clean(&h);
}

Test(loop, sigterm_stops_sessions_and_answers_waiting_requests)
{
	struct harness h;
	harness_start(&h);
	json_object *r = harness_call(&h, 1, 5000,
	                              "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"bash.start\",\"params\":{"
	                              "\"session_id\":\"bash_long\",\"command\":\"sleep 1000\","
	                              "\"yield_time_ms\":0}}");
	cr_assert_str_eq(jstr(r, "status"), "running");
	json_object_put(r);
	harness_send(&h, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"bash.poll\",\"params\":{"
	                 "\"session_id\":\"bash_long\",\"yield_time_ms\":30000}}");
	usleep(200 * 1000);
	int64_t t0 = now_ms();
	kill(h.pid, SIGTERM);
	json_object *rep = harness_wait(&h, 2, 5000);
	cr_assert_lt(now_ms() - t0, 3000);
	json_object *res;
	cr_assert(json_object_object_get_ex(rep, "result", &res));
	cr_assert_str_eq(jstr(res, "status"), "killed");
	json_object_put(rep);
	cr_assert(harness_wait_exit(&h, 3000), "the helper did not exit after SIGTERM");
	stop_clean(&h);
}

Test(loop, two_polls_on_one_session_share_the_output)
{
	struct harness h;
	harness_start(&h);
	json_object *r = harness_call(&h, 1, 5000,
	                              "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"bash.start\",\"params\":{"
	                              "\"session_id\":\"bash_two\",\"command\":\"sleep 0.3; echo one; "
	                              "sleep 0.5; echo two\",\"yield_time_ms\":0}}");
	json_object_put(r);
	harness_send(&h, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"bash.poll\",\"params\":{"
	                 "\"session_id\":\"bash_two\",\"yield_time_ms\":5000}}");
	harness_send(&h, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"bash.poll\",\"params\":{"
	                 "\"session_id\":\"bash_two\",\"yield_time_ms\":5000}}");
	json_object *a = harness_wait(&h, 2, 5000), *b = harness_wait(&h, 3, 5000), *res;
	cr_assert(json_object_object_get_ex(a, "result", &res));
	cr_assert_str_eq(jstr(res, "output"), "one\n");
	cr_assert(json_object_object_get_ex(b, "result", &res));
	cr_assert_str_eq(jstr(res, "output"), "two\n");
	json_object_put(a);
	json_object_put(b);
	stop_clean(&h);
}

/* Commands run as root in the container: without CAP_SYS_PTRACE (which
 * containers lack) they must not reach the helper's stdin, stdout or stderr
 * through /proc, nor its memory (ptrace access); their own processes stay
 * reachable (execve makes them dumpable again), and they inherit no
 * descriptor of the helper's. */
Test(loop, helper_streams_are_out_of_reach_of_commands)
{
	struct harness h;
	harness_start_flags(&h, HARNESS_NO_SYS_PTRACE);
	char script[PATH_MAX + 16];
	snprintf(script, sizeof script, "%s/probe.sh", h.workspace);
	FILE *f = fopen(script, "w");
	cr_assert_not_null(f);
	fputs("P=$1\n"
	      "echo '{\"id\":1,\"result\":null}' >> /proc/$P/fd/1 && echo LEAK:fd1\n"
	      ": < /proc/$P/fd/0 && echo LEAK:fd0\n"
	      ": >> /proc/$P/fd/2 && echo LEAK:fd2\n"
	      "ls -l /proc/$P/fd/ 2>&1 | grep -q -- '->' && echo LEAK:fdlist\n"
	      "cat /proc/$P/io > /dev/null && echo LEAK:io\n"
	      "ls /proc/$P/cwd/ > /dev/null && echo LEAK:cwd\n"
	      "printf x | dd of=/proc/$P/mem bs=1 seek=4096 conv=notrunc status=none && echo LEAK:mem\n"
	      "dd if=/proc/$P/mem bs=1 count=1 status=none > /dev/null && echo LEAK:mem-read\n"
	      ": >> /proc/$$/fd/1 && echo own-fd-ok\n"
	      "cat /proc/$$/environ > /dev/null && echo own-environ-ok\n"
	      "echo fds: $(ls /proc/self/fd)\n",
	      f);
	fclose(f);
	json_object *r = harness_call(&h, 1, 10000,
	                              "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"bash.start\",\"params\":{"
	                              "\"session_id\":\"bash_probe\",\"command\":\"bash probe.sh %d\","
	                              "\"yield_time_ms\":8000}}",
	                              (int)h.pid);
	cr_assert_not_null(r, "the bash.start reply was replaced by a forged one");
	const char *out = jstr(r, "output");
	cr_assert_str_eq(jstr(r, "status"), "exited", "%s", out);
	cr_assert_null(strstr(out, "LEAK"), "%s", out);
	cr_assert(strstr(out, "Permission denied"), "%s", out);
	cr_assert(strstr(out, "own-fd-ok\nown-environ-ok\n"), "%s", out);
	cr_assert(strstr(out, "fds: 0 1 2 3\n"), "%s", out);
	json_object_put(r);
	/* Nothing forged arrived: the next reply is the helper's own. */
	r = harness_call(&h, 2, 5000, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"hello\"}");
	cr_assert_str_eq(jstr(r, "version"), PROTO_VERSION);
	json_object_put(r);
	stop_clean(&h);
}

static pid_t first_int(const char *s)
{
	return s ? (pid_t)strtol(s, NULL, 10) : 0;
}

/* bash.stop after the shell exited still clears its process group, whether
 * the leftovers hold the output pipe or not, and keeps the shell's status. */
Test(loop, stop_kills_leftovers_of_an_ended_shell)
{
	struct harness h;
	harness_start(&h);
	const char *cmds[] = {"sleep 1000 & echo $!; exit 0", "sleep 1000 >/dev/null 2>&1 & echo $!; exit 5",
	                      "(trap '' TERM; while :; do sleep 1000 & sleep 0.01; done) >/dev/null 2>&1 & "
	                      "echo $!"};
	for (int i = 0; i < 3; i++) {
		json_object *r = harness_call(&h, 10 * i + 1, 5000,
		                              "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"bash.start\",\"params\":{"
		                              "\"session_id\":\"bash_left%d\",\"command\":\"%s\","
		                              "\"yield_time_ms\":5000}}",
		                              10 * i + 1, i, cmds[i]);
		cr_assert_str_eq(jstr(r, "status"), "exited");
		pid_t bg = first_int(jstr(r, "output")), pgid = (pid_t)jint(r, "pid");
		int code = (int)jint(r, "exit_code");
		cr_assert_gt(bg, 1);
		json_object_put(r);
		usleep(200 * 1000);
		cr_assert_eq(kill(bg, 0), 0, "the background job is not running");
		int64_t t0 = now_ms();
		r = harness_call(&h, 10 * i + 2, 5000,
		                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"bash.stop\",\"params\":{"
		                 "\"session_id\":\"bash_left%d\"}}",
		                 10 * i + 2, i);
		int64_t took = now_ms() - t0;
		cr_assert_str_eq(jstr(r, "status"), "exited");
		cr_assert_eq(jint(r, "exit_code"), code);
		json_object_put(r);
		cr_assert_eq(kill(-pgid, 0), -1, "process group %d survived bash.stop", (int)pgid);
		cr_assert_eq(kill(bg, 0), -1);
		/* The last one ignores SIGTERM: SIGKILL after the grace period. */
		if (i == 2)
			cr_assert_geq(took, PROTO_KILL_GRACE_MS - 100);
		else
			cr_assert_lt(took, 1000);
	}
	stop_clean(&h);
}

/* bash.list: the 50 most recent sessions plus every running one. */
Test(loop, list_is_bounded)
{
	struct harness h;
	harness_start(&h);
	json_object *r = harness_call(&h, 1, 5000,
	                              "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"bash.start\",\"params\":{"
	                              "\"session_id\":\"bash_old_running\",\"command\":\"sleep 1000\","
	                              "\"yield_time_ms\":0}}");
	json_object_put(r);
	for (int i = 0; i < 60; i++) {
		r = harness_call(&h, 100 + i, 5000,
		                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"bash.start\",\"params\":{"
		                 "\"session_id\":\"bash_n%d\",\"command\":\"true\",\"yield_time_ms\":5000}}",
		                 100 + i, i);
		cr_assert_str_eq(jstr(r, "status"), "exited");
		json_object_put(r);
	}
	r = harness_call(&h, 2, 5000, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"bash.list\"}");
	json_object *arr;
	cr_assert(json_object_object_get_ex(r, "sessions", &arr));
	cr_assert_eq(json_object_array_length(arr), 51);
	cr_assert_eq(jint(r, "total"), 61);
	cr_assert(jbool(r, "truncated"));
	cr_assert_str_eq(jstr(json_object_array_get_idx(arr, 0), "session_id"), "bash_old_running");
	cr_assert_str_eq(jstr(json_object_array_get_idx(arr, 0), "status"), "running");
	cr_assert_str_eq(jstr(json_object_array_get_idx(arr, 1), "session_id"), "bash_n10");
	cr_assert_str_eq(jstr(json_object_array_get_idx(arr, 50), "session_id"), "bash_n59");
	json_object_put(r);
	stop_clean(&h);
}

/* Messages that reach the model name its tools, not helper methods. */
Test(loop, messages_name_the_tools)
{
	struct harness h;
	harness_start(&h);
	harness_send(&h, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"bash.poll\",\"params\":{"
	                 "\"session_id\":\"bash_nobody\"}}");
	json_object *rep = harness_wait(&h, 1, 5000);
	const char *msg = jstr(error_of(rep), "message");
	cr_assert(strstr(msg, "sandbox_get lists this sandbox's bash sessions"), "%s", msg);
	cr_assert_null(strstr(msg, "bash."), "%s", msg);
	json_object_put(rep);
	size_t n = 140000;
	char *cmd = malloc(n + 1);
	memset(cmd, ':', n);
	cmd[n] = '\0';
	harness_send(&h,
	             "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"bash.start\",\"params\":{"
	             "\"session_id\":\"bash_long_cmd\",\"command\":\"%s\"}}",
	             cmd);
	free(cmd);
	rep = harness_wait(&h, 2, 5000);
	msg = jstr(error_of(rep), "message");
	cr_assert(strstr(msg, "write tool"), "%s", msg);
	cr_assert_null(strstr(msg, "file."), "%s", msg);
	json_object_put(rep);
	stop_clean(&h);
}

/* A huge (sparse) file is read only as far as the selection: no hash, no
 * line count, and no minutes-long stall of the loop. */
Test(loop, huge_file_read_is_bounded)
{
	struct harness h;
	harness_start(&h);
	char path[PATH_MAX + 16];
	snprintf(path, sizeof path, "%s/huge.txt", h.workspace);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	for (int i = 1; i <= 2000; i++)
		fprintf(f, "line %d\n", i);
	fclose(f);
	cr_assert_eq(truncate(path, 20ll << 30), 0);
	int64_t t0 = now_ms();
	json_object *r = harness_call(&h, 1, 30000,
	                              "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"file.read\",\"params\":{"
	                              "\"path\":\"huge.txt\",\"offset\":2,\"limit\":2}}");
	cr_assert_lt(now_ms() - t0, 3000);
	cr_assert_str_eq(jstr(r, "content"), "line 2\nline 3\n");
	cr_assert_eq(jint(r, "size"), 20ll << 30);
	cr_assert(jbool(r, "truncated"));
	json_object *v;
	cr_assert_not(json_object_object_get_ex(r, "total_lines", &v));
	cr_assert(json_object_object_get_ex(r, "total_lines_known", &v));
	cr_assert_not(json_object_get_boolean(v));
	cr_assert_not(json_object_object_get_ex(r, "sha256", &v));
	cr_assert_str_eq(jstr(r, "sha256_skipped"), "file larger than 67108864 bytes");
	json_object_put(r);
	/* Line 5000 would take a scan of gigabytes: LIMIT, pointing to bash. */
	t0 = now_ms();
	harness_send(&h, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"file.read\",\"params\":{"
	                 "\"path\":\"huge.txt\",\"offset\":5000,\"limit\":10}}");
	json_object *rep = harness_wait(&h, 2, 30000);
	cr_assert_lt(now_ms() - t0, 5000);
	json_object *e = error_of(rep);
	cr_assert_str_eq(data_code(e), "LIMIT");
	cr_assert(strstr(jstr(e, "message"), "sed -n '5000,5009p'"), "%s", jstr(e, "message"));
	json_object_put(rep);
	/* expected_sha256 cannot be checked on it. */
	harness_send(&h, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"file.write\",\"params\":{"
	                 "\"path\":\"huge.txt\",\"content\":\"x\",\"expected_sha256\":"
	                 "\"0000000000000000000000000000000000000000000000000000000000000000\"}}");
	rep = harness_wait(&h, 3, 30000);
	e = error_of(rep);
	cr_assert_str_eq(data_code(e), "LIMIT");
	cr_assert(strstr(jstr(e, "message"), "without expected_sha256"), "%s", jstr(e, "message"));
	json_object_put(rep);
	/* A small file still gets both. */
	r = harness_call(&h, 4, 5000,
	                 "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"file.write\",\"params\":{"
	                 "\"path\":\"small.txt\",\"content\":\"a\\nb\\n\"}}");
	json_object_put(r);
	r = harness_call(&h, 5, 5000,
	                 "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"file.read\",\"params\":{"
	                 "\"path\":\"small.txt\"}}");
	cr_assert_eq(jint(r, "total_lines"), 2);
	cr_assert(jbool(r, "total_lines_known"));
	cr_assert_not_null(jstr(r, "sha256"));
	cr_assert_null(jstr(r, "sha256_skipped"));
	json_object_put(r);
	stop_clean(&h);
}

/* ---- the direct channel (proto.h, channel.connect) ---- */

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <errno.h>
#include <sys/stat.h>

/* One line from fd (blocking, at most 5 s), parsed; NULL at end of stream. */
static json_object *line_from(int fd)
{
	static char buf[65536];
	size_t len = 0;
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		cr_assert_eq(poll(&p, 1, 5000), 1, "no line in 5 s");
		ssize_t n = read(fd, buf + len, 1);
		if (n <= 0)
			return NULL;
		if (buf[len] == '\n') {
			buf[len] = '\0';
			return json_tokener_parse(buf);
		}
		cr_assert_lt(++len, sizeof buf - 1);
	}
}

Test(loop, direct_channel_carries_requests_until_a_new_control_plane_attaches)
{
	struct harness h;
	harness_start(&h);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof a.sun_path, "%s/" HARNESS_CHANNEL_SOCKET, h.dir);
	int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_eq(bind(l, (struct sockaddr *)&a, sizeof a), 0);
	cr_assert_eq(listen(l, 4), 0);

	/* A bad token is refused before anything connects. */
	harness_send(&h, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"channel.connect\","
	                 "\"params\":{\"token\":\"../../etc\"}}");
	json_object *rep = harness_wait(&h, 1, 5000);
	cr_assert_str_eq(data_code(error_of(rep)), "INVALID_ARGUMENT");
	json_object_put(rep);
	const char *token = "0123456789abcdef0123456789abcdef";
	rep = harness_call(
	    &h, 2, 5000, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"channel.connect\",\"params\":{\"token\":\"%s\"}}",
	    token);
	cr_assert_not_null(rep, "the answer comes on stdout");
	cr_assert(jbool(rep, "connected"));
	json_object_put(rep);
	int c = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	cr_assert_geq(c, 0);
	char got[PROTO_CHANNEL_TOKEN_LEN + 1];
	cr_assert_eq(read(c, got, sizeof got), (ssize_t)sizeof got);
	cr_assert_eq(memcmp(got, token, PROTO_CHANNEL_TOKEN_LEN), 0);
	cr_assert_eq(got[PROTO_CHANNEL_TOKEN_LEN], '\n');

	/* Requests on the socket are answered there. */
	const char *hello = "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"hello\"}\n";
	cr_assert_eq(write(c, hello, strlen(hello)), (ssize_t)strlen(hello));
	json_object *line = line_from(c);
	cr_assert_not_null(line);
	cr_assert_eq(jint(line, "id"), 3);
	json_object_put(line);
	/* So are requests that still come on stdin. */
	harness_send(&h, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"hello\"}");
	line = line_from(c);
	cr_assert_not_null(line);
	cr_assert_eq(jint(line, "id"), 4);
	json_object_put(line);

	/* Another control plane attaches on stdin: its hello is answered on
	 * stdout, and the socket is closed. */
	rep = harness_call(&h, 5, 5000,
	                   "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"hello\",\"params\":{\"attach_id\":\"b\"}}");
	cr_assert_not_null(rep, "a new attachment is answered on stdout");
	cr_assert(jbool(rep, "attached"));
	json_object_put(rep);
	cr_assert_null(line_from(c), "the direct socket is closed");
	close(c);
	close(l);
	stop_clean(&h);
}

/* Root in the sandbox renames the directory above the channel's mount (as
 * `mv /.chat2sbx /.x`) and listens where PROTO_CHANNEL_SOCKET now leads: the
 * helper connects through the directory it opened at start, so the
 * impostor learns no token and cannot become the control plane's channel. */
Test(loop, direct_channel_ignores_a_listener_planted_at_its_path, .timeout = 30)
{
	struct harness h;
	harness_start(&h);
	/* The loop is up (it opened its directory before its first answer). */
	json_object *rep = harness_call(&h, 1, 5000, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"hello\"}");
	cr_assert_not_null(rep);
	json_object_put(rep);
	char dir[sizeof h.dir + 16], moved[sizeof h.dir + 16];
	snprintf(dir, sizeof dir, "%s/" HARNESS_CHANNEL_DIR, h.dir);
	snprintf(moved, sizeof moved, "%s/moved", h.dir);
	cr_assert_eq(rename(dir, moved), 0);
	cr_assert_eq(mkdir(dir, 0700), 0);
	struct sockaddr_un real_a = {.sun_family = AF_UNIX}, fake_a = {.sun_family = AF_UNIX};
	snprintf(real_a.sun_path, sizeof real_a.sun_path, "%s/" PROTO_CHANNEL_SOCKET_NAME, moved);
	snprintf(fake_a.sun_path, sizeof fake_a.sun_path, "%s/" HARNESS_CHANNEL_SOCKET, h.dir);
	int real = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int fake = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	cr_assert_eq(bind(real, (struct sockaddr *)&real_a, sizeof real_a), 0);
	cr_assert_eq(bind(fake, (struct sockaddr *)&fake_a, sizeof fake_a), 0);
	cr_assert_eq(listen(real, 4), 0);
	cr_assert_eq(listen(fake, 4), 0);
	const char *token = "0123456789abcdef0123456789abcdef";
	rep = harness_call(
	    &h, 2, 5000, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"channel.connect\",\"params\":{\"token\":\"%s\"}}",
	    token);
	cr_assert_not_null(rep);
	cr_assert(jbool(rep, "connected"));
	json_object_put(rep);
	cr_assert_lt(accept4(fake, NULL, NULL, SOCK_CLOEXEC), 0, "the impostor at the path got no connection");
	cr_assert_eq(errno, EAGAIN);
	int c = accept4(real, NULL, NULL, SOCK_CLOEXEC);
	cr_assert_geq(c, 0, "the directory the helper opened got it");
	char got[PROTO_CHANNEL_TOKEN_LEN + 1];
	cr_assert_eq(read(c, got, sizeof got), (ssize_t)sizeof got);
	cr_assert_eq(memcmp(got, token, PROTO_CHANNEL_TOKEN_LEN), 0);
	close(c);
	close(real);
	close(fake);
	stop_clean(&h);
}
