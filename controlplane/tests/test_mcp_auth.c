/* test_mcp_auth.c: who may use the MCP endpoint (issue 12): the bearer
 * token check and its parser, the peer-uid rule, the Unix socket's binding,
 * and both listeners end to end with libcurl: TCP without, with a wrong and
 * with the right token, the OAuth paths a client tries after a 401 (each
 * answers where the token is, and none answers data or takes a flow), the
 * socket for this user and (as root) for a foreign uid, which must be cut
 * off. */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/log.h"
#include "mcp/http_internal.h"
#include "mcp/internal.h"
#include "tool_test.h"

#define TOKEN "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
/* The 401's error_description: RFC 6750 section 3 allows only %x20-21,
 * %x23-5B and %x5D-7E in it, so it names no path. */
#define UNAUTHORIZED_DESCRIPTION "error_description=\"send the bearer token that 'chat2sbx token' prints\""

Test(mcp_auth, bearer_right_token_passes)
{
	cr_assert_eq(mcp_bearer_check("Bearer " TOKEN, TOKEN), MCP_BEARER_OK);
	cr_assert_eq(mcp_bearer_check("bearer " TOKEN, TOKEN), MCP_BEARER_OK, "the scheme is case-insensitive");
	cr_assert_eq(mcp_bearer_check("  BEARER \t" TOKEN "  ", TOKEN), MCP_BEARER_OK, "surrounding blanks");
}

Test(mcp_auth, bearer_missing_and_malformed)
{
	cr_assert_eq(mcp_bearer_check(NULL, TOKEN), MCP_BEARER_MISSING);
	cr_assert_eq(mcp_bearer_check("", TOKEN), MCP_BEARER_MALFORMED);
	cr_assert_eq(mcp_bearer_check("Bearer", TOKEN), MCP_BEARER_MALFORMED);
	cr_assert_eq(mcp_bearer_check("Bearer ", TOKEN), MCP_BEARER_MALFORMED);
	cr_assert_eq(mcp_bearer_check("Basic " TOKEN, TOKEN), MCP_BEARER_MALFORMED);
	cr_assert_eq(mcp_bearer_check("Bearer" TOKEN, TOKEN), MCP_BEARER_MALFORMED, "no space after the scheme");
	cr_assert_eq(mcp_bearer_check("Bearer " TOKEN " extra", TOKEN), MCP_BEARER_MALFORMED, "two values");
	cr_assert_eq(mcp_bearer_check(TOKEN, TOKEN), MCP_BEARER_MALFORMED, "the token without the scheme");
}

Test(mcp_auth, bearer_wrong_tokens)
{
	char t[sizeof(TOKEN)];
	memcpy(t, TOKEN, sizeof(t));
	t[63] = t[63] == 'f' ? 'e' : 'f';
	char h[128];
	snprintf(h, sizeof(h), "Bearer %s", t);
	cr_assert_eq(mcp_bearer_check(h, TOKEN), MCP_BEARER_WRONG, "last character differs");
	cr_assert_eq(mcp_bearer_check("Bearer 0123456789abcdef", TOKEN), MCP_BEARER_WRONG, "a prefix");
	cr_assert_eq(mcp_bearer_check("Bearer " TOKEN "0", TOKEN), MCP_BEARER_WRONG, "one character more");
	cr_assert_eq(
	    mcp_bearer_check("Bearer " TOKEN, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdeF"),
	    MCP_BEARER_WRONG, "tokens are compared exactly (case matters)");
	/* A NUL in the value cannot make a prefix pass: the header is a C
	 * string, so what follows the NUL is not compared as a match. */
	cr_assert_eq(mcp_bearer_check("Bearer 0123", TOKEN), MCP_BEARER_WRONG);
}

Test(mcp_auth, peer_uid_rule)
{
	cr_assert(mcp_peer_uid_allowed(1000, 1000));
	cr_assert(mcp_peer_uid_allowed(0, 1000), "root may always connect");
	cr_assert(mcp_peer_uid_allowed(0, 0));
	cr_assert_not(mcp_peer_uid_allowed(1001, 1000));
	cr_assert_not(mcp_peer_uid_allowed(65534, 0));
}

Test(mcp_auth, peer_credentials_of_a_socketpair)
{
	int sv[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	uid_t uid = (uid_t)-1;
	pid_t pid = 0;
	cr_assert_eq(mcp_peer_credentials(sv[0], &uid, &pid), 0);
	cr_assert_eq(uid, geteuid());
	cr_assert_eq(pid, getpid());
	close(sv[0]);
	close(sv[1]);
	int pipefd[2];
	cr_assert_eq(pipe(pipefd), 0);
	cr_assert_eq(mcp_peer_credentials(pipefd[0], &uid, NULL), -1, "not a socket");
	close(pipefd[0]);
	close(pipefd[1]);
}

Test(mcp_auth, unix_listen_makes_a_0600_socket_and_replaces_a_stale_one)
{
	char dir[] = "/tmp/test-mcp-auth-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char path[200];
	snprintf(path, sizeof(path), "%s/mcp.sock", dir);
	struct cp_error *err = NULL;
	int fd = -1;
	cr_assert_eq(mcp_unix_listen(path, &fd, &err), 0, "%s", err ? err->message : "");
	struct stat st;
	cr_assert_eq(lstat(path, &st), 0);
	cr_assert(S_ISSOCK(st.st_mode));
	cr_assert_eq(st.st_mode & 07777, 0600);
	cr_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd); /* the file stays: a stale socket, as after a crash */
	cr_assert_eq(mcp_unix_listen(path, &fd, &err), 0, "a stale socket is replaced: %s", err ? err->message : "");
	close(fd);
	unlink(path);

	/* Anything else at the path is left alone. */
	int f = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	cr_assert_geq(f, 0);
	close(f);
	cr_assert_eq(mcp_unix_listen(path, &fd, &err), -1);
	cr_assert_eq(err->code, CP_ERR_CONFLICT);
	cr_assert(strstr(err->message, "not a socket"), "%s", err->message);
	cp_error_freep(&err);
	unlink(path);

	char longp[300];
	memset(longp, 'a', sizeof(longp) - 1);
	longp[0] = '/';
	longp[sizeof(longp) - 1] = '\0';
	cr_assert_eq(mcp_unix_listen(longp, &fd, &err), -1);
	cr_assert_eq(err->code, CP_ERR_INVALID_ARGUMENT);
	cr_assert(strstr(err->message, "CHAT2SBX_STATE_DIR"), "%s", err->message);
	cp_error_freep(&err);
	rmdir(dir);
}

Test(mcp_auth, oauth_paths_are_recognised_exactly)
{
	static const struct {
		const char *url;
		enum mcp_oauth_path want;
	} rows[] = {
	    {"/.well-known/oauth-protected-resource", MCP_OAUTH_METADATA},
	    {"/.well-known/oauth-protected-resource/mcp", MCP_OAUTH_METADATA},
	    {"/.well-known/oauth-authorization-server", MCP_OAUTH_METADATA},
	    {"/.well-known/oauth-authorization-server/mcp", MCP_OAUTH_METADATA},
	    {"/.well-known/openid-configuration", MCP_OAUTH_METADATA},
	    {"/.well-known/openid-configuration/mcp", MCP_OAUTH_METADATA},
	    {"/mcp/.well-known/openid-configuration", MCP_OAUTH_METADATA},
	    {"/register", MCP_OAUTH_REGISTER},
	    {"/authorize", MCP_OAUTH_AUTHORIZE},
	    {"/token", MCP_OAUTH_TOKEN},
	    {"/mcp", MCP_OAUTH_NONE},
	    {"/", MCP_OAUTH_NONE},
	    {"", MCP_OAUTH_NONE},
	    {"/.well-known/", MCP_OAUTH_NONE},
	    {"/.well-known/security.txt", MCP_OAUTH_NONE},
	    {"/.well-known/oauth-protected-resourcex", MCP_OAUTH_NONE},
	    {"/.well-known/openid-configurationx", MCP_OAUTH_NONE},
	    {"/.well-known/openid-configuration.json", MCP_OAUTH_NONE},
	    {"/x.well-known/openid-configuration", MCP_OAUTH_NONE},
	    {"/register/", MCP_OAUTH_NONE},
	    {"/register/x", MCP_OAUTH_NONE},
	    {"/REGISTER", MCP_OAUTH_NONE},
	    {"/tokens", MCP_OAUTH_NONE},
	    {"/mcp/token", MCP_OAUTH_NONE},
	    {"register", MCP_OAUTH_NONE},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		cr_expect_eq(mcp_oauth_path_of(rows[i].url), rows[i].want, "'%s'", rows[i].url);
	cr_assert_eq(mcp_oauth_path_of(NULL), MCP_OAUTH_NONE);
}

/* ---- both listeners, end to end ---- */

static int atool_echo(const struct mcp_call *call, const struct mcp_args *margs, struct json_object **ret_result,
                      struct cp_error **err)
{
	struct json_object *args = mcp_args_object(margs);
	(void)call;
	(void)err;
	json_object_deep_copy(args, ret_result, NULL);
	return 0;
}

static const struct mcp_tool atools[] = {
    {"echo", "Echo", "Returns its arguments.", test_tool_args, NULL, MCP_HINT_READ_ONLY, atool_echo},
};

static struct mcp_server *aserver;
static char adir[64], asock[96], aurl[64];

static void asetup(void)
{
	log_set_level(LOG_LEVEL_ERROR);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	snprintf(adir, sizeof(adir), "/tmp/test-mcp-auth-XXXXXX");
	cr_assert_not_null(mkdtemp(adir));
	snprintf(asock, sizeof(asock), "%s/mcp.sock", adir);
	struct mcp_server_options o = {.host = "127.0.0.1",
	                               .port = 0,
	                               .name = "chat2sbx-test",
	                               .version = "0.0.1",
	                               .unix_socket_path = asock,
	                               .bearer_token = TOKEN,
	                               .token_hint = "the file '/state/token'"};
	struct cp_error *err = NULL;
	cr_assert_eq(mcp_server_new(&o, atools, 1, NULL, &aserver, &err), 0);
	cr_assert_eq(mcp_server_listen(aserver, &err), 0, "%s", err ? err->message : "");
	snprintf(aurl, sizeof(aurl), "http://127.0.0.1:%u", mcp_server_port(aserver));
}

static void ateardown(void)
{
	mcp_server_free(aserver);
	aserver = NULL;
	struct stat st;
	cr_expect_neq(lstat(asock, &st), 0, "stop removes the socket file");
	rmdir(adir);
	curl_global_cleanup();
}

struct areply {
	long status;
	char body[4096];
	size_t len;
	char www_auth[256];
	char location[256];
	CURLcode rc;
};

static size_t on_abody(char *data, size_t size, size_t n, void *arg)
{
	struct areply *r = arg;
	size_t take = size * n;
	if (take > sizeof(r->body) - 1 - r->len)
		take = sizeof(r->body) - 1 - r->len;
	memcpy(r->body + r->len, data, take);
	r->len += take;
	r->body[r->len] = '\0';
	return size * n;
}

static size_t on_aheader(char *line, size_t size, size_t n, void *arg)
{
	struct areply *r = arg;
	size_t len = size * n;
	if (len > 17 && strncasecmp(line, "WWW-Authenticate:", 17) == 0)
		snprintf(r->www_auth, sizeof(r->www_auth), "%.*s", (int)(len - 18), line + 18);
	r->www_auth[strcspn(r->www_auth, "\r\n")] = '\0';
	if (len > 9 && strncasecmp(line, "Location:", 9) == 0)
		snprintf(r->location, sizeof(r->location), "%.*s", (int)(len - 9), line + 9);
	return len;
}

/* Sends method to path over TCP (socket NULL) or the Unix socket with body
 * (NULL: none) and the extra headers (NULL-terminated, may be NULL). */
static struct areply areq(const char *socket, const char *method, const char *path, const char *body,
                          const char *const *headers)
{
	struct areply r = {0};
	CURL *c = curl_easy_init();
	char url[200];
	snprintf(url, sizeof(url), "%s%s", socket ? "http://localhost" : aurl, path);
	struct curl_slist *h = NULL;
	for (size_t i = 0; headers && headers[i]; i++)
		h = curl_slist_append(h, headers[i]);
	curl_easy_setopt(c, CURLOPT_URL, url);
	if (socket)
		curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, socket);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	if (body)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_abody);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_aheader);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
	r.rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return r;
}

/* POSTs a ping to path over TCP (socket NULL) or the Unix socket, with an
 * Authorization header when auth is not NULL. */
static struct areply apost(const char *socket, const char *path, const char *auth)
{
	char ah[200];
	snprintf(ah, sizeof(ah), "Authorization: %s", auth ? auth : "");
	const char *h[] = {"Content-Type: application/json", "Accept: application/json, text/event-stream",
	                   auth ? ah : NULL, NULL};
	return areq(socket, "POST", path, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}", h);
}

TestSuite(mcp_auth_http, .init = asetup, .fini = ateardown, .timeout = 20);

Test(mcp_auth_http, tcp_without_a_token_is_401_with_a_json_rpc_error_naming_the_token)
{
	struct areply r = apost(NULL, "/mcp", NULL);
	cr_assert_eq(r.status, 401, "%s", r.body);
	cr_assert_str_eq(r.www_auth, "Bearer realm=\"chat2sbx\", " UNAUTHORIZED_DESCRIPTION);
	struct json_object *o = json_tokener_parse(r.body);
	cr_assert_not_null(o, "%s", r.body);
	struct json_object *e, *m, *code;
	cr_assert(json_object_object_get_ex(o, "error", &e));
	cr_assert(json_object_object_get_ex(e, "code", &code));
	cr_assert_eq(json_object_get_int(code), MCP_RPC_INVALID_REQUEST);
	cr_assert(json_object_object_get_ex(e, "message", &m));
	const char *text = json_object_get_string(m);
	cr_assert(strstr(text, "Authorization: Bearer <token>"), "%s", text);
	cr_assert(strstr(text, "'/state/token'"), "names where the token is: %s", text);
	cr_assert(strstr(text, "chat2sbx token"), "%s", text);
	cr_assert(strstr(text, asock), "names the socket: %s", text);
	cr_assert_null(strstr(r.body, TOKEN), "the token itself is never sent");
	json_object_put(o);
}

Test(mcp_auth_http, tcp_with_a_wrong_or_malformed_token_is_401)
{
	struct areply r =
	    apost(NULL, "/mcp", "Bearer 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdee");
	cr_assert_eq(r.status, 401);
	cr_assert_str_eq(r.www_auth, "Bearer realm=\"chat2sbx\", error=\"invalid_token\", " UNAUTHORIZED_DESCRIPTION);
	cr_assert(strstr(r.body, "not this server's"), "%s", r.body);
	r = apost(NULL, "/mcp", "Basic dXNlcjpwYXNz");
	cr_assert_eq(r.status, 401);
	cr_assert(strstr(r.body, "is not 'Bearer <token>'"), "%s", r.body);
}

Test(mcp_auth_http, tcp_with_the_token_is_served)
{
	struct areply r = apost(NULL, "/mcp", "Bearer " TOKEN);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert(strstr(r.body, "\"result\""), "%s", r.body);
}

/* Every way a client asks for OAuth after a 401 (MCP basic/authorization;
 * e2e 22 has the Inspector CLI's own sequence). */
static const char *const oauth_paths[] = {
    "/.well-known/oauth-protected-resource",
    "/.well-known/oauth-protected-resource/mcp",
    "/.well-known/oauth-authorization-server",
    "/.well-known/openid-configuration",
    "/mcp/.well-known/openid-configuration",
    "/register",
    "/authorize",
    "/token",
};
#define N_OAUTH_PATHS (sizeof(oauth_paths) / sizeof(oauth_paths[0]))
/* What a client sends there: a dynamic client registration (RFC 7591),
 * a token request (RFC 6749 section 4.1.3) and a JSON-RPC call, which must
 * not be dispatched. */
static const char REGISTRATION[] = "{\"redirect_uris\":[\"http://127.0.0.1:6276/oauth/callback\"],"
                                   "\"token_endpoint_auth_method\":\"none\",\"grant_types\":[\"authorization_code\"],"
                                   "\"response_types\":[\"code\"],\"client_name\":\"attacker\"}";
static const char TOKEN_REQUEST[] = "grant_type=authorization_code&code=x&redirect_uri=http%3A%2F%2F127.0.0.1%3A6276%2F"
                                    "&client_id=x&code_verifier=0123456789012345678901234567890123456789abc";
static const char RPC_CALL[] =
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{}}}";

/* r is an OAuth path's answer: 404 for metadata, 400 otherwise, exactly
 * {"error": "invalid_request", "error_description": ...} with want in the
 * description, no challenge, no redirect, never the token: nothing a flow
 * could go on with. */
static void assert_oauth_answer(const struct areply *r, const char *path, const char *want)
{
	int metadata = strstr(path, "/.well-known/") != NULL;
	cr_assert_eq(r->rc, CURLE_OK, "%s: %s", path, curl_easy_strerror(r->rc));
	cr_assert_eq(r->status, metadata ? 404 : 400, "%s: %ld %s", path, r->status, r->body);
	struct json_object *o = json_tokener_parse(r->body), *e, *d;
	cr_assert_not_null(o, "%s: %s", path, r->body);
	cr_assert_eq(json_object_object_length(o), 2, "%s: only the error: %s", path, r->body);
	cr_assert(json_object_object_get_ex(o, "error", &e));
	cr_assert_str_eq(json_object_get_string(e), "invalid_request");
	cr_assert(json_object_object_get_ex(o, "error_description", &d));
	const char *text = json_object_get_string(d);
	cr_assert(strstr(text, "does not use OAuth"), "%s: %s", path, text);
	cr_assert(strstr(text, want), "%s: '%s' in %s", path, want, text);
	cr_assert_str_eq(r->www_auth, "", "%s: no challenge", path);
	cr_assert_str_eq(r->location, "", "%s: no redirect", path);
	cr_assert_null(strstr(r->body, TOKEN), "%s: the token itself is never sent", path);
	json_object_put(o);
}

Test(mcp_auth_http, oauth_paths_on_tcp_say_where_the_token_is_whatever_is_sent)
{
	const char *auths[] = {NULL, "Authorization: Bearer not-the-token", "Authorization: Bearer " TOKEN};
	for (size_t i = 0; i < N_OAUTH_PATHS; i++)
		for (size_t a = 0; a < 3; a++) {
			const char *json[] = {"Content-Type: application/json", auths[a], NULL};
			const char *form[] = {"Content-Type: application/x-www-form-urlencoded", auths[a], NULL};
			struct areply r = areq(NULL, "GET", oauth_paths[i], NULL, auths[a] ? json + 1 : NULL);
			assert_oauth_answer(&r, oauth_paths[i], "'/state/token'");
			cr_assert(strstr(r.body, "chat2sbx token") && strstr(r.body, asock), "%s", r.body);
			r = areq(NULL, "POST", oauth_paths[i], REGISTRATION, json);
			assert_oauth_answer(&r, oauth_paths[i], "Authorization: Bearer <token>");
			r = areq(NULL, "POST", oauth_paths[i], TOKEN_REQUEST, form);
			assert_oauth_answer(&r, oauth_paths[i], "'/state/token'");
			r = areq(NULL, "POST", oauth_paths[i], RPC_CALL, json);
			assert_oauth_answer(&r, oauth_paths[i], "'/state/token'");
		}
	/* The endpoint itself is unchanged afterwards. */
	struct areply r = apost(NULL, "/mcp", "Bearer " TOKEN);
	cr_assert_eq(r.status, 200, "%s", r.body);
}

Test(mcp_auth_http, oauth_paths_on_the_socket_say_no_token_is_needed_and_name_no_file)
{
	const char *json[] = {"Content-Type: application/json", NULL};
	for (size_t i = 0; i < N_OAUTH_PATHS; i++) {
		struct areply r = areq(asock, "GET", oauth_paths[i], NULL, NULL);
		assert_oauth_answer(&r, oauth_paths[i], "needs no token");
		cr_assert_null(strstr(r.body, "/state/token"), "no file path on the tunnel's connection: %s", r.body);
		r = areq(asock, "POST", oauth_paths[i], REGISTRATION, json);
		assert_oauth_answer(&r, oauth_paths[i], "needs no token");
	}
}

Test(mcp_auth_http, oauth_paths_keep_the_peer_host_and_origin_checks)
{
	const char *host[] = {"Host: evil.example", NULL};
	const char *origin[] = {"Origin: http://evil.example", NULL};
	for (size_t i = 0; i < N_OAUTH_PATHS; i++) {
		struct areply r = areq(NULL, "GET", oauth_paths[i], NULL, host);
		cr_assert_eq(r.status, 403, "%s: %ld %s", oauth_paths[i], r.status, r.body);
		cr_assert_null(strstr(r.body, "OAuth"), "%s", r.body);
		r = areq(NULL, "POST", oauth_paths[i], REGISTRATION, origin);
		cr_assert_eq(r.status, 403, "%s: %ld %s", oauth_paths[i], r.status, r.body);
		cr_assert_null(strstr(r.body, "/state/token"), "%s", r.body);
		r = areq(asock, "GET", oauth_paths[i], NULL, host);
		cr_assert_eq(r.status, 403, "socket %s: %ld %s", oauth_paths[i], r.status, r.body);
	}
}

Test(mcp_auth_http, other_paths_stay_404_without_the_hint)
{
	const char *paths[] = {"/", "/mcp/extra", "/.well-known/security.txt", "/registerx"};
	for (size_t i = 0; i < 4; i++) {
		struct areply r = areq(NULL, "GET", paths[i], NULL, NULL);
		cr_assert_eq(r.status, 404, "%s", paths[i]);
		cr_assert(strstr(r.body, "the MCP endpoint is /mcp"), "%s", r.body);
		cr_assert_str_eq(r.www_auth, "");
	}
}

Test(mcp_auth_http, the_socket_serves_this_user_without_a_token)
{
	struct areply r = apost(asock, "/mcp", NULL);
	cr_assert_eq(r.rc, CURLE_OK, "%s", curl_easy_strerror(r.rc));
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert(strstr(r.body, "\"result\""), "%s", r.body);
}

/* Connects to the socket as uid 65534 and sends a request; exits 0 when
 * no HTTP answer came (refused), 1 when one did, 2 when it could not try. */
static int foreign_attempt(void)
{
	if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
		return 2;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", asock);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		return 2;
	static const char req[] = "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
	                          "Content-Length: 40\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}";
	if (send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) < 0)
		return 0; /* cut off already */
	char buf[256];
	ssize_t n = read(fd, buf, sizeof(buf));
	return n > 0 ? 1 : 0;
}

Test(mcp_auth_http, the_socket_cuts_off_a_foreign_uid_even_when_its_file_mode_lets_it_in)
{
	if (geteuid() != 0)
		cr_skip_test("needs root to act as another uid");
	/* An operator's mistake opens the file layer; the uid check holds. */
	cr_assert_eq(chmod(adir, 0755), 0);
	cr_assert_eq(chmod(asock, 0666), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(foreign_attempt());
	int status = 0;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status));
	cr_assert_eq(WEXITSTATUS(status), 0, "uid 65534 got an answer (1) or could not connect (2): %d",
	             WEXITSTATUS(status));
	/* This user is still served afterwards. */
	struct areply r = apost(asock, "/mcp", NULL);
	cr_assert_eq(r.status, 200, "%s", r.body);
}
