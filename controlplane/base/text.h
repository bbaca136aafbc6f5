/* text.h: making text from outside safe to quote in a message. */
#ifndef CP_TEXT_H
#define CP_TEXT_H

#include <stddef.h>

/* Copies at most max bytes of s into buf (size bytes, NUL-terminated) as
 * valid UTF-8: a character is never cut in half, and invalid bytes and
 * control characters become '?'. Appends "…" when s was longer. Returns buf.
 * Use it whenever client-provided text is echoed in a reply or a log line
 * (a JSON reply must be valid UTF-8: RFC 8259, section 8.1). */
char *text_clip(const char *s, size_t max, char *buf, size_t size);

#endif
