/* attack_endpoint.c: the doctor's attacks on serve's MCP endpoint (issue
 * 12): a request on the TCP port without the bearer token and with a wrong
 * one must get 401 (while the right token is served, so the 401 is the
 * check's and not a broken port's), and the Unix socket must refuse another
 * uid: through its file permissions, and, where the doctor is root, through
 * the peer-uid check itself (a throwaway uid that keeps CAP_DAC_OVERRIDE, so
 * only the check can stop it). Never prints or reports the token. */
#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../base/cleanup.h"
#include "ops.h"

#define ATTACK_HTTP_TIMEOUT_MS 5000
#define ATTACK_CHILD_WAIT_S 10

static const char initialize_body[] =
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\","
    "\"capabilities\":{},\"clientInfo\":{\"name\":\"chat2sbx-doctor\",\"version\":\"1\"}}}";

static long post_status(const char *url, const char *token, char *why, size_t why_size)
{
	struct ops_http_request rq = {.method = "POST",
	                              .url = url,
	                              .body = initialize_body,
	                              .bearer_token = token,
	                              .timeout_ms = ATTACK_HTTP_TIMEOUT_MS};
	long status = 0;
	_cleanup_error_ struct cp_error *e = NULL;
	if (ops_http_probe(&rq, &status, NULL, &e) < 0) {
		snprintf(why, why_size, "%s", e->message);
		return -1;
	}
	return status;
}

static void attack_tcp_token(const struct config *cfg, const struct ops_serve_state *s, struct ops_probe_report *r)
{
	const char *name = "mcp_token", *attack = "use the MCP TCP port without the bearer token, or with a wrong one";
	char why[512] = "";
	long none = post_status(s->endpoint, NULL, why, sizeof(why));
	if (none < 0) {
		ops_probe_report_add(r, name, attack, OPS_CHECK_FAILED, "the port did not answer: %s", why);
		return;
	}
	if (none != 401) {
		ops_probe_report_add(r, name, attack, OPS_CHECK_FAILED, "a request without a token got HTTP %ld%s",
		                     none, s->token_required ? "" : " (serve runs with CHAT2SBX_MCP_TOKEN=off)");
		return;
	}
	/* A guess of the right length and alphabet. */
	char wrong[OPS_MCP_TOKEN_LEN + 1];
	memset(wrong, 'a', OPS_MCP_TOKEN_LEN);
	wrong[OPS_MCP_TOKEN_LEN] = '\0';
	long bad = post_status(s->endpoint, wrong, why, sizeof(why));
	if (bad != 401) {
		ops_probe_report_add(r, name, attack, OPS_CHECK_FAILED, "a request with a wrong token got %s%ld",
		                     bad < 0 ? "no answer: " : "HTTP ", bad);
		return;
	}
	char token[OPS_MCP_TOKEN_LEN + 1];
	_cleanup_error_ struct cp_error *e = NULL;
	if (ops_mcp_token_read(cfg->state_dir, token, &e) < 0) {
		ops_probe_report_add(r, name, attack, OPS_CHECK_PASSED,
		                     "401 without a token and with a wrong one (the right one could not be tried: %s)",
		                     e->message);
		return;
	}
	long good = post_status(s->endpoint, token, why, sizeof(why));
	explicit_bzero(token, sizeof(token));
	if (good != 200)
		ops_probe_report_add(r, name, attack, OPS_CHECK_FAILED,
		                     "401 without a token, but the right token got %ld too: the port refuses "
		                     "everyone, so the check proves nothing",
		                     good);
	else
		ops_probe_report_add(r, name, attack, OPS_CHECK_PASSED,
		                     "%s: 401 without a token and with a wrong one; the owner's token is served",
		                     s->endpoint);
}

/* A uid with no account here, for the child to take. */
static uid_t throwaway_uid(void)
{
	for (uid_t u = 2147480000u; u > 2147470000u; u--)
		if (!getpwuid(u))
			return u;
	return 65534;
}

/* What the child sends, prepared before fork: the parent may have threads,
 * so the child makes system calls only. */
struct foreign_attempt {
	struct sockaddr_un addr;
	char request[600];
	size_t request_len;
	uid_t uid;
	int keep_dac;
};

/* In the child: become the uid (keeping CAP_DAC_OVERRIDE when keep_dac) and
 * send an initialize on the socket. Returns the child's exit status: 0 no
 * HTTP answer (cut off), 1 answered, 2 connect refused with EACCES (the file
 * permissions), 3 another connect error, 4 the child could not set itself
 * up. */
static int foreign_child(const struct foreign_attempt *a)
{
	if (a->keep_dac && prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
		return 4;
	if (setgroups(0, NULL) < 0 || setresgid(a->uid, a->uid, a->uid) < 0 || setresuid(a->uid, a->uid, a->uid) < 0)
		return 4;
	if (a->keep_dac) {
		struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
		struct __user_cap_data_struct d[2] = {{0}};
		d[0].effective = d[0].permitted = 1u << CAP_DAC_OVERRIDE;
		if (syscall(SYS_capset, &h, d) < 0)
			return 4;
	}
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 4;
	if (connect(fd, (const struct sockaddr *)&a->addr, sizeof(a->addr)) < 0)
		return errno == EACCES ? 2 : 3;
	if (send(fd, a->request, a->request_len, MSG_NOSIGNAL) < 0)
		return 0;
	struct timeval tv = {.tv_sec = ATTACK_CHILD_WAIT_S};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	char buf[64];
	return recv(fd, buf, sizeof(buf), 0) > 0 ? 1 : 0;
}

static int run_foreign(const char *socket_path, uid_t uid, int keep_dac)
{
	struct foreign_attempt a = {.addr = {.sun_family = AF_UNIX}, .uid = uid, .keep_dac = keep_dac};
	snprintf(a.addr.sun_path, sizeof(a.addr.sun_path), "%s", socket_path);
	int n = snprintf(a.request, sizeof(a.request),
	                 "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nAccept: "
	                 "application/json, text/event-stream\r\nContent-Length: %zu\r\n\r\n%s",
	                 strlen(initialize_body), initialize_body);
	a.request_len = (size_t)n;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0)
		_exit(foreign_child(&a));
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void attack_socket_uid(const struct ops_serve_state *s, struct ops_probe_report *r)
{
	const char *name = "mcp_socket", *attack = "use the MCP Unix socket as another local user";
	if (!s->socket) {
		ops_probe_report_add(r, name, attack, OPS_CHECK_FAILED,
		                     "this serve has no Unix socket (an older version?)");
		return;
	}
	struct stat st;
	if (stat(s->socket, &st) < 0) {
		ops_probe_report_add(r, name, attack, OPS_CHECK_FAILED, "'%s': %s", s->socket, strerror(errno));
		return;
	}
	if (st.st_mode & 077) {
		ops_probe_report_add(r, name, attack, OPS_CHECK_FAILED, "'%s' has mode %04o: other users may connect",
		                     s->socket, (unsigned)(st.st_mode & 07777));
		return;
	}
	if (geteuid() != 0) {
		ops_probe_report_add(r, name, attack, OPS_CHECK_PASSED,
		                     "'%s' is 0600 (the uid check behind it is proved when doctor runs as root)",
		                     s->socket);
		return;
	}
	uid_t uid = throwaway_uid();
	int plain = run_foreign(s->socket, uid, 0);
	int dac = run_foreign(s->socket, uid, 1);
	if (plain == 1 || dac == 1)
		ops_probe_report_add(r, name, attack, OPS_CHECK_FAILED, "uid %u was served over '%s'%s", (unsigned)uid,
		                     s->socket,
		                     plain == 1 ? "" : " (with CAP_DAC_OVERRIDE: the peer-uid check is missing)");
	else if (plain < 0 || dac < 0 || plain == 4 || dac == 4 || dac == 3)
		ops_probe_report_add(r, name, attack, OPS_CHECK_FAILED,
		                     "the attack could not run as uid %u (setup %d/%d); nothing was proved",
		                     (unsigned)uid, plain, dac);
	else
		ops_probe_report_add(r, name, attack, OPS_CHECK_PASSED,
		                     "uid %u: %s; with CAP_DAC_OVERRIDE the connection was cut off without an answer",
		                     (unsigned)uid, plain == 2 ? "connect refused (EACCES)" : "no answer");
}

void ops_endpoint_probe(const struct config *cfg, struct ops_probe_report *r)
{
	struct ops_serve_state s = {0};
	_cleanup_error_ struct cp_error *e = NULL;
	const char *why = NULL;
	if (ops_serve_state_read(cfg->state_dir, &s, &e) < 0)
		why = e->code == CP_ERR_NOT_FOUND ? "serve is not running (no serve.json)" : e->message;
	else if (!ops_pid_alive(s.pid))
		why = "serve.json names a process that is gone";
	if (why) {
		ops_probe_report_add(
		    r, "mcp_token", "use the MCP TCP port without the bearer token, or with a wrong one",
		    OPS_CHECK_SKIPPED, "%s; start serve and run doctor again to attack its endpoint", why);
		ops_probe_report_add(r, "mcp_socket", "use the MCP Unix socket as another local user",
		                     OPS_CHECK_SKIPPED, "%s", why);
	} else {
		attack_tcp_token(cfg, &s, r);
		attack_socket_uid(&s, r);
	}
	ops_serve_state_clear(&s);
}
