/* args.h: validation of tool arguments. Every failure is INVALID_ARGUMENT with
 * a message that names the argument, says what was given and what is
 * expected, so a model can correct its call. Values are borrowed from args. */
#ifndef CP_TOOLS_ARGS_H
#define CP_TOOLS_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "../base/error.h"

struct json_object;

/* 1 when args holds name with a value other than null (null is "not given":
 * strict clients send it for every optional argument they leave out), with
 * the value (borrowed) in *ret_value when that is not NULL; else 0. */
int tool_args_given(struct json_object *args, const char *name, struct json_object **ret_value);
/* String argument. Absent (or null): required → error, else *ret = NULL. Wrong type, or
 * a NUL character inside (it would cut the value short) → error. */
int tool_args_string(struct json_object *args, const char *name, int required, const char **ret, struct cp_error **err);
/* Like tool_args_string, but the text may hold NUL characters (file content);
 * *ret_len (may be NULL) gets its length in bytes. */
int tool_args_text(struct json_object *args, const char *name, int required, const char **ret, size_t *ret_len,
                   struct cp_error **err);
/* Integer argument within [min, max]; absent → *ret = def. Wrong type or out
 * of range → error naming the range. */
int tool_args_int(struct json_object *args, const char *name, int64_t def, int64_t min, int64_t max, int64_t *ret,
                  struct cp_error **err);
/* Boolean argument; absent → def. */
int tool_args_bool(struct json_object *args, const char *name, int def, int *ret, struct cp_error **err);
/* Required id argument that must look like prefix + 20 base32 chars
 * ("sandbox_id" with "sbx_"); a malformed one says where to find real ids. */
int tool_args_id(struct json_object *args, const char *name, const char *prefix, const char *hint, const char **ret,
                 struct cp_error **err);
/* The common start of every sandbox tool: refuses unknown arguments (known is
 * NULL-terminated) and reads the required sandbox_id ("sbx_…"). */
int tool_args_sandbox(struct json_object *args, const char *const *known, const char **ret_sandbox_id,
                      struct cp_error **err);
/* Refuses arguments the tool does not know (typos must not pass silently).
 * known is NULL-terminated. */
int tool_args_only(struct json_object *args, const char *const *known, struct cp_error **err);

#endif
