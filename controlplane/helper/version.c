/* version.c: the helper/control-plane version rule (template/helper/proto.h
 * at PROTO_VERSION_NUM; docs/operations.md, "Upgrades"). A sandbox that
 * keeps running across an upgrade keeps the helper it was started with
 * (the binary is bind-mounted when its container is created), so the
 * control plane must tell a helper it still speaks to from one it does not.
 * The answer comes from inside the sandbox: anything may be in it. */
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "../../template/helper/proto.h"
#include "helper.h"

/* The protocol number written in s: 1-9 decimal digits, nothing else; -1 otherwise. */
static long parse_version(const char *s, size_t len)
{
	if (len == 0 || len > 9)
		return -1;
	long v = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

/* Writes a printable, bounded copy of what the helper said into out. */
static void quote(const char *s, size_t len, char *out, size_t size)
{
	size_t o = 0;
	for (size_t i = 0; i < len && i < 40 && o + 1 < size; i++)
		out[o++] = (s[i] >= 0x20 && s[i] < 0x7f && s[i] != '\'') ? s[i] : '?';
	out[o] = '\0';
}

int helper_version_check(struct json_object *hello, int *ret_version, struct cp_error **err)
{
	struct json_object *v = NULL;
	if (!hello || !json_object_object_get_ex(hello, "version", &v) || !json_object_is_type(v, json_type_string)) {
		cp_error_set(
		    err, CP_ERR_CONFLICT,
		    "its helper did not say which protocol it speaks (no \"version\" string in its hello); this "
		    "control plane accepts protocol %d to %d",
		    PROTO_HOST_MIN, PROTO_VERSION_NUM);
		return cp_error_set_detail(err, CP_DETAIL_HELPER_VERSION);
	}
	const char *s = json_object_get_string(v);
	size_t len = (size_t)json_object_get_string_len(v);
	long n = parse_version(s, len);
	if (n >= PROTO_HOST_MIN && n <= PROTO_VERSION_NUM) {
		if (ret_version)
			*ret_version = (int)n;
		return 0;
	}
	char said[48];
	quote(s, len, said, sizeof(said));
	if (n < 0)
		cp_error_set(err, CP_ERR_CONFLICT,
		             "its helper said it speaks protocol '%s'%s, which is not a protocol number; this control "
		             "plane accepts protocol %d to %d",
		             said, len > 40 ? " (cut)" : "", PROTO_HOST_MIN, PROTO_VERSION_NUM);
	else
		cp_error_set(
		    err, CP_ERR_CONFLICT,
		    "its helper speaks protocol %ld, this control plane accepts %d to %d (the helper is %s than "
		    "this chat2sbx)",
		    n, PROTO_HOST_MIN, PROTO_VERSION_NUM, n < PROTO_HOST_MIN ? "older" : "newer");
	return cp_error_set_detail(err, CP_DETAIL_HELPER_VERSION);
}
