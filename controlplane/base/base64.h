/* base64.h: decoding base64 (RFC 4648 section 4, the standard alphabet):
 * what the helper's blob.read sends, and MCP's =?base64?...?= header
 * values. */
#ifndef CP_BASE64_H
#define CP_BASE64_H

#include <stddef.h>

/* Decodes the len characters at in into out, which must hold len * 3 / 4
 * + 1 bytes, and returns how many were written, with *ok 1. The '='
 * padding may be left out; when present it is at the end only and makes
 * the length a multiple of 4. A character outside the alphabet, padding
 * anywhere else, more than two '=' or a length no encoding has (4n + 1):
 * *ok 0 and 0 returned. Pure, thread-safe. */
size_t base64_decode(const char *in, size_t len, unsigned char *out, int *ok);

#endif
