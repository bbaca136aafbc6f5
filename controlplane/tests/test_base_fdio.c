/* test_base_fdio.c: the deadline-bounded socket loop (base/fdio.h) on a
 * socketpair: a whole write, a peer that stops reading (ETIMEDOUT, bytes
 * counted), a gone peer (EPIPE, no SIGPIPE), reads that time out or see the
 * end of the stream. */
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fdio.h"

static void pair(int sv[2])
{
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	int small = 4096;
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
}

static void *drain(void *arg)
{
	int fd = *(int *)arg;
	char buf[8192];
	size_t total = 0;
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		total += (size_t)n;
	return (void *)total;
}

Test(fdio, send_all_writes_everything_to_a_reader)
{
	int sv[2];
	pair(sv);
	pthread_t t;
	pthread_create(&t, NULL, drain, &sv[1]);
	static char big[1 << 20];
	memset(big, 'x', sizeof(big));
	size_t sent = 0;
	cr_assert_eq(fdio_send_all(sv[0], big, sizeof(big), clock_monotonic_ms() + 10000, &sent), 0);
	cr_assert_eq(sent, sizeof(big));
	close(sv[0]);
	void *got;
	pthread_join(t, &got);
	cr_assert_eq((size_t)got, sizeof(big));
	close(sv[1]);
}

Test(fdio, send_all_stops_at_the_deadline_and_counts_bytes)
{
	int sv[2];
	pair(sv);
	static char big[1 << 20];
	size_t sent = 0;
	cr_assert_eq(fdio_send_all(sv[0], big, sizeof(big), clock_monotonic_ms() + 100, &sent), -1);
	cr_assert_eq(errno, ETIMEDOUT);
	cr_assert_gt(sent, 0, "the bytes that fit are on the wire");
	cr_assert_lt(sent, sizeof(big));
	/* A deadline already past refuses without waiting once the buffer is full. */
	size_t more = 0;
	cr_assert_eq(fdio_send_all(sv[0], big, sizeof(big), 0, &more), -1);
	cr_assert_eq(errno, ETIMEDOUT);
	cr_assert_eq(more, 0);
	close(sv[0]);
	close(sv[1]);
}

Test(fdio, send_to_a_gone_peer_is_epipe_not_sigpipe)
{
	int sv[2];
	pair(sv);
	close(sv[1]);
	cr_assert_eq(fdio_send_all(sv[0], "x", 1, clock_monotonic_ms() + 1000, NULL), -1);
	cr_assert_eq(errno, EPIPE);
	close(sv[0]);
}

Test(fdio, recv_some_times_out_reads_and_sees_the_end)
{
	int sv[2];
	pair(sv);
	char buf[16];
	cr_assert_eq(fdio_recv_some(sv[0], buf, sizeof(buf), clock_monotonic_ms() + 50), -1);
	cr_assert_eq(errno, ETIMEDOUT);
	cr_assert_eq(write(sv[1], "hello", 5), 5);
	cr_assert_eq(fdio_recv_some(sv[0], buf, 3, clock_monotonic_ms() + 1000), 3, "at most len bytes");
	cr_assert_eq(memcmp(buf, "hel", 3), 0);
	cr_assert_eq(fdio_recv_some(sv[0], buf, sizeof(buf), clock_monotonic_ms() + 1000), 2);
	close(sv[1]);
	cr_assert_eq(fdio_recv_some(sv[0], buf, sizeof(buf), clock_monotonic_ms() + 1000), 0);
	close(sv[0]);
}

Test(fdio, wait_reports_ready_and_timeout)
{
	int sv[2];
	pair(sv);
	cr_assert_eq(fdio_wait(sv[0], POLLOUT, clock_monotonic_ms() + 1000), 1);
	cr_assert_eq(fdio_wait(sv[0], POLLIN, clock_monotonic_ms() + 20), 0);
	close(sv[0]);
	close(sv[1]);
}
