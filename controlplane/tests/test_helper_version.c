/* test_helper_version.c: the helper/control-plane version rule
 * (helper/version.c, proto.h at PROTO_VERSION_NUM): the range is accepted,
 * an older or newer helper is refused saying which, and whatever a hostile
 * helper puts in "version" is refused without being echoed unbounded. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "helper/helper.h"
#include "proto.h"

static int check(const char *json, int *ret_version, struct cp_error **err)
{
	struct json_object *o = json_tokener_parse(json);
	cr_assert_not_null(o, "test JSON: %s", json);
	int r = helper_version_check(o, ret_version, err);
	json_object_put(o);
	return r;
}

static void refused(const char *json, const char *words)
{
	struct cp_error *err = NULL;
	int v = -7;
	cr_assert_eq(check(json, &v, &err), -1, "accepted: %s", json);
	cr_expect_eq(v, -7, "ret_version is set only on success");
	cr_assert_not_null(err);
	cr_expect_eq(err->code, CP_ERR_CONFLICT);
	cr_expect_eq(err->detail, CP_DETAIL_HELPER_VERSION);
	cr_expect(strstr(err->message, words) != NULL, "'%s' in: %s", words, err->message);
	cr_expect_lt(strlen(err->message), 400, "bounded: %s", err->message);
	cp_error_free(err);
}

Test(helper_version, every_version_in_the_range_is_accepted)
{
	cr_assert_leq(PROTO_HOST_MIN, PROTO_VERSION_NUM);
	cr_expect_str_eq(PROTO_VERSION, "1", "hello's string is PROTO_VERSION_NUM written out");
	for (int n = PROTO_HOST_MIN; n <= PROTO_VERSION_NUM; n++) {
		char json[64];
		snprintf(json, sizeof(json), "{\"version\":\"%d\",\"boot_id\":\"x\"}", n);
		struct cp_error *err = NULL;
		int v = 0;
		cr_expect_eq(check(json, &v, &err), 0, "%s", err ? err->message : "");
		cr_expect_eq(v, n);
		cp_error_free(err);
	}
}

Test(helper_version, this_builds_own_helper_is_accepted)
{
	struct cp_error *err = NULL;
	cr_expect_eq(check("{\"version\":\"" PROTO_VERSION "\"}", NULL, &err), 0);
	cp_error_free(err);
}

Test(helper_version, older_and_newer_helpers_are_refused_saying_which)
{
	char json[64];
	snprintf(json, sizeof(json), "{\"version\":\"%d\"}", PROTO_HOST_MIN - 1);
	refused(json, "older than this chat2sbx");
	snprintf(json, sizeof(json), "{\"version\":\"%d\"}", PROTO_VERSION_NUM + 1);
	refused(json, "newer than this chat2sbx");
	refused("{\"version\":\"999999999\"}", "newer");
}

Test(helper_version, a_missing_or_mistyped_version_is_refused)
{
	refused("{\"boot_id\":\"x\"}", "did not say which protocol");
	refused("{\"version\":1}", "did not say which protocol");
	refused("{\"version\":null}", "did not say which protocol");
	struct cp_error *err = NULL;
	cr_expect_eq(helper_version_check(NULL, NULL, &err), -1);
	cr_expect_eq(err->detail, CP_DETAIL_HELPER_VERSION);
	cp_error_free(err);
}

Test(helper_version, garbage_from_a_hostile_helper_is_refused_and_not_echoed_whole)
{
	refused("{\"version\":\"\"}", "not a protocol number");
	refused("{\"version\":\"1 \"}", "not a protocol number");
	refused("{\"version\":\"-1\"}", "not a protocol number");
	refused("{\"version\":\"+1\"}", "not a protocol number");
	refused("{\"version\":\"0x1\"}", "not a protocol number");
	refused("{\"version\":\"1234567890\"}", "not a protocol number"); /* would overflow a narrow parse */
	refused("{\"version\":\"1\\u0000\"}", "not a protocol number");   /* a NUL after the digits */
	refused("{\"version\":\"\\u001b[31mred'quote\"}", "?[31mred?quote");
	char json[400];
	snprintf(json, sizeof(json), "{\"version\":\"%0300d\"}", 1);
	refused(json, "(cut)");
}
