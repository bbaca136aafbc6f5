/* xalloc.c: the abort-on-failure allocators of xalloc.h. */
#include "xalloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

_Noreturn void cp_oom(void)
{
	static const char msg[] = "chat2sbx: out of memory\n";
	/* write(2), not stdio: stdio may itself need to allocate. */
	ssize_t n = write(STDERR_FILENO, msg, sizeof(msg) - 1);
	(void)n;
	abort();
}

void *xmalloc(size_t size)
{
	void *p = malloc(size ? size : 1);
	if (!p)
		cp_oom();
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		cp_oom();
	return p;
}

void *xrealloc(void *p, size_t size)
{
	void *q = realloc(p, size ? size : 1);
	if (!q)
		cp_oom();
	return q;
}

char *xstrdup(const char *s)
{
	if (!s)
		return NULL;
	char *d = strdup(s);
	if (!d)
		cp_oom();
	return d;
}

char *xstrndup(const char *s, size_t n)
{
	if (!s)
		return NULL;
	char *d = strndup(s, n);
	if (!d)
		cp_oom();
	return d;
}

char *xvasprintf(const char *fmt, va_list ap)
{
	char *s = NULL;
	if (vasprintf(&s, fmt, ap) < 0)
		cp_oom();
	return s;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = xvasprintf(fmt, ap);
	va_end(ap);
	return s;
}

FILE *xopen_memstream(char **ret_buf, size_t *ret_size)
{
	FILE *f = open_memstream(ret_buf, ret_size);
	if (!f)
		cp_oom();
	return f;
}
