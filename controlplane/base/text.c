/* text.c: bounded, valid-UTF-8 copies of text that came from outside. */
#include "text.h"

#include <string.h>

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
