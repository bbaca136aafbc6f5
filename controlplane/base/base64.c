/* base64.c: base64_decode (base64.h; RFC 4648 section 4). */
#include "base64.h"

#include <stdint.h>

/* The 6-bit value of c in the standard alphabet, -1 outside it. */
static int value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

size_t base64_decode(const char *in, size_t len, unsigned char *out, int *ok)
{
	*ok = 0;
	int pad = 0;
	while (len > 0 && in[len - 1] == '=') {
		len--;
		pad++;
	}
	if (pad > 2 || len % 4 == 1 || (pad && (len + (size_t)pad) % 4 != 0))
		return 0;
	size_t o = 0;
	uint32_t acc = 0;
	int bits = 0;
	for (size_t i = 0; i < len; i++) {
		int v = value((unsigned char)in[i]);
		if (v < 0)
			return 0;
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (unsigned char)(acc >> bits);
		}
	}
	*ok = 1;
	return o;
}
