/* tls.c: a remote engine's address and its mutual TLS (issue 28): the one
 * endpoint form chat2sbx accepts for another machine's engine
 * (tcp://HOST:PORT, only with a CA, a client certificate and its key), the
 * libcurl options that make every exchange with it verify the engine and
 * show our certificate, and the words for what went wrong on the way.
 * The three files are read once when an engine opens, each checked on the
 * descriptor it was read from (this user's, private, not a link), and
 * handed to libcurl as bytes; they are never logged or returned, and
 * libcurl's words (which may name a file) are not passed on. */
#include "engine_internal.h"

#include <curl/curl.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/cleanup.h"
#include "../base/xalloc.h"

/* Why a plain-TCP engine is refused, for messages. */
#define PLAIN_TCP_REASON                                                                                               \
	"anyone who reaches an engine's plain TCP port is root on that machine, so chat2sbx speaks to a remote "       \
	"engine only with mutual TLS: give --tls-ca, --tls-cert and --tls-key (docs/nodes.md)"

/* 1 when s (len bytes) is a host name or IPv4 address: letters, digits,
 * '-' and '.', not starting with '-' or '.'. */
static int host_name_ok(const char *s, size_t len)
{
	if (!len || len > 253 || s[0] == '-' || s[0] == '.')
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '.')
			return 0;
	return 1;
}

/* 1 when s (len bytes) is the inside of an IPv6 literal's brackets. */
static int host_v6_ok(const char *s, size_t len)
{
	if (len < 2 || len > 45)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!isxdigit((unsigned char)s[i]) && s[i] != ':' && s[i] != '.')
			return 0;
	return 1;
}

/* Refusals of every form but tcp:// (docker.h has the list). */
static int refuse_scheme(const char *endpoint, struct cp_error **err)
{
	const char *what = "use engine endpoint";
	if (!strncmp(endpoint, "http://", 7) || !strncmp(endpoint, "https://", 8))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "%s '%s': write a remote engine's address as tcp://HOST:PORT (the port its "
		                    "dockerd listens on with --tlsverify, usually 2376), not as a URL",
		                    what, endpoint);
	if (!strncmp(endpoint, "unix://", 7) || endpoint[0] == '/')
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "%s '%s': a node is another machine's engine at tcp://HOST:PORT; this machine's "
		                    "engine is node 'local' already (CHAT2SBX_DOCKER_SOCKET)",
		                    what, endpoint);
	return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
	                    "%s '%s': not an engine address; write it as tcp://HOST:PORT, for example "
	                    "tcp://10.0.0.2:2376",
	                    what, endpoint);
}

/* Parses endpoint (docker.h has the contract). Pure. */
int docker_endpoint_parse(const char *endpoint, int has_tls, char **ret_host, int *ret_port, struct cp_error **err)
{
	const char *what = "use engine endpoint";
	if (!endpoint || !*endpoint)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "%s: the endpoint is empty; write tcp://HOST:PORT",
		                    what);
	if (strncmp(endpoint, "tcp://", 6) != 0)
		return refuse_scheme(endpoint, err);
	const char *h = endpoint + 6, *colon;
	size_t hlen;
	int v6 = h[0] == '[';
	if (v6) {
		const char *close = strchr(h, ']');
		if (!close || close[1] != ':' || !host_v6_ok(h + 1, (size_t)(close - h - 1)))
			return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
			                    "%s '%s': an IPv6 address is written in brackets with a port, "
			                    "tcp://[ADDRESS]:PORT",
			                    what, endpoint);
		colon = close + 1;
		hlen = (size_t)(close - h - 1);
		h++;
	} else {
		colon = strrchr(h, ':');
		hlen = colon ? (size_t)(colon - h) : strlen(h);
		if (!host_name_ok(h, hlen))
			return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
			                    "%s '%s': the host must be a name or an address (letters, digits, '-', "
			                    "'.'), as in tcp://10.0.0.2:2376",
			                    what, endpoint);
	}
	char *end = NULL;
	long port = colon && colon[1] ? strtol(colon + 1, &end, 10) : -1;
	if (!colon || port < 1 || port > 65535 || !end || *end || !isdigit((unsigned char)colon[1]))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "%s '%s': give the port the engine listens on with TLS, as in "
		                    "tcp://HOST:2376 (a number from 1 to 65535)",
		                    what, endpoint);
	if (!has_tls)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "%s '%s': plain TCP without TLS is refused: %s", what,
		                    endpoint, PLAIN_TCP_REASON);
	*ret_host = xstrndup(h, hlen);
	*ret_port = (int)port;
	return 0;
}

/* Reads one file (docker_tls_load's rules) into *ret. */
static int load_one(const char *endpoint, const char *path, const char *option, struct docker_pem *ret,
                    struct cp_error **err)
{
	_cleanup_free_ char *what = xasprintf("read the TLS files of the Docker Engine at '%s'", endpoint);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno,
		                          "%s: cannot open the %s copy '%s' (a symbolic link is refused); add the node "
		                          "again with 'chat2sbx node add'",
		                          what, option, path);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "%s: stat '%s'", what, path);
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
		return cp_error_set(err, CP_ERR_UNAVAILABLE,
		                    "%s: the %s copy '%s' is not a private file of this user (mode %04o, uid %u); "
		                    "another user may have changed it: add the node again with 'chat2sbx node add'",
		                    what, option, path, (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid);
	if (st.st_size <= 0 || st.st_size > DOCKER_TLS_FILE_MAX)
		return cp_error_set(err, CP_ERR_UNAVAILABLE, "%s: the %s copy '%s' has %lld bytes (1 to %d are read)",
		                    what, option, path, (long long)st.st_size, DOCKER_TLS_FILE_MAX);
	size_t len = (size_t)st.st_size, got = 0;
	char *buf = xmalloc(len);
	while (got < len) {
		ssize_t n = read(fd, buf + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (got < len) {
		explicit_bzero(buf, len);
		free(buf);
		return cp_error_set(err, CP_ERR_UNAVAILABLE, "%s: the %s copy '%s' could not be read whole", what,
		                    option, path);
	}
	*ret = (struct docker_pem){.data = buf, .len = len};
	return 0;
}

/* engine_internal.h. */
int docker_tls_load(struct docker_engine *e, const struct docker_tls_files *tls, struct cp_error **err)
{
	const char *at = e->endpoint ? e->endpoint : "";
	if (load_one(at, tls->ca, "--tls-ca", &e->tls_ca, err) < 0 ||
	    load_one(at, tls->cert, "--tls-cert", &e->tls_cert, err) < 0 ||
	    load_one(at, tls->key, "--tls-key", &e->tls_key, err) < 0) {
		docker_tls_clear(e);
		return -1;
	}
	return 0;
}

/* engine_internal.h. */
void docker_tls_clear(struct docker_engine *e)
{
	struct docker_pem *all[3] = {&e->tls_ca, &e->tls_cert, &e->tls_key};
	for (size_t i = 0; i < 3; i++) {
		if (all[i]->data)
			explicit_bzero(all[i]->data, all[i]->len);
		free(all[i]->data);
		*all[i] = (struct docker_pem){0};
	}
}

/* The libcurl options of an exchange with a remote engine (engine_internal.h). */
void docker_tls_setopt(void *curl, const struct docker_engine *e)
{
	CURL *h = curl;
	struct curl_blob ca = {.data = e->tls_ca.data, .len = e->tls_ca.len, .flags = CURL_BLOB_COPY};
	struct curl_blob cert = {.data = e->tls_cert.data, .len = e->tls_cert.len, .flags = CURL_BLOB_COPY};
	struct curl_blob key = {.data = e->tls_key.data, .len = e->tls_key.len, .flags = CURL_BLOB_COPY};
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https");
	curl_easy_setopt(h, CURLOPT_CAINFO, NULL); /* only the node's CA, never the system's */
	curl_easy_setopt(h, CURLOPT_CAPATH, NULL);
	curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &ca);
	curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &cert);
	curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
	curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &key);
	curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
	curl_easy_setopt(h, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
	curl_easy_setopt(h, CURLOPT_PROXY, ""); /* no proxy from the environment */
}

/* 1 when curl's words say the peer ended the handshake with an alert (the
 * engine refused our certificate: TLS 1.3 reports it at the first read). */
static int peer_alert(const char *detail)
{
	return detail && (strcasestr(detail, "alert") || strcasestr(detail, "certificate required"));
}

/* A failed exchange with a remote engine in words (engine_internal.h). */
int docker_remote_error(struct cp_error **err, const char *endpoint, const char *what, int curl_code,
                        const char *detail, long os_errno, long timeout_ms)
{
	const char *w = what ? what : "", *sep = what ? ": " : "";
	switch ((CURLcode)curl_code) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST: {
		int errnum = os_errno ? (int)os_errno : ECONNREFUSED;
		cp_error_set(err, CP_ERR_UNAVAILABLE,
		             "%s%scannot reach the Docker Engine at '%s': %s; check that the machine is up and its "
		             "dockerd listens there (-H tcp://0.0.0.0:2376 --tlsverify)",
		             w, sep, endpoint,
		             curl_code == CURLE_COULDNT_RESOLVE_HOST ? "the host name does not resolve"
		             : errnum == ECONNREFUSED                ? "nothing accepts connections on that port"
		                                                     : strerror(errnum));
		(*err)->errnum = errnum;
		return cp_error_set_detail(err, CP_DETAIL_ENGINE_UNREACHABLE);
	}
	case CURLE_OPERATION_TIMEDOUT:
		return cp_error_set(err, CP_ERR_TIMEOUT, "%s%sthe Docker Engine at '%s' did not answer within %ld ms",
		                    w, sep, endpoint, timeout_ms);
	case CURLE_PEER_FAILED_VERIFICATION:
		return cp_error_set(err, CP_ERR_DENIED,
		                    "%s%sthe Docker Engine at '%s' showed a certificate chat2sbx does not trust (%s); "
		                    "check that --tls-ca is the CA that signed the node's server certificate and that "
		                    "the certificate names this host (subjectAltName)",
		                    w, sep, endpoint, detail);
	case CURLE_SSL_CERTPROBLEM:
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "%s%sthe client certificate or key for '%s' cannot be used; check that --tls-cert "
		                    "and --tls-key are PEM files, the key unencrypted and belonging to the certificate",
		                    w, sep, endpoint);
	case CURLE_SSL_CACERT_BADFILE:
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "%s%sthe CA file for '%s' cannot be read as PEM certificates; check --tls-ca", w,
		                    sep, endpoint);
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_GOT_NOTHING:
		if (peer_alert(detail))
			return cp_error_set(err, CP_ERR_DENIED,
			                    "%s%sthe Docker Engine at '%s' refused chat2sbx's client certificate "
			                    "(%s); check that --tls-cert was signed by the CA the node's dockerd "
			                    "trusts (--tlscacert) and allows client authentication",
			                    w, sep, endpoint, detail);
		if (curl_code == CURLE_SSL_CONNECT_ERROR)
			return cp_error_set(err, CP_ERR_UNAVAILABLE,
			                    "%s%sno TLS connection with the Docker Engine at '%s' (%s); check that it "
			                    "listens with --tlsverify on that port",
			                    w, sep, endpoint, detail);
		/* fall through */
	case CURLE_PARTIAL_FILE:
		return cp_error_set(err, CP_ERR_UNAVAILABLE, "%s%sthe Docker Engine at '%s' dropped the connection: %s",
		                    w, sep, endpoint, detail);
	default: return cp_error_set(err, CP_ERR_INTERNAL, "%s%s%s: %s", w, sep, endpoint, detail);
	}
}
