/* xjson.h: json-c constructors that cannot fail (see xalloc.h).
 * json-c returns NULL (or -1) when it cannot allocate; these abort instead,
 * so building a reply never needs an out-of-memory branch. Ownership follows
 * json-c: a new object carries one reference, owned by the caller, and
 * xjson_add/xjson_append take the value's reference. */
#ifndef CP_XJSON_H
#define CP_XJSON_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct json_object *xjson_object(void) __attribute__((returns_nonnull));
struct json_object *xjson_array(void) __attribute__((returns_nonnull));
/* s NULL gives JSON null (a NULL json_object pointer), as json-c treats it. */
struct json_object *xjson_string(const char *s);
struct json_object *xjson_string_len(const char *s, size_t len) __attribute__((returns_nonnull));
struct json_object *xjson_int64(int64_t v) __attribute__((returns_nonnull));
struct json_object *xjson_double(double v) __attribute__((returns_nonnull));
struct json_object *xjson_bool(bool v) __attribute__((returns_nonnull));

/* json_object_object_add, aborting when json-c cannot allocate the entry.
 * obj must be an object; val (NULL for JSON null) is owned by obj after. */
void xjson_add(struct json_object *obj, const char *key, struct json_object *val);
/* json_object_array_add, aborting on allocation failure; takes val. */
void xjson_append(struct json_object *arr, struct json_object *val);
/* json_object_to_json_string_ext that aborts instead of returning NULL. The
 * text is owned by obj and valid until obj changes or is freed. */
const char *xjson_text(struct json_object *obj, int flags) __attribute__((returns_nonnull));

#endif
