/* error.h: the project's error object (after crun's libcrun_error_t).
 * A fallible function returns int (>= 0 success, < 0 failure) and fills
 * *err once, at the failure site; callers may prefix context on the way up.
 * Only boundaries (MCP dispatch, the CLI, main) consume and free errors. */
#ifndef CP_ERROR_H
#define CP_ERROR_H

#include <stdarg.h>

enum cp_error_code {
	CP_ERR_INVALID_ARGUMENT = 1,
	CP_ERR_NOT_FOUND,
	CP_ERR_CONFLICT,
	CP_ERR_DENIED,
	CP_ERR_APPROVAL_REQUIRED,
	CP_ERR_UNAVAILABLE,
	CP_ERR_TIMEOUT,
	CP_ERR_LIMIT,
	CP_ERR_INTERNAL,
};

/* A cause finer than the code, set at the failure site by the layer that
 * understood it (docker/ parses the engine's reply), so callers test it
 * instead of scraping another layer's message text. */
enum cp_error_detail {
	CP_DETAIL_NONE = 0,
	CP_DETAIL_PORT_IN_USE,         /* a host port is taken ("port is already allocated", EADDRINUSE) */
	CP_DETAIL_ALREADY_EXISTS,      /* the name or endpoint exists already */
	CP_DETAIL_ALREADY_ATTACHED,    /* the container is already on that network */
	CP_DETAIL_NO_SPACE,            /* the engine's disk is full (ENOSPC) */
	CP_DETAIL_REMOVAL_IN_PROGRESS, /* another DELETE of the container is under way */
	CP_DETAIL_ENGINE_UNREACHABLE,  /* no connection to the engine's socket; errnum says why (ENOENT: no socket) */
	CP_DETAIL_HELPER_VERSION,      /* a helper speaks a protocol this control plane does not (helper/version.c) */
};

struct cp_error {
	enum cp_error_code code;
	char *message;               /* owned; never NULL once set */
	int errnum;                  /* errno at the failure site (cp_error_set_errno), else 0 */
	enum cp_error_detail detail; /* CP_DETAIL_NONE unless the failure site knew more */
};

/* Sets *err (when err is not NULL and *err is still NULL) to a new error with
 * code and a printf-style message. Returns -1 so call sites can
 * `return cp_error_set(err, ...)`. Never leaves *err NULL: allocation
 * failure aborts (xalloc.h), so callers may always read (*err)->message. */
int cp_error_set(struct cp_error **err, enum cp_error_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Like cp_error_set, appending ": strerror(errnum)" and keeping errnum in
 * (*err)->errnum so callers test the cause, not the text. Returns -1. */
int cp_error_set_errno(struct cp_error **err, enum cp_error_code code, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Prefixes context to an existing error: "<prefix>: <old message>". No-op when
 * err or *err is NULL. Returns -1. */
int cp_error_prefix(struct cp_error **err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Sets the detail of an error just made at the failure site. No-op when err
 * or *err is NULL. Returns -1. */
int cp_error_set_detail(struct cp_error **err, enum cp_error_detail detail);

/* Frees an error; accepts NULL. */
void cp_error_free(struct cp_error *e);
static inline void cp_error_freep(struct cp_error **e)
{
	cp_error_free(*e);
	*e = 0;
}
#define _cleanup_error_ __attribute__((cleanup(cp_error_freep)))

/* Stable upper-snake name of a code ("NOT_FOUND"); never NULL. */
const char *cp_error_code_name(enum cp_error_code code);

/* CLI exit status for a code (the mapping is documented in docs/operations.md: 2 invalid
 * input, 3 not found, 4 conflict, 5 denied/approval, 6 unavailable, 7 timeout,
 * 8 limit, 1 internal). */
int cp_error_exit_status(enum cp_error_code code);

#endif
