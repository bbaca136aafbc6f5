/* expose.c: sandbox_expose (issue 6, DESIGN.md Sandboxes): one container TCP
 * port of a sandbox published on CHAT2SBX_EXPOSE_HOST, through what the
 * engine offers rather than a relay inside serve (which would die with it).
 *
 * The engine cannot add a port binding to a running container, so each
 * exposure is a small forwarder container (the helper's forward mode,
 * template/helper/forward.c) whose own port is published on the host. The
 * forwarder reaches the sandbox on a per-sandbox bridge network with
 * inter-container communication on (the shared "chat2sbx" network has it
 * off, so nothing there could reach the sandbox), where the sandbox has the
 * alias LIFECYCLE_EXPOSE_ALIAS, on a bridge named for the host's firewall
 * (guard_expose_bridge_name). The forwarder has restart policy
 * unless-stopped, so it comes back with the engine; serve only creates and
 * removes it. Owns the exposures rows and these engine objects; never
 * touches a sandbox container except to connect it to its network. */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../base/xalloc.h"
#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/log.h"
#include "lifecycle_internal.h"

/* Forwarder limits: one process, small buffers (64 KiB per direction per
 * connection, FORWARD_MAX_CONNS connections). */
#define EXPOSE_FORWARDER_MEMORY (64LL * 1024 * 1024)
#define EXPOSE_FORWARDER_PIDS 16
/* Tries at a host port that was taken between choosing and binding it. */
#define EXPOSE_PORT_TRIES 4

/* One expose or removal at a time in this process: two calls for the same
 * port must not make two forwarders, and a destroy must not race a create
 * of the network it removes. Exposing is rare; a process-wide lock is enough. */
static pthread_mutex_t expose_lock = PTHREAD_MUTEX_INITIALIZER;

static void unlockp(pthread_mutex_t **m)
{
	if (*m)
		pthread_mutex_unlock(*m);
}

/* "chat2sbx-expose-<sandbox id>" (caller frees). */
static char *network_name(const char *sandbox_id)
{
	return xasprintf("chat2sbx-expose-%s", sandbox_id);
}

/* "<sandbox id>-expose-<port>" (caller frees). */
static char *forwarder_name(const char *sandbox_id, int port)
{
	return xasprintf("%s-expose-%d", sandbox_id, port);
}

/* A free TCP port on host, chosen by the kernel (bind port 0, read it,
 * close). The forwarder is then created with that fixed HostPort rather than
 * an engine-chosen one (HostPort ""): an engine-chosen port is chosen again
 * at every start of the container, so the URL would change when the engine
 * restarts; a fixed one stays. Someone may take the port before the engine
 * binds it: the caller retries (EXPOSE_PORT_TRIES). */
static int choose_host_port(const char *host, int *ret_port, struct cp_error **err)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST | AI_PASSIVE};
	struct addrinfo *res = NULL;
	int rc = getaddrinfo(host, "0", &hints, &res);
	if (rc != 0)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "CHAT2SBX_EXPOSE_HOST '%s' is not an IP address of this machine (%s); set it to "
		                    "127.0.0.1 or another local address",
		                    host, gai_strerror(rc));
	_cleanup_close_ int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_storage a;
	socklen_t len = sizeof(a);
	int r = 0;
	if (fd < 0 || bind(fd, res->ai_addr, res->ai_addrlen) < 0 || getsockname(fd, (struct sockaddr *)&a, &len) < 0)
		r = cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno,
		                       "choose a free port on '%s' (CHAT2SBX_EXPOSE_HOST) for sandbox_expose", host);
	else
		*ret_port = a.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&a)->sin6_port)
		                                    : ntohs(((struct sockaddr_in *)&a)->sin_port);
	freeaddrinfo(res);
	return r;
}

/* Whether an engine error means the host port was taken meanwhile. */
static int port_taken(const struct cp_error *e)
{
	return e && e->detail == CP_DETAIL_PORT_IN_USE;
}

/* Creates and starts the forwarder of x (sandbox_id, container_port, host,
 * forwarder_name, network set; host_port 0 = choose one). On success
 * x->host_port and x->forwarder_id (owned by x) are set. On failure nothing
 * of the forwarder is left. */
static int forwarder_create(struct lifecycle *lc, const char *image, struct exposure_record *x, struct cp_error **err)
{
	char port[16], label_port[16];
	snprintf(port, sizeof(port), "%d", x->container_port);
	snprintf(label_port, sizeof(label_port), "%d", x->container_port);
	const char *entrypoint[] = {POLICY_HELPER_TARGET, "forward", port, LIFECYCLE_EXPOSE_ALIAS, port, NULL};
	const char *env[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", NULL};
	const char *labels[] = {POLICY_LABEL_EXPOSE_SANDBOX,
	                        x->sandbox_id,
	                        POLICY_LABEL_EXPOSE_REGISTRY,
	                        lc->cfg->database_path,
	                        POLICY_LABEL_EXPOSE_PORT,
	                        label_port,
	                        NULL};
	struct docker_mount mounts[] = {
	    {.source = lc->cfg->helper_path, .target = POLICY_HELPER_TARGET, .read_only = 1},
	};
	int fixed = x->host_port > 0;
	for (int attempt = 1;; attempt++) {
		int host_port = x->host_port;
		if (!fixed && choose_host_port(x->host, &host_port, err) < 0)
			return -1;
		struct docker_port_binding binding = {
		    .container_port = x->container_port, .host_ip = x->host, .host_port = host_port};
		/* The relay needs no privilege: no capability (the engine lets
		 * unprivileged processes bind low ports in a container's own
		 * network namespace), user nobody, read-only root, one process.
		 * The engine's default runtime (not CHAT2SBX_RUNTIME): it runs
		 * only our own relay, and it needs a network (gVisor here runs
		 * without one). */
		struct docker_container_spec spec = {
		    .name = x->forwarder_name,
		    .image = image,
		    .entrypoint = entrypoint,
		    .env = env,
		    .labels = labels,
		    .working_dir = "/",
		    .mounts = mounts,
		    .n_mounts = 1,
		    .memory_bytes = EXPOSE_FORWARDER_MEMORY,
		    .pids_limit = EXPOSE_FORWARDER_PIDS,
		    .network = x->network,
		    .port_bindings = &binding,
		    .n_port_bindings = 1,
		    LIFECYCLE_SERVICE_CONTAINER,
		};
		_cleanup_free_ char *id = NULL;
		if (docker_container_create(lc->engine, &spec, &id, err) < 0)
			return -1;
		if (docker_container_start(lc->engine, id, err) == 0) {
			x->host_port = host_port;
			free(x->forwarder_id);
			x->forwarder_id = TAKE_PTR(id);
			return 0;
		}
		_cleanup_error_ struct cp_error *e = NULL;
		if (docker_container_remove(lc->engine, id, &e) < 0)
			log_warn("lifecycle", "remove forwarder %s after a failed start: %s", x->forwarder_name,
			         e->message);
		if (fixed || attempt >= EXPOSE_PORT_TRIES || !port_taken(*err))
			return -1;
		log_debug("lifecycle", "host port %s:%d was taken meanwhile; choosing another", x->host, host_port);
		cp_error_freep(err);
	}
}

/* The sandbox must be running with a network before anything is made. */
static int check_sandbox(const struct sandbox_record *s, struct cp_error **err)
{
	if (s->status == SANDBOX_FAILED)
		return cp_error_set(
		    err, CP_ERR_CONFLICT,
		    "sandbox '%s' has failed (%s); destroy it with sandbox_destroy and create a new one", s->id,
		    s->failure_reason ? s->failure_reason : "no reason recorded");
	if (s->status == SANDBOX_REMOVED)
		return cp_error_set(err, CP_ERR_CONFLICT,
		                    "sandbox '%s' was destroyed; create a new one with sandbox_create", s->id);
	if (s->status != SANDBOX_RUNNING)
		return cp_error_set(err, CP_ERR_CONFLICT, "sandbox '%s' is still being created; try again shortly",
		                    s->id);
	if (!s->network)
		return cp_error_set(err, CP_ERR_CONFLICT,
		                    "sandbox '%s' was created with network off, so none of its ports can be exposed; "
		                    "create a new sandbox with network on (the default) to use sandbox_expose",
		                    s->id);
	return 0;
}

static int connect_sandbox(struct lifecycle *lc, const char *network, const char *container, int *ret_connected,
                           struct cp_error **err);

/* A row's forwarder runs: started when the engine left it stopped, made again
 * on the same host port when it is gone (serve's start, or a repeated
 * sandbox_expose). Problems are logged; *ret_started counts what was done. */
static void forwarder_ensure(struct lifecycle *lc, const struct sandbox_record *s, struct exposure_record *x,
                             int *ret_started)
{
	_cleanup_error_ struct cp_error *e = NULL;
	struct docker_container_state st = {0};
	if (docker_container_inspect(lc->engine, x->forwarder_name, &st, &e) == 0) {
		if (!st.running && docker_container_start(lc->engine, st.id, &e) == 0)
			(*ret_started)++;
		docker_container_state_clear(&st);
	} else if (e->code == CP_ERR_NOT_FOUND) {
		cp_error_freep(&e);
		const char *container = s->container_id ? s->container_id : s->container_name;
		int connected = 0;
		const char *net_labels[] = {POLICY_LABEL_EXPOSE_SANDBOX, s->id, POLICY_LABEL_EXPOSE_REGISTRY,
		                            lc->cfg->database_path, NULL};
		char bridge[32];
		guard_expose_bridge_name(s->id, bridge, sizeof(bridge));
		if (docker_network_create(lc->engine, x->network, net_labels, 1, bridge, NULL, &e) < 0 &&
		    e->code == CP_ERR_CONFLICT)
			cp_error_freep(&e);
		if (!e && connect_sandbox(lc, x->network, container, &connected, &e) == 0 &&
		    forwarder_create(lc, s->image, x, &e) == 0) {
			(*ret_started)++;
			if (store_exposure_set_forwarder(lc->store, x->sandbox_id, x->container_port, x->forwarder_id,
			                                 &e) < 0)
				cp_error_prefix(&e, "record the new forwarder");
		}
	}
	if (e)
		log_warn("lifecycle", "forwarder %s of sandbox %s (port %d on %s:%d): %s", x->forwarder_name, s->id,
		         x->container_port, x->host, x->host_port, e->message);
}

/* Connects the sandbox to its network; one already on it counts as done. */
static int connect_sandbox(struct lifecycle *lc, const char *network, const char *container, int *ret_connected,
                           struct cp_error **err)
{
	*ret_connected = 0;
	if (docker_network_connect(lc->engine, network, container, LIFECYCLE_EXPOSE_ALIAS, err) == 0) {
		*ret_connected = 1;
		return 0;
	}
	if ((*err)->detail == CP_DETAIL_ALREADY_EXISTS || (*err)->detail == CP_DETAIL_ALREADY_ATTACHED) {
		cp_error_freep(err);
		return 0;
	}
	return -1;
}

/* Removes a network (disconnecting the sandbox first); absent is fine. */
static int network_drop(struct lifecycle *lc, const char *network, const char *container, struct cp_error **err)
{
	_cleanup_error_ struct cp_error *e = NULL;
	if (container && docker_network_disconnect(lc->engine, network, container, &e) < 0)
		log_debug("lifecycle", "disconnect %s from %s: %s", container, network, e->message);
	if (docker_network_remove(lc->engine, network, err) < 0) {
		if ((*err)->code != CP_ERR_NOT_FOUND)
			return -1;
		cp_error_freep(err);
	}
	return 0;
}

/* Refuses a new exposure past the per-sandbox cap (LIFECYCLE_MAX_EXPOSURES_PER_SANDBOX)
 * or the global one (CHAT2SBX_MAX_EXPOSURES), before anything is created:
 * each exposure is one forwarder container and each exposed sandbox one
 * engine network (security review, defect 3). LIMIT names the cap, the
 * count and what to do; store errors pass through. Called under expose_lock,
 * so the counts cannot move before the insert. */
static int check_caps(struct lifecycle *lc, const char *sandbox_id, struct cp_error **err)
{
	int64_t mine = 0, all = 0;
	if (store_exposure_count(lc->store, sandbox_id, &mine, err) < 0 ||
	    store_exposure_count(lc->store, NULL, &all, err) < 0)
		return -1;
	if (mine >= LIFECYCLE_MAX_EXPOSURES_PER_SANDBOX)
		return cp_error_set(err, CP_ERR_LIMIT,
		                    "sandbox '%s' already exposes %lld ports, the most one sandbox may expose (%d); "
		                    "reuse one of its exposed ports (sandbox_expose on an exposed port returns its URL "
		                    "again) or destroy the sandbox to free them",
		                    sandbox_id, (long long)mine, LIFECYCLE_MAX_EXPOSURES_PER_SANDBOX);
	if (all >= lc->cfg->max_exposures)
		return cp_error_set(err, CP_ERR_LIMIT,
		                    "%lld ports are exposed across all sandboxes, the most allowed at once "
		                    "(CHAT2SBX_MAX_EXPOSURES=%d); reuse an exposed port or destroy a sandbox you no "
		                    "longer need (its exposures go with it), or raise CHAT2SBX_MAX_EXPOSURES",
		                    (long long)all, lc->cfg->max_exposures);
	return 0;
}

/* A relayed exposure's forwarder_name: no container has it; it keeps the
 * column's uniqueness and tells the row from a forwarder's. Caller frees. */
static char *relay_name(const char *sandbox_id, int port)
{
	return xasprintf("%s-relay-%d", sandbox_id, port);
}

/* A row of a sandbox on another node listens again (serve's start, or a
 * repeated sandbox_expose) on its recorded port. Problems are logged. */
static void relay_ensure(struct lifecycle *lc, const struct sandbox_record *s, const struct exposure_record *x)
{
	_cleanup_error_ struct cp_error *e = NULL;
	int host_port = x->host_port;
	if (lifecycle_relay_start(lc, s, x->container_port, x->host, &host_port, &e) < 0)
		log_warn("lifecycle", "preview of port %d of sandbox %s on %s:%d: %s", x->container_port, s->id,
		         x->host, x->host_port, e->message);
}

/* A new exposure of sandbox s on another node: serve's relay on a free port
 * of CHAT2SBX_EXPOSE_HOST, then its row. Nothing is left on failure. */
static int expose_remote(struct lifecycle *lc, const struct sandbox_record *s, int port, struct exposure_record *ret,
                         struct cp_error **err)
{
	if (check_caps(lc, s->id, err) < 0)
		return -1;
	struct exposure_record x = {.sandbox_id = xstrdup(s->id),
	                            .container_port = port,
	                            .host = xstrdup(lc->cfg->expose_host),
	                            .forwarder_name = relay_name(s->id, port),
	                            .network = xstrdup(""),
	                            .created_at_ms = clock_now_ms()};
	if (lifecycle_relay_start(lc, s, port, x.host, &x.host_port, err) < 0 ||
	    store_exposure_insert(lc->store, &x, err) < 0) {
		lifecycle_relay_stop(lc, s->id, port);
		exposure_record_clear(&x);
		return cp_error_prefix(err, "expose port %d of sandbox '%s'", port, s->id);
	}
	log_info("lifecycle", "exposed port %d of sandbox %s (node '%s') on %s:%d through serve's relay", port, s->id,
	         s->node, x.host, x.host_port);
	*ret = x;
	return 0;
}

int lifecycle_sandbox_expose(struct lifecycle *lc, const char *sandbox_id, int64_t port, struct exposure_record *ret,
                             int *ret_created, struct cp_error **err)
{
	if (port < 1 || port > 65535)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "port %lld is not a TCP port; give the port the server inside the sandbox listens "
		                    "on, 1-65535 (for example 8000)",
		                    (long long)port);
	_cleanup_(unlockp) pthread_mutex_t *locked = &expose_lock;
	pthread_mutex_lock(locked);
	struct sandbox_record s = {0};
	if (store_sandbox_get(lc->store, sandbox_id, &s, err) < 0)
		return -1;
	int r = check_sandbox(&s, err);
	/* A forwarder is a container of this machine's engine; a sandbox on
	 * another node is reached by serve's relay instead (expose_relay.c). */
	int remote = !lifecycle_node_is_local(s.node);
	if (r == 0 && remote && policy_runtime_is_vm(s.runtime))
		r = cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                 "sandbox '%s' runs the vm runtime on node '%s': a preview of a microVM on another "
		                 "node is not built; create it on this machine, or without the vm runtime, to preview",
		                 sandbox_id, s.node);
	_cleanup_error_ struct cp_error *e = NULL;
	/* A tool call that reached the sandbox; the traffic through the
	 * forwarder never reaches serve, so it never counts. */
	if (r == 0 && store_sandbox_touch(lc->store, sandbox_id, clock_now_ms(), &e) < 0)
		cp_error_log_free(LOG_LEVEL_WARN, "lifecycle", &e, "record activity of %s", sandbox_id);
	cp_error_freep(&e);
	if (r == 0 && store_exposure_get(lc->store, sandbox_id, (int)port, ret, err) == 0) {
		int started = 0;
		if (remote)
			relay_ensure(lc, &s, ret);
		else
			forwarder_ensure(lc, &s, ret, &started);
		*ret_created = 0;
		sandbox_record_clear(&s);
		return 0;
	}
	if (r < 0 || (*err)->code != CP_ERR_NOT_FOUND) {
		sandbox_record_clear(&s);
		return -1;
	}
	cp_error_freep(err);
	if (check_caps(lc, sandbox_id, err) < 0) {
		sandbox_record_clear(&s);
		return -1;
	}

	if (remote) {
		r = expose_remote(lc, &s, (int)port, ret, err);
		*ret_created = r == 0;
		sandbox_record_clear(&s);
		return r;
	}
	struct exposure_record x = {.sandbox_id = xstrdup(sandbox_id),
	                            .container_port = (int)port,
	                            .host = xstrdup(lc->cfg->expose_host),
	                            .forwarder_name = forwarder_name(sandbox_id, (int)port),
	                            .network = network_name(sandbox_id),
	                            .created_at_ms = clock_now_ms()};
	const char *container = s.container_id ? s.container_id : s.container_name;
	int made_network = 0, connected = 0;
	/* vm: the guest's port is forwarded to the container's first (QEMU's
	 * user networking, recorded for later boots; guard/vm.c). */
	if (policy_runtime_is_vm(s.runtime) && guard_vm_forward(&lc->host, container, (int)port, err) < 0) {
		r = -1;
		cp_error_prefix(err, "expose port %lld of sandbox '%s'", (long long)port, sandbox_id);
		goto out;
	}
	/* A forwarder of that name without a row is a leftover of a serve that
	 * died mid-expose: it is ours (the name holds the sandbox id). */
	if (docker_container_remove(lc->engine, x.forwarder_name, &e) == 0)
		log_info("lifecycle", "removed leftover forwarder %s", x.forwarder_name);
	cp_error_freep(&e);
	const char *net_labels[] = {POLICY_LABEL_EXPOSE_SANDBOX, sandbox_id, POLICY_LABEL_EXPOSE_REGISTRY,
	                            lc->cfg->database_path, NULL};
	char bridge[32];
	guard_expose_bridge_name(sandbox_id, bridge, sizeof(bridge));
	if (docker_network_create(lc->engine, x.network, net_labels, 1, bridge, NULL, err) == 0)
		made_network = 1;
	else if ((*err)->code == CP_ERR_CONFLICT)
		cp_error_freep(err); /* an earlier exposure of this sandbox made it */
	else
		goto fail;
	if (connect_sandbox(lc, x.network, container, &connected, err) < 0 ||
	    forwarder_create(lc, s.image, &x, err) < 0)
		goto fail;
	if (store_exposure_insert(lc->store, &x, err) < 0) {
		if (docker_container_remove(lc->engine, x.forwarder_id, &e) < 0)
			log_warn("lifecycle", "undo expose: %s", e->message);
		goto fail;
	}
	log_info("lifecycle", "exposed port %d of sandbox %s on %s:%d (forwarder %s)", x.container_port, sandbox_id,
	         x.host, x.host_port, x.forwarder_name);
	*ret = x;
	*ret_created = 1;
	sandbox_record_clear(&s);
	return 0;

fail:
	/* Leave nothing: the network only when this call made or joined it and
	 * no other exposure of the sandbox uses it. */
	r = -1;
	if (made_network || connected) {
		struct exposure_record *others = NULL;
		size_t n_others = 0;
		if (store_exposure_list(lc->store, sandbox_id, &others, &n_others, &e) == 0 && n_others == 0 &&
		    network_drop(lc, x.network, container, &e) < 0)
			log_warn("lifecycle", "undo expose of sandbox '%s': %s", sandbox_id, e->message);
		for (size_t i = 0; i < n_others; i++)
			exposure_record_clear(&others[i]);
		free(others);
	}
	cp_error_prefix(err, "expose port %lld of sandbox '%s'", (long long)port, sandbox_id);
out:
	exposure_record_clear(&x);
	sandbox_record_clear(&s);
	return r;
}

/* Removes the engine objects and rows of one sandbox's exposures; the lock is held. */
static int remove_locked(struct lifecycle *lc, const char *sandbox_id, struct cp_error **err)
{
	lifecycle_relay_stop(lc, sandbox_id, 0);
	struct exposure_record *rows = NULL;
	size_t n = 0;
	if (store_exposure_list(lc->store, sandbox_id, &rows, &n, err) < 0)
		return -1;
	struct sandbox_record s = {0};
	_cleanup_error_ struct cp_error *se = NULL;
	int remote = store_sandbox_get(lc->store, sandbox_id, &s, &se) == 0 && !lifecycle_node_is_local(s.node);
	sandbox_record_clear(&s);
	if (remote) {
		/* Relayed by serve: nothing of it is in an engine. */
		for (size_t i = 0; i < n; i++) {
			if (store_exposure_delete(lc->store, sandbox_id, rows[i].container_port, &se) < 0 &&
			    se->code != CP_ERR_NOT_FOUND)
				log_warn("lifecycle", "forget exposure %s:%d: %s", sandbox_id, rows[i].container_port,
				         se->message);
			cp_error_freep(&se);
			exposure_record_clear(&rows[i]);
		}
		free(rows);
		return 0;
	}
	int r = 0;
	for (size_t i = 0; i < n; i++) {
		/* By name: a forwarder made again at start has a new id. */
		_cleanup_error_ struct cp_error *e = NULL;
		if (docker_container_remove(lc->engine, rows[i].forwarder_name, &e) < 0 &&
		    e->code != CP_ERR_NOT_FOUND) {
			if (r == 0)
				cp_error_set(err, e->code, "remove forwarder '%s': %s", rows[i].forwarder_name,
				             e->message);
			r = -1;
			continue; /* the row stays: the next reconcile retries */
		}
		cp_error_freep(&e);
		if (store_exposure_delete(lc->store, sandbox_id, rows[i].container_port, &e) < 0 &&
		    e->code != CP_ERR_NOT_FOUND)
			log_warn("lifecycle", "forget exposure %s:%d: %s", sandbox_id, rows[i].container_port,
			         e->message);
	}
	for (size_t i = 0; i < n; i++)
		exposure_record_clear(&rows[i]);
	free(rows);
	/* Forwarders without a row (a serve that died mid-expose). */
	char label[200];
	snprintf(label, sizeof(label), "%s=%s", POLICY_LABEL_EXPOSE_SANDBOX, sandbox_id);
	struct docker_container_state *cs = NULL;
	size_t n_cs = 0;
	_cleanup_error_ struct cp_error *e = NULL;
	if (docker_container_list(lc->engine, label, &cs, &n_cs, &e) == 0) {
		for (size_t j = 0; j < n_cs; j++) {
			if (docker_container_remove(lc->engine, cs[j].id, &e) < 0)
				cp_error_freep(&e);
			docker_container_state_clear(&cs[j]);
		}
		free(cs);
	}
	cp_error_freep(&e);
	if (r < 0)
		return r;
	_cleanup_free_ char *network = network_name(sandbox_id);
	/* The sandbox's container name is its id (create.c). */
	return network_drop(lc, network, sandbox_id, err);
}

/* Whether a sandbox has a registry row but no exposure: then it has nothing
 * to remove, and destroy makes no engine call for it (destroys stay
 * parallel). Forwarders a dead serve left without a row are swept at start
 * (remove_orphans). A sandbox with no row at all (an orphan container) gets
 * the full sweep. */
static int nothing_exposed(struct lifecycle *lc, const char *sandbox_id)
{
	struct exposure_record *rows = NULL;
	size_t n = 0;
	struct sandbox_record s = {0};
	_cleanup_error_ struct cp_error *e = NULL;
	if (store_exposure_list(lc->store, sandbox_id, &rows, &n, &e) < 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		exposure_record_clear(&rows[i]);
	free(rows);
	if (n > 0 || store_sandbox_get(lc->store, sandbox_id, &s, &e) < 0)
		return 0;
	sandbox_record_clear(&s);
	return 1;
}

int lifecycle_exposures_remove(struct lifecycle *lc, const char *sandbox_id, struct cp_error **err)
{
	pthread_mutex_lock(&expose_lock);
	int r = nothing_exposed(lc, sandbox_id) ? 0 : remove_locked(lc, sandbox_id, err);
	pthread_mutex_unlock(&expose_lock);
	if (r < 0)
		return cp_error_prefix(err, "remove the exposed ports of sandbox '%s'", sandbox_id);
	return 0;
}

int lifecycle_sandbox_exposures(struct lifecycle *lc, const char *sandbox_id, struct exposure_record **ret,
                                size_t *ret_n, struct cp_error **err)
{
	return store_exposure_list(lc->store, sandbox_id, ret, ret_n, err);
}

const char *lifecycle_exposure_url(const struct exposure_record *x, char *buf, size_t size)
{
	int v6 = x->host && strchr(x->host, ':') != NULL;
	snprintf(buf, size, "http://%s%s%s:%d/", v6 ? "[" : "", x->host ? x->host : "127.0.0.1", v6 ? "]" : "",
	         x->host_port);
	return buf;
}

/* Forwarders and networks labelled with this registry that no row explains
 * (a serve that died mid-expose): removed. They are never a user's. */
static void remove_orphans(struct lifecycle *lc, const struct exposure_record *rows, size_t n)
{
	char label[4300];
	snprintf(label, sizeof(label), "%s=%s", POLICY_LABEL_EXPOSE_REGISTRY, lc->cfg->database_path);
	_cleanup_error_ struct cp_error *e = NULL;
	struct docker_container_state *cs = NULL;
	size_t n_cs = 0;
	if (docker_container_list(lc->engine, label, &cs, &n_cs, &e) == 0) {
		for (size_t j = 0; j < n_cs; j++) {
			int known = 0;
			for (size_t i = 0; i < n; i++)
				known |= !strcmp(rows[i].forwarder_name, cs[j].name);
			if (!known && docker_container_remove(lc->engine, cs[j].id, &e) == 0)
				log_info("lifecycle", "removed forwarder %s: no exposure row", cs[j].name);
			cp_error_freep(&e);
			docker_container_state_clear(&cs[j]);
		}
		free(cs);
	}
	cp_error_freep(&e);
	char **nets = NULL;
	size_t n_nets = 0;
	if (docker_network_list(lc->engine, label, &nets, &n_nets, &e) == 0) {
		for (size_t j = 0; j < n_nets; j++) {
			int known = 0;
			for (size_t i = 0; i < n; i++)
				known |= !strcmp(rows[i].network, nets[j]);
			const char *sandbox_id = strncmp(nets[j], "chat2sbx-expose-", 16) == 0 ? nets[j] + 16 : NULL;
			if (!known && network_drop(lc, nets[j], sandbox_id, &e) == 0)
				log_info("lifecycle", "removed network %s: no exposure row", nets[j]);
			cp_error_freep(&e);
		}
		docker_strv_free(nets);
	}
}

int lifecycle_exposures_reconcile(struct lifecycle *lc, struct cp_error **err)
{
	pthread_mutex_lock(&expose_lock);
	struct exposure_record *rows = NULL;
	size_t n = 0;
	if (store_exposure_list(lc->store, NULL, &rows, &n, err) < 0) {
		pthread_mutex_unlock(&expose_lock);
		return cp_error_prefix(err, "reconcile exposed ports");
	}
	int started = 0, removed = 0;
	for (size_t i = 0; i < n; i++) {
		struct sandbox_record s = {0};
		_cleanup_error_ struct cp_error *e = NULL;
		int live = store_sandbox_get(lc->store, rows[i].sandbox_id, &s, &e) == 0 && s.status == SANDBOX_RUNNING;
		if (live && !lifecycle_node_is_local(s.node)) {
			relay_ensure(lc, &s, &rows[i]);
		} else if (live) {
			forwarder_ensure(lc, &s, &rows[i], &started);
		} else if (i == 0 || strcmp(rows[i - 1].sandbox_id, rows[i].sandbox_id) != 0) {
			/* Rows come sorted by sandbox: once per gone sandbox. */
			cp_error_freep(&e);
			if (remove_locked(lc, rows[i].sandbox_id, &e) == 0)
				removed++;
			else
				log_warn("lifecycle", "remove the exposures of sandbox %s: %s", rows[i].sandbox_id,
				         e->message);
		}
		sandbox_record_clear(&s);
	}
	/* Rows as they are now (some were removed above). */
	for (size_t i = 0; i < n; i++)
		exposure_record_clear(&rows[i]);
	free(rows);
	rows = NULL;
	n = 0;
	_cleanup_error_ struct cp_error *e = NULL;
	if (store_exposure_list(lc->store, NULL, &rows, &n, &e) == 0)
		remove_orphans(lc, rows, n);
	log_info("lifecycle",
	         "reconciled exposed ports: %d forwarder(s) started, exposures of %d gone sandbox(es) "
	         "removed",
	         started, removed);
	for (size_t i = 0; i < n; i++)
		exposure_record_clear(&rows[i]);
	free(rows);
	pthread_mutex_unlock(&expose_lock);
	return 0;
}
