/* seccomp.c: the sandbox seccomp profile. Derives it from the Docker
 * Engine's own default profile (profiles/seccomp-default.json, embedded at
 * build time) so that container root cannot give a file a setuid or setgid
 * bit: on a host mount (a workspace) such a file would be a setuid-root
 * program for every local user (issue 12). The builder is pure (JSON text
 * in, JSON text out); it never widens what the base profile allows. */
#include "engine_internal.h"

#include <errno.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../base/cleanup.h"
#include "../base/xalloc.h"
#include "../base/xjson.h"

/* scripts/embed-file.sh docker_seccomp_default_json profiles/seccomp-default.json */
extern const char docker_seccomp_default_json[];
extern const size_t docker_seccomp_default_json_len;

/* The syscalls that give a file its mode, and the index of their mode
 * argument (the same on every architecture the profile lists: the kernel's
 * SYSCALL_DEFINEs in fs/open.c and fs/namei.c, and their compat entries,
 * take the arguments in this order). */
static const struct mode_syscall {
	const char *name;
	unsigned index;
} mode_syscalls[] = {
    {"chmod", 1},     /* chmod(path, mode) */
    {"fchmod", 1},    /* fchmod(fd, mode) */
    {"fchmodat", 2},  /* fchmodat(dirfd, path, mode) */
    {"fchmodat2", 2}, /* fchmodat2(dirfd, path, mode, flags), Linux 6.6 */
    {"open", 2},      /* open(path, flags, mode) */
    {"openat", 3},    /* openat(dirfd, path, flags, mode) */
    {"creat", 1},     /* creat(path, mode) */
    {"mknod", 1},     /* mknod(path, mode, dev): S_IFREG makes a plain file */
    {"mknodat", 2},   /* mknodat(dirfd, path, mode, dev) */
};

/* Syscalls no argument check can hold: openat2 takes its mode inside a
 * struct open_how (seccomp sees only the pointer), and io_uring performs
 * opens, mkdirs and xattr changes in the kernel without a syscall per
 * operation. They answer ENOSYS, so programs fall back to openat. */
static const char *const refused_syscalls[] = {"openat2", "io_uring_setup", "io_uring_enter", "io_uring_register"};

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

static int mode_index_of(const char *name)
{
	/* rule_check has refused a rule without names; a NULL name is never one. */
	if (!name)
		return -1;
	for (size_t i = 0; i < N_ELEMS(mode_syscalls); i++)
		if (!strcmp(name, mode_syscalls[i].name))
			return (int)mode_syscalls[i].index;
	return -1;
}

static int is_refused(const char *name)
{
	if (!name)
		return 0;
	for (size_t i = 0; i < N_ELEMS(refused_syscalls); i++)
		if (!strcmp(name, refused_syscalls[i]))
			return 1;
	return 0;
}

/* Actions that let a call run: the ones whose rules must not name a mode
 * syscall without the mode check (libseccomp's SCMP_ACT_LOG runs it too). */
static int action_allows(const char *action)
{
	return action && (!strcmp(action, "SCMP_ACT_ALLOW") || !strcmp(action, "SCMP_ACT_LOG"));
}

/* Default actions that refuse what no rule names; anything else (ALLOW,
 * LOG, TRACE with a tracer, NOTIFY) would let a removed syscall run. */
static int action_refuses(const char *action)
{
	static const char *const refusing[] = {"SCMP_ACT_ERRNO", "SCMP_ACT_KILL", "SCMP_ACT_KILL_THREAD",
	                                       "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_TRAP"};
	for (size_t i = 0; i < N_ELEMS(refusing); i++)
		if (!strcmp(action, refusing[i]))
			return 1;
	return 0;
}

static const char *string_member(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;
	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* Allocation failure is not an error path (STYLE.md, Errors): json-c
 * objects are made and joined through these, which abort when memory is
 * gone, so the builder carries no out-of-memory branch. */
static struct json_object *checked(struct json_object *o)
{
	if (!o)
		cp_oom();
	return o;
}

static void put_member(struct json_object *o, const char *key, struct json_object *v)
{
	xjson_add(o, key, checked(v));
}

static void append(struct json_object *a, struct json_object *v)
{
	xjson_append(a, checked(v));
}

static struct json_object *deep_copy(struct json_object *v)
{
	struct json_object *copy = NULL;
	if (json_object_deep_copy(v, &copy, NULL) < 0)
		checked(NULL);
	return copy;
}

/* Copies from[key] into to, when from has it and it is not null. */
static void copy_member(struct json_object *from, struct json_object *to, const char *key)
{
	struct json_object *v = NULL;
	if (json_object_object_get_ex(from, key, &v) && v)
		put_member(to, key, deep_copy(v));
}

/* {"index": index, "value": S_ISUID|S_ISGID, "valueTwo": 0, "op":
 * "SCMP_CMP_MASKED_EQ"}: (arg & value) == valueTwo, as libseccomp's
 * SCMP_CMP_MASKED_EQ(mask, datum) reads them (runc and gVisor pass Value as
 * the mask and ValueTwo as the datum; Docker's own clone rule uses it so). */
static struct json_object *mode_arg_new(unsigned index)
{
	struct json_object *a = checked(xjson_object());
	put_member(a, "index", xjson_int64(index));
	put_member(a, "value", xjson_int64(S_ISUID | S_ISGID));
	put_member(a, "valueTwo", xjson_int64(0));
	put_member(a, "op", xjson_string("SCMP_CMP_MASKED_EQ"));
	return a;
}

/* The rule that lets `name` run where rule i of the base did, but only
 * with neither S_ISUID nor S_ISGID in its mode argument: the base rule's
 * action, includes and excludes, its arguments AND the mode check. */
static int mode_rule_add(struct json_object *out, struct json_object *rule, size_t i, const char *name, unsigned index,
                         struct cp_error **err)
{
	struct json_object *base_args = NULL;
	if (!json_object_object_get_ex(rule, "args", &base_args) || json_object_is_type(base_args, json_type_null))
		base_args = NULL;
	/* Two conditions on one argument are ORed by runc and gVisor (legacy
	 * behaviour), which would undo the check: refuse such a base. */
	for (size_t k = 0; base_args && k < json_object_array_length(base_args); k++) {
		struct json_object *idx = NULL, *a = json_object_array_get_idx(base_args, k);
		if (json_object_object_get_ex(a, "index", &idx) && json_object_get_int64(idx) == (int64_t)index)
			return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
			                    "seccomp profile: rule %zu already has a condition on argument %u of '%s', "
			                    "its mode; the mode check cannot be added to it",
			                    i, index, name);
	}
	struct json_object *r = checked(xjson_object());
	struct json_object *names = checked(xjson_array());
	append(names, xjson_string(name));
	put_member(r, "names", names);
	put_member(r, "action", xjson_string(string_member(rule, "action")));
	struct json_object *args = base_args ? deep_copy(base_args) : checked(xjson_array());
	append(args, mode_arg_new(index));
	put_member(r, "args", args);
	char comment[96];
	snprintf(comment, sizeof(comment), "chat2sbx: no S_ISUID/S_ISGID in the mode (argument %u)", index);
	put_member(r, "comment", xjson_string(comment));
	copy_member(rule, r, "includes");
	copy_member(rule, r, "excludes");
	append(out, r);
	return 0;
}

/* The rule every architecture gets last: openat2 and io_uring answer ENOSYS
 * (the native errno.h value; chat2sbx runs on the engine's machine). */
static void refused_rule_add(struct json_object *out)
{
	struct json_object *r = checked(xjson_object());
	struct json_object *names = checked(xjson_array());
	for (size_t i = 0; i < N_ELEMS(refused_syscalls); i++)
		append(names, xjson_string(refused_syscalls[i]));
	put_member(r, "names", names);
	put_member(r, "action", xjson_string("SCMP_ACT_ERRNO"));
	put_member(r, "errnoRet", xjson_int64(ENOSYS));
	put_member(r, "args", xjson_array());
	put_member(r, "comment", xjson_string("chat2sbx: they bypass the mode checks; ENOSYS, fall back"));
	append(out, r);
}

/* The names of rule i, from "names" (array of strings) or "name" (one
 * string; Docker refuses both at once). Borrowed from the rule. */
static int rule_names(struct json_object *rule, size_t i, struct json_object **ret_names, const char **ret_name,
                      struct cp_error **err)
{
	struct json_object *names = NULL, *name = NULL;
	int has_names = json_object_object_get_ex(rule, "names", &names) && !json_object_is_type(names, json_type_null);
	int has_name = json_object_object_get_ex(rule, "name", &name) && !json_object_is_type(name, json_type_null);
	if (has_names && has_name)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "seccomp profile: rule %zu has both 'name' and 'names'; use one", i);
	if (has_name && !json_object_is_type(name, json_type_string))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "seccomp profile: rule %zu: 'name' is not a string",
		                    i);
	if (has_names) {
		if (!json_object_is_type(names, json_type_array))
			return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
			                    "seccomp profile: rule %zu: 'names' is not an array", i);
		for (size_t k = 0; k < json_object_array_length(names); k++)
			if (!json_object_is_type(json_object_array_get_idx(names, k), json_type_string))
				return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
				                    "seccomp profile: rule %zu: names[%zu] is not a string", i, k);
	}
	if (!has_names && !has_name)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "seccomp profile: rule %zu names no syscall", i);
	*ret_names = has_names ? names : NULL;
	*ret_name = has_name ? json_object_get_string(name) : NULL;
	return 0;
}

/* Checks rule i's shape: an object with an action string and, if any, an
 * args array of objects whose index is 0..5. */
static int rule_check(struct json_object *rule, size_t i, struct cp_error **err)
{
	if (!json_object_is_type(rule, json_type_object))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "seccomp profile: rule %zu is not an object", i);
	if (!string_member(rule, "action"))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "seccomp profile: rule %zu has no action", i);
	struct json_object *args = NULL;
	if (!json_object_object_get_ex(rule, "args", &args) || json_object_is_type(args, json_type_null))
		return 0;
	if (!json_object_is_type(args, json_type_array))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "seccomp profile: rule %zu: 'args' is not an array",
		                    i);
	for (size_t k = 0; k < json_object_array_length(args); k++) {
		struct json_object *a = json_object_array_get_idx(args, k), *idx = NULL;
		if (!json_object_is_type(a, json_type_object) || !json_object_object_get_ex(a, "index", &idx) ||
		    !json_object_is_type(idx, json_type_int) || json_object_get_int64(idx) < 0 ||
		    json_object_get_int64(idx) > 5)
			return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
			                    "seccomp profile: rule %zu: args[%zu] needs an index from 0 to 5", i, k);
	}
	return 0;
}

/* Rewrites rule i of the base into out: the same rule without the refused
 * syscalls and, when it lets calls run, without the mode syscalls, which
 * follow it as rules of their own with the mode check. A rule left with no
 * names is dropped. */
static int rule_rewrite(struct json_object *out, struct json_object *rule, size_t i, struct cp_error **err)
{
	struct json_object *names = NULL;
	const char *name = NULL;
	if (rule_check(rule, i, err) < 0 || rule_names(rule, i, &names, &name, err) < 0)
		return -1;
	int allows = action_allows(string_member(rule, "action"));
	size_t n = names ? json_object_array_length(names) : 1;
	_cleanup_json_ struct json_object *kept = checked(xjson_array());
	_cleanup_json_ struct json_object *split = checked(xjson_array());
	for (size_t k = 0; k < n; k++) {
		const char *s = names ? json_object_get_string(json_object_array_get_idx(names, k)) : name;
		int mode_index = mode_index_of(s);
		if (is_refused(s))
			continue;
		if (allows && mode_index >= 0) {
			if (mode_rule_add(split, rule, i, s, (unsigned)mode_index, err) < 0)
				return -1;
			continue;
		}
		append(kept, xjson_string(s));
	}
	if (json_object_array_length(kept) > 0) {
		struct json_object *copy = deep_copy(rule);
		json_object_object_del(copy, "name");
		put_member(copy, "names", TAKE_PTR(kept));
		append(out, copy);
	}
	for (size_t k = 0; k < json_object_array_length(split); k++)
		append(out, json_object_get(json_object_array_get_idx(split, k)));
	return 0;
}

/* Parses text as exactly one JSON object (trailing garbage refused). */
static struct json_object *parse_object(const char *text)
{
	json_tokener *tok = json_tokener_new();
	if (!tok)
		return NULL;
	size_t len = strlen(text);
	struct json_object *o = len < (size_t)INT32_MAX ? json_tokener_parse_ex(tok, text, (int)len) : NULL;
	int ok = o && json_tokener_get_error(tok) == json_tokener_success && json_object_is_type(o, json_type_object);
	for (size_t i = ok ? json_tokener_get_parse_end(tok) : len; i < len; i++)
		if (!strchr(" \t\r\n", text[i]))
			ok = 0;
	json_tokener_free(tok);
	if (!ok) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

/* Builds the sandbox profile from base_json, a seccomp profile in the Docker
 * Engine's format (profiles/seccomp/default.json; "defaultAction",
 * "archMap" or "architectures", "syscalls" of {names|name, action,
 * errnoRet, args, includes, excludes, comment}). The result, *ret_profile
 * (caller frees; compact JSON), is the base with three changes:
 *  - chmod, fchmod, fchmodat, fchmodat2, open, openat, creat, mknod and
 *    mknodat leave every rule that lets calls run, and each such rule is
 *    followed by one per syscall with the same action, includes, excludes
 *    and arguments plus {index: mode argument, value: 06000, valueTwo: 0,
 *    op: SCMP_CMP_MASKED_EQ}: the call runs only without S_ISUID/S_ISGID;
 *  - openat2, io_uring_setup, io_uring_enter and io_uring_register leave
 *    every rule and get one of their own, SCMP_ACT_ERRNO with errnoRet
 *    ENOSYS;
 *  - nothing else changes: every other rule, the architectures and the
 *    default action are kept as they are.
 * A mode syscall the base does not allow stays refused (never added).
 * INVALID_ARGUMENT, naming what is wrong, when base_json is not such a
 * profile, when its defaultAction lets unlisted calls run (removing a name
 * would then allow it), or when a rule already conditions a mode argument.
 * Pure: no I/O, no global state; thread-safe. Source: seccomp(2),
 * libseccomp's seccomp_rule_add(3) for SCMP_CMP_MASKED_EQ, Docker Engine
 * 20.10 profiles/seccomp/seccomp.go for the format. */
int docker_seccomp_profile_build(const char *base_json, char **ret_profile, struct cp_error **err)
{
	if (!base_json)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "seccomp profile: no base profile");
	_cleanup_json_ struct json_object *root = parse_object(base_json);
	if (!root)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "seccomp profile: the base is not a JSON object");
	const char *def = string_member(root, "defaultAction");
	if (!def)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "seccomp profile: the base has no defaultAction");
	if (!action_refuses(def))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "seccomp profile: the base's defaultAction '%s' lets unlisted syscalls run, so "
		                    "taking chmod or io_uring out of its rules would not refuse them; use a base whose "
		                    "default refuses (SCMP_ACT_ERRNO)",
		                    def);
	struct json_object *syscalls = NULL;
	if (!json_object_object_get_ex(root, "syscalls", &syscalls) || !json_object_is_type(syscalls, json_type_array))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "seccomp profile: the base has no 'syscalls' array");

	_cleanup_json_ struct json_object *out = checked(xjson_array());
	for (size_t i = 0; i < json_object_array_length(syscalls); i++)
		if (rule_rewrite(out, json_object_array_get_idx(syscalls, i), i, err) < 0)
			return -1;
	refused_rule_add(out);
	put_member(root, "syscalls", TAKE_PTR(out));
	const char *text =
	    json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	char *copy = text ? xstrdup(text) : NULL;
	if (!copy)
		checked(NULL);
	*ret_profile = copy;
	return 0;
}

/* The embedded base (profiles/README.md); static text. */
const char *docker_seccomp_default_profile(void)
{
	return docker_seccomp_default_json;
}

static pthread_once_t sandbox_once = PTHREAD_ONCE_INIT;
static char *sandbox_opt;              /* "seccomp=<profile>", built once, kept for the process */
static struct cp_error *sandbox_error; /* why it could not be built */

static void sandbox_opt_build(void)
{
	_cleanup_free_ char *profile = NULL;
	if (docker_seccomp_profile_build(docker_seccomp_default_json, &profile, &sandbox_error) < 0)
		return;
	sandbox_opt = xasprintf("seccomp=%s", profile);
}

/* The HostConfig.SecurityOpt entry of every container chat2sbx creates
 * (Docker Engine API v1.41, "Create a container": "seccomp=<profile JSON>"),
 * built once per process from the embedded default. *ret_opt is borrowed,
 * valid until exit. INTERNAL with the builder's reason when the embedded
 * profile cannot be built (a build defect; the unit tests catch it).
 * Thread-safe; never blocks after the first call. */
int docker_seccomp_security_opt(const char **ret_opt, struct cp_error **err)
{
	pthread_once(&sandbox_once, sandbox_opt_build);
	if (!sandbox_opt)
		return cp_error_set(err, CP_ERR_INTERNAL, "build the sandbox seccomp profile: %s",
		                    sandbox_error->message);
	*ret_opt = sandbox_opt;
	return 0;
}
