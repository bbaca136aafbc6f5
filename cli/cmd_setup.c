/* cmd_setup.c: `chat2sbx setup`: makes this machine ready to serve, step by
 * step, each saying what it changed or "nothing to do": the engine (reachable,
 * API, runtime), the template image (DATA_DIR/template/build.sh, cached by content
 * hash), the data directories and registry with their modes, the
 * host-edge firewall (as root), the tunnel client and secrets; then what to
 * do next. Idempotent: a second run changes
 * nothing and says so. The service unit options live in cmd_service.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/clock.h"
#include "base/private_dir.h"
#include "base/xalloc.h"
#include "cli.h"
#include "docker/docker.h"
#include "lifecycle/lifecycle.h"
#include "ops/ops.h"
#include "policy/policy.h"
#include "store/store.h"
#include "tunnel/tunnel.h"

enum step_result { STEP_NOTHING, STEP_CHANGED, STEP_TODO, STEP_FAILED };

struct setup {
	const struct config *cfg;
	int tty;           /* stdout is a terminal: progress on one line */
	int changed;       /* some step changed something */
	int failed;        /* some step failed */
	int todo;          /* the user has something to do (tunnel secrets) */
	char *tunnel_todo; /* owned: what the tunnel step asks for */
};

static void step(struct setup *s, const char *name, enum step_result r, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void step(struct setup *s, const char *name, enum step_result r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char text[2048];
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	static const char *const tail[] = {" (nothing to do)", "", "", ""};
	static const char *const head[] = {"ok: ", "changed: ", "to do: ", "FAILED: "};
	printf("setup: %-9s %s%s%s\n", name, head[r], text, tail[r]);
	fflush(stdout);
	s->changed |= r == STEP_CHANGED;
	s->failed |= r == STEP_FAILED;
	s->todo |= r == STEP_TODO;
}

static void step_engine(struct setup *s, struct docker_engine **ret_engine)
{
	struct cp_error *e = NULL;
	struct docker_engine *engine = NULL;
	if (docker_engine_new(s->cfg->docker_socket, &engine, &e) < 0) {
		step(s, "engine", STEP_FAILED, "%s", e->message);
		cp_error_free(e);
		return;
	}
	/* vm is not an OCI runtime: the engine's default runs its containers. */
	const char *want =
	    s->cfg->runtime[0] && strcmp(s->cfg->runtime, "auto") && !policy_runtime_is_vm(s->cfg->runtime)
	        ? s->cfg->runtime
	        : NULL;
	int found = 0, no_network = 0;
	_cleanup_free_ char *names = NULL;
	if (want && docker_engine_runtime(engine, want, &found, &no_network, &names, &e) < 0) {
		step(s, "engine", STEP_FAILED, "%s", e->message);
		cp_error_free(e);
	} else if (want && !found) {
		step(s, "engine", STEP_FAILED,
		     "the runtime '%s' (CHAT2SBX_RUNTIME) is not registered in the engine at %s (it has: %s); "
		     "register it in /etc/docker/daemon.json and restart the engine, or unset CHAT2SBX_RUNTIME",
		     want, s->cfg->docker_socket, names ? names : "none");
	} else {
		step(s, "engine", STEP_NOTHING, "Docker Engine %s (API %s) at %s, runtime %s%s",
		     docker_engine_version(engine), docker_engine_api_version(engine), s->cfg->docker_socket,
		     want ? want : "the engine's default",
		     no_network ? " (registered without network: sandboxes get none)" : "");
	}
	*ret_engine = engine;
}

/* Which runtime sandboxes get, as serve decides it; for vm the
 * accelerator (with the TCG warning) and the vm image, which
 * DATA_DIR/template/vm/build.sh builds (`make template-vm` in a source
 * tree; a long build, so setup does not start it). */
static void step_runtime(struct setup *s, struct docker_engine *engine)
{
	struct guard_runtime_choice c;
	struct cp_error *e = NULL;
	if (guard_runtime_probe(s->cfg, engine, &c, &e) < 0) {
		step(s, "runtime", STEP_FAILED, "%s", e->message);
		cp_error_free(e);
		return;
	}
	if (!policy_runtime_is_vm(c.runtime)) {
		step(s, "runtime", STEP_NOTHING, "sandboxes are containers (%s)%s%s",
		     c.runtime ? c.runtime : "the engine's default runtime", c.why ? "; " : "", c.why ? c.why : "");
		return;
	}
	_cleanup_free_ char *id = NULL;
	int present = engine && docker_image_inspect(engine, s->cfg->vm_image, &id, &e) == 0;
	cp_error_free(e);
	if (!present) {
		_cleanup_free_ char *vm_build_command =
		    xasprintf("%s/template/vm/build.sh %s %s", s->cfg->data_dir, s->cfg->vm_path, s->cfg->helper_path);
		step(s, "runtime", STEP_FAILED,
		     "sandboxes are microVMs (CHAT2SBX_RUNTIME=vm), but the vm image %s is not in the engine; build it "
		     "(a few minutes) with '%s' from an installed chat2sbx, or 'make template-vm' in its source tree",
		     s->cfg->vm_image, vm_build_command);
		return;
	}
	step(s, "runtime", STEP_NOTHING, "sandboxes are microVMs from %s, acceleration %s%s%s%s%s", s->cfg->vm_image,
	     c.accel, c.accel_why ? " (" : "", c.accel_why ? c.accel_why : "", c.accel_why ? ")" : "",
	     !strcmp(c.accel, "tcg") ? "; WARNING: TCG emulates the CPU, so vm sandboxes run many times slower than "
	                               "with KVM"
	                             : "");
}

#define TEMPLATE_TAIL 30
#define TEMPLATE_NEEDS_ROOT 3 /* build.sh's status when a step needs root */

/* Runs build.sh, relaying its "template: ..." lines: one progress line with
 * a step counter on a terminal, plain lines otherwise. Returns the exit
 * status; *ret_cached is set when it said the image was already up to date. */
static int run_build_script(struct setup *s, const char *script, int *ret_cached)
{
	int pipefd[2];
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0) {
		close(pipefd[0]);
		close(pipefd[1]);
		return -1;
	}
	if (pid == 0) {
		dup2(pipefd[1], STDOUT_FILENO);
		dup2(pipefd[1], STDERR_FILENO);
		int devnull = open("/dev/null", O_RDONLY);
		if (devnull >= 0)
			dup2(devnull, STDIN_FILENO);
		/* The script reads these two; config.yaml may have set them. */
		setenv("CHAT2SBX_TEMPLATE_IMAGE", s->cfg->template_image, 1);
		setenv("CHAT2SBX_DOCKER_SOCKET", s->cfg->docker_socket, 1);
		if (access(s->cfg->helper_path, X_OK) == 0)
			execlp("bash", "bash", script, s->cfg->helper_path, (char *)NULL);
		else
			execlp("bash", "bash", script, (char *)NULL);
		_exit(127);
	}
	close(pipefd[1]);
	FILE *in = fdopen(pipefd[0], "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int count = 0, cached = 0, retagged = 0;
	int64_t t0 = clock_monotonic_ms();
	char *tail[TEMPLATE_TAIL] = {0};
	while (in && (n = getline(&line, &cap, in)) >= 0) {
		if (n > 0 && line[n - 1] == '\n')
			line[--n] = '\0';
		cached |= strstr(line, "template up to date") != NULL;
		retagged |= strstr(line, "re-tagged") != NULL;
		free(tail[count % TEMPLATE_TAIL]);
		tail[count % TEMPLATE_TAIL] = xstrdup(line);
		count++;
		if (s->tty)
			printf("\r\033[K  [step %d, %llds] %.100s", count,
			       (long long)((clock_monotonic_ms() - t0) / 1000), line);
		else
			printf("  %s\n", line);
		fflush(stdout);
	}
	free(line);
	if (in)
		fclose(in);
	else
		close(pipefd[0]);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	if (s->tty) {
		printf("\r\033[K");
		/* A failure shows the script's last lines, which the progress line overwrote. */
		for (int i = code ? (count > TEMPLATE_TAIL ? count - TEMPLATE_TAIL : 0) : count; i < count; i++)
			printf("  %s\n", tail[i % TEMPLATE_TAIL]);
	}
	for (int i = 0; i < TEMPLATE_TAIL; i++)
		free(tail[i]);
	*ret_cached = cached && !retagged;
	return code;
}

static void step_template(struct setup *s, struct docker_engine *engine)
{
	_cleanup_free_ char *id = NULL, *script = NULL;
	struct cp_error *e = NULL;
	int present = docker_image_inspect(engine, s->cfg->template_image, &id, &e) == 0;
	cp_error_free(e);
	e = NULL;
	/* DATA_DIR/template/build.sh: the source tree's template/ or the
	 * installed share/chat2sbx/template/ (config/install_dirs.c). */
	if (config_install_path(s->cfg, CONFIG_DIR_DATA, "template/build.sh", "the template's build script", &script,
	                        &e) < 0) {
		if (present)
			step(s, "template", STEP_NOTHING, "%s is present (cannot check it is current: %s)",
			     s->cfg->template_image, e->message);
		else
			step(s, "template", STEP_FAILED, "%s is not in the engine and cannot be built: %s",
			     s->cfg->template_image, e->message);
		cp_error_free(e);
		return;
	}
	if (!present)
		printf("setup: template  building %s (a few minutes the first time) ...\n", s->cfg->template_image);
	int cached = 0;
	int code = run_build_script(s, script, &cached);
	if (code == TEMPLATE_NEEDS_ROOT)
		step(s, "template", STEP_FAILED,
		     "building %s the first time needs root (debootstrap makes its root file system, which is then "
		     "cached): run 'sudo chat2sbx setup --template' once, then 'chat2sbx setup' again as yourself "
		     "(any user in the docker group then finds the image)",
		     s->cfg->template_image);
	else if (code != 0)
		step(s, "template", STEP_FAILED, "'%s' exited with status %d (its output is above)", script, code);
	else if (cached)
		step(s, "template", STEP_NOTHING, "%s is up to date (cached by content hash)", s->cfg->template_image);
	else
		step(s, "template", STEP_CHANGED, "built %s", s->cfg->template_image);
}

static void step_data(struct setup *s)
{
	const char *dirs[] = {s->cfg->data_root, s->cfg->state_dir, s->cfg->workspace_root};
	char changes[4096] = "";
	size_t o = 0;
	struct cp_error *e = NULL;
	for (size_t i = 0; i < 3; i++) {
		char what[1200];
		int r = private_dir_ensure(dirs[i], 0700, what, sizeof(what), &e);
		if (r < 0) {
			step(s, "data", STEP_FAILED, "%s", e->message);
			cp_error_free(e);
			return;
		}
		if (r > 0 && o < sizeof(changes))
			o += (size_t)snprintf(changes + o, sizeof(changes) - o, "%s%s", o ? "; " : "", what);
	}
	struct stat st;
	int existed = stat(s->cfg->database_path, &st) == 0;
	int mode_was = existed ? (int)(st.st_mode & 07777) : 0;
	struct store *store = NULL;
	int version = 0;
	if (store_open(s->cfg->database_path, &store, &e) < 0 || store_schema_version(store, &version, &e) < 0) {
		store_free(store);
		step(s, "data", STEP_FAILED, "%s", e->message);
		cp_error_free(e);
		return;
	}
	store_free(store);
	if ((!existed || mode_was != 0600) && o < sizeof(changes))
		o += (size_t)snprintf(changes + o, sizeof(changes) - o, "%s%s %s (0600)", o ? "; " : "",
		                      existed ? "tightened the registry" : "created the registry",
		                      s->cfg->database_path);
	if (o)
		step(s, "data", STEP_CHANGED, "%s; schema version %d", changes, version);
	else
		step(s, "data", STEP_NOTHING,
		     "%s, its state and workspace directories (0700) and the registry (0600, "
		     "schema version %d) are in place",
		     s->cfg->data_root, version);
}

/* The host-edge firewall (issue 12): installed when setup runs as root. */
static void step_firewall(struct setup *s, struct docker_engine *engine)
{
	if (!s->cfg->firewall) {
		step(s, "firewall", STEP_NOTHING,
		     "disabled (CHAT2SBX_FIREWALL=0): this host's own firewall must keep the sandbox bridges "
		     "(" POLICY_BRIDGE_PREFIX "*) off its services; 'chat2sbx doctor' attacks it");
		return;
	}
	if (!firewall_permitted()) {
		char why[1024];
		if (ops_firewall_unprivileged_check(s->cfg, engine, why, sizeof(why)) == 1) {
			step(s, "firewall", STEP_NOTHING, "installed by root: %s", why);
			return;
		}
		step(
		    s, "firewall", STEP_TODO,
		    "setup is not root, so it cannot install the firewall that keeps sandboxes off this host's "
		    "services, and %s; serve refuses to start without it. Run 'sudo chat2sbx setup --install-firewall' "
		    "(again after a reboot; the package's chat2sbx-firewall unit does it at boot), or set "
		    "CHAT2SBX_FIREWALL=0 if this host's own firewall does the job",
		    why);
		return;
	}
	struct cp_error *e = NULL;
	int changed = 0;
	char detail[1024];
	if (ops_firewall_install(s->cfg, engine, &changed, NULL, detail, sizeof(detail), &e) < 0) {
		step(s, "firewall", STEP_FAILED, "%s", e->message);
		cp_error_free(e);
		return;
	}
	step(s, "firewall", changed ? STEP_CHANGED : STEP_NOTHING, "%s", detail);
}

static void step_tunnel(struct setup *s)
{
	if (!s->cfg->enable_tunnel) {
		step(s, "tunnel", STEP_NOTHING, "disabled (CHAT2SBX_ENABLE_TUNNEL=0): serve answers on loopback only");
		return;
	}
	struct cp_error *e = NULL;
	if (tunnel_config_check(s->cfg, &e) < 0) {
		step(s, "tunnel", STEP_TODO, "%s", e->message);
		s->tunnel_todo = xstrdup(e->message);
		cp_error_free(e);
		return;
	}
	step(s, "tunnel", STEP_NOTHING, "client %s, tunnel id and key in %s", s->cfg->tunnel_client,
	     s->cfg->secret_dir);
}

static void next_steps(struct setup *s)
{
	if (s->failed) {
		printf("\nsetup: a step FAILED (see above); fix it and run 'chat2sbx setup' again\n");
		return;
	}
	printf("\nsetup: %s\n", s->changed ? "done" : "nothing changed: everything was already in place");
	printf("\nnext:\n");
	int n = 1;
	if (s->tunnel_todo) {
		printf("  %d. store the tunnel id in %s/tunnel-id and the runtime key in %s/key (chmod 0600 both),\n"
		       "     install the tunnel client at %s, then run 'chat2sbx setup' again to check\n"
		       "     (or serve local-only with CHAT2SBX_ENABLE_TUNNEL=0)\n",
		       n++, s->cfg->secret_dir, s->cfg->secret_dir, s->cfg->tunnel_client);
	}
	printf("  %d. run 'chat2sbx serve' (or 'chat2sbx setup --install-service' to start it at login)\n", n++);
	printf("  %d. check with 'chat2sbx status' and prove the isolation with 'chat2sbx doctor'\n", n++);
	if (s->cfg->enable_tunnel)
		printf("  %d. in ChatGPT, pick the app connected to your tunnel and ask it to create a sandbox\n", n++);
	else
		printf("  %d. point a local MCP client at http://%s:%d/mcp (or 'chat2sbx serve --stdio')\n", n++,
		       s->cfg->host, s->cfg->port);
}

int cmd_setup(struct cli *cli, int argc, char **argv)
{
	if (argc == 1 && (!strcmp(argv[0], "--install-service") || !strcmp(argv[0], "--uninstall-service") ||
	                  !strcmp(argv[0], "--print-service")))
		return cli_setup_service(cli, argv[0] + 2);
	if (argc == 1 && (!strcmp(argv[0], "--install-firewall") || !strcmp(argv[0], "--uninstall-firewall") ||
	                  !strcmp(argv[0], "--print-firewall")))
		return cli_setup_firewall(cli, argv[0] + 2);
	int template_only = argc == 1 && !strcmp(argv[0], "--template");
	if (argc != 0 && !template_only) {
		fprintf(
		    stderr,
		    "usage: chat2sbx setup [--template | --install-service | --uninstall-service | --print-service |\n"
		    "                       --install-firewall | --uninstall-firewall | --print-firewall]\n");
		return 2;
	}
	struct setup s = {.cfg = cli->cfg, .tty = isatty(STDOUT_FILENO)};
	struct docker_engine *engine = NULL;
	step_engine(&s, &engine);
	if (template_only) {
		/* Only the template (for root's one debootstrap, or a rebuild). */
		if (engine)
			step_template(&s, engine);
		docker_engine_free(engine);
		printf("\nsetup: %s\n", s.failed ? "the template step FAILED (see above)"
		                                 : "the template is in place; run 'chat2sbx setup' for the rest");
		return s.failed ? 1 : 0;
	}
	if (engine)
		step_template(&s, engine);
	else
		step(&s, "template", STEP_FAILED, "skipped: the engine is needed to build it");
	step_runtime(&s, engine);
	step_firewall(&s, engine);
	docker_engine_free(engine);
	step_data(&s);
	step_tunnel(&s);
	next_steps(&s);
	free(s.tunnel_todo);
	return s.failed ? 1 : 0;
}
