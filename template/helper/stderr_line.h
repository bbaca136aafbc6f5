/* stderr_line.h: one log line on stderr, written by the helper (hlog.c)
 * and the vm launcher (template/vm/src/util.c) alike: formatted into a
 * bounded buffer (1 KiB; longer text is clipped) and written with a single
 * write(2), so lines of concurrent writers never interleave. Header-only:
 * the two programs are built and linked apart. */
#ifndef CHAT2SBX_STDERR_LINE_H
#define CHAT2SBX_STDERR_LINE_H

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

/* Writes PREFIX (e.g. "chat2sbx-helper: warn: "), then FMT with AP, then a
 * newline. Never fails: a short or failed write is dropped (stderr is the
 * last place to report it). */
static inline void stderr_line(const char *prefix, const char *fmt, va_list ap)
{
	char line[1024];
	int n = snprintf(line, sizeof line, "%s", prefix);
	if (n < 0)
		n = 0;
	if ((size_t)n > sizeof line - 2)
		n = (int)sizeof line - 2;
	int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
	size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
	if (len > sizeof line - 2)
		len = sizeof line - 2;
	line[len++] = '\n';
	ssize_t w = write(STDERR_FILENO, line, len);
	(void)w;
}

#endif
