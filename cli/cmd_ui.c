/* cmd_ui.c: `chat2sbx ui`: a one-time login link to the owner's page
 * (issue 26; docs/ui.md). The code comes from serve over its Unix socket
 * (POST /ui/code), which only this user and root may use, so no other local
 * user can get one. Printed, and opened in a browser when a desktop is there:
 * through a 0600 file in STATE_DIR that forwards to the link, so the code
 * never appears on a command line that other users can read in /proc. */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/xjson.h"
#include "cli.h"
#include "config/config.h"
#include "mcp/mcp.h"
#include "ops/ops.h"

#define UI_CODE_TIMEOUT_MS 5000
#define UI_LOGIN_FILE "ui-login.html"

/* The page's base from serve.json's endpoint (".../mcp" → ".../ui/"), else
 * from the configuration. */
static void page_base(const struct config *cfg, char *buf, size_t size)
{
	struct ops_serve_state st = {0};
	struct cp_error *err = NULL;
	if (ops_serve_state_read(cfg->state_dir, &st, &err) == 0 && st.endpoint) {
		size_t n = strlen(st.endpoint);
		if (n > 4 && !strcmp(st.endpoint + n - 4, "/mcp") && n - 4 + sizeof(MCP_PAGE_PREFIX "/") <= size) {
			snprintf(buf, size, "%.*s" MCP_PAGE_PREFIX "/", (int)(n - 4), st.endpoint);
			ops_serve_state_clear(&st);
			return;
		}
	}
	cp_error_free(err);
	ops_serve_state_clear(&st);
	mcp_page_url(cfg->host, (unsigned)cfg->port, NULL, buf, size);
}

/* Asks serve for a code; writes it to code (size bytes) and its life in ms. */
static int get_code(const struct config *cfg, char *code, size_t size, int64_t *ret_ttl_ms, struct cp_error **err)
{
	char sock[4200];
	snprintf(sock, sizeof(sock), "%s/%s", cfg->state_dir, OPS_MCP_SOCKET_FILE);
	struct ops_http_request rq = {.method = "POST",
	                              .url = "http://localhost" MCP_PAGE_PREFIX "/code",
	                              .unix_socket = sock,
	                              .timeout_ms = UI_CODE_TIMEOUT_MS};
	long status = 0;
	_cleanup_free_ char *body = NULL;
	if (ops_http_probe(&rq, &status, &body, err) < 0)
		return cp_error_prefix(err,
		                       "cannot reach chat2sbx serve on '%s' (is it running? start it with "
		                       "'chat2sbx serve' or 'systemctl --user start chat2sbx')",
		                       sock);
	_cleanup_json_ struct json_object *o = status == 200 && body ? json_tokener_parse(body) : NULL;
	struct json_object *c = NULL, *t = NULL;
	if (!o || !json_object_object_get_ex(o, "code", &c) || !json_object_is_type(c, json_type_string) ||
	    (size_t)json_object_get_string_len(c) >= size)
		return cp_error_set(err, CP_ERR_UNAVAILABLE,
		                    "serve on '%s' answered HTTP %ld without a login code; is it an older chat2sbx? "
		                    "restart it after the upgrade",
		                    sock, status);
	snprintf(code, size, "%s", json_object_get_string(c));
	*ret_ttl_ms = json_object_object_get_ex(o, "expires_in_ms", &t) ? json_object_get_int64(t) : 0;
	if (body)
		explicit_bzero(body, strlen(body));
	return 0;
}

/* Opens url in the desktop's browser through STATE_DIR/ui-login.html. 0
 * when xdg-open started; -1 (and why on stderr) when it could not. */
static int open_browser(const struct config *cfg, const char *url)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/%s", cfg->state_dir, UI_LOGIN_FILE);
	unlink(path);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		fprintf(stderr, "chat2sbx: could not write '%s': %s; open the link above yourself\n", path,
		        strerror(errno));
		return -1;
	}
	dprintf(fd,
	        "<!doctype html><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"0;url=%s\">"
	        "<title>chat2sbx</title><a href=\"%s\">Open chat2sbx</a>\n",
	        url, url);
	close(fd);
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
		}
		execlp("xdg-open", "xdg-open", path, (char *)NULL);
		_exit(127);
	}
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "chat2sbx: could not open a browser (xdg-open); open the link above yourself\n");
		return -1;
	}
	return 0;
}

int cmd_ui(struct cli *cli, int argc, char **argv)
{
	int no_open = 0;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--no-open")) {
			no_open = 1;
		} else {
			fprintf(stderr, "usage: chat2sbx ui [--no-open] [--json]\n");
			return 2;
		}
	}
	char code[128], base[512], url[768];
	int64_t ttl_ms = 0;
	struct cp_error *err = NULL;
	if (get_code(cli->cfg, code, sizeof(code), &ttl_ms, &err) < 0)
		return cli_fail(err);
	page_base(cli->cfg, base, sizeof(base));
	snprintf(url, sizeof(url), "%slogin?code=%s", base, code);
	explicit_bzero(code, sizeof(code));
	if (cli->json) {
		struct json_object *o = xjson_object();
		xjson_add(o, "url", xjson_string(url));
		xjson_add(o, "expires_in_ms", xjson_int64(ttl_ms));
		cli_print_json(o);
	} else {
		printf("%s\n", url);
		fprintf(stderr, "Open this link in a browser on this machine; it works once, within %lld s.\n",
		        (long long)(ttl_ms / 1000));
	}
	if (!no_open && !cli->json && config_has_desktop() && open_browser(cli->cfg, url) == 0)
		fprintf(stderr, "Opened it in your browser.\n");
	explicit_bzero(url, sizeof(url));
	return 0;
}
