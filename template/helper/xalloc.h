/* xalloc.h: allocation that cannot fail, for the helper (the same names and
 * contract as controlplane/base/xalloc.h; the helper is a separate static
 * binary that does not link controlplane/base). Allocation failure is not an
 * error path: these abort the helper with one line on stderr instead of
 * returning NULL, so callers never test their result. Sizes computed from
 * input are bounded by the caller before allocating, as before. */
#ifndef HELPER_XALLOC_H
#define HELPER_XALLOC_H

#include <stddef.h>

/* Writes "chat2sbx-helper: out of memory" to stderr (write(2)) and aborts. */
_Noreturn void cp_oom(void);

/* malloc/calloc/realloc that abort on failure. A size of 0 still returns a
 * unique pointer that free() accepts. xcalloc checks n * size for overflow. */
void *xmalloc(size_t size) __attribute__((malloc, returns_nonnull));
void *xcalloc(size_t n, size_t size) __attribute__((malloc, returns_nonnull));
void *xrealloc(void *p, size_t size) __attribute__((returns_nonnull));

/* strdup/strndup that abort on failure. s NULL returns NULL; the caller owns
 * the copy. */
char *xstrdup(const char *s) __attribute__((malloc));
char *xstrndup(const char *s, size_t n) __attribute__((malloc));

/* asprintf that aborts on failure; returns the new string (caller frees). */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2), malloc, returns_nonnull));

#endif
