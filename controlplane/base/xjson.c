/* xjson.c: the abort-on-failure json-c constructors of xjson.h. */
#include "xjson.h"

#include "xalloc.h"

static struct json_object *checked(struct json_object *o)
{
	if (!o)
		cp_oom();
	return o;
}

struct json_object *xjson_object(void)
{
	return checked(json_object_new_object());
}

struct json_object *xjson_array(void)
{
	return checked(json_object_new_array());
}

struct json_object *xjson_string(const char *s)
{
	return s ? checked(json_object_new_string(s)) : NULL;
}

struct json_object *xjson_string_len(const char *s, size_t len)
{
	return checked(json_object_new_string_len(s, (int)len));
}

struct json_object *xjson_int64(int64_t v)
{
	return checked(json_object_new_int64(v));
}

struct json_object *xjson_double(double v)
{
	return checked(json_object_new_double(v));
}

struct json_object *xjson_bool(bool v)
{
	return checked(json_object_new_boolean(v));
}

void xjson_add(struct json_object *obj, const char *key, struct json_object *val)
{
	if (json_object_object_add(obj, key, val) < 0)
		cp_oom();
}

void xjson_append(struct json_object *arr, struct json_object *val)
{
	if (json_object_array_add(arr, val) < 0)
		cp_oom();
}

const char *xjson_text(struct json_object *obj, int flags)
{
	const char *s = json_object_to_json_string_ext(obj, flags);
	if (!s)
		cp_oom();
	return s;
}
