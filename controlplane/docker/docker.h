/* docker.h: the Docker Engine REST client (the only libcurl code).
 * Talks to the engine over its Unix socket, or to another machine's
 * engine at tcp://HOST:PORT with mutual TLS (issue 28); the API version is negotiated
 * from GET /version (Docker Engine API reference, "Versioning"). Every engine
 * error becomes a cp_error whose message names the call and carries the
 * engine's own "message" field. Engine HTTP statuses map to codes:
 * 400 → INVALID_ARGUMENT, 404 → NOT_FOUND, 409 → CONFLICT, 5xx → UNAVAILABLE
 * (with the engine's reason), connection failure → UNAVAILABLE naming the
 * socket and how to start the engine. */
#ifndef CP_DOCKER_H
#define CP_DOCKER_H

#include <stddef.h>
#include <stdint.h>

#include "../base/error.h"

struct json_object;
struct docker_engine;

/* Highest Engine API version this client speaks; lower engines are used at
 * their own ApiVersion (never below DOCKER_API_MIN). */
#define DOCKER_API_MAX "1.43"
#define DOCKER_API_MIN "1.41"

/* Opens a client for the engine at socket_path (copied) and negotiates the
 * API version with GET /version (timeout 5 s). On success *ret_engine is owned
 * by the caller (docker_engine_free). Fails with UNAVAILABLE when the socket
 * does not answer ("cannot reach the Docker Engine at '/var/run/docker.sock':
 * ...; start it with 'sudo systemctl start docker' or 'dockerd &'"), or when
 * the engine's API is older than DOCKER_API_MIN. Thread-safe once created:
 * each call uses its own curl handle. */
int docker_engine_new(const char *socket_path, struct docker_engine **ret_engine, struct cp_error **err);
void docker_engine_free(struct docker_engine *engine);

/* A remote engine's mutual TLS files (issue 28): paths, never contents.
 * ca: the CA that signed the engine's server certificate (the only trust
 * anchor; the system's are not used); cert and key: chat2sbx's client
 * certificate (signed by the CA the engine's dockerd --tlscacert trusts)
 * and its unencrypted key, PEM. */
struct docker_tls_files {
	const char *ca;
	const char *cert;
	const char *key;
};

/* Checks a remote engine's address: "tcp://HOST:PORT" with HOST a name, an
 * IPv4 address or a bracketed IPv6 address and PORT 1..65535, nothing
 * after it; has_tls says whether all three TLS files were given. On
 * success *ret_host (caller frees; without brackets) and *ret_port are set.
 * INVALID_ARGUMENT saying what to write instead for anything else: an
 * http:// or https:// URL, a unix:// or bare socket path (this machine's
 * engine is node 'local'), a missing or bad port, and tcp:// without TLS
 * ("plain TCP without TLS is refused": such a port makes whoever reaches
 * it root on that machine). Pure. */
int docker_endpoint_parse(const char *endpoint, int has_tls, char **ret_host, int *ret_port, struct cp_error **err);

/* Opens a client for another machine's engine at endpoint (checked by
 * docker_endpoint_parse; copied) over mutual TLS with tls's files (paths
 * copied; the files are read by libcurl at each connection, so they must
 * stay where they are), and negotiates the API version as docker_engine_new
 * does, over the same verified connection: the engine's certificate must
 * chain to tls->ca and name the host, and the engine must accept tls->cert.
 * Errors: docker_endpoint_parse's; UNAVAILABLE (detail ENGINE_UNREACHABLE)
 * when nothing answers; DENIED when the engine's certificate is not trusted
 * or it refuses ours; INVALID_ARGUMENT when a file cannot be used; TIMEOUT.
 * Every message names the endpoint, never a file's contents. Every call
 * on the handle (docker_request, the attach) then goes over TLS. Blocks at
 * most 5 s. */
int docker_engine_new_tls(const char *endpoint, const struct docker_tls_files *tls, struct docker_engine **ret_engine,
                          struct cp_error **err);
/* 1 for an engine opened by docker_engine_new_tls, 0 for the socket's. */
int docker_engine_is_remote(const struct docker_engine *engine);

/* Negotiated API version ("1.41"); borrowed, valid for the engine's lifetime. */
const char *docker_engine_api_version(const struct docker_engine *engine);
/* Engine version ("20.10.24+dfsg1"); borrowed. */
const char *docker_engine_version(const struct docker_engine *engine);
/* Where the engine is: the socket path, or a remote engine's
 * "tcp://HOST:PORT"; borrowed. */
const char *docker_engine_socket(const struct docker_engine *engine);

/* Why a connect to the engine's socket failed, in words, for an error with
 * detail CP_DETAIL_ENGINE_UNREACHABLE and its errnum: ENOENT "no socket
 * exists there, so the engine is not running", ECONNREFUSED "nothing accepts
 * connections on it", EACCES/EPERM "permission denied: this user may not use
 * the engine's socket ...", else strerror(errnum). Static or thread-local
 * storage (valid until this thread's next call); never NULL. Pure.
 * An error with EACCES/EPERM carries docker_socket_access_hint's words. */
const char *docker_engine_unreachable_cause(int errnum);

/* What this user does to get the right to use the engine's socket at
 * socket_path (borrowed), written into buf (NUL-terminated, truncated to
 * size): from the socket's group (named; "docker" when it cannot be read),
 * the group database and this process's groups: "you are not in the docker
 * group; run 'sudo usermod -aG docker $USER' and log in again", or, when the
 * database lists the user but this process lacks the group, "log in again
 * (or run 'newgrp docker')", or, when the process holds the group, that the
 * socket's mode keeps it out. Reads the file system and the group and
 * user databases (NSS); blocks only as they do. */
void docker_socket_access_hint(const char *socket_path, char *buf, size_t size);

/* Low-level request: method ("GET"), path below the version prefix
 * ("/containers/json?all=1"), optional JSON body (borrowed). timeout_ms bounds
 * the whole transfer. On an HTTP status < 400, *ret_status gets the status and
 * *ret_body (may be NULL for an empty body; caller puts) the parsed JSON, or a
 * JSON string for a non-JSON body. On >= 400 it fails with the mapped code and
 * "<what>: <engine message>". A response body longer than its call's bound
 * (docker_response_max in engine_internal.h: 1 KiB for /_ping to 16 MiB for
 * an exec's output) fails with INTERNAL, read no further. */
int docker_request(struct docker_engine *engine, const char *method, const char *path, struct json_object *body,
                   long timeout_ms, const char *what, long *ret_status, struct json_object **ret_body,
                   struct cp_error **err);

/* ---- engine information (docker/info.c) ---- */

/* Whether the engine has the OCI runtime name registered (GET /info
 * Runtimes), and whether it runs with runtimeArgs "--network=none". *ret_names
 * (may be NULL; caller frees) lists the registered runtimes, comma-separated
 * (bounded: DOCKER_RUNTIMES_MAX).
 * UNAVAILABLE when the engine does not answer. Blocks at most 10 s. */
int docker_engine_runtime(struct docker_engine *engine, const char *name, int *ret_found, int *ret_no_network,
                          char **ret_names, struct cp_error **err);

/* What GET /info says about one OCI runtime (docker_engine_runtime_info). */
struct docker_runtime_info {
	int found;           /* registered under that name */
	int no_network;      /* runtimeArgs has "--network=none" */
	int ignores_seccomp; /* gVisor's runsc without --oci-seccomp: the seccomp profile would not apply */
	char *names;         /* owned: every registered name, comma-separated */
};
void docker_runtime_info_clear(struct docker_runtime_info *r);

/* Like docker_engine_runtime, and also whether the runtime would ignore the
 * container's seccomp profile (runsc, by name or path, registered without
 * --oci-seccomp). *ret (caller clears) is set on success. UNAVAILABLE when
 * the engine does not answer. Blocks at most 10 s. */
int docker_engine_runtime_info(struct docker_engine *engine, const char *name, struct docker_runtime_info *ret,
                               struct cp_error **err);

/* Bounds on what is read of GET /info's Runtimes: at most this many names,
 * each 1 to DOCKER_RUNTIME_NAME_MAX characters of [A-Za-z0-9._+-]; other
 * names are left out of every list (another machine's engine writes it). */
#define DOCKER_RUNTIMES_MAX 64
#define DOCKER_RUNTIME_NAME_MAX 64
/* Longest ServerVersion kept (characters). */
#define DOCKER_ENGINE_VERSION_MAX 64
/* The most memory (bytes: 1 PiB) and CPUs a machine's /info is believed
 * for; more reads as not known (0). */
#define DOCKER_MEMORY_MAX (1LL << 50)
#define DOCKER_CPUS_MAX 65536

/* What GET /info says about the machine (issue 28: a node's labels). */
struct docker_engine_facts {
	char *runtimes;       /* owned: registered OCI runtime names, comma-separated, bounded as above */
	int64_t memory_bytes; /* MemTotal (0 when absent) */
	int64_t cpus;         /* NCPU (0 when absent) */
	char *engine_version; /* owned: ServerVersion; NULL when absent, longer than
	                       * DOCKER_ENGINE_VERSION_MAX or not printable ASCII */
};
void docker_engine_facts_clear(struct docker_engine_facts *f);
/* Reads the facts of a GET /info answer (info borrowed) into *ret (caller
 * clears). INTERNAL when info is not an object with Runtimes; absent or
 * negative numbers read as 0. Pure. */
int docker_engine_facts_parse(struct json_object *info, struct docker_engine_facts *ret, struct cp_error **err);
/* GET /info and docker_engine_facts_parse. UNAVAILABLE (and the transport's
 * errors) when the engine does not answer. Blocks at most 10 s. */
int docker_engine_facts(struct docker_engine *engine, struct docker_engine_facts *ret, struct cp_error **err);
/* GET /_ping (Docker Engine API, "Ping"): 0 when the engine answers OK;
 * UNAVAILABLE otherwise, and the transport's errors. Blocks at most
 * timeout_ms. */
int docker_engine_ping(struct docker_engine *engine, long timeout_ms, struct cp_error **err);

/* ---- images (docker/images.c) ---- */

/* GET /images/{name}/json. On success *ret_id (caller frees) is the image id.
 * Fails with NOT_FOUND when the image is absent. */
int docker_image_inspect(struct docker_engine *engine, const char *name, char **ret_id, struct cp_error **err);

/* ---- the sandbox seccomp profile (docker/seccomp.c) ---- */

/* Builds the sandbox seccomp profile from base_json, a profile in the Docker
 * Engine's format: the base unchanged except that chmod, fchmod, fchmodat,
 * fchmodat2, open, openat, creat, mknod and mknodat run only when their mode
 * argument has neither S_ISUID nor S_ISGID (SCMP_CMP_MASKED_EQ, value 06000,
 * valueTwo 0, wherever the base allowed them), and openat2 and the io_uring
 * calls answer ENOSYS. *ret_profile (caller frees) is compact JSON.
 * INVALID_ARGUMENT naming the defect for a base that is not such a profile
 * or whose default action lets unlisted calls run. Pure and thread-safe.
 * (Issue 12: container root must never plant setuid files on host mounts.) */
int docker_seccomp_profile_build(const char *base_json, char **ret_profile, struct cp_error **err);

/* The Docker Engine 20.10.24 default profile embedded at build time
 * (docker/profiles/README.md); static text. */
const char *docker_seccomp_default_profile(void);

/* "seccomp=<sandbox profile>", the SecurityOpt entry docker_container_create
 * gives every container, built once per process from the embedded default.
 * *ret_opt is borrowed for the process's life. INTERNAL when the embedded
 * profile cannot be built. Thread-safe. */
int docker_seccomp_security_opt(const char **ret_opt, struct cp_error **err);

/* ---- containers (docker/containers.c) ---- */

struct docker_mount {
	const char *source; /* host path; with volume, the engine volume's name */
	const char *target; /* path inside the container */
	int read_only;
	int volume; /* 1: Type "volume" (a volume of the engine's, made with docker_volume_create); 0: "bind" */
};

/* A published TCP port: container_port/tcp on host_ip:host_port (Docker
 * Engine API v1.41, HostConfig.PortBindings). host_port 0 lets the engine
 * choose (an empty HostPort). */
struct docker_port_binding {
	int container_port;
	const char *host_ip; /* "127.0.0.1"; NULL or "" = every address */
	int host_port;
};

/* What chat2sbx asks of a container. Strings are borrowed for the call. */
struct docker_container_spec {
	const char *name;              /* "sbx_…" */
	const char *image;             /* "chat2sbx-template:0.1.0" */
	const char *const *entrypoint; /* NULL-terminated argv; the helper */
	const char *const *env;        /* NULL-terminated "K=V"; nothing from the host */
	const char *const *labels;     /* NULL-terminated, alternating key, value */
	const char *working_dir;       /* "/workspace" */
	const struct docker_mount *mounts;
	size_t n_mounts;
	int64_t memory_bytes; /* 0 = engine default; MemorySwap is set equal (no swap on top) */
	int64_t nano_cpus;    /* 0 = engine default */
	int64_t pids_limit;   /* 0 = engine default */
	int network_disabled; /* 1 = NetworkMode "none" */
	const char *network;  /* NetworkMode when not disabled; NULL = engine default bridge */
	const char *runtime;  /* NULL = engine default */
	/* Forwarder containers (issue 6, sandbox_expose); zero values keep the
	 * sandbox defaults described at docker_container_create. */
	const struct docker_port_binding *port_bindings; /* HostConfig.PortBindings (+ ExposedPorts) */
	size_t n_port_bindings;
	const char *restart_policy; /* RestartPolicy.Name ("unless-stopped"); NULL = engine default ("no") */
	int cap_drop_all;           /* 1 = CapDrop ["ALL"] instead of the default drop list */
	int read_only_rootfs;       /* 1 = ReadonlyRootfs */
	const char *user;           /* "65534:65534"; NULL = the image's user */
	int no_stdin;               /* 1 = no stdin and no attach (nobody talks to it) */
	int pid_host;               /* 1 = PidMode "host" (the engine host's pid namespace); never a sandbox's */
	int oom_score_adj;          /* HostConfig.OomScoreAdj, -1000..1000; 0 = engine default */
	int64_t disk_bytes;         /* HostConfig.StorageOpt size of the writable layer; 0 = none */
	/* The vm runtime (issue 15); NULL keeps the sandbox defaults. */
	const char *const *cap_add; /* NULL-terminated: with cap_drop_all, the only capabilities kept */
	const char *const *devices; /* NULL-terminated host device paths, passed as the same path, rwm */
};

/* POST /containers/create?name=… with OpenStdin, AttachStdin/Stdout/Stderr,
 * StdinOnce false, Tty false, LogConfig "none" (helper traffic never reaches
 * the engine's logs), Privileged false, CapDrop of NET_RAW/MKNOD/AUDIT_WRITE…,
 * no-new-privileges, the sandbox seccomp profile (docker_seccomp_security_opt;
 * forwarders too), Init false (the helper is PID 1). *ret_id (caller frees)
 * is the container id. A name already in use fails with CONFLICT. */
int docker_container_create(struct docker_engine *engine, const struct docker_container_spec *spec, char **ret_id,
                            struct cp_error **err);

/* POST /containers/{id}/start. 304 (already started) counts as success. */
int docker_container_start(struct docker_engine *engine, const char *id, struct cp_error **err);

/* POST /containers/{id}/stop?t=0 (container_stop.c): kills it at once and
 * keeps it stopped (restart policy unless-stopped does not start it again).
 * 304 (already stopped) counts as success. id borrowed. NOT_FOUND when
 * absent. Blocks at most 30 s. */
int docker_container_stop(struct docker_engine *engine, const char *id, struct cp_error **err);

/* DELETE /containers/{id}?force=1&v=1. NOT_FOUND when it does not exist (callers
 * that only want it gone may ignore that code). A removal already under way
 * is waited for (0 once gone, CONFLICT if it outlasts 30 s). */
int docker_container_remove(struct docker_engine *engine, const char *id, struct cp_error **err);

struct docker_container_state {
	char *id;     /* owned */
	char *name;   /* owned, without the leading '/' */
	char *status; /* owned: "created", "running", "exited", "dead", ... */
	int running;
	int exit_code;
	char *error; /* owned, engine's State.Error, may be NULL */
};
void docker_container_state_clear(struct docker_container_state *s);

/* GET /containers/{id}/json → *ret_state (caller clears). NOT_FOUND when absent. */
int docker_container_inspect(struct docker_engine *engine, const char *id, struct docker_container_state *ret_state,
                             struct cp_error **err);

/* GET /containers/json?all=1&filters={"label":[label]} with label "key" or
 * "key=value". *ret_states is an array of *ret_n states (caller clears each
 * and frees the array). */
int docker_container_list(struct docker_engine *engine, const char *label, struct docker_container_state **ret_states,
                          size_t *ret_n, struct cp_error **err);

/* ---- exec (docker/exec.c; the hijack is attach.c's) ---- */

struct docker_exec_result {
	int exit_code; /* -1 when the engine did not say */
	char *out;     /* owned: stdout, NUL-terminated (at most 64 KiB) */
	char *err;     /* owned: stderr, likewise */
	int truncated; /* 1: a stream passed 64 KiB and was cut there */
};
void docker_exec_result_clear(struct docker_exec_result *r);

/* Runs argv (NULL-terminated, borrowed) in the running container id as
 * user 0:0 without a terminal and waits for it (Docker Engine API v1.41,
 * "Create an exec instance", "Start an exec instance" without Detach,
 * "Inspect an exec instance"). *ret (caller clears) holds its exit code
 * and output. NOT_FOUND when the container is absent, CONFLICT when it is
 * not running (the engine's 409), TIMEOUT when the command outlives
 * timeout_ms. Blocks at most timeout_ms + 20 s. */
int docker_container_exec(struct docker_engine *engine, const char *id, const char *const *argv, long timeout_ms,
                          struct docker_exec_result *ret, struct cp_error **err);

/* Starts argv (NULL-terminated, borrowed) in the running container id as
 * user ("UID:GID", borrowed) without a terminal, with stdin, stdout and
 * stderr attached, and hands over the hijacked stream (Docker Engine API
 * v1.41, "Create an exec instance", then "Start an exec instance" with
 * "Upgrade: tcp"): *ret_fd (caller closes; blocking, O_CLOEXEC) takes raw
 * bytes for the command's stdin and yields its stdout and stderr as
 * multiplexed frames (docker_demux); it ends when the command ends.
 * Closing it ends the command's stdin (and, over TLS, the whole stream).
 * The exec is never inspected or removed: the engine forgets it with its
 * container. NOT_FOUND when the container is absent, CONFLICT when it is
 * not running; the other codes of docker_hijack. Blocks at most
 * timeout_ms + 10 s (the create's bound). */
int docker_container_exec_stream(struct docker_engine *engine, const char *id, const char *const *argv,
                                 const char *user, long timeout_ms, int *ret_fd, struct cp_error **err);

/* ---- pause and size (docker/container_pause.c) ---- */

/* POST /containers/{id}/pause and /unpause (the cgroup freezer: nothing in
 * it runs until unpaused). 404 → NOT_FOUND; a container that is not running
 * (or already so) gets the engine's 409 as CONFLICT. Blocks at most 15 s. */
int docker_container_pause(struct docker_engine *engine, const char *id, struct cp_error **err);
int docker_container_unpause(struct docker_engine *engine, const char *id, struct cp_error **err);
/* What a container writes on the engine's disk, as the engine reports it. */
struct docker_container_usage {
	int64_t size_rw; /* SizeRw: bytes of the regular files in its writable layer; -1 unknown */
	int paused;      /* State.Paused */
	int volumes;     /* mounts of Type "volume": their bytes are not in SizeRw */
	char *files[3];  /* owned, may be NULL: HostsPath, ResolvConfPath, HostnamePath (host paths the
	                  * engine bind-mounts read-write into it, outside the layer) */
};
void docker_container_usage_clear(struct docker_container_usage *u);
/* GET /containers/{id}/json?size=1 (Docker Engine API v1.41, "Inspect a
 * container", size). *ret (caller clears) is filled on success. The engine
 * walks the layer's upper directory to answer (moby 20.10: overlay2's
 * DiffSize → pkg/directory.Size: st_size of every regular file, hard links
 * once, directories and empty files not at all; the container's lock is not
 * held meanwhile) and does not stop walking when we give up. Blocks at most
 * timeout_ms (> 0); TIMEOUT then, NOT_FOUND when the container is gone. */
int docker_container_usage(struct docker_engine *engine, const char *id, long timeout_ms,
                           struct docker_container_usage *ret, struct cp_error **err);

/* ---- storage (docker/info.c) ---- */

struct docker_storage {
	char *driver;       /* owned: "overlay2" */
	char *backing_fs;   /* owned: "extfs", "xfs"; NULL when not reported */
	char *root_dir;     /* owned: DockerRootDir, "/var/lib/docker" */
	int size_supported; /* containers take StorageOpt size on this driver and filesystem */
};
void docker_storage_clear(struct docker_storage *s);
/* GET /info: the storage driver, its backing filesystem, the engine's data
 * directory, and whether a container's writable layer can be given a size
 * (overlay2 on xfs, devicemapper, btrfs, zfs). *ret owned by the caller
 * (docker_storage_clear). UNAVAILABLE when the engine does not answer.
 * Blocks at most 10 s. */
int docker_engine_storage(struct docker_engine *engine, struct docker_storage *ret, struct cp_error **err);

/* ---- networks (docker/networks.c) ---- */

/* Makes sure a bridge network called name exists, with inter-container
 * communication disabled, the label label=true and its bridge interface
 * called bridge_name (com.docker.network.bridge.name, at most 15
 * characters), so the host's firewall can name it (issue 12). An existing
 * network on another bridge (an older chat2sbx made it without the name)
 * is removed and created again when no container, in any state, refers to
 * it (a stopped member could not start on a replacement); otherwise it is
 * used as it is. ret_bridge (size bytes, may be NULL) gets the bridge
 * interface the network has afterwards: bridge_name, or the older
 * network's "br-<id>". All borrowed. Fails with UNAVAILABLE or INTERNAL
 * naming the call. Blocks at most 15 s per engine call (up to five). */
int docker_network_ensure(struct docker_engine *engine, const char *name, const char *label, const char *bridge_name,
                          char *ret_bridge, size_t size, struct cp_error **err);

/* ---- networks made on request (docker/network_ops.c) ---- */

/* POST /networks/create (Docker Engine API v1.41, "Create a network"): a
 * bridge called name with CheckDuplicate, inter-container communication on
 * (icc 1) or off (com.docker.network.bridge.enable_icc), its host interface
 * called bridge_name (com.docker.network.bridge.name; NULL = the engine's
 * "br-<id>"; at most 15 characters, and no other network's) and labels
 * (NULL-terminated, alternating key, value). *ret_id (may be NULL; caller
 * frees) is the network id. CONFLICT when the name exists; the engine
 * refuses a bridge name another network has (DENIED or UNAVAILABLE with its
 * words). All borrowed. Blocks at most 15 s. */
int docker_network_create(struct docker_engine *engine, const char *name, const char *const *labels, int icc,
                          const char *bridge_name, char **ret_id, struct cp_error **err);
/* POST /networks/{network}/connect with EndpointConfig.Aliases [alias] (alias
 * may be NULL): the container joins the network, reachable by that name from
 * its other members. NOT_FOUND when either is absent; an engine refusal
 * (already connected, NetworkMode none) is DENIED or UNAVAILABLE with the
 * engine's words. Blocks at most 15 s. */
int docker_network_connect(struct docker_engine *engine, const char *network, const char *container, const char *alias,
                           struct cp_error **err);
/* POST /networks/{network}/disconnect with Force true. NOT_FOUND when either
 * is absent. Blocks at most 15 s. */
int docker_network_disconnect(struct docker_engine *engine, const char *network, const char *container,
                              struct cp_error **err);
/* DELETE /networks/{network}. NOT_FOUND when absent; a network with
 * containers still on it is refused by the engine (DENIED or UNAVAILABLE).
 * Blocks at most 15 s. */
int docker_network_remove(struct docker_engine *engine, const char *network, struct cp_error **err);
/* GET /networks?filters={"label":[label]}: names of the matching networks as
 * a NULL-terminated vector *ret_names (caller frees with docker_strv_free)
 * of *ret_n entries. Blocks at most 15 s. */
int docker_network_list(struct docker_engine *engine, const char *label, char ***ret_names, size_t *ret_n,
                        struct cp_error **err);
/* A bridge network and its host interface. */
struct docker_network_bridge {
	char *name;         /* owned: the network's name */
	char interface[64]; /* its bridge interface on the host */
	int named;          /* 1: named by com.docker.network.bridge.name; 0: the engine's "br-<id>" */
};
/* GET /networks?filters={"label":[label]} (label "key" or "key=value"): the
 * bridge networks among them with their interfaces, as an array *ret of
 * *ret_n (caller frees with docker_network_bridges_free). Blocks at most 15 s. */
int docker_network_bridges(struct docker_engine *engine, const char *label, struct docker_network_bridge **ret,
                           size_t *ret_n, struct cp_error **err);
void docker_network_bridges_free(struct docker_network_bridge *v, size_t n);
/* GET /containers/{container}/json: the Gateway of every network the
 * container is on (NetworkSettings.Networks), as a NULL-terminated vector
 * *ret (caller frees with docker_strv_free; empty with NetworkMode none).
 * NOT_FOUND when absent. Blocks at most 15 s. */
int docker_container_gateways(struct docker_engine *engine, const char *container, char ***ret, struct cp_error **err);
/* Frees a NULL-terminated vector of owned strings; accepts NULL. */
void docker_strv_free(char **v);

/* ---- copying files into a container (docker/tar.c, transport.c) ---- */

/* A file larger than this is not put into a container this way. */
#define DOCKER_TAR_FILE_MAX (64u * 1024 * 1024)
/* A ustar archive of the directory dir (relative, e.g. ".chat2sbx", mode
 * 0755) and the regular file dir/name (mode, owner root) holding data's len
 * bytes (borrowed). *ret_tar (caller frees) is *ret_len bytes, ready for
 * docker_container_put_archive with path "/". INVALID_ARGUMENT for a name
 * with '/', a path over 98 bytes or a file over DOCKER_TAR_FILE_MAX. Pure. */
int docker_tar_file(const char *dir, const char *name, unsigned mode, const void *data, size_t len,
                    unsigned char **ret_tar, size_t *ret_len, struct cp_error **err);
/* PUT /containers/{id}/archive?path=path: extracts the tar's len bytes
 * (borrowed) under path in the container, which may be created and not yet
 * started (Docker Engine API v1.41, PutContainerArchive). NOT_FOUND for no
 * such container or path; DENIED for a read-only root file system (the
 * engine's 403). Blocks at most timeout_ms. */
int docker_container_put_archive(struct docker_engine *engine, const char *id, const char *path, const void *tar,
                                 size_t len, long timeout_ms, struct cp_error **err);

/* A tar's block: every header, and every file's bytes padded to a multiple. */
#define DOCKER_TAR_BLOCK 512
/* The ustar header (DOCKER_TAR_BLOCK bytes into ret) of a regular file at
 * path (relative, at most 99 bytes; borrowed), mode, owner root, mtime 0,
 * holding size bytes that follow it in the stream, then
 * docker_tar_padding(size) zero bytes. Sizes of 8 GiB and over use the
 * base-256 size field (GNU tar's; the engine's reader takes it).
 * INVALID_ARGUMENT for an absolute, empty or long path. Pure. */
int docker_tar_file_header(const char *path, unsigned mode, uint64_t size, unsigned char ret[DOCKER_TAR_BLOCK],
                           struct cp_error **err);
/* The zero bytes after a file of size bytes up to the next block. Pure. */
size_t docker_tar_padding(uint64_t size);
/* A request body sent in pieces, never whole in memory: head's bytes, then
 * fd_len bytes of fd read from offset fd_offset (pread: the descriptor's own
 * offset is not used), then tail's. All borrowed for the call. */
struct docker_upload {
	const void *head;
	size_t head_len;
	int fd;
	uint64_t fd_offset;
	uint64_t fd_len;
	const void *tail;
	size_t tail_len;
};
/* docker_container_put_archive with the tar streamed from up (a file too
 * large to hold in memory: a clone's source on another node, issue 28).
 * The tar must be whole and valid; nothing here parses it. A file that
 * ends before fd_len or fails to read: INTERNAL, the request abandoned
 * (the engine extracts nothing of a tar it did not get to its end).
 * Otherwise as docker_container_put_archive. Blocks at most timeout_ms. */
int docker_container_put_archive_stream(struct docker_engine *engine, const char *id, const char *path,
                                        const struct docker_upload *up, long timeout_ms, struct cp_error **err);

/* ---- volumes (docker/volumes.c) ---- */

/* POST /volumes/create: a volume of the "local" driver named name
 * (borrowed) with labels (borrowed "key", "value", ... NULL-terminated; may
 * be NULL). Creating a name that exists is no error (the engine answers
 * the existing one). UNAVAILABLE when the engine does not answer. Blocks
 * at most 15 s. Docker Engine API v1.41, VolumeCreate. */
int docker_volume_create(struct docker_engine *engine, const char *name, const char *const *labels,
                         struct cp_error **err);
/* GET /volumes/{name} (VolumeInspect): 1 when the volume exists and its
 * Labels hold key (borrowed) with exactly value (borrowed), 0 when it
 * exists without that label or with another value (an answer without a
 * Labels object, as a volume the engine made by itself has, included);
 * NOT_FOUND saying it is gone when there is no such volume; UNAVAILABLE
 * when the engine does not answer. The answer is read up to 64 KiB and
 * nothing of it is kept. Blocks at most 15 s. Docker Engine API v1.41,
 * VolumeInspect. */
int docker_volume_has_label(struct docker_engine *engine, const char *name, const char *key, const char *value,
                            struct cp_error **err);
/* DELETE /volumes/{name}?force=1: NOT_FOUND when absent; CONFLICT while a
 * container still uses it. Blocks at most 15 s. */
int docker_volume_remove(struct docker_engine *engine, const char *name, struct cp_error **err);

/* ---- attach (docker/attach.c) ---- */

/* POST /containers/{id}/attach?stream=1&stdin=1&stdout=1&stderr=1 with
 * "Connection: Upgrade", "Upgrade: tcp", hijacking the connection (Docker
 * Engine API, "Attach to a container": the stream is multiplexed with 8-byte
 * headers when Tty is false). On success *ret_fd (caller closes; O_CLOEXEC,
 * blocking) is the raw stream: writes go to the container's stdin, reads
 * return multiplexed frames (docker_demux). Bytes the engine sent after the
 * response headers are never lost (the headers are read without over-reading).
 * Blocks at most timeout_ms for the handshake. */
int docker_container_attach(struct docker_engine *engine, const char *id, long timeout_ms, int *ret_fd,
                            struct cp_error **err);

/* ---- stream demultiplexer (docker/demux.c) ---- */

enum docker_stream { DOCKER_STREAM_STDIN = 0, DOCKER_STREAM_STDOUT = 1, DOCKER_STREAM_STDERR = 2 };

/* Called once per contiguous piece of a frame's payload (a frame may arrive
 * in several pieces; pieces of one frame come in order). data is borrowed. */
typedef void (*docker_demux_fn)(void *userdata, enum docker_stream stream, const char *data, size_t len);

/* Incremental parser of the attach stream format: header = 1 byte stream type,
 * 3 zero bytes, 4-byte big-endian payload length; then the payload. */
struct docker_demux {
	unsigned char header[8];
	size_t header_len;  /* bytes of the current header seen so far */
	uint32_t remaining; /* payload bytes left in the current frame */
	enum docker_stream stream;
	docker_demux_fn fn;
	void *userdata;
};

void docker_demux_init(struct docker_demux *d, docker_demux_fn fn, void *userdata);
/* Feeds len bytes (any split, even one byte at a time). Returns 0, or -1 when a
 * header names an unknown stream type (the stream is corrupt; stop reading). */
int docker_demux_feed(struct docker_demux *d, const char *data, size_t len);

#endif
