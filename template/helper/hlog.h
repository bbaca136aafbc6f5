/* hlog.h: the helper's log lines on stderr (stdout carries only replies). */
#ifndef CHAT2SBX_HELPER_HLOG_H
#define CHAT2SBX_HELPER_HLOG_H

#include <stdbool.h>

extern bool hlog_debug_enabled;

/* Write one line "chat2sbx-helper: LEVEL: message" to stderr. Never fails
 * visibly (a lost log line is not an error); does not block on a full pipe
 * for long since stderr is the container's log stream. */
void hlog_write(const char *level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define hlog_error(...) hlog_write("error", __VA_ARGS__)
#define hlog_warn(...) hlog_write("warn", __VA_ARGS__)
#define hlog_info(...) hlog_write("info", __VA_ARGS__)
#define hlog_debug(...)                                                                                                \
	do {                                                                                                           \
		if (hlog_debug_enabled)                                                                                \
			hlog_write("debug", __VA_ARGS__);                                                              \
	} while (0)

#endif
