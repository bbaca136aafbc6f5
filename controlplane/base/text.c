/* text.c: bounded, valid-UTF-8 copies of text that came from outside, the
 * characters a terminal does not show (bidi controls, zero-width and
 * space-like ones) and shell words safe to paste. Pure. */
#include "text.h"

#include <string.h>

#include "xalloc.h"

/* Length of the valid UTF-8 sequence at p (1..4), or 0 when it is not one
 * (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF). */
static size_t seq_len(const unsigned char *p, size_t avail)
{
	unsigned char c = p[0];
	size_t n;
	if (c < 0x80)
		return 1;
	else if (c >= 0xC2 && c <= 0xDF)
		n = 2;
	else if (c >= 0xE0 && c <= 0xEF)
		n = 3;
	else if (c >= 0xF0 && c <= 0xF4)
		n = 4;
	else
		return 0;
	if (avail < n)
		return 0;
	for (size_t i = 1; i < n; i++)
		if ((p[i] & 0xC0) != 0x80)
			return 0;
	if (n == 3 && ((c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] >= 0xA0)))
		return 0;
	if (n == 4 && ((c == 0xF0 && p[1] < 0x90) || (c == 0xF4 && p[1] >= 0x90)))
		return 0;
	return n;
}

char *text_clip(const char *s, size_t max, char *buf, size_t size)
{
	if (!size)
		return buf;
	static const char ellipsis[] = "\xe2\x80\xa6";
	size_t o = 0, i = 0, len = s ? strlen(s) : 0;
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	while (i < len) {
		size_t n = seq_len(p + i, len - i);
		size_t out = n ? n : 1;
		if (i + out > max || o + out + sizeof(ellipsis) > size)
			break;
		if (n == 0 || (n == 1 && (p[i] < 0x20 || p[i] == 0x7f)))
			buf[o++] = '?';
		else {
			memcpy(buf + o, p + i, n);
			o += n;
		}
		i += out;
	}
	if (i < len && o + sizeof(ellipsis) <= size) {
		memcpy(buf + o, ellipsis, sizeof(ellipsis) - 1);
		o += sizeof(ellipsis) - 1;
	}
	buf[o] = '\0';
	return buf;
}

size_t text_utf8_decode(const unsigned char *p, size_t avail, uint32_t *ret_cp)
{
	size_t n = avail ? seq_len(p, avail) : 0;
	if (n == 0)
		return 0;
	uint32_t cp = n == 1 ? p[0] : (uint32_t)(p[0] & (0x7f >> n));
	for (size_t i = 1; i < n; i++)
		cp = cp << 6 | (p[i] & 0x3f);
	*ret_cp = cp;
	return n;
}

/* Unicode's Default_Ignorable_Code_Point set and the bidi controls (UAX #9,
 * the "Trojan Source" characters of CVE-2021-42574), the C1 controls, and
 * the characters that look like a space but are none (U+00A0, U+2000-200A,
 * U+202F, U+205F, U+3000, U+1680), by range. */
int text_invisible(uint32_t cp)
{
	static const uint32_t ranges[][2] = {
	    {0x0080, 0x00a0}, {0x00ad, 0x00ad}, {0x034f, 0x034f},   {0x061c, 0x061c},   {0x115f, 0x1160},
	    {0x1680, 0x1680}, {0x17b4, 0x17b5}, {0x180b, 0x180f},   {0x2000, 0x200f},   {0x2028, 0x202f},
	    {0x205f, 0x206f}, {0x3000, 0x3000}, {0x3164, 0x3164},   {0xfe00, 0xfe0f},   {0xfeff, 0xfeff},
	    {0xffa0, 0xffa0}, {0xfff0, 0xfffb}, {0x1bca0, 0x1bca3}, {0x1d173, 0x1d17a}, {0xe0000, 0xe0fff},
	};
	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++)
		if (cp >= ranges[i][0] && cp <= ranges[i][1])
			return 1;
	return 0;
}

/* A byte that needs no quoting in a shell word (POSIX sh, bash, zsh). */
static int plain(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("_@%+=:,./-", c));
}

char *text_shell_quote(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	int bare = len > 0, dollar = 0;
	for (size_t i = 0; i < len;) {
		uint32_t cp = 0;
		size_t n = text_utf8_decode(u + i, len - i, &cp);
		if (n == 0 || cp < 0x20 || cp == 0x7f || text_invisible(cp))
			dollar = 1;
		if (n != 1 || !plain(u[i]))
			bare = 0;
		i += n ? n : 1;
	}
	if (bare && !dollar)
		return xstrndup(s, len);
	if (!dollar) { /* '...' with each ' as '\'' */
		char *q = xmalloc(len * 4 + 3), *o = q;
		*o++ = '\'';
		for (size_t i = 0; i < len; i++) {
			if (u[i] == '\'') {
				memcpy(o, "'\\''", 4);
				o += 4;
			} else {
				*o++ = (char)u[i];
			}
		}
		*o++ = '\'';
		*o = '\0';
		return q;
	}
	/* $'...' (bash, zsh, ksh93; POSIX.1-2024 sh): visible characters as
	 * they are, ' and \ escaped, every byte of anything else as \xHH
	 * (at most two hex digits are read, so a digit after one is safe). */
	char *q = xmalloc(len * 4 + 4), *o = q;
	*o++ = '$';
	*o++ = '\'';
	for (size_t i = 0; i < len;) {
		uint32_t cp = 0;
		size_t n = text_utf8_decode(u + i, len - i, &cp);
		if (n == 0 || cp < 0x20 || cp == 0x7f || text_invisible(cp)) {
			size_t bytes = n ? n : 1;
			for (size_t k = 0; k < bytes; k++) {
				static const char hex[] = "0123456789abcdef";
				*o++ = '\\';
				*o++ = 'x';
				*o++ = hex[u[i + k] >> 4];
				*o++ = hex[u[i + k] & 15];
			}
			i += bytes;
			continue;
		}
		if (u[i] == '\'' || u[i] == '\\')
			*o++ = '\\';
		memcpy(o, u + i, n);
		o += n;
		i += n;
	}
	*o++ = '\'';
	*o = '\0';
	return q;
}
