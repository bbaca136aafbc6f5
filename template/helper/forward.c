/* forward.c: the forward mode of the helper, the only program a
 * sandbox_expose forwarder container runs (controlplane/lifecycle/expose.c).
 * A small TCP relay in one thread around poll(2): it owns its listening
 * socket and its connections and nothing else. It never starts a process,
 * reads or writes a file, or talks to the control plane: the engine publishes
 * its port and restarts it; the control plane never sees the traffic, so
 * traffic through it does not count as sandbox activity. */
#include "forward.h"
#include "xalloc.h"

#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <resolv.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hlog.h"

/* One direction of a connection: bytes read from one socket, waiting to be
 * written to the other. */
struct fwd_dir {
	char *buf; /* FORWARD_BUF_BYTES */
	size_t off, len;
	bool eof;  /* the reading side ended its output */
	bool done; /* eof passed on (shutdown of the writing side) */
};

/* fd[0] is the accepted client, fd[1] the target. dir[0] carries client →
 * target, dir[1] target → client. */
struct fwd_conn {
	int fd[2];
	bool connecting; /* the non-blocking connect to the target is in progress */
	struct fwd_dir dir[2];
};

static void conn_free(struct fwd_conn *c)
{
	if (!c)
		return;
	for (int i = 0; i < 2; i++) {
		if (c->fd[i] >= 0)
			close(c->fd[i]);
		free(c->dir[i].buf);
	}
	free(c);
}

/* "0".."65535" → the port, or -1. */
static int parse_port(const char *s)
{
	char *end = NULL;
	errno = 0;
	long v = s ? strtol(s, &end, 10) : -1;
	return s && *s && end && !*end && errno == 0 && v >= 0 && v <= 65535 ? (int)v : -1;
}

int forward_listen(const char *host, const char *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
	int p = parse_port(port);
	if (p < 0 || (host && inet_pton(AF_INET, host, &a.sin_addr) != 1)) {
		hlog_error("forward: listen address %s:%s is not an IPv4 address and port", host ? host : "0.0.0.0",
		           port ? port : "");
		return -1;
	}
	a.sin_port = htons((uint16_t)p);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 128) < 0) {
		hlog_error("forward: listen on %s:%s: %s", host ? host : "0.0.0.0", port, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* The target's address: a numeric IPv4 or IPv6 address as it is, a name by
 * an A query to the resolver of /etc/resolv.conf (in a forwarder, the
 * engine's embedded DNS, which knows the sandbox's alias), its answer read
 * with libresolv's parser. Not getaddrinfo: in a static binary that drags in
 * glibc's NSS machinery, and the image's nsswitch.conf is not ours to rely
 * on. Blocks for the query (the engine's DNS answers locally). */
static int resolve_target(const char *host, int port, struct sockaddr_storage *ret, socklen_t *ret_len)
{
	struct sockaddr_in *v4 = (struct sockaddr_in *)ret;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ret;
	memset(ret, 0, sizeof(*ret));
	if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons((uint16_t)port);
		*ret_len = sizeof(*v6);
		return 0;
	}
	v4->sin_family = AF_INET;
	v4->sin_port = htons((uint16_t)port);
	*ret_len = sizeof(*v4);
	if (inet_pton(AF_INET, host, &v4->sin_addr) == 1)
		return 0;
	struct __res_state st;
	memset(&st, 0, sizeof(st));
	unsigned char answer[NS_PACKETSZ * 4];
	int found = -1;
	if (res_ninit(&st) == 0) {
		int n = res_nquery(&st, host, ns_c_in, ns_t_a, answer, sizeof(answer));
		ns_msg msg;
		ns_rr rr;
		if (n > 0 && ns_initparse(answer, n, &msg) == 0)
			for (int i = 0; i < ns_msg_count(msg, ns_s_an) && found < 0; i++)
				if (ns_parserr(&msg, ns_s_an, i, &rr) == 0 && ns_rr_type(rr) == ns_t_a &&
				    ns_rr_rdlen(rr) == 4) {
					memcpy(&v4->sin_addr, ns_rr_rdata(rr), 4);
					found = 0;
				}
		res_nclose(&st);
	}
	if (found < 0)
		hlog_warn("forward: cannot resolve '%s'", host);
	return found;
}

/* Starts a non-blocking connect to the target. Returns 0 (c->fd[1] set,
 * c->connecting maybe) or -1 (logged). The name is resolved for every
 * connection: after an engine restart the sandbox may have a new address. */
static int connect_target(const struct forward_config *cfg, struct fwd_conn *c)
{
	struct sockaddr_storage addr;
	socklen_t len = 0;
	int port = parse_port(cfg->target_port);
	if (port <= 0 || resolve_target(cfg->target_host, port, &addr, &len) < 0)
		return -1;
	int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		hlog_warn("forward: socket: %s", strerror(errno));
		return -1;
	}
	int rc = connect(fd, (struct sockaddr *)&addr, len);
	if (rc < 0 && errno != EINPROGRESS) {
		hlog_debug("forward: connect %s:%s: %s", cfg->target_host, cfg->target_port, strerror(errno));
		close(fd);
		return -1;
	}
	c->fd[1] = fd;
	c->connecting = rc < 0;
	return 0;
}

static void accept_one(int listen_fd, const struct forward_config *cfg, struct fwd_conn **conns, size_t *n)
{
	int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
			hlog_warn("forward: accept: %s", strerror(errno));
		return;
	}
	struct fwd_conn *c = xcalloc(1, sizeof(*c));
	c->fd[0] = fd;
	c->fd[1] = -1;
	c->dir[0].buf = xmalloc(FORWARD_BUF_BYTES);
	c->dir[1].buf = xmalloc(FORWARD_BUF_BYTES);
	if (connect_target(cfg, c) < 0) {
		conn_free(c); /* the client sees its connection closed */
		return;
	}
	conns[(*n)++] = c;
}

/* Moves bytes of direction d (read fd[d], write fd[1-d]) as far as the
 * sockets allow right now. Returns -1 when the connection must end. */
static int pump(struct fwd_conn *c, int d, short rev_in, short rev_out)
{
	struct fwd_dir *x = &c->dir[d];
	int in = c->fd[d], out = c->fd[1 - d];
	if ((rev_in & (POLLIN | POLLHUP | POLLERR)) && !x->eof && x->len == 0) {
		ssize_t r = recv(in, x->buf, FORWARD_BUF_BYTES, 0);
		if (r > 0) {
			x->off = 0;
			x->len = (size_t)r;
		} else if (r == 0) {
			x->eof = true;
		} else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
			return -1;
		}
	}
	if (x->len > x->off && (rev_out & POLLOUT || x->off == 0)) {
		ssize_t w = send(out, x->buf + x->off, x->len - x->off, MSG_NOSIGNAL);
		if (w > 0) {
			x->off += (size_t)w;
			if (x->off == x->len)
				x->off = x->len = 0;
		} else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
			return -1;
		}
	}
	if (x->eof && x->len == 0 && !x->done) {
		/* Half-close: the other side reads end of input, may still answer. */
		if (shutdown(out, SHUT_WR) < 0 && errno != ENOTCONN)
			return -1;
		x->done = true;
	}
	return 0;
}

/* Handles the poll results of one connection. Returns -1 when it ended. */
static int conn_step(struct fwd_conn *c, short rev0, short rev1)
{
	if (c->connecting) {
		if (!(rev1 & (POLLOUT | POLLERR | POLLHUP)))
			return 0;
		int soerr = 0;
		socklen_t len = sizeof(soerr);
		if (getsockopt(c->fd[1], SOL_SOCKET, SO_ERROR, &soerr, &len) < 0 || soerr != 0) {
			hlog_debug("forward: connect to the target: %s", strerror(soerr ? soerr : errno));
			return -1;
		}
		c->connecting = false;
		rev1 = POLLOUT;
	}
	if ((rev0 & POLLNVAL) || (rev1 & POLLNVAL))
		return -1;
	if (pump(c, 0, rev0, rev1) < 0 || pump(c, 1, rev1, rev0) < 0)
		return -1;
	return c->dir[0].done && c->dir[1].done ? -1 : 0;
}

/* Events one socket of c waits for: fd index i reads into dir[i] and writes
 * dir[1-i]. */
static short conn_events(const struct fwd_conn *c, int i)
{
	if (c->connecting)
		return i == 1 ? POLLOUT : 0; /* the client's bytes wait in the kernel meanwhile */
	short ev = 0;
	if (!c->dir[i].eof && c->dir[i].len == 0)
		ev |= POLLIN;
	if (c->dir[1 - i].len > c->dir[1 - i].off)
		ev |= POLLOUT;
	return ev;
}

static int signal_fd(sigset_t *ret_old)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	if (sigprocmask(SIG_BLOCK, &set, ret_old) < 0)
		return -1;
	signal(SIGPIPE, SIG_IGN);
	return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

int forward_serve(int listen_fd, const struct forward_config *cfg)
{
	sigset_t old;
	int sfd = signal_fd(&old);
	if (sfd < 0) {
		hlog_error("forward: setup failed: %s", strerror(errno));
		close(listen_fd);
		return 1;
	}
	struct fwd_conn **conns = xcalloc(FORWARD_MAX_CONNS, sizeof(*conns));
	struct pollfd *pfds = xcalloc(2 + 2 * FORWARD_MAX_CONNS, sizeof(*pfds));
	hlog_info("forward: relaying to %s:%s", cfg->target_host, cfg->target_port);
	size_t n = 0;
	bool stop = false;
	while (!stop) {
		pfds[0] = (struct pollfd){.fd = sfd, .events = POLLIN};
		/* A full table stops accepting; new clients wait in the backlog. */
		pfds[1] = (struct pollfd){.fd = n < FORWARD_MAX_CONNS ? listen_fd : -1, .events = POLLIN};
		for (size_t i = 0; i < n; i++)
			for (int k = 0; k < 2; k++)
				pfds[2 + 2 * i + k] =
				    (struct pollfd){.fd = conns[i]->fd[k], .events = conn_events(conns[i], k)};
		if (poll(pfds, 2 + 2 * n, -1) < 0) {
			if (errno == EINTR)
				continue;
			hlog_error("forward: poll: %s", strerror(errno));
			break;
		}
		if (pfds[0].revents & POLLIN) {
			struct signalfd_siginfo si;
			if (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
				hlog_info("forward: signal %u, stopping", si.ssi_signo);
			stop = true;
		}
		/* Connections first (their slots match this round's pfds), then new ones. */
		size_t kept = 0;
		for (size_t i = 0; i < n; i++) {
			if (conn_step(conns[i], pfds[2 + 2 * i].revents, pfds[3 + 2 * i].revents) < 0)
				conn_free(conns[i]);
			else
				conns[kept++] = conns[i];
		}
		n = kept;
		if (!stop && (pfds[1].revents & POLLIN))
			for (int burst = 0; burst < 16 && n < FORWARD_MAX_CONNS; burst++) {
				size_t before = n;
				accept_one(listen_fd, cfg, conns, &n);
				if (n == before)
					break;
			}
	}
	for (size_t i = 0; i < n; i++)
		conn_free(conns[i]);
	free(conns);
	free(pfds);
	close(sfd);
	close(listen_fd);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return stop ? 0 : 1;
}

static int port_valid(const char *s)
{
	return parse_port(s) >= 1;
}

int forward_main(int argc, char **argv)
{
	if (argc != 4 || !port_valid(argv[1]) || !*argv[2] || !port_valid(argv[3])) {
		hlog_error("usage: chat2sbx-helper forward LISTEN_PORT TARGET_HOST TARGET_PORT (ports 1-65535)");
		return 2;
	}
	int fd = forward_listen(NULL, argv[1]);
	if (fd < 0)
		return 1;
	struct forward_config cfg = {.target_host = argv[2], .target_port = argv[3]};
	return forward_serve(fd, &cfg);
}
