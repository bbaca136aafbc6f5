/* test_lifecycle_recovery.c: what a tool call meets when a sandbox's helper
 * channel is gone (lifecycle/recovery.c), against a fake engine on a Unix
 * socket: the engine stopped → UNAVAILABLE at once naming the socket, the row
 * untouched (also for the maintenance pass); the container gone or exited →
 * the row failed with the reason; restarting → UNAVAILABLE, row untouched.
 * And the helper channel itself: the end of the attach stream fails every
 * call waiting on it at once with UNAVAILABLE. */
#include <criterion/criterion.h>
#include <errno.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/error.h"
#include "docker/docker.h"
#include "helper/helper.h"
#include "lifecycle/lifecycle_internal.h"

/* ---- a fake engine: /version, and one canned answer for inspect ---- */

static struct {
	char sock[100];
	int lfd;
	pthread_t thread;
	const char *inspect_status; /* "HTTP/1.1 200 OK" or "HTTP/1.1 404 Not Found" */
	const char *inspect_body;
	int inspects;           /* inspect requests seen */
	int attached_fd;        /* an attach answered 101 and then left silent; -1 = none */
	int close_after_attach; /* 1: close the stream right after the 101 instead */
} fake;

static void reply(int cfd, const char *status, const char *body)
{
	char head[256];
	int n = snprintf(head, sizeof(head),
	                 "%s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
	                 status, strlen(body));
	if (send(cfd, head, (size_t)n, MSG_NOSIGNAL) < 0 || send(cfd, body, strlen(body), MSG_NOSIGNAL) < 0)
		return;
}

static void *fake_main(void *arg)
{
	(void)arg;
	for (;;) {
		int cfd = accept(fake.lfd, NULL, NULL);
		if (cfd < 0)
			return NULL; /* the listener was shut down */
		char req[4096];
		size_t len = 0;
		while (len < sizeof(req) - 1 && !memmem(req, len, "\r\n\r\n", 4)) {
			ssize_t r = recv(cfd, req + len, sizeof(req) - 1 - len, 0);
			if (r <= 0)
				break;
			len += (size_t)r;
		}
		req[len] = '\0';
		if (strstr(req, "/attach?")) {
			/* A helper that never answers: the stream opens and stays silent. */
			const char *up = "HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\n"
			                 "Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n";
			if (send(cfd, up, strlen(up), MSG_NOSIGNAL) > 0 && fake.attached_fd < 0 &&
			    !fake.close_after_attach) {
				fake.attached_fd = cfd;
				continue;
			}
		} else if (strstr(req, "GET /version "))
			reply(cfd, "HTTP/1.1 200 OK", "{\"ApiVersion\":\"1.41\",\"Version\":\"fake\"}");
		else if (strstr(req, "/json ")) {
			__atomic_add_fetch(&fake.inspects, 1, __ATOMIC_SEQ_CST);
			reply(cfd, fake.inspect_status, fake.inspect_body);
		} else
			reply(cfd, "HTTP/1.1 500 Internal Server Error", "{\"message\":\"not faked\"}");
		close(cfd);
	}
}

static void fake_start(const char *dir)
{
	snprintf(fake.sock, sizeof(fake.sock), "%s/engine.sock", dir);
	fake.lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(fake.lfd, 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", fake.sock);
	cr_assert_eq(bind(fake.lfd, (struct sockaddr *)&a, sizeof(a)), 0, "bind: %s", strerror(errno));
	cr_assert_eq(listen(fake.lfd, 16), 0);
	cr_assert_eq(pthread_create(&fake.thread, NULL, fake_main, NULL), 0);
}

/* The engine stops: nothing listens on its socket any more. */
static void fake_stop(void)
{
	if (fake.lfd < 0)
		return;
	shutdown(fake.lfd, SHUT_RDWR);
	pthread_join(fake.thread, NULL);
	close(fake.lfd);
	fake.lfd = -1;
	if (fake.attached_fd >= 0)
		close(fake.attached_fd);
	fake.attached_fd = -1;
	unlink(fake.sock);
}

/* ---- fixture: registry + lifecycle on the fake engine ---- */

static char root[64], data_root[128], ws_root[160], db[160];
static struct store *store;
static struct config cfg;
static struct docker_engine *engine;
static struct lifecycle *lc;

static void setup(void)
{
	snprintf(root, sizeof(root), "/tmp/c2s-recov-XXXXXX");
	cr_assert_not_null(mkdtemp(root));
	snprintf(data_root, sizeof(data_root), "%s/data", root);
	snprintf(ws_root, sizeof(ws_root), "%s/workspaces", data_root);
	snprintf(db, sizeof(db), "%s/reg.sqlite", data_root);
	cr_assert_eq(mkdir(data_root, 0700), 0);
	cr_assert_eq(mkdir(ws_root, 0700), 0);
	cfg = (struct config){.data_root = data_root, .workspace_root = ws_root, .database_path = db, .runtime = ""};
	fake.inspect_status = "HTTP/1.1 404 Not Found";
	fake.inspect_body = "{\"message\":\"No such container: sbx_a\"}";
	fake.inspects = 0;
	fake.attached_fd = -1;
	fake.close_after_attach = 0;
	fake_start(root);
	struct cp_error *err = NULL;
	cr_assert_eq(store_open(db, &store, &err), 0);
	cr_assert_eq(docker_engine_new(fake.sock, &engine, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(lifecycle_new(&cfg, store, engine, &lc, &err), 0);
	struct workspace_record w = {.id = "ws_a", .mode = "managed", .path = ws_root, .created_at_ms = 1};
	cr_assert_eq(store_workspace_insert(store, &w, &err), 0);
	struct sandbox_record s = {.id = "sbx_a",
	                           .workspace_id = "ws_a",
	                           .status = "running",
	                           .container_name = "sbx_a",
	                           .image = "img",
	                           .network = 1,
	                           .created_at_ms = 1};
	cr_assert_eq(store_sandbox_insert(store, &s, &err), 0);
}

static void teardown(void)
{
	lifecycle_free(lc);
	docker_engine_free(engine);
	store_free(store);
	fake_stop();
	char cmd[200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	cr_expect_eq(system(cmd), 0);
}

TestSuite(lifecycle_recovery, .init = setup, .fini = teardown, .timeout = 30);

static void expect_row(const char *status, const char *reason_part)
{
	struct sandbox_record s = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(store_sandbox_get(store, "sbx_a", &s, &err), 0);
	cr_expect_str_eq(s.status, status);
	if (reason_part)
		cr_expect(s.failure_reason && strstr(s.failure_reason, reason_part), "reason: %s",
		          s.failure_reason ? s.failure_reason : "(none)");
	else
		cr_expect_null(s.failure_reason, "%s", s.failure_reason);
	sandbox_record_clear(&s);
}

static struct cp_error *channel_fails(void)
{
	struct helper_channel *ch = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(lifecycle_sandbox_channel(lc, "sbx_a", &ch, &err), -1);
	cr_assert_null(ch);
	cr_assert_not_null(err);
	return err;
}

Test(lifecycle_recovery, engine_stopped_fails_at_once_and_keeps_the_row)
{
	fake_stop();
	struct cp_error *err = channel_fails();
	cr_expect_eq(err->code, CP_ERR_UNAVAILABLE);
	cr_expect(strstr(err->message, fake.sock) != NULL, "names the socket: %s", err->message);
	cr_expect(strstr(err->message, "does not answer") != NULL, "%s", err->message);
	cr_expect(strstr(err->message, "start the engine") != NULL, "says what to do: %s", err->message);
	cr_expect(strstr(err->message, "sbx_a") != NULL, "%s", err->message);
	cr_log_info("engine stopped: %s", err->message);
	cp_error_free(err);
	expect_row("running", NULL);
	/* The maintenance pass neither fails the row nor reports an error. */
	cr_expect_eq(lifecycle_reattach_run(lc, &err), 0, "%s", err ? err->message : "");
	expect_row("running", NULL);
}

Test(lifecycle_recovery, container_gone_fails_the_row_with_the_reason)
{
	struct cp_error *err = channel_fails();
	cr_expect_eq(err->code, CP_ERR_CONFLICT);
	cr_expect(strstr(err->message, "sandbox_destroy") != NULL, "says what to do: %s", err->message);
	cp_error_free(err);
	expect_row("failed", "no longer exists");
}

Test(lifecycle_recovery, exited_container_fails_the_row_from_the_maintenance_pass_too)
{
	fake.inspect_status = "HTTP/1.1 200 OK";
	fake.inspect_body = "{\"Id\":\"c0ffee\",\"Name\":\"/sbx_a\",\"State\":{\"Status\":\"exited\",\"Running\":false,"
	                    "\"ExitCode\":137,\"Error\":\"\"}}";
	struct cp_error *err = NULL;
	cr_expect_eq(lifecycle_reattach_run(lc, &err), 0);
	cr_expect_eq(fake.inspects, 1);
	expect_row("failed", "exit code 137");
	err = channel_fails();
	cr_expect_eq(err->code, CP_ERR_CONFLICT, "a failed sandbox says so: %s", err->message);
	cp_error_free(err);
}

Test(lifecycle_recovery, restarting_container_is_unavailable_and_the_row_stays)
{
	fake.inspect_status = "HTTP/1.1 200 OK";
	fake.inspect_body = "{\"Id\":\"c0ffee\",\"Name\":\"/sbx_a\",\"State\":{\"Status\":\"restarting\","
	                    "\"Running\":true,\"Restarting\":true,\"ExitCode\":0}}";
	struct cp_error *err = channel_fails();
	cr_expect_eq(err->code, CP_ERR_UNAVAILABLE);
	cr_expect(strstr(err->message, "retry") != NULL, "%s", err->message);
	cp_error_free(err);
	expect_row("running", NULL);
}

/* The stream opens and ends before hello is answered (the container is
 * stopping): not a verdict on the sandbox. (A helper that stays silent
 * makes the row failed after LIFECYCLE_HELLO_TIMEOUT_MS, 15 s: too slow for
 * this suite; recovery.c, reattach_locked.) */
Test(lifecycle_recovery, stream_closed_during_hello_keeps_the_row)
{
	fake.inspect_status = "HTTP/1.1 200 OK";
	fake.inspect_body = "{\"Id\":\"c0ffee\",\"Name\":\"/sbx_a\",\"State\":{\"Status\":\"running\","
	                    "\"Running\":true,\"ExitCode\":0}}";
	fake.close_after_attach = 1;
	struct cp_error *err = channel_fails();
	cr_expect_eq(err->code, CP_ERR_UNAVAILABLE, "%s", err->message);
	cr_expect(strstr(err->message, "not answering") != NULL, "%s", err->message);
	cp_error_free(err);
	expect_row("running", NULL);
}

/* ---- the channel: end of stream fails every waiter at once ---- */

struct waiter {
	struct helper_channel *ch;
	pthread_t thread;
	int rc;
	struct cp_error *err;
};

static void *call_main(void *arg)
{
	struct waiter *w = arg;
	struct json_object *res = NULL;
	w->rc = helper_channel_call(w->ch, "bash.poll", NULL, 60000, &res, &w->err);
	json_object_put(res);
	return NULL;
}

Test(helper_channel_eof, every_waiting_call_fails_at_once_with_unavailable)
{
	int sv[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	struct helper_channel *ch = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(helper_channel_new(sv[0], "sbx_eof", &ch, &err), 0);
	enum { N = 4 };
	struct waiter w[N];
	for (int i = 0; i < N; i++) {
		w[i] = (struct waiter){.ch = helper_channel_ref(ch)};
		cr_assert_eq(pthread_create(&w[i].thread, NULL, call_main, &w[i]), 0);
	}
	/* Read the attach notification and the N request lines (the calls
	 * are in flight), then end the stream as a stopped container or
	 * engine does. */
	char buf[4096];
	int lines = 0;
	while (lines < N + 1) {
		ssize_t r = recv(sv[1], buf, sizeof(buf), 0);
		cr_assert_gt(r, 0);
		for (ssize_t i = 0; i < r; i++)
			lines += buf[i] == '\n';
	}
	shutdown(sv[1], SHUT_RDWR);
	for (int i = 0; i < N; i++) {
		pthread_join(w[i].thread, NULL);
		cr_expect_eq(w[i].rc, -1);
		cr_assert_not_null(w[i].err);
		cr_expect_eq(w[i].err->code, CP_ERR_UNAVAILABLE, "%s", w[i].err->message);
		cr_expect(strstr(w[i].err->message, "stream ended") != NULL, "%s", w[i].err->message);
		cp_error_free(w[i].err);
		helper_channel_unref(w[i].ch);
	}
	cr_expect_not(helper_channel_alive(ch));
	helper_channel_free(ch);
	close(sv[1]);
}
