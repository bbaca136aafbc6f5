/* config.c: the settings table and its loader. Owns the only getenv calls of
 * the project (config_env_process). Sources, lowest first: the table's
 * defaults, DATA_ROOT/config.yaml (config_file.c), ./.env, the environment. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../base/cleanup.h"
#include "../base/size.h"
#include "../base/xalloc.h"
#include "config_file.h"

/* SETTING_SIZE: an int64_t of bytes, written as base/size.h reads it. */
enum setting_type { SETTING_STRING, SETTING_PATH, SETTING_INT, SETTING_INT64, SETTING_BOOL, SETTING_SIZE };

/* The words a setting takes beside its type, and where it may come from. */
enum setting_flag {
	/* Taken only from the process environment, refused in .env and
	 * config.yaml, since a planted file must not weaken isolation (security
	 * review, defect 1) nor swap the files chat2sbx runs (issue 25). */
	SETTING_ENV_ONLY = 1 << 0,
	/* 'auto' (any case): derived from the host when serve starts. An integer
	 * stores CONFIG_AUTO, a size CONFIG_SIZE_AUTO (so does an empty value). */
	SETTING_AUTO = 1 << 1,
	/* 'unlimited' (any case) or 0: an integer stores 0. */
	SETTING_UNLIMITED = 1 << 2,
	/* 'none' (any case): a size stores CONFIG_SIZE_NONE. */
	SETTING_NONE = 1 << 3,
	/* For tests only (with SETTING_ENV_ONLY): never carried into the
	 * service unit, named "test-only" when refused. */
	SETTING_TEST = 1 << 4,
};

struct setting {
	const char *env;
	const char *yaml_key; /* NULL: decided before config.yaml is read (it lives in DATA_ROOT) */
	enum setting_type type;
	size_t offset;
	const char *def;          /* "${NAME}" refers to an earlier setting's value, "~/" to HOME */
	long min, max;            /* SETTING_INT/INT64 range; SETTING_SIZE range in bytes */
	const char *default_text; /* as documented; NULL: def as written */
	const char *help;
	unsigned flags;             /* enum setting_flag */
	const char *const *choices; /* a string taking only these words, NULL-terminated */
	/* SETTING_SIZE that also takes "N%" (1-percent_max): N is stored in the
	 * int at percent_offset and the size is CONFIG_SIZE_AUTO; 0 is stored
	 * there for a size. percent_max 0: no percent form. */
	size_t percent_offset;
	int percent_max;
	/* What follows "NAME (from ORIGIN) " for a bad value, when the generic
	 * message would mislead; NULL: the generic one. */
	const char *refusal;
};

static const char *const vm_accels[] = {"auto", "kvm", "tcg", NULL};
static const char *const vm_dockers[] = {"demand", "boot", "off", NULL};

#define OFF(f) offsetof(struct config, f)

/* Order matters: a default may only refer to settings above it. A row
 * gives the columns up to help in order and names the later ones it uses;
 * the rest are zero. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
static const struct setting settings[] = {
    {"CHAT2SBX_HOST", "host", SETTING_STRING, OFF(host), "127.0.0.1", 0, 0, NULL, "MCP bind address"},
    {"CHAT2SBX_PORT", "port", SETTING_INT, OFF(port), "18788", 1, 65535, NULL, "MCP port"},
    {"CHAT2SBX_MCP_TOKEN", "mcpToken", SETTING_BOOL, OFF(mcp_token), "on", 0, 1, "on (the token in STATE_DIR/token)",
     "off = the MCP TCP port serves requests without 'Authorization: Bearer <token>' (a warning at start and in "
     "status); the Unix socket STATE_DIR/mcp.sock is for this user only either way",
     .refusal = "takes only 'off' (or 'on', the default); the token itself is never configured: serve makes it "
                "in STATE_DIR/token"},
    {"CHAT2SBX_UI_CODE_TTL_MS", "uiCodeTtlMs", SETTING_INT, OFF(ui_code_ttl_ms), "300000", 1000, 3600000, NULL,
     "how long a login link that 'chat2sbx ui' prints stays good, in ms; each link works once"},
    {"CHAT2SBX_DATA_ROOT", NULL, SETTING_PATH, OFF(data_root), "~/.chat2sbx", 0, 0, NULL, "all persistent data"},
    /* Where chat2sbx's own files are (issue 25; install_dirs.c). Read
     * before config.yaml, from the environment only, for development. */
    {"CHAT2SBX_LIB_DIR", NULL, SETTING_PATH, OFF(lib_dir), config_default_lib_dir, 0, 0,
     "PREFIX/lib/chat2sbx when installed; the directory of the chat2sbx binary in a source tree (build/)",
     "chat2sbx's programs: chat2sbx-helper and chat2sbx-vm (environment only, for development)",
     .flags = SETTING_ENV_ONLY},
    {"CHAT2SBX_DATA_DIR", NULL, SETTING_PATH, OFF(data_dir), config_default_data_dir, 0, 0,
     "PREFIX/share/chat2sbx when installed; the source tree above build/ in a source tree",
     "chat2sbx's data: the template's and the vm template's build inputs, .env.example (environment only, "
     "for development)",
     .flags = SETTING_ENV_ONLY},
    {"CHAT2SBX_STATE_DIR", "stateDir", SETTING_PATH, OFF(state_dir), "${CHAT2SBX_DATA_ROOT}/state", 0, 0,
     "DATA_ROOT/state", "runtime state (0700)"},
    {"CHAT2SBX_WORKSPACE_ROOT", "workspaceRoot", SETTING_PATH, OFF(workspace_root), "${CHAT2SBX_DATA_ROOT}/workspaces",
     0, 0, "DATA_ROOT/workspaces", "managed workspaces (0700)"},
    {"CHAT2SBX_DATABASE_PATH", "databasePath", SETTING_PATH, OFF(database_path),
     "${CHAT2SBX_STATE_DIR}/chat2sbx.sqlite", 0, 0, "STATE_DIR/chat2sbx.sqlite", "the registry (0600)"},
    {"CHAT2SBX_ALLOWED_HOST_ROOTS", "allowedHostRoots", SETTING_STRING, OFF(allowed_host_roots), "~/repositories", 0, 0,
     NULL, "colon-separated roots eligible for approval"},
    {"CHAT2SBX_ENABLE_TUNNEL", "enableTunnel", SETTING_BOOL, OFF(enable_tunnel), "1", 0, 1, NULL,
     "0 = serve local-only, no tunnel client"},
    {"CHAT2SBX_TUNNEL_CLIENT", "tunnelClient", SETTING_PATH, OFF(tunnel_client), "~/.local/bin/tunnel-client", 0, 0,
     NULL, "tunnel client executable"},
    {"CHAT2SBX_SECRET_DIR", "secretDir", SETTING_PATH, OFF(secret_dir), "~/.secrets/tunnel-client", 0, 0, NULL,
     "holds tunnel-id and key"},
    {"CHAT2SBX_MAX_ACTIVE_SANDBOXES", "maxActiveSandboxes", SETTING_INT, OFF(max_active_sandboxes), "auto", 1, 100000,
     "auto (one per 2 GiB of memory, 2-32)", "most sandboxes running at once ('auto', 'unlimited' or 1-100000)",
     .flags = SETTING_AUTO | SETTING_UNLIMITED},
    {"CHAT2SBX_MIN_FREE_DISK", "minFreeDisk", SETTING_SIZE, OFF(min_free_disk_bytes), "auto", 1L << 20, 64L << 40,
     "auto (the smaller of 2g and 5% of the disk)",
     "free space kept on the disks of the data root and the engine: below it new sandboxes are refused and "
     "writing ones paused (\"2g\", \"10%\" or 'auto')",
     .flags = SETTING_AUTO, .percent_offset = OFF(min_free_disk_percent), .percent_max = 50},
    {"CHAT2SBX_DEFAULT_DISK", "defaultDisk", SETTING_SIZE, OFF(default_disk_bytes), "auto", 256L << 20, 64L << 40,
     "auto (20g where the engine can limit a writable layer, else none)",
     "size of a sandbox's writable layer when it asks for none (\"20g\", 'none' or 'auto'); only engines on "
     "overlay2 over xfs, btrfs, zfs or devicemapper can limit it",
     .flags = SETTING_AUTO | SETTING_NONE},
    {"CHAT2SBX_DEFAULT_MEMORY", "defaultMemory", SETTING_SIZE, OFF(default_memory_bytes), "auto", 6L << 20, 1L << 40,
     "auto (half the memory, at most 8g)",
     "memory ceiling of a sandbox that asks for none (\"4g\", \"512m\" or 'auto'); swap is not added",
     .flags = SETTING_AUTO},
    {"CHAT2SBX_DOCKER_SOCKET", "dockerSocket", SETTING_PATH, OFF(docker_socket), "${DOCKER_HOST_UNIX}", 0, 0,
     "DOCKER_HOST if unix://, else /var/run/docker.sock", "Docker Engine socket"},
    {"CHAT2SBX_TEMPLATE_IMAGE", "templateImage", SETTING_STRING, OFF(template_image),
     "chat2sbx-template:" CHAT2SBX_VERSION, 0, 0, "chat2sbx-template:VERSION", "default sandbox image"},
    {"CHAT2SBX_RUNTIME", "runtime", SETTING_STRING, OFF(runtime), "", 0, 0,
     "auto (vm where KVM is usable and the vm image is built, else the engine's default)",
     "sandbox runtime: vm (a microVM per sandbox, issue 15) or an OCI runtime of the engine (runc, runsc, ...)"},
    {"CHAT2SBX_VM_ACCEL", "vmAccel", SETTING_STRING, OFF(vm_accel), "auto", 0, 0, NULL,
     "vm sandboxes' accelerator: kvm, tcg (emulation, many times slower) or auto (kvm where the CPU advertises "
     "vmx/svm and /dev/kvm opens, else tcg)",
     .choices = vm_accels},
    {"CHAT2SBX_VM_IMAGE", "vmImage", SETTING_STRING, OFF(vm_image), "chat2sbx-vm:" CHAT2SBX_VERSION, 0, 0,
     "chat2sbx-vm:VERSION",
     "the vm runtime's image (QEMU, kernel, guest disks; built by `make template-vm` from "
     "the template image)"},
    {"CHAT2SBX_VM_PATH", "vmPath", SETTING_PATH, OFF(vm_path), "${CHAT2SBX_LIB_DIR}/chat2sbx-vm", 0, 0,
     "LIB_DIR/chat2sbx-vm", "the vm runtime's launcher and guest init, mounted into vm sandboxes"},
    {"CHAT2SBX_VM_DOCKER", "vmDocker", SETTING_STRING, OFF(vm_docker), "demand", 0, 0, NULL,
     "when the Docker Engine inside a vm sandbox starts: demand (at the first use of /run/docker.sock), boot, "
     "or off",
     .choices = vm_dockers},
    {"CHAT2SBX_EXPOSE_HOST", "exposeHost", SETTING_STRING, OFF(expose_host), "127.0.0.1", 0, 0, NULL,
     "host address sandbox_expose binds"},
    {"CHAT2SBX_FIREWALL", "firewall", SETTING_BOOL, OFF(firewall), "1", 0, 1, NULL,
     "1 = keep sandbox bridges off the host's own services (nftables table inet chat2sbx, installed by serve "
     "as root or by setup); 0 = leave that to this host's own firewall (warned at start and in status)"},
    {"CHAT2SBX_MAX_YIELD_MS", "maxYieldMs", SETTING_INT, OFF(max_yield_ms), "30000", 100, 60000, NULL,
     "upper clamp of yield_time_ms for bash and bash_poll (ms, at most 60000)"},
    {"CHAT2SBX_MAX_BODY_BYTES", "maxBodyBytes", SETTING_INT64, OFF(max_body_bytes), "20971520", 65536, 268435456,
     "20971520 (20 MiB)",
     "largest MCP request body (bytes, 64 KiB to 256 MiB); a larger one gets 413 with a JSON-RPC error naming "
     "the limit"},
    {"CHAT2SBX_MAX_OUTPUT_CHARS", "maxOutputChars", SETTING_INT, OFF(max_output_chars), "60000", 1000, 1000000, NULL,
     "bound on the output returned by one tool call (bytes)"},
    {"CHAT2SBX_PIDS_LIMIT", "pidsLimit", SETTING_INT, OFF(pids_limit), "auto", 16, 32768,
     "auto (at most 4096, within this machine's share per sandbox)",
     "process limit of each sandbox ('auto' or 16-32768; refused above this machine's share per sandbox)",
     .flags = SETTING_AUTO},
    {"CHAT2SBX_IDLE_TIMEOUT_MS", "idleTimeoutMs", SETTING_INT64, OFF(idle_timeout_ms), "86400000", 60000, 315360000000L,
     NULL, "a sandbox with no tool call for this long is removed (ms; default 24 h)"},
    {"CHAT2SBX_MAX_EXPORT_BYTES", "maxExportBytes", SETTING_INT64, OFF(max_export_bytes), "2147483648", 65536,
     1099511627776L, NULL,
     "largest bundle or archive of a clone sandbox's work that is saved, and of a clone's source sent to "
     "another node (bytes, 64 KiB-1 TiB; default 2 GiB)"},
    {"CHAT2SBX_MAX_EXPORTS_PER_SANDBOX", "maxExportsPerSandbox", SETTING_INT, OFF(max_exports_per_sandbox), "100", 1,
     1000000, NULL,
     "most exports one sandbox keeps outside the trash (1-1000000); a save past it is refused and the sandbox "
     "keeps its work"},
    {"CHAT2SBX_MAX_EXPORT_BYTES_PER_SANDBOX", "maxExportBytesPerSandbox", SETTING_INT64,
     OFF(max_export_bytes_per_sandbox), "10737418240", 65536, 70368744177664L, "10737418240 (10 GiB)",
     "most bytes of bundles and archives one sandbox's exports keep outside the trash (64 KiB-64 TiB)"},
    {"CHAT2SBX_MAX_EXPORTS_TOTAL", "maxExportsTotal", SETTING_INT, OFF(max_exports_total), "1000", 1, 1000000, NULL,
     "most exports all sandboxes together keep outside the trash (1-1000000)"},
    {"CHAT2SBX_MAX_EXPORT_BYTES_TOTAL", "maxExportBytesTotal", SETTING_INT64, OFF(max_export_bytes_total),
     "53687091200", 65536, 70368744177664L, "53687091200 (50 GiB)",
     "most bytes of bundles and archives all exports together keep outside the trash (64 KiB-64 TiB)"},
    {"CHAT2SBX_SAVE_MEMORY_BYTES", "saveMemoryBytes", SETTING_INT64, OFF(save_memory_bytes), "1073741824", 134217728,
     68719476736L, NULL,
     "memory ceiling (address space) of each git the host runs on a saved bundle, in saves and export apply "
     "(bytes, 128 MiB-64 GiB; default 1 GiB); objects over a quarter of it are refused before git runs"},
    {"CHAT2SBX_HELPER_PATH", "helperPath", SETTING_PATH, OFF(helper_path), "${CHAT2SBX_LIB_DIR}/chat2sbx-helper", 0, 0,
     "LIB_DIR/chat2sbx-helper", "static helper binary mounted into each sandbox"},
    {"CHAT2SBX_LOG_DEBUG", "logDebug", SETTING_STRING, OFF(log_debug), "", 0, 0, "(none)",
     "components with debug logging, comma-separated (docker,mcp,helper,store,all)"},
    {"CHAT2SBX_LOG_JSON", "logJson", SETTING_BOOL, OFF(log_json), "0", 0, 1, NULL, "1 = log JSON lines"},
    {"CHAT2SBX_CLOCK_OFFSET_MS", "clockOffsetMs", SETTING_INT64, OFF(clock_offset_ms), "0", -315360000000L,
     315360000000L, NULL,
     "tests only (environment only): shift serve's wall clock by this many ms (retention without waiting)",
     .flags = SETTING_ENV_ONLY | SETTING_TEST},
    {"CHAT2SBX_TEST_UNSAFE_MOUNT_DOCKER_SOCKET", "testUnsafeMountDockerSocket", SETTING_BOOL,
     OFF(test_unsafe_mount_docker_socket), "0", 0, 1, NULL,
     "TEST ONLY, never in use, environment only: 1 = mount the engine socket into every sandbox, so doctor can "
     "be seen failing",
     .flags = SETTING_ENV_ONLY | SETTING_TEST},
    {"CHAT2SBX_WARM_POOL", "warmPool", SETTING_INT, OFF(warm_pool), "1", 0, 64, NULL,
     "started sandboxes kept ready for sandbox_create on each node (0-64 per node, at most its sandbox limit; "
     "0 = create every sandbox cold)"},
    {"CHAT2SBX_MAX_EXPOSURES", "maxExposures", SETTING_INT, OFF(max_exposures), "24", 1, 1024, NULL,
     "most sandbox_expose ports at once across all sandboxes (1-1024; each is one forwarder container)"},
};
#pragma GCC diagnostic pop

static const struct config_setting_info *infos;

const struct config_setting_info *config_settings(size_t *ret_n)
{
	static struct config_setting_info table[sizeof(settings) / sizeof(settings[0])];
	if (!infos) {
		for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++)
			table[i] = (struct config_setting_info){settings[i].env,
			                                        settings[i].yaml_key ? settings[i].yaml_key : "-",
			                                        settings[i].default_text ? settings[i].default_text
			                                                                 : settings[i].def,
			                                        settings[i].help,
			                                        (settings[i].flags & SETTING_ENV_ONLY) != 0,
			                                        (settings[i].flags & SETTING_TEST) != 0};
		infos = table;
	}
	*ret_n = sizeof(settings) / sizeof(settings[0]);
	return infos;
}

static const char *process_get(void *userdata, const char *name)
{
	(void)userdata;
	return getenv(name);
}

int config_has_desktop(void)
{
	const char *w = getenv("WAYLAND_DISPLAY"), *x = getenv("DISPLAY");
	return (w && *w) || (x && *x);
}

struct config_env config_env_process(void)
{
	static char exe_dir[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe_dir, sizeof(exe_dir) - 1);
	if (n > 0) {
		exe_dir[n] = '\0';
		char *slash = strrchr(exe_dir, '/');
		if (slash)
			*slash = '\0';
	} else {
		snprintf(exe_dir, sizeof(exe_dir), ".");
	}
	/* HOME unset or empty (a system unit, `env -i`, some sudo set-ups):
	 * the user's home from the password database, as a login would set
	 * it; "/" only when even that has none. */
	static char pw_home[PATH_MAX];
	const char *home = getenv("HOME");
	if (!home || !*home) {
		struct passwd pw, *pwp = NULL;
		char pbuf[4096];
		if (getpwuid_r(getuid(), &pw, pbuf, sizeof(pbuf), &pwp) == 0 && pwp && pwp->pw_dir && *pwp->pw_dir)
			snprintf(pw_home, sizeof(pw_home), "%s", pwp->pw_dir);
		else
			snprintf(pw_home, sizeof(pw_home), "/");
		home = pw_home;
	}
	/* ./.env only for a source tree's build: an installed chat2sbx runs in
	 * whatever folder its user is in, a cloned repository among them, whose
	 * .env is the user's file but not the user's choice. */
	return (struct config_env){process_get, NULL, home, config_installed ? NULL : ".env", exe_dir};
}

/* Expands "~/", "${NAME}" (an earlier setting, EXE_DIR, SOURCE_TREE: the
 * directory above EXE_DIR, DOCKER_HOST_UNIX). */
static char *expand(const struct config_env *env, const struct config *c, const char *in)
{
	char out[PATH_MAX * 2];
	size_t o = 0;
	const char *p = in;
	if (p[0] == '~' && (p[1] == '/' || p[1] == '\0')) {
		o += (size_t)snprintf(out, sizeof(out), "%s", env->home);
		p++;
	}
	while (*p && o < sizeof(out) - 1) {
		if (p[0] == '$' && p[1] == '{') {
			const char *end = strchr(p, '}');
			if (!end)
				break;
			char name[64];
			snprintf(name, sizeof(name), "%.*s", (int)(end - p - 2), p + 2);
			const char *val = "";
			char parent[PATH_MAX];
			if (strcmp(name, "EXE_DIR") == 0) {
				val = env->exe_dir ? env->exe_dir : ".";
			} else if (strcmp(name, "SOURCE_TREE") == 0) {
				snprintf(parent, sizeof(parent), "%s", env->exe_dir ? env->exe_dir : ".");
				char *slash = strrchr(parent, '/');
				if (slash && slash != parent)
					*slash = '\0';
				else
					snprintf(parent, sizeof(parent), "%s", slash ? "/" : "..");
				val = parent;
			} else if (strcmp(name, "DOCKER_HOST_UNIX") == 0) {
				const char *dh = env->get(env->userdata, "DOCKER_HOST");
				val = dh && strncmp(dh, "unix://", 7) == 0 ? dh + 7 : "/var/run/docker.sock";
			} else {
				for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++)
					if (strcmp(settings[i].env, name) == 0)
						val = *(char **)((char *)c + settings[i].offset);
			}
			o += (size_t)snprintf(out + o, sizeof(out) - o, "%s", val ? val : "");
			p = end + 1;
			continue;
		}
		out[o++] = *p++;
	}
	out[o < sizeof(out) ? o : sizeof(out) - 1] = '\0';
	return xstrdup(out);
}

static int parse_bool(const char *s, int *ret)
{
	if (!strcmp(s, "1") || !strcasecmp(s, "true") || !strcasecmp(s, "yes") || !strcasecmp(s, "on"))
		*ret = 1;
	else if (!strcmp(s, "0") || !strcasecmp(s, "false") || !strcasecmp(s, "no") || !strcasecmp(s, "off"))
		*ret = 0;
	else
		return -1;
	return 0;
}

/* A setting with a fixed set of words: INVALID_ARGUMENT naming them. */
static int check_choice(const char *name, const char *value, const char *const *choices, struct cp_error **err)
{
	char list[128] = "";
	size_t len = 0;
	for (size_t i = 0; choices[i]; i++) {
		if (!strcmp(value, choices[i]))
			return 0;
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", i ? ", " : "", choices[i]);
	}
	return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "%s '%s' is not one of %s", name, value, list);
}

/* The words an integer setting takes beside its range, as its refusal
 * names them. */
static const char *int_words(const struct setting *s)
{
	if ((s->flags & SETTING_AUTO) && (s->flags & SETTING_UNLIMITED))
		return ", 'auto' or 'unlimited'";
	if (s->flags & SETTING_AUTO)
		return " or 'auto'";
	if (s->flags & SETTING_UNLIMITED)
		return " or 'unlimited'";
	return "";
}

static int apply_int(const struct setting *s, const char *raw, const char *origin, void *field, struct cp_error **err)
{
	if ((s->flags & SETTING_UNLIMITED) && (!strcasecmp(raw, "unlimited") || !strcmp(raw, "0"))) {
		*(int *)field = 0;
		return 0;
	}
	/* Derived from the host when serve starts (guard/host_limits.c). */
	if ((s->flags & SETTING_AUTO) && !strcasecmp(raw, "auto")) {
		*(int *)field = CONFIG_AUTO;
		return 0;
	}
	char *end = NULL;
	errno = 0;
	long v = strtol(raw, &end, 10);
	if (errno || !*raw || *end || v < s->min || v > s->max)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "%s '%s' (from %s) is not an integer in %ld..%ld%s",
		                    s->env, raw, origin, s->min, s->max, int_words(s));
	if (s->type == SETTING_INT64)
		*(int64_t *)field = v;
	else
		*(int *)field = (int)v;
	return 0;
}

/* A size, 'auto', 'none' or "N%", as the setting's flags allow. A bad one
 * names the setting, where it came from and every accepted form. */
static int apply_size(const struct setting *s, struct config *c, const char *raw, const char *origin, int64_t *field,
                      struct cp_error **err)
{
	int *percent = s->percent_max ? (int *)((char *)c + s->percent_offset) : NULL;
	if (percent)
		*percent = 0;
	if ((s->flags & SETTING_AUTO) && (!*raw || !strcasecmp(raw, "auto"))) {
		*field = CONFIG_SIZE_AUTO;
		return 0;
	}
	if ((s->flags & SETTING_NONE) && !strcasecmp(raw, "none")) {
		*field = CONFIG_SIZE_NONE;
		return 0;
	}
	char others[96];
	snprintf(others, sizeof(others), "%s%s", s->flags & SETTING_NONE ? ", 'none'" : "",
	         s->flags & SETTING_AUTO ? " or 'auto'" : "");
	size_t n = strlen(raw);
	if (percent && n && raw[n - 1] == '%') {
		char *end = NULL;
		errno = 0;
		long v = strtol(raw, &end, 10);
		if (errno || end != raw + n - 1 || v < 1 || v > s->percent_max)
			return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
			                    "%s '%s' (from %s) is not a percentage from 1%% to %d%%; a size such as "
			                    "\"2g\"%s is accepted too",
			                    s->env, raw, origin, s->percent_max, others);
		*percent = (int)v;
		*field = CONFIG_SIZE_AUTO;
		return 0;
	}
	char pct[32] = "";
	if (percent)
		snprintf(pct, sizeof(pct), ", \"N%%\" (1-%d)", s->percent_max);
	int64_t bytes = 0;
	if (size_parse(s->env, raw, s->min, s->max, &bytes, err) < 0)
		return cp_error_prefix(err, "%s (from %s) takes a size%s%s", s->env, origin, pct, others);
	*field = bytes;
	return 0;
}

static int apply(const struct config_env *env, const struct setting *s, const char *raw, const char *origin,
                 struct config *c, struct cp_error **err)
{
	void *field = (char *)c + s->offset;
	switch (s->type) {
	case SETTING_STRING:
	case SETTING_PATH: {
		char *v = expand(env, c, raw);
		if (s->type == SETTING_PATH && v[0] != '/' && v[0] != '\0') {
			cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "%s '%s' (from %s) must be an absolute path", s->env,
			             raw, origin);
			free(v);
			return -1;
		}
		if (s->choices && check_choice(s->env, v, s->choices, err) < 0) {
			free(v);
			return -1;
		}
		free(*(char **)field);
		*(char **)field = v;
		return 0;
	}
	case SETTING_BOOL:
		if (parse_bool(raw, (int *)field) == 0)
			return 0;
		if (s->refusal)
			return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "%s (from %s) %s", s->env, origin,
			                    s->refusal);
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "%s '%s' (from %s) is not a boolean; use 1 or 0",
		                    s->env, raw, origin);
	case SETTING_INT:
	case SETTING_INT64: return apply_int(s, raw, origin, field, err);
	case SETTING_SIZE: return apply_size(s, c, raw, origin, (int64_t *)field, err);
	}
	return 0;
}

int config_host_is_loopback(const char *host)
{
	if (!host)
		return 0;
	if (!strcasecmp(host, "localhost") || !strcmp(host, "::1") || !strcmp(host, "[::1]"))
		return 1;
	struct in_addr a4;
	if (inet_pton(AF_INET, host, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	return 0;
}

/* A test-only setting found in a file is refused, not ignored, so the
 * person who wrote it learns it has no effect there. */
static int refuse_env_only(const struct setting *s, const struct config_file *dotenv, const char *dotenv_path,
                           const struct config_file *yaml, const char *yaml_path, struct cp_error **err)
{
	const char *where = NULL, *name = s->env;
	if (dotenv_path && config_file_get(dotenv, s->env))
		where = dotenv_path;
	else if (s->yaml_key && config_file_get(yaml, s->yaml_key)) {
		where = yaml_path;
		name = s->yaml_key;
	}
	if (!where)
		return 0;
	return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
	                    "'%s' sets the %s setting %s; %s settings are read only from the process environment, "
	                    "never from .env or config.yaml; remove the line from '%s'",
	                    where, s->flags & SETTING_TEST ? "test-only" : "environment-only", name,
	                    s->flags & SETTING_TEST ? "test-only" : "such", where);
}

int config_load(const struct config_env *env, struct config **ret_config, struct cp_error **err)
{
	struct config *c = xcalloc(1, sizeof(*c));
	struct config_file dotenv = {0}, yaml = {0};
	int r = 0;

	if (env->dotenv_path && config_file_read_dotenv(env->dotenv_path, &dotenv, err) < 0)
		goto fail;

	/* config.yaml lives in DATA_ROOT, so DATA_ROOT itself comes only from
	 * the environment, .env or the default; the file is read before the rest. */
	size_t n = sizeof(settings) / sizeof(settings[0]);
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < n; i++) {
			const struct setting *s = &settings[i];
			if ((pass == 0) != (s->yaml_key == NULL))
				continue;
			if ((s->flags & SETTING_ENV_ONLY) &&
			    refuse_env_only(s, &dotenv, env->dotenv_path, &yaml, "config.yaml", err) < 0)
				goto fail;
			const char *raw = env->get(env->userdata, s->env);
			const char *origin = "the environment";
			if (!raw && env->dotenv_path) {
				raw = config_file_get(&dotenv, s->env);
				origin = env->dotenv_path;
			}
			if (!raw && s->yaml_key) {
				raw = config_file_get(&yaml, s->yaml_key);
				origin = "config.yaml";
			}
			if (!raw) {
				raw = s->def;
				origin = "the default";
			}
			if (apply(env, s, raw, origin, c, err) < 0)
				goto fail;
		}
		if (pass == 0) {
			_cleanup_free_ char *path = xasprintf("%s/config.yaml", c->data_root);
			if (config_file_read_yaml(path, &yaml, err) < 0)
				goto fail;
			for (size_t k = 0; k < yaml.n; k++) {
				int known = 0;
				for (size_t i = 0; i < n; i++)
					if (settings[i].yaml_key && !strcmp(settings[i].yaml_key, yaml.keys[k]))
						known = 1;
				if (!known) {
					cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
					             "'%s' has an unknown key '%s'; see .env.example for the settings "
					             "(camelCase in config.yaml, e.g. maxActiveSandboxes)",
					             path, yaml.keys[k]);
					goto fail;
				}
			}
		}
	}
	if (!config_host_is_loopback(c->host)) {
		cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		             "CHAT2SBX_HOST '%s' is not a loopback address; the MCP port is for this machine's clients "
		             "only (the tunnel client uses the Unix socket), so serve binds only 127.0.0.0/8, ::1 "
		             "or localhost; unset CHAT2SBX_HOST or set it to 127.0.0.1",
		             c->host);
		goto fail;
	}
	config_file_clear(&dotenv);
	config_file_clear(&yaml);
	*ret_config = c;
	return r;
fail:
	config_file_clear(&dotenv);
	config_file_clear(&yaml);
	config_free(c);
	return -1;
}

void config_free(struct config *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++)
		if (settings[i].type == SETTING_STRING || settings[i].type == SETTING_PATH)
			free(*(char **)((char *)c + settings[i].offset));
	free(c);
}
