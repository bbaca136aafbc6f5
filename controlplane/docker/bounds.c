/* bounds.c: how much of an engine's answer is read. Another machine's
 * engine (a node, issue 28) writes these bytes, so every call reads no more
 * than its answer can need, and text kept from them is checked first. Pure
 * functions; transport.c applies them. */
#include "engine_internal.h"

#include <string.h>

#define KIB 1024u
#define MIB (1024u * 1024u)

/* The path without its query ("/containers/x/json?size=1" → length of
 * "/containers/x/json"). */
static size_t path_len(const char *path)
{
	const char *q = strchr(path, '?');
	return q ? (size_t)(q - path) : strlen(path);
}

/* Whether the path (query excluded) ends with suffix. */
static int path_ends(const char *path, size_t len, const char *suffix)
{
	size_t n = strlen(suffix);
	return len >= n && !memcmp(path + len - n, suffix, n);
}

/* Whether the path (query excluded) is prefix followed by one segment. */
static int one_below(const char *path, size_t len, const char *prefix)
{
	size_t n = strlen(prefix);
	return len > n && !memcmp(path, prefix, n) && !memchr(path + n, '/', len - n);
}

/* engine_internal.h has the table. */
size_t docker_response_max(const char *method, const char *path)
{
	if (!method || !path)
		return 256 * KIB;
	size_t len = path_len(path);
	if (!strcmp(method, "POST"))
		return !strncmp(path, "/exec/", 6) && path_ends(path, len, "/start") ? DOCKER_MAX_RESPONSE : 256 * KIB;
	if (strcmp(method, "GET") != 0)
		return 256 * KIB;
	if (len == 6 && !strncmp(path, "/_ping", 6))
		return 1 * KIB;
	if (len == 8 && !strncmp(path, "/version", 8))
		return 64 * KIB;
	if (len == 5 && !strncmp(path, "/info", 5))
		return 1 * MIB;
	if ((len == 16 && !strncmp(path, "/containers/json", 16)) || (len == 9 && !strncmp(path, "/networks", 9)) ||
	    (len == 8 && !strncmp(path, "/volumes", 8)))
		return 4 * MIB;
	/* One volume: its name, driver, mount point, labels and options. */
	if (one_below(path, len, "/volumes/"))
		return 64 * KIB;
	if (path_ends(path, len, "/json") || one_below(path, len, "/networks/"))
		return 1 * MIB;
	return 256 * KIB;
}

/* engine_internal.h. */
int docker_text_printable(const char *s, size_t max)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > max)
		return 0;
	for (const unsigned char *c = (const unsigned char *)s; *c; c++)
		if (*c < 0x20 || *c > 0x7e)
			return 0;
	return 1;
}
