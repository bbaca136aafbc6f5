/* log.c: the line logger behind log.h. Owns the level and debug component
 * list (set once at start); writes to stderr only, never to stdout (stdout is
 * the MCP stdio transport). */
#include "log.h"

#include "error.h"
#include "xjson.h"

#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static enum log_level min_level = LOG_LEVEL_INFO;
static char debug_components[256];
static int json_lines;

void log_set_level(enum log_level level)
{
	min_level = level;
}
void log_set_json(int on)
{
	json_lines = on;
}

void log_set_debug(const char *components)
{
	snprintf(debug_components, sizeof(debug_components), "%s", components ? components : "");
}

int log_enabled(enum log_level level, const char *component)
{
	if (level <= min_level)
		return 1;
	if (level != LOG_LEVEL_DEBUG || !debug_components[0])
		return 0;
	if (strcmp(debug_components, "all") == 0)
		return 1;
	size_t n = strlen(component);
	for (const char *p = debug_components; *p;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len == n && strncmp(p, component, n) == 0)
			return 1;
		if (!end)
			break;
		p = end + 1;
	}
	return 0;
}

static const char *level_name(enum log_level level)
{
	switch (level) {
	case LOG_LEVEL_ERROR: return "error";
	case LOG_LEVEL_WARN: return "warn";
	case LOG_LEVEL_INFO: return "info";
	case LOG_LEVEL_DEBUG: return "debug";
	}
	return "info";
}

static void emit_line(enum log_level level, const char *component, const char *msg, const struct log_field *fields,
                      size_t n_fields);

void log_emit(enum log_level level, const char *component, const char *fmt, ...)
{
	if (!log_enabled(level, component))
		return;
	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	emit_line(level, component, msg, NULL, 0);
}

void cp_error_log_free(enum log_level level, const char *component, struct cp_error **err, const char *fmt, ...)
{
	if (!err || !*err)
		return;
	if (log_enabled(level, component)) {
		char context[1024] = "";
		if (fmt) {
			va_list ap;
			va_start(ap, fmt);
			vsnprintf(context, sizeof(context), fmt, ap);
			va_end(ap);
		}
		log_emit(level, component, "%s%s%s", context, context[0] ? ": " : "", (*err)->message);
	}
	cp_error_freep(err);
}

void log_fields(enum log_level level, const char *component, const char *event, const struct log_field *fields,
                size_t n)
{
	if (!log_enabled(level, component))
		return;
	if (json_lines) {
		emit_line(level, component, event, fields, n);
		return;
	}
	char msg[2048];
	size_t used = (size_t)snprintf(msg, sizeof(msg), "%s", event);
	for (size_t i = 0; i < n && used < sizeof(msg); i++) {
		int k = fields[i].is_num
		            ? snprintf(msg + used, sizeof(msg) - used, " %s=%lld", fields[i].key, fields[i].num)
		            : snprintf(msg + used, sizeof(msg) - used, " %s=%s", fields[i].key,
		                       fields[i].str ? fields[i].str : "-");
		if (k < 0)
			break;
		used += (size_t)k;
	}
	emit_line(level, component, msg, NULL, 0);
}

static void emit_line(enum log_level level, const char *component, const char *msg, const struct log_field *fields,
                      size_t n_fields)
{

	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	char when[64];
	snprintf(when, sizeof(when), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
	         tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ts.tv_nsec / 1000000));

	char line[2400];
	int n;
	if (json_lines) {
		struct json_object *o = xjson_object();
		xjson_add(o, "ts", xjson_string(when));
		xjson_add(o, "level", xjson_string(level_name(level)));
		xjson_add(o, "component", xjson_string(component));
		xjson_add(o, "msg", xjson_string(msg));
		for (size_t i = 0; i < n_fields; i++)
			xjson_add(o, fields[i].key,
			          fields[i].is_num ? xjson_int64(fields[i].num)
			          : fields[i].str  ? xjson_string(fields[i].str)
			                           : NULL);
		n = snprintf(
		    line, sizeof(line), "%s\n",
		    json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	} else {
		n = snprintf(line, sizeof(line), "%s %-5s %s: %s\n", when, level_name(level), component, msg);
	}
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line)) {
		n = sizeof(line) - 1;
		line[n - 1] = '\n';
	}
	ssize_t w = write(STDERR_FILENO, line, (size_t)n);
	(void)w;
}
