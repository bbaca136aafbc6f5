/* loopback.c: the DNS-rebinding checks on Host and Origin headers (MCP
 * basic/transports, "Security Warning": validate Origin, bind to localhost).
 * Pure string checks: no I/O, no state. A page from another site that
 * rebinds its own name to 127.0.0.1 still sends its own name in Host and
 * Origin, which is what these refuse. */
#include "internal.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

static int is_digits(const char *p, size_t n)
{
	if (n == 0 || n > 5)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (p[i] < '0' || p[i] > '9')
			return 0;
	return 1;
}

/* Splits "name", "name:port", "[v6]" or "[v6]:port" (RFC 9110 section 7.2,
 * RFC 3986 section 3.2.2) into the name (without brackets). Returns 0 and
 * the name's extent, -1 when malformed. */
static int split_authority(const char *s, size_t len, const char **ret_name, size_t *ret_name_len)
{
	const char *end = s + len;
	if (len > 0 && s[0] == '[') {
		const char *close = memchr(s, ']', len);
		if (!close)
			return -1;
		const char *rest = close + 1;
		if (rest != end && (*rest != ':' || !is_digits(rest + 1, (size_t)(end - rest - 1))))
			return -1;
		*ret_name = s + 1;
		*ret_name_len = (size_t)(close - s - 1);
		return 0;
	}
	const char *colon = memchr(s, ':', len);
	if (colon) {
		if (memchr(colon + 1, ':', (size_t)(end - colon - 1)) ||
		    !is_digits(colon + 1, (size_t)(end - colon - 1)))
			return -1;
		len = (size_t)(colon - s);
	}
	if (len == 0)
		return -1;
	*ret_name = s;
	*ret_name_len = len;
	return 0;
}

static int name_is(const char *name, size_t len, const char *want)
{
	return want && strlen(want) == len && strncasecmp(name, want, len) == 0;
}

static int name_is_loopback(const char *name, size_t len, const char *bind_host)
{
	if (name_is(name, len, "localhost") || name_is(name, len, "127.0.0.1") || name_is(name, len, "::1"))
		return 1;
	/* The literal address we listen on is also fine: a rebinding page
	 * cannot make a browser send an IP literal it does not own. A wildcard
	 * bind matches nothing here. */
	if (bind_host && strcmp(bind_host, "0.0.0.0") != 0 && strcmp(bind_host, "::") != 0)
		return name_is(name, len, bind_host);
	return 0;
}

/* True when a Host header value (borrowed) names the loopback interface
 * (localhost, 127.0.0.1, [::1], any port) or the literal bind address
 * bind_host. A missing Host (HTTP/1.0) is allowed: browsers, the only
 * carriers of a rebinding attack, always send one, and libmicrohttpd already
 * refuses HTTP/1.1 without it. */
int mcp_host_allowed(const char *host_header, const char *bind_host)
{
	if (!host_header)
		return 1;
	const char *name;
	size_t len;
	if (split_authority(host_header, strlen(host_header), &name, &len) < 0)
		return 0;
	return name_is_loopback(name, len, bind_host);
}

/* True when an Origin header value (borrowed; RFC 6454 serialization) is
 * absent or a loopback origin: http(s)://localhost, 127.0.0.1 or [::1], any
 * port. "null" and every other site are refused (MCP basic/transports:
 * servers MUST validate Origin). */
int mcp_origin_allowed(const char *origin)
{
	if (!origin)
		return 1;
	const char *rest;
	if (strncasecmp(origin, "http://", 7) == 0)
		rest = origin + 7;
	else if (strncasecmp(origin, "https://", 8) == 0)
		rest = origin + 8;
	else
		return 0;
	size_t rest_len = strlen(rest);
	if (rest_len > 0 && rest[rest_len - 1] == '/') /* not RFC 6454, but some clients send it */
		rest_len--;
	const char *name;
	size_t len;
	if (split_authority(rest, rest_len, &name, &len) < 0)
		return 0;
	return name_is_loopback(name, len, NULL);
}

int mcp_peer_is_loopback(const struct sockaddr *addr, size_t len)
{
	if (!addr)
		return 0;
	if (addr->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)addr;
		return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
	}
	if (addr->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)addr)->sin6_addr;
		if (IN6_IS_ADDR_LOOPBACK(a))
			return 1;
		return IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127;
	}
	return 0;
}
