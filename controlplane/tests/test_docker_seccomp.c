/* test_docker_seccomp.c: the sandbox seccomp profile builder (docker/seccomp.c)
 * on the embedded Docker 20.10.24 default and on small hand-written bases:
 * the mode syscalls leave the unconditional allow list and come back with
 * the S_ISUID|S_ISGID check on the right argument, openat2 and io_uring
 * answer ENOSYS, every other rule is untouched, and bad bases are refused
 * with a message that says what is wrong. */
#include <criterion/criterion.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "docker/docker.h"

/* The mode argument of each syscall, from the kernel's SYSCALL_DEFINEs
 * (fs/open.c, fs/namei.c), stated here independently of the builder. */
static const struct {
	const char *name;
	int index;
} mode_args[] = {{"chmod", 1},  {"fchmod", 1}, {"fchmodat", 2}, {"fchmodat2", 2}, {"open", 2},
                 {"openat", 3}, {"creat", 1},  {"mknod", 1},    {"mknodat", 2}};
static const char *const refused[] = {"openat2", "io_uring_setup", "io_uring_enter", "io_uring_register"};
#define N(a) (sizeof(a) / sizeof((a)[0]))

static int is_transformed(const char *name)
{
	for (size_t i = 0; i < N(mode_args); i++)
		if (!strcmp(name, mode_args[i].name))
			return 1;
	for (size_t i = 0; i < N(refused); i++)
		if (!strcmp(name, refused[i]))
			return 1;
	return 0;
}

static struct json_object *build_ok(const char *base)
{
	char *out = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(docker_seccomp_profile_build(base, &out, &err), 0, "%s", err ? err->message : "");
	struct json_object *o = json_tokener_parse(out);
	cr_assert_not_null(o, "the result is JSON: %s", out);
	free(out);
	return o;
}

static void build_fails(const char *base, const char *fragment)
{
	char *out = NULL;
	struct cp_error *err = NULL;
	cr_assert_lt(docker_seccomp_profile_build(base, &out, &err), 0, "built from %s", base ? base : "NULL");
	cr_assert_null(out);
	cr_assert_not_null(err);
	cr_assert_eq(err->code, CP_ERR_INVALID_ARGUMENT, "%s", err->message);
	cr_assert_not_null(strstr(err->message, fragment), "'%s' in '%s'", fragment, err->message);
	cp_error_free(err);
}

static struct json_object *member(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;
	return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static int names_has(struct json_object *rule, const char *name)
{
	struct json_object *names = member(rule, "names");
	for (size_t k = 0; names && k < json_object_array_length(names); k++)
		if (!strcmp(json_object_get_string(json_object_array_get_idx(names, k)), name))
			return 1;
	const char *one = member(rule, "name") ? json_object_get_string(member(rule, "name")) : NULL;
	return one && !strcmp(one, name);
}

/* The rules of profile that name `name`; *ret_n how many; returns the last. */
static struct json_object *rules_naming(struct json_object *profile, const char *name, size_t *ret_n)
{
	struct json_object *rules = member(profile, "syscalls"), *last = NULL;
	*ret_n = 0;
	for (size_t i = 0; i < json_object_array_length(rules); i++)
		if (names_has(json_object_array_get_idx(rules, i), name)) {
			last = json_object_array_get_idx(rules, i);
			(*ret_n)++;
		}
	return last;
}

/* The one rule of profile that names `name`. */
static struct json_object *the_rule(struct json_object *profile, const char *name)
{
	size_t n = 0;
	struct json_object *r = rules_naming(profile, name, &n);
	cr_assert_eq(n, 1, "%s is named by exactly one rule (%zu)", name, n);
	return r;
}

static void assert_mode_rule(struct json_object *rule, const char *name, int index)
{
	struct json_object *names = member(rule, "names"), *args = member(rule, "args");
	cr_assert_eq(json_object_array_length(names), 1, "%s has a rule of its own", name);
	cr_assert_str_eq(json_object_get_string(member(rule, "action")), "SCMP_ACT_ALLOW");
	cr_assert_not_null(args, "%s has args", name);
	struct json_object *a = json_object_array_get_idx(args, json_object_array_length(args) - 1);
	cr_assert_eq(json_object_get_int(member(a, "index")), index, "%s: mode is argument %d", name, index);
	cr_assert_eq(json_object_get_int64(member(a, "value")), 06000, "%s: mask S_ISUID|S_ISGID", name);
	cr_assert_eq(json_object_get_int64(member(a, "valueTwo")), 0, "%s: neither bit", name);
	cr_assert_str_eq(json_object_get_string(member(a, "op")), "SCMP_CMP_MASKED_EQ");
}

Test(docker_seccomp, default_profile_allows_modes_only_without_setid_bits)
{
	struct json_object *p = build_ok(docker_seccomp_default_profile());
	for (size_t i = 0; i < N(mode_args); i++) {
		size_t n = 0;
		struct json_object *rule = rules_naming(p, mode_args[i].name, &n);
		if (!strcmp(mode_args[i].name, "fchmodat2")) {
			/* Not in 20.10's list: it stays refused, never added. */
			cr_assert_eq(n, 0, "fchmodat2 is named by %zu rules", n);
			continue;
		}
		cr_assert_eq(n, 1, "%s is named by exactly one rule (%zu)", mode_args[i].name, n);
		assert_mode_rule(rule, mode_args[i].name, mode_args[i].index);
		cr_assert_eq(json_object_array_length(member(rule, "args")), 1, "%s: only the mode check",
		             mode_args[i].name);
		cr_assert_eq(json_object_object_length(member(rule, "includes")), 0);
		cr_assert_eq(json_object_object_length(member(rule, "excludes")), 0);
	}
	json_object_put(p);
}

Test(docker_seccomp, openat2_and_io_uring_answer_enosys)
{
	struct json_object *p = build_ok(docker_seccomp_default_profile());
	for (size_t i = 0; i < N(refused); i++) {
		size_t n = 0;
		struct json_object *rule = rules_naming(p, refused[i], &n);
		cr_assert_eq(n, 1, "%s is named by exactly one rule (%zu)", refused[i], n);
		cr_assert_str_eq(json_object_get_string(member(rule, "action")), "SCMP_ACT_ERRNO");
		cr_assert_eq(json_object_get_int(member(rule, "errnoRet")), ENOSYS);
		cr_assert_eq(json_object_array_length(member(rule, "args")), 0);
		cr_assert_null(member(rule, "includes"), "on every architecture and capability set");
	}
	json_object_put(p);
}

/* A rule with the transformed names taken out, or NULL when none is left. */
static struct json_object *without_transformed(struct json_object *rule)
{
	struct json_object *copy = NULL, *names = json_object_new_array();
	json_object_deep_copy(rule, &copy, NULL);
	struct json_object *old = member(rule, "names");
	for (size_t k = 0; k < json_object_array_length(old); k++) {
		const char *s = json_object_get_string(json_object_array_get_idx(old, k));
		if (!is_transformed(s))
			json_object_array_add(names, json_object_new_string(s));
	}
	if (json_object_array_length(names) == 0) {
		json_object_put(names);
		json_object_put(copy);
		return NULL;
	}
	json_object_object_add(copy, "names", names);
	return copy;
}

Test(docker_seccomp, every_other_rule_and_setting_is_kept)
{
	struct json_object *base = json_tokener_parse(docker_seccomp_default_profile());
	struct json_object *p = build_ok(docker_seccomp_default_profile());
	cr_assert(json_object_equal(member(base, "archMap"), member(p, "archMap")));
	cr_assert_str_eq(json_object_get_string(member(p, "defaultAction")), "SCMP_ACT_ERRNO");
	cr_assert_eq(json_object_object_length(p), json_object_object_length(base), "no top-level key added");

	/* The output's rules that are not chat2sbx's own, in order, are the
	 * base's with the transformed names taken out. */
	struct json_object *want = json_object_new_array(), *got = json_object_new_array();
	struct json_object *brules = member(base, "syscalls"), *prules = member(p, "syscalls");
	for (size_t i = 0; i < json_object_array_length(brules); i++) {
		struct json_object *r = without_transformed(json_object_array_get_idx(brules, i));
		if (r)
			json_object_array_add(want, r);
	}
	size_t own = 0;
	for (size_t i = 0; i < json_object_array_length(prules); i++) {
		struct json_object *r = json_object_array_get_idx(prules, i);
		const char *c = member(r, "comment") ? json_object_get_string(member(r, "comment")) : "";
		if (!strncmp(c, "chat2sbx:", 9)) {
			own++;
			continue;
		}
		json_object_array_add(got, json_object_get(r));
	}
	cr_assert(json_object_equal(want, got), "kept rules differ:\nwant %s\ngot  %s",
	          json_object_to_json_string(want), json_object_to_json_string(got));
	cr_assert_eq(own, 8 + 1, "one rule per allowed mode syscall and one for the refused ones (%zu)", own);
	/* The unconditional allow list still has the ordinary file calls. */
	size_t n = 0;
	cr_assert_not_null(rules_naming(p, "read", &n));
	cr_assert_not_null(rules_naming(p, "mkdirat", &n));
	json_object_put(want);
	json_object_put(got);
	json_object_put(base);
	json_object_put(p);
}

Test(docker_seccomp, conditional_rules_keep_their_conditions_and_gain_the_mode_check)
{
	struct json_object *p = build_ok(
	    "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"architectures\":[\"SCMP_ARCH_X86_64\"],\"syscalls\":["
	    "{\"names\":[\"getpid\",\"fchmodat\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":0,\"value\":"
	    "5,\"op\":\"SCMP_CMP_EQ\"}],\"includes\":{\"caps\":[\"CAP_FOWNER\"]},\"excludes\":{\"arches\":[\"x86\"]}},"
	    "{\"name\":\"creat\",\"action\":\"SCMP_ACT_LOG\"},"
	    "{\"name\":\"gettid\",\"action\":\"SCMP_ACT_ALLOW\"},"
	    "{\"names\":[\"chmod\",\"io_uring_enter\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":1}]}");
	size_t n = 0;
	struct json_object *r = the_rule(p, "fchmodat");
	assert_mode_rule(r, "fchmodat", 2);
	struct json_object *args = member(r, "args");
	cr_assert_eq(json_object_array_length(args), 2, "the base's condition stays (AND)");
	cr_assert_eq(json_object_get_int(member(json_object_array_get_idx(args, 0), "value")), 5);
	cr_assert_str_eq(json_object_to_json_string_ext(member(r, "includes"), JSON_C_TO_STRING_PLAIN),
	                 "{\"caps\":[\"CAP_FOWNER\"]}");
	cr_assert_str_eq(json_object_to_json_string_ext(member(r, "excludes"), JSON_C_TO_STRING_PLAIN),
	                 "{\"arches\":[\"x86\"]}");
	/* getpid stays in its own rule, conditions and all. */
	r = rules_naming(p, "getpid", &n);
	cr_assert_eq(json_object_array_length(member(r, "names")), 1);
	cr_assert_eq(json_object_array_length(member(r, "args")), 1);
	cr_assert_not_null(member(r, "includes"));
	/* "name" is read like "names"; LOG lets calls run, so it is checked too. */
	r = the_rule(p, "creat");
	cr_assert_str_eq(json_object_get_string(member(r, "action")), "SCMP_ACT_LOG");
	cr_assert_eq(json_object_get_int(member(json_object_array_get_idx(member(r, "args"), 0), "index")), 1);
	r = the_rule(p, "gettid");
	cr_assert_null(member(r, "name"), "written as names");
	/* A refusing rule keeps refusing chmod; io_uring leaves it for ENOSYS. */
	r = the_rule(p, "chmod");
	cr_assert_str_eq(json_object_get_string(member(r, "action")), "SCMP_ACT_ERRNO");
	cr_assert_eq(json_object_get_int(member(r, "errnoRet")), 1);
	cr_assert_eq(json_object_array_length(member(r, "names")), 1);
	r = the_rule(p, "io_uring_enter");
	cr_assert_eq(json_object_get_int(member(r, "errnoRet")), ENOSYS);
	/* A mode syscall the base never allowed is not added. */
	rules_naming(p, "mknod", &n);
	cr_assert_eq(n, 0);
	json_object_put(p);
}

Test(docker_seccomp, null_members_are_read_as_absent)
{
	struct json_object *p = build_ok("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"names\":[\"chmod\"],"
	                                 "\"action\":\"SCMP_ACT_ALLOW\",\"args\":null,\"includes\":null,"
	                                 "\"excludes\":null,\"name\":null}]}");
	struct json_object *r = the_rule(p, "chmod");
	assert_mode_rule(r, "chmod", 1);
	cr_assert_null(member(r, "includes"));
	json_object_put(p);
}

Test(docker_seccomp, a_rule_left_without_names_is_dropped)
{
	struct json_object *p = build_ok("{\"defaultAction\":\"SCMP_ACT_KILL\",\"syscalls\":["
	                                 "{\"names\":[\"open\",\"openat2\"],\"action\":\"SCMP_ACT_ALLOW\"}]}");
	struct json_object *rules = member(p, "syscalls");
	cr_assert_eq(json_object_array_length(rules), 2, "%s", json_object_to_json_string(rules));
	assert_mode_rule(json_object_array_get_idx(rules, 0), "open", 2);
	json_object_put(p);
}

Test(docker_seccomp, bad_bases_are_refused_with_what_is_wrong)
{
	build_fails(NULL, "no base profile");
	build_fails("", "not a JSON object");
	build_fails("{\"defaultAction\":", "not a JSON object");
	build_fails("[]", "not a JSON object");
	build_fails("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[]} x", "not a JSON object");
	build_fails("{\"syscalls\":[]}", "no defaultAction");
	build_fails("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[]}", "lets unlisted syscalls run");
	build_fails("{\"defaultAction\":\"SCMP_ACT_LOG\",\"syscalls\":[]}", "'SCMP_ACT_LOG'");
	build_fails("{\"defaultAction\":\"SCMP_ACT_ERRNO\"}", "no 'syscalls' array");
	build_fails("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":{}}", "no 'syscalls' array");
	build_fails("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[1]}", "rule 0 is not an object");
	build_fails("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"names\":[\"read\"]}]}",
	            "rule 0 has no action");
	build_fails("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"action\":\"SCMP_ACT_ALLOW\"}]}",
	            "rule 0 names no syscall");
	build_fails("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"name\":\"read\",\"names\":[\"write\"],"
	            "\"action\":\"SCMP_ACT_ALLOW\"}]}",
	            "both 'name' and 'names'");
	build_fails("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"names\":\"read\","
	            "\"action\":\"SCMP_ACT_ALLOW\"}]}",
	            "'names' is not an array");
	build_fails("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"names\":[\"read\",7],"
	            "\"action\":\"SCMP_ACT_ALLOW\"}]}",
	            "names[1] is not a string");
	build_fails("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"name\":3,\"action\":\"SCMP_ACT_ALLOW\"}]}",
	            "'name' is not a string");
	build_fails("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"names\":[\"read\"],"
	            "\"action\":\"SCMP_ACT_ALLOW\",\"args\":{}}]}",
	            "'args' is not an array");
	build_fails("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"names\":[\"read\"],"
	            "\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":6,\"value\":1,\"op\":\"SCMP_CMP_EQ\"}]}]}",
	            "args[0] needs an index from 0 to 5");
	/* A condition on the mode argument already: ORed by runc, refused. */
	build_fails("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"names\":[\"read\"],"
	            "\"action\":\"SCMP_ACT_ALLOW\"},{\"names\":[\"chmod\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":"
	            "[{\"index\":1,\"value\":511,\"op\":\"SCMP_CMP_LE\"}]}]}",
	            "rule 1 already has a condition on argument 1 of 'chmod'");
}

Test(docker_seccomp, the_security_opt_carries_the_built_profile)
{
	const char *opt = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(docker_seccomp_security_opt(&opt, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(strncmp(opt, "seccomp=", 8), 0);
	const char *again = NULL;
	cr_assert_eq(docker_seccomp_security_opt(&again, &err), 0);
	cr_assert_eq(opt, again, "built once");
	struct json_object *got = json_tokener_parse(opt + 8);
	struct json_object *want = build_ok(docker_seccomp_default_profile());
	cr_assert(json_object_equal(got, want));
	json_object_put(got);
	json_object_put(want);
}
