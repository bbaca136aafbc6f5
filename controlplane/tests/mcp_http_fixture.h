/* mcp_http_fixture.h: the Streamable HTTP test fixture shared by
 * test_mcp_http.c and test_mcp_sse.c: a server on 127.0.0.1 with a random
 * port and two tools (echo: sleeps, progress, waits for cancellation on
 * request; fail), and a libcurl client that records status, body and the
 * headers the tests read. */
#ifndef CP_TEST_MCP_HTTP_FIXTURE_H
#define CP_TEST_MCP_HTTP_FIXTURE_H

#include <json-c/json.h>
#include <stddef.h>

#include "mcp/mcp.h"

extern int waits_cancelled, waits_completed; /* how the last wait_cancel_ms wait ended */
extern struct mcp_server *hserver;
extern char base_url[64];
extern const struct mcp_tool htools[2]; /* echo, fail */

struct hreply {
	long status;
	char *body;
	size_t len;
	char session[128];
	char proto[64];
	char ctype[128];
	char allow[64];
	char accel[16];
};
#define INIT_BODY                                                                                                      \
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\","      \
	"\"capabilities\":{},\"clientInfo\":{\"name\":\"test\",\"version\":\"1\"}}}"
#define ECHO_BODY                                                                                                      \
	"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":"         \
	"{\"x\":1}}}"

void hsetup(void);
void hteardown(void);
void hreq_ex(struct hreply *r, const char *method, const char *path, const char *body, const char *const *headers,
             int chunked);
void hreq(struct hreply *r, const char *method, const char *path, const char *body, const char *const *headers);
struct json_object *hjson(const struct hreply *r);
int rpc_code(const struct hreply *r);
void free_reply(struct hreply *r);
/* libcurl write callback appending to a struct hreply (arg). */
size_t on_body(char *data, size_t size, size_t n, void *arg);
/* libcurl header callback recording the headers a struct hreply (arg) keeps. */
size_t on_header(char *data, size_t size, size_t n, void *arg);

#endif
