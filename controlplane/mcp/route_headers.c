/* route_headers.c: the routing headers a 2026-07-28 POST mirrors from its
 * body (MCP 2026-07-28 basic/transports/streamable-http, "Request Metadata"
 * and "Server Validation"): MCP-Protocol-Version, Mcp-Method and Mcp-Name,
 * compared with the body after the optional whitespace is stripped (RFC 9110
 * section 5.5) and the Base64 sentinel is decoded ("Value Encoding"). Pure
 * functions over borrowed text: no JSON, no sockets, no state. A header a
 * load balancer could read differently from us (sent twice, with control or
 * non-ASCII bytes, a malformed sentinel) is refused, never guessed at. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/base64.h"
#include "../base/text.h"
#include "../base/xalloc.h"

#define SENTINEL_PREFIX "=?base64?"
#define SENTINEL_SUFFIX "?="

/* RFC 9110 section 5.5: a field value excludes the optional whitespace
 * (SP, HTAB) around it. Sets *ret_start and *ret_len to the trimmed span
 * of raw (borrowed). */
static void trim_ows(const char *raw, const char **ret_start, size_t *ret_len)
{
	const char *s = raw;
	size_t n = strlen(raw);
	while (n > 0 && (*s == ' ' || *s == '\t')) {
		s++;
		n--;
	}
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	*ret_start = s;
	*ret_len = n;
}

/* A plain header value may hold visible ASCII, space and tab only
 * ("Value Encoding": anything else is sent Base64-encoded). */
static int plain_ascii(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (!(c == '\t' || (c >= 0x20 && c <= 0x7e)))
			return 0;
	}
	return 1;
}

/* Decodes the value of a routing header as MCP 2026-07-28
 * basic/transports/streamable-http "Value Encoding" defines it: whitespace
 * around it stripped, then either plain visible ASCII or the sentinel
 * "=?base64?...?=" around the Base64 of UTF-8 text. raw is borrowed; on
 * success *ret_value is an owned NUL-terminated copy (a decoded value with a
 * NUL byte is refused, since no body string we compare with can hold one).
 * On failure returns -1 and why (always terminated) says what was wrong.
 * Pure; allocates one string. */
int mcp_route_header_decode(const char *raw, char **ret_value, char *why, size_t why_size)
{
	const char *s;
	size_t n;
	trim_ows(raw, &s, &n);
	size_t pl = strlen(SENTINEL_PREFIX), sl = strlen(SENTINEL_SUFFIX);
	if (n >= pl + sl && memcmp(s, SENTINEL_PREFIX, pl) == 0 && memcmp(s + n - sl, SENTINEL_SUFFIX, sl) == 0) {
		unsigned char *out = xmalloc((n - pl - sl) * 3 / 4 + 2);
		int ok = 0;
		size_t k = base64_decode(s + pl, n - pl - sl, out, &ok);
		if (!ok || memchr(out, '\0', k)) {
			free(out);
			snprintf(why, why_size, "its =?base64?...?= value is not valid Base64 of text");
			return -1;
		}
		out[k] = '\0';
		*ret_value = (char *)out;
		return 0;
	}
	if (!plain_ascii(s, n)) {
		snprintf(why, why_size,
		         "its value holds bytes outside visible ASCII; send such a value as =?base64?...?= (MCP "
		         "2026-07-28 streamable-http, Value Encoding)");
		return -1;
	}
	*ret_value = xstrndup(s, n);
	return 0;
}

/* Checks one routing header against the body value it mirrors (MCP
 * 2026-07-28 basic/transports/streamable-http, "Server Validation": a
 * missing required header, a value that does not match the body, invalid
 * characters, and, since intermediaries may pick either copy, a header sent
 * more than once). header is the header's name for the message, raw its
 * value (NULL when absent) and count how often it appeared; want is the
 * body's value (borrowed); decode says whether the Base64 sentinel applies
 * (Mcp-Name does, the other two carry plain tokens). Returns 0 when the
 * header matches, else -1 with why (always terminated) naming the header,
 * its value (clipped) and the body's. Pure. */
int mcp_route_header_check(const char *header, const char *raw, unsigned count, const char *want, int decode, char *why,
                           size_t why_size)
{
	char got_clip[200], want_clip[200], detail[300];
	if (!raw || count == 0) {
		snprintf(why, why_size,
		         "the %s header is missing; a 2026-07-28 request carries it with the body's value '%s'", header,
		         text_clip(want, 120, want_clip, sizeof(want_clip)));
		return -1;
	}
	if (count > 1) {
		snprintf(why, why_size, "the %s header appears %u times; send it once", header, count);
		return -1;
	}
	char *value = NULL;
	if (decode) {
		if (mcp_route_header_decode(raw, &value, detail, sizeof(detail)) < 0) {
			snprintf(why, why_size, "the %s header is malformed: %s", header, detail);
			return -1;
		}
	} else {
		const char *s;
		size_t n;
		trim_ows(raw, &s, &n);
		if (!plain_ascii(s, n)) {
			snprintf(why, why_size, "the %s header holds bytes outside visible ASCII", header);
			return -1;
		}
		value = xstrndup(s, n);
	}
	int same = strcmp(value, want) == 0; /* values are case-sensitive ("Case Sensitivity") */
	if (!same)
		snprintf(why, why_size, "%s header value '%s' does not match body value '%s'", header,
		         text_clip(value, 120, got_clip, sizeof(got_clip)),
		         text_clip(want, 120, want_clip, sizeof(want_clip)));
	free(value);
	return same ? 0 : -1;
}
