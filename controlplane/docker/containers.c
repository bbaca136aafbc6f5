/* containers.c: container calls on the Docker Engine (create, start, remove,
 * inspect, list). Owns the one place where a sandbox's container settings
 * become the engine's create body, so the hardening (no privileges, dropped
 * capabilities, the sandbox seccomp profile, no engine logs of helper
 * traffic) is decided here and nowhere else. Never chooses names, images or limits: the caller's spec does. */
#include "engine_internal.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/log.h"
#include "../base/xalloc.h"
#include "../base/xjson.h"

#define DOCKER_CREATE_TIMEOUT_MS 30000L
#define DOCKER_START_TIMEOUT_MS 60000L /* microVM runtimes boot a kernel first */
#define DOCKER_REMOVE_TIMEOUT_MS 30000L
#define DOCKER_QUERY_TIMEOUT_MS 10000L

/* Capabilities dropped from Docker's default set: none is needed to run
 * shells and builds, and each has been used to attack a host or a neighbour
 * (NET_RAW: ARP/ICMP spoofing, CVE-2020-14386; MKNOD: device nodes; SETFCAP:
 * file capabilities, on a host mount working ones, and across a user
 * namespace, CVE-2022-0492 class; FSETID: without it a write to a setuid or
 * setgid file clears the bit, so a sandbox cannot put its own code into
 * such a file of a host mount, issue 12). */
static const char *const dropped_caps[] = {"NET_RAW", "MKNOD", "AUDIT_WRITE", "SYS_CHROOT", "SETFCAP", "FSETID", NULL};

/* "<verb> container '<ref>'", the prefix of every message from this file. */
static char *what_new(const char *verb, const char *ref)
{
	return xasprintf("%s container '%s'", verb, ref ? ref : "");
}

static void add_string(struct json_object *o, const char *key, const char *value)
{
	xjson_add(o, key, xjson_string(value));
}

static void add_int64(struct json_object *o, const char *key, int64_t value)
{
	xjson_add(o, key, xjson_int64(value));
}

static void add_bool(struct json_object *o, const char *key, int value)
{
	xjson_add(o, key, xjson_bool(value != 0));
}

/* Adds key: [strings...] from a NULL-terminated vector (NULL = empty array). */
static void add_strv(struct json_object *o, const char *key, const char *const *v)
{
	struct json_object *a = xjson_array();
	for (size_t i = 0; v && v[i]; i++)
		xjson_append(a, xjson_string(v[i]));
	xjson_add(o, key, a);
}

/* Adds key: {} and returns it (borrowed: o owns it). */
static struct json_object *add_object(struct json_object *o, const char *key)
{
	struct json_object *c = xjson_object();
	xjson_add(o, key, c);
	return c;
}

/* "8000/tcp", the engine's key for a container port. */
static void port_key(char *buf, size_t size, int port)
{
	snprintf(buf, size, "%d/tcp", port);
}

/* The HostConfig fields only forwarder and service containers set: PortBindings
 * ({"8000/tcp":[{"HostIp":"127.0.0.1","HostPort":"49153"}]}, HostPort ""
 * for an engine-chosen port), RestartPolicy, ReadonlyRootfs, PidMode "host"
 * (Docker Engine API v1.41, "Create a container", HostConfig). */
static void build_forwarder_host_config(struct json_object *hc, const struct docker_container_spec *spec)
{
	if (spec->n_port_bindings) {
		struct json_object *pb = add_object(hc, "PortBindings");
		for (size_t i = 0; i < spec->n_port_bindings; i++) {
			const struct docker_port_binding *b = &spec->port_bindings[i];
			char key[32], host_port[16] = "";
			port_key(key, sizeof(key), b->container_port);
			if (b->host_port > 0)
				snprintf(host_port, sizeof(host_port), "%d", b->host_port);
			struct json_object *list = xjson_array(), *one = xjson_object();
			xjson_append(list, one);
			xjson_add(pb, key, list);
			add_string(one, "HostIp", b->host_ip ? b->host_ip : "");
			add_string(one, "HostPort", host_port);
		}
	}
	if (spec->restart_policy)
		add_string(add_object(hc, "RestartPolicy"), "Name", spec->restart_policy);
	if (spec->read_only_rootfs)
		add_bool(hc, "ReadonlyRootfs", 1);
	if (spec->pid_host)
		add_string(hc, "PidMode", "host");
}

/* HostConfig.Devices: each host device at the same path, read, write and
 * mknod in the device cgroup (Docker Engine API v1.41, DeviceMapping). */
static void build_devices(struct json_object *hc, const char *const *devices)
{
	struct json_object *list = xjson_array();
	xjson_add(hc, "Devices", list);
	for (size_t i = 0; devices[i]; i++) {
		struct json_object *d = xjson_object();
		xjson_append(list, d);
		add_string(d, "PathOnHost", devices[i]);
		add_string(d, "PathInContainer", devices[i]);
		add_string(d, "CgroupPermissions", "rwm");
	}
}

static void build_host_config(struct json_object *root, const struct docker_container_spec *spec,
                              const char *seccomp_opt)
{
	struct json_object *hc = add_object(root, "HostConfig");
	struct json_object *mounts = xjson_array();
	xjson_add(hc, "Mounts", mounts);
	for (size_t i = 0; i < spec->n_mounts; i++) {
		struct json_object *m = xjson_object();
		xjson_append(mounts, m);
		add_string(m, "Type", spec->mounts[i].volume ? "volume" : "bind");
		add_string(m, "Source", spec->mounts[i].source);
		add_string(m, "Target", spec->mounts[i].target);
		add_bool(m, "ReadOnly", spec->mounts[i].read_only);
	}
	/* MemorySwap equal to Memory: the ceiling holds, no swap is added on
	 * top (Docker Engine API v1.41, HostConfig.MemorySwap: memory plus swap). */
	if (spec->memory_bytes > 0) {
		add_int64(hc, "Memory", spec->memory_bytes);
		add_int64(hc, "MemorySwap", spec->memory_bytes);
	}
	if (spec->oom_score_adj != 0)
		add_int64(hc, "OomScoreAdj", spec->oom_score_adj);
	if (spec->disk_bytes > 0) {
		char size[32];
		snprintf(size, sizeof(size), "%lld", (long long)spec->disk_bytes);
		add_string(add_object(hc, "StorageOpt"), "size", size);
	}
	if (spec->nano_cpus > 0)
		add_int64(hc, "NanoCpus", spec->nano_cpus);
	if (spec->pids_limit > 0)
		add_int64(hc, "PidsLimit", spec->pids_limit);
	if (!spec->network_disabled && spec->network)
		add_string(hc, "NetworkMode", spec->network);
	if (spec->network_disabled)
		add_string(hc, "NetworkMode", "none");
	if (spec->runtime && *spec->runtime)
		add_string(hc, "Runtime", spec->runtime);
	static const char *const drop_all[] = {"ALL", NULL};
	add_bool(hc, "Privileged", 0);
	add_string(add_object(hc, "LogConfig"), "Type", "none");
	add_strv(hc, "CapDrop", spec->cap_drop_all ? drop_all : dropped_caps);
	if (spec->cap_add)
		add_strv(hc, "CapAdd", spec->cap_add);
	if (spec->devices)
		build_devices(hc, spec->devices);
	build_forwarder_host_config(hc, spec);
	/* Every container, forwarders included: no setuid files from container
	 * root on any mount, no openat2 or io_uring around it (seccomp.c). */
	const char *const security_opt[] = {"no-new-privileges", seccomp_opt, NULL};
	add_strv(hc, "SecurityOpt", security_opt);
	add_bool(hc, "Init", 0);
}

/* The create body (Docker Engine API v1.41, "Create a container",
 * ContainerConfig + HostConfig). Returns a new object (caller puts it). */
static struct json_object *build_create_body(const struct docker_container_spec *spec, const char *seccomp_opt)
{
	struct json_object *root = xjson_object();
	add_string(root, "Image", spec->image);
	add_strv(root, "Entrypoint", spec->entrypoint);
	add_strv(root, "Cmd", NULL);
	add_strv(root, "Env", spec->env);
	struct json_object *labels = add_object(root, "Labels");
	for (size_t i = 0; spec->labels && spec->labels[i]; i += 2)
		add_string(labels, spec->labels[i], spec->labels[i + 1]);
	if (spec->working_dir)
		add_string(root, "WorkingDir", spec->working_dir);
	/* stdin stays open across attaches (StdinOnce false) so the control plane
	 * can re-attach after a restart; no TTY so the stream is multiplexed. */
	int attach = !spec->no_stdin;
	add_bool(root, "OpenStdin", attach);
	add_bool(root, "StdinOnce", 0);
	add_bool(root, "AttachStdin", attach);
	add_bool(root, "AttachStdout", attach);
	add_bool(root, "AttachStderr", attach);
	add_bool(root, "Tty", 0);
	if (spec->user)
		add_string(root, "User", spec->user);
	/* A bound port must also be exposed, or the engine publishes nothing. */
	if (spec->n_port_bindings) {
		struct json_object *exposed = add_object(root, "ExposedPorts");
		for (size_t i = 0; i < spec->n_port_bindings; i++) {
			char key[32];
			port_key(key, sizeof(key), spec->port_bindings[i].container_port);
			add_object(exposed, key);
		}
	}
	build_host_config(root, spec, seccomp_opt);
	return root;
}

/* POST /containers/create?name=… (Docker Engine API v1.41, "Create a
 * container"). spec and its strings are borrowed. *ret_id (caller frees) is the
 * new container's id. Errors: INVALID_ARGUMENT for a bad spec or a 400 (a bind
 * source that does not exist), NOT_FOUND when the image is absent, CONFLICT
 * when the name is taken, UNAVAILABLE/TIMEOUT from the transport. Blocks at
 * most 30 s. */
int docker_container_create(struct docker_engine *engine, const struct docker_container_spec *spec, char **ret_id,
                            struct cp_error **err)
{
	_cleanup_free_ char *what = what_new("create", spec && spec->name ? spec->name : "");
	if (!spec || !spec->name || !*spec->name || !spec->image || !*spec->image)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "%s: a name and an image are required", what);
	size_t n_labels = 0;
	while (spec->labels && spec->labels[n_labels])
		n_labels++;
	if (n_labels % 2)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "%s: label '%s' has no value", what,
		                    spec->labels[n_labels - 1]);
	for (size_t i = 0; i < spec->n_mounts; i++)
		if (!spec->mounts[i].source || !spec->mounts[i].target)
			return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "%s: mount %zu lacks a source or target",
			                    what, i);

	const char *seccomp_opt = NULL;
	if (docker_seccomp_security_opt(&seccomp_opt, err) < 0)
		return cp_error_prefix(err, "%s", what);
	_cleanup_json_ struct json_object *body = build_create_body(spec, seccomp_opt);
	_cleanup_free_ char *name = docker_escape(spec->name, NULL);
	_cleanup_free_ char *path = xasprintf("/containers/create?name=%s", name);
	_cleanup_json_ struct json_object *reply = NULL;
	if (docker_request(engine, "POST", path, body, DOCKER_CREATE_TIMEOUT_MS, what, NULL, &reply, err) < 0)
		return -1;
	struct json_object *id = NULL, *warnings = NULL;
	if (!reply || !json_object_object_get_ex(reply, "Id", &id) || !json_object_is_type(id, json_type_string))
		return cp_error_set(err, CP_ERR_INTERNAL, "%s: the engine's answer has no container Id", what);
	if (json_object_object_get_ex(reply, "Warnings", &warnings) && json_object_is_type(warnings, json_type_array))
		for (size_t i = 0; i < json_object_array_length(warnings); i++)
			log_debug("docker", "%s: engine warning: %s", what,
			          json_object_get_string(json_object_array_get_idx(warnings, i)));
	*ret_id = xstrdup(json_object_get_string(id));
	return 0;
}

/* Sends a body-less request on /containers/{id}<suffix>. */
static int container_simple(struct docker_engine *engine, const char *method, const char *verb, const char *id,
                            const char *suffix, long timeout_ms, struct json_object **ret_body, struct cp_error **err)
{
	_cleanup_free_ char *what = what_new(verb, id);
	if (!id || !*id)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "%s: empty container id", what);
	_cleanup_free_ char *esc = docker_escape(id, NULL);
	_cleanup_free_ char *path = NULL;
	path = xasprintf("/containers/%s%s", esc, suffix);
	return docker_request(engine, method, path, NULL, timeout_ms, what, NULL, ret_body, err);
}

/* POST /containers/{id}/start (Docker Engine API v1.41, "Start a container");
 * 204 started, 304 already started (both success). id borrowed. NOT_FOUND
 * when absent; a 500 (the entrypoint cannot run) is UNAVAILABLE with the
 * engine's reason. Blocks at most 60 s. */
int docker_container_start(struct docker_engine *engine, const char *id, struct cp_error **err)
{
	_cleanup_json_ struct json_object *reply = NULL;
	return container_simple(engine, "POST", "start", id, "/start", DOCKER_START_TIMEOUT_MS, &reply, err);
}

/* DELETE /containers/{id}?force=1&v=1 (Docker Engine API v1.41, "Remove a
 * container"): kills a running container and removes its anonymous volumes.
 * id borrowed. NOT_FOUND when absent. When another removal of it is under
 * way (the engine's 409 "removal of container ... is already in
 * progress": a destroy racing the maintenance pass), waits for that one:
 * 0 once the container is gone, CONFLICT if it is still there after the
 * wait (30 s). Blocks at most 60 s. */
int docker_container_remove(struct docker_engine *engine, const char *id, struct cp_error **err)
{
	_cleanup_json_ struct json_object *reply = NULL;
	if (container_simple(engine, "DELETE", "remove", id, "?force=1&v=1", DOCKER_REMOVE_TIMEOUT_MS, &reply, err) ==
	    0)
		return 0;
	if ((*err)->detail != CP_DETAIL_REMOVAL_IN_PROGRESS)
		return -1;
	int64_t deadline = clock_monotonic_ms() + DOCKER_REMOVE_TIMEOUT_MS;
	while (clock_monotonic_ms() < deadline) {
		struct docker_container_state st = {0};
		_cleanup_error_ struct cp_error *e = NULL;
		int rc = docker_container_inspect(engine, id, &st, &e);
		docker_container_state_clear(&st);
		if (rc < 0 && e->code == CP_ERR_NOT_FOUND) {
			cp_error_freep(err);
			return 0;
		}
		usleep(100 * 1000);
	}
	return -1;
}

/* Frees the owned strings of s and zeroes it; accepts NULL. */
void docker_container_state_clear(struct docker_container_state *s)
{
	if (!s)
		return;
	free(s->id);
	free(s->name);
	free(s->status);
	free(s->error);
	memset(s, 0, sizeof(*s));
}

static const char *get_string(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;
	if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static char *dup_name(const char *name)
{
	if (!name)
		return xstrdup("");
	return xstrdup(name[0] == '/' ? name + 1 : name);
}

/* GET /containers/{id}/json (Docker Engine API v1.41, "Inspect a
 * container"). id borrowed; *ret_state (caller clears) is filled only on
 * success. NOT_FOUND when absent. Blocks at most 10 s. */
int docker_container_inspect(struct docker_engine *engine, const char *id, struct docker_container_state *ret_state,
                             struct cp_error **err)
{
	_cleanup_json_ struct json_object *reply = NULL;
	if (container_simple(engine, "GET", "inspect", id, "/json", DOCKER_QUERY_TIMEOUT_MS, &reply, err) < 0)
		return -1;
	struct json_object *state = NULL, *v = NULL;
	const char *cid = get_string(reply, "Id");
	if (!cid || !json_object_object_get_ex(reply, "State", &state) || !json_object_is_type(state, json_type_object))
		return cp_error_set(err, CP_ERR_INTERNAL,
		                    "inspect container '%s': the engine's answer lacks Id or State", id);
	struct docker_container_state s = {0};
	const char *status = get_string(state, "Status");
	const char *error = get_string(state, "Error");
	s.id = xstrdup(cid);
	s.name = dup_name(get_string(reply, "Name"));
	s.status = xstrdup(status ? status : "unknown");
	s.error = error && *error ? xstrdup(error) : NULL;
	if (json_object_object_get_ex(state, "Running", &v))
		s.running = json_object_get_boolean(v);
	if (json_object_object_get_ex(state, "ExitCode", &v))
		s.exit_code = json_object_get_int(v);
	*ret_state = s;
	return 0;
}

/* One entry of GET /containers/json. The list has no exit code field; it is
 * read from the human Status text ("Exited (137) 2 minutes ago"). */
static int state_from_summary(struct json_object *c, struct docker_container_state *s)
{
	struct json_object *names = NULL;
	const char *name = NULL;
	if (json_object_object_get_ex(c, "Names", &names) && json_object_is_type(names, json_type_array) &&
	    json_object_array_length(names) > 0)
		name = json_object_get_string(json_object_array_get_idx(names, 0));
	const char *id = get_string(c, "Id");
	const char *state = get_string(c, "State");
	const char *human = get_string(c, "Status");
	memset(s, 0, sizeof(*s));
	s->id = xstrdup(id ? id : "");
	s->name = dup_name(name);
	s->status = xstrdup(state ? state : "unknown");
	s->running = state && strcmp(state, "running") == 0;
	if (human && strncmp(human, "Exited (", 8) == 0)
		s->exit_code = atoi(human + 8);
	return 0;
}

/* GET /containers/json?all=1&filters={"label":[label]} (Docker Engine API
 * v1.41, "List containers"). label borrowed ("key" or "key=value"). On success
 * *ret_states (caller clears each entry and frees the array; NULL when *ret_n
 * is 0) and *ret_n are set. Blocks at most 10 s. */
int docker_container_list(struct docker_engine *engine, const char *label, struct docker_container_state **ret_states,
                          size_t *ret_n, struct cp_error **err)
{
	_cleanup_free_ char *what = xasprintf("list containers labelled '%s'", label ? label : "");
	if (!label || !*label)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "%s: empty label", what);

	_cleanup_free_ char *path = docker_filtered_path("/containers/json?all=1&", "label", label);
	_cleanup_json_ struct json_object *reply = NULL;
	if (docker_request_list(engine, path, DOCKER_QUERY_TIMEOUT_MS, what, &reply, err) < 0)
		return -1;

	size_t n = json_object_array_length(reply);
	struct docker_container_state *states = n ? xcalloc(n, sizeof(*states)) : NULL;
	for (size_t i = 0; i < n; i++)
		state_from_summary(json_object_array_get_idx(reply, i), &states[i]);
	*ret_states = states;
	*ret_n = n;
	return 0;
}
