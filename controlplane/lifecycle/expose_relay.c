/* expose_relay.c: previews of sandboxes on other nodes (issue 28). A
 * forwarder container (expose.c) is a container of this machine's engine
 * and cannot reach a sandbox on another machine. There, serve itself
 * listens on CHAT2SBX_EXPOSE_HOST (the same address, so the same "who can
 * reach a preview" as local ones, docs/previews.md) and relays each
 * connection through the node's engine: an exec of the helper's connect
 * mode (template/helper/connect.h) in the sandbox, whose stdin and stdout
 * carry the bytes over the engine's mutual-TLS connection. Nothing is
 * published on the node and no port of it is opened to the network; the
 * price is that such a preview works only while serve runs (serve's start
 * listens again on the recorded port, expose.c's reconcile).
 *
 * Every byte from the sandbox is untrusted: the exec's stream is parsed by
 * the engine-format demultiplexer (docker/demux.c), only its stdout frames
 * reach the person, and nothing buffers more than RELAY_BUF bytes per
 * direction. At most RELAY_MAX_CONNS connections per preview and
 * RELAY_MAX_TOTAL over all previews run at once; more wait in the listen
 * backlog. A connection that moves no byte either way for RELAY_IDLE_MS is
 * closed. A stop (destroy, unexpose, serve's stop) reaches every connection
 * at once through the relay's cut eventfd, whatever it waits for, and
 * serve's stop waits until every connection's thread has ended. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/log.h"
#include "../base/xalloc.h"
#include "lifecycle_internal.h"

#define RELAY_MAX_CONNS 64
#define RELAY_MAX_TOTAL 256
/* A connection with no byte moved either way for this long is closed
 * (a dev server's live-reload socket pings well within it). */
#define RELAY_IDLE_MS (30 * 60 * 1000)
/* How often a listener held back by RELAY_MAX_TOTAL looks again. */
#define RELAY_FULL_RECHECK_MS 1000
#define RELAY_BUF (64 * 1024)
/* The exec's create and start (the node's engine answering). */
#define RELAY_EXEC_TIMEOUT_MS 10000L
/* After the person's side ended, how long the sandbox may take to finish. */
#define RELAY_LINGER_MS 60000
/* After this long, serve's stop says what it still waits for (every step
 * a connection's thread can block in is bounded: the exec's create and
 * start by RELAY_EXEC_TIMEOUT_MS, the copy by the cut). */
#define RELAY_STOP_SAY_MS 25000

struct lifecycle_relay {
	struct lifecycle *lc;
	char *sandbox_id;
	char *node;
	char *container;
	int container_port;
	int listen_fd;
	int stop_fd; /* eventfd: the listener's wake-up (read by it) */
	int cut_fd;  /* eventfd: written once by relay_stop, never read: every pump's poll sees it */
	pthread_t thread;
	int stopping;                 /* set under lc->relay_lock (pumps see cut_fd instead) */
	int refs;                     /* the list's, one per connection; under lc->relay_lock */
	int clients[RELAY_MAX_CONNS]; /* client sockets of live connections, -1 = free slot */
	int n_conns;
	struct lifecycle_relay *next;
};

struct conn {
	struct lifecycle_relay *r;
	int slot;
	int client;
};

/* Under lc->relay_lock. Frees r at the last reference. */
static void relay_unref_locked(struct lifecycle_relay *r)
{
	if (--r->refs > 0)
		return;
	if (r->listen_fd >= 0)
		close(r->listen_fd);
	if (r->stop_fd >= 0)
		close(r->stop_fd);
	if (r->cut_fd >= 0)
		close(r->cut_fd);
	free(r->sandbox_id);
	free(r->node);
	free(r->container);
	free(r);
}

/* One direction's bytes in flight. */
struct dir {
	char data[RELAY_BUF];
	size_t len, off;
	int eof;
};

static void on_frame(void *userdata, enum docker_stream stream, const char *data, size_t len)
{
	struct dir *down = userdata;
	if (stream != DOCKER_STREAM_STDOUT)
		return; /* the helper's log lines stay in the sandbox */
	size_t room = sizeof(down->data) - down->len;
	if (len > room)
		len = room; /* cannot happen: at most RELAY_BUF bytes are read per fill */
	memcpy(down->data + down->len, data, len);
	down->len += len;
}

/* Writes what d holds to fd. 1 moved, 0 nothing, -1 error. */
static int drain(int fd, struct dir *d)
{
	if (!d->len)
		return 0;
	ssize_t n = send(fd, d->data + d->off, d->len - d->off, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -1;
	d->off += (size_t)n;
	if (d->off == d->len)
		d->len = d->off = 0;
	return 1;
}

/* Copies client ↔ stream (the exec's multiplexed stream) until one ends,
 * cut_fd (the relay's, never read) becomes readable, nothing moves for
 * RELAY_IDLE_MS, or, once the person's side ended, RELAY_LINGER_MS passed.
 * Every state polls cut_fd, so a stop is seen at once even while the
 * sandbox reads nothing and the person's side is quiet. */
static void pump(int client, int stream, int cut_fd)
{
	struct dir *up = xcalloc(1, sizeof(*up)), *down = xcalloc(1, sizeof(*down));
	char *raw = xmalloc(RELAY_BUF);
	struct docker_demux d;
	docker_demux_init(&d, on_frame, down);
	int64_t linger_until = 0, idle_until = clock_monotonic_ms() + RELAY_IDLE_MS;
	for (;;) {
		if (down->eof && !down->len)
			break; /* the sandbox's side ended and all of it reached the person */
		int64_t now = clock_monotonic_ms();
		if (up->eof && !up->len && !linger_until)
			linger_until = now + RELAY_LINGER_MS;
		int64_t until = linger_until && linger_until < idle_until ? linger_until : idle_until;
		if (until <= now)
			break;
		struct pollfd p[3] = {{.fd = client}, {.fd = stream}, {.fd = cut_fd, .events = POLLIN}};
		if (!up->len && !up->eof)
			p[0].events |= POLLIN;
		if (down->len)
			p[0].events |= POLLOUT;
		if (!down->len && !down->eof)
			p[1].events |= POLLIN;
		if (up->len)
			p[1].events |= POLLOUT;
		for (int i = 0; i < 2; i++)
			if (!p[i].events)
				p[i].fd = -1;
		if (poll(p, 3, (int)(until - now)) < 0 && errno != EINTR)
			break;
		if (p[2].revents)
			break;  /* cut */
		int active = 0; /* a byte read or written, or an end seen */
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR) && !up->len && !up->eof) {
			ssize_t n = recv(client, up->data, sizeof(up->data), MSG_DONTWAIT);
			if (n < 0 && errno != EAGAIN && errno != EINTR)
				break;
			if (n == 0)
				up->eof = 1; /* no half-close over TLS: the stream stays open for the answer */
			if (n > 0)
				up->len = (size_t)n, up->off = 0;
			active |= n >= 0;
		}
		if (p[1].revents & (POLLIN | POLLHUP | POLLERR) && !down->len && !down->eof) {
			ssize_t n = recv(stream, raw, RELAY_BUF, MSG_DONTWAIT);
			if (n < 0 && errno != EAGAIN && errno != EINTR)
				break;
			if (n == 0)
				down->eof = 1;
			if (n > 0 && docker_demux_feed(&d, raw, (size_t)n) < 0) {
				log_debug("lifecycle", "preview relay: the exec stream is malformed; closing");
				break;
			}
			active |= n >= 0;
		}
		int w_up = p[1].revents & POLLOUT ? drain(stream, up) : 0;
		int w_down = p[0].revents & POLLOUT ? drain(client, down) : 0;
		if (w_up < 0 || w_down < 0)
			break;
		if (active || w_up > 0 || w_down > 0)
			idle_until = clock_monotonic_ms() + RELAY_IDLE_MS;
	}
	free(raw);
	free(up);
	free(down);
}

static void *conn_run(void *arg)
{
	struct conn *c = arg;
	struct lifecycle_relay *r = c->r;
	struct lifecycle *lc = r->lc;
	char port[16];
	snprintf(port, sizeof(port), "%d", r->container_port);
	const char *argv[] = {POLICY_HELPER_TARGET, "connect", port, NULL};
	struct docker_engine *engine = NULL;
	_cleanup_error_ struct cp_error *e = NULL;
	int stream = -1;
	/* As nobody: the relay needs no privilege, and the sandbox's own
	 * processes cannot signal or trace a process of another user. */
	if (lifecycle_node_engine(lc, r->node, &engine, &e) < 0 ||
	    docker_container_exec_stream(engine, r->container, argv, "65534:65534", RELAY_EXEC_TIMEOUT_MS, &stream,
	                                 &e) < 0)
		log_warn("lifecycle", "preview of port %d of sandbox %s (node '%s'): %s", r->container_port,
		         r->sandbox_id, r->node, e->message);
	else if (fcntl(stream, F_SETFL, fcntl(stream, F_GETFL) | O_NONBLOCK) == 0)
		pump(c->client, stream, r->cut_fd);
	if (stream >= 0)
		close(stream);
	pthread_mutex_lock(&lc->relay_lock);
	r->clients[c->slot] = -1;
	close(c->client);
	r->n_conns--;
	lc->relay_conns--;
	pthread_cond_broadcast(&lc->relay_cond);
	uint64_t one = 1;
	if (write(r->stop_fd, &one, sizeof(one)) < 0) /* a slot is free: the listener may accept again */
		log_debug("lifecycle", "wake the preview listener: %s", strerror(errno));
	relay_unref_locked(r);
	pthread_mutex_unlock(&lc->relay_lock);
	free(c);
	return NULL;
}

/* Starts a connection's thread; under lc->relay_lock. Closes client on failure. */
static void conn_start_locked(struct lifecycle_relay *r, int client)
{
	int slot = 0;
	while (slot < RELAY_MAX_CONNS && r->clients[slot] >= 0)
		slot++;
	struct conn *c = xcalloc(1, sizeof(*c));
	*c = (struct conn){.r = r, .slot = slot, .client = client};
	pthread_t t;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (slot == RELAY_MAX_CONNS || pthread_create(&t, &attr, conn_run, c) != 0) {
		log_warn("lifecycle", "preview of sandbox %s: cannot start a connection's thread", r->sandbox_id);
		close(client);
		free(c);
	} else {
		r->clients[slot] = client;
		r->n_conns++;
		r->refs++;
		r->lc->relay_conns++;
	}
	pthread_attr_destroy(&attr);
}

static void *listen_run(void *arg)
{
	struct lifecycle_relay *r = arg;
	struct lifecycle *lc = r->lc;
	for (;;) {
		pthread_mutex_lock(&lc->relay_lock);
		int stopping = r->stopping, full = r->n_conns >= RELAY_MAX_CONNS;
		/* Another preview's connection ending does not wake this one:
		 * held back by the total, it looks again every second. */
		int all_full = lc->relay_conns >= RELAY_MAX_TOTAL;
		pthread_mutex_unlock(&lc->relay_lock);
		if (stopping)
			break;
		struct pollfd p[2] = {{.fd = r->stop_fd, .events = POLLIN},
		                      {.fd = full || all_full ? -1 : r->listen_fd, .events = POLLIN}};
		if (poll(p, 2, all_full && !full ? RELAY_FULL_RECHECK_MS : -1) < 0 && errno != EINTR)
			break;
		if (p[0].revents) {
			uint64_t v;
			if (read(r->stop_fd, &v, sizeof(v)) < 0)
				log_debug("lifecycle", "preview listener wake-up: %s", strerror(errno));
		}
		if (!(p[1].revents & POLLIN))
			continue;
		int client = accept4(r->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (client < 0)
			continue;
		pthread_mutex_lock(&lc->relay_lock);
		if (r->stopping)
			close(client);
		else
			conn_start_locked(r, client);
		pthread_mutex_unlock(&lc->relay_lock);
	}
	return NULL;
}

/* A listening socket on host:*io_port (0 = any free port, then set). */
static int listen_on(const char *host, int *io_port, int *ret_fd, struct cp_error **err)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST | AI_PASSIVE};
	struct addrinfo *res = NULL;
	char port[16];
	snprintf(port, sizeof(port), "%d", *io_port);
	int rc = getaddrinfo(host, port, &hints, &res);
	if (rc != 0)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "CHAT2SBX_EXPOSE_HOST '%s' is not an IP address of this machine (%s); set it to "
		                    "127.0.0.1 or another local address",
		                    host, gai_strerror(rc));
	_cleanup_close_ int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int one = 1;
	struct sockaddr_storage a;
	socklen_t len = sizeof(a);
	int r = 0;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, 128) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0)
		r = cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "listen on %s port %d (CHAT2SBX_EXPOSE_HOST)",
		                       host, *io_port);
	freeaddrinfo(res);
	if (r < 0)
		return -1;
	*io_port = a.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&a)->sin6_port)
	                                   : ntohs(((struct sockaddr_in *)&a)->sin_port);
	*ret_fd = TAKE_FD(fd);
	return 0;
}

int lifecycle_relay_start(struct lifecycle *lc, const struct sandbox_record *s, int container_port, const char *host,
                          int *io_host_port, struct cp_error **err)
{
	pthread_mutex_lock(&lc->relay_lock);
	for (struct lifecycle_relay *r = lc->relays; r; r = r->next)
		if (!strcmp(r->sandbox_id, s->id) && r->container_port == container_port) {
			pthread_mutex_unlock(&lc->relay_lock);
			return 0; /* listening already */
		}
	pthread_mutex_unlock(&lc->relay_lock);
	int fd = -1;
	if (listen_on(host, io_host_port, &fd, err) < 0)
		return -1;
	struct lifecycle_relay *r = xcalloc(1, sizeof(*r));
	*r = (struct lifecycle_relay){.lc = lc,
	                              .sandbox_id = xstrdup(s->id),
	                              .node = xstrdup(s->node),
	                              .container = xstrdup(s->container_id ? s->container_id : s->container_name),
	                              .container_port = container_port,
	                              .listen_fd = fd,
	                              .stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK),
	                              .cut_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK),
	                              .refs = 1};
	for (int i = 0; i < RELAY_MAX_CONNS; i++)
		r->clients[i] = -1;
	if (r->stop_fd < 0 || r->cut_fd < 0 || pthread_create(&r->thread, NULL, listen_run, r) != 0) {
		int saved = errno;
		pthread_mutex_lock(&lc->relay_lock);
		relay_unref_locked(r);
		pthread_mutex_unlock(&lc->relay_lock);
		return cp_error_set_errno(err, CP_ERR_INTERNAL, saved, "start the preview listener of sandbox '%s'",
		                          s->id);
	}
	pthread_mutex_lock(&lc->relay_lock);
	r->next = lc->relays;
	lc->relays = r;
	pthread_mutex_unlock(&lc->relay_lock);
	log_info("lifecycle", "preview of port %d of sandbox %s (node '%s') listens on %s:%d", container_port, s->id,
	         s->node, host, *io_host_port);
	return 0;
}

/* Stops r (taken off the list): no more accepts, live connections cut
 * (each pump sees cut_fd and closes the exec stream; the person's side is
 * shut down as well). */
static void relay_stop(struct lifecycle *lc, struct lifecycle_relay *r)
{
	uint64_t one = 1;
	pthread_mutex_lock(&lc->relay_lock);
	r->stopping = 1;
	if (write(r->cut_fd, &one, sizeof(one)) < 0)
		log_warn("lifecycle", "cut the preview connections of sandbox %s: %s", r->sandbox_id, strerror(errno));
	for (int i = 0; i < RELAY_MAX_CONNS; i++)
		if (r->clients[i] >= 0)
			shutdown(r->clients[i], SHUT_RDWR);
	pthread_mutex_unlock(&lc->relay_lock);
	if (write(r->stop_fd, &one, sizeof(one)) < 0)
		log_debug("lifecycle", "stop the preview listener: %s", strerror(errno));
	pthread_join(r->thread, NULL);
	pthread_mutex_lock(&lc->relay_lock);
	close(r->listen_fd); /* the port is free again at once */
	r->listen_fd = -1;
	relay_unref_locked(r);
	pthread_mutex_unlock(&lc->relay_lock);
}

void lifecycle_relay_stop(struct lifecycle *lc, const char *sandbox_id, int container_port)
{
	for (;;) {
		struct lifecycle_relay *found = NULL;
		pthread_mutex_lock(&lc->relay_lock);
		for (struct lifecycle_relay **p = &lc->relays; *p; p = &(*p)->next)
			if (!strcmp((*p)->sandbox_id, sandbox_id) &&
			    (container_port <= 0 || (*p)->container_port == container_port)) {
				found = *p;
				*p = found->next;
				break;
			}
		pthread_mutex_unlock(&lc->relay_lock);
		if (!found)
			return;
		relay_stop(lc, found);
	}
}

void lifecycle_relays_stop_all(struct lifecycle *lc)
{
	for (;;) {
		pthread_mutex_lock(&lc->relay_lock);
		struct lifecycle_relay *r = lc->relays;
		if (r)
			lc->relays = r->next;
		pthread_mutex_unlock(&lc->relay_lock);
		if (!r)
			break;
		relay_stop(lc, r);
	}
	/* Connections still in an exec's create or start use the node's engine
	 * and the lifecycle, which the caller frees next: wait for every one
	 * (each such step is bounded by RELAY_EXEC_TIMEOUT_MS; a pump ends at
	 * the cut). */
	int64_t say_at = clock_monotonic_ms() + RELAY_STOP_SAY_MS;
	pthread_mutex_lock(&lc->relay_lock);
	while (lc->relay_conns > 0) {
		if (say_at && clock_monotonic_ms() >= say_at) {
			log_warn("lifecycle", "waiting for %d preview connection(s) to end", lc->relay_conns);
			say_at = 0;
		}
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100 * 1000000L;
		if (ts.tv_nsec >= 1000000000L)
			ts.tv_sec++, ts.tv_nsec -= 1000000000L;
		pthread_cond_timedwait(&lc->relay_cond, &lc->relay_lock, &ts);
	}
	pthread_mutex_unlock(&lc->relay_lock);
}
