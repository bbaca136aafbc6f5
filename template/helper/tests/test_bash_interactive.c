/* test_bash_interactive.c: interactive bash sessions end to end (the loop
 * runs in a child over pipes, harness.c): stdin on a pipe or a
 * pseudo-terminal fed by bash.input, input queued while the program does
 * not read, end of file on request, the signal name of a killed shell, and
 * carriage-return progress lines collapsed in replies (but not in the log). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "../bash.h"
#include "../proto.h"
#include "harness.h"

static void stop_clean(struct harness *h)
{
	int st = harness_stop(h);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "helper loop ended with status 0x%x", st);
}

/* Send method with params (taken) as request id; the whole reply. */
static json_object *call(struct harness *h, int64_t id, const char *method, json_object *params)
{
	harness_send(h, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":\"%s\",\"params\":%s}", (long long)id, method,
	             json_object_to_json_string_ext(params, JSON_C_TO_STRING_PLAIN));
	json_object_put(params);
	json_object *reply = harness_wait(h, id, 15000);
	cr_assert_not_null(reply, "no reply to %s (id %lld)", method, (long long)id);
	return reply;
}

/* The result of a reply that must have succeeded; the reply is freed. */
static json_object *result_of(json_object *reply)
{
	json_object *r;
	cr_assert(json_object_object_get_ex(reply, "result", &r), "expected a result: %s",
	          json_object_to_json_string(reply));
	json_object_get(r);
	json_object_put(reply);
	return r;
}

/* The data.code of a reply that must have failed; *ret_message gets a copy
 * of its message (freed by the caller). The reply is freed. */
static char *error_code(json_object *reply, char **ret_message)
{
	json_object *e, *d;
	cr_assert(json_object_object_get_ex(reply, "error", &e), "expected an error: %s",
	          json_object_to_json_string(reply));
	cr_assert(json_object_object_get_ex(e, "data", &d));
	char *code = strdup(jstr(d, "code"));
	if (ret_message)
		*ret_message = strdup(jstr(e, "message"));
	json_object_put(reply);
	return code;
}

static json_object *obj_sid(const char *sid)
{
	json_object *p = json_object_new_object();
	json_object_object_add(p, "session_id", json_object_new_string(sid));
	return p;
}

static json_object *start_params(const char *sid, const char *command, int yield_ms)
{
	json_object *p = obj_sid(sid);
	json_object_object_add(p, "command", json_object_new_string(command));
	json_object_object_add(p, "yield_time_ms", json_object_new_int(yield_ms));
	return p;
}

static json_object *input_params(const char *sid, const char *data, bool close_stdin)
{
	json_object *p = obj_sid(sid);
	if (data)
		json_object_object_add(p, "data", json_object_new_string(data));
	if (close_stdin)
		json_object_object_add(p, "close", json_object_new_boolean(true));
	return p;
}

/* Poll until the session ends, appending output to *acc (malloc'd);
 * returns the final snapshot. */
static json_object *poll_to_end(struct harness *h, int64_t *id, const char *sid, char **acc)
{
	int64_t deadline = now_ms() + 15000;
	for (;;) {
		json_object *p = obj_sid(sid);
		json_object_object_add(p, "yield_time_ms", json_object_new_int(2000));
		json_object *r = result_of(call(h, (*id)++, "bash.poll", p));
		size_t have = *acc ? strlen(*acc) : 0;
		const char *out = jstr(r, "output");
		*acc = realloc(*acc, have + strlen(out) + 1);
		memcpy(*acc + have, out, strlen(out) + 1);
		if (strcmp(jstr(r, "status"), "running") != 0 && !jbool(r, "has_more_output"))
			return r;
		json_object_put(r);
		cr_assert_lt(now_ms(), deadline, "session '%s' did not end; output so far: %s", sid, *acc);
	}
}

/* python3 when the machine has it, else the shell's read: both print one
 * line read from stdin. */
#define ECHO_ONE_LINE                                                                                                  \
	"if command -v python3 >/dev/null 2>&1; then exec python3 -c 'print(input())'; "                               \
	"else read -r x; echo \"$x\"; fi"

Test(bash_interactive, pipe_round_trip)
{
	struct harness h;
	harness_start(&h);
	int64_t id = 1;
	json_object *p = start_params("bash_rt", "read -r x; echo got:$x", 0);
	json_object_object_add(p, "interactive", json_object_new_boolean(true));
	json_object *r = result_of(call(&h, id++, "bash.start", p));
	cr_assert_str_eq(jstr(r, "status"), "running");
	cr_assert(jbool(r, "stdin_open"));
	json_object_put(r);

	r = result_of(call(&h, id++, "bash.input", input_params("bash_rt", "hello\n", false)));
	cr_assert_str_eq(jstr(r, "session_id"), "bash_rt");
	cr_assert_eq(jint(r, "bytes_written"), 6);
	cr_assert_eq(jint(r, "pending_input_bytes"), 0);
	cr_assert(jbool(r, "stdin_open"));
	json_object_put(r);
	char *out = NULL;
	r = poll_to_end(&h, &id, "bash_rt", &out);
	cr_assert_str_eq(out, "got:hello\n");
	cr_assert_str_eq(jstr(r, "status"), "exited");
	cr_assert_eq(jint(r, "exit_code"), 0);
	cr_assert_not(jbool(r, "stdin_open"), "stdin stays open after the shell's exit");
	json_object_put(r);
	free(out);
	out = NULL;

	/* Input after the end: CONFLICT. */
	char *code = error_code(call(&h, id++, "bash.input", input_params("bash_rt", "x\n", false)), NULL);
	cr_assert_str_eq(code, "CONFLICT");
	free(code);

	/* A program that reads (python3 when present). */
	p = start_params("bash_py", ECHO_ONE_LINE, 0);
	json_object_object_add(p, "interactive", json_object_new_boolean(true));
	json_object_put(result_of(call(&h, id++, "bash.start", p)));
	json_object_put(result_of(call(&h, id++, "bash.input", input_params("bash_py", "answer 42\n", false))));
	json_object_put(poll_to_end(&h, &id, "bash_py", &out));
	cr_assert_str_eq(out, "answer 42\n");
	free(out);
	stop_clean(&h);
}

Test(bash_interactive, close_gives_end_of_file)
{
	struct harness h;
	harness_start(&h);
	int64_t id = 1;
	json_object *p = start_params("bash_cat", "cat; echo eof:$?", 0);
	json_object_object_add(p, "interactive", json_object_new_boolean(true));
	json_object_put(result_of(call(&h, id++, "bash.start", p)));
	json_object *r = result_of(call(&h, id++, "bash.input", input_params("bash_cat", "abc", true)));
	cr_assert_eq(jint(r, "bytes_written"), 3);
	cr_assert_not(jbool(r, "stdin_open"));
	json_object_put(r);
	char *msg;
	char *code = error_code(call(&h, id++, "bash.input", input_params("bash_cat", "more", false)), &msg);
	cr_assert_str_eq(code, "CONFLICT");
	cr_assert(strstr(msg, "closed"), "%s", msg);
	free(code);
	free(msg);
	char *out = NULL;
	r = poll_to_end(&h, &id, "bash_cat", &out);
	cr_assert_str_eq(out, "abceof:0\n");
	json_object_put(r);
	free(out);

	/* close alone (no data) works too. */
	p = start_params("bash_cat2", "wc -l", 0);
	json_object_object_add(p, "interactive", json_object_new_boolean(true));
	json_object_put(result_of(call(&h, id++, "bash.start", p)));
	json_object_put(result_of(call(&h, id++, "bash.input", input_params("bash_cat2", "1\n2\n", false))));
	r = result_of(call(&h, id++, "bash.input", input_params("bash_cat2", NULL, true)));
	cr_assert_eq(jint(r, "bytes_written"), 0);
	cr_assert_not(jbool(r, "stdin_open"));
	json_object_put(r);
	out = NULL;
	json_object_put(poll_to_end(&h, &id, "bash_cat2", &out));
	cr_assert_str_eq(out, "2\n");
	free(out);
	stop_clean(&h);
}

Test(bash_interactive, input_errors)
{
	struct harness h;
	harness_start(&h);
	int64_t id = 1;
	/* Not interactive: stdin is /dev/null, input is refused. */
	json_object *r = result_of(call(&h, id++, "bash.start", start_params("bash_plain", "sleep 5", 0)));
	cr_assert_null(json_object_object_get(r, "stdin_open"));
	json_object_put(r);
	char *msg;
	char *code = error_code(call(&h, id++, "bash.input", input_params("bash_plain", "x\n", false)), &msg);
	cr_assert_str_eq(code, "INVALID_ARGUMENT");
	cr_assert(strstr(msg, "session 'bash_plain' was not started with interactive: true; its stdin is at "
	                      "end-of-file"),
	          "%s", msg);
	free(code);
	free(msg);
	/* Unknown session: NOT_FOUND naming the tool that lists sessions. */
	code = error_code(call(&h, id++, "bash.input", input_params("bash_nope", "x", false)), &msg);
	cr_assert_str_eq(code, "NOT_FOUND");
	cr_assert(strstr(msg, "sandbox_get"), "%s", msg);
	free(code);
	free(msg);
	/* Bad types and tty sizes. */
	json_object *p = input_params("bash_plain", NULL, false);
	json_object_object_add(p, "data", json_object_new_int(3));
	code = error_code(call(&h, id++, "bash.input", p), &msg);
	cr_assert_str_eq(code, "INVALID_ARGUMENT");
	cr_assert(strstr(msg, "data"), "%s", msg);
	free(code);
	free(msg);
	p = start_params("bash_rows", "true", 0);
	json_object_object_add(p, "tty", json_object_new_boolean(true));
	json_object_object_add(p, "rows", json_object_new_int(0));
	code = error_code(call(&h, id++, "bash.start", p), &msg);
	cr_assert_str_eq(code, "INVALID_ARGUMENT");
	cr_assert(strstr(msg, "rows"), "%s", msg);
	free(code);
	free(msg);
	p = start_params("bash_cols", "true", 0);
	json_object_object_add(p, "tty", json_object_new_boolean(true));
	json_object_object_add(p, "cols", json_object_new_int(1001));
	code = error_code(call(&h, id++, "bash.start", p), &msg);
	cr_assert_str_eq(code, "INVALID_ARGUMENT");
	cr_assert(strstr(msg, "cols"), "%s", msg);
	free(code);
	free(msg);
	/* The program closed its stdin: EPIPE closes ours, nothing crashes. */
	p = start_params("bash_noread", "exec 0<&-; sleep 5", 0);
	json_object_object_add(p, "interactive", json_object_new_boolean(true));
	json_object_put(result_of(call(&h, id++, "bash.start", p)));
	int64_t deadline = now_ms() + 10000;
	for (;;) {
		r = call(&h, id++, "bash.input", input_params("bash_noread", "x\n", false));
		json_object *res;
		if (!json_object_object_get_ex(r, "result", &res)) {
			/* Closed by an earlier EPIPE. */
			code = error_code(r, NULL);
			cr_assert_str_eq(code, "CONFLICT");
			free(code);
			break;
		}
		bool open = jbool(res, "stdin_open");
		json_object_put(r);
		if (!open)
			break;
		cr_assert_lt(now_ms(), deadline, "writing to a stdin nobody reads never failed");
		usleep(50 * 1000);
	}
	r = result_of(call(&h, id++, "bash.list", json_object_new_object()));
	json_object *list = json_object_object_get(r, "sessions");
	for (size_t i = 0; i < json_object_array_length(list); i++) {
		json_object *e = json_object_array_get_idx(list, i);
		if (strcmp(jstr(e, "session_id"), "bash_noread") == 0) {
			cr_assert(jbool(e, "interactive"));
			cr_assert_not(jbool(e, "tty"));
			cr_assert_not(jbool(e, "stdin_open"));
		} else {
			cr_assert_str_eq(jstr(e, "session_id"), "bash_plain");
			cr_assert_not(jbool(e, "interactive"));
			cr_assert_not(jbool(e, "stdin_open"));
		}
	}
	json_object_put(r);
	stop_clean(&h);
}

Test(bash_interactive, tty_session)
{
	struct harness h;
	harness_start(&h);
	int64_t id = 1;
	json_object *p = start_params("bash_tty", "tty; stty size; echo TERM=$TERM", 10000);
	json_object_object_add(p, "tty", json_object_new_boolean(true));
	json_object_object_add(p, "rows", json_object_new_int(30));
	json_object_object_add(p, "cols", json_object_new_int(100));
	json_object *r = result_of(call(&h, id++, "bash.start", p));
	cr_assert_str_eq(jstr(r, "status"), "exited");
	const char *out = jstr(r, "output");
	cr_assert(strncmp(out, "/dev/pts/", 9) == 0, "%s", out);
	cr_assert(strstr(out, "\r\n30 100\r\nTERM=xterm-256color\r\n"), "%s", out);
	json_object_put(r);

	/* Default size 24x80. */
	p = start_params("bash_tty2", "stty size", 10000);
	json_object_object_add(p, "tty", json_object_new_boolean(true));
	r = result_of(call(&h, id++, "bash.start", p));
	cr_assert_str_eq(jstr(r, "output"), "24 80\r\n");
	json_object_put(r);

	/* Input through the terminal: echoed, then printed. */
	p = start_params("bash_ttyin", ECHO_ONE_LINE, 0);
	json_object_object_add(p, "tty", json_object_new_boolean(true));
	r = result_of(call(&h, id++, "bash.start", p));
	cr_assert(jbool(r, "stdin_open"));
	json_object_put(r);
	r = result_of(call(&h, id++, "bash.input", input_params("bash_ttyin", "hello tty\n", false)));
	cr_assert_eq(jint(r, "bytes_written"), 10);
	json_object_put(r);
	char *acc = NULL;
	r = poll_to_end(&h, &id, "bash_ttyin", &acc);
	cr_assert_str_eq(jstr(r, "status"), "exited");
	cr_assert_eq(jint(r, "exit_code"), 0);
	cr_assert_str_eq(acc, "hello tty\r\nhello tty\r\n");
	json_object_put(r);
	free(acc);

	/* close on a tty: end of file (VEOF), also after a partial line. */
	p = start_params("bash_ttycat", "cat; echo; echo eof:$?", 0);
	json_object_object_add(p, "tty", json_object_new_boolean(true));
	json_object_put(result_of(call(&h, id++, "bash.start", p)));
	r = result_of(call(&h, id++, "bash.input", input_params("bash_ttycat", "partial", true)));
	cr_assert_not(jbool(r, "stdin_open"));
	json_object_put(r);
	acc = NULL;
	json_object_put(poll_to_end(&h, &id, "bash_ttycat", &acc));
	cr_assert(strstr(acc, "eof:0\r\n"), "%s", acc);
	free(acc);

	r = result_of(call(&h, id++, "bash.list", json_object_new_object()));
	json_object *e = json_object_array_get_idx(json_object_object_get(r, "sessions"), 0);
	cr_assert_str_eq(jstr(e, "session_id"), "bash_tty");
	cr_assert(jbool(e, "interactive"));
	cr_assert(jbool(e, "tty"));
	cr_assert_not(jbool(e, "stdin_open"));
	json_object_put(r);
	stop_clean(&h);
}

/* A program that closes its terminal handles before it exits (wc closes
 * stdout at exit) still exits with its own status: the terminal is hung up
 * only after the shell was reaped, never with SIGHUP in between. */
Test(bash_interactive, tty_program_closing_its_terminal_early_exits_with_its_status)
{
	struct harness h;
	harness_start(&h);
	int64_t id = 1;
	for (int i = 0; i < 30; i++) {
		char sid[32];
		snprintf(sid, sizeof sid, "bash_wc%d", i);
		json_object *p = start_params(sid, "wc -c", 0);
		json_object_object_add(p, "tty", json_object_new_boolean(true));
		json_object_put(result_of(call(&h, id++, "bash.start", p)));
		json_object_put(result_of(call(&h, id++, "bash.input", input_params(sid, "hello", true))));
		char *acc = NULL;
		json_object *r = poll_to_end(&h, &id, sid, &acc);
		cr_assert_str_eq(jstr(r, "status"), "exited", "run %d: %s", i, json_object_to_json_string(r));
		cr_assert_eq(jint(r, "exit_code"), 0, "run %d: %s", i, json_object_to_json_string(r));
		cr_assert_null(json_object_object_get(r, "signal"), "run %d", i);
		cr_assert(strstr(acc, "5"), "run %d: %s", i, acc);
		json_object_put(r);
		free(acc);
	}
	stop_clean(&h);
}

Test(bash_interactive, input_waits_while_the_program_does_not_read)
{
	struct harness h;
	harness_start(&h);
	int64_t id = 1;
	json_object *p = start_params("bash_slow", "sleep 1; wc -c", 0);
	json_object_object_add(p, "interactive", json_object_new_boolean(true));
	json_object_put(result_of(call(&h, id++, "bash.start", p)));

	size_t n1 = 300 * 1024, n2 = 900 * 1024;
	char *data = malloc(n2 + 1);
	memset(data, 'a', n2);
	data[n1] = '\0';
	int64_t t0 = now_ms();
	json_object *r = result_of(call(&h, id++, "bash.input", input_params("bash_slow", data, false)));
	cr_assert_lt(now_ms() - t0, 900, "bash.input waited for the reader");
	int64_t written = jint(r, "bytes_written"), pending = jint(r, "pending_input_bytes");
	cr_assert_lt(written, (int64_t)n1, "a pipe nobody reads took %lld bytes", (long long)written);
	cr_assert_eq(written + pending, (int64_t)n1);
	cr_assert(jbool(r, "stdin_open"));
	json_object_put(r);

	/* More than BASH_INPUT_MAX waiting: LIMIT, nothing taken. */
	data[n1] = 'a';
	data[n2] = '\0';
	char *msg;
	char *code = error_code(call(&h, id++, "bash.input", input_params("bash_slow", data, false)), &msg);
	cr_assert_str_eq(code, "LIMIT");
	cr_assert(strstr(msg, "nothing was sent"), "%s", msg);
	free(code);
	free(msg);
	free(data);

	/* The loop stays responsive while input waits. */
	r = result_of(call(&h, id++, "hello", json_object_new_object()));
	json_object_put(r);

	/* Close after the pending input: the program reads it all, then EOF. */
	r = result_of(call(&h, id++, "bash.input", input_params("bash_slow", "", true)));
	cr_assert_not(jbool(r, "stdin_open"));
	json_object_put(r);
	char *out = NULL;
	r = poll_to_end(&h, &id, "bash_slow", &out);
	cr_assert_str_eq(out, "307200\n");
	cr_assert_eq(jint(r, "exit_code"), 0);
	json_object_put(r);
	free(out);
	stop_clean(&h);
}

Test(bash_interactive, signal_name_of_a_killed_shell)
{
	struct harness h;
	harness_start(&h);
	int64_t id = 1;
	json_object *r = result_of(call(&h, id++, "bash.start", start_params("bash_k9", "kill -9 $$", 10000)));
	cr_assert_eq(jint(r, "exit_code"), 137);
	cr_assert_str_eq(jstr(r, "signal"), "SIGKILL");
	json_object_put(r);
	r = result_of(call(&h, id++, "bash.start", start_params("bash_ok", "exit 137", 10000)));
	cr_assert_eq(jint(r, "exit_code"), 137);
	cr_assert_null(json_object_object_get(r, "signal"), "a plain exit has no signal");
	json_object_put(r);
	json_object_put(result_of(call(&h, id++, "bash.start", start_params("bash_term", "sleep 100", 0))));
	r = result_of(call(&h, id++, "bash.stop", obj_sid("bash_term")));
	cr_assert_str_eq(jstr(r, "status"), "killed");
	cr_assert_eq(jint(r, "exit_code"), 128 + 15);
	cr_assert_str_eq(jstr(r, "signal"), "SIGTERM");
	json_object_put(r);
	r = result_of(call(&h, id++, "bash.list", json_object_new_object()));
	json_object *e = json_object_array_get_idx(json_object_object_get(r, "sessions"), 0);
	cr_assert_str_eq(jstr(e, "signal"), "SIGKILL");
	json_object_put(r);
	stop_clean(&h);
}

static void check_collapse(const char *in, const char *want)
{
	size_t n = strlen(in);
	unsigned char *buf = malloc(n + 1);
	memcpy(buf, in, n);
	size_t m = bash_collapse_cr(buf, n);
	buf[m] = '\0';
	cr_assert_str_eq((char *)buf, want, "collapsing '%s'", in);
	free(buf);
}

Test(bash_interactive, collapse_cr_pure)
{
	check_collapse("", "");
	check_collapse("plain\n", "plain\n");
	check_collapse("10%\r20%\r30%\n", "30%\n");
	check_collapse("a\r\nb\r\n", "a\r\nb\r\n");
	check_collapse("x\ry\r\n", "y\r\n");
	check_collapse("1\r2\n3\r4\n", "2\n4\n");
	check_collapse("done\r\n5%\r6%", "done\r\n5%\r6%"); /* partial last line as-is */
	check_collapse("\r\n", "\r\n");
	check_collapse("a\r\r\n", "\r\n");
	check_collapse("abc\r\n", "abc\r\n");
	check_collapse("end\r\n\n", "end\r\n\n");
	check_collapse("\rlead\n", "lead\n");
	check_collapse("trail\r\n\r", "trail\r\n\r");
	check_collapse("é 1%\ré 2%\n", "é 2%\n");
}

Test(bash_interactive, collapse_cr_in_replies_not_in_log)
{
	struct harness h;
	harness_start(&h);
	int64_t id = 1;
	json_object *r =
	    result_of(call(&h, id++, "bash.start",
	                   start_params("bash_cr", "printf '1%%\\r2%%\\r3%%\\n'; printf 'a\\r\\nb\\rc'", 10000)));
	cr_assert_str_eq(jstr(r, "output"), "3%\na\r\nb\rc");
	cr_assert_eq(jint(r, "output_bytes"), 15);
	cr_assert_eq(jint(r, "total_output_bytes"), 15);
	const char *log_path = jstr(r, "log_path");
	FILE *f = fopen(log_path, "rb");
	cr_assert_not_null(f, "%s", log_path);
	char buf[64] = "";
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	cr_assert_str_eq(buf, "1%\r2%\r3%\na\r\nb\rc");
	json_object_put(r);
	stop_clean(&h);
}
