/* config.h: every setting of chat2sbx, declared once in a table (config.c),
 * parsed once into a read-only struct. Precedence: defaults < config.yaml
 * (DATA_ROOT/config.yaml, camelCase keys) < .env in the working directory <
 * the process environment. Nothing outside config/ calls getenv. Test-only
 * settings (CHAT2SBX_CLOCK_OFFSET_MS, CHAT2SBX_TEST_UNSAFE_MOUNT_DOCKER_SOCKET)
 * come only from the environment; .env and config.yaml are read only when
 * owned by the user (or root) and not group- or world-writable; CHAT2SBX_HOST
 * must be loopback (security review, defects 1 and 2). */
#ifndef CP_CONFIG_H
#define CP_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "../base/error.h"

struct config {
	char *host;                   /* CHAT2SBX_HOST */
	int port;                     /* CHAT2SBX_PORT */
	int mcp_token;                /* CHAT2SBX_MCP_TOKEN: 1 = TCP requests need the bearer token (default) */
	int ui_code_ttl_ms;           /* CHAT2SBX_UI_CODE_TTL_MS: a `chat2sbx ui` login link's life (issue 26) */
	char *data_root;              /* CHAT2SBX_DATA_ROOT */
	char *lib_dir;                /* CHAT2SBX_LIB_DIR: chat2sbx-helper, chat2sbx-vm (issue 25) */
	char *data_dir;               /* CHAT2SBX_DATA_DIR: template inputs, .env.example (issue 25) */
	char *state_dir;              /* CHAT2SBX_STATE_DIR */
	char *workspace_root;         /* CHAT2SBX_WORKSPACE_ROOT */
	char *database_path;          /* CHAT2SBX_DATABASE_PATH */
	char *allowed_host_roots;     /* CHAT2SBX_ALLOWED_HOST_ROOTS, colon-separated */
	int enable_tunnel;            /* CHAT2SBX_ENABLE_TUNNEL */
	char *tunnel_client;          /* CHAT2SBX_TUNNEL_CLIENT */
	char *secret_dir;             /* CHAT2SBX_SECRET_DIR */
	int max_active_sandboxes;     /* CHAT2SBX_MAX_ACTIVE_SANDBOXES, 0 = unlimited, CONFIG_AUTO = derived */
	int64_t default_memory_bytes; /* CHAT2SBX_DEFAULT_MEMORY, CONFIG_SIZE_AUTO = derived */
	/* CHAT2SBX_MIN_FREE_DISK: bytes, or CONFIG_SIZE_AUTO with
	 * min_free_disk_percent 0 for 'auto' (policy_min_free_bytes decides) */
	int64_t min_free_disk_bytes;
	int min_free_disk_percent;  /* "N%": N (1-50), else 0 */
	int64_t default_disk_bytes; /* CHAT2SBX_DEFAULT_DISK: bytes, CONFIG_SIZE_AUTO or CONFIG_SIZE_NONE */
	char *docker_socket;        /* CHAT2SBX_DOCKER_SOCKET */
	char *template_image;       /* CHAT2SBX_TEMPLATE_IMAGE */
	char *runtime;            /* CHAT2SBX_RUNTIME, "" = auto (vm where KVM is usable, else the engine's default) */
	char *vm_accel;           /* CHAT2SBX_VM_ACCEL: auto, kvm or tcg (issue 15) */
	char *vm_image;           /* CHAT2SBX_VM_IMAGE: the vm runtime's image */
	char *vm_path;            /* CHAT2SBX_VM_PATH: chat2sbx-vm, mounted into vm sandboxes */
	char *vm_docker;          /* CHAT2SBX_VM_DOCKER: demand, boot or off (the guest's dockerd) */
	char *expose_host;        /* CHAT2SBX_EXPOSE_HOST */
	int firewall;             /* CHAT2SBX_FIREWALL: install table inet chat2sbx (issue 12) */
	int max_yield_ms;         /* CHAT2SBX_MAX_YIELD_MS */
	int max_output_chars;     /* CHAT2SBX_MAX_OUTPUT_CHARS */
	int64_t max_body_bytes;   /* CHAT2SBX_MAX_BODY_BYTES: largest MCP request body */
	int pids_limit;           /* CHAT2SBX_PIDS_LIMIT, CONFIG_AUTO = derived */
	int64_t idle_timeout_ms;  /* CHAT2SBX_IDLE_TIMEOUT_MS: a sandbox without a tool call this long is removed */
	int64_t max_export_bytes; /* CHAT2SBX_MAX_EXPORT_BYTES: cap on one saved bundle/archive (issue 14) */
	/* Caps on the exports kept outside the trash (issue 23): per sandbox and
	 * for the whole data root, in exports and in bytes. */
	int max_exports_per_sandbox;          /* CHAT2SBX_MAX_EXPORTS_PER_SANDBOX */
	int64_t max_export_bytes_per_sandbox; /* CHAT2SBX_MAX_EXPORT_BYTES_PER_SANDBOX */
	int max_exports_total;                /* CHAT2SBX_MAX_EXPORTS_TOTAL */
	int64_t max_export_bytes_total;       /* CHAT2SBX_MAX_EXPORT_BYTES_TOTAL */
	int64_t save_memory_bytes; /* CHAT2SBX_SAVE_MEMORY_BYTES: memory ceiling of host git on a save (issue 23) */
	char *helper_path;         /* CHAT2SBX_HELPER_PATH */
	char *log_debug;           /* CHAT2SBX_LOG_DEBUG */
	int log_json;              /* CHAT2SBX_LOG_JSON */
	int64_t clock_offset_ms;   /* CHAT2SBX_CLOCK_OFFSET_MS, tests only */
	int warm_pool;             /* CHAT2SBX_WARM_POOL: started sandboxes kept ready (issue 8) */
	                           /* Where each value came from, for `status`: not needed yet. */
	/* CHAT2SBX_TEST_UNSAFE_MOUNT_DOCKER_SOCKET: TEST ONLY, weakens isolation (create.c) */
	int test_unsafe_mount_docker_socket;
	int max_exposures; /* CHAT2SBX_MAX_EXPOSURES: sandbox_expose ports at once, all sandboxes */
};

/* An integer setting given as 'auto': derived from the host when serve
 * starts (guard/host_limits.c). */
#define CONFIG_AUTO (-1)
/* A size setting given as 'auto' (or empty): derived where it is used. 0,
 * since no size setting takes 0 bytes, so a zeroed struct config means
 * 'auto' too. */
#define CONFIG_SIZE_AUTO 0
/* A size setting given as 'none' (CHAT2SBX_DEFAULT_DISK). */
#define CONFIG_SIZE_NONE (-1)

/* Where settings are read from. Tests pass their own; main uses config_env_process(). */
struct config_env {
	/* Returns the value of an environment variable or NULL (borrowed). */
	const char *(*get)(void *userdata, const char *name);
	void *userdata;
	const char *home;        /* expands "~/" */
	const char *dotenv_path; /* ".env" or NULL to skip */
	const char *exe_dir;     /* directory of the running binary (a source tree's LIB_DIR) */
};

/* The process environment, $HOME (unset or empty: the home the password
 * database gives this uid, "/" when it has none), ./.env (a source tree's
 * build only: an installed one reads no .env, see config_installed) and the
 * directory of /proc/self/exe. Strings inside are static or owned by the
 * process. */
struct config_env config_env_process(void);

/* Builds the effective configuration. On success *ret_config is owned by the
 * caller (config_free). Fails with INVALID_ARGUMENT naming the variable (or
 * config.yaml key), the bad value and the accepted range or words (sizes,
 * percentages and enumerations are checked here, not where they are used);
 * the yaml file being
 * unreadable or malformed names the file and the line; a .env or config.yaml
 * that is not a regular file of the user or root, or is group/world-writable,
 * or that sets a test-only setting, names the file and the fix; a
 * non-loopback CHAT2SBX_HOST says why it is refused. Reads files; no other I/O. */
int config_load(const struct config_env *env, struct config **ret_config, struct cp_error **err);
void config_free(struct config *config);

/* 1 when host (a CHAT2SBX_HOST value) is loopback: an IPv4 address in
 * 127.0.0.0/8, "::1" ("[::1]") or "localhost"; 0 otherwise. Pure. */
int config_host_is_loopback(const char *host);

/* 1 when this process runs in a graphical session (WAYLAND_DISPLAY or
 * DISPLAY set and not empty), where `chat2sbx ui` opens a browser. */
int config_has_desktop(void);

/* The setting table, for .env.example checks and `status`. */
struct config_setting_info {
	const char *env;          /* "CHAT2SBX_PORT" */
	const char *yaml_key;     /* "port" */
	const char *default_text; /* as documented ("~/.chat2sbx", "unlimited") */
	const char *help;
	int env_only;  /* 1: read only from the process environment */
	int test_only; /* 1: for tests only (never carried into a service unit) */
};
/* Returns the table and its length via *ret_n (static storage). */
const struct config_setting_info *config_settings(size_t *ret_n);

/* The compiled-in install directories (install_dirs.c): "${EXE_DIR}" and
 * "${SOURCE_TREE}" in the source tree's build, PREFIX/lib/chat2sbx and
 * PREFIX/share/chat2sbx in `make install`'s; config_installed says which. */
extern const char config_default_lib_dir[];
extern const char config_default_data_dir[];
extern const int config_installed;

/* Which install directory a file of chat2sbx's own is in. */
enum config_dir { CONFIG_DIR_LIB, CONFIG_DIR_DATA };

/* Sets *ret_path (caller frees) to NAME (relative, e.g. "template/build.sh")
 * inside the LIB_DIR or DATA_DIR of c, after checking it is readable. WHAT
 * names the file for a person ("the template's build script"). Fails with
 * UNAVAILABLE naming the path, the directory and its setting, and what to
 * do: install chat2sbx again (an installed build) or build it with 'make'
 * (a source tree's build). Then fails with DENIED when another local user
 * could have written the file: a component of its real path up to "/" is
 * owned by someone other than root, this user or the owner of the running
 * program, or is writable by others (a sticky directory excepted) or by a
 * group other than root's, "staff" or the owner's private group; the
 * message names the component, its owner and mode; the same for every
 * entry of the folder the file is in (a build script reads the files beside
 * it). Reads the file system
 * (access(2), stat(2), the user and group databases). */
int config_install_path(const struct config *c, enum config_dir dir, const char *name, const char *what,
                        char **ret_path, struct cp_error **err);

/* Checks that PATH, a file setting VAR (e.g. CHAT2SBX_HELPER_PATH) names,
 * is readable. Fails with UNAVAILABLE: a path inside LIB_DIR or DATA_DIR
 * gets config_install_path's words; another (the setting was changed) names
 * VAR and says to point it at an existing file or unset it. A readable
 * file is then checked as config_install_path checks it (DENIED when
 * another local user could have written it). */
int config_install_require(const struct config *c, const char *path, const char *what, const char *var,
                           struct cp_error **err);

#endif
