/* mcp_http_fixture.c: the fixture of mcp_http_fixture.h. */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "mcp/mcp.h"

#include "mcp_http_fixture.h"
#include "tool_test.h"

int waits_cancelled, waits_completed; /* how the last wait_cancel_ms wait ended */

static int htool_echo(const struct mcp_call *call, const struct mcp_args *margs, struct json_object **ret_result,
                      struct cp_error **err)
{
	struct json_object *args = mcp_args_object(margs);
	(void)err;
	struct json_object *ms;
	if (json_object_object_get_ex(args, "sleep_ms", &ms))
		usleep((useconds_t)json_object_get_int(ms) * 1000);
	if (json_object_object_get_ex(args, "progress", NULL)) {
		mcp_call_progress(call, 1, 2, "half");
		mcp_call_progress(call, 2, 2, NULL);
	}
	if (json_object_object_get_ex(args, "sleep_after_ms", &ms)) {
		mcp_call_progress(call, 1, 0, "before the sleep");
		usleep((useconds_t)json_object_get_int(ms) * 1000);
	}
	/* wait_cancel_ms: wait that long unless the request is cancelled. */
	if (json_object_object_get_ex(args, "wait_cancel_ms", &ms))
		tool_test_wait_cancel(call, json_object_get_int(ms), &waits_cancelled, &waits_completed);
	struct json_object *copy = NULL;
	json_object_deep_copy(args, &copy, NULL);
	if (json_object_object_get_ex(args, "meet", &ms))
		json_object_object_add(copy, "met", json_object_new_boolean(tool_test_meet(json_object_get_int(ms))));
	*ret_result = copy;
	return 0;
}

static int htool_fail(const struct mcp_call *call, const struct mcp_args *margs, struct json_object **ret_result,
                      struct cp_error **err)
{
	struct json_object *args = mcp_args_object(margs);
	(void)call;
	(void)args;
	(void)ret_result;
	return cp_error_set(err, CP_ERR_NOT_FOUND, "sandbox 'sbx_gone' not found");
}

const struct mcp_tool htools[2] = {
    {"echo", "Echo", "Returns its arguments.", test_tool_args, NULL, MCP_HINT_READ_ONLY, htool_echo},
    {"fail", "Fail", "Always fails.", test_tool_args, NULL, MCP_HINT_DESTRUCTIVE, htool_fail},
};

struct mcp_server *hserver;
char base_url[64];

void hsetup(void)
{
	log_set_level(LOG_LEVEL_ERROR);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	struct mcp_server_options o = {.host = "127.0.0.1",
	                               .port = 0,
	                               .name = "chat2sbx-test",
	                               .version = "0.0.1",
	                               .max_body_bytes = 1024,
	                               .max_sessions = 8,
	                               .session_idle_ms = 60000};
	struct cp_error *err = NULL;
	cr_assert_eq(mcp_server_new(&o, htools, 2, NULL, &hserver, &err), 0);
	cr_assert_eq(mcp_server_listen(hserver, &err), 0, "%s", err ? err->message : "");
	cr_assert_gt(mcp_server_port(hserver), 0);
	snprintf(base_url, sizeof(base_url), "http://127.0.0.1:%u", mcp_server_port(hserver));
}

void hteardown(void)
{
	mcp_server_free(hserver);
	hserver = NULL;
	curl_global_cleanup();
}

size_t on_body(char *data, size_t size, size_t n, void *arg)
{
	struct hreply *r = arg;
	char *p = realloc(r->body, r->len + size * n + 1);
	cr_assert_not_null(p);
	memcpy(p + r->len, data, size * n);
	r->len += size * n;
	p[r->len] = '\0';
	r->body = p;
	return size * n;
}

static void copy_header(const char *line, size_t len, const char *name, char *dst, size_t dst_size)
{
	size_t n = strlen(name);
	if (len <= n + 1 || strncasecmp(line, name, n) != 0 || line[n] != ':')
		return;
	const char *v = line + n + 1;
	while (*v == ' ')
		v++;
	size_t vlen = (size_t)(line + len - v);
	while (vlen > 0 && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n'))
		vlen--;
	snprintf(dst, dst_size, "%.*s", (int)vlen, v);
}

size_t on_header(char *data, size_t size, size_t n, void *arg)
{
	struct hreply *r = arg;
	copy_header(data, size * n, "Mcp-Session-Id", r->session, sizeof(r->session));
	copy_header(data, size * n, "MCP-Protocol-Version", r->proto, sizeof(r->proto));
	copy_header(data, size * n, "Content-Type", r->ctype, sizeof(r->ctype));
	copy_header(data, size * n, "Allow", r->allow, sizeof(r->allow));
	copy_header(data, size * n, "X-Accel-Buffering", r->accel, sizeof(r->accel));
	return size * n;
}

struct upload {
	const char *data;
	size_t len, off;
};

static size_t on_read(char *buf, size_t size, size_t n, void *arg)
{
	struct upload *u = arg;
	size_t k = size * n < u->len - u->off ? size * n : u->len - u->off;
	memcpy(buf, u->data + u->off, k);
	u->off += k;
	return k;
}

/* One request. headers is NULL-terminated; unless it sets one, POSTs carry
 * Content-Type: application/json and the MCP Accept header. chunked sends
 * the body without a Content-Length. */
void hreq_ex(struct hreply *r, const char *method, const char *path, const char *body, const char *const *headers,
             int chunked)
{
	memset(r, 0, sizeof(*r));
	CURL *c = curl_easy_init();
	char url[256];
	snprintf(url, sizeof(url), "%s%s", base_url, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	struct curl_slist *hl = NULL;
	int has_ct = 0;
	for (size_t i = 0; headers && headers[i]; i++) {
		hl = curl_slist_append(hl, headers[i]);
		if (strncasecmp(headers[i], "Content-Type:", 13) == 0)
			has_ct = 1;
	}
	struct upload up = {body, body ? strlen(body) : 0, 0};
	if (body) {
		if (!has_ct)
			hl = curl_slist_append(hl, "Content-Type: application/json");
		hl = curl_slist_append(hl, "Accept: application/json, text/event-stream");
		curl_easy_setopt(c, CURLOPT_POST, 1L);
		if (chunked) {
			curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
			curl_easy_setopt(c, CURLOPT_READDATA, &up);
			hl = curl_slist_append(hl, "Transfer-Encoding: chunked");
		} else {
			curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
			curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
		}
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
	CURLcode rc = curl_easy_perform(c);
	cr_assert_eq(rc, CURLE_OK, "%s %s: %s", method, path, curl_easy_strerror(rc));
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
	curl_slist_free_all(hl);
	curl_easy_cleanup(c);
	cr_assert(r->ctype[0], "%s %s: every response has a Content-Type", method, path);
}

void hreq(struct hreply *r, const char *method, const char *path, const char *body, const char *const *headers)
{
	hreq_ex(r, method, path, body, headers, 0);
}

struct json_object *hjson(const struct hreply *r)
{
	cr_assert_not_null(r->body, "empty body, status %ld", r->status);
	struct json_object *o = json_tokener_parse(r->body);
	cr_assert_not_null(o, "not JSON: %s", r->body);
	cr_assert(strncmp(r->ctype, "application/json", 16) == 0, "content type %s", r->ctype);
	return o;
}

int rpc_code(const struct hreply *r)
{
	struct json_object *o = hjson(r), *e, *code;
	cr_assert(json_object_object_get_ex(o, "error", &e) && json_object_object_get_ex(e, "code", &code), "%s",
	          r->body);
	int v = json_object_get_int(code);
	json_object_put(o);
	return v;
}

void free_reply(struct hreply *r)
{
	free(r->body);
	r->body = NULL;
}
