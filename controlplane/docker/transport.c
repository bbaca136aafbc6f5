/* transport.c: the Docker Engine REST transport. Owns the engine handle, API
 * version negotiation and the one request function every engine call goes
 * through (libcurl over the engine's Unix socket, or to a remote engine over
 * mutual TLS, tls.c; one easy handle per call so threads never share one). Maps engine statuses to cp_error codes.
 * Knows no sandbox semantics; never logs above debug. */
#include "engine_internal.h"

#include <curl/curl.h>
#include <errno.h>
#include <grp.h>
#include <json-c/json.h>
#include <pwd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/buf.h"
#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/log.h"
#include "../base/xalloc.h"
#include "../base/xjson.h"

#define DOCKER_VERSION_TIMEOUT_MS 5000L

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_result = CURLE_FAILED_INIT;

/* curl_global_init is not thread-safe before 7.84; run it exactly once. */
static void curl_init_once(void)
{
	curl_init_result = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void cleanup_curlp(CURL **h)
{
	if (*h)
		curl_easy_cleanup(*h);
}
static void cleanup_slistp(struct curl_slist **l)
{
	if (*l)
		curl_slist_free_all(*l);
}

/* Engine status → code (engine_internal.h has the table). Pure. */
enum cp_error_code docker_status_code(long status)
{
	if (status == 400)
		return CP_ERR_INVALID_ARGUMENT;
	if (status == 403)
		return CP_ERR_DENIED;
	if (status == 404)
		return CP_ERR_NOT_FOUND;
	if (status == 409)
		return CP_ERR_CONFLICT;
	if (status >= 500)
		return CP_ERR_UNAVAILABLE;
	return CP_ERR_INTERNAL;
}

/* Engine message → detail (engine_internal.h has the table). Pure. */
enum cp_error_detail docker_engine_detail(const char *message)
{
	static const struct {
		const char *text;
		enum cp_error_detail detail;
	} table[] = {
	    {"port is already allocated", CP_DETAIL_PORT_IN_USE},
	    {"address already in use", CP_DETAIL_PORT_IN_USE},
	    {"already attached", CP_DETAIL_ALREADY_ATTACHED},
	    {"already exists", CP_DETAIL_ALREADY_EXISTS},
	    {"is already in use by", CP_DETAIL_ALREADY_EXISTS},
	    {"no space left on device", CP_DETAIL_NO_SPACE},
	    {"is already in progress", CP_DETAIL_REMOVAL_IN_PROGRESS},
	};
	for (size_t i = 0; message && i < sizeof(table) / sizeof(table[0]); i++)
		if (strcasestr(message, table[i].text))
			return table[i].detail;
	return CP_DETAIL_NONE;
}

/* Fills *err with "<what>: <engine message>", the mapped code and detail; -1. */
int docker_error_status(struct cp_error **err, long status, const char *engine_message, const char *what)
{
	if (!err || *err)
		return -1;
	enum cp_error_code code = docker_status_code(status);
	if (engine_message && *engine_message)
		cp_error_set(err, code, "%s: %s", what, engine_message);
	else
		cp_error_set(err, code, "%s: the engine answered HTTP %ld", what, status);
	return cp_error_set_detail(err, docker_engine_detail(engine_message));
}

const char *docker_engine_unreachable_cause(int errnum)
{
	static __thread char buf[128];
	switch (errnum) {
	case ENOENT: return "no socket exists there, so the engine is not running";
	case ECONNREFUSED: return "nothing accepts connections on it";
	case EACCES:
	case EPERM: return "permission denied: this user may not use the engine's socket (its group, usually docker)";
	default: return strerror_r(errnum, buf, sizeof(buf));
	}
}

/* 1 when this process holds gid (effective or supplementary). */
static int process_has_group(gid_t gid)
{
	if (getegid() == gid)
		return 1;
	gid_t groups[256];
	int n = getgroups(256, groups);
	for (int i = 0; i < n; i++)
		if (groups[i] == gid)
			return 1;
	return 0;
}

void docker_socket_access_hint(const char *socket_path, char *buf, size_t size)
{
	struct stat st;
	char gbuf[4096], pbuf[4096], name[64] = "docker";
	struct group gr, *grp = NULL;
	struct passwd pw, *pwp = NULL;
	int listed = 0, held = 0;
	int stated = stat(socket_path, &st) == 0;
	if (stated) {
		held = process_has_group(st.st_gid);
		if (getgrgid_r(st.st_gid, &gr, gbuf, sizeof(gbuf), &grp) == 0 && grp) {
			snprintf(name, sizeof(name), "%s", grp->gr_name);
			if (getpwuid_r(geteuid(), &pw, pbuf, sizeof(pbuf), &pwp) == 0 && pwp)
				for (char **m = grp->gr_mem; *m; m++)
					listed |= !strcmp(*m, pwp->pw_name);
		}
	}
	if (listed && !held)
		snprintf(buf, size,
		         "you are in the %s group, but this login session started before you were added to it; log "
		         "in again (or run 'newgrp %s')",
		         name, name);
	else if (held)
		snprintf(buf, size, "the socket's mode (%04o) keeps its group '%s' out; fix the engine's socket mode",
		         (unsigned)(st.st_mode & 07777), name);
	else if (stated && st.st_gid == 0)
		/* Root's group is root: joining it is not the fix. */
		snprintf(buf, size,
		         "the socket belongs to root's group; have the engine give it a docker group ('sudo groupadd "
		         "docker', restart the engine), then run 'sudo usermod -aG docker $USER' and log in again");
	else
		snprintf(buf, size, "you are not in the %s group; run 'sudo usermod -aG %s $USER' and log in again",
		         name, name);
}

/* Fills *err with UNAVAILABLE naming the socket and how to start the
 * engine, or, for EACCES/EPERM, how to get the right to use it; -1. */
int docker_error_unreachable(struct cp_error **err, const char *socket_path, const char *what, int errnum)
{
	if (!err || *err)
		return -1;
	if (errnum == EACCES || errnum == EPERM) {
		char hint[512];
		docker_socket_access_hint(socket_path, hint, sizeof(hint));
		cp_error_set(err, CP_ERR_UNAVAILABLE, "%s%scannot use the Docker Engine at '%s': permission denied; %s",
		             what ? what : "", what ? ": " : "", socket_path, hint);
	} else {
		cp_error_set(err, CP_ERR_UNAVAILABLE,
		             "%s%scannot reach the Docker Engine at '%s': %s; " DOCKER_START_HINT, what ? what : "",
		             what ? ": " : "", socket_path, docker_engine_unreachable_cause(errnum));
	}
	(*err)->errnum = errnum;
	return cp_error_set_detail(err, CP_DETAIL_ENGINE_UNREACHABLE);
}

int docker_request_list(struct docker_engine *engine, const char *path, long timeout_ms, const char *what,
                        struct json_object **ret_list, struct cp_error **err)
{
	_cleanup_json_ struct json_object *reply = NULL;
	if (docker_request(engine, "GET", path, NULL, timeout_ms, what, NULL, &reply, err) < 0)
		return -1;
	if (!reply || !json_object_is_type(reply, json_type_array))
		return cp_error_set(err, CP_ERR_INTERNAL, "%s: the engine's answer is not a list", what);
	*ret_list = TAKE_PTR(reply);
	return 0;
}

/* Percent-encoding for paths and queries (RFC 3986, section 2.1); result owned by the caller. */
char *docker_escape(const char *s, const char *keep)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(s);
	char *out = xmalloc(n * 3 + 1);
	char *p = out;
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if ((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
		    strchr("-._~", *c) || (keep && strchr(keep, *c))) {
			*p++ = (char)*c;
		} else {
			*p++ = '%';
			*p++ = hex[*c >> 4];
			*p++ = hex[*c & 15];
		}
	}
	*p = '\0';
	return out;
}

/* The engine's list filters (engine_internal.h). */
char *docker_filtered_path(const char *base, const char *key, const char *value)
{
	_cleanup_json_ struct json_object *filters = xjson_object();
	struct json_object *values = xjson_array();
	xjson_append(values, xjson_string(value));
	xjson_add(filters, key, values);
	_cleanup_free_ char *esc = docker_escape(
	    json_object_to_json_string_ext(filters, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE), NULL);
	return xasprintf("%sfilters=%s", base, esc);
}

/* The engine's "message" from an error body, copied into buf (borrowed); NULL when absent. */
const char *docker_engine_message(const char *body, size_t len, char *buf, size_t size)
{
	if (!body || !len || !size)
		return NULL;
	json_tokener *tok = json_tokener_new();
	struct json_object *o = tok ? json_tokener_parse_ex(tok, body, (int)(len > 1 << 20 ? 1 << 20 : len)) : NULL;
	if (tok)
		json_tokener_free(tok);
	struct json_object *m = NULL;
	if (o && json_object_object_get_ex(o, "message", &m) && json_object_is_type(m, json_type_string)) {
		snprintf(buf, size, "%s", json_object_get_string(m));
		json_object_put(o);
		return buf[0] ? buf : NULL;
	}
	if (o) {
		json_object_put(o);
		return NULL;
	}
	/* A plain-text body (some proxies and old engines answer text/plain). */
	size_t n = len < size - 1 ? len : size - 1;
	memcpy(buf, body, n);
	buf[n] = '\0';
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return n ? buf : NULL;
}

struct http_exchange {
	long status;
	struct cp_buf body;
	int overflow;
	const struct docker_upload *up; /* a streamed request body, or NULL */
	uint64_t up_pos;                /* bytes of it sent */
	int up_errno;                   /* its file failed to read (EIO: it ended early) */
};
static void cleanup_exchangep(struct http_exchange *x)
{
	cp_buf_free(&x->body);
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *userdata)
{
	struct http_exchange *x = userdata;
	size_t len = size * nmemb;
	if (cp_buf_append(&x->body, data, len) < 0) {
		x->overflow = 1;
		return 0; /* makes curl stop with CURLE_WRITE_ERROR */
	}
	return len;
}

/* Fills *err for a failed exchange with this machine's engine on its socket. */
static int socket_error(CURL *h, const char *socket_path, const char *what, CURLcode rc, const char *detail,
                        long timeout_ms, struct cp_error **err)
{
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST: {
		/* curl words a Unix socket failure as "localhost port 80"; say
		 * what the socket itself shows instead. */
		struct stat st;
		int gone = stat(socket_path, &st) < 0 && errno == ENOENT;
		long os_errno = 0;
		curl_easy_getinfo(h, CURLINFO_OS_ERRNO, &os_errno);
		int denied = os_errno == EACCES || os_errno == EPERM;
		return docker_error_unreachable(err, socket_path, what,
		                                denied ? (int)os_errno
		                                : gone ? ENOENT
		                                       : ECONNREFUSED);
	}
	case CURLE_OPERATION_TIMEDOUT:
		return cp_error_set(err, CP_ERR_TIMEOUT, "%s%sthe Docker Engine at '%s' did not answer within %ld ms",
		                    what ? what : "", what ? ": " : "", socket_path, timeout_ms);
	case CURLE_WRITE_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_PARTIAL_FILE:
		return cp_error_set(err, CP_ERR_UNAVAILABLE, "%s%sthe Docker Engine at '%s' dropped the connection: %s",
		                    what ? what : "", what ? ": " : "", socket_path, detail);
	default: return cp_error_set(err, CP_ERR_INTERNAL, "%s%s%s", what ? what : "", what ? ": " : "", detail);
	}
}

/* One HTTP exchange with engine e (its socket, or its TLS endpoint). url is
 * absolute (e->base_url + "/…"), body body_len bytes of content_type (a
 * serialized JSON text, or a tar for the archive API) or NULL. what may be
 * NULL (engine_new). Fills x on any HTTP answer; transport failures fill
 * *err. */
/* libcurl's read callback for x->up: head, the file's bytes, tail. */
static size_t on_upload(char *buf, size_t size, size_t nmemb, void *userdata)
{
	struct http_exchange *x = userdata;
	const struct docker_upload *u = x->up;
	size_t room = size * nmemb, done = 0;
	while (done < room) {
		uint64_t pos = x->up_pos;
		size_t n = 0;
		if (pos < u->head_len) {
			n = u->head_len - (size_t)pos;
			n = n < room - done ? n : room - done;
			memcpy(buf + done, (const char *)u->head + pos, n);
		} else if (pos - u->head_len < u->fd_len) {
			uint64_t off = pos - u->head_len, left = u->fd_len - off;
			size_t want = left < room - done ? (size_t)left : room - done;
			ssize_t got = pread(u->fd, buf + done, want, (off_t)(u->fd_offset + off));
			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0) {
				x->up_errno = got < 0 ? errno : EIO;
				return CURL_READFUNC_ABORT;
			}
			n = (size_t)got;
		} else {
			uint64_t off = pos - u->head_len - u->fd_len;
			if (off >= u->tail_len)
				break; /* the end of the body */
			n = u->tail_len - (size_t)off;
			n = n < room - done ? n : room - done;
			memcpy(buf + done, (const char *)u->tail + off, n);
		}
		x->up_pos += n;
		done += n;
	}
	return done;
}

static int http_exchange(const struct docker_engine *e, const char *method, const char *url, const char *body,
                         size_t body_len, const char *content_type, long timeout_ms, const char *what,
                         struct http_exchange *x, struct cp_error **err)
{
	pthread_once(&curl_once, curl_init_once);
	if (curl_init_result != CURLE_OK)
		return cp_error_set(err, CP_ERR_INTERNAL, "%s%sinitialize libcurl: %s", what ? what : "",
		                    what ? ": " : "", curl_easy_strerror(curl_init_result));

	_cleanup_(cleanup_curlp) CURL *h = curl_easy_init();
	_cleanup_(cleanup_slistp) struct curl_slist *headers = NULL;
	if (!h)
		cp_oom(); /* curl_easy_init fails only when it cannot allocate */

	char errbuf[CURL_ERROR_SIZE] = "";
	if (e->endpoint) {
		docker_tls_setopt(h, e);
	} else {
		curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, e->socket_path);
		curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http");
	}
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L); /* no SIGALRM: we run in many threads */
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 5000 ? timeout_ms : 5000L);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
	/* Expect: 100-continue would stall bodies over 1 KiB for a second. */
	headers = curl_slist_append(headers, "Expect:");
	if (body || x->up) {
		char ct[128];
		snprintf(ct, sizeof(ct), "Content-Type: %s", content_type ? content_type : "application/json");
		headers = curl_slist_append(headers, ct);
	}
	if (!headers)
		cp_oom(); /* curl_slist_append fails only when it cannot allocate */
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);

	if (x->up) {
		/* PUT with the body from on_upload, its length known up front. */
		curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(h, CURLOPT_READFUNCTION, on_upload);
		curl_easy_setopt(h, CURLOPT_READDATA, x);
		curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE,
		                 (curl_off_t)(x->up->head_len + x->up->fd_len + x->up->tail_len));
	} else if (strcmp(method, "GET") == 0) {
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	} else {
		if (body || strcmp(method, "POST") == 0) {
			curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : "");
			curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? body_len : 0));
		}
		if (strcmp(method, "POST") != 0)
			curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	}

	CURLcode rc = curl_easy_perform(h);
	if (rc != CURLE_OK) {
		const char *detail = errbuf[0] ? errbuf : curl_easy_strerror(rc);
		if (rc == CURLE_ABORTED_BY_CALLBACK && x->up_errno)
			return cp_error_set_errno(err, CP_ERR_INTERNAL, x->up_errno,
			                          "%s%sread the file being sent (it ended early or failed)",
			                          what ? what : "", what ? ": " : "");
		if (rc == CURLE_WRITE_ERROR && x->overflow)
			return cp_error_set(err, CP_ERR_INTERNAL,
			                    "%s%sthe engine's answer is longer than the %zu KiB this call reads; the "
			                    "engine at '%s' is not behaving as a Docker Engine",
			                    what ? what : "", what ? ": " : "", x->body.max >> 10,
			                    docker_engine_socket(e));
		if (!e->endpoint)
			return socket_error(h, e->socket_path, what, rc, detail, timeout_ms, err);
		long os_errno = 0;
		curl_easy_getinfo(h, CURLINFO_OS_ERRNO, &os_errno);
		return docker_remote_error(err, e->endpoint, what, rc, detail, os_errno, timeout_ms);
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &x->status);
	return 0;
}

/* Parses a whole body as JSON; a body that is not JSON becomes a JSON string. */
static struct json_object *body_to_json(const struct cp_buf *b)
{
	if (!b->len)
		return NULL;
	if (b->len > (size_t)INT32_MAX)
		return NULL;
	json_tokener *tok = json_tokener_new();
	if (!tok)
		return NULL;
	struct json_object *o = json_tokener_parse_ex(tok, b->data, (int)b->len);
	size_t used = json_tokener_get_parse_end(tok);
	int ok = o && json_tokener_get_error(tok) == json_tokener_success;
	json_tokener_free(tok);
	for (size_t i = used; ok && i < b->len; i++)
		if (!strchr(" \t\r\n", b->data[i]))
			ok = 0;
	if (ok)
		return o;
	json_object_put(o);
	return xjson_string_len(b->data, (int)b->len);
}

/* Parses "1.41" into 1041; -1 when malformed. */
static long api_number(const char *v)
{
	char *end = NULL;
	long major = strtol(v, &end, 10);
	if (end == v || *end != '.')
		return -1;
	const char *m = end + 1;
	long minor = strtol(m, &end, 10);
	if (end == m || *end || major < 0 || minor < 0 || minor >= 1000)
		return -1;
	return major * 1000 + minor;
}

static void engine_destroy(struct docker_engine *e)
{
	if (!e)
		return;
	free(e->socket_path);
	free(e->endpoint);
	free(e->base_url);
	docker_tls_clear(e);
	free(e->api_version);
	free(e->engine_version);
	free(e);
}
static void cleanup_enginep(struct docker_engine **e)
{
	engine_destroy(*e);
}

/* Negotiates the API version of e, whose address is set (docker.h). GET
 * /version is sent without a version prefix because the engine answers it at
 * any version (Docker Engine API reference, "Versioning"). Blocks at most
 * DOCKER_VERSION_TIMEOUT_MS. */
static int engine_negotiate(struct docker_engine *e, struct cp_error **err)
{
	const char *where = docker_engine_socket(e);
	_cleanup_(cleanup_exchangep) struct http_exchange x = {0};
	cp_buf_init(&x.body, docker_response_max("GET", "/version"));
	_cleanup_free_ char *url = xasprintf("%s/version", e->base_url);
	if (http_exchange(e, "GET", url, NULL, 0, NULL, DOCKER_VERSION_TIMEOUT_MS, NULL, &x, err) < 0)
		return -1;
	if (x.status != 200) {
		char msg[512];
		const char *m = docker_engine_message(x.body.data, x.body.len, msg, sizeof(msg));
		return cp_error_set(err, CP_ERR_UNAVAILABLE,
		                    "ask the Docker Engine at '%s' for its version: HTTP %ld%s%s", where, x.status,
		                    m ? ": " : "", m ? m : "");
	}

	_cleanup_json_ struct json_object *v = body_to_json(&x.body);
	struct json_object *api = NULL, *ver = NULL;
	if (!v || !json_object_object_get_ex(v, "ApiVersion", &api) || !json_object_is_type(api, json_type_string) ||
	    api_number(json_object_get_string(api)) < 0)
		return cp_error_set(err, CP_ERR_UNAVAILABLE,
		                    "the Docker Engine at '%s' did not report a usable API version", where);
	const char *engine_api = json_object_get_string(api);
	if (api_number(engine_api) < api_number(DOCKER_API_MIN))
		return cp_error_set(err, CP_ERR_UNAVAILABLE,
		                    "the Docker Engine at '%s' speaks API %s, older than the %s chat2sbx needs; "
		                    "upgrade the engine (Docker 20.10 or newer)",
		                    where, engine_api, DOCKER_API_MIN);
	const char *chosen = api_number(engine_api) < api_number(DOCKER_API_MAX) ? engine_api : DOCKER_API_MAX;
	const char *version = "unknown";
	if (json_object_object_get_ex(v, "Version", &ver) && json_object_is_type(ver, json_type_string) &&
	    docker_text_printable(json_object_get_string(ver), DOCKER_ENGINE_VERSION_MAX))
		version = json_object_get_string(ver);
	e->api_version = xstrdup(chosen);
	e->engine_version = xstrdup(version);
	log_debug("docker", "engine %s at '%s' (API %s, using %s)", version, where, engine_api, chosen);
	return 0;
}

/* Opens a client for this machine's engine on its socket (docker.h). */
int docker_engine_new(const char *socket_path, struct docker_engine **ret_engine, struct cp_error **err)
{
	if (!socket_path || !*socket_path)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "open the Docker Engine: empty socket path");

	_cleanup_(cleanup_enginep) struct docker_engine *e = xcalloc(1, sizeof(*e));
	e->socket_path = xstrdup(socket_path);
	e->base_url = xstrdup("http://localhost");
	if (engine_negotiate(e, err) < 0)
		return -1;
	*ret_engine = TAKE_PTR(e);
	return 0;
}

/* Opens a client for a remote engine over mutual TLS (docker.h). */
int docker_engine_new_tls(const char *endpoint, const struct docker_tls_files *tls, struct docker_engine **ret_engine,
                          struct cp_error **err)
{
	int has_tls = tls && tls->ca && *tls->ca && tls->cert && *tls->cert && tls->key && *tls->key;
	_cleanup_free_ char *host = NULL;
	int port = 0;
	if (docker_endpoint_parse(endpoint, has_tls, &host, &port, err) < 0)
		return -1;
	_cleanup_(cleanup_enginep) struct docker_engine *e = xcalloc(1, sizeof(*e));
	e->endpoint = xstrdup(endpoint);
	e->base_url =
	    strchr(host, ':') ? xasprintf("https://[%s]:%d", host, port) : xasprintf("https://%s:%d", host, port);
	if (docker_tls_load(e, tls, err) < 0 || engine_negotiate(e, err) < 0)
		return -1;
	*ret_engine = TAKE_PTR(e);
	return 0;
}

/* Frees the handle; accepts NULL. Calls still running on other threads must
 * have returned. */
void docker_engine_free(struct docker_engine *engine)
{
	engine_destroy(engine);
}

/* The negotiated API version ("1.41"); borrowed for the engine's lifetime. */
const char *docker_engine_api_version(const struct docker_engine *engine)
{
	return engine->api_version;
}

/* The engine's own version from GET /version ("20.10.24+dfsg1"); borrowed. */
const char *docker_engine_version(const struct docker_engine *engine)
{
	return engine->engine_version;
}

/* Where the engine is: its socket path, or a remote engine's endpoint; borrowed. */
const char *docker_engine_socket(const struct docker_engine *engine)
{
	return engine->endpoint ? engine->endpoint : engine->socket_path;
}

/* Whether the engine is another machine's (docker.h). */
int docker_engine_is_remote(const struct docker_engine *engine)
{
	return engine->endpoint != NULL;
}

/* One engine call at the negotiated version (docker.h has the contract).
 * The URL is http://localhost/v<api><path> (the host name is ignored by the
 * engine on its Unix socket), or https://HOST:PORT/v<api><path>. Blocks at most timeout_ms (ms). The response
 * body is bounded by docker_response_max(method, path) (bounds.c). Thread-safe. */
int docker_request(struct docker_engine *engine, const char *method, const char *path, struct json_object *body,
                   long timeout_ms, const char *what, long *ret_status, struct json_object **ret_body,
                   struct cp_error **err)
{
	if (!what)
		what = "call the Docker Engine";
	if (!method || !path || path[0] != '/' || timeout_ms <= 0)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "%s: bad request arguments", what);

	_cleanup_free_ char *url = xasprintf("%s/v%s%s", engine->base_url, engine->api_version, path);
	const char *text = body ? xjson_text(body, JSON_C_TO_STRING_PLAIN) : NULL;

	_cleanup_(cleanup_exchangep) struct http_exchange x = {0};
	cp_buf_init(&x.body, docker_response_max(method, path));
	int64_t start = clock_monotonic_ms();
	if (http_exchange(engine, method, url, text, text ? strlen(text) : 0, NULL, timeout_ms, what, &x, err) < 0) {
		log_debug("docker", "%s %s failed after %lld ms", method, path,
		          (long long)(clock_monotonic_ms() - start));
		return -1;
	}
	log_debug("docker", "%s %s -> %ld (%zu bytes, %lld ms)", method, path, x.status, x.body.len,
	          (long long)(clock_monotonic_ms() - start));

	if (x.status >= 400) {
		char msg[1024];
		const char *m = docker_engine_message(x.body.data, x.body.len, msg, sizeof(msg));
		return docker_error_status(err, x.status, m, what);
	}
	if (ret_body)
		*ret_body = body_to_json(&x.body);
	if (ret_status)
		*ret_status = x.status;
	return 0;
}

/* PUT /containers/{id}/archive?path=PATH with the tar in memory (tar, len)
 * or streamed (up). */
static int put_archive(struct docker_engine *engine, const char *id, const char *path, const void *tar, size_t len,
                       const struct docker_upload *up, long timeout_ms, struct cp_error **err)
{
	_cleanup_free_ char *what = xasprintf("copy files into container '%s'", id ? id : "");
	if (!id || !*id || !path || path[0] != '/' || (!up && (!tar || !len)) || timeout_ms <= 0)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "%s: bad request arguments", what);
	_cleanup_free_ char *eid = docker_escape(id, NULL);
	_cleanup_free_ char *epath = docker_escape(path, "/");
	_cleanup_free_ char *url =
	    xasprintf("%s/v%s/containers/%s/archive?path=%s", engine->base_url, engine->api_version, eid, epath);
	_cleanup_(cleanup_exchangep) struct http_exchange x = {.up = up};
	cp_buf_init(&x.body, docker_response_max("PUT", "/containers/x/archive"));
	if (http_exchange(engine, "PUT", url, tar, len, "application/x-tar", timeout_ms, what, &x, err) < 0)
		return -1;
	if (x.status >= 400) {
		char msg[1024];
		const char *m = docker_engine_message(x.body.data, x.body.len, msg, sizeof(msg));
		return docker_error_status(err, x.status, m, what);
	}
	return 0;
}

/* PUT /containers/{id}/archive?path=PATH with a tar body (docker.h). */
int docker_container_put_archive(struct docker_engine *engine, const char *id, const char *path, const void *tar,
                                 size_t len, long timeout_ms, struct cp_error **err)
{
	return put_archive(engine, id, path, tar, len, NULL, timeout_ms, err);
}

/* The same with the tar streamed from a file (docker.h). */
int docker_container_put_archive_stream(struct docker_engine *engine, const char *id, const char *path,
                                        const struct docker_upload *up, long timeout_ms, struct cp_error **err)
{
	if (!up || (up->fd_len && up->fd < 0) || (up->head_len && !up->head) || (up->tail_len && !up->tail))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "copy files into container '%s': bad upload",
		                    id ? id : "");
	return put_archive(engine, id, path, NULL, 0, up, timeout_ms, err);
}
