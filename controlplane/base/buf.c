/* buf.c: bounded growable buffer. */
#include "buf.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

void cp_buf_init(struct cp_buf *b, size_t max)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max;
}

int cp_buf_append(struct cp_buf *b, const void *data, size_t len)
{
	if (len > b->max || b->len > b->max - len)
		return -1;
	if (b->len + len + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + len + 1)
			cap *= 2;
		b->data = xrealloc(b->data, cap);
		b->cap = cap;
	}
	if (len)
		memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
	return 0;
}

void cp_buf_consume(struct cp_buf *b, size_t n)
{
	if (n >= b->len) {
		b->len = 0;
		if (b->data)
			b->data[0] = '\0';
		return;
	}
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
	b->data[b->len] = '\0';
}

char *cp_buf_steal(struct cp_buf *b)
{
	char *p = b->data;
	b->data = NULL;
	b->len = b->cap = 0;
	return p;
}

void cp_buf_free(struct cp_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}
