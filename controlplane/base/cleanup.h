/* cleanup.h: scope-bound ownership helpers (systemd/crun style).
 * A variable declared with _cleanup_(fn) is released by fn(&var) when it goes
 * out of scope; TAKE_PTR/TAKE_FD hand ownership out and leave NULL / -1 behind.
 * No project dependencies beyond libc and json-c's object type. */
#ifndef CP_CLEANUP_H
#define CP_CLEANUP_H

#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(fn) __attribute__((cleanup(fn)))

/* gcc 12's -fanalyzer loses a _cleanup_free_ variable's initializer on
 * some paths that pass its address to another function (it reports "use of
 * uninitialized value '*(void **)&var'" here for variables declared "= NULL";
 * gcc 13 no longer does). Only that one warning, and only in this function. */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wanalyzer-use-of-uninitialized-value"
#endif
static inline void cleanup_freep(void *p)
{
	free(*(void **)p);
}
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic pop
#endif
#define _cleanup_free_ _cleanup_(cleanup_freep)

static inline void cleanup_closep(int *fd)
{
	if (*fd >= 0)
		close(*fd);
}
#define _cleanup_close_ _cleanup_(cleanup_closep)

/* Returns the pointer and leaves NULL in the variable: ownership moves to the caller. */
#define TAKE_PTR(p)                                                                                                    \
	({                                                                                                             \
		__typeof__(p) _tp = (p);                                                                               \
		(p) = NULL;                                                                                            \
		_tp;                                                                                                   \
	})

/* Returns the descriptor and leaves -1 in the variable. */
#define TAKE_FD(fd)                                                                                                    \
	({                                                                                                             \
		int _tf = (fd);                                                                                        \
		(fd) = -1;                                                                                             \
		_tf;                                                                                                   \
	})

/* json-c: one reference per parse/new; this drops it at scope exit. */
struct json_object;
extern int json_object_put(struct json_object *obj);
static inline void cleanup_json_putp(struct json_object **o)
{
	if (*o)
		json_object_put(*o);
}
#define _cleanup_json_ _cleanup_(cleanup_json_putp)

#endif
