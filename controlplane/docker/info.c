/* info.c: what the engine says about itself (GET /info) that a create
 * depends on: the OCI runtimes it has registered, with the arguments that
 * change what a sandbox is (no network, no seccomp). Asked at create time,
 * not cached, because an operator may register a runtime and reload or
 * restart the engine while serve runs. */
#include "engine_internal.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/buf.h"
#include "../base/cleanup.h"
#include "../base/xalloc.h"

#define DOCKER_INFO_TIMEOUT_MS 10000L

/* The runtime's registered runtimeArgs (/etc/docker/daemon.json
 * "runtimes"), or NULL. */
static struct json_object *runtime_args(struct json_object *rt)
{
	struct json_object *args = NULL;
	if (!rt || !json_object_object_get_ex(rt, "runtimeArgs", &args) || !json_object_is_type(args, json_type_array))
		return NULL;
	return args;
}

/* True when the runtime's runtimeArgs contain "--network=none" (gVisor's
 * runsc on hosts where it cannot use the host's network namespace). */
static int runtime_has_no_network(struct json_object *rt)
{
	struct json_object *args = runtime_args(rt);
	for (size_t i = 0; args && i < json_object_array_length(args); i++) {
		const char *a = json_object_get_string(json_object_array_get_idx(args, i));
		if (a && strcmp(a, "--network=none") == 0)
			return 1;
	}
	return 0;
}

/* gVisor's runsc (the registered name, or the basename of its path) runs
 * the container's seccomp profile only with its --oci-seccomp flag
 * ("runsc flags": "Enables loading OCI seccomp filters inside the
 * sandbox"); without it the sandbox profile is ignored and a chmod 4755 in
 * a workspace reaches the host file through its gofer. Go's flag package
 * takes one or two dashes and =true/=false; the last one counts. */
static int runtime_ignores_seccomp(const char *name, struct json_object *rt)
{
	struct json_object *path = NULL;
	const char *p = json_object_object_get_ex(rt, "path", &path) ? json_object_get_string(path) : NULL;
	const char *base = p ? strrchr(p, '/') : NULL;
	base = base ? base + 1 : p;
	if (strcmp(name, "runsc") != 0 && !(base && strcmp(base, "runsc") == 0))
		return 0;
	int on = 0;
	struct json_object *args = runtime_args(rt);
	for (size_t i = 0; args && i < json_object_array_length(args); i++) {
		const char *a = json_object_get_string(json_object_array_get_idx(args, i));
		if (!a || a[0] != '-')
			continue;
		a += a[1] == '-' ? 2 : 1;
		if (!strcmp(a, "oci-seccomp") || !strcmp(a, "oci-seccomp=true") || !strcmp(a, "oci-seccomp=1"))
			on = 1;
		else if (!strcmp(a, "oci-seccomp=false") || !strcmp(a, "oci-seccomp=0"))
			on = 0;
	}
	return !on;
}

/* Whether name may appear in the list: 1 to DOCKER_RUNTIME_NAME_MAX
 * characters of [A-Za-z0-9._+-], so a name can neither hold the list's
 * separator nor a terminal control sequence. Pure. */
static int runtime_name_listed(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > DOCKER_RUNTIME_NAME_MAX)
		return 0;
	for (const char *c = name; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
		      strchr("._+-", *c)))
			return 0;
	return 1;
}

/* The registered runtime names, comma-separated (caller frees): built in
 * one pass, the first DOCKER_RUNTIMES_MAX names that runtime_name_listed
 * takes; others are left out (another machine's engine writes /info, so a
 * forged answer with a million keys costs one walk, not a quadratic join). */
static char *runtime_names(struct json_object *runtimes)
{
	struct cp_buf b;
	cp_buf_init(&b, DOCKER_RUNTIMES_MAX * (DOCKER_RUNTIME_NAME_MAX + 2) + 1);
	size_t listed = 0;
	json_object_object_foreach(runtimes, key, val)
	{
		(void)val;
		if (listed == DOCKER_RUNTIMES_MAX)
			break;
		if (!runtime_name_listed(key))
			continue;
		if ((listed && cp_buf_append(&b, ", ", 2) < 0) || cp_buf_append(&b, key, strlen(key)) < 0)
			break; /* not reached: the maximum fits DOCKER_RUNTIMES_MAX names */
		listed++;
	}
	char *names = cp_buf_steal(&b);
	return names ? names : xstrdup("");
}

/* GET /info (Docker Engine API v1.41, "Get system information"): looks
 * name up in "Runtimes" (the names `docker run --runtime` accepts) and
 * fills *ret (caller clears; names owned): found, no_network (registered
 * with runtimeArgs "--network=none", so its containers have no network
 * whatever NetworkMode says), ignores_seccomp (gVisor's runsc without
 * --oci-seccomp, which would not run the sandbox seccomp profile) and the
 * registered names, comma-separated, for messages. engine and name
 * borrowed. UNAVAILABLE when the engine does not answer, INTERNAL for an
 * answer without Runtimes. Blocks at most 10 s. */
int docker_engine_runtime_info(struct docker_engine *engine, const char *name, struct docker_runtime_info *ret,
                               struct cp_error **err)
{
	const char *what = "ask the engine for its runtimes";
	_cleanup_json_ struct json_object *info = NULL;
	if (docker_request(engine, "GET", "/info", NULL, DOCKER_INFO_TIMEOUT_MS, what, NULL, &info, err) < 0)
		return -1;
	struct json_object *runtimes = NULL, *rt = NULL;
	if (!info || !json_object_object_get_ex(info, "Runtimes", &runtimes) ||
	    !json_object_is_type(runtimes, json_type_object))
		return cp_error_set(err, CP_ERR_INTERNAL, "%s: the answer of GET /info has no Runtimes", what);
	struct docker_runtime_info r = {0};
	r.found = name && json_object_object_get_ex(runtimes, name, &rt) && json_object_is_type(rt, json_type_object);
	r.no_network = r.found && runtime_has_no_network(rt);
	r.ignores_seccomp = r.found && runtime_ignores_seccomp(name, rt);
	r.names = runtime_names(runtimes);
	*ret = r;
	return 0;
}

void docker_runtime_info_clear(struct docker_runtime_info *r)
{
	if (!r)
		return;
	free(r->names);
	*r = (struct docker_runtime_info){0};
}

/* docker_engine_runtime_info's found, no_network and names (docker.h). */
int docker_engine_runtime(struct docker_engine *engine, const char *name, int *ret_found, int *ret_no_network,
                          char **ret_names, struct cp_error **err)
{
	struct docker_runtime_info r = {0};
	if (docker_engine_runtime_info(engine, name, &r, err) < 0)
		return -1;
	*ret_found = r.found;
	*ret_no_network = r.no_network;
	if (ret_names)
		*ret_names = TAKE_PTR(r.names);
	docker_runtime_info_clear(&r);
	return 0;
}

void docker_storage_clear(struct docker_storage *s)
{
	if (!s)
		return;
	free(s->driver);
	free(s->backing_fs);
	free(s->root_dir);
	*s = (struct docker_storage){0};
}

/* Drivers whose containers take HostConfig.StorageOpt {"size": …}:
 * overlay2 only on xfs (with the pquota mount option, which /info does not
 * show), devicemapper, btrfs and zfs (Docker docs, "docker run
 * --storage-opt"). */
static int takes_size(const char *driver, const char *backing)
{
	if (!driver)
		return 0;
	if (!strcmp(driver, "overlay2"))
		return backing && !strcmp(backing, "xfs");
	return !strcmp(driver, "devicemapper") || !strcmp(driver, "btrfs") || !strcmp(driver, "zfs");
}

int docker_engine_storage(struct docker_engine *engine, struct docker_storage *ret, struct cp_error **err)
{
	const char *what = "ask the engine for its storage";
	_cleanup_json_ struct json_object *info = NULL;
	if (docker_request(engine, "GET", "/info", NULL, DOCKER_INFO_TIMEOUT_MS, what, NULL, &info, err) < 0)
		return -1;
	struct docker_storage s = {0};
	struct json_object *v = NULL, *status = NULL;
	if (json_object_object_get_ex(info, "Driver", &v) && json_object_is_type(v, json_type_string))
		s.driver = xstrdup(json_object_get_string(v));
	if (json_object_object_get_ex(info, "DockerRootDir", &v) && json_object_is_type(v, json_type_string))
		s.root_dir = xstrdup(json_object_get_string(v));
	/* DriverStatus: [["Backing Filesystem", "extfs"], ...] */
	if (json_object_object_get_ex(info, "DriverStatus", &status) && json_object_is_type(status, json_type_array))
		for (size_t i = 0; i < json_object_array_length(status) && !s.backing_fs; i++) {
			struct json_object *pair = json_object_array_get_idx(status, i);
			const char *k = json_object_get_string(json_object_array_get_idx(pair, 0));
			const char *val = json_object_get_string(json_object_array_get_idx(pair, 1));
			if (k && val && !strcmp(k, "Backing Filesystem"))
				s.backing_fs = xstrdup(val);
		}
	s.size_supported = takes_size(s.driver, s.backing_fs);
	*ret = s;
	return 0;
}

void docker_engine_facts_clear(struct docker_engine_facts *f)
{
	if (!f)
		return;
	free(f->runtimes);
	free(f->engine_version);
	*f = (struct docker_engine_facts){0};
}

/* The facts of a GET /info answer (docker.h). Pure. */
int docker_engine_facts_parse(struct json_object *info, struct docker_engine_facts *ret, struct cp_error **err)
{
	struct json_object *runtimes = NULL, *v = NULL;
	if (!info || !json_object_is_type(info, json_type_object) ||
	    !json_object_object_get_ex(info, "Runtimes", &runtimes) || !json_object_is_type(runtimes, json_type_object))
		return cp_error_set(err, CP_ERR_INTERNAL,
		                    "read the engine's facts: the answer of GET /info has no "
		                    "Runtimes");
	struct docker_engine_facts f = {0};
	f.runtimes = runtime_names(runtimes);
	/* Another machine's numbers, held to what a machine can have (a larger
	 * one is not known: 0), so no arithmetic on them can overflow. */
	if (json_object_object_get_ex(info, "MemTotal", &v) && json_object_is_type(v, json_type_int))
		f.memory_bytes = json_object_get_int64(v);
	if (f.memory_bytes < 0 || f.memory_bytes > DOCKER_MEMORY_MAX)
		f.memory_bytes = 0;
	if (json_object_object_get_ex(info, "NCPU", &v) && json_object_is_type(v, json_type_int))
		f.cpus = json_object_get_int64(v);
	if (f.cpus < 0 || f.cpus > DOCKER_CPUS_MAX)
		f.cpus = 0;
	if (json_object_object_get_ex(info, "ServerVersion", &v) && json_object_is_type(v, json_type_string) &&
	    docker_text_printable(json_object_get_string(v), DOCKER_ENGINE_VERSION_MAX))
		f.engine_version = xstrdup(json_object_get_string(v));
	if (f.memory_bytes < 0)
		f.memory_bytes = 0;
	if (f.cpus < 0)
		f.cpus = 0;
	*ret = f;
	return 0;
}

int docker_engine_facts(struct docker_engine *engine, struct docker_engine_facts *ret, struct cp_error **err)
{
	_cleanup_json_ struct json_object *info = NULL;
	if (docker_request(engine, "GET", "/info", NULL, DOCKER_INFO_TIMEOUT_MS, "ask the engine about itself", NULL,
	                   &info, err) < 0)
		return -1;
	return docker_engine_facts_parse(info, ret, err);
}

int docker_engine_ping(struct docker_engine *engine, long timeout_ms, struct cp_error **err)
{
	_cleanup_json_ struct json_object *body = NULL;
	if (docker_request(engine, "GET", "/_ping", NULL, timeout_ms, "ping the engine", NULL, &body, err) < 0)
		return -1;
	const char *text = body && json_object_is_type(body, json_type_string) ? json_object_get_string(body) : NULL;
	if (!text || strncmp(text, "OK", 2) != 0)
		return cp_error_set(err, CP_ERR_UNAVAILABLE, "ping the engine at '%s': it did not answer OK",
		                    docker_engine_socket(engine));
	return 0;
}
