/* cmd_status.c: `chat2sbx status [--json]`: is everything a ChatGPT call
 * needs up? The service (STATE_DIR/serve.json and its pid), its MCP endpoint
 * (one initialize over the Unix socket, one over TCP with the bearer token;
 * where the token lives, never the token), the tunnel (STATE_DIR/tunnel.json and the
 * client's /readyz), the engine and runtime, the template image, the
 * host-edge firewall (table inet chat2sbx; readable as root only), where
 * chat2sbx's own files are (LIB_DIR, DATA_DIR), the
 * sandbox limits and count, pending approvals. Reads only; creates nothing. The exit
 * status is ops_readiness_exit_status (0 ready, OPS_EXIT_NOT_READY not). */
#include <errno.h>
#include <json-c/json.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/clock.h"
#include "base/xjson.h"
#include "cli.h"
#include "docker/docker.h"
#include "lifecycle/lifecycle.h"
#include "policy/policy.h"
#include "ops/ops.h"
#include "store/store.h"

#define STATUS_HTTP_TIMEOUT_MS 3000
#define STATUS_ENGINE_TIMEOUT_MS 5000

static void add_str(struct json_object *o, const char *key, const char *v)
{
	xjson_add(o, key, v ? xjson_string(v) : NULL);
}

static void add_int(struct json_object *o, const char *key, int64_t v, int present)
{
	xjson_add(o, key, present ? xjson_int64(v) : NULL);
}

static void add_bool(struct json_object *o, const char *key, int v)
{
	xjson_add(o, key, xjson_bool(v));
}

/* One MCP initialize through rq (its body is filled here): 1 when it was
 * answered 200 with a protocolVersion; the HTTP status goes into o under
 * status_key, or the error under error_key. */
static int probe_initialize(struct ops_http_request *rq, struct json_object *o, const char *status_key,
                            const char *error_key)
{
	char body[512];
	snprintf(body, sizeof(body),
	         "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
	         "\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"chat2sbx-status\",\"version\":"
	         "\"%s\"}}}",
	         CHAT2SBX_VERSION);
	rq->method = "POST";
	rq->body = body;
	rq->timeout_ms = STATUS_HTTP_TIMEOUT_MS;
	long code = 0;
	_cleanup_free_ char *answer = NULL;
	_cleanup_error_ struct cp_error *e = NULL;
	if (ops_http_probe(rq, &code, &answer, &e) < 0) {
		add_str(o, error_key, e->message);
		return 0;
	}
	add_int(o, status_key, code, 1);
	return code == 200 && answer && strstr(answer, "\"protocolVersion\"");
}

/* The MCP endpoint of a running serve: the Unix socket (what the tunnel
 * client uses) and the TCP port with the bearer token (what other local
 * clients use); answering means both answered. */
static void status_mcp(const struct config *cfg, const struct ops_serve_state *s, struct ops_readiness *rd,
                       struct json_object *mcp)
{
	add_str(mcp, "socket", s->socket);
	add_str(mcp, "token_file", s->token_file);
	add_bool(mcp, "token_required", s->token_required);
	if (!s->token_required)
		add_str(mcp, "warning",
		        "CHAT2SBX_MCP_TOKEN=off: the MCP port takes requests without a bearer token, so every local "
		        "user can drive sandboxes");
	int socket_ok = 1;
	if (s->socket) {
		struct ops_http_request rq = {.url = "http://localhost/mcp", .unix_socket = s->socket};
		socket_ok = probe_initialize(&rq, mcp, "socket_http_status", "socket_error");
		add_bool(mcp, "socket_answering", socket_ok);
	}
	char token[OPS_MCP_TOKEN_LEN + 1] = "";
	_cleanup_error_ struct cp_error *e = NULL;
	if (s->token_required && ops_mcp_token_read(cfg->state_dir, token, &e) < 0) {
		add_str(mcp, "error", e->message);
		return;
	}
	struct ops_http_request rq = {.url = s->endpoint, .bearer_token = token[0] ? token : NULL};
	int tcp_ok = probe_initialize(&rq, mcp, "http_status", "error");
	explicit_bzero(token, sizeof(token));
	rd->mcp_answering = socket_ok && tcp_ok;
}

/* Service and MCP endpoint. Returns the serve's own tunnel setting when it runs. */
static void status_service(const struct config *cfg, struct ops_readiness *rd, struct json_object *out)
{
	struct json_object *svc = xjson_object(), *mcp = xjson_object();
	struct ops_serve_state s = {0};
	_cleanup_error_ struct cp_error *e = NULL;
	int have = ops_serve_state_read(cfg->state_dir, &s, &e) == 0;
	rd->service_up = have && ops_pid_alive(s.pid);
	add_bool(svc, "running", rd->service_up);
	add_int(svc, "pid", s.pid, have);
	add_int(svc, "uptime_s", (clock_now_ms() - s.started_at_ms) / 1000, rd->service_up);
	add_str(svc, "version", have ? s.version : NULL);
	add_str(svc, "note",
	        !have             ? (e->code == CP_ERR_NOT_FOUND ? "not running (no serve.json)" : e->message)
	        : !rd->service_up ? "serve.json names a process that is gone (stale)"
	                          : NULL);
	add_str(mcp, "endpoint", have ? s.endpoint : NULL);
	rd->tunnel_enabled = rd->service_up ? s.tunnel_enabled : cfg->enable_tunnel;
	if (rd->service_up)
		status_mcp(cfg, &s, rd, mcp);
	add_bool(mcp, "answering", rd->mcp_answering);
	ops_serve_state_clear(&s);
	xjson_add(out, "service", svc);
	xjson_add(out, "mcp", mcp);
}

static void status_tunnel(const struct config *cfg, struct ops_readiness *rd, struct json_object *out)
{
	struct json_object *t = xjson_object();
	add_bool(t, "enabled", rd->tunnel_enabled);
	struct ops_tunnel_state ts = {0};
	_cleanup_error_ struct cp_error *e = NULL;
	int have = rd->tunnel_enabled && ops_tunnel_state_read(cfg->state_dir, &ts, &e) == 0;
	add_str(t, "state", have ? ts.state : NULL);
	add_int(t, "pid", ts.pid, have && ts.pid > 0);
	add_int(t, "restarts", ts.restarts, have);
	add_str(t, "health_url", have ? ts.health_url : NULL);
	add_str(t, "last_exit", have ? ts.last_exit : NULL);
	long code = 0;
	int asked = 0;
	if (have && ts.health_url && !strcmp(ts.state, "running") && rd->service_up) {
		char url[600];
		snprintf(url, sizeof(url), "%s/readyz", ts.health_url);
		cp_error_freep(&e);
		struct ops_http_request rq = {.method = "GET", .url = url, .timeout_ms = STATUS_HTTP_TIMEOUT_MS};
		asked = ops_http_probe(&rq, &code, NULL, &e) == 0;
		if (!asked)
			add_str(t, "error", e->message);
	}
	add_int(t, "readyz_status", code, asked);
	rd->tunnel_ready = asked && code == 200;
	add_bool(t, "ready", rd->tunnel_ready);
	ops_tunnel_state_clear(&ts);
	xjson_add(out, "tunnel", t);
}

static const char *label_of(struct json_object *image, const char *key)
{
	struct json_object *config = NULL, *labels = NULL, *v = NULL;
	if (image && json_object_object_get_ex(image, "Config", &config) &&
	    json_object_object_get_ex(config, "Labels", &labels) && json_object_object_get_ex(labels, key, &v))
		return json_object_get_string(v);
	return NULL;
}

/* Which runtime sandboxes get and why, decided as serve decides it
 * (guard_runtime_probe); for vm its accelerator, the TCG warning and
 * whether its image is built (sandboxes are made from it, so a missing one
 * makes the template missing for readiness). */
static void status_runtime(const struct config *cfg, struct docker_engine *engine, struct ops_readiness *rd,
                           struct json_object *engine_runtime, struct json_object *out)
{
	struct json_object *rt = xjson_object();
	struct guard_runtime_choice c = {0};
	_cleanup_error_ struct cp_error *e = NULL;
	int ok = guard_runtime_probe(cfg, engine, &c, &e) == 0;
	int vm = ok && policy_runtime_is_vm(c.runtime);
	add_str(rt, "name", vm ? c.runtime : ok && c.runtime ? c.runtime : json_object_get_string(engine_runtime));
	add_str(rt, "chosen_by", cfg->runtime[0] && strcmp(cfg->runtime, "auto") ? "CHAT2SBX_RUNTIME" : "auto");
	add_str(rt, "why", ok ? c.why : NULL);
	add_str(rt, "error", ok ? NULL : e->message);
	add_bool(rt, "hardware_virtualization", c.cpu_virt);
	add_bool(rt, "kvm_device", c.kvm_access);
	add_str(rt, "vm_image", cfg->vm_image);
	if (vm) {
		add_str(rt, "accel", c.accel);
		add_str(rt, "accel_why", c.accel_why);
		if (!strcmp(c.accel, "tcg"))
			add_str(
			    rt, "warning",
			    "TCG emulates the CPU: vm sandboxes boot, build and run Docker many times slower than with "
			    "KVM");
		_cleanup_free_ char *id = NULL;
		_cleanup_error_ struct cp_error *ie = NULL;
		int present = engine && docker_image_inspect(engine, cfg->vm_image, &id, &ie) == 0;
		add_bool(rt, "vm_image_present", present);
		rd->template_present = rd->template_present && present;
	}
	if (!ok)
		rd->template_present = 0;
	xjson_add(out, "runtime", rt);
}

static void status_engine(const struct config *cfg, struct ops_readiness *rd, struct json_object *out)
{
	struct json_object *eng = xjson_object(), *tpl = xjson_object();
	struct docker_engine *engine = NULL;
	_cleanup_error_ struct cp_error *e = NULL;
	add_str(eng, "socket", cfg->docker_socket);
	add_str(tpl, "image", cfg->template_image);
	rd->engine_up = docker_engine_new(cfg->docker_socket, &engine, &e) == 0;
	add_bool(eng, "reachable", rd->engine_up);
	if (!rd->engine_up) {
		add_str(eng, "error", e->message);
		/* EACCES/EPERM on the socket: the message says which group to join. */
		rd->engine_denied =
		    e->detail == CP_DETAIL_ENGINE_UNREACHABLE && (e->errnum == EACCES || e->errnum == EPERM);
		add_bool(eng, "denied", rd->engine_denied);
	} else {
		add_str(eng, "version", docker_engine_version(engine));
		add_str(eng, "api_version", docker_engine_api_version(engine));
		_cleanup_json_ struct json_object *info = NULL, *image = NULL;
		struct json_object *v = NULL, *runtimes = NULL;
		/* vm is not an OCI runtime: the engine's default runs its containers. */
		const char *runtime =
		    cfg->runtime[0] && strcmp(cfg->runtime, "auto") && !policy_runtime_is_vm(cfg->runtime)
		        ? cfg->runtime
		        : NULL;
		if (docker_request(engine, "GET", "/info", NULL, STATUS_ENGINE_TIMEOUT_MS,
		                   "ask the engine for its info", NULL, &info, &e) == 0 &&
		    info) {
			if (!runtime && json_object_object_get_ex(info, "DefaultRuntime", &v))
				runtime = json_object_get_string(v);
			int found = runtime && json_object_object_get_ex(info, "Runtimes", &runtimes) &&
			            json_object_object_get_ex(runtimes, runtime, &v);
			add_str(eng, "runtime", runtime);
			add_bool(eng, "runtime_found", found);
		}
		cp_error_freep(&e);
		char path[600];
		snprintf(path, sizeof(path), "/images/%s/json", cfg->template_image);
		rd->template_present = docker_request(engine, "GET", path, NULL, STATUS_ENGINE_TIMEOUT_MS,
		                                      "inspect the template image", NULL, &image, &e) == 0;
		add_str(tpl, "version", label_of(image, "org.chat2sbx.template.version"));
		add_str(tpl, "hash", label_of(image, "org.chat2sbx.template.hash"));
	}
	add_bool(tpl, "present", rd->template_present);
	status_runtime(cfg, engine, rd, json_object_object_get(eng, "runtime"), out);
	docker_engine_free(engine);
	xjson_add(out, "engine", eng);
	xjson_add(out, "template", tpl);
}

/* The sum of the memory ceilings of live sandboxes (store_sandbox_is_live). */
static int64_t live_memory_total(struct store *store, struct cp_error **err)
{
	struct sandbox_record *rows = NULL;
	size_t n = 0;
	if (store_sandbox_list(store, 0, &rows, &n, err) < 0)
		return -1;
	int64_t total = 0;
	for (size_t i = 0; i < n; i++) {
		if (store_sandbox_is_live(&rows[i]))
			total += rows[i].memory_bytes;
		sandbox_record_clear(&rows[i]);
	}
	free(rows);
	return total;
}

/* The limits in force on this machine (issue 13): what a sandbox gets when
 * it asks for nothing, and what all of them may hold together. */
static void status_limits(const struct config *cfg, struct json_object *sbx)
{
	struct policy_host h = {0};
	struct policy_sandbox_limits l = {0};
	_cleanup_error_ struct cp_error *e = NULL;
	if (guard_host_limits(cfg, &h, &l, &e) < 0) {
		add_str(sbx, "limits_error", e->message);
		return;
	}
	add_int(sbx, "limit", l.max_active, l.max_active > 0);
	add_str(sbx, "limit_source", cfg->max_active_sandboxes == CONFIG_AUTO ? "auto" : "setting");
	add_int(sbx, "default_memory_bytes", l.default_memory_bytes, 1);
	add_int(sbx, "host_memory_bytes", h.mem_total_bytes, 1);
	add_int(sbx, "pids_default", l.pids_default, 1);
	add_int(sbx, "pids_cap", l.pids_cap, 1);
	add_int(sbx, "pids_budget", l.pids_budget, 1);
	add_int(sbx, "kernel_pid_max", h.pid_max, 1);
	add_int(sbx, "kernel_threads_max", h.threads_max, 1);
}

/* One watched filesystem: free space, size and the watermark there. */
static struct json_object *disk_entry(const struct config *cfg, const char *what, const char *path, int *ret_low)
{
	struct json_object *d = xjson_object();
	add_str(d, "what", what);
	add_str(d, "path", path);
	struct statvfs sv;
	if (statvfs(path, &sv) < 0) {
		add_str(d, "error", strerror(errno));
		return d;
	}
	int64_t total = (int64_t)sv.f_blocks * (int64_t)sv.f_frsize,
	        avail = (int64_t)sv.f_bavail * (int64_t)sv.f_frsize;
	int64_t watermark = policy_min_free_bytes(cfg->min_free_disk_bytes, cfg->min_free_disk_percent, total);
	add_int(d, "free_bytes", avail, 1);
	add_int(d, "size_bytes", total, 1);
	add_int(d, "min_free_bytes", watermark, 1);
	add_bool(d, "low", avail < watermark);
	*ret_low |= avail < watermark;
	return d;
}

/* The free-space guard's view (issue 13): the disks of the data root and of
 * the engine's data, whether a sandbox's disk can be limited, and the
 * sandboxes paused for a full disk. */
static void status_disk(const struct config *cfg, struct json_object *out)
{
	struct json_object *disk = xjson_object(), *list = xjson_array();
	int low = 0;
	xjson_append(list, disk_entry(cfg, "data root", cfg->data_root, &low));
	struct docker_engine *engine = NULL;
	_cleanup_error_ struct cp_error *e = NULL;
	if (docker_engine_new(cfg->docker_socket, &engine, &e) == 0) {
		struct docker_storage ds = {0};
		if (docker_engine_storage(engine, &ds, &e) == 0) {
			struct stat a, b;
			if (ds.root_dir &&
			    !(stat(ds.root_dir, &a) == 0 && stat(cfg->data_root, &b) == 0 && a.st_dev == b.st_dev))
				xjson_append(list, disk_entry(cfg, "engine data", ds.root_dir, &low));
			add_bool(disk, "size_limit_supported", ds.size_supported);
			char storage[200];
			snprintf(storage, sizeof(storage), "%s on %s", ds.driver ? ds.driver : "?",
			         ds.backing_fs ? ds.backing_fs : "?");
			add_str(disk, "storage", storage);
		}
		docker_storage_clear(&ds);
		char label[4300];
		snprintf(label, sizeof(label), "%s=%s", POLICY_LABEL_REGISTRY, cfg->database_path);
		struct docker_container_state *cs = NULL;
		size_t n = 0;
		int paused = 0;
		cp_error_freep(&e);
		if (docker_container_list(engine, label, &cs, &n, &e) == 0) {
			for (size_t i = 0; i < n; i++) {
				paused += cs[i].status && !strcmp(cs[i].status, "paused");
				docker_container_state_clear(&cs[i]);
			}
			free(cs);
			add_int(disk, "paused_sandboxes", paused, 1);
		}
	}
	docker_engine_free(engine);
	add_bool(disk, "low", low);
	xjson_add(disk, "filesystems", list);
	xjson_add(out, "disk", disk);
}

/* The host-edge firewall (issue 12): read when this process may (root). */
static void status_firewall(const struct config *cfg, struct ops_readiness *rd, struct json_object *out)
{
	struct json_object *fw = xjson_object();
	struct docker_engine *engine = NULL;
	_cleanup_error_ struct cp_error *e = NULL;
	if (docker_engine_new(cfg->docker_socket, &engine, &e) < 0)
		engine = NULL; /* the engine's own part reports that; older bridges are then not named */
	struct ops_firewall_report fr;
	ops_firewall_report(cfg, engine, &fr);
	docker_engine_free(engine);
	add_bool(fw, "enabled", fr.enabled);
	add_str(fw, "state", fr.known ? firewall_state_name(fr.state) : "unknown");
	add_str(fw, "detail", fr.detail);
	if (!fr.enabled)
		add_str(
		    fw, "warning",
		    "CHAT2SBX_FIREWALL=0: chat2sbx does not keep sandboxes off this host's services; this host's own "
		    "firewall must");
	rd->firewall_missing = fr.enabled && fr.known && !FIREWALL_PROTECTS(fr.state);
	xjson_add(out, "firewall", fw);
}

static void status_registry(const struct config *cfg, struct json_object *out)
{
	struct json_object *sbx = xjson_object(), *apr = xjson_object();
	status_limits(cfg, sbx);
	struct store *store = NULL;
	_cleanup_error_ struct cp_error *e = NULL;
	int live = 0;
	int64_t memory = 0;
	size_t n = 0, pending = 0;
	struct approval_record *rows = NULL;
	int have = access(cfg->database_path, F_OK) == 0 && store_open(cfg->database_path, &store, &e) == 0 &&
	           store_sandbox_count_live(store, &live, &e) == 0 && store_approval_list(store, &rows, &n, &e) == 0 &&
	           (memory = live_memory_total(store, &e)) >= 0;
	for (size_t i = 0; i < n; i++) {
		pending += rows[i].status == APPROVAL_PENDING;
		approval_record_clear(&rows[i]);
	}
	free(rows);
	/* Saved clone work (issue 14): sandboxes whose last look found work no
	 * export holds, expired ones, and exports nobody applied yet. */
	int64_t unsaved = 0, expired = 0, unapplied = 0, removing = 0;
	struct sandbox_record *sb = NULL;
	size_t ns = 0;
	/* Live sandboxes per node (issue 28): {"local": 3, "n1": 2}. */
	struct json_object *by_node = xjson_object();
	if (have && store_sandbox_list(store, 0, &sb, &ns, &e) == 0) {
		for (size_t i = 0; i < ns; i++) {
			const char *node = sb[i].node && *sb[i].node ? sb[i].node : STORE_NODE_LOCAL;
			struct json_object *c = NULL;
			if (store_sandbox_is_live(&sb[i]))
				xjson_add(by_node, node,
				          xjson_int64(json_object_object_get_ex(by_node, node, &c)
				                          ? json_object_get_int64(c) + 1
				                          : 1));
			unsaved += sb[i].unsaved == 1 || sb[i].status == SANDBOX_EXPIRED;
			expired += sb[i].status == SANDBOX_EXPIRED;
			removing += sb[i].status == SANDBOX_REMOVING; /* a removal the registry could not finish */
			sandbox_record_clear(&sb[i]);
		}
		free(sb);
	}
	if (have)
		cp_error_freep(&e); /* a failed list only loses the counts; keep the open's error otherwise */
	int have_exports = have && store_export_count_unapplied(store, &unapplied, &e) == 0;
	store_free(store);
	add_int(sbx, "unsaved", unsaved, have);
	add_int(sbx, "expired", expired, have);
	add_int(sbx, "removing", removing, have);
	add_int(sbx, "exports_not_applied", unapplied, have_exports);
	add_int(sbx, "active", live, have);
	if (have)
		xjson_add(sbx, "by_node", by_node);
	else
		json_object_put(by_node);
	add_int(sbx, "memory_ceilings_bytes", memory, have);
	add_int(apr, "pending", (int64_t)pending, have);
	if (!have)
		add_str(out, "registry_error", e ? e->message : "no registry yet; run 'chat2sbx setup'");
	xjson_add(out, "sandboxes", sbx);
	xjson_add(out, "approvals", apr);
}

static const char *get_s(struct json_object *o, const char *a, const char *b)
{
	struct json_object *x = NULL, *y = NULL;
	if (!json_object_object_get_ex(o, a, &x) || !json_object_object_get_ex(x, b, &y) || !y)
		return NULL;
	return json_object_get_string(y);
}

/* RUNTIME: vm (with its accelerator, the TCG warning and its image) or
 * the container runtime, with why auto chose it. */
static void print_runtime(struct json_object *o)
{
	const char *name = get_s(o, "runtime", "name") ?: "?", *err = get_s(o, "runtime", "error");
	if (err) {
		printf("%-10s %-10s %s\n", "RUNTIME", "error", err);
	} else if (!strcmp(name, "vm")) {
		int present = !strcmp(get_s(o, "runtime", "vm_image_present") ?: "false", "true");
		const char *why = get_s(o, "runtime", "accel_why"), *warning = get_s(o, "runtime", "warning");
		printf("%-10s %-10s microVMs, acceleration %s%s%s%s, image %s %s%s%s\n", "RUNTIME", "vm",
		       get_s(o, "runtime", "accel") ?: "?", why ? " (" : "", why ?: "", why ? ")" : "",
		       get_s(o, "runtime", "vm_image") ?: "?", present ? "present" : "MISSING (make template-vm)",
		       warning ? "; WARNING: " : "", warning ?: "");
	} else {
		printf("%-10s %-10s containers (%s)%s%s\n", "RUNTIME", name,
		       !strcmp(get_s(o, "runtime", "chosen_by") ?: "", "auto") ? "chosen automatically"
		                                                               : "CHAT2SBX_RUNTIME",
		       get_s(o, "runtime", "why") ? "; " : "", get_s(o, "runtime", "why") ?: "");
	}
}

/* Where this binary finds its own files (issue 25) and whether the helper
 * and the template's build script are there; readiness is serve's and
 * setup's to judge (they name what to install). */
static void status_files(const struct config *cfg, struct json_object *out)
{
	struct json_object *f = xjson_object();
	add_str(f, "lib_dir", cfg->lib_dir);
	add_str(f, "data_dir", cfg->data_dir);
	add_bool(f, "installed", config_installed);
	add_str(f, "helper", cfg->helper_path);
	add_bool(f, "helper_present", access(cfg->helper_path, R_OK) == 0);
	/* The judgement serve makes: present, and writable by no one else. */
	struct cp_error *e = NULL;
	if (config_install_require(cfg, cfg->helper_path, "the helper binary", "CHAT2SBX_HELPER_PATH", &e) < 0) {
		add_str(f, "error", e->message);
		cp_error_free(e);
		e = NULL;
	}
	_cleanup_free_ char *script = NULL;
	if (config_install_path(cfg, CONFIG_DIR_DATA, "template/build.sh", "the template's build script", &script, &e) <
	        0 &&
	    !json_object_object_get_ex(f, "error", NULL))
		add_str(f, "error", e->message);
	add_bool(f, "template_inputs_present", script != NULL);
	cp_error_free(e);
	xjson_add(out, "files", f);
}

static void print_table(struct json_object *o, const struct ops_readiness *rd, const char *reason)
{
	printf("chat2sbx status: %s%s\n\n", reason ? "NOT READY: " : "ready", reason ? reason : "");
	const char *uptime = get_s(o, "service", "uptime_s");
	/* "up N s" only when there is an uptime: a down service has none. */
	char up[48] = "";
	if (rd->service_up && uptime)
		snprintf(up, sizeof(up), ", up %s s", uptime);
	printf("%-10s %-10s pid %s%s, version %s%s%s\n", "SERVICE", rd->service_up ? "running" : "down",
	       get_s(o, "service", "pid") ?: "-", up, get_s(o, "service", "version") ?: "-",
	       get_s(o, "service", "note") ? "; " : "", get_s(o, "service", "note") ?: "");
	printf("%-10s %-10s %s%s%s\n", "MCP", rd->mcp_answering ? "answering" : "no answer",
	       get_s(o, "mcp", "endpoint") ?: "-", get_s(o, "mcp", "error") ? ": " : "",
	       get_s(o, "mcp", "error") ?: "");
	if (get_s(o, "mcp", "socket"))
		printf("%-10s %-10s unix:%s (this user and root; the tunnel client uses it)%s%s\n", "SOCKET",
		       !strcmp(get_s(o, "mcp", "socket_answering") ?: "false", "true") ? "answering" : "no answer",
		       get_s(o, "mcp", "socket"), get_s(o, "mcp", "socket_error") ? ": " : "",
		       get_s(o, "mcp", "socket_error") ?: "");
	if (get_s(o, "mcp", "token_file")) {
		int required = !strcmp(get_s(o, "mcp", "token_required") ?: "true", "true");
		printf("%-10s %-10s %s%s\n", "TOKEN", required ? "required" : "OFF",
		       required ? "send 'Authorization: Bearer <token>' on TCP; the token is in "
		                : "WARNING: CHAT2SBX_MCP_TOKEN=off, any local user can use the MCP port; token file ",
		       get_s(o, "mcp", "token_file"));
	}
	if (rd->tunnel_enabled)
		printf("%-10s %-10s state %s, pid %s, %s restarts, /readyz %s%s%s\n", "TUNNEL",
		       rd->tunnel_ready ? "ready" : "not ready", get_s(o, "tunnel", "state") ?: "unknown",
		       get_s(o, "tunnel", "pid") ?: "-", get_s(o, "tunnel", "restarts") ?: "0",
		       get_s(o, "tunnel", "readyz_status") ?: "-",
		       get_s(o, "tunnel", "last_exit") ? "; last exit: " : "", get_s(o, "tunnel", "last_exit") ?: "");
	else
		printf("%-10s %-10s local only (CHAT2SBX_ENABLE_TUNNEL=0)\n", "TUNNEL", "disabled");
	if (rd->engine_up)
		printf("%-10s %-10s %s (API %s), runtime %s%s\n", "ENGINE", "ok", get_s(o, "engine", "version"),
		       get_s(o, "engine", "api_version"), get_s(o, "engine", "runtime") ?: "?",
		       !strcmp(get_s(o, "engine", "runtime_found") ?: "false", "true") ? "" : " (NOT registered)");
	else
		printf("%-10s %-10s %s\n", "ENGINE", rd->engine_denied ? "DENIED" : "down",
		       get_s(o, "engine", "error") ?: "");
	print_runtime(o);
	printf("%-10s %-10s %s, version %s, hash %s\n", "TEMPLATE", rd->template_present ? "present" : "missing",
	       get_s(o, "template", "image"), get_s(o, "template", "version") ?: "-",
	       get_s(o, "template", "hash") ?: "-");
	int present = !strcmp(get_s(o, "files", "helper_present") ?: "false", "true") &&
	              !strcmp(get_s(o, "files", "template_inputs_present") ?: "false", "true");
	const char *files_state = !present ? "MISSING" : get_s(o, "files", "error") ? "REFUSED" : "ok";
	printf("%-10s %-10s programs in %s, data in %s (%s)%s%s\n", "FILES", files_state, get_s(o, "files", "lib_dir"),
	       get_s(o, "files", "data_dir"),
	       !strcmp(get_s(o, "files", "installed") ?: "false", "true") ? "installed" : "source tree",
	       get_s(o, "files", "error") ? "; " : "", get_s(o, "files", "error") ?: "");
	const char *fw_state = get_s(o, "firewall", "state") ?: "unknown";
	printf("%-10s %-10s %s%s%s\n", "FIREWALL",
	       !strcmp(get_s(o, "firewall", "enabled") ?: "false", "true") ? fw_state : "disabled",
	       get_s(o, "firewall", "detail") ?: "", get_s(o, "firewall", "warning") ? "; WARNING: " : "",
	       get_s(o, "firewall", "warning") ?: "");
	printf("%-10s %s active, limit %s (%s); %s with unsaved work, %s expired; %s export(s) not applied\n",
	       "SANDBOXES", get_s(o, "sandboxes", "active") ?: "?", get_s(o, "sandboxes", "limit") ?: "unlimited",
	       get_s(o, "sandboxes", "limit_source") ?: "?", get_s(o, "sandboxes", "unsaved") ?: "?",
	       get_s(o, "sandboxes", "expired") ?: "?", get_s(o, "sandboxes", "exports_not_applied") ?: "?");
	struct json_object *by_node = json_object_object_get(json_object_object_get(o, "sandboxes"), "by_node");
	if (by_node && json_object_object_length(by_node) > 0) {
		printf("%-10s on node", "");
		const char *sep = "s:";
		json_object_object_foreach(by_node, name, count)
		{
			printf("%s %s %lld", sep, name, (long long)json_object_get_int64(count));
			sep = ",";
		}
		printf("\n");
	}
	if (strcmp(get_s(o, "sandboxes", "removing") ?: "0", "0") != 0)
		printf("%-10s %s sandbox(es) being removed: the registry could not record the end of their removal; "
		       "serve's next maintenance pass finishes it\n",
		       "", get_s(o, "sandboxes", "removing"));
	struct json_object *dk = json_object_object_get(o, "disk"), *fss = json_object_object_get(dk, "filesystems");
	for (size_t i = 0; i < json_object_array_length(fss); i++) {
		struct json_object *f = json_object_array_get_idx(fss, i);
		const char *ferr = json_object_get_string(json_object_object_get(f, "error"));
		if (ferr) {
			printf("%-10s %-10s %s '%s': %s\n", "DISK", "unknown",
			       json_object_get_string(json_object_object_get(f, "what")),
			       json_object_get_string(json_object_object_get(f, "path")), ferr);
			continue;
		}
		printf("%-10s %-10s %s '%s': %lld MiB free of %lld MiB, minimum %lld MiB (CHAT2SBX_MIN_FREE_DISK)\n",
		       "DISK", json_object_get_boolean(json_object_object_get(f, "low")) ? "LOW" : "ok",
		       json_object_get_string(json_object_object_get(f, "what")),
		       json_object_get_string(json_object_object_get(f, "path")),
		       (long long)(json_object_get_int64(json_object_object_get(f, "free_bytes")) >> 20),
		       (long long)(json_object_get_int64(json_object_object_get(f, "size_bytes")) >> 20),
		       (long long)(json_object_get_int64(json_object_object_get(f, "min_free_bytes")) >> 20));
	}
	if (json_object_object_get(dk, "storage"))
		printf("%-10s %-10s %s: %s; %s sandbox(es) paused for a full disk\n", "", "",
		       get_s(o, "disk", "storage"),
		       !strcmp(get_s(o, "disk", "size_limit_supported") ?: "false", "true")
		           ? "a sandbox's disk can be limited (disk, CHAT2SBX_DEFAULT_DISK)"
		           : "a sandbox's disk cannot be limited here; the free-space guard pauses writers instead",
		       get_s(o, "disk", "paused_sandboxes") ?: "?");
	struct json_object *sb = json_object_object_get(o, "sandboxes");
	int64_t mib = 1024 * 1024;
	if (json_object_object_get(sb, "default_memory_bytes"))
		printf("%-10s memory %lld MiB each unless asked (this machine: %lld MiB; the %s active ceilings "
		       "add up to %lld MiB), %s processes each (at most %s; all sandboxes together within %s of "
		       "kernel.pid_max %s)\n",
		       "LIMITS",
		       (long long)(json_object_get_int64(json_object_object_get(sb, "default_memory_bytes")) / mib),
		       (long long)(json_object_get_int64(json_object_object_get(sb, "host_memory_bytes")) / mib),
		       get_s(o, "sandboxes", "active") ?: "?",
		       (long long)(json_object_get_int64(json_object_object_get(sb, "memory_ceilings_bytes")) / mib),
		       get_s(o, "sandboxes", "pids_default"), get_s(o, "sandboxes", "pids_cap"),
		       get_s(o, "sandboxes", "pids_budget"), get_s(o, "sandboxes", "kernel_pid_max"));
	else if (get_s(o, "sandboxes", "limits_error"))
		printf("%-10s %s\n", "LIMITS", get_s(o, "sandboxes", "limits_error"));
	printf("%-10s %s pending\n", "APPROVALS", get_s(o, "approvals", "pending") ?: "?");
}

int cmd_status(struct cli *cli, int argc, char **argv)
{
	(void)argv;
	if (argc != 0) {
		fprintf(stderr, "usage: chat2sbx status [--json]\n");
		return 2;
	}
	struct ops_readiness rd = {0};
	struct json_object *o = xjson_object();
	status_service(cli->cfg, &rd, o);
	status_tunnel(cli->cfg, &rd, o);
	status_engine(cli->cfg, &rd, o);
	status_firewall(cli->cfg, &rd, o);
	status_disk(cli->cfg, o);
	status_files(cli->cfg, o);
	status_registry(cli->cfg, o);
	const char *reason = NULL;
	int status = ops_readiness_exit_status(&rd, &reason);
	add_bool(o, "ready", status == 0);
	add_str(o, "not_ready_reason", reason);
	if (cli->json) {
		cli_print_json(o);
	} else {
		print_table(o, &rd, reason);
		json_object_put(o);
	}
	return status;
}
