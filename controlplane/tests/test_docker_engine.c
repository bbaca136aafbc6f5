/* test_docker_engine.c: the Docker client (docker/) against a fake engine: a
 * thread serving a Unix socket in a temporary directory, answering each
 * connection with the next canned reply from tests/data/docker/ (one file per
 * case) and recording the request line, headers and body, so the tests check
 * the exact method, path and JSON we send and how engine errors map. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <grp.h>
#include <unistd.h>

#include "base/error.h"
#include "docker/docker.h"
#include "docker/engine_internal.h"
#include "lifecycle/lifecycle.h"

#include "fake_engine.h"

TestSuite(docker_engine, .fini = fake_free_requests);

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* ---- version negotiation and reachability ---- */

Test(docker_engine, negotiates_engine_version)
{
	static const struct fake_reply r[] = {{.fixture = "version.http"}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	cr_assert_str_eq(docker_engine_api_version(e), "1.41");
	cr_assert_str_eq(docker_engine_version(e), "20.10.24+dfsg1");
	cr_assert_str_eq(docker_engine_socket(e), fe->sock);
	docker_engine_free(e);
	fake_stop(fe);
	cr_assert_str_eq(fe->req[0].line, "GET /version HTTP/1.1", "no version prefix: %s", fe->req[0].line);
}

Test(docker_engine, newer_engine_is_used_at_our_max)
{
	static const struct fake_reply r[] = {{.fixture = "version_newer.http"}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	cr_assert_str_eq(docker_engine_api_version(e), DOCKER_API_MAX);
	cr_assert_str_eq(docker_engine_version(e), "27.3.1");
	docker_engine_free(e);
	fake_stop(fe);
}

Test(docker_engine, old_api_is_refused)
{
	static const struct fake_reply r[] = {{.fixture = "version_old.http"}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = NULL;
	struct cp_error *err = NULL;
	cr_assert_lt(docker_engine_new(fe->sock, &e, &err), 0);
	cr_assert_null(e);
	cr_assert_eq(err->code, CP_ERR_UNAVAILABLE);
	cr_assert_not_null(strstr(err->message, "1.40"), "%s", err->message);
	cr_assert_not_null(strstr(err->message, DOCKER_API_MIN), "%s", err->message);
	cp_error_free(err);
	fake_stop(fe);
}

Test(docker_engine, unreachable_socket_names_it)
{
	char dir[] = "/tmp/chat2sbx-nosock-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char sock[128];
	snprintf(sock, sizeof(sock), "%s/docker.sock", dir);
	struct docker_engine *e = NULL;
	struct cp_error *err = NULL;
	cr_assert_lt(docker_engine_new(sock, &e, &err), 0);
	cr_assert_eq(err->code, CP_ERR_UNAVAILABLE);
	cr_assert_not_null(strstr(err->message, sock), "%s", err->message);
	cr_assert_not_null(strstr(err->message, "cannot reach the Docker Engine"), "%s", err->message);
	cr_assert_not_null(strstr(err->message, "systemctl start docker"), "%s", err->message);
	/* Callers above docker/ test the detail, never this text. */
	cr_assert_eq(err->detail, CP_DETAIL_ENGINE_UNREACHABLE);
	cr_assert_eq(err->errnum, ENOENT);
	cr_assert_not_null(strstr(err->message, docker_engine_unreachable_cause(ENOENT)), "%s", err->message);
	cp_error_free(err);
	rmdir(dir);
}

/* A socket file nobody listens on (bound, never listen()ed): the connect is
 * refused, for a request and for the attach hijack alike. */
Test(docker_engine, refusing_socket_is_unreachable_with_its_errno)
{
	static const struct fake_reply r[] = {{.fixture = "version.http"}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	fake_stop(fe);
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(s, 0);
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", docker_engine_socket(e));
	char dir[sizeof(addr.sun_path)];
	snprintf(dir, sizeof(dir), "%s", addr.sun_path);
	*strrchr(dir, '/') = '\0';
	cr_assert_eq(mkdir(dir, 0700), 0, "%s: %s", dir, strerror(errno)); /* fake_stop removed it */
	cr_assert_eq(bind(s, (struct sockaddr *)&addr, sizeof(addr)), 0, "%s", strerror(errno));

	struct cp_error *err = NULL;
	struct json_object *body = NULL;
	long status = 0;
	cr_assert_lt(docker_request(e, "GET", "/_ping", NULL, 2000, "ping", &status, &body, &err), 0);
	cr_expect_eq(err->code, CP_ERR_UNAVAILABLE, "%s", err->message);
	cr_expect_eq(err->detail, CP_DETAIL_ENGINE_UNREACHABLE, "%s", err->message);
	cr_expect_eq(err->errnum, ECONNREFUSED, "%s", err->message);
	cp_error_freep(&err);

	int fd = -1;
	cr_assert_lt(docker_container_attach(e, "sbx_x", 2000, &fd, &err), 0);
	cr_expect_eq(fd, -1);
	cr_expect_eq(err->code, CP_ERR_UNAVAILABLE, "%s", err->message);
	cr_expect_eq(err->detail, CP_DETAIL_ENGINE_UNREACHABLE, "%s", err->message);
	cr_expect_eq(err->errnum, ECONNREFUSED, "%s", err->message);
	cr_expect_not_null(strstr(err->message, "nothing accepts connections"), "%s", err->message);
	cp_error_free(err);

	close(s);
	unlink(addr.sun_path);
	rmdir(dir);
	docker_engine_free(e);
}

/* ---- containers ---- */

static const char *const entrypoint[] = {"/usr/local/bin/chat2sbx-helper", NULL};
static const char *const env[] = {"HOME=/root", "LANG=C.UTF-8", NULL};
static const char *const labels[] = {"chat2sbx.sandbox", "sbx_test", "chat2sbx.workspace", "ws_abc", NULL};
static const struct docker_mount mounts[] = {
    {.source = "/srv/helper", .target = "/usr/local/bin/chat2sbx-helper", .read_only = 1},
    {.source = "/srv/ws", .target = "/workspace", .read_only = 0},
};

static struct docker_container_spec test_spec(int network_disabled)
{
	return (struct docker_container_spec){
	    .name = "sbx_test",
	    .image = "chat2sbx-template:0.1.0",
	    .entrypoint = entrypoint,
	    .env = env,
	    .labels = labels,
	    .working_dir = "/workspace",
	    .mounts = mounts,
	    .n_mounts = 2,
	    .memory_bytes = 512LL << 20,
	    .nano_cpus = 1500000000LL,
	    .pids_limit = 512,
	    .network_disabled = network_disabled,
	    .runtime = network_disabled ? "runc" : NULL,
	};
}

/* SecurityOpt is no-new-privileges and the sandbox seccomp profile, whose
 * text is the builder's (test_docker_seccomp.c proves what it holds). */
static void assert_security_opt(struct json_object *hc)
{
	struct json_object *so = fake_json_member(hc, "SecurityOpt");
	cr_assert_eq(json_object_array_length(so), 2, "%s", json_object_to_json_string(so));
	cr_assert_str_eq(json_object_get_string(json_object_array_get_idx(so, 0)), "no-new-privileges");
	const char *opt = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(docker_seccomp_security_opt(&opt, &err), 0);
	const char *sent = json_object_get_string(json_object_array_get_idx(so, 1));
	cr_assert_eq(strncmp(sent, "seccomp={", 9), 0, "%.40s", sent);
	cr_assert_str_eq(sent, opt);
	cr_assert_not_null(strstr(sent, "\"SCMP_CMP_MASKED_EQ\""));
}

Test(docker_engine, create_sends_hardened_body)
{
	static const struct fake_reply r[] = {{.fixture = "version.http"}, {.fixture = "create_ok.http"}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	struct docker_container_spec spec = test_spec(1);
	char *id = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(docker_container_create(e, &spec, &id, &err), 0, "%s", err ? err->message : "");
	cr_assert_str_eq(id, "e90e34656806a1b6b1f6c5b2e3bd28b4a1e1c0d6f1a4c8b7a4a8f0e4d1c2b3a4");
	free(id);
	docker_engine_free(e);
	fake_stop(fe);

	cr_assert_str_eq(fe->req[1].line, "POST /v1.41/containers/create?name=sbx_test HTTP/1.1");
	cr_assert_not_null(strcasestr(fe->req[1].head, "Content-Type: application/json"));
	struct json_object *b = json_tokener_parse(fe->req[1].body);
	cr_assert_not_null(b, "body is JSON: %s", fe->req[1].body);
	cr_assert_str_eq(json_object_get_string(fake_json_member(b, "Image")), "chat2sbx-template:0.1.0");
	cr_assert_str_eq(json_object_to_json_string_ext(fake_json_member(b, "Entrypoint"), JSON_C_TO_STRING_PLAIN),
	                 "[\"\\/usr\\/local\\/bin\\/chat2sbx-helper\"]");
	cr_assert_eq(json_object_array_length(fake_json_member(b, "Cmd")), 0);
	cr_assert_eq(json_object_array_length(fake_json_member(b, "Env")), 2);
	cr_assert_str_eq(json_object_get_string(fake_json_member(fake_json_member(b, "Labels"), "chat2sbx.workspace")),
	                 "ws_abc");
	cr_assert_str_eq(json_object_get_string(fake_json_member(b, "WorkingDir")), "/workspace");
	fake_json_bool(b, "OpenStdin", 1);
	fake_json_bool(b, "StdinOnce", 0);
	fake_json_bool(b, "AttachStdin", 1);
	fake_json_bool(b, "AttachStdout", 1);
	fake_json_bool(b, "AttachStderr", 1);
	fake_json_bool(b, "Tty", 0);

	struct json_object *hc = fake_json_member(b, "HostConfig");
	cr_assert_eq(json_object_get_int64(fake_json_member(hc, "Memory")), 512LL << 20);
	cr_assert_eq(json_object_get_int64(fake_json_member(hc, "NanoCpus")), 1500000000LL);
	cr_assert_eq(json_object_get_int64(fake_json_member(hc, "PidsLimit")), 512);
	cr_assert_str_eq(json_object_get_string(fake_json_member(hc, "NetworkMode")), "none");
	cr_assert_str_eq(json_object_get_string(fake_json_member(hc, "Runtime")), "runc");
	fake_json_bool(hc, "Privileged", 0);
	fake_json_bool(hc, "Init", 0);
	cr_assert_str_eq(json_object_get_string(fake_json_member(fake_json_member(hc, "LogConfig"), "Type")), "none");
	cr_assert_str_eq(json_object_to_json_string_ext(fake_json_member(hc, "CapDrop"), JSON_C_TO_STRING_PLAIN),
	                 "[\"NET_RAW\",\"MKNOD\",\"AUDIT_WRITE\",\"SYS_CHROOT\",\"SETFCAP\",\"FSETID\"]");
	assert_security_opt(hc);
	struct json_object *m = fake_json_member(hc, "Mounts");
	cr_assert_eq(json_object_array_length(m), 2);
	struct json_object *m0 = json_object_array_get_idx(m, 0), *m1 = json_object_array_get_idx(m, 1);
	cr_assert_str_eq(json_object_get_string(fake_json_member(m0, "Type")), "bind");
	cr_assert_str_eq(json_object_get_string(fake_json_member(m0, "Source")), "/srv/helper");
	cr_assert_str_eq(json_object_get_string(fake_json_member(m0, "Target")), "/usr/local/bin/chat2sbx-helper");
	fake_json_bool(m0, "ReadOnly", 1);
	fake_json_bool(m1, "ReadOnly", 0);
	json_object_put(b);
}

Test(docker_engine, create_with_network_leaves_engine_defaults)
{
	static const struct fake_reply r[] = {{.fixture = "version.http"}, {.fixture = "create_ok.http"}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	struct docker_container_spec spec = test_spec(0);
	spec.memory_bytes = 0;
	spec.nano_cpus = 0;
	spec.pids_limit = 0;
	char *id = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(docker_container_create(e, &spec, &id, &err), 0);
	free(id);
	docker_engine_free(e);
	fake_stop(fe);
	struct json_object *b = json_tokener_parse(fe->req[1].body), *hc = fake_json_member(b, "HostConfig"), *v = NULL;
	cr_assert_not(json_object_object_get_ex(hc, "NetworkMode", &v));
	cr_assert_not(json_object_object_get_ex(hc, "Runtime", &v));
	cr_assert_not(json_object_object_get_ex(hc, "Memory", &v));
	cr_assert_not(json_object_object_get_ex(hc, "NanoCpus", &v));
	cr_assert_not(json_object_object_get_ex(hc, "PidsLimit", &v));
	cr_assert_str_eq(json_object_get_string(fake_json_member(fake_json_member(hc, "LogConfig"), "Type")), "none");
	json_object_put(b);
}

/* Runs one create against a canned error and checks code and message. */
static void create_expect(const char *fixture, enum cp_error_code code, const char *fragment)
{
	const struct fake_reply r[] = {{.fixture = "version.http"}, {.fixture = fixture}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	struct docker_container_spec spec = test_spec(1);
	char *id = NULL;
	struct cp_error *err = NULL;
	cr_assert_lt(docker_container_create(e, &spec, &id, &err), 0);
	cr_assert_null(id);
	cr_assert_eq(err->code, code, "%s: got %s", fixture, cp_error_code_name(err->code));
	cr_assert_not_null(strstr(err->message, "create container 'sbx_test': "), "%s", err->message);
	cr_assert_not_null(strstr(err->message, fragment), "%s", err->message);
	cp_error_free(err);
	docker_engine_free(e);
	fake_stop(fe);
}

Test(docker_engine, create_conflict_maps_to_conflict)
{
	create_expect("create_conflict.http", CP_ERR_CONFLICT, "is already in use by container");
}

Test(docker_engine, create_bad_mount_maps_to_invalid_argument)
{
	create_expect("create_bad_mount.http", CP_ERR_INVALID_ARGUMENT, "bind source path does not exist");
}

Test(docker_engine, create_missing_image_maps_to_not_found)
{
	create_expect("create_no_image.http", CP_ERR_NOT_FOUND, "No such image: chat2sbx-template:9.9.9");
}

Test(docker_engine, create_refuses_odd_labels_without_a_call)
{
	static const struct fake_reply r[] = {{.fixture = "version.http"}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	static const char *const odd[] = {"chat2sbx.sandbox", NULL};
	struct docker_container_spec spec = test_spec(1);
	spec.labels = odd;
	char *id = NULL;
	struct cp_error *err = NULL;
	cr_assert_lt(docker_container_create(e, &spec, &id, &err), 0);
	cr_assert_eq(err->code, CP_ERR_INVALID_ARGUMENT);
	cp_error_free(err);
	docker_engine_free(e);
	fake_stop(fe);
	cr_assert_eq(fe->n_req, 1);
}

Test(docker_engine, start_and_remove_paths)
{
	static const struct fake_reply r[] = {{.fixture = "version.http"},
	                                      {.fixture = "start_ok.http"},
	                                      {.fixture = "start_not_modified.http"},
	                                      {.fixture = "remove_ok.http"}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	struct cp_error *err = NULL;
	cr_assert_eq(docker_container_start(e, "sbx_test", &err), 0);
	cr_assert_eq(docker_container_start(e, "sbx_test", &err), 0, "304 counts as started");
	cr_assert_eq(docker_container_remove(e, "sbx_test", &err), 0);
	cr_assert_null(err);
	docker_engine_free(e);
	fake_stop(fe);
	cr_assert_str_eq(fe->req[1].line, "POST /v1.41/containers/sbx_test/start HTTP/1.1");
	cr_assert_str_eq(fe->req[2].line, "POST /v1.41/containers/sbx_test/start HTTP/1.1");
	cr_assert_str_eq(fe->req[3].line, "DELETE /v1.41/containers/sbx_test?force=1&v=1 HTTP/1.1");
}

Test(docker_engine, start_failure_is_unavailable_with_engine_reason)
{
	static const struct fake_reply r[] = {{.fixture = "version.http"}, {.fixture = "start_error.http"}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	struct cp_error *err = NULL;
	cr_assert_lt(docker_container_start(e, "sbx_test", &err), 0);
	cr_assert_eq(err->code, CP_ERR_UNAVAILABLE);
	cr_assert_not_null(strstr(err->message, "start container 'sbx_test': failed to create shim task"), "%s",
	                   err->message);
	cp_error_free(err);
	docker_engine_free(e);
	fake_stop(fe);
}

/* Two removers (a destroy and the maintenance pass): the second one's 409
 * waits for the first removal, and succeeds once the container is gone. */
Test(docker_engine, remove_waits_for_a_removal_in_progress)
{
	static const struct fake_reply r[] = {{.fixture = "version.http"},
	                                      {.fixture = "remove_in_progress.http"},
	                                      {.fixture = "inspect_running.http"},
	                                      {.fixture = "inspect_missing.http"}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	struct cp_error *err = NULL;
	cr_assert_eq(docker_container_remove(e, "sbx_test", &err), 0, "%s", err ? err->message : "");
	cr_assert_null(err);
	docker_engine_free(e);
	fake_stop(fe);
	cr_assert_str_eq(fe->req[2].line, "GET /v1.41/containers/sbx_test/json HTTP/1.1");
	cr_assert_str_eq(fe->req[3].line, "GET /v1.41/containers/sbx_test/json HTTP/1.1");
}

/* Any other conflict is the caller's to see, at once. */
Test(docker_engine, remove_other_conflict_is_returned)
{
	static const struct fake_reply r[] = {{.fixture = "version.http"}, {.fixture = "create_conflict.http"}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	struct cp_error *err = NULL;
	cr_assert_eq(docker_container_remove(e, "sbx_test", &err), -1);
	cr_assert_eq(err->code, CP_ERR_CONFLICT);
	cr_assert_neq(err->detail, CP_DETAIL_REMOVAL_IN_PROGRESS);
	cp_error_free(err);
	docker_engine_free(e);
	fake_stop(fe);
	cr_assert_eq(fe->n_req, 2);
}

Test(docker_engine, ids_are_escaped_in_paths)
{
	static const struct fake_reply r[] = {{.fixture = "version.http"}, {.fixture = "remove_ok.http"}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	struct cp_error *err = NULL;
	cr_assert_eq(docker_container_remove(e, "a/b?c d", &err), 0);
	docker_engine_free(e);
	fake_stop(fe);
	cr_assert_str_eq(fe->req[1].line, "DELETE /v1.41/containers/a%2Fb%3Fc%20d?force=1&v=1 HTTP/1.1");
}

Test(docker_engine, inspect_missing_is_not_found_with_engine_message)
{
	static const struct fake_reply r[] = {{.fixture = "version.http"}, {.fixture = "inspect_missing.http"}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	struct docker_container_state s = {0};
	struct cp_error *err = NULL;
	cr_assert_lt(docker_container_inspect(e, "sbx_missing", &s, &err), 0);
	cr_assert_eq(err->code, CP_ERR_NOT_FOUND);
	cr_assert_str_eq(err->message, "inspect container 'sbx_missing': No such container: sbx_missing");
	cr_assert_null(s.id);
	cp_error_free(err);
	docker_engine_free(e);
	fake_stop(fe);
	cr_assert_str_eq(fe->req[1].line, "GET /v1.41/containers/sbx_missing/json HTTP/1.1");
}

Test(docker_engine, inspect_decodes_state)
{
	static const struct fake_reply r[] = {
	    {.fixture = "version.http"}, {.fixture = "inspect_ok.http"}, {.fixture = "inspect_dead.http"}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	struct docker_container_state s = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(docker_container_inspect(e, "sbx_test", &s, &err), 0);
	cr_assert_str_eq(s.id, "e90e34656806a1b6b1f6c5b2e3bd28b4a1e1c0d6f1a4c8b7a4a8f0e4d1c2b3a4");
	cr_assert_str_eq(s.name, "sbx_test");
	cr_assert_str_eq(s.status, "exited");
	cr_assert_eq(s.running, 0);
	cr_assert_eq(s.exit_code, 137);
	cr_assert_null(s.error, "an empty State.Error is NULL");
	docker_container_state_clear(&s);
	cr_assert_eq(docker_container_inspect(e, "sbx_dead", &s, &err), 0);
	cr_assert_str_eq(s.status, "dead");
	cr_assert_str_eq(s.error, "driver failed programming external connectivity");
	docker_container_state_clear(&s);
	docker_container_state_clear(&s); /* idempotent */
	docker_engine_free(e);
	fake_stop(fe);
}

Test(docker_engine, list_filters_by_label)
{
	static const struct fake_reply r[] = {
	    {.fixture = "version.http"}, {.fixture = "list_ok.http"}, {.fixture = "list_empty.http"}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	struct docker_container_state *s = NULL;
	size_t n = 0;
	struct cp_error *err = NULL;
	cr_assert_eq(docker_container_list(e, "chat2sbx.sandbox", &s, &n, &err), 0);
	cr_assert_eq(n, 2);
	cr_assert_str_eq(s[0].id, "aaa111");
	cr_assert_str_eq(s[0].name, "sbx_one");
	cr_assert_str_eq(s[0].status, "running");
	cr_assert_eq(s[0].running, 1);
	cr_assert_str_eq(s[1].name, "sbx_two");
	cr_assert_str_eq(s[1].status, "exited");
	cr_assert_eq(s[1].running, 0);
	cr_assert_eq(s[1].exit_code, 137);
	for (size_t i = 0; i < n; i++)
		docker_container_state_clear(&s[i]);
	free(s);
	cr_assert_eq(docker_container_list(e, "chat2sbx.workspace=ws_abc", &s, &n, &err), 0);
	cr_assert_eq(n, 0);
	free(s);
	docker_engine_free(e);
	fake_stop(fe);
	cr_assert_str_eq(fe->req[1].line, "GET /v1.41/containers/json?all=1&filters="
	                                  "%7B%22label%22%3A%5B%22chat2sbx.sandbox%22%5D%7D HTTP/1.1");
	cr_assert_str_eq(fe->req[2].line, "GET /v1.41/containers/json?all=1&filters="
	                                  "%7B%22label%22%3A%5B%22chat2sbx.workspace%3Dws_abc%22%5D%7D HTTP/1.1");
}

/* ---- images ---- */

Test(docker_engine, image_inspect)
{
	static const struct fake_reply r[] = {
	    {.fixture = "version.http"}, {.fixture = "image_ok.http"}, {.fixture = "image_missing.http"}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	char *id = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(docker_image_inspect(e, "chat2sbx-template:0.1.0", &id, &err), 0);
	cr_assert_str_eq(id, "sha256:4f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8");
	free(id);
	id = NULL;
	cr_assert_lt(docker_image_inspect(e, "ghcr.io/x/chat2sbx-template:9.9.9", &id, &err), 0);
	cr_assert_eq(err->code, CP_ERR_NOT_FOUND);
	cr_assert_not_null(strstr(err->message, "inspect image 'ghcr.io/x/chat2sbx-template:9.9.9': No such image"));
	cp_error_free(err);
	docker_engine_free(e);
	fake_stop(fe);
	cr_assert_str_eq(fe->req[1].line, "GET /v1.41/images/chat2sbx-template:0.1.0/json HTTP/1.1");
	cr_assert_str_eq(fe->req[2].line, "GET /v1.41/images/ghcr.io/x/chat2sbx-template:9.9.9/json HTTP/1.1");
}

/* A kept workspace's volume is known by its label (lifecycle/node_engines.c):
 * the labelled one is it; one without labels (as the engine makes a missing
 * named volume at a container's create), a label of another type or value,
 * and a volume that is gone are not; a longer answer than one volume needs
 * is refused, not read. */
Test(docker_engine, volume_label_tells_the_volume_chat2sbx_made)
{
	static const struct fake_reply r[] = {{.fixture = "version.http"},
	                                      {.fixture = "volume_labelled.http"},
	                                      {.fixture = "volume_labelled.http"},
	                                      {.fixture = "volume_unlabelled.http"},
	                                      {.fixture = "volume_other_label.http"},
	                                      {.fixture = "volume_missing.http"},
	                                      {.big_body = 64 * 1024 + 1}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	struct cp_error *err = NULL;
	const char *key = "org.chat2sbx.workspace", *name = "chat2sbx-ws-ws_far";
	cr_expect_eq(docker_volume_has_label(e, name, key, "ws_far", &err), 1);
	cr_expect_eq(docker_volume_has_label(e, name, key, "ws_other", &err), 0, "another workspace's value");
	cr_expect_eq(docker_volume_has_label(e, name, key, "ws_far", &err), 0, "Labels null: the engine made it");
	cr_expect_eq(docker_volume_has_label(e, name, key, "ws_far", &err), 0, "a label that is not text");
	cr_assert_lt(docker_volume_has_label(e, name, key, "ws_far", &err), 0);
	cr_expect_eq(err->code, CP_ERR_NOT_FOUND);
	cr_expect_not_null(strstr(err->message, "the volume 'chat2sbx-ws-ws_far' is gone"), "%s", err->message);
	cp_error_free(err);
	err = NULL;
	cr_assert_lt(docker_volume_has_label(e, name, key, "ws_far", &err), 0);
	cr_expect_eq(err->code, CP_ERR_INTERNAL, "%s", err->message);
	cp_error_free(err);
	docker_engine_free(e);
	fake_stop(fe);
	cr_expect_str_eq(fe->req[1].line, "GET /v1.41/volumes/chat2sbx-ws-ws_far HTTP/1.1");
}

/* ---- the transport itself ---- */

Test(docker_engine, request_text_body_becomes_json_string)
{
	static const struct fake_reply r[] = {{.fixture = "version.http"}, {.fixture = "ping_text.http"}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	long status = 0;
	struct json_object *body = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(docker_request(e, "GET", "/_ping", NULL, 2000, "ping the engine", &status, &body, &err), 0);
	cr_assert_eq(status, 200);
	cr_assert(json_object_is_type(body, json_type_string));
	cr_assert_str_eq(json_object_get_string(body), "OK\n");
	json_object_put(body);
	docker_engine_free(e);
	fake_stop(fe);
}

Test(docker_engine, request_timeout_maps_to_timeout)
{
	static const struct fake_reply r[] = {{.fixture = "version.http"},
	                                      {.fixture = "list_empty.http", .delay_ms = 1500}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	struct json_object *body = NULL;
	struct cp_error *err = NULL;
	cr_assert_lt(docker_request(e, "GET", "/containers/json", NULL, 300, "list containers", NULL, &body, &err), 0);
	cr_assert_eq(err->code, CP_ERR_TIMEOUT);
	cr_assert_not_null(strstr(err->message, "list containers: "), "%s", err->message);
	cr_assert_not_null(strstr(err->message, "300 ms"), "%s", err->message);
	cp_error_free(err);
	docker_engine_free(e);
	fake_stop(fe);
}

Test(docker_engine, oversized_response_is_refused)
{
	/* A list is read up to 4 MiB; one byte more is refused. */
	static const struct fake_reply r[] = {{.fixture = "version.http"}, {.big_body = (4u << 20) + 1}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	struct json_object *body = NULL;
	struct cp_error *err = NULL;
	cr_assert_lt(
	    docker_request(e, "GET", "/containers/json?all=1", NULL, 10000, "list containers", NULL, &body, &err), 0);
	cr_assert_eq(err->code, CP_ERR_INTERNAL);
	cr_assert_not_null(strstr(err->message, "4096 KiB"), "%s", err->message);
	cr_assert_null(body);
	cp_error_free(err);
	docker_engine_free(e);
	fake_stop(fe);
}

Test(docker_engine, a_ping_answer_past_a_kib_is_refused)
{
	static const struct fake_reply r[] = {{.fixture = "version.http"}, {.big_body = 1025}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	struct cp_error *err = NULL;
	cr_assert_lt(docker_engine_ping(e, 5000, &err), 0);
	cr_assert_eq(err->code, CP_ERR_INTERNAL);
	cr_expect_not_null(strstr(err->message, "1 KiB this call reads"), "%s", err->message);
	cp_error_free(err);
	docker_engine_free(e);
	fake_stop(fe);
}

Test(docker_engine, an_info_answer_past_a_mib_is_refused)
{
	static const struct fake_reply r[] = {{.fixture = "version.http"}, {.big_body = (1u << 20) + 1}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	struct docker_engine_facts f = {0};
	struct cp_error *err = NULL;
	cr_assert_lt(docker_engine_facts(e, &f, &err), 0);
	cr_assert_eq(err->code, CP_ERR_INTERNAL);
	cr_expect_not_null(strstr(err->message, "1024 KiB"), "%s", err->message);
	cp_error_free(err);
	docker_engine_free(e);
	fake_stop(fe);
}

Test(docker_engine, each_call_reads_what_its_answer_can_need)
{
	cr_expect_eq(docker_response_max("GET", "/_ping"), 1024);
	cr_expect_eq(docker_response_max("GET", "/version"), 64 * 1024);
	cr_expect_eq(docker_response_max("GET", "/info"), 1 << 20);
	cr_expect_eq(docker_response_max("GET", "/containers/json?all=1&filters=x"), 4 << 20);
	cr_expect_eq(docker_response_max("GET", "/networks?filters=x"), 4 << 20);
	cr_expect_eq(docker_response_max("GET", "/containers/abc/json?size=1"), 1 << 20);
	cr_expect_eq(docker_response_max("GET", "/images/chat2sbx-template%3A1/json"), 1 << 20);
	cr_expect_eq(docker_response_max("GET", "/exec/e1/json"), 1 << 20);
	cr_expect_eq(docker_response_max("GET", "/networks/n1"), 1 << 20);
	cr_expect_eq(docker_response_max("POST", "/exec/e1/start"), DOCKER_MAX_RESPONSE);
	cr_expect_eq(docker_response_max("POST", "/containers/create?name=x"), 256 * 1024);
	cr_expect_eq(docker_response_max("POST", "/containers/x/exec/start"), 256 * 1024);
	cr_expect_eq(docker_response_max("DELETE", "/volumes/v?force=1"), 256 * 1024);
	cr_expect_eq(docker_response_max("GET", "/volumes/chat2sbx-ws-ws_a"), 64 * 1024);
	cr_expect_eq(docker_response_max("GET", "/_ping/more"), 256 * 1024);
	cr_expect_eq(docker_response_max(NULL, NULL), 256 * 1024);
}

Test(docker_engine, only_short_printable_text_is_kept)
{
	cr_expect(docker_text_printable("20.10.24+dfsg1", 64));
	cr_expect(!docker_text_printable("", 64));
	cr_expect(!docker_text_printable(NULL, 64));
	cr_expect(!docker_text_printable("20.10.24", 3));
	cr_expect(!docker_text_printable("20.10\033[2J", 64));
	cr_expect(!docker_text_printable("tab\tx", 64));
	cr_expect(!docker_text_printable("line\nbreak", 64));
	cr_expect(!docker_text_printable("\xc3\xa9", 64));
	cr_expect(!docker_text_printable("del\x7f", 64));
}

/* ---- attach ---- */

struct collected {
	char out[256];
	size_t out_len;
};

static void collect(void *userdata, enum docker_stream stream, const char *data, size_t len)
{
	struct collected *c = userdata;
	if (stream != DOCKER_STREAM_STDOUT)
		return;
	cr_assert_lt(c->out_len + len, sizeof(c->out));
	memcpy(c->out + c->out_len, data, len);
	c->out_len += len;
}

/* Reads and demultiplexes until stdout holds want bytes (2 s at most). */
static void read_stdout(int fd, struct docker_demux *d, struct collected *c, size_t want)
{
	while (c->out_len < want) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		cr_assert_gt(poll(&p, 1, 2000), 0, "stream bytes arrive");
		char buf[256];
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		cr_assert_gt(n, 0);
		cr_assert_eq(docker_demux_feed(d, buf, (size_t)n), 0);
	}
}

Test(docker_engine, attach_keeps_bytes_sent_with_the_headers)
{
	/* The engine may put stream frames in the same segment as its 101. */
	static const char early[] = "\x01\x00\x00\x00\x00\x00\x00\x06"
	                            "early\n"
	                            "\x02\x00\x00\x00\x00\x00\x00\x04"
	                            "log\n";
	static const struct fake_reply r[] = {
	    {.fixture = "version.http"},
	    {.fixture = "attach_upgrade.http", .extra = early, .extra_len = sizeof(early) - 1, .echo = 1}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	int fd = -1;
	struct cp_error *err = NULL;
	cr_assert_eq(docker_container_attach(e, "sbx_test", 2000, &fd, &err), 0, "%s", err ? err->message : "");
	cr_assert_geq(fd, 0);
	cr_assert_eq(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	cr_assert_eq(fcntl(fd, F_GETFL) & O_NONBLOCK, 0, "blocking");

	struct collected c = {0};
	struct docker_demux d;
	docker_demux_init(&d, collect, &c);
	read_stdout(fd, &d, &c, 6);
	cr_assert_eq(memcmp(c.out, "early\n", 6), 0);
	cr_assert_eq(send(fd, "ping\n", 5, MSG_NOSIGNAL), 5);
	read_stdout(fd, &d, &c, 11);
	cr_assert_eq(memcmp(c.out, "early\nping\n", 11), 0);
	close(fd);
	docker_engine_free(e);
	fake_stop(fe);
	cr_assert_str_eq(fe->req[1].line,
	                 "POST /v1.41/containers/sbx_test/attach?stream=1&stdin=1&stdout=1&stderr=1 HTTP/1.1");
	cr_assert_not_null(strstr(fe->req[1].head, "Upgrade: tcp"));
	cr_assert_not_null(strstr(fe->req[1].head, "Connection: Upgrade"));
}

Test(docker_engine, attach_missing_is_not_found)
{
	static const struct fake_reply r[] = {{.fixture = "version.http"}, {.fixture = "attach_missing.http"}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	int fd = -1;
	struct cp_error *err = NULL;
	cr_assert_lt(docker_container_attach(e, "sbx_missing", 2000, &fd, &err), 0);
	cr_assert_eq(fd, -1);
	cr_assert_eq(err->code, CP_ERR_NOT_FOUND);
	cr_assert_str_eq(err->message, "attach to container 'sbx_missing': No such container: sbx_missing");
	cp_error_free(err);
	docker_engine_free(e);
	fake_stop(fe);
}

Test(docker_engine, attach_chunked_error_keeps_engine_message)
{
	static const struct fake_reply r[] = {{.fixture = "version.http"}, {.fixture = "attach_error_chunked.http"}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	int fd = -1;
	struct cp_error *err = NULL;
	cr_assert_lt(docker_container_attach(e, "sbx_test", 2000, &fd, &err), 0);
	cr_assert_eq(err->code, CP_ERR_UNAVAILABLE);
	cr_assert_not_null(strstr(err->message, "attach to container 'sbx_test': container e90e34656806 is "
	                                        "restarting"),
	                   "%s", err->message);
	cp_error_free(err);
	docker_engine_free(e);
	fake_stop(fe);
}

Test(docker_engine, attach_handshake_has_a_deadline)
{
	static const struct fake_reply r[] = {{.fixture = "version.http"},
	                                      {.fixture = "attach_upgrade.http", .delay_ms = 1500}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	int fd = -1;
	struct cp_error *err = NULL;
	cr_assert_lt(docker_container_attach(e, "sbx_test", 200, &fd, &err), 0);
	cr_assert_eq(err->code, CP_ERR_TIMEOUT);
	cp_error_free(err);
	docker_engine_free(e);
	fake_stop(fe);
}

Test(docker_engine, attach_unreachable_names_socket)
{
	static const struct fake_reply r[] = {{.fixture = "version.http"}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	char sock[128];
	snprintf(sock, sizeof(sock), "%s", fe->sock);
	fake_stop(fe); /* the socket file is gone now */
	int fd = -1;
	struct cp_error *err = NULL;
	cr_assert_lt(docker_container_attach(e, "sbx_test", 500, &fd, &err), 0);
	cr_assert_eq(err->code, CP_ERR_UNAVAILABLE);
	cr_assert_not_null(strstr(err->message, sock), "%s", err->message);
	cp_error_free(err);
	docker_engine_free(e);
}

Test(docker_engine, create_joins_the_named_network)
{
	static const struct fake_reply r[] = {{.fixture = "version.http"}, {.fixture = "create_ok.http"}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	struct docker_container_spec spec = test_spec(0);
	spec.network = "chat2sbx";
	char *id = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(docker_container_create(e, &spec, &id, &err), 0);
	free(id);
	docker_engine_free(e);
	fake_stop(fe);
	struct json_object *b = json_tokener_parse(fe->req[1].body);
	cr_assert_str_eq(json_object_get_string(fake_json_member(fake_json_member(b, "HostConfig"), "NetworkMode")),
	                 "chat2sbx");
	json_object_put(b);
}

/* ---- forwarder containers and per-sandbox networks (sandbox_expose) ---- */

Test(docker_engine, create_forwarder_publishes_a_port)
{
	static const struct fake_reply r[] = {{.fixture = "version.http"}, {.fixture = "create_ok.http"}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	struct docker_container_spec spec = test_spec(0);
	struct docker_port_binding binding = {.container_port = 8000, .host_ip = "127.0.0.1", .host_port = 49160};
	spec.network = "chat2sbx-expose-sbx_test";
	spec.port_bindings = &binding;
	spec.n_port_bindings = 1;
	spec.restart_policy = "unless-stopped";
	spec.cap_drop_all = 1;
	spec.read_only_rootfs = 1;
	spec.user = "65534:65534";
	spec.no_stdin = 1;
	spec.pid_host = 1; /* a node's check of its kernel limits (lifecycle/node_disk.c) */
	char *id = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(docker_container_create(e, &spec, &id, &err), 0, "%s", err ? err->message : "");
	free(id);
	docker_engine_free(e);
	fake_stop(fe);
	struct json_object *b = json_tokener_parse(fe->req[1].body), *hc = fake_json_member(b, "HostConfig");
	cr_assert_str_eq(json_object_get_string(fake_json_member(hc, "PidMode")), "host");
	cr_assert_str_eq(json_object_to_json_string_ext(fake_json_member(hc, "PortBindings"), JSON_C_TO_STRING_PLAIN),
	                 "{\"8000\\/tcp\":[{\"HostIp\":\"127.0.0.1\",\"HostPort\":\"49160\"}]}");
	cr_assert_str_eq(json_object_to_json_string_ext(fake_json_member(b, "ExposedPorts"), JSON_C_TO_STRING_PLAIN),
	                 "{\"8000\\/tcp\":{}}");
	cr_assert_str_eq(json_object_get_string(fake_json_member(fake_json_member(hc, "RestartPolicy"), "Name")),
	                 "unless-stopped");
	cr_assert_str_eq(json_object_to_json_string_ext(fake_json_member(hc, "CapDrop"), JSON_C_TO_STRING_PLAIN),
	                 "[\"ALL\"]");
	assert_security_opt(hc); /* forwarders too, for uniformity */
	fake_json_bool(hc, "ReadonlyRootfs", 1);
	cr_assert_str_eq(json_object_get_string(fake_json_member(hc, "NetworkMode")), "chat2sbx-expose-sbx_test");
	cr_assert_str_eq(json_object_get_string(fake_json_member(b, "User")), "65534:65534");
	fake_json_bool(b, "OpenStdin", 0);
	fake_json_bool(b, "AttachStdin", 0);
	json_object_put(b);
}

Test(docker_engine, create_engine_chosen_port_and_defaults_unchanged)
{
	static const struct fake_reply r[] = {
	    {.fixture = "version.http"}, {.fixture = "create_ok.http"}, {.fixture = "create_ok.http"}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	struct docker_container_spec spec = test_spec(0);
	struct docker_port_binding binding = {.container_port = 3000};
	spec.port_bindings = &binding;
	spec.n_port_bindings = 1;
	char *id = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(docker_container_create(e, &spec, &id, &err), 0);
	free(id);
	struct docker_container_spec plain = test_spec(0);
	cr_assert_eq(docker_container_create(e, &plain, &id, &err), 0);
	free(id);
	docker_engine_free(e);
	fake_stop(fe);
	struct json_object *b = json_tokener_parse(fe->req[1].body), *hc = fake_json_member(b, "HostConfig"), *v = NULL;
	cr_assert_str_eq(json_object_to_json_string_ext(fake_json_member(hc, "PortBindings"), JSON_C_TO_STRING_PLAIN),
	                 "{\"3000\\/tcp\":[{\"HostIp\":\"\",\"HostPort\":\"\"}]}");
	json_object_put(b);
	/* Without the new fields the body is what sandboxes always had. */
	b = json_tokener_parse(fe->req[2].body);
	hc = fake_json_member(b, "HostConfig");
	cr_assert_not(json_object_object_get_ex(hc, "PortBindings", &v));
	cr_assert_not(json_object_object_get_ex(hc, "RestartPolicy", &v));
	cr_assert_not(json_object_object_get_ex(hc, "ReadonlyRootfs", &v));
	cr_assert_not(json_object_object_get_ex(hc, "PidMode", &v), "a sandbox never shares a pid namespace");
	cr_assert_not(json_object_object_get_ex(b, "ExposedPorts", &v));
	cr_assert_not(json_object_object_get_ex(b, "User", &v));
	fake_json_bool(b, "OpenStdin", 1);
	json_object_put(b);
}

/* Issue 25: a user outside the socket's group gets EACCES, and the error
 * says so and what to run, not "engine down". As root the connect runs in a
 * child that dropped to nobody (root is never refused). */
Test(docker_engine, denied_socket_names_the_group_to_join)
{
	static const struct fake_reply r[] = {{.fixture = "version.http"}};
	struct fake_engine *fe = fake_start(r, N(r));
	cr_assert_eq(chmod(fe->dir, 0755), 0);
	cr_assert_eq(chmod(fe->sock, 0600), 0);
	int p[2];
	cr_assert_eq(pipe(p), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(p[0]);
		if (geteuid() == 0 && (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0))
			_exit(3);
		struct docker_engine *e = NULL;
		struct cp_error *err = NULL;
		char out[1024] = "";
		if (docker_engine_new(fe->sock, &e, &err) < 0)
			snprintf(out, sizeof(out), "%d %d %s", err->errnum, err->detail == CP_DETAIL_ENGINE_UNREACHABLE,
			         err->message);
		if (write(p[1], out, strlen(out)) < 0)
			_exit(4);
		_exit(0);
	}
	close(p[1]);
	char got[1024] = "";
	ssize_t n = read(p[0], got, sizeof(got) - 1);
	close(p[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
	cr_assert_gt(n, 0, "the connect was not refused");
	got[n] = '\0';
	char want[32];
	snprintf(want, sizeof(want), "%d 1 ", EACCES);
	cr_expect(!strncmp(got, want, strlen(want)), "errnum and detail: %s", got);
	cr_expect(strstr(got, "permission denied"), "%s", got);
	cr_expect(strstr(got, "run 'sudo usermod -aG "), "says what to run: %s", got);
	cr_expect(!strstr(got, "systemctl start docker"), "not told to start a running engine: %s", got);
	fake_stop(fe);
}

/* The hint's three cases, from the socket's group and this process's. */
Test(docker_engine, access_hint_from_the_socket_group)
{
	char dir[] = "/tmp/chat2sbx-hint-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char path[128], hint[512];
	snprintf(path, sizeof(path), "%s/sock", dir);
	int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	close(fd);
	/* A group this process holds: the mode is what keeps it out. */
	cr_assert_eq(chown(path, (uid_t)-1, getegid()), 0);
	docker_socket_access_hint(path, hint, sizeof(hint));
	cr_expect(strstr(hint, "socket's mode (0600)"), "%s", hint);
	if (geteuid() == 0 && !setgroups(0, NULL)) {
		cr_assert_eq(chown(path, (uid_t)-1, 65534), 0);
		docker_socket_access_hint(path, hint, sizeof(hint));
		cr_expect(strstr(hint, "you are not in the ") && strstr(hint, "sudo usermod -aG "), "%s", hint);
		/* Root's group (the engine found no docker group): joining
		 * root's group is never the advice. */
		cr_assert_eq(chown(path, (uid_t)-1, 0), 0);
		cr_assert_eq(setegid(65534), 0);
		docker_socket_access_hint(path, hint, sizeof(hint));
		cr_assert_eq(setegid(0), 0);
		cr_expect(strstr(hint, "root's group") && strstr(hint, "groupadd docker") && !strstr(hint, "-aG root"),
		          "%s", hint);
	}
	/* No socket to read: the usual group. */
	docker_socket_access_hint("/nonexistent/docker.sock", hint, sizeof(hint));
	cr_expect(strstr(hint, "not in the docker group; run 'sudo usermod -aG docker $USER' and log in again"), "%s",
	          hint);
	unlink(path);
	rmdir(dir);
}

/* ---- a tar streamed into a container (a clone's source on another node) ---- */

/* A file with no name holding len bytes of data (an upload's source). */
static int unnamed_file(const void *data, size_t len)
{
	char path[] = "/tmp/chat2sbx-upload-XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	unlink(path);
	cr_assert_eq(write(fd, data, len), (ssize_t)len);
	return fd;
}

/* The engine's version, then one 204 for the PUT; up sent to sbx_a's path. */
static int put_stream(struct fake_engine **ret_fe, const char *path, const struct docker_upload *up,
                      struct cp_error **err)
{
	static const struct fake_reply r[] = {{.fixture = "version.http"}, {.fixture = "start_ok.http"}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	int rc = docker_container_put_archive_stream(e, "sbx_a", path, up, 10000, err);
	docker_engine_free(e);
	fake_stop(fe);
	*ret_fe = fe;
	return rc;
}

Test(docker_engine, put_archive_stream_sends_head_file_and_tail_as_one_body)
{
	/* 200 KiB: several read callbacks; the file's own offset is not used. */
	size_t n = 200 * 1024;
	char *data = malloc(n + 4);
	memcpy(data, "skip", 4);
	for (size_t i = 0; i < n; i++)
		data[4 + i] = (char)('a' + i % 26);
	int fd = unnamed_file(data, n + 4);
	struct docker_upload up = {
	    .head = "HEAD", .head_len = 4, .fd = fd, .fd_offset = 4, .fd_len = n, .tail = "TAIL", .tail_len = 4};
	struct cp_error *err = NULL;
	struct fake_engine *fe = NULL;
	cr_assert_eq(put_stream(&fe, "/.chat2sbx", &up, &err), 0, "%s", err ? err->message : "");
	cr_expect_str_eq(fe->req[1].line, "PUT /v1.41/containers/sbx_a/archive?path=/.chat2sbx HTTP/1.1");
	cr_expect(strcasestr(fe->req[1].head, "Content-Type: application/x-tar") != NULL, "%s", fe->req[1].head);
	cr_expect(strcasestr(fe->req[1].head, "Content-Length: 204808") != NULL, "%s", fe->req[1].head);
	const char *b = fe->req[1].body;
	cr_expect_eq(memcmp(b, "HEAD", 4), 0);
	cr_expect_eq(memcmp(b + 4, data + 4, n), 0);
	cr_expect_eq(memcmp(b + 4 + n, "TAIL", 4), 0);
	free(data);
	close(fd);
}

Test(docker_engine, put_archive_stream_of_a_file_that_ends_early_is_abandoned)
{
	int fd = unnamed_file("short", 5);
	struct docker_upload up = {.fd = fd, .fd_len = 4096};
	struct cp_error *err = NULL;
	struct fake_engine *fe = NULL;
	cr_expect_eq(put_stream(&fe, "/", &up, &err), -1);
	cr_assert_not_null(err);
	cr_expect_eq(err->code, CP_ERR_INTERNAL);
	cr_expect(strstr(err->message, "ended early") != NULL, "%s", err->message);
	cp_error_freep(&err);
	close(fd);
}
