/* http_reply.c: queuing a reply on a libmicrohttpd connection for the
 * Streamable HTTP transport (http_internal.h): a buffered JSON body with the
 * transport's headers, or a JSON-RPC error as the body of an HTTP error. */
#include "http_internal.h"

#include <stdlib.h>
#include <string.h>

#include "../base/cleanup.h"

enum MHD_Result mcp_http_reply_type(struct MHD_Connection *conn, unsigned status, char *body, const char *content_type,
                                    const struct mcp_http_headers *h)
{
	/* body is owned (malloc'd) and moves into the response; NULL = empty. */
	size_t len = body ? strlen(body) : 0;
	struct MHD_Response *resp = MHD_create_response_from_buffer(
	    len, body ? body : (void *)"", body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	if (!resp) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, body ? content_type : "text/plain; charset=utf-8");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (h && h->session_id)
		MHD_add_response_header(resp, "Mcp-Session-Id", h->session_id);
	if (h && h->protocol_version)
		MHD_add_response_header(resp, "MCP-Protocol-Version", h->protocol_version);
	if (h && h->allow)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, h->allow);
	if (h && h->retry_after)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, h->retry_after);
	if (h && h->www_authenticate)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, h->www_authenticate);
	if (h && h->close)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	enum MHD_Result r = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return r;
}

enum MHD_Result mcp_http_reply(struct MHD_Connection *conn, unsigned status, char *body,
                               const struct mcp_http_headers *h)
{
	return mcp_http_reply_type(conn, status, body, "application/json", h);
}

int mcp_http_accepts_sse(const char *accept)
{
	return accept && strcasestr(accept, "text/event-stream") != NULL;
}

enum MHD_Result mcp_http_rpc_error(struct MHD_Connection *conn, unsigned status, struct json_object *id, int code,
                                   const char *message, const struct mcp_http_headers *h)
{
	_cleanup_json_ struct json_object *e = mcp_rpc_error_new(id, code, message);
	return mcp_http_reply(conn, status, mcp_json_text(e), h);
}

const char *mcp_http_header(struct MHD_Connection *conn, const char *name)
{
	return MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name);
}
