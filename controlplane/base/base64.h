/* base64.h: decoding base64 (RFC 4648 section 4, the standard alphabet),
 * as the helper's blob.read sends a file's bytes. */
#ifndef CP_BASE64_H
#define CP_BASE64_H

#include <stddef.h>

/* Decodes the len characters at in into out, which must hold 3 * (len / 4)
 * + 3 bytes, and returns how many were written. '=' padding ends the data:
 * any character after it, or one outside the alphabet, sets *ok to 0 and
 * returns 0; *ok is 1 otherwise. Pure, thread-safe. */
size_t base64_decode(const char *in, size_t len, unsigned char *out, int *ok);

#endif
