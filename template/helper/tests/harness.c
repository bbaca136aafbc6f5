/* harness.c: the test side of the helper's stdio channel. Forks a child
 * that runs loop_run() on a pair of pipes and speaks newline-delimited
 * JSON-RPC to it, pairing replies by id as the control plane does. */
#include "harness.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../keeper.h"
#include "../loop.h"

/* When this binary is exec'd by harness_start, be the helper: serve the
 * loop on stdin/stdout and exit (LeakSanitizer checks the exit). When the
 * helper in it starts a session's keeper (keeper.h), it executes this
 * binary again as KEEPER_ARGV0: be the keeper. Runs before Criterion's main
 * (glibc passes argc and argv to constructors), so Criterion never
 * starts in those processes. */
__attribute__((constructor)) static void run_loop_if_asked(int argc, char **argv)
{
	if (argc > 0 && strcmp(argv[0], KEEPER_ARGV0) == 0)
		exit(keeper_main());
	const char *ws = getenv("CHAT2SBX_TEST_LOOP_WORKSPACE");
	const char *logs = getenv("CHAT2SBX_TEST_LOOP_LOGS");
	if (!ws || !logs)
		return;
	char ws_copy[PATH_MAX], logs_copy[PATH_MAX];
	snprintf(ws_copy, sizeof ws_copy, "%s", ws);
	snprintf(logs_copy, sizeof logs_copy, "%s", logs);
	unsetenv("CHAT2SBX_TEST_LOOP_WORKSPACE");
	unsetenv("CHAT2SBX_TEST_LOOP_LOGS");
	char channel[PATH_MAX + 32];
	snprintf(channel, sizeof channel, "%s/../" HARNESS_CHANNEL_DIR, ws_copy);
	struct loop_config cfg = {.in_fd = STDIN_FILENO,
	                          .out_fd = STDOUT_FILENO,
	                          .workspace = ws_copy,
	                          .log_dir = logs_copy,
	                          .channel_dir = channel};
	exit(loop_run(&cfg));
}

int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Drop CAP_SYS_PTRACE from the bounding set and the current sets, so the
 * exec'd helper and everything it starts lack it (even as root). */
static void drop_sys_ptrace(void)
{
	prctl(PR_CAPBSET_DROP, CAP_SYS_PTRACE, 0, 0, 0);
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
	if (syscall(SYS_capget, &hdr, data) < 0)
		return;
	data[CAP_TO_INDEX(CAP_SYS_PTRACE)].effective &= ~CAP_TO_MASK(CAP_SYS_PTRACE);
	data[CAP_TO_INDEX(CAP_SYS_PTRACE)].permitted &= ~CAP_TO_MASK(CAP_SYS_PTRACE);
	data[CAP_TO_INDEX(CAP_SYS_PTRACE)].inheritable &= ~CAP_TO_MASK(CAP_SYS_PTRACE);
	syscall(SYS_capset, &hdr, data);
}

void harness_start(struct harness *h)
{
	harness_start_flags(h, 0);
}

static void harness_spawn(struct harness *h, unsigned flags);

void harness_start_flags(struct harness *h, unsigned flags)
{
	memset(h, 0, sizeof *h);
	snprintf(h->dir, sizeof h->dir, "/tmp/chat2sbx-test-XXXXXX");
	cr_assert_not_null(mkdtemp(h->dir));
	snprintf(h->workspace, sizeof h->workspace, "%s/workspace", h->dir);
	snprintf(h->logs, sizeof h->logs, "%s/logs", h->dir);
	cr_assert_eq(mkdir(h->workspace, 0755), 0);
	char channel[PATH_MAX];
	snprintf(channel, sizeof channel, "%s/" HARNESS_CHANNEL_DIR, h->dir);
	cr_assert_eq(mkdir(channel, 0700), 0);
	harness_spawn(h, flags);
}

/* Forks the loop on h's directories (fresh pipes, empty reply buffers). */
static void harness_spawn(struct harness *h, unsigned flags)
{
	h->exited = false;
	h->status = 0;
	int req[2], rep[2];
	cr_assert_eq(pipe2(req, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(rep, O_CLOEXEC), 0);
	fflush(NULL);
	h->pid = fork();
	cr_assert_geq(h->pid, 0);
	if (h->pid == 0) {
		/* A test that fails or crashes must not leave a loop behind (the
		 * loop outlives the end of its input by design). */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		char log[PATH_MAX];
		snprintf(log, sizeof log, "%s/helper.stderr", h->dir);
		int err_fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (dup2(req[0], STDIN_FILENO) < 0 || dup2(rep[1], STDOUT_FILENO) < 0 || err_fd < 0 ||
		    dup2(err_fd, STDERR_FILENO) < 0)
			_exit(120);
		if (flags & HARNESS_NO_SYS_PTRACE)
			drop_sys_ptrace();
		setenv("CHAT2SBX_TEST_LOOP_WORKSPACE", h->workspace, 1);
		setenv("CHAT2SBX_TEST_LOOP_LOGS", h->logs, 1);
		/* A fresh, single-threaded, sanitized process: this test binary
		 * again, taken over by run_loop_if_asked() before Criterion starts. */
		execl("/proc/self/exe", "test_helper (helper loop)", (char *)NULL);
		_exit(121);
	}
	close(req[0]);
	close(rep[1]);
	h->req_fd = req[1];
	h->rep_fd = rep[0];
	h->stash = json_object_new_array();
}

void harness_send(struct harness *h, const char *fmt, ...)
{
	char *line;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&line, fmt, ap);
	va_end(ap);
	cr_assert_geq(n, 0);
	size_t off = 0;
	while (off < (size_t)n) {
		ssize_t w = write(h->req_fd, line + off, (size_t)n - off);
		cr_assert_gt(w, 0, "write request: %s", strerror(errno));
		off += (size_t)w;
	}
	cr_assert_eq(write(h->req_fd, "\n", 1), 1);
	free(line);
}

static json_object *stash_take(struct harness *h, int64_t id)
{
	size_t n = json_object_array_length(h->stash);
	for (size_t i = 0; i < n; i++) {
		json_object *r = json_object_array_get_idx(h->stash, i);
		if (jint(r, "id") == id) {
			json_object_get(r);
			json_object_array_del_idx(h->stash, i, 1);
			return r;
		}
	}
	return NULL;
}

json_object *harness_wait(struct harness *h, int64_t id, int timeout_ms)
{
	json_object *r = stash_take(h, id);
	int64_t deadline = now_ms() + timeout_ms;
	while (!r) {
		char *nl = h->buf ? memchr(h->buf, '\n', h->len) : NULL;
		if (nl) {
			size_t n = (size_t)(nl - h->buf);
			json_tokener *tok = json_tokener_new();
			json_object *o = json_tokener_parse_ex(tok, h->buf, (int)n);
			cr_assert_not_null(o, "reply is not JSON: %.*s", (int)(n > 300 ? 300 : n), h->buf);
			json_tokener_free(tok);
			memmove(h->buf, nl + 1, h->len - n - 1);
			h->len -= n + 1;
			json_object_array_add(h->stash, o);
			r = stash_take(h, id);
			continue;
		}
		int64_t left = deadline - now_ms();
		if (left <= 0)
			return NULL;
		struct pollfd p = {.fd = h->rep_fd, .events = POLLIN};
		if (poll(&p, 1, (int)left) <= 0)
			continue;
		if (h->cap - h->len < 65536) {
			h->cap = h->cap ? h->cap * 2 : 131072;
			h->buf = realloc(h->buf, h->cap);
			cr_assert_not_null(h->buf);
		}
		ssize_t n = read(h->rep_fd, h->buf + h->len, h->cap - h->len);
		if (n <= 0)
			return NULL;
		h->len += (size_t)n;
	}
	return r;
}

json_object *harness_call(struct harness *h, int64_t id, int timeout_ms, const char *fmt, ...)
{
	char *params;
	va_list ap;
	va_start(ap, fmt);
	cr_assert_geq(vasprintf(&params, fmt, ap), 0);
	va_end(ap);
	harness_send(h, "%s", params);
	free(params);
	json_object *reply = harness_wait(h, id, timeout_ms);
	cr_assert_not_null(reply, "no reply to request %lld within %d ms", (long long)id, timeout_ms);
	json_object *result = NULL;
	if (json_object_object_get_ex(reply, "result", &result))
		json_object_get(result);
	json_object_put(reply);
	return result;
}

void harness_ack(struct harness *h, json_object *result, bool delivered)
{
	int64_t start = jint(result, "output_start"), end = jint(result, "output_end");
	const char *sid = jstr(result, "session_id");
	if (!sid || start < 0 || end <= start)
		return;
	harness_send(h,
	             "{\"jsonrpc\":\"2.0\",\"method\":\"%s\",\"params\":{\"session_id\":\"%s\",\"start\":%lld,"
	             "\"end\":%lld}}",
	             delivered ? "bash.ack" : "bash.nack", sid, (long long)start, (long long)end);
}

void harness_close_input(struct harness *h)
{
	close(h->req_fd);
	h->req_fd = -1;
}

bool harness_wait_exit(struct harness *h, int timeout_ms)
{
	for (int waited = 0; !h->exited; waited += 20) {
		if (waitpid(h->pid, &h->status, WNOHANG) == h->pid)
			h->exited = true;
		else if (waited >= timeout_ms)
			return false;
		else
			usleep(20 * 1000);
	}
	return true;
}

int harness_stop(struct harness *h)
{
	if (!h->exited) {
		kill(h->pid, SIGTERM);
		if (!harness_wait_exit(h, 5000)) {
			kill(h->pid, SIGKILL);
			waitpid(h->pid, &h->status, 0);
			h->exited = true;
		}
	}
	int st = h->status;
	if (h->req_fd >= 0)
		close(h->req_fd);
	close(h->rep_fd);
	free(h->buf);
	json_object_put(h->stash);
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", h->dir);
	cr_assert_eq(system(cmd), 0);
	return st;
}

int64_t jint(json_object *o, const char *key)
{
	json_object *v;
	if (!o || !json_object_object_get_ex(o, key, &v))
		return -1;
	return json_object_get_int64(v);
}

const char *jstr(json_object *o, const char *key)
{
	json_object *v;
	if (!o || !json_object_object_get_ex(o, key, &v))
		return NULL;
	return json_object_get_string(v);
}

int jbool(json_object *o, const char *key)
{
	json_object *v;
	if (!o || !json_object_object_get_ex(o, key, &v))
		return 0;
	return json_object_get_boolean(v);
}

void harness_restart(struct harness *h, int sig)
{
	if (!h->exited) {
		kill(h->pid, sig);
		cr_assert(harness_wait_exit(h, 10000), "the loop did not exit after signal %d", sig);
	}
	if (h->req_fd >= 0)
		close(h->req_fd);
	close(h->rep_fd);
	free(h->buf);
	h->buf = NULL;
	h->len = h->cap = 0;
	json_object_put(h->stash);
	harness_spawn(h, 0);
}
