/* test_direct.c: connecting the direct channel (direct.c; proto.h
 * channel.connect) against a listener the test makes. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
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
	int dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct rpc_error err;
	int fd = direct_connect(dirfd, token, strlen(token), &err);
	cr_assert_geq(fd, 0, "%s", err.message);
	int c = accept(l, NULL, NULL);
	char got[PROTO_CHANNEL_TOKEN_LEN + 1];
	cr_assert_eq(read(c, got, sizeof got), (ssize_t)sizeof got);
	cr_assert_eq(memcmp(got, token, PROTO_CHANNEL_TOKEN_LEN), 0);
	cr_assert_eq(got[PROTO_CHANNEL_TOKEN_LEN], '\n');
	close(c);
	close(fd);
	close(l);
	close(dirfd);
	unlink(a.sun_path);
	rmdir(dir);
}

Test(direct, refuses_a_bad_token_a_missing_directory_and_a_missing_socket)
{
	struct rpc_error err;
	char dir[] = "/tmp/chat2sbx-direct-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	int dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	cr_assert_lt(direct_connect(dirfd, "../x", 4, &err), 0);
	cr_assert_str_eq(err.data_code, "INVALID_ARGUMENT");
	cr_assert_lt(direct_connect(dirfd, "0123456789ABCDEF0123456789abcdef", 32, &err), 0,
	             "upper case is not the token's alphabet");
	cr_assert_lt(direct_connect(-1, token, strlen(token), &err), 0);
	cr_assert_str_eq(err.data_code, "INTERNAL");
	cr_assert_not_null(strstr(err.message, "no direct channel directory"), "%s", err.message);
	cr_assert_lt(direct_connect(dirfd, token, strlen(token), &err), 0, "no socket in the directory");
	cr_assert_str_eq(err.data_code, "INTERNAL");
	cr_assert_not_null(strstr(err.message, PROTO_CHANNEL_SOCKET), "%s", err.message);
	close(dirfd);
	rmdir(dir);
}

/* Root in the sandbox renames the directory above the mount and listens
 * where the path now leads (issue 27): the helper must still reach the
 * directory it opened, so the impostor never sees the token. */
Test(direct, reaches_the_directory_it_opened_not_where_its_path_leads_now, .timeout = 10)
{
	char top[] = "/tmp/chat2sbx-direct-XXXXXX";
	cr_assert_not_null(mkdtemp(top));
	char dir[PATH_MAX], moved[PATH_MAX];
	snprintf(dir, sizeof dir, "%s/channel", top);
	snprintf(moved, sizeof moved, "%s/moved", top);
	cr_assert_eq(mkdir(dir, 0700), 0);
	int dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(dirfd, 0);
	cr_assert_eq(rename(dir, moved), 0);
	cr_assert_eq(mkdir(dir, 0700), 0);
	struct sockaddr_un real_a, fake_a;
	int real = listener(moved, &real_a, 4);
	int fake = listener(dir, &fake_a, 4);
	struct rpc_error err;
	int fd = direct_connect(dirfd, token, strlen(token), &err);
	cr_assert_geq(fd, 0, "%s", err.message);
	cr_assert_eq(fcntl(real, F_SETFL, O_NONBLOCK), 0);
	cr_assert_eq(fcntl(fake, F_SETFL, O_NONBLOCK), 0);
	int c = accept4(real, NULL, NULL, SOCK_CLOEXEC);
	cr_assert_geq(c, 0, "the real listener got the connection");
	char got[PROTO_CHANNEL_TOKEN_LEN + 1];
	cr_assert_eq(read(c, got, sizeof got), (ssize_t)sizeof got);
	cr_assert_eq(memcmp(got, token, PROTO_CHANNEL_TOKEN_LEN), 0);
	cr_assert_lt(accept4(fake, NULL, NULL, SOCK_CLOEXEC), 0, "the impostor got nothing");
	cr_assert_eq(errno, EAGAIN);
	close(c);
	close(fd);
	close(real);
	close(fake);
	close(dirfd);
	unlink(real_a.sun_path);
	unlink(fake_a.sun_path);
	rmdir(moved);
	rmdir(dir);
	rmdir(top);
}

/* Others in the sandbox filled the listener's backlog: the helper's loop
 * must not wait for room. */
Test(direct, a_full_backlog_fails_at_once, .timeout = 10)
{
	char dir[] = "/tmp/chat2sbx-direct-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	struct sockaddr_un a;
	int l = listener(dir, &a, 0);
	int dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
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
	cr_assert_lt(direct_connect(dirfd, token, strlen(token), &err), 0);
	cr_assert_lt(now_ms() - t0, 1000);
	cr_assert_str_eq(err.data_code, "INTERNAL");
	for (int i = 0; i < n; i++)
		close(fill[i]);
	close(dirfd);
	close(l);
	unlink(a.sun_path);
	rmdir(dir);
}
