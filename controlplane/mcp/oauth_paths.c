/* oauth_paths.c: the answers to the OAuth paths an MCP client tries after a
 * 401 (MCP basic/authorization 2025-06-18 and 2025-11-25: RFC 9728
 * protected-resource metadata, RFC 8414 and OpenID Connect discovery, RFC
 * 7591 registration, then /authorize and /token). chat2sbx has no OAuth: the
 * endpoint takes the bearer token of STATE_DIR/token (auth.c), so each of
 * these paths answers an error whose error_description says where the token
 * is, and a client that prints it stops there. The metadata paths stay 404,
 * as DESIGN.md asks (a document there would start an OAuth flow in the
 * tunnel); nothing here ever answers 2xx, reads a body or redirects. Owns
 * no state; the checks that come first (peer, Host, Origin) are http.c's. */
#include "http_internal.h"

#include <stdio.h>
#include <string.h>

#include "../base/cleanup.h"
#include "../base/xjson.h"

/* The well-known names an OAuth client asks for, as RFC 9728 section 3.1,
 * RFC 8414 section 3.1 and OpenID Connect Discovery section 4 build them:
 * /.well-known/NAME, /.well-known/NAME/<resource path> and, for OpenID,
 * /<issuer path>/.well-known/NAME. */
static const char *const well_known_names[] = {"oauth-protected-resource", "oauth-authorization-server",
                                               "openid-configuration"};

/* True when url is /.well-known/NAME or /.well-known/NAME/... */
static int is_well_known_prefix(const char *url, const char *name)
{
	static const char prefix[] = "/.well-known/";
	size_t p = sizeof(prefix) - 1, n = strlen(name);
	return strncmp(url, prefix, p) == 0 && strncmp(url + p, name, n) == 0 &&
	       (url[p + n] == '\0' || url[p + n] == '/');
}

/* True when url ends in /.well-known/NAME (the issuer-path form). */
static int is_well_known_suffix(const char *url, const char *name)
{
	char tail[64];
	snprintf(tail, sizeof(tail), "/.well-known/%s", name);
	size_t u = strlen(url), t = strlen(tail);
	return u > t && strcmp(url + u - t, tail) == 0;
}

enum mcp_oauth_path mcp_oauth_path_of(const char *url)
{
	if (!url)
		return MCP_OAUTH_NONE;
	for (size_t i = 0; i < sizeof(well_known_names) / sizeof(well_known_names[0]); i++)
		if (is_well_known_prefix(url, well_known_names[i]) || is_well_known_suffix(url, well_known_names[i]))
			return MCP_OAUTH_METADATA;
	if (strcmp(url, "/register") == 0)
		return MCP_OAUTH_REGISTER;
	if (strcmp(url, "/authorize") == 0)
		return MCP_OAUTH_AUTHORIZE;
	if (strcmp(url, "/token") == 0)
		return MCP_OAUTH_TOKEN;
	return MCP_OAUTH_NONE;
}

void mcp_auth_hint(const struct mcp_server *server, int is_unix, char *buf, size_t size)
{
	if (is_unix) {
		snprintf(buf, size,
		         "This connection (serve's Unix socket) needs no token: send MCP requests to " MCP_PATH);
		return;
	}
	if (!server->bearer_token) {
		snprintf(buf, size,
		         "This port takes requests without a token (CHAT2SBX_MCP_TOKEN=off): send MCP requests "
		         "to " MCP_PATH);
		return;
	}
	snprintf(buf, size,
	         "Send 'Authorization: Bearer <token>' with every request to " MCP_PATH "; the token is in %s "
	         "(print it with 'chat2sbx token')%s%s%s",
	         server->token_hint ? server->token_hint : "serve's state directory",
	         server->unix_path ? ". Local clients can use the Unix socket '" : "",
	         server->unix_path ? server->unix_path : "", server->unix_path ? "' instead, without a token" : "");
}

enum MHD_Result mcp_oauth_reply(struct mcp_server *server, struct MHD_Connection *conn, enum mcp_oauth_path path,
                                int is_unix)
{
	static const char *const what[] = {
	    [MCP_OAUTH_NONE] = "",
	    [MCP_OAUTH_METADATA] = "for OAuth metadata",
	    [MCP_OAUTH_REGISTER] = "to register an OAuth client",
	    [MCP_OAUTH_AUTHORIZE] = "for an OAuth authorization",
	    [MCP_OAUTH_TOKEN] = "for an OAuth token",
	};
	char hint[1100], text[1300];
	mcp_auth_hint(server, is_unix, hint, sizeof(hint));
	snprintf(text, sizeof(text),
	         "this MCP server does not use OAuth: it has nothing to discover, register, "
	         "authorize or exchange. %s",
	         hint);
	mcp_log_refusal(server, MCP_REFUSED_OAUTH,
	                "answered a request %s with where the bearer token is: this server does not use OAuth",
	                what[path]);
	/* The metadata paths stay 404 (RFC 9728 section 3.2 and RFC 8414
	 * section 3.2 define no error document: a client reads 404 as "no
	 * OAuth here"); the others are 400 with an OAuth error object (RFC
	 * 6749 section 5.2, RFC 7591 section 3.2.2), whose error_description
	 * the MCP SDK's client prints as it stops. */
	_cleanup_json_ struct json_object *o = xjson_object();
	xjson_add(o, "error", xjson_string("invalid_request"));
	xjson_add(o, "error_description", xjson_string(text));
	struct mcp_http_headers h = {.close = 1};
	return mcp_http_reply(conn, path == MCP_OAUTH_METADATA ? MHD_HTTP_NOT_FOUND : MHD_HTTP_BAD_REQUEST,
	                      mcp_json_text(o), &h);
}
