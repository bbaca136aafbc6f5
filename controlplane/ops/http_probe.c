/* http_probe.c: one bounded HTTP request to a loopback address, for `status`
 * (MCP initialize to our own endpoint, GET /readyz of the tunnel client's
 * health server). The one libcurl use outside docker/: it never talks to
 * another host (the url is checked before anything is sent). */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

#include "../base/cleanup.h"
#include "../base/xalloc.h"
#include "ops.h"

#define OPS_HTTP_MAX_BODY (64u * 1024)

int ops_url_is_loopback(const char *url)
{
	if (!url || strncmp(url, "http://", 7) != 0)
		return 0;
	CURLU *u = curl_url();
	char *host = NULL;
	int ok = 0;
	if (u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK && host) {
		/* A dotted 127.0.0.0/8 address, not a name that merely starts so. */
		struct in_addr a;
		ok = !strcmp(host, "localhost") || !strcmp(host, "[::1]") ||
		     (inet_pton(AF_INET, host, &a) == 1 && (ntohl(a.s_addr) >> 24) == 127);
	}
	curl_free(host);
	curl_url_cleanup(u);
	return ok;
}

struct sink {
	char *data;
	size_t len;
};

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct sink *s = userdata;
	size_t n = size * nmemb;
	size_t room = OPS_HTTP_MAX_BODY - s->len;
	size_t take = n < room ? n : room; /* the rest is dropped: a probe reads a head only */
	if (take) {
		char *p = xrealloc(s->data, s->len + take + 1);
		if (!p)
			return 0;
		memcpy(p + s->len, ptr, take);
		s->data = p;
		s->len += take;
		s->data[s->len] = '\0';
	}
	return n;
}

int ops_http_probe(const struct ops_http_request *rq, long *ret_status, char **ret_body, struct cp_error **err)
{
	const char *url = rq->url, *method = rq->method, *body = rq->body;
	long timeout_ms = rq->timeout_ms;
	if (!ops_url_is_loopback(url))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "'%s' is not a loopback http:// address; status only asks local endpoints",
		                    url ? url : "(none)");
	CURL *c = curl_easy_init();
	if (!c)
		return cp_error_set(err, CP_ERR_INTERNAL, "ask '%s': cannot create a curl handle", url);
	struct curl_slist *headers = NULL;
	struct sink sink = {0};
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http");
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
	if (rq->unix_socket)
		curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, rq->unix_socket);
	if (body) {
		headers = curl_slist_append(headers, "Content-Type: application/json");
		headers = curl_slist_append(headers, "Accept: application/json, text/event-stream");
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	}
	char auth[128];
	if (rq->bearer_token) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", rq->bearer_token);
		headers = curl_slist_append(headers, auth);
		explicit_bzero(auth, sizeof(auth));
	}
	if (headers)
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	CURLcode rc = curl_easy_perform(c);
	long status = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	for (struct curl_slist *h = headers; h; h = h->next)
		explicit_bzero(h->data, strlen(h->data)); /* the token's copy */
	curl_slist_free_all(headers);
	curl_easy_cleanup(c);
	if (rc != CURLE_OK) {
		free(sink.data);
		return cp_error_set(err, rc == CURLE_OPERATION_TIMEDOUT ? CP_ERR_TIMEOUT : CP_ERR_UNAVAILABLE,
		                    "ask '%s': %s", url, curl_easy_strerror(rc));
	}
	*ret_status = status;
	if (ret_body)
		*ret_body = sink.data;
	else
		free(sink.data);
	return 0;
}
