/* test_docker_tls.c: a remote engine's address and its failures (issue 28,
 * docker/tls.c): the one endpoint form accepted and the words for every
 * other, plain TCP refused; the libcurl failures of a TLS exchange mapped
 * to codes that say which side refused a certificate, never with a file's
 * bytes; an engine that does not answer; the facts of GET /info. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <curl/curl.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "docker/docker.h"
#include "docker/engine_internal.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

Test(docker_tls, the_endpoint_is_tcp_host_port_with_tls)
{
	struct {
		const char *in, *host;
		int port;
	} ok[] = {{"tcp://10.231.1.2:2376", "10.231.1.2", 2376},
	          {"tcp://node-2.example:2376", "node-2.example", 2376},
	          {"tcp://[fd00::2]:2376", "fd00::2", 2376},
	          {"tcp://h:1", "h", 1},
	          {"tcp://h:65535", "h", 65535}};
	for (size_t i = 0; i < N(ok); i++) {
		char *host = NULL;
		int port = 0;
		struct cp_error *err = NULL;
		cr_expect_eq(docker_endpoint_parse(ok[i].in, 1, &host, &port, &err), 0, "%s: %s", ok[i].in,
		             err ? err->message : "");
		cr_expect(host && !strcmp(host, ok[i].host), "%s: %s", ok[i].in, host);
		cr_expect_eq(port, ok[i].port, "%s", ok[i].in);
		free(host);
		cp_error_freep(&err);
	}
	struct {
		const char *in, *words;
	} bad[] = {
	    {"http://10.0.0.2:2376", "not as a URL"},
	    {"https://10.0.0.2:2376", "not as a URL"},
	    {"unix:///var/run/docker.sock", "node 'local' already"},
	    {"/var/run/docker.sock", "node 'local' already"},
	    {"ssh://user@host", "not an engine address"},
	    {"10.0.0.2:2376", "not an engine address"},
	    {"tcp://10.0.0.2", "give the port"},
	    {"tcp://10.0.0.2:", "give the port"},
	    {"tcp://10.0.0.2:0", "give the port"},
	    {"tcp://10.0.0.2:65536", "give the port"},
	    {"tcp://10.0.0.2:2376/", "give the port"},
	    {"tcp://10.0.0.2:+2376", "give the port"},
	    {"tcp://:2376", "the host must be"},
	    {"tcp://a b:2376", "the host must be"},
	    {"tcp://user@h:2376", "the host must be"},
	    {"tcp://[fd00::2]2376", "IPv6"},
	    {"tcp://[zz]:2376", "IPv6"},
	    {"", "empty"},
	};
	for (size_t i = 0; i < N(bad); i++) {
		char *host = NULL;
		int port = -1;
		struct cp_error *err = NULL;
		cr_expect_eq(docker_endpoint_parse(bad[i].in, 1, &host, &port, &err), -1, "'%s' accepted", bad[i].in);
		cr_expect_null(host);
		cr_expect_eq(port, -1);
		if (err) {
			cr_expect_eq(err->code, CP_ERR_INVALID_ARGUMENT);
			cr_expect(strstr(err->message, bad[i].words) != NULL, "%s: %s", bad[i].in, err->message);
		}
		cp_error_freep(&err);
	}
	/* A good address without TLS: plain TCP, refused with the reason. */
	char *host = NULL;
	int port = 0;
	struct cp_error *err = NULL;
	cr_expect_eq(docker_endpoint_parse("tcp://10.0.0.2:2375", 0, &host, &port, &err), -1);
	cr_expect_null(host);
	cr_expect(strstr(err->message, "plain TCP without TLS is refused") != NULL, "%s", err->message);
	cr_expect(strstr(err->message, "--tls-ca") != NULL, "%s", err->message);
	cp_error_freep(&err);
	struct docker_engine *e = NULL;
	struct docker_tls_files none = {0};
	cr_expect_eq(docker_engine_new_tls("tcp://10.0.0.2:2375", &none, &e, &err), -1);
	cr_expect_null(e);
	cr_expect(strstr(err->message, "plain TCP") != NULL, "%s", err->message);
	cp_error_freep(&err);
}

Test(docker_tls, failures_say_which_side_refused_and_never_a_file)
{
	struct {
		CURLcode rc;
		const char *detail;
		enum cp_error_code code;
		const char *words;
	} rows[] = {
	    {CURLE_COULDNT_CONNECT, "x", CP_ERR_UNAVAILABLE, "nothing accepts connections"},
	    {CURLE_COULDNT_RESOLVE_HOST, "x", CP_ERR_UNAVAILABLE, "does not resolve"},
	    {CURLE_OPERATION_TIMEDOUT, "x", CP_ERR_TIMEOUT, "did not answer within 5000 ms"},
	    {CURLE_PEER_FAILED_VERIFICATION, "unable to get local issuer certificate", CP_ERR_DENIED,
	     "does not trust (unable to get local issuer certificate); check that --tls-ca"},
	    {CURLE_RECV_ERROR, "SSL_read: sslv3 alert bad certificate", CP_ERR_DENIED,
	     "refused chat2sbx's client certificate"},
	    {CURLE_SSL_CONNECT_ERROR, "tlsv13 alert certificate required", CP_ERR_DENIED,
	     "refused chat2sbx's client certificate"},
	    {CURLE_SSL_CONNECT_ERROR, "wrong version number", CP_ERR_UNAVAILABLE, "listens with --tlsverify"},
	    {CURLE_SSL_CERTPROBLEM, "could not load PEM client certificate from /secret/key.pem",
	     CP_ERR_INVALID_ARGUMENT, "--tls-cert and --tls-key"},
	    {CURLE_SSL_CACERT_BADFILE, "error setting certificate file: /secret/ca.pem", CP_ERR_INVALID_ARGUMENT,
	     "check --tls-ca"},
	    {CURLE_RECV_ERROR, "Connection reset by peer", CP_ERR_UNAVAILABLE, "dropped the connection"},
	};
	for (size_t i = 0; i < N(rows); i++) {
		struct cp_error *err = NULL;
		cr_assert_eq(docker_remote_error(&err, "tcp://10.0.0.2:2376", "ping", rows[i].rc, rows[i].detail,
		                                 rows[i].rc == CURLE_COULDNT_CONNECT ? 111 : 0, 5000),
		             -1);
		cr_expect_eq(err->code, rows[i].code, "row %zu: %s", i, err->message);
		cr_expect(strstr(err->message, rows[i].words) != NULL, "row %zu: %s", i, err->message);
		cr_expect(strstr(err->message, "ping: ") == err->message, "row %zu: %s", i, err->message);
		cr_expect(strstr(err->message, "tcp://10.0.0.2:2376") != NULL, "row %zu: %s", i, err->message);
		cr_expect(strstr(err->message, "/secret") == NULL, "row %zu names a file: %s", i, err->message);
		if (rows[i].rc == CURLE_COULDNT_CONNECT) {
			cr_expect_eq(err->detail, CP_DETAIL_ENGINE_UNREACHABLE);
			cr_expect_eq(err->errnum, 111);
		}
		cp_error_freep(&err);
	}
}

/* Writes a file of mode under dir; returns its path (static buffer i). */
static const char *tls_file(const char *dir, const char *name, mode_t mode)
{
	static char paths[4][256];
	static int next;
	char *p = paths[next++ % 4];
	snprintf(p, 256, "%s/%s", dir, name);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0, "%s: %s", p, strerror(errno));
	cr_assert_eq(write(fd, "-----BEGIN X-----\n", 18), 18);
	close(fd);
	cr_assert_eq(chmod(p, mode), 0);
	return p;
}

Test(docker_tls, an_engine_that_does_not_answer_is_unavailable)
{
	/* 127.0.0.1:1: nothing listens there. Private files are read, then the
	 * connection fails, naming the engine. */
	char dir[] = "/tmp/cp-tls-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	struct docker_tls_files tls = {.ca = tls_file(dir, "ca.pem", 0600),
	                               .cert = tls_file(dir, "cert.pem", 0600),
	                               .key = tls_file(dir, "key.pem", 0600)};
	struct docker_engine *e = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(docker_engine_new_tls("tcp://127.0.0.1:1", &tls, &e, &err), -1);
	cr_expect_null(e);
	cr_expect(err->code == CP_ERR_UNAVAILABLE || err->code == CP_ERR_INVALID_ARGUMENT, "%s", err->message);
	cr_expect(strstr(err->message, "tcp://127.0.0.1:1") != NULL, "%s", err->message);
	cr_expect(strstr(err->message, "TLS files") == NULL, "the files were refused: %s", err->message);
	cp_error_freep(&err);
	unlink(tls.ca);
	unlink(tls.cert);
	unlink(tls.key);
	rmdir(dir);
}

Test(docker_tls, a_loosened_missing_or_linked_tls_file_is_refused_before_any_connection)
{
	char dir[] = "/tmp/cp-tls-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	const char *ca = tls_file(dir, "ca.pem", 0600), *cert = tls_file(dir, "cert.pem", 0600);
	const char *loose = tls_file(dir, "key.pem", 0640);
	char link[300];
	snprintf(link, sizeof(link), "%s/link.pem", dir);
	cr_assert_eq(symlink(ca, link), 0);
	struct {
		const char *key;
		const char *words;
	} rows[] = {
	    {loose, "is not a private file of this user (mode 0640"},
	    {link, "a symbolic link is refused"},
	    {"/nonexistent/key.pem", "cannot open the --tls-key copy"},
	};
	for (size_t i = 0; i < N(rows); i++) {
		struct docker_tls_files tls = {.ca = ca, .cert = cert, .key = rows[i].key};
		struct docker_engine *e = NULL;
		struct cp_error *err = NULL;
		cr_assert_eq(docker_engine_new_tls("tcp://127.0.0.1:1", &tls, &e, &err), -1);
		cr_expect_eq(err->code, CP_ERR_UNAVAILABLE);
		cr_expect(strstr(err->message, rows[i].words) != NULL, "row %zu: %s", i, err->message);
		cr_expect(strstr(err->message, "TLS files of the Docker Engine at 'tcp://127.0.0.1:1'") != NULL,
		          "row %zu: %s", i, err->message);
		cr_expect(strstr(err->message, "BEGIN") == NULL, "row %zu shows bytes: %s", i, err->message);
		cp_error_freep(&err);
	}
	unlink(link);
	unlink(loose);
	unlink(ca);
	unlink(cert);
	rmdir(dir);
}

Test(docker_tls, the_facts_of_info)
{
	struct json_object *info = json_tokener_parse(
	    "{\"Runtimes\":{\"runc\":{\"path\":\"runc\"},\"runsc\":{\"path\":\"/usr/bin/runsc\"}},\"MemTotal\":"
	    "25276157952,\"NCPU\":2,\"ServerVersion\":\"20.10.24+dfsg1\"}");
	struct docker_engine_facts f = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(docker_engine_facts_parse(info, &f, &err), 0);
	cr_expect(strstr(f.runtimes, "runc") && strstr(f.runtimes, "runsc"), "%s", f.runtimes);
	cr_expect_eq(f.memory_bytes, 25276157952LL);
	cr_expect_eq(f.cpus, 2);
	cr_expect_str_eq(f.engine_version, "20.10.24+dfsg1");
	docker_engine_facts_clear(&f);
	json_object_put(info);

	info = json_tokener_parse("{\"Runtimes\":{},\"MemTotal\":-5}");
	cr_assert_eq(docker_engine_facts_parse(info, &f, &err), 0);
	cr_expect_str_eq(f.runtimes, "");
	cr_expect_eq(f.memory_bytes, 0);
	cr_expect_null(f.engine_version);
	docker_engine_facts_clear(&f);
	json_object_put(info);

	info = json_tokener_parse("{\"MemTotal\":5}");
	cr_assert_eq(docker_engine_facts_parse(info, &f, &err), -1);
	cr_expect_eq(err->code, CP_ERR_INTERNAL);
	cp_error_freep(&err);
	json_object_put(info);
}

Test(docker_tls, a_forged_info_gives_a_bounded_runtime_list)
{
	/* Another machine writes /info: a hundred thousand runtimes, names
	 * with the list's separator or a terminal escape, and a version that
	 * would repaint a terminal. */
	struct json_object *info = json_object_new_object();
	struct json_object *rts = json_object_new_object();
	json_object_object_add(rts, "x, runsc", json_object_new_object());
	json_object_object_add(rts, "\033[2Jrunc", json_object_new_object());
	json_object_object_add(rts, "", json_object_new_object());
	char name[80];
	memset(name, 'n', 65);
	name[65] = '\0';
	json_object_object_add(rts, name, json_object_new_object());
	for (int i = 0; i < 100000; i++) {
		snprintf(name, sizeof(name), "rt%d", i);
		json_object_object_add(rts, name, json_object_new_object());
	}
	json_object_object_add(info, "Runtimes", rts);
	json_object_object_add(info, "ServerVersion", json_object_new_string("20.10\033]0;owned\007"));
	/* Sizes no machine has, which placement would multiply (overflow). */
	json_object_object_add(info, "NCPU", json_object_new_int64(INT64_MAX / 2));
	json_object_object_add(info, "MemTotal", json_object_new_int64(INT64_MAX));
	struct docker_engine_facts f = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(docker_engine_facts_parse(info, &f, &err), 0);
	cr_expect_eq(f.cpus, 0, "not believed: not known");
	cr_expect_eq(f.memory_bytes, 0);
	size_t names = 1;
	for (const char *c = f.runtimes; *c; c++) {
		names += *c == ',';
		cr_assert(*c == ',' || *c == ' ' || (*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z'), "%s",
		          f.runtimes);
	}
	cr_expect_eq(names, DOCKER_RUNTIMES_MAX, "%zu names", names);
	cr_expect_null(strstr(f.runtimes, "runsc"));
	cr_expect_null(strstr(f.runtimes, "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn"));
	cr_expect(!strncmp(f.runtimes, "rt0, rt1, ", 10), "%.40s", f.runtimes);
	cr_expect_null(f.engine_version);
	docker_engine_facts_clear(&f);
	json_object_put(info);
}
