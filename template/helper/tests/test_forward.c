/* test_forward.c: the helper's forward mode (forward.c) between local
 * sockets: the relay runs in a forked child (as in a forwarder container) in
 * front of a target the test listens on, all on 127.0.0.1. Checks bytes both
 * ways, half-close in each direction, many connections at once, an
 * unreachable target, and a clean exit on SIGTERM (LeakSanitizer runs at the
 * child's exit). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../forward.h"

/* The relay child's listening socket after the exec. */
#define RELAY_LISTEN_FD 3

/* When exec'd by relay_start: be the relay and exit (LeakSanitizer checks
 * the exit of a single-threaded process). */
__attribute__((constructor)) static void run_relay_if_asked(void)
{
	const char *port = getenv("CHAT2SBX_TEST_FORWARD_PORT");
	if (!port)
		return;
	char copy[16];
	snprintf(copy, sizeof(copy), "%s", port);
	unsetenv("CHAT2SBX_TEST_FORWARD_PORT");
	fcntl(RELAY_LISTEN_FD, F_SETFD, FD_CLOEXEC);
	struct forward_config cfg = {.target_host = "127.0.0.1", .target_port = copy};
	exit(forward_serve(RELAY_LISTEN_FD, &cfg));
}

struct relay {
	pid_t pid;
	int port;        /* where the relay listens */
	int target_fd;   /* the test's target listener */
	int target_port; /* its port */
};

static int bound_port(int fd)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	return ntohs(a.sin_port);
}

/* target_open: 1 = a target listens; 0 = the target port is closed. */
static void relay_start(struct relay *r, int target_open)
{
	r->target_fd = forward_listen("127.0.0.1", "0");
	cr_assert_geq(r->target_fd, 0);
	r->target_port = bound_port(r->target_fd);
	if (!target_open) {
		close(r->target_fd); /* nothing listens there any more */
		r->target_fd = -1;
	}
	int lfd = forward_listen("127.0.0.1", "0");
	cr_assert_geq(lfd, 0);
	r->port = bound_port(lfd);
	char tport[16];
	snprintf(tport, sizeof(tport), "%d", r->target_port);
	fflush(NULL);
	r->pid = fork();
	cr_assert_geq(r->pid, 0);
	if (r->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* a failed test leaves no relay behind */
		/* dup2 clears close-on-exec: the listener survives the exec. */
		if (dup2(lfd, RELAY_LISTEN_FD) < 0)
			_exit(120);
		setenv("CHAT2SBX_TEST_FORWARD_PORT", tport, 1);
		/* A fresh, single-threaded, sanitized process: this binary again,
		 * taken over by run_relay_if_asked() before Criterion starts. */
		execl("/proc/self/exe", "test_helper (forward relay)", (char *)NULL);
		_exit(121);
	}
	close(lfd);
}

static void relay_stop(struct relay *r)
{
	cr_assert_eq(kill(r->pid, SIGTERM), 0);
	int st = 0;
	cr_assert_eq(waitpid(r->pid, &st, 0), r->pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "relay ended with status 0x%x", st);
	if (r->target_fd >= 0)
		close(r->target_fd);
}

static int dial(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {
	    .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0, "connect: %s", strerror(errno));
	struct timeval tv = {.tv_sec = 10};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* Accepts one connection on the target (waits up to 10 s). */
static int target_accept(struct relay *r)
{
	struct pollfd p = {.fd = r->target_fd, .events = POLLIN};
	cr_assert_eq(poll(&p, 1, 10000), 1, "the relay never connected to the target");
	int fd = accept4(r->target_fd, NULL, NULL, SOCK_CLOEXEC);
	cr_assert_geq(fd, 0);
	struct timeval tv = {.tv_sec = 10};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

static void write_all(int fd, const char *data, size_t len)
{
	while (len > 0) {
		ssize_t w = send(fd, data, len, MSG_NOSIGNAL);
		cr_assert_gt(w, 0, "send: %s", strerror(errno));
		data += w;
		len -= (size_t)w;
	}
}

/* Reads until end of input (or error); returns a malloc'd buffer, *len set. */
static char *read_to_eof(int fd, size_t *ret_len)
{
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	for (;;) {
		if (len == cap)
			buf = realloc(buf, cap *= 2);
		ssize_t r = recv(fd, buf + len, cap - len, 0);
		cr_assert_geq(r, 0, "recv: %s", strerror(errno));
		if (r == 0)
			break;
		len += (size_t)r;
	}
	*ret_len = len;
	return buf;
}

Test(forward, bytes_both_ways_with_half_close)
{
	struct relay r;
	relay_start(&r, 1);
	int c = dial(r.port);
	int t = target_accept(&r);

	/* Client → target, then the client half-closes: the target sees end of input. */
	write_all(c, "GET / HTTP/1.0\r\n\r\n", 18);
	cr_assert_eq(shutdown(c, SHUT_WR), 0);
	size_t n = 0;
	char *got = read_to_eof(t, &n);
	cr_assert_eq(n, 18);
	cr_assert_eq(memcmp(got, "GET / HTTP/1.0\r\n\r\n", 18), 0);
	free(got);

	/* The target still answers after the half-close, a large body. */
	size_t big = 3 * FORWARD_BUF_BYTES + 123;
	char *body = malloc(big);
	for (size_t i = 0; i < big; i++)
		body[i] = (char)('a' + i % 26);
	write_all(t, body, big);
	close(t);
	got = read_to_eof(c, &n);
	cr_assert_eq(n, big);
	cr_assert_eq(memcmp(got, body, big), 0);
	free(got);
	free(body);
	close(c);
	relay_stop(&r);
}

Test(forward, target_half_closes_first)
{
	struct relay r;
	relay_start(&r, 1);
	int c = dial(r.port);
	int t = target_accept(&r);
	write_all(t, "banner\n", 7);
	cr_assert_eq(shutdown(t, SHUT_WR), 0);
	size_t n = 0;
	char *got = read_to_eof(c, &n);
	cr_assert_eq(n, 7);
	free(got);
	/* The client can still talk after the target's end of output. */
	write_all(c, "bye", 3);
	close(c);
	got = read_to_eof(t, &n);
	cr_assert_eq(n, 3);
	cr_assert_eq(memcmp(got, "bye", 3), 0);
	free(got);
	close(t);
	relay_stop(&r);
}

Test(forward, many_connections_at_once)
{
	enum { N = 40 };
	struct relay r;
	relay_start(&r, 1);
	int cs[N], ts[N];
	for (int i = 0; i < N; i++)
		cs[i] = dial(r.port);
	/* Each client names itself; the target answers on the connection it came in on. */
	for (int i = 0; i < N; i++) {
		char msg[32];
		int len = snprintf(msg, sizeof(msg), "client-%02d", i);
		write_all(cs[i], msg, (size_t)len);
	}
	for (int i = 0; i < N; i++) {
		ts[i] = target_accept(&r);
		char buf[32] = {0};
		ssize_t got = 0;
		while (got < 9) {
			ssize_t k = recv(ts[i], buf + got, 9 - (size_t)got, 0);
			cr_assert_gt(k, 0);
			got += k;
		}
		char reply[40];
		int len = snprintf(reply, sizeof(reply), "echo:%s", buf);
		write_all(ts[i], reply, (size_t)len);
		close(ts[i]);
	}
	for (int i = 0; i < N; i++) {
		size_t n = 0;
		char *got = read_to_eof(cs[i], &n);
		char want[40];
		int len = snprintf(want, sizeof(want), "echo:client-%02d", i);
		cr_assert_eq(n, (size_t)len, "client %d got %zu bytes", i, n);
		cr_assert_eq(memcmp(got, want, n), 0, "client %d got the wrong answer", i);
		free(got);
		close(cs[i]);
	}
	relay_stop(&r);
}

Test(forward, unreachable_target_closes_the_client)
{
	struct relay r;
	relay_start(&r, 0);
	int c = dial(r.port);
	char b;
	ssize_t k = recv(c, &b, 1, 0);
	cr_assert(k == 0 || (k < 0 && errno == ECONNRESET), "expected the connection closed, got %zd", k);
	close(c);
	/* The relay still serves after the failure. */
	relay_stop(&r);
}

Test(forward, main_refuses_bad_ports)
{
	char *a1[] = {"forward", "0", "sandbox", "80", NULL};
	char *a2[] = {"forward", "80", "sandbox", "70000", NULL};
	char *a3[] = {"forward", "80", "", "80", NULL};
	char *a4[] = {"forward", "8x", "sandbox", "80", NULL};
	cr_assert_eq(forward_main(4, a1), 2);
	cr_assert_eq(forward_main(4, a2), 2);
	cr_assert_eq(forward_main(4, a3), 2);
	cr_assert_eq(forward_main(4, a4), 2);
	cr_assert_eq(forward_main(3, a1), 2);
}
