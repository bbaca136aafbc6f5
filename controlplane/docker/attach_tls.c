/* attach_tls.c: the hijacked attach stream to a remote engine (issue 28).
 * The helper channel reads and writes a plain descriptor with deadlines
 * (base/fdio.h); over TLS the bytes must pass through the TLS layer, so a
 * relay thread per stream copies between a socketpair's far end and the
 * TLS connection libcurl made and verified (CURLOPT_CONNECT_ONLY, then
 * curl_easy_send/curl_easy_recv), and the caller gets the near end: attach.c
 * and helper/ stay as they are for the local engine. The relay owns its
 * curl handle and thread; it never reads what it copies. */
#include "engine_internal.h"

#include <curl/curl.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/log.h"
#include "../base/xalloc.h"

#define RELAY_CHUNK (16u * 1024)

/* One direction's bytes in flight: read once, written until gone. */
struct relay_buf {
	char data[RELAY_CHUNK];
	size_t len, off;
	int eof; /* the source ended */
};

struct relay {
	CURL *h;
	curl_socket_t tls;     /* libcurl's socket (owned by h) */
	int local;             /* our end of the socketpair (owned) */
	struct relay_buf down; /* engine → caller */
	struct relay_buf up;   /* caller → engine */
};

static void relay_free(struct relay *r)
{
	if (!r)
		return;
	if (r->h)
		curl_easy_cleanup(r->h);
	if (r->local >= 0)
		close(r->local);
	free(r);
}

/* One step in each direction without blocking. Returns 1 when a byte moved,
 * 0 when everything waits, -1 when the relay is over (the caller closed
 * its end, or the TLS connection failed). */
static int relay_step(struct relay *r)
{
	int moved = 0;
	if (!r->down.len && !r->down.eof) {
		size_t n = 0;
		CURLcode rc = curl_easy_recv(r->h, r->down.data, sizeof(r->down.data), &n);
		if (rc == CURLE_OK && n == 0) {
			r->down.eof = 1; /* the engine closed: the caller reads end-of-file */
			shutdown(r->local, SHUT_WR);
			moved = 1;
		} else if (rc == CURLE_OK) {
			r->down.len = n;
			r->down.off = 0;
			moved = 1;
		} else if (rc != CURLE_AGAIN) {
			return -1;
		}
	}
	if (r->down.len) {
		ssize_t n =
		    send(r->local, r->down.data + r->down.off, r->down.len - r->down.off, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -1;
		if (n > 0) {
			r->down.off += (size_t)n;
			if (r->down.off == r->down.len)
				r->down.len = r->down.off = 0;
			moved = 1;
		}
	}
	if (!r->up.len) {
		ssize_t n = recv(r->local, r->up.data, sizeof(r->up.data), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return -1; /* the caller closed its end: the stream is done */
		if (n > 0) {
			r->up.len = (size_t)n;
			r->up.off = 0;
			moved = 1;
		}
	}
	if (r->up.len) {
		size_t n = 0;
		CURLcode rc = curl_easy_send(r->h, r->up.data + r->up.off, r->up.len - r->up.off, &n);
		if (rc != CURLE_OK && rc != CURLE_AGAIN)
			return -1;
		if (rc == CURLE_OK && n > 0) {
			r->up.off += n;
			if (r->up.off == r->up.len)
				r->up.len = r->up.off = 0;
			moved = 1;
		}
	}
	return moved;
}

/* The relay thread: steps until the stream is over (the caller hung up
 * or closed its end, or the TLS connection failed), sleeping in poll only
 * when every direction waits. A TLS record libcurl holds decrypted is never
 * stranded: the engine side is read (curl_easy_recv) at every step whose
 * downward buffer is empty, before any poll. */
static void *relay_run(void *arg)
{
	struct relay *r = arg;
	for (;;) {
		int s = relay_step(r);
		if (s < 0)
			break;
		if (s > 0)
			continue;
		struct pollfd p[2] = {{.fd = r->local, .events = POLLIN}, {.fd = (int)r->tls, .events = 0}};
		if (r->down.len)
			p[0].events |= POLLOUT;
		if (!r->down.len && !r->down.eof)
			p[1].events |= POLLIN;
		if (r->up.len)
			p[1].events |= POLLOUT;
		if (r->up.len)
			p[0].events &= (short)~POLLIN;
		/* The caller's end is always watched: its hang-up ends the stream
		 * even while the engine reads nothing (up full), where a poll that
		 * kept reporting it unhandled would spin. The engine's side is
		 * watched only for what a step can act on. */
		if (!p[1].events)
			p[1].fd = -1;
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[0].revents & (POLLHUP | POLLERR | POLLNVAL))
			break;
	}
	log_debug("docker", "TLS attach stream closed");
	relay_free(r);
	return NULL;
}

static void cleanup_relayp(struct relay **r)
{
	relay_free(*r);
}

/* Connects, relays, hands out the near end (engine_internal.h). */
int docker_tls_stream_open(const struct docker_engine *e, int64_t deadline, const char *what, int *ret_fd,
                           struct cp_error **err)
{
	long left = (long)(deadline - clock_monotonic_ms());
	if (left <= 0)
		return cp_error_set(err, CP_ERR_TIMEOUT, "%s: no time left to connect to the Docker Engine at '%s'",
		                    what, e->endpoint);
	_cleanup_(cleanup_relayp) struct relay *r = xcalloc(1, sizeof(*r));
	r->local = -1;
	r->h = curl_easy_init();
	if (!r->h)
		cp_oom(); /* curl_easy_init fails only when it cannot allocate */
	char errbuf[CURL_ERROR_SIZE] = "";
	_cleanup_free_ char *url = xasprintf("%s/_ping", e->base_url);
	docker_tls_setopt(r->h, e);
	curl_easy_setopt(r->h, CURLOPT_URL, url);
	curl_easy_setopt(r->h, CURLOPT_CONNECT_ONLY, 1L);
	curl_easy_setopt(r->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(r->h, CURLOPT_CONNECTTIMEOUT_MS, left);
	curl_easy_setopt(r->h, CURLOPT_ERRORBUFFER, errbuf);
	CURLcode rc = curl_easy_perform(r->h);
	if (rc != CURLE_OK) {
		long os_errno = 0;
		curl_easy_getinfo(r->h, CURLINFO_OS_ERRNO, &os_errno);
		return docker_remote_error(err, e->endpoint, what, rc, errbuf[0] ? errbuf : curl_easy_strerror(rc),
		                           os_errno, left);
	}
	if (curl_easy_getinfo(r->h, CURLINFO_ACTIVESOCKET, &r->tls) != CURLE_OK || r->tls == CURL_SOCKET_BAD)
		return cp_error_set(err, CP_ERR_INTERNAL, "%s: libcurl kept no connection to '%s'", what, e->endpoint);

	int pair[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, pair) < 0)
		return cp_error_set_errno(err, CP_ERR_INTERNAL, errno, "%s: socketpair", what);
	_cleanup_close_ int near = pair[0];
	r->local = pair[1];

	pthread_t t;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	int pe = pthread_create(&t, &attr, relay_run, r);
	pthread_attr_destroy(&attr);
	if (pe != 0)
		return cp_error_set_errno(err, CP_ERR_INTERNAL, pe, "%s: start the TLS relay", what);
	TAKE_PTR(r); /* the relay thread owns it now */
	*ret_fd = TAKE_FD(near);
	return 0;
}
