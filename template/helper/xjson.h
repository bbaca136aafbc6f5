/* xjson.h: the helper builds its replies with the control plane's json-c
 * constructors that cannot fail (controlplane/base/xjson.h: xjson_object,
 * xjson_array, xjson_string, xjson_string_len, xjson_int64, xjson_bool,
 * xjson_add, xjson_append, xjson_text; they abort through cp_oom when json-c
 * cannot allocate). The Makefile links controlplane/base/xjson.c into the
 * static helper. */
#ifndef HELPER_XJSON_H
#define HELPER_XJSON_H

#include "../../controlplane/base/xjson.h"

#endif
