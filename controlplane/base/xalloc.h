/* xalloc.h: allocation that cannot fail (crun's xmalloc family).
 * Allocation failure is not an error path in chat2sbx: these functions
 * abort the process with one line on stderr instead of returning NULL, so
 * callers never test their result. Use them for every heap allocation in the
 * control plane and the CLI; json-c objects go through xjson.h. */
#ifndef CP_XALLOC_H
#define CP_XALLOC_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* Writes "chat2sbx: out of memory" to stderr and aborts. Never returns. */
_Noreturn void cp_oom(void);

/* malloc/calloc/realloc that abort on failure. A size of 0 still returns a
 * unique pointer that free() accepts. xcalloc checks n * size for overflow. */
void *xmalloc(size_t size) __attribute__((malloc, returns_nonnull));
void *xcalloc(size_t n, size_t size) __attribute__((malloc, returns_nonnull));
void *xrealloc(void *p, size_t size) __attribute__((returns_nonnull));

/* strdup/strndup that abort on failure. s NULL returns NULL (so optional
 * strings copy without a test); the caller owns the copy. */
char *xstrdup(const char *s) __attribute__((malloc));
char *xstrndup(const char *s, size_t n) __attribute__((malloc));

/* asprintf that aborts on failure; returns the new string (caller frees). */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2), malloc, returns_nonnull));
/* The same over a va_list (the caller's va_start/va_end around it). */
char *xvasprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0), malloc, returns_nonnull));

/* open_memstream that aborts on failure (it fails only when it cannot
 * allocate): a stream writing into *ret_buf, *ret_size (POSIX: both valid
 * after fflush or fclose; the caller frees *ret_buf after fclose). */
FILE *xopen_memstream(char **ret_buf, size_t *ret_size) __attribute__((returns_nonnull));

#endif
