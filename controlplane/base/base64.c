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
	size_t o = 0;
	uint32_t acc = 0;
	int bits = 0, pad = 0;
	*ok = 1;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];
		if (c == '=') {
			pad++;
			continue;
		}
		int v = value(c);
		if (pad || v < 0) {
			*ok = 0;
			return 0;
		}
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (unsigned char)(acc >> bits);
		}
	}
	return o;
}
