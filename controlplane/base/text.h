/* text.h: making text from outside safe to quote in a message. */
#ifndef CP_TEXT_H
#define CP_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* Copies at most max bytes of s into buf (size bytes, NUL-terminated) as
 * valid UTF-8: a character is never cut in half, and invalid bytes and
 * control characters become '?'. Appends "…" when s was longer. Returns buf.
 * Use it whenever client-provided text is echoed in a reply or a log line
 * (a JSON reply must be valid UTF-8: RFC 8259, section 8.1). */
char *text_clip(const char *s, size_t max, char *buf, size_t size);

/* Decodes the UTF-8 sequence at p (avail bytes left) into *ret_cp and
 * returns its length (1-4), or 0 when it is not valid UTF-8 (RFC 3629: no
 * overlong form, no surrogate, nothing above U+10FFFF; *ret_cp untouched). */
size_t text_utf8_decode(const unsigned char *p, size_t avail, uint32_t *ret_cp);

/* 1 when code point cp shows nothing or misleads on a terminal: C1
 * controls, bidi controls (U+202A-202E, U+2066-2069, U+200E/200F, U+061C:
 * CVE-2021-42574), zero-width and other default-ignorable characters, and
 * the ones that look like a space. ASCII controls are not included (test
 * them apart). Pure. */
int text_invisible(uint32_t cp);

/* s (len bytes, any bytes) as one shell word that bash, zsh and ksh read
 * back as exactly those bytes and that never runs anything: unquoted when
 * it is only [A-Za-z0-9_@%+=:,./-] (and not empty); '...' (each ' as '\'')
 * when it holds no control byte, invalid UTF-8 or text_invisible
 * character; otherwise $'...' with those bytes as \xHH, so the person sees
 * them. Caller frees. Pure. */
char *text_shell_quote(const char *s, size_t len);

#endif
