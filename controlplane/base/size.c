/* size.c: sizes as the Docker CLI writes them, parsed exactly. Pure; no
 * project dependencies beyond the error object. */
#include "size.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>

int size_parse(const char *what, const char *text, int64_t min_bytes, int64_t max_bytes, int64_t *ret_bytes,
               struct cp_error **err)
{
	const char *hint = "use a number with an optional unit b, k, m or g, for example \"512m\", \"1.5g\" or \"4g\"";
	if (!text || !*text || !isdigit((unsigned char)text[0]))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "%s '%s' is not a size; %s", what, text ? text : "",
		                    hint);
	errno = 0;
	char *end = NULL;
	unsigned long long n = strtoull(text, &end, 10);
	if (errno)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "%s '%s' is too large; %s", what, text, hint);
	/* A fraction ("1.5g") is exact: up to 9 decimal digits, in nano-units. */
	unsigned long long frac = 0;
	int n_frac = 0;
	if (*end == '.') {
		for (end++; isdigit((unsigned char)*end); end++, n_frac++) {
			if (n_frac == 9)
				return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
				                    "%s '%s' has more than 9 decimal places; %s", what, text, hint);
			frac = frac * 10 + (unsigned)(*end - '0');
		}
		if (n_frac == 0)
			return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "%s '%s' is not a size; %s", what, text,
			                    hint);
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
	default: return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "%s '%s' has an unknown unit; %s", what, text, hint);
	}
	if (mult > 1 && tolower((unsigned char)*end) == 'b')
		end++;
	if (*end)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "%s '%s' is not a size; %s", what, text, hint);
	if (frac && mult == 1)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "%s '%s' is a fraction of a byte; use a whole number of bytes or a unit, e.g. "
		                    "\"1.5g\" or \"1536m\"",
		                    what, text);
	if (n > (unsigned long long)(max_bytes / mult) || (long long)n * mult > max_bytes)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "%s '%s' is above the %lldg maximum", what, text,
		                    (long long)(max_bytes >> 30));
	/* frac < 1e9 and mult <= 2^30, so frac * mult < 2^60 fits; rounded
	 * down to whole bytes. */
	long long bytes = (long long)n * mult + (long long)(frac * (unsigned long long)mult / 1000000000ULL);
	if (bytes > max_bytes)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "%s '%s' is above the %lldg maximum", what, text,
		                    (long long)(max_bytes >> 30));
	if (bytes < min_bytes)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "%s '%s' is below the %lldm minimum; ask for at least \"%lldm\"", what, text,
		                    (long long)(min_bytes >> 20), (long long)(min_bytes >> 20));
	*ret_bytes = bytes;
	return 0;
}
