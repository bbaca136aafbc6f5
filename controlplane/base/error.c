/* error.c: construction and formatting of struct cp_error. Owns nothing
 * global; never logs (who logs is the boundary's choice). */
#include "error.h"

#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int error_setv(struct cp_error **err, enum cp_error_code code, int errnum, const char *suffix, const char *fmt,
                      va_list ap)
{
	if (!err || *err)
		return -1;
	struct cp_error *e = xcalloc(1, sizeof(*e));
	e->code = code;
	e->errnum = errnum;
	char *msg = xvasprintf(fmt, ap);
	if (suffix) {
		char *full = xasprintf("%s: %s", msg, suffix);
		free(msg);
		msg = full;
	}
	e->message = msg;
	*err = e;
	return -1;
}

int cp_error_set(struct cp_error **err, enum cp_error_code code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	error_setv(err, code, 0, NULL, fmt, ap);
	va_end(ap);
	return -1;
}

int cp_error_set_errno(struct cp_error **err, enum cp_error_code code, int errnum, const char *fmt, ...)
{
	char buf[256];
	const char *s = strerror_r(errnum, buf, sizeof(buf));
	va_list ap;
	va_start(ap, fmt);
	error_setv(err, code, errnum, s, fmt, ap);
	va_end(ap);
	return -1;
}

int cp_error_prefix(struct cp_error **err, const char *fmt, ...)
{
	if (!err || !*err)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	char *prefix = xvasprintf(fmt, ap);
	va_end(ap);
	char *full = xasprintf("%s: %s", prefix, (*err)->message);
	free((*err)->message);
	(*err)->message = full;
	free(prefix);
	return -1;
}

int cp_error_set_detail(struct cp_error **err, enum cp_error_detail detail)
{
	if (err && *err)
		(*err)->detail = detail;
	return -1;
}

void cp_error_free(struct cp_error *e)
{
	if (!e)
		return;
	free(e->message);
	free(e);
}

const char *cp_error_code_name(enum cp_error_code code)
{
	switch (code) {
	case CP_ERR_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
	case CP_ERR_NOT_FOUND: return "NOT_FOUND";
	case CP_ERR_CONFLICT: return "CONFLICT";
	case CP_ERR_DENIED: return "DENIED";
	case CP_ERR_APPROVAL_REQUIRED: return "APPROVAL_REQUIRED";
	case CP_ERR_UNAVAILABLE: return "UNAVAILABLE";
	case CP_ERR_TIMEOUT: return "TIMEOUT";
	case CP_ERR_LIMIT: return "LIMIT";
	case CP_ERR_INTERNAL: return "INTERNAL";
	}
	return "INTERNAL";
}

int cp_error_exit_status(enum cp_error_code code)
{
	switch (code) {
	case CP_ERR_INVALID_ARGUMENT: return 2;
	case CP_ERR_NOT_FOUND: return 3;
	case CP_ERR_CONFLICT: return 4;
	case CP_ERR_DENIED:
	case CP_ERR_APPROVAL_REQUIRED: return 5;
	case CP_ERR_UNAVAILABLE: return 6;
	case CP_ERR_TIMEOUT: return 7;
	case CP_ERR_LIMIT: return 8;
	case CP_ERR_INTERNAL: return 1;
	}
	return 1;
}
