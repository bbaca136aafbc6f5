/* buf.h: a growable byte buffer with a hard maximum (after curl's dynbuf).
 * Every buffer filled from outside has a maximum; hitting it is reported. */
#ifndef CP_BUF_H
#define CP_BUF_H

#include <stddef.h>

struct cp_buf {
	char *data; /* owned; always NUL-terminated when non-NULL */
	size_t len;
	size_t cap;
	size_t max; /* bytes; appends that would exceed it fail */
};

/* Initializes an empty buffer that refuses to grow past max bytes. */
void cp_buf_init(struct cp_buf *b, size_t max);
/* Appends len bytes. Returns 0, or -1 when max would be exceeded (the buffer
 * is unchanged then). Out of memory aborts (xalloc.h). */
int cp_buf_append(struct cp_buf *b, const void *data, size_t len);
/* Drops the first n bytes (n <= len). */
void cp_buf_consume(struct cp_buf *b, size_t n);
/* Returns the data and resets the buffer; caller frees (may be NULL when empty). */
char *cp_buf_steal(struct cp_buf *b);
/* Frees the data; the buffer may be reused after cp_buf_init. */
void cp_buf_free(struct cp_buf *b);

#endif
