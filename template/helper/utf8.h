/* utf8.h: making raw bytes (command output, file content) safe to put in a
 * JSON string, and cutting byte streams at character boundaries. */
#ifndef CHAT2SBX_HELPER_UTF8_H
#define CHAT2SBX_HELPER_UTF8_H

#include <stddef.h>

/* Length (0-3) of the trailing bytes of s[0..n) that form the start of a
 * valid multi-byte UTF-8 sequence whose remaining bytes are missing: the
 * part that must be carried to the next reply so a character is never split.
 * Returns 0 when s ends on a character boundary or with invalid bytes (those
 * become U+FFFD anyway). Validity follows Unicode 15, table 3-7 (no
 * overlongs, no surrogates, nothing above U+10FFFF). */
size_t utf8_incomplete_suffix(const unsigned char *s, size_t n);

/* A newly allocated, NUL-terminated copy of s[0..n) that is valid UTF-8:
 * every maximal invalid subpart (Unicode 15, section 3.9 "U+FFFD
 * substitution of maximal subparts") becomes U+FFFD; NUL and other control
 * bytes are kept (JSON escaping handles them). *ret_len gets the length
 * without the terminator. The caller frees the result (never NULL: the
 * allocation aborts on failure, xalloc.h). */
char *utf8_sanitize(const unsigned char *s, size_t n, size_t *ret_len);

#endif
