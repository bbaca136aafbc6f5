/* log.h: one line per event on stderr. Levels are checked before formatting.
 * Debug is enabled per component (log_set_debug("docker,mcp") or "all").
 * Inner modules log at debug only; boundaries log at info and above. */
#ifndef CP_LOG_H
#define CP_LOG_H

#include <stddef.h>

enum log_level { LOG_LEVEL_ERROR, LOG_LEVEL_WARN, LOG_LEVEL_INFO, LOG_LEVEL_DEBUG };

/* Sets the minimum level printed (default INFO). Not thread-safe: call at start. */
void log_set_level(enum log_level level);
/* Comma-separated components with debug enabled ("all" for every one); the
 * string is copied. Not thread-safe: call at start. */
void log_set_debug(const char *components);
/* Emit JSON lines instead of text when on. */
void log_set_json(int on);
/* True when a line at level for component would be printed. */
int log_enabled(enum log_level level, const char *component);
/* Formats and writes one line (thread-safe; a single write(2)). */
void log_emit(enum log_level level, const char *component, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* One field of a structured line: a string (str, NULL prints "-") or, when
 * is_num, the number num. */
struct log_field {
	const char *key;
	const char *str;
	long long num;
	int is_num;
};

/* Writes one structured line: in text mode "event key=value ...", in JSON
 * mode (log_set_json) an object with ts, level, component, msg = event and
 * one member per field (numbers as numbers). Strings are written as given in
 * text mode, so callers pass words without spaces or newlines; JSON mode
 * escapes them. Thread-safe; a single write(2). */
void log_fields(enum log_level level, const char *component, const char *event, const struct log_field *fields,
                size_t n);

struct cp_error;

/* The one way a boundary consumes an error it does not return (systemd's
 * "who logs"): writes one line at level for component, "<context>: <message>"
 * (context printf-style; NULL fmt logs the message alone), then frees *err
 * and sets it NULL. The error is released even when the level is not
 * printed. No-op when err or *err is NULL. Thread-safe as log_emit. */
void cp_error_log_free(enum log_level level, const char *component, struct cp_error **err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define log_error(c, ...) log_emit(LOG_LEVEL_ERROR, c, __VA_ARGS__)
#define log_warn(c, ...) log_emit(LOG_LEVEL_WARN, c, __VA_ARGS__)
#define log_info(c, ...) log_emit(LOG_LEVEL_INFO, c, __VA_ARGS__)
#define log_debug(c, ...)                                                                                              \
	do {                                                                                                           \
		if (log_enabled(LOG_LEVEL_DEBUG, c))                                                                   \
			log_emit(LOG_LEVEL_DEBUG, c, __VA_ARGS__);                                                     \
	} while (0)

#endif
