/* fake_engine.c: the fake Docker Engine of the unit tests (fake_engine.h). */
#include <criterion/criterion.h>
#include <errno.h>
#include <json-c/json.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "docker/docker.h"
#include "fake_engine.h"

char *fake_read_fixture(const char *name, size_t *ret_len)
{
	/* __FILE__ is controlplane/tests/fake_engine.c as the Makefile
	 * compiles it; the tests run from the repository root. */
	char path[512];
	const char *slash = strrchr(__FILE__, '/');
	int dirlen = slash ? (int)(slash - __FILE__) : 1;
	snprintf(path, sizeof(path), "%.*s/data/docker/%s", dirlen, slash ? __FILE__ : ".", name);
	FILE *f = fopen(path, "rb");
	cr_assert_not_null(f, "fixture %s", path);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *buf = malloc((size_t)n + 1);
	cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	*ret_len = (size_t)n;
	return buf;
}

static void write_all(int fd, const void *data, size_t len)
{
	const char *p = data;
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return; /* the client went away (a timeout test) */
		}
		p += n;
		len -= (size_t)n;
	}
}

/* A fixture is status line + headers (LF line ends), a blank line, then the
 * body verbatim. The fake adds CRLFs, Content-Length (or chunked framing) and
 * Connection: close; a 101 gets none of them. */
static void send_reply(int cfd, const struct fake_reply *r)
{
	char *out = NULL;
	size_t out_len = 0;
	FILE *m = open_memstream(&out, &out_len);
	if (r->big_body) {
		fprintf(m,
		        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
		        "Connection: close\r\n\r\n",
		        r->big_body);
		fflush(m);
		write_all(cfd, out, out_len);
		fclose(m);
		free(out);
		char zeros[65536];
		memset(zeros, ' ', sizeof(zeros));
		for (size_t sent = 0; sent < r->big_body; sent += sizeof(zeros))
			write_all(cfd, zeros, r->big_body - sent < sizeof(zeros) ? r->big_body - sent : sizeof(zeros));
		return;
	}
	size_t len = 0;
	char *text = fake_read_fixture(r->fixture, &len);
	char *sep = strstr(text, "\n\n");
	cr_assert_not_null(sep, "fixture %s has no blank line", r->fixture);
	*sep = '\0';
	const char *body = sep + 2;
	size_t body_len = len - (size_t)(body - text);
	int upgrade = strncmp(text, "HTTP/1.1 101", 12) == 0;
	int chunked = strstr(text, "Transfer-Encoding: chunked") != NULL;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
		fprintf(m, "%s\r\n", line);
	if (!upgrade && !chunked)
		fprintf(m, "Content-Length: %zu\r\n", body_len);
	if (!upgrade)
		fprintf(m, "Connection: close\r\n");
	fprintf(m, "\r\n");
	if (chunked) {
		size_t half = body_len / 2;
		fprintf(m, "%zx\r\n%.*s\r\n", half, (int)half, body);
		fprintf(m, "%zx\r\n%.*s\r\n0\r\n\r\n", body_len - half, (int)(body_len - half), body + half);
	} else {
		fwrite(body, 1, body_len, m);
	}
	if (r->extra_len)
		fwrite(r->extra, 1, r->extra_len, m);
	fclose(m);
	write_all(cfd, out, out_len); /* headers and early stream bytes in one write */
	free(out);
	free(text);
}

static void read_request(int cfd, struct fake_request *rq)
{
	char buf[65536];
	size_t len = 0;
	char *end = NULL;
	while (!end && len < sizeof(buf) - 1) {
		ssize_t n = recv(cfd, buf + len, 1, 0); /* byte by byte: never eat stdin bytes */
		if (n <= 0)
			return;
		len += (size_t)n;
		buf[len] = '\0';
		end = strstr(buf, "\r\n\r\n");
	}
	char *crlf = strstr(buf, "\r\n");
	snprintf(rq->line, sizeof(rq->line), "%.*s", (int)(crlf - buf), buf);
	snprintf(rq->head, sizeof(rq->head), "%.*s", (int)(end - crlf), crlf + 2);
	size_t want = 0;
	char *cl = strcasestr(rq->head, "Content-Length:");
	if (cl)
		want = strtoul(cl + 15, NULL, 10);
	rq->body = calloc(1, want + 1);
	for (size_t got = 0; got < want;) {
		ssize_t n = recv(cfd, rq->body + got, want - got, 0);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
}

static void echo_frames(int cfd)
{
	char buf[4096];
	for (;;) {
		ssize_t n = recv(cfd, buf, sizeof(buf), 0);
		if (n <= 0)
			return;
		unsigned char hdr[8] = {1,
		                        0,
		                        0,
		                        0,
		                        (unsigned char)(n >> 24),
		                        (unsigned char)(n >> 16),
		                        (unsigned char)(n >> 8),
		                        (unsigned char)n};
		write_all(cfd, hdr, 8);
		write_all(cfd, buf, (size_t)n);
	}
}

static void *fake_main(void *arg)
{
	struct fake_engine *fe = arg;
	for (size_t i = 0; i < fe->n_replies; i++) {
		struct pollfd p = {.fd = fe->lfd, .events = POLLIN};
		if (poll(&p, 1, 10000) <= 0)
			return NULL; /* the client never came: the test fails on its own */
		int cfd = accept4(fe->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (cfd < 0)
			return NULL;
		read_request(cfd, &fe->req[fe->n_req++]);
		if (fe->replies[i].delay_ms)
			usleep((useconds_t)fe->replies[i].delay_ms * 1000);
		send_reply(cfd, &fe->replies[i]);
		if (fe->replies[i].echo)
			echo_frames(cfd);
		close(cfd);
	}
	return NULL;
}

/* One fake per test process (Criterion runs each test in its own process). */
struct fake_engine fake;

static void listen_on_temp_socket(struct fake_engine *fe)
{
	char dir[] = "/tmp/chat2sbx-fake-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	snprintf(fe->dir, sizeof(fe->dir), "%s", dir);
	snprintf(fe->sock, sizeof(fe->sock), "%s/docker.sock", dir);
	fe->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	cr_assert_lt(strlen(fe->sock), sizeof(addr.sun_path));
	memcpy(addr.sun_path, fe->sock, strlen(fe->sock) + 1);
	cr_assert_eq(bind(fe->lfd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	cr_assert_eq(listen(fe->lfd, 64), 0);
}

struct fake_engine *fake_start(const struct fake_reply *replies, size_t n)
{
	struct fake_engine *fe = &fake;
	memset(fe, 0, sizeof(*fe));
	listen_on_temp_socket(fe);
	fe->replies = replies;
	fe->n_replies = n;
	cr_assert_eq(pthread_create(&fe->thread, NULL, fake_main, fe), 0);
	return fe;
}

/* Joins the server thread (all replies served), then removes the socket.
 * The recorded requests stay readable until the test ends. */
void fake_stop(struct fake_engine *fe)
{
	pthread_join(fe->thread, NULL);
	close(fe->lfd);
	unlink(fe->sock);
	rmdir(fe->dir);
}

void fake_free_requests(void)
{
	for (size_t i = 0; i < fake.n_req; i++)
		free(fake.req[i].body);
	fake.n_req = 0;
}

static void send_text(int cfd, const char *status, const char *body)
{
	char head[256];
	int n = snprintf(head, sizeof(head),
	                 "HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\nConnection: "
	                 "close\r\n\r\n",
	                 status, strlen(body));
	write_all(cfd, head, (size_t)n);
	write_all(cfd, body, strlen(body));
}

static void log_line(struct fake_engine *fe, const char *fmt, const char *text)
{
	pthread_mutex_lock(&fe->lock);
	if (fe->n_lines < sizeof(fe->lines) / sizeof(fe->lines[0]))
		snprintf(fe->lines[fe->n_lines++], sizeof(fe->lines[0]), fmt, text);
	pthread_mutex_unlock(&fe->lock);
}

struct helper_run {
	struct fake_engine *fe;
	int fd;
	fake_helper_fn fn;
};

/* Answers one request line of the attach stream; -1 ends the stream. */
static int helper_line(struct helper_run *h, const char *line)
{
	struct json_object *req = json_tokener_parse(line);
	struct json_object *m = NULL, *id = NULL, *params = NULL;
	const char *method = req && json_object_object_get_ex(req, "method", &m) ? json_object_get_string(m) : "";
	log_line(h->fe, "HELPER %.240s", method ? method : "");
	int r = 0;
	if (req && json_object_object_get_ex(req, "id", &id)) {
		json_object_object_get_ex(req, "params", &params);
		char *member = NULL;
		r = h->fn(method ? method : "", params, &member);
		if (r == 1) {
			char *out = NULL;
			int n = asprintf(&out, "{\"jsonrpc\":\"2.0\",\"id\":%s,%s}\n", json_object_to_json_string(id),
			                 member);
			cr_assert_gt(n, 0);
			unsigned char hdr[8] = {1,
			                        0,
			                        0,
			                        0,
			                        (unsigned char)(n >> 24),
			                        (unsigned char)(n >> 16),
			                        (unsigned char)(n >> 8),
			                        (unsigned char)n};
			write_all(h->fd, hdr, 8);
			write_all(h->fd, out, (size_t)n);
			free(out);
			r = 0;
		}
		free(member);
	}
	json_object_put(req);
	return r;
}

/* A scripted helper: stdin is raw bytes (attach with stdin, no tty), stdout
 * goes out in 8-byte-header frames (Docker API, "Attach to a container"). */
static void *helper_main(void *arg)
{
	struct helper_run *h = arg;
	char buf[1 << 16];
	size_t len = 0;
	for (;;) {
		ssize_t n = recv(h->fd, buf + len, sizeof(buf) - 1 - len, 0);
		if (n <= 0)
			break;
		len += (size_t)n;
		char *nl;
		int end = 0;
		while (!end && (nl = memchr(buf, '\n', len))) {
			*nl = '\0';
			end = helper_line(h, buf) < 0;
			len -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, len);
		}
		if (end || len == sizeof(buf) - 1)
			break;
	}
	shutdown(h->fd, SHUT_RDWR);
	free(h);
	return NULL;
}

/* Returns 1 when a scripted helper took the connection. */
static int serve_route(struct fake_engine *fe, int cfd)
{
	struct fake_request rq = {0};
	read_request(cfd, &rq);
	log_line(fe, "%.255s", rq.line);
	const struct fake_route *hit = NULL;
	for (size_t i = 0; i < fe->n_routes && !hit; i++)
		if (!strncmp(rq.line, fe->routes[i].method, strlen(fe->routes[i].method)) &&
		    rq.line[strlen(fe->routes[i].method)] == ' ' && strstr(rq.line, fe->routes[i].path_part) &&
		    (!fe->routes[i].reply.times || (i < sizeof(fe->route_uses) / sizeof(fe->route_uses[0]) &&
		                                    fe->route_uses[i] < fe->routes[i].reply.times))) {
			hit = &fe->routes[i];
			if (i < sizeof(fe->route_uses) / sizeof(fe->route_uses[0]))
				fe->route_uses[i]++;
		}
	int taken = 0;
	if (hit && hit->reply.delay_ms)
		usleep((useconds_t)hit->reply.delay_ms * 1000);
	if (hit)
		send_reply(cfd, &hit->reply);
	else if (!strncmp(rq.line, "GET ", 4) && strstr(rq.line, "/json"))
		send_text(cfd, "200 OK",
		          strstr(rq.line, "/containers/json") || strstr(rq.line, "/networks") ? "[]" : "{}");
	else
		send_text(cfd, "404 Not Found", "{\"message\":\"no such route in the fake engine\"}");
	if (hit && hit->reply.helper) {
		cr_assert_lt(fe->n_helpers, sizeof(fe->helpers) / sizeof(fe->helpers[0]));
		struct helper_run *h = malloc(sizeof(*h));
		*h = (struct helper_run){.fe = fe, .fd = cfd, .fn = hit->reply.helper};
		pthread_mutex_lock(&fe->lock);
		fe->helper_fds[fe->n_helpers] = cfd;
		cr_assert_eq(pthread_create(&fe->helpers[fe->n_helpers], NULL, helper_main, h), 0);
		fe->n_helpers++;
		pthread_mutex_unlock(&fe->lock);
		taken = 1;
	}
	free(rq.body);
	return taken;
}

static void *routes_main(void *arg)
{
	struct fake_engine *fe = arg;
	while (!fe->stopping) {
		struct pollfd p = {.fd = fe->lfd, .events = POLLIN};
		if (poll(&p, 1, 100) <= 0)
			continue;
		int cfd = accept4(fe->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (cfd < 0)
			continue;
		if (!serve_route(fe, cfd))
			close(cfd);
	}
	return NULL;
}

struct fake_engine *fake_start_routes(const struct fake_route *routes, size_t n)
{
	struct fake_engine *fe = &fake;
	memset(fe, 0, sizeof(*fe));
	pthread_mutex_init(&fe->lock, NULL);
	listen_on_temp_socket(fe);
	fe->routes = routes;
	fe->n_routes = n;
	cr_assert_eq(pthread_create(&fe->thread, NULL, routes_main, fe), 0);
	return fe;
}

void fake_helpers_close(void)
{
	pthread_mutex_lock(&fake.lock);
	for (size_t i = 0; i < fake.n_helpers; i++)
		shutdown(fake.helper_fds[i], SHUT_RDWR);
	pthread_mutex_unlock(&fake.lock);
}

/* Stops serving, ends every scripted helper's stream and joins them; the
 * request log stays readable. */
void fake_stop_routes(struct fake_engine *fe)
{
	if (fe->lfd < 0)
		return; /* stopped already (a test that stops the engine) */
	fe->stopping = 1;
	pthread_join(fe->thread, NULL);
	fake_helpers_close();
	for (size_t i = 0; i < fe->n_helpers; i++) {
		pthread_join(fe->helpers[i], NULL);
		close(fe->helper_fds[i]);
	}
	fe->n_helpers = 0;
	close(fe->lfd);
	fe->lfd = -1;
	unlink(fe->sock);
	rmdir(fe->dir);
}

size_t fake_count(const char *method, const char *part)
{
	size_t n = 0;
	pthread_mutex_lock(&fake.lock);
	for (size_t i = 0; i < fake.n_lines; i++)
		n += !strncmp(fake.lines[i], method, strlen(method)) && strstr(fake.lines[i], part) != NULL;
	pthread_mutex_unlock(&fake.lock);
	return n;
}

struct docker_engine *fake_engine_open(struct fake_engine *fe)
{
	struct docker_engine *e = NULL;
	struct cp_error *err = NULL;
	int rc = docker_engine_new(fe->sock, &e, &err);
	cr_assert_eq(rc, 0, "engine_new: %s", err ? err->message : "");
	return e;
}

struct json_object *fake_json_member(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;
	cr_assert(json_object_object_get_ex(o, key, &v), "member '%s' missing in %s", key,
	          json_object_to_json_string(o));
	return v;
}

void fake_json_bool(struct json_object *o, const char *key, int want)
{
	struct json_object *v = fake_json_member(o, key);
	cr_assert(json_object_is_type(v, json_type_boolean), "%s is not a boolean", key);
	cr_assert_eq(json_object_get_boolean(v), want, "%s", key);
}
