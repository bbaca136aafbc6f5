/* limits.c: resource values a sandbox_create may ask for (memory, cpus,
 * pids) and the bash yield clamp. Pure functions. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

int policy_memory_parse(const char *text, int64_t *ret_bytes, struct cp_error **err)
{
	const char *hint = "use a number with an optional unit b, k, m or g, for example \"512m\", \"1.5g\" or \"4g\"";
	if (!text || !*text || !isdigit((unsigned char)text[0]))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "memory '%s' is not a size; %s", text ? text : "",
		                    hint);
	errno = 0;
	char *end = NULL;
	unsigned long long n = strtoull(text, &end, 10);
	if (errno)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "memory '%s' is too large; %s", text, hint);
	/* A fraction ("1.5g") is exact: up to 9 decimal digits, in nano-units. */
	unsigned long long frac = 0;
	int n_frac = 0;
	if (*end == '.') {
		for (end++; isdigit((unsigned char)*end); end++, n_frac++) {
			if (n_frac == 9)
				return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
				                    "memory '%s' has more than 9 decimal places; %s", text, hint);
			frac = frac * 10 + (unsigned)(*end - '0');
		}
		if (n_frac == 0)
			return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "memory '%s' is not a size; %s", text, hint);
		for (int i = n_frac; i < 9; i++)
			frac *= 10;
	}
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
	if (frac && mult == 1)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "memory '%s' is a fraction of a byte; use a whole number of bytes or a unit, e.g. "
		                    "\"1.5g\" or \"1536m\"",
		                    text);
	if (n > (unsigned long long)(POLICY_MEMORY_MAX_BYTES / mult) || (long long)n * mult > POLICY_MEMORY_MAX_BYTES)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "memory '%s' is above the 1024g maximum", text);
	/* frac < 1e9 and mult <= 2^30, so frac * mult < 2^60 fits; rounded
	 * down to whole bytes. */
	long long bytes = (long long)n * mult + (long long)(frac * (unsigned long long)mult / 1000000000ULL);
	if (bytes > POLICY_MEMORY_MAX_BYTES)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "memory '%s' is above the 1024g maximum", text);
	if (bytes < POLICY_MEMORY_MIN_BYTES)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "memory '%s' is below the engine's 6m minimum; ask for at least \"6m\"", text);
	*ret_bytes = bytes;
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

int policy_cpus_parse(const char *text, long host_cpus, int64_t *ret_nano_cpus, struct cp_error **err)
{
	const char *hint = "use a decimal number of CPUs such as \"1.5\" or \"2\"";
	if (!text || !*text)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "cpus '' is not a number; %s", hint);
	/* A negative number is a number, just not an allowed one. */
	if (text[0] == '-' && (isdigit((unsigned char)text[1]) || text[1] == '.'))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "cpus '%s' must be greater than 0; %s, or leave it out for no limit", text, hint);
	/* Digits, an optional '.', digits: no sign, exponent, hex or spaces, so
	 * the value is exact (no floating point). */
	const char *p = text;
	int64_t whole = 0, frac = 0;
	int n_whole = 0, n_frac = 0;
	for (; isdigit((unsigned char)*p); p++, n_whole++) {
		if (whole > 1000000)
			return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "cpus '%s' is too large; %s", text, hint);
		whole = whole * 10 + (*p - '0');
	}
	if (*p == '.')
		for (p++; isdigit((unsigned char)*p); p++, n_frac++) {
			if (n_frac == 9)
				return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
				                    "cpus '%s' has more than 9 decimal places; %s", text, hint);
			frac = frac * 10 + (*p - '0');
		}
	if (*p || n_whole + n_frac == 0)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "cpus '%s' is not a number; %s", text, hint);
	for (int i = n_frac; i < 9; i++)
		frac *= 10;
	int64_t nano = whole * 1000000000LL + frac;
	if (nano <= 0)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "cpus '%s' must be greater than 0; %s, or leave it out for no limit", text, hint);
	if (host_cpus > 0 && nano > (int64_t)host_cpus * 1000000000LL)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "cpus '%s' is more than the %ld CPU(s) of this machine; ask for at most \"%ld\"",
		                    text, host_cpus, host_cpus);
	*ret_nano_cpus = nano;
	return 0;
}

int policy_pids_check(int64_t pids_limit, struct cp_error **err)
{
	if (pids_limit < POLICY_PIDS_MIN || pids_limit > POLICY_PIDS_MAX)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "pids_limit %lld is outside the accepted range %d-%d (processes and threads in the "
		                    "sandbox); leave it out for the server's default",
		                    (long long)pids_limit, POLICY_PIDS_MIN, POLICY_PIDS_MAX);
	return 0;
}
