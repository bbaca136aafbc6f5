/* test_connect.c: the helper's connect mode (connect.c), the far end of a
 * preview of a sandbox on another node: connect_relay between a pipe pair
 * (the exec's stdin and stdout) and a socketpair (the TCP connection), run
 * in a thread. Checks bytes both ways, that the end of stdin is passed on
 * as a half-close and the answer still arrives, that the server's end ends
 * the relay, that a closed stdout ends it, and a bad port's refusal. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../connect.h"

struct run {
	int in_fd, out_fd, sock;
	int result;
	pthread_t t;
};

static void *relay_thread(void *arg)
{
	struct run *r = arg;
	r->result = connect_relay(r->in_fd, r->out_fd, r->sock);
	return NULL;
}

/* in_w: the test writes "stdin"; out_r: the test reads "stdout"; peer: the server side. */
static void start(struct run *r, int *in_w, int *out_r, int *peer)
{
	int in[2], out[2], sp[2];
	cr_assert_eq(pipe(in), 0);
	cr_assert_eq(pipe(out), 0);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
	*r = (struct run){.in_fd = in[0], .out_fd = out[1], .sock = sp[0], .result = -1};
	*in_w = in[1];
	*out_r = out[0];
	*peer = sp[1];
	cr_assert_eq(pthread_create(&r->t, NULL, relay_thread, r), 0);
}

static void finish(struct run *r)
{
	pthread_join(r->t, NULL);
	close(r->in_fd);
	close(r->out_fd);
	close(r->sock);
}

static size_t read_all(int fd, char *buf, size_t size)
{
	size_t got = 0;
	ssize_t n;
	while (got < size && (n = read(fd, buf + got, size - got)) > 0)
		got += (size_t)n;
	return got;
}

Test(connect, bytes_both_ways_half_close_then_answer)
{
	struct run r;
	int in_w, out_r, peer;
	start(&r, &in_w, &out_r, &peer);
	cr_assert_eq(write(in_w, "GET / HTTP/1.0\r\n\r\n", 18), 18);
	close(in_w); /* the person's side ends: passed on as a half-close */
	char req[64] = "";
	cr_assert_eq(read_all(peer, req, sizeof(req)), 18, "the server gets the request and then its end");
	cr_assert_eq(memcmp(req, "GET / HTTP/1.0", 14), 0);
	/* The answer still arrives after the half-close. */
	static char big[200000];
	memset(big, 'a', sizeof(big));
	big[sizeof(big) - 1] = 'z';
	size_t off = 0;
	static char got[sizeof(big)];
	size_t n_got = 0;
	/* Interleave: write a piece, read what came, until all moved. */
	while (off < sizeof(big) || n_got < sizeof(big)) {
		if (off < sizeof(big)) {
			size_t piece = sizeof(big) - off < 8192 ? sizeof(big) - off : 8192;
			ssize_t n = write(peer, big + off, piece);
			cr_assert_gt(n, 0);
			off += (size_t)n;
			if (off == sizeof(big))
				close(peer); /* the server ends: the relay ends once all reached stdout */
		}
		ssize_t n = read(out_r, got + n_got, sizeof(got) - n_got);
		cr_assert_geq(n, 0);
		n_got += (size_t)n;
	}
	cr_assert_eq(memcmp(got, big, sizeof(big)), 0, "the answer arrives whole and in order");
	finish(&r); /* returns once the server's end reached stdout */
	cr_assert_eq(r.result, 0);
	char c;
	cr_assert_eq(read(out_r, &c, 1), 0, "nothing follows the answer");
	close(out_r);
}

Test(connect, closed_stdout_ends_the_relay)
{
	signal(SIGPIPE, SIG_IGN);
	struct run r;
	int in_w, out_r, peer;
	start(&r, &in_w, &out_r, &peer);
	close(out_r); /* serve is gone */
	cr_assert_eq(write(peer, "hello", 5), 5);
	finish(&r);
	cr_assert_eq(r.result, 1);
	close(in_w);
	close(peer);
}

Test(connect, bad_port_is_refused)
{
	char *a[] = {"connect", "0", NULL};
	cr_assert_eq(connect_main(2, a), 2);
	char *b[] = {"connect", "80x", NULL};
	cr_assert_eq(connect_main(2, b), 2);
	char *c[] = {"connect", NULL};
	cr_assert_eq(connect_main(1, c), 2);
}
