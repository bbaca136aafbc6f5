/* test_direct.c: connecting the direct channel (direct.c; proto.h
 * channel.connect) against a listener the test makes. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "../direct.h"
#include "../proto.h"
#include "harness.h"

static const char *token = "00112233445566778899aabbccddeeff";

static int listener(const char *dir, struct sockaddr_un *a, int backlog)
{
	*a = (struct sockaddr_un){.sun_family = AF_UNIX};
	snprintf(a->sun_path, sizeof a->sun_path, "%s/s", dir);
	int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_eq(bind(l, (struct sockaddr *)a, sizeof *a), 0);
	cr_assert_eq(listen(l, backlog), 0);
	return l;
}

Test(direct, writes_the_token_then_a_newline)
{
	char dir[] = "/tmp/chat2sbx-direct-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	struct sockaddr_un a;
	int l = listener(dir, &a, 4);
	struct rpc_error err;
	int fd = direct_connect(a.sun_path, token, strlen(token), &err);
	cr_assert_geq(fd, 0, "%s", err.message);
	int c = accept(l, NULL, NULL);
	char got[PROTO_CHANNEL_TOKEN_LEN + 1];
	cr_assert_eq(read(c, got, sizeof got), (ssize_t)sizeof got);
	cr_assert_eq(memcmp(got, token, PROTO_CHANNEL_TOKEN_LEN), 0);
	cr_assert_eq(got[PROTO_CHANNEL_TOKEN_LEN], '\n');
	close(c);
	close(fd);
	close(l);
	unlink(a.sun_path);
	rmdir(dir);
}

Test(direct, refuses_a_bad_token_and_a_missing_socket)
{
	struct rpc_error err;
	cr_assert_lt(direct_connect("/nonexistent/s", "../x", 4, &err), 0);
	cr_assert_str_eq(err.data_code, "INVALID_ARGUMENT");
	cr_assert_lt(direct_connect("/nonexistent/s", "0123456789ABCDEF0123456789abcdef", 32, &err), 0,
	             "upper case is not the token's alphabet");
	cr_assert_lt(direct_connect("/nonexistent/s", token, strlen(token), &err), 0);
	cr_assert_str_eq(err.data_code, "INTERNAL");
	cr_assert_not_null(strstr(err.message, "/nonexistent/s"), "%s", err.message);
}

/* Others in the sandbox filled the listener's backlog: the helper's loop
 * must not wait for room. */
Test(direct, a_full_backlog_fails_at_once, .timeout = 10)
{
	char dir[] = "/tmp/chat2sbx-direct-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	struct sockaddr_un a;
	int l = listener(dir, &a, 0);
	int fill[64], n = 0;
	for (; n < 64; n++) {
		fill[n] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (connect(fill[n], (struct sockaddr *)&a, sizeof a) < 0) {
			cr_assert_eq(errno, EAGAIN, "%s", strerror(errno));
			close(fill[n]);
			break;
		}
	}
	cr_assert_lt(n, 64, "the backlog filled up");
	struct rpc_error err;
	int64_t t0 = now_ms();
	cr_assert_lt(direct_connect(a.sun_path, token, strlen(token), &err), 0);
	cr_assert_lt(now_ms() - t0, 1000);
	cr_assert_str_eq(err.data_code, "INTERNAL");
	for (int i = 0; i < n; i++)
		close(fill[i]);
	close(l);
	unlink(a.sun_path);
	rmdir(dir);
}
