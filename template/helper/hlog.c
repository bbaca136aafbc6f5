/* hlog.c: log lines for the in-container helper. stderr only: stdout is the
 * JSON-RPC reply stream and must never carry anything else. One line per
 * event, formatted into a bounded buffer and written with a single write(2)
 * so lines from the helper never interleave. */
#include "hlog.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

bool hlog_debug_enabled;

void hlog_write(const char *level, const char *fmt, ...)
{
	char line[1024];
	int n = snprintf(line, sizeof line, "chat2sbx-helper: %s: ", level);
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
	va_end(ap);
	size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
	if (len > sizeof line - 2)
		len = sizeof line - 2;
	line[len++] = '\n';
	ssize_t w = write(STDERR_FILENO, line, len);
	(void)w;
}
