/* hlog.c: log lines for the in-container helper. stderr only: stdout is the
 * JSON-RPC reply stream and must never carry anything else. One line per
 * event, formatted into a bounded buffer and written with a single write(2)
 * so lines from the helper never interleave. */
#include "hlog.h"

#include <stdarg.h>
#include <stdio.h>

#include "stderr_line.h"

bool hlog_debug_enabled;

void hlog_write(const char *level, const char *fmt, ...)
{
	char prefix[64];
	snprintf(prefix, sizeof prefix, "chat2sbx-helper: %s: ", level);
	va_list ap;
	va_start(ap, fmt);
	stderr_line(prefix, fmt, ap);
	va_end(ap);
}
