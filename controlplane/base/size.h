/* size.h: a size as the Docker CLI writes it ("512m", "1.5g"), parsed
 * exactly (no floating point). Shared by the settings loader (config/) and
 * the limits a request asks for (policy/). */
#ifndef CP_SIZE_H
#define CP_SIZE_H

#include <stdint.h>

#include "error.h"

/* Parses text: digits, an optional fraction of at most 9 digits, then an
 * optional unit b, k, m or g (binary multiples, case-insensitive, an
 * optional trailing "b" as in "512mb"). what names the value in messages
 * ("memory", "CHAT2SBX_DEFAULT_DISK"); the result must lie in
 * [min_bytes, max_bytes]. On success *ret_bytes gets the size rounded down to
 * whole bytes; on failure INVALID_ARGUMENT naming what, the text and the
 * accepted form or range, and *ret_bytes is untouched. Pure. */
int size_parse(const char *what, const char *text, int64_t min_bytes, int64_t max_bytes, int64_t *ret_bytes,
               struct cp_error **err);

#endif
