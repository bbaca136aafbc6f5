/* pages.c: the owner's page paths on the Streamable HTTP listeners (mcp.h,
 * MCP_PAGE_PREFIX; issue 26). mcp/ only carries the request to the handler
 * the application registered and its reply back: the query's arguments
 * (decoded by libmicrohttpd), a POST's form fields (split here, each part
 * decoded by libmicrohttpd's MHD_http_unescape; WHATWG URL standard,
 * "application/x-www-form-urlencoded parsing"), the headers the page's
 * rules need. It decides nothing about sessions or what is shown. */
#include "http_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../base/cleanup.h"
#include "../base/xalloc.h"

int mcp_page_path(const char *path)
{
	size_t n = strlen(MCP_PAGE_PREFIX);
	return path && strncmp(path, MCP_PAGE_PREFIX, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

const char *mcp_page_url(const char *bind_host, unsigned port, const char *rest, char *buf, size_t size)
{
	const char *host = bind_host && *bind_host ? bind_host : "127.0.0.1";
	if (!strcmp(host, "0.0.0.0") || !strcmp(host, "::"))
		host = "127.0.0.1";
	int v6 = strchr(host, ':') != NULL;
	snprintf(buf, size, "http://%s%s%s:%u" MCP_PAGE_PREFIX "/%s", v6 ? "[" : "", host, v6 ? "]" : "", port,
	         rest ? rest : "");
	return buf;
}

void mcp_server_set_pages(struct mcp_server *server, mcp_page_fn fn, void *ctx)
{
	server->page_fn = fn;
	server->page_ctx = ctx;
}

struct fields {
	struct mcp_page_field f[MCP_PAGE_FIELDS_MAX];
	size_t n;
};

static enum MHD_Result collect_query(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	(void)kind;
	struct fields *q = cls;
	if (key && q->n < MCP_PAGE_FIELDS_MAX)
		q->f[q->n++] = (struct mcp_page_field){.name = key, .value = value ? value : ""};
	return MHD_YES;
}

/* Splits text (owned by the caller, changed in place) into form fields:
 * "name=value" pairs joined by '&', '+' for a space, %XX escapes. Pairs
 * past MCP_PAGE_FIELDS_MAX are dropped; a NUL decoded into a value ends
 * it there (MHD_http_unescape's result is a C string). */
static void split_form(char *text, struct fields *out)
{
	for (char *save = NULL, *pair = strtok_r(text, "&", &save); pair && out->n < MCP_PAGE_FIELDS_MAX;
	     pair = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(pair, '=');
		char *value = eq ? eq + 1 : pair + strlen(pair);
		if (eq)
			*eq = '\0';
		for (char *p = pair; *p; p++)
			if (*p == '+')
				*p = ' ';
		for (char *p = value; *p; p++)
			if (*p == '+')
				*p = ' ';
		MHD_http_unescape(pair);
		MHD_http_unescape(value);
		out->f[out->n++] = (struct mcp_page_field){.name = pair, .value = value};
	}
}

static int is_form(const char *ct)
{
	/* application/x-www-form-urlencoded with optional parameters (RFC 9110
	 * section 8.3.1). */
	static const char want[] = "application/x-www-form-urlencoded";
	if (!ct)
		return 0;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	if (strncasecmp(ct, want, sizeof(want) - 1) != 0)
		return 0;
	ct += sizeof(want) - 1;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	return *ct == '\0' || *ct == ';';
}

enum MHD_Result mcp_page_answer(struct mcp_server *server, struct MHD_Connection *conn, int is_unix, const char *url,
                                const char *method, const char *body, size_t len, unsigned refusal_status,
                                const char *refusal)
{
	struct fields query = {0}, form = {0};
	MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, collect_query, &query);
	_cleanup_free_ char *copy = NULL;
	if (!refusal_status && !strcmp(method, MHD_HTTP_METHOD_POST) && len > 0) {
		if (!is_form(mcp_http_header(conn, MHD_HTTP_HEADER_CONTENT_TYPE))) {
			refusal_status = MHD_HTTP_UNSUPPORTED_MEDIA_TYPE;
			refusal = "unsupported media type: the page's forms send application/x-www-form-urlencoded";
		} else {
			copy = xmalloc(len + 1);
			memcpy(copy, body, len);
			copy[len] = '\0';
			split_form(copy, &form);
		}
	}
	struct mcp_page_request req = {
	    .method = method,
	    .path = url,
	    .is_unix = is_unix,
	    .host = mcp_http_header(conn, MHD_HTTP_HEADER_HOST),
	    .origin = mcp_http_header(conn, "Origin"),
	    .cookie = mcp_http_header(conn, MHD_HTTP_HEADER_COOKIE),
	    .query = query.f,
	    .n_query = query.n,
	    .form = form.f,
	    .n_form = form.n,
	    .refusal_status = refusal_status,
	    .refusal = refusal,
	};
	struct mcp_page_reply reply = {0};
	if (server->page_fn) {
		server->page_fn(server->page_ctx, &req, &reply);
	} else {
		reply.status = MHD_HTTP_NOT_FOUND;
		reply.content_type = "text/plain; charset=utf-8";
		reply.body = xstrdup("not found: the MCP endpoint is " MCP_PATH "\n");
		reply.body_len = strlen(reply.body);
	}
	struct MHD_Response *resp =
	    MHD_create_response_from_buffer(reply.body_len, reply.body ? reply.body : (void *)"",
	                                    reply.body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	if (!resp) {
		free(reply.body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
	                        reply.content_type ? reply.content_type : "text/html; charset=utf-8");
	for (const char *const *h = reply.headers; h && h[0] && h[1]; h += 2)
		MHD_add_response_header(resp, h[0], h[1]);
	if (reply.location[0])
		MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, reply.location);
	if (reply.set_cookie[0])
		MHD_add_response_header(resp, MHD_HTTP_HEADER_SET_COOKIE, reply.set_cookie);
	enum MHD_Result r =
	    MHD_queue_response(conn, reply.status ? reply.status : MHD_HTTP_INTERNAL_SERVER_ERROR, resp);
	MHD_destroy_response(resp);
	return r;
}
