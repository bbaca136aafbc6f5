/* limits.c: resource values a sandbox_create may ask for (memory) and the
 * bash yield clamp. Pure functions. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

int policy_memory_parse(const char *text, int64_t *ret_bytes, struct cp_error **err)
{
	const char *hint = "use a number with an optional unit b, k, m or g, for example \"512m\" or \"4g\"";
	if (!text || !*text || !isdigit((unsigned char)text[0]))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "memory '%s' is not a size; %s", text ? text : "",
		                    hint);
	errno = 0;
	char *end = NULL;
	unsigned long long n = strtoull(text, &end, 10);
	if (errno)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "memory '%s' is too large; %s", text, hint);
	long long mult = 1;
	switch (tolower((unsigned char)*end)) {
	case '\0': break;
	case 'b':
		mult = 1;
		end++;
		break;
	case 'k':
		mult = 1024;
		end++;
		break;
	case 'm':
		mult = 1024 * 1024;
		end++;
		break;
	case 'g':
		mult = 1024LL * 1024 * 1024;
		end++;
		break;
	default: return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "memory '%s' has an unknown unit; %s", text, hint);
	}
	if (mult > 1 && tolower((unsigned char)*end) == 'b')
		end++;
	if (*end)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "memory '%s' is not a size; %s", text, hint);
	if (n > (unsigned long long)(POLICY_MEMORY_MAX_BYTES / mult) || (long long)n * mult > POLICY_MEMORY_MAX_BYTES)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "memory '%s' is above the 1024g maximum", text);
	if ((long long)n * mult < POLICY_MEMORY_MIN_BYTES)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "memory '%s' is below the engine's 6m minimum; ask for at least \"6m\"", text);
	*ret_bytes = (int64_t)n * mult;
	return 0;
}

int64_t policy_yield_clamp(int64_t requested_ms, int64_t default_ms, int64_t max_ms)
{
	int64_t v = requested_ms < 0 ? default_ms : requested_ms;
	if (v > max_ms)
		v = max_ms;
	if (v < 0)
		v = 0;
	return v;
}
