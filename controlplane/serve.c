/* serve.c: the start-up order of `serve`, and nothing else: config (by the
 * caller) → log → data dirs + store + migrations → engine → template and
 * helper checks → host-edge firewall → disk guard → reconcile → warm pool →
 * maintenance thread (lifecycle/maintenance.c) → MCP listener → wait for a
 * signal → shut down. Sandboxes keep running across a shutdown; only
 * channels are closed. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/clock.h"
#include "base/log.h"
#include "controlplane.h"
#include "base/private_dir.h"
#include "docker/docker.h"
#include "lifecycle/lifecycle.h"
#include "mcp/mcp.h"
#include "node/node.h"
#include "ops/ops.h"
#include "policy/policy.h"
#include "tools/tools.h"
#include "tunnel/tunnel.h"
#include "ui/ui.h"

#define MCP_MAX_SESSIONS 1024
#define MCP_SESSION_IDLE_MS (60L * 60 * 1000)

int controlplane_open_store(const struct config *cfg, struct store **ret_store, struct cp_error **err)
{
	if (private_dir_ensure(cfg->data_root, 0700, NULL, 0, err) < 0 ||
	    private_dir_ensure(cfg->state_dir, 0700, NULL, 0, err) < 0 ||
	    private_dir_ensure(cfg->workspace_root, 0700, NULL, 0, err) < 0)
		return -1;
	return store_open(cfg->database_path, ret_store, err);
}

/* One serve per registry: two would both attach to every helper and take each
 * other's answers, and a starting one would reconcile away the other's
 * sandboxes in creation. The lock (flock, released by the kernel when the
 * process dies, so a SIGKILL never leaves it stale) is held for serve's life;
 * *ret_fd receives it. */
static int take_serve_lock(const struct config *cfg, int *ret_fd, struct cp_error **err)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/serve.lock", cfg->state_dir);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "open '%s'", path);
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		char pid[32] = "";
		ssize_t n = pread(fd, pid, sizeof(pid) - 1, 0);
		pid[n > 0 ? n : 0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		close(fd);
		return cp_error_set(err, CP_ERR_CONFLICT,
		                    "another chat2sbx serve (pid %s) is using the registry '%s'; stop it, or give "
		                    "this one its own CHAT2SBX_DATA_ROOT",
		                    pid[0] ? pid : "unknown", cfg->database_path);
	}
	char pid[32];
	int len = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t)len, 0) < 0)
		log_warn("serve", "write pid to '%s': %s", path, strerror(errno));
	*ret_fd = fd;
	return 0;
}

/* Every MCP connection and every helper channel holds a descriptor; lift the
 * soft limit to the hard one so a busy serve does not run out at 1024. */
static void raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* When memory runs out the kernel should kill sandbox processes (adj
 * +POLICY_OOM_SCORE_ADJ), never serve: lower our own score (lowering needs
 * CAP_SYS_RESOURCE, so only root can; say so otherwise). */
#define SERVE_OOM_SCORE_ADJ (-500)
static void lower_own_oom_score(void)
{
	int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	char text[16];
	int len = snprintf(text, sizeof(text), "%d\n", SERVE_OOM_SCORE_ADJ);
	if (fd >= 0 && write(fd, text, (size_t)len) == len)
		log_info("serve",
		         "oom_score_adj %d: when memory runs out the kernel picks sandbox processes (+%d) "
		         "first and serve last",
		         SERVE_OOM_SCORE_ADJ, POLICY_OOM_SCORE_ADJ);
	else
		log_warn("serve",
		         "cannot lower serve's oom_score_adj (%s; it needs CAP_SYS_RESOURCE): sandbox "
		         "processes (+%d) are still picked first when memory runs out",
		         strerror(errno), POLICY_OOM_SCORE_ADJ);
	if (fd >= 0)
		close(fd);
}

/* How often serve checks that serve.json names it. */
#define SERVE_STATE_CHECK_MS 2000

/* The maintenance pass's last step (lifecycle/maintenance.c): the host-edge
 * firewall back when it was removed or flushed. */
struct firewall_hook {
	const struct config *cfg;
	struct docker_engine *engine;
};
static void maintain_firewall(void *userdata)
{
	struct firewall_hook *h = userdata;
	ops_firewall_maintain(h->cfg, h->engine);
}

static volatile sig_atomic_t stop_requested, reload_requested;

/* stdio mode (issue 18): a stop signal ends the read loop as EOF would, so
 * serve stops in order (running calls answer, the warm pool members it made
 * go). The read runs on the main thread; a signal the kernel gave to
 * another thread is passed on to it, so its read returns EINTR. */
static struct mcp_server *stdio_server;
static pthread_t stdio_thread;
static void on_stdio_signal(int sig)
{
	stop_requested = 1;
	if (stdio_server)
		mcp_server_stop_stdio(stdio_server);
	if (!pthread_equal(pthread_self(), stdio_thread))
		pthread_kill(stdio_thread, sig);
}
static void on_signal(int sig)
{
	if (sig == SIGHUP)
		reload_requested = 1;
	else
		stop_requested = 1;
}

/* SIGHUP re-reads AGENTS.md only (issue 7). AGENTS.md is already read from
 * disk at every sandbox_create and sandbox_get (tools/sandbox.c), so there is
 * nothing to reload: say so. Every other setting stays as loaded at start. */
static void on_reload(const struct config *cfg)
{
	log_info("serve",
	         "SIGHUP: '%s/AGENTS.md' is read at every sandbox_create and sandbox_get, so its current "
	         "text already applies; no other setting is reloaded (restart serve to change them)",
	         cfg->data_root);
}

/* The URL local clients reach us at (serve.json, status): loopback, even
 * when we listen on every interface. */
static void endpoint_url(const struct config *cfg, unsigned port, char *buf, size_t size)
{
	const char *host = cfg->host;
	if (!*host || !strcmp(host, "0.0.0.0") || !strcmp(host, "::"))
		host = "127.0.0.1";
	if (strchr(host, ':'))
		snprintf(buf, size, "http://[%s]:%u/mcp", host, port);
	else
		snprintf(buf, size, "http://%s:%u/mcp", host, port);
}

/* A sandbox can write every file of a direct-mode workspace, so serve must
 * not read its settings (./.env, DESIGN.md Configuration) from inside one: a
 * model could plant CHAT2SBX_ALLOWED_HOST_ROOTS=/ for the next start.
 * Refuses (DENIED, naming the workspace) when the working directory is a
 * direct workspace's directory or lies below it. */
static int check_working_directory(struct store *store, struct cp_error **err)
{
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof(cwd)))
		return 0; /* nothing was read relative to an unknown directory */
	struct workspace_record *ws = NULL;
	size_t n = 0;
	if (store_workspace_list(store, &ws, &n, err) < 0)
		return -1;
	int r = 0;
	for (size_t i = 0; i < n && r == 0; i++) {
		size_t len = strlen(ws[i].path);
		/* Another node's directory is not this machine's (migration 0018). */
		int here = !ws[i].node || !strcmp(ws[i].node, STORE_NODE_LOCAL);
		if (here && strcmp(ws[i].mode, "direct") == 0 && strncmp(cwd, ws[i].path, len) == 0 &&
		    (cwd[len] == '\0' || cwd[len] == '/'))
			r = cp_error_set(
			    err, CP_ERR_DENIED,
			    "serve's working directory '%s' is inside '%s', the directory of the direct-mode "
			    "workspace '%s' that sandboxes can write (a planted .env would change serve's "
			    "settings); start chat2sbx serve from another directory",
			    cwd, ws[i].path, ws[i].id);
	}
	for (size_t i = 0; i < n; i++)
		workspace_record_clear(&ws[i]);
	free(ws);
	return r;
}

/* UNAVAILABLE "<prefix>the <noun> '<image>' is not in the engine; build it
 * with 'make <target>' (or set <var>)" when the engine lacks image. */
static int require_image(struct docker_engine *engine, const char *image, const char *prefix, const char *noun,
                         const char *target, const char *var, struct cp_error **err)
{
	_cleanup_free_ char *id = NULL;
	if (docker_image_inspect(engine, image, &id, err) == 0)
		return 0;
	if ((*err)->code != CP_ERR_NOT_FOUND)
		return -1;
	cp_error_freep(err);
	return cp_error_set(err, CP_ERR_UNAVAILABLE,
	                    "%sthe %s '%s' is not in the engine; build it with 'make %s' (or set %s)", prefix, noun,
	                    image, target, var);
}

/* UNAVAILABLE when path cannot be read: config_install_require's words
 * (what to install or build, or which setting to fix), after prefix. */
static int require_file(const struct config *cfg, const char *path, const char *prefix, const char *noun,
                        const char *var, struct cp_error **err)
{
	if (config_install_require(cfg, path, noun, var, err) == 0)
		return 0;
	return *prefix ? cp_error_prefix(err, "%s", prefix) : -1;
}

/* The template image, found again by content hash when its tag is missing
 * (a new version looks for a new tag: ops/template.c). */
static int require_template(const struct config *cfg, struct docker_engine *engine, struct cp_error **err)
{
	_cleanup_free_ char *id = NULL;
	if (docker_image_inspect(engine, cfg->template_image, &id, err) == 0)
		return 0;
	if ((*err)->code != CP_ERR_NOT_FOUND)
		return -1;
	cp_error_freep(err);
	char detail[512] = "";
	int r = ops_template_retag(cfg, detail, sizeof(detail), err);
	if (r == 1) {
		log_info("serve", "template image %s: %s", cfg->template_image, detail);
		return 0;
	}
	if (r < 0)
		cp_error_log_free(LOG_LEVEL_WARN, "serve", err, "look for the template image by its inputs");
	return cp_error_set(err, CP_ERR_UNAVAILABLE,
	                    "the template image '%s' is not in the engine%s%s; build it with 'chat2sbx setup' (from a "
	                    "source tree, 'make template'), or set CHAT2SBX_TEMPLATE_IMAGE",
	                    cfg->template_image, detail[0] ? " and " : "", detail);
}

static int check_runtime_inputs(const struct config *cfg, struct docker_engine *engine, struct cp_error **err)
{
	if (require_template(cfg, engine, err) < 0 ||
	    require_file(cfg, cfg->helper_path, "", "the helper binary", "CHAT2SBX_HELPER_PATH", err) < 0)
		return -1;
	/* The vm runtime (issue 15): its image and launcher too. */
	struct guard_runtime_choice rc;
	if (guard_runtime_probe(cfg, engine, &rc, err) < 0)
		return -1;
	if (!policy_runtime_is_vm(rc.runtime))
		return 0;
	const char *vm = "CHAT2SBX_RUNTIME is vm, but ";
	const char *vm_file = "CHAT2SBX_RUNTIME is vm";
	if (require_image(engine, cfg->vm_image, vm, "vm image", "template-vm", "CHAT2SBX_VM_IMAGE", err) < 0 ||
	    require_file(cfg, cfg->vm_path, vm_file, "the vm launcher", "CHAT2SBX_VM_PATH", err) < 0)
		return -1;
	return 0;
}

/* The health loop's news of a node (issue 28): one that went down has its
 * sandboxes' channels closed (calls waiting on them fail at once; new ones
 * are refused at the gate naming the node); one that answers again is
 * reconciled (lifecycle_node_reconcile). */
static void on_node_event(void *ctx, const char *node, enum policy_node_health_event event)
{
	struct lifecycle *lc = ctx;
	if (event == POLICY_NODE_HEALTH_DOWN) {
		size_t n = lifecycle_node_channels_close(lc, node);
		if (n)
			log_info("serve", "node %s is down: closed the helper channels of %zu sandbox(es) on it", node,
			         n);
		return;
	}
	if (event != POLICY_NODE_HEALTH_BACK)
		return;
	struct cp_error *e = NULL;
	if (lifecycle_node_reconcile(lc, node, &e) < 0)
		cp_error_log_free(LOG_LEVEL_WARN, "serve", &e, "after node %s came back", node);
}

int controlplane_serve(const struct config *cfg, const struct serve_options *opts, struct cp_error **err)
{
	/* stdio is a local client's own pipe: the tunnel plays no part in it. */
	int tunnel = !opts->stdio && cfg->enable_tunnel;
	if (tunnel && tunnel_config_check(cfg, err) < 0) {
		if (access(cfg->state_dir, W_OK) == 0)
			tunnel_state_write_refused(cfg, (*err)->message);
		return -1;
	}

	struct store *store = NULL;
	struct docker_engine *engine = NULL;
	struct lifecycle *lc = NULL;
	struct mcp_server *server = NULL;
	struct ui *ui = NULL;
	struct tunnel_supervisor *tunnel_sup = NULL;
	struct lifecycle_maintenance *maint = NULL;
	struct node_health *health = NULL;
	struct firewall_hook fw_hook = {.cfg = cfg};
	_cleanup_close_ int lock_fd = -1;
	int r = -1;

	raise_fd_limit();
	if (!opts->stdio)
		lower_own_oom_score();
	if (cfg->clock_offset_ms) {
		clock_set_offset_ms(cfg->clock_offset_ms);
		log_warn("serve", "the wall clock is shifted by %lld ms (CHAT2SBX_CLOCK_OFFSET_MS; for tests only)",
		         (long long)cfg->clock_offset_ms);
	}
	if (controlplane_open_store(cfg, &store, err) < 0 || take_serve_lock(cfg, &lock_fd, err) < 0 ||
	    check_working_directory(store, err) < 0 || docker_engine_new(cfg->docker_socket, &engine, err) < 0)
		goto out;
	log_info("serve", "engine %s (API %s) at %s", docker_engine_version(engine), docker_engine_api_version(engine),
	         cfg->docker_socket);
	/* The host edge before any sandbox is touched (issue 12). */
	if (check_runtime_inputs(cfg, engine, err) < 0 || ops_firewall_serve_start(cfg, engine, err) < 0 ||
	    lifecycle_new(cfg, store, engine, &lc, err) < 0)
		goto out;
	lifecycle_channel_receipts_set(lc, &tool_bash_receipts);
	/* Other machines' engines (issue 28): a pass at once, then every few
	 * seconds; never fatal (without it every node counts as answering). */
	if (node_health_start(store, on_node_event, lc, &health) == 0)
		lifecycle_node_health_set(lc, health);
	/* A container an earlier serve paused for a full disk would not answer
	 * its re-attach; the guard then looks before anything is created. */
	lifecycle_disk_unpause_leftovers(lc);
	if (lifecycle_disk_guard_start(lc, err) < 0)
		goto out;
	struct cp_error *rec_err = NULL;
	if (lifecycle_reconcile(lc, &rec_err) < 0) {
		cp_error_log_free(LOG_LEVEL_WARN, "serve", &rec_err, NULL);
	}
	/* Sandboxes that went idle while serve was down go before anyone can
	 * call them (then the maintenance thread checks once a minute). */
	if (lifecycle_expiry_run(lc, clock_now_ms(), &rec_err) < 0) {
		cp_error_log_free(LOG_LEVEL_WARN, "serve", &rec_err, "expiry");
	}
	if (cfg->test_unsafe_mount_docker_socket)
		log_warn("serve", "CHAT2SBX_TEST_UNSAFE_MOUNT_DOCKER_SOCKET=1: every sandbox gets the engine socket; "
		                  "TEST ONLY, never use it otherwise");
	/* Before the pool starts, so the probe is a fresh sandbox like any create. */
	if (opts->verify_isolation && ops_isolation_require(lc, err) < 0)
		goto out;
	/* Never fatal: a failure is logged, creates go cold. stdio defers it
	 * to the first create, so a client's probing start makes nothing. */
	if (opts->stdio)
		lifecycle_pool_defer(lc, cfg->warm_pool);
	else
		lifecycle_pool_start(lc, cfg->warm_pool, NULL);

	fw_hook.engine = engine;
	maint = lifecycle_maintenance_start(lc, maintain_firewall, &fw_hook);

	/* Who may use the endpoint (issue 12): the Unix socket is for this user
	 * and root; the TCP port wants the token of STATE_DIR/token. stdio is a
	 * local client's own pipe and needs neither. */
	char socket_path[4200], token_path[4200], token[OPS_MCP_TOKEN_LEN + 1] = "";
	snprintf(socket_path, sizeof(socket_path), "%s/" OPS_MCP_SOCKET_FILE, cfg->state_dir);
	ops_mcp_token_path(cfg->state_dir, token_path, sizeof(token_path));
	char token_hint[4300];
	snprintf(token_hint, sizeof(token_hint), "the file '%s'", token_path);
	if (!opts->stdio && cfg->mcp_token) {
		int created = 0;
		if (ops_mcp_token_ensure(cfg->state_dir, token, &created, err) < 0)
			goto out;
		if (created)
			log_info("serve", "made the MCP bearer token in '%s' ('chat2sbx token' prints it)", token_path);
	} else if (!opts->stdio) {
		log_warn("serve",
		         "CHAT2SBX_MCP_TOKEN=off: the MCP port takes requests WITHOUT a bearer token, so "
		         "every local user of this machine can drive sandboxes; unset it to require the token");
	}

	struct tools_app app = {.cfg = cfg, .store = store, .lc = lc};
	/* Request rows in batches off the answer's path; store_free below
	 * writes the last of them. */
	tools_audit_batching_start(store);
	size_t n_tools = 0;
	const struct mcp_tool *tools = tools_table(&n_tools);
	struct mcp_server_options mo = {
	    .host = cfg->host,
	    .port = (unsigned)cfg->port,
	    .name = "chat2sbx",
	    .version = CHAT2SBX_VERSION,
	    .instructions = tools_instructions,
	    .max_body_bytes = (size_t)cfg->max_body_bytes,
	    .max_sessions = MCP_MAX_SESSIONS,
	    .session_idle_ms = MCP_SESSION_IDLE_MS,
	    .on_request = tools_audit_request, /* one audit row per request */
	    .before_call = tools_audit_gate,   /* a change runs only once on record */
	    .on_request_ctx = &app,
	    .unix_socket_path = opts->stdio ? NULL : socket_path,
	    .bearer_token = token[0] ? token : NULL,
	    .token_hint = token_hint,
	};
	int created_server = mcp_server_new(&mo, tools, n_tools, &app, &server, err);
	explicit_bzero(token, sizeof(token)); /* the server keeps its own copy */
	if (created_server < 0)
		goto out;
	/* The owner's page (issue 26) on the same listeners. */
	char self_exe[PATH_MAX] = "";
	ssize_t self_len = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
	self_exe[self_len > 0 ? self_len : 0] = '\0';
	ui = ui_new(&(struct ui_deps){.cfg = cfg, .store = store, .lc = lc, .self_exe = self_exe});
	mcp_server_set_pages(server, ui_handle, ui);

	if (opts->stdio) {
		stdio_server = server;
		stdio_thread = pthread_self();
		struct sigaction ssa = {.sa_handler = on_stdio_signal}; /* no SA_RESTART: the read is interrupted */
		sigemptyset(&ssa.sa_mask);
		sigaction(SIGINT, &ssa, NULL);
		sigaction(SIGTERM, &ssa, NULL);
		sigaction(SIGHUP, &ssa, NULL);
		log_info("serve", "serving MCP on stdin/stdout");
		r = mcp_server_serve_stdio(server, STDIN_FILENO, STDOUT_FILENO, err);
		if (stop_requested)
			log_info("serve", "stopping on a signal; sandboxes keep running");
		stdio_server = NULL;
		goto out;
	}

	/* Block the stop signals before the listener's threads exist, so only
	 * the ppoll below receives them (no lost wake-up). */
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigset_t stop_set, old_set;
	sigemptyset(&stop_set);
	sigaddset(&stop_set, SIGINT);
	sigaddset(&stop_set, SIGTERM);
	sigaddset(&stop_set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &stop_set, &old_set);
	if (mcp_server_listen(server, err) < 0) {
		pthread_sigmask(SIG_SETMASK, &old_set, NULL);
		goto out;
	}
	log_info("serve", "serving MCP on http://%s:%u/mcp (%s) and unix:%s (%s)", cfg->host, mcp_server_port(server),
	         cfg->mcp_token ? "bearer token required" : "no token: CHAT2SBX_MCP_TOKEN=off", socket_path,
	         cfg->enable_tunnel ? "tunnel configured" : "local-only: CHAT2SBX_ENABLE_TUNNEL=0");
	char page[300];
	log_info("serve", "the owner's page is %s ('chat2sbx ui' prints a login link)",
	         mcp_page_url(cfg->host, mcp_server_port(server), NULL, page, sizeof(page)));
	char url[4300];
	endpoint_url(cfg, mcp_server_port(server), url, sizeof(url));
	struct ops_serve_state state = {.started_at_ms = clock_now_ms(),
	                                .endpoint = url,
	                                .socket = socket_path,
	                                .token_file = token_path,
	                                .token_required = cfg->mcp_token,
	                                .tunnel_enabled = cfg->enable_tunnel};
	int state_written = -1;
	ops_serve_state_keep(cfg->state_dir, &state, &state_written);
	/* The endpoint's own attacks need it listening (and serve.json). */
	if (opts->verify_isolation) {
		struct ops_probe_report rep = {0};
		ops_endpoint_probe(cfg, &rep);
		int refused = ops_probe_report_require(&rep, err);
		ops_probe_report_clear(&rep);
		if (refused < 0) {
			pthread_sigmask(SIG_SETMASK, &old_set, NULL);
			goto out;
		}
	}
	/* The listener accepts connections once mcp_server_listen returned, so
	 * the tunnel client's first probe finds it. */
	if (tunnel) {
		if (tunnel_start(cfg, socket_path, &tunnel_sup, err) < 0) {
			pthread_sigmask(SIG_SETMASK, &old_set, NULL);
			goto out;
		}
	}
	while (!stop_requested) {
		/* Signals arrive here (ppoll unblocks them as sigsuspend would);
		 * every SERVE_STATE_CHECK_MS serve.json is checked and written
		 * again when a full disk or a hand kept it from naming us. */
		struct timespec tick = {.tv_sec = SERVE_STATE_CHECK_MS / 1000};
		ppoll(NULL, 0, &tick, &old_set);
		if (reload_requested) {
			reload_requested = 0;
			on_reload(cfg);
		}
		if (!stop_requested)
			ops_serve_state_keep(cfg->state_dir, &state, &state_written);
	}
	pthread_sigmask(SIG_SETMASK, &old_set, NULL);
	log_info("serve", "stopping; sandboxes keep running and are re-attached at the next start");
	/* Stop accepting and let running calls answer (mcp_server_stop bounds
	 * the wait) while the tunnel still carries their replies; then the
	 * tunnel client goes. */
	mcp_server_stop(server);
	tunnel_stop(TAKE_PTR(tunnel_sup));
	r = 0;
out:
	if (!opts->stdio)
		ops_serve_state_remove(cfg->state_dir); /* only when it names this process */
	tunnel_stop(tunnel_sup);
	lifecycle_maintenance_stop(maint);
	mcp_server_free(server);
	if (lc)
		lifecycle_node_health_set(lc, NULL); /* no call runs any more */
	node_health_stop(health);
	ui_free(ui);             /* after the listeners: no request uses it any more */
	lifecycle_pool_stop(lc); /* after the last tool call: removes the unclaimed members it made */
	lifecycle_disk_guard_stop(lc);
	lifecycle_free(lc);
	docker_engine_free(engine);
	store_free(store);
	return r;
}
