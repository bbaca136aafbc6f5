/* utf8.c: UTF-8 validation for the helper's replies. Output and file bytes
 * are arbitrary; replies are JSON, whose strings must be valid UTF-8. Invalid
 * bytes become U+FFFD and a character is never split between two replies.
 * Pure functions, no I/O. */
#include "utf8.h"

#include <stdbool.h>

#include "xalloc.h"

/* Sequence length announced by a lead byte; 0 for a byte that cannot start
 * a character (continuation bytes 80..BF, C0, C1, F5..FF). */
static size_t lead_length(unsigned char c)
{
	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		return 2;
	if (c >= 0xE0 && c <= 0xEF)
		return 3;
	if (c >= 0xF0 && c <= 0xF4)
		return 4;
	return 0;
}

/* Whether c may be byte number i (1-based after the lead) of a sequence led
 * by lead; the second byte's range depends on the lead (table 3-7). */
static bool continuation_ok(unsigned char lead, size_t i, unsigned char c)
{
	unsigned char lo = 0x80, hi = 0xBF;
	if (i == 1) {
		if (lead == 0xE0)
			lo = 0xA0;
		else if (lead == 0xED)
			hi = 0x9F;
		else if (lead == 0xF0)
			lo = 0x90;
		else if (lead == 0xF4)
			hi = 0x8F;
	}
	return c >= lo && c <= hi;
}

/* Bytes of s[0..n) that belong to the sequence starting at s[0] as far as
 * they are valid (the maximal subpart); *ret_need gets the full length the
 * lead byte announces (0 for an invalid lead). The sequence is complete when
 * the result equals *ret_need. */
static size_t sequence_prefix(const unsigned char *s, size_t n, size_t *ret_need)
{
	size_t need = lead_length(s[0]);
	*ret_need = need;
	if (need == 0)
		return 0;
	size_t k = 1;
	while (k < need && k < n && continuation_ok(s[0], k, s[k]))
		k++;
	return k;
}

size_t utf8_incomplete_suffix(const unsigned char *s, size_t n)
{
	size_t stop = n > 3 ? n - 3 : 0;
	for (size_t i = n; i > stop; i--) {
		unsigned char c = s[i - 1];
		if (c >= 0x80 && c <= 0xBF)
			continue;
		size_t need, have = sequence_prefix(s + i - 1, n - (i - 1), &need);
		if (need > n - (i - 1) && have == n - (i - 1))
			return n - (i - 1);
		return 0;
	}
	return 0;
}

char *utf8_sanitize(const unsigned char *s, size_t n, size_t *ret_len)
{
	/* Worst case: every byte becomes the 3-byte U+FFFD. */
	char *out = xmalloc(3 * n + 1);
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		if (s[i] < 0x80) {
			out[o++] = (char)s[i++];
			continue;
		}
		size_t need, have = sequence_prefix(s + i, n - i, &need);
		if (need != 0 && have == need) {
			for (size_t k = 0; k < need; k++)
				out[o++] = (char)s[i + k];
			i += need;
			continue;
		}
		out[o++] = (char)0xEF;
		out[o++] = (char)0xBF;
		out[o++] = (char)0xBD;
		i += have ? have : 1;
	}
	out[o] = '\0';
	*ret_len = o;
	return out;
}
