/* isolation.c: the isolation probe of `chat2sbx doctor` and `serve
 * --verify-isolation`. It attacks a real sandbox from the inside, through
 * the same helper channel a model's bash call uses, and judges what came
 * back on the host (checks.c). It owns its canaries and probes and removes
 * them whatever happens; it never touches another sandbox. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <json-c/json.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/cleanup.h"
#include "../base/id.h"
#include "../base/log.h"
#include "../base/xalloc.h"
#include "../base/xjson.h"
#include "../lifecycle/lifecycle.h"
#include "../policy/policy.h"
#include "ops_internal.h"

#define PROBE_ENV_NAME "CHAT2SBX_DOCTOR_CANARY"
#define PROBE_CALL_WAIT_MS 45000
#define PROBE_MAX_OUTPUT 262144

/* What the host planted, to be looked for inside. */
struct canaries {
	char tmp_dir[4200];   /* a fresh host temp dir */
	char tmp_file[4300];  /* tmp_dir/<name> */
	char data_file[4300]; /* DATA_ROOT/<name> */
	char name[64];        /* file name, "c2s-canary-<random>" */
	char content[64];     /* file content, random */
	char env_value[64];   /* value of PROBE_ENV_NAME */
};

static int write_file(const char *path, const char *text, struct cp_error **err)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "plant canary '%s'", path);
	size_t len = strlen(text);
	if (write(fd, text, len) != (ssize_t)len)
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "plant canary '%s'", path);
	return 0;
}

static int canaries_plant(const struct config *cfg, struct canaries *c, struct cp_error **err)
{
	_cleanup_free_ char *a = NULL, *b = NULL, *e = NULL;
	if (id_new("", &a, err) < 0 || id_new("", &b, err) < 0 || id_new("", &e, err) < 0)
		return -1;
	snprintf(c->name, sizeof(c->name), "c2s-canary-%s", a);
	snprintf(c->content, sizeof(c->content), "c2s-content-%s", b);
	snprintf(c->env_value, sizeof(c->env_value), "c2s-env-%s", e);
	snprintf(c->tmp_dir, sizeof(c->tmp_dir), "/tmp/chat2sbx-doctor-XXXXXX");
	if (!mkdtemp(c->tmp_dir)) {
		c->tmp_dir[0] = '\0';
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "create a host temp dir for the canary");
	}
	snprintf(c->tmp_file, sizeof(c->tmp_file), "%s/%s", c->tmp_dir, c->name);
	snprintf(c->data_file, sizeof(c->data_file), "%s/%s", cfg->data_root, c->name);
	if (write_file(c->tmp_file, c->content, err) < 0 || write_file(c->data_file, c->content, err) < 0)
		return -1;
	/* Set before the probe is created, so a leak of this process's
	 * environment into the container would carry it. */
	setenv(PROBE_ENV_NAME, c->env_value, 1);
	return 0;
}

static void canaries_remove(struct canaries *c)
{
	unsetenv(PROBE_ENV_NAME);
	if (c->tmp_file[0])
		unlink(c->tmp_file);
	if (c->data_file[0])
		unlink(c->data_file);
	if (c->tmp_dir[0])
		rmdir(c->tmp_dir);
}

/* The text between "@@name\n" and the next "@@" marker, copied (caller frees). */
static char *section(const char *out, const char *name)
{
	char marker[64];
	snprintf(marker, sizeof(marker), "@@%s\n", name);
	const char *p = strstr(out, marker);
	if (!p)
		return xstrdup("");
	p += strlen(marker);
	if (!strncmp(p, "@@", 2))
		return xstrdup(""); /* an empty section */
	const char *end = strstr(p, "\n@@");
	size_t len = end ? (size_t)(end - p + 1) : strlen(p);
	return xstrndup(p, len);
}

/* First line of text, clipped, for a detail. */
static const char *first_line(const char *text, char *buf, size_t size)
{
	snprintf(buf, size, "%.*s", (int)strcspn(text, "\n"), text);
	return buf;
}

static int blank(const char *s)
{
	return s[strspn(s, " \t\r\n")] == '\0';
}

/* One survey of everything an attacker inside would look at, in sections. */
static char *survey_command(const struct canaries *c)
{
	/* The random parts are split so the command text itself (which the
	 * helper may keep) never contains what the search looks for. */
	size_t nh = strlen(c->name) / 2, ch = strlen(c->content) / 2;
	return xasprintf(
	    "echo @@socket\n"
	    "for p in /var/run/docker.sock /run/docker.sock /docker.sock /var/run/docker/docker.sock; do\n"
	    "  [ -e \"$p\" ] && echo \"$p exists\"\n"
	    "done\n"
	    "echo @@mountinfo; cat /proc/self/mountinfo\n"
	    "echo @@status; cat /proc/self/status\n"
	    "echo @@environ; tr '\\0' '\\n' </proc/1/environ; echo; env\n"
	    /* The limit may sit on an ancestor of this shell's cgroup (a vm
	     * guest's sandbox/init): every pids.max up to the root. */
	    "echo @@pids; d=/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/self/cgroup); d=${d%%/}\n"
	    "while [ -n \"$d\" ]; do cat \"$d/pids.max\" 2>/dev/null; [ \"$d\" = /sys/fs/cgroup ] && break; "
	    "d=${d%%/*}; done\n"
	    "cat /sys/fs/cgroup/pids/pids.max 2>/dev/null; echo none\n"
	    "echo @@memory; cat /sys/fs/cgroup/memory.max 2>/dev/null || cat "
	    "/sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || echo none\n"
	    "echo @@oom; cat /proc/self/oom_score_adj\n"
	    "echo @@files\n"
	    "n1='%.*s'; n2='%s'; c1='%.*s'; c2='%s'\n"
	    "cat '%s' '%s' 2>/dev/null\n"
	    "find / -xdev -name \"$n1$n2\" 2>/dev/null | head -n 5\n"
	    "for mp in $(awk '{print $5}' /proc/self/mountinfo | sort -u); do\n"
	    "  case \"$mp\" in /|/proc|/proc/*|/sys|/sys/*|/dev|/dev/*) continue ;; esac\n"
	    "  find \"$mp\" -xdev -name \"$n1$n2\" 2>/dev/null | head -n 5\n"
	    "  grep -rlsF -m1 \"$c1$c2\" \"$mp\" 2>/dev/null | head -n 5\n"
	    "done\n"
	    "echo @@end\n",
	    (int)nh, c->name, c->name + nh, (int)ch, c->content, c->content + ch, c->tmp_file, c->data_file);
}

/* vm: a guest's own kernel answers the socket, privileges and memory
 * questions; ops_vm_probe asks QEMU and its container instead. */
static void judge_survey(const struct config *cfg, const struct canaries *c, const char *out, int vm,
                         struct ops_probe_report *r)
{
	char buf[1024], line[512];
	_cleanup_free_ char *socket = section(out, "socket");
	_cleanup_free_ char *mountinfo = section(out, "mountinfo");
	_cleanup_free_ char *status = section(out, "status");
	_cleanup_free_ char *environ = section(out, "environ");
	_cleanup_free_ char *pids = section(out, "pids");
	_cleanup_free_ char *files = section(out, "files");
	_cleanup_free_ char *memory = section(out, "memory");
	_cleanup_free_ char *oom = section(out, "oom");
	if (!strstr(out, "@@end"))
		log_warn("doctor", "the probe's survey was cut short; judging what arrived");

	const char *sock_base = strrchr(cfg->docker_socket, '/');
	const char *attack = "reach the host's Docker Engine socket (a path or a mount)";
	if (vm)
		; /* the guest's /run/docker.sock is its own engine: isolation_vm.c */
	else if (!blank(socket))
		ops_probe_report_add(r, "docker_socket", attack, OPS_CHECK_FAILED, "%s",
		                     first_line(socket, line, sizeof(line)));
	else if (ops_mountinfo_find_socket(mountinfo, sock_base ? sock_base + 1 : NULL, buf, sizeof(buf)))
		ops_probe_report_add(r, "docker_socket", attack, OPS_CHECK_FAILED, "the engine socket is mounted at %s",
		                     buf);
	else
		ops_probe_report_add(r, "docker_socket", attack, OPS_CHECK_PASSED,
		                     "no socket at the usual paths, none in the mounts");

	attack = "read a canary file planted on the host (temp dir and DATA_ROOT)";
	if (!blank(files))
		ops_probe_report_add(r, "host_files", attack, OPS_CHECK_FAILED, "the canary is visible inside: %s",
		                     first_line(files, line, sizeof(line)));
	else
		ops_probe_report_add(r, "host_files", attack, OPS_CHECK_PASSED,
		                     "'%s' and '%s' not found by path, name or content", c->tmp_file, c->data_file);

	attack = "find a canary variable of the host's environment";
	if (strstr(environ, c->env_value) || strstr(environ, PROBE_ENV_NAME))
		ops_probe_report_add(r, "host_environment", attack, OPS_CHECK_FAILED,
		                     "%s set on the host is visible in the sandbox's environment", PROBE_ENV_NAME);
	else
		ops_probe_report_add(r, "host_environment", attack, OPS_CHECK_PASSED,
		                     "not in PID 1's environment nor in a shell's");

	attack = "find a credential directory or the host home among the mounts";
	struct passwd *pw = getpwuid(getuid());
	if (ops_mountinfo_find_credentials(mountinfo, pw ? pw->pw_dir : NULL, POLICY_HELPER_TARGET, buf, sizeof(buf)))
		ops_probe_report_add(r, "credentials", attack, OPS_CHECK_FAILED, "mounted: %s", buf);
	else
		ops_probe_report_add(r, "credentials", attack, OPS_CHECK_PASSED,
		                     "no .ssh, .aws, .config, ... and no host home mounted");

	attack = "hold a dangerous capability or gain privileges (CapEff, NoNewPrivs)";
	uint64_t caps = 0;
	if (vm)
		; /* the guest's root: QEMU is judged instead (isolation_vm.c) */
	else if (ops_capabilities_parse(status, &caps) < 0)
		ops_probe_report_add(r, "privileges", attack, OPS_CHECK_FAILED,
		                     "CapEff could not be read from /proc/self/status");
	else if (ops_capabilities_dangerous(caps, buf, sizeof(buf)) > 0)
		ops_probe_report_add(r, "privileges", attack, OPS_CHECK_FAILED, "CapEff %016llx holds %s",
		                     (unsigned long long)caps, buf);
	else if (!strstr(status, "NoNewPrivs:\t1"))
		ops_probe_report_add(r, "privileges", attack, OPS_CHECK_FAILED,
		                     "no-new-privileges is off (setuid programs gain)");
	else
		ops_probe_report_add(r, "privileges", attack, OPS_CHECK_PASSED, "CapEff %016llx, no-new-privileges on",
		                     (unsigned long long)caps);

	attack = "start processes without bound (the cgroup pids limit)";
	char *end = NULL;
	long long limit = ops_pids_limit(pids);
	if (limit <= 0)
		ops_probe_report_add(r, "pids_limit", attack, OPS_CHECK_FAILED, "pids.max is '%s': no process limit",
		                     first_line(pids, line, sizeof(line)));
	else
		ops_probe_report_add(r, "pids_limit", attack, OPS_CHECK_PASSED, "pids.max = %lld", limit);

	/* Issue 13: a ceiling on memory, and the kernel's first choice when the
	 * host runs out (so serve and the engine are not). */
	attack = "take all of the host's memory (the cgroup ceiling, oom_score_adj)";
	long long mem = strtoll(memory, &end, 10), adj = strtoll(oom, NULL, 10);
	if (vm)
		; /* the VM's memory: the container's ceiling over QEMU (isolation_vm.c) */
	else if (end == memory || mem <= 0 || mem >= (1LL << 62))
		ops_probe_report_add(r, "memory_limit", attack, OPS_CHECK_FAILED, "the memory ceiling is '%s': none",
		                     first_line(memory, line, sizeof(line)));
	else if (adj < POLICY_OOM_SCORE_ADJ)
		ops_probe_report_add(r, "memory_limit", attack, OPS_CHECK_FAILED,
		                     "oom_score_adj %lld: the kernel could pick the host's own processes first", adj);
	else
		ops_probe_report_add(r, "memory_limit", attack, OPS_CHECK_PASSED,
		                     "ceiling %lld MiB, oom_score_adj %lld (picked first when memory runs out)",
		                     mem >> 20, adj);
}

/* Removes a probe: its container, its row and its managed workspace (a
 * probe is no user's work, so nothing of it is kept for 30 days). */
static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void probe_remove(struct lifecycle *lc, const struct sandbox_record *s)
{
	_cleanup_error_ struct cp_error *e = NULL;
	struct store *store = lifecycle_store(lc);
	struct workspace_record w = {0};
	int have_ws = store_workspace_get(store, s->workspace_id, &w, &e) == 0;
	cp_error_freep(&e);
	if (lifecycle_sandbox_destroy(lc, s->id, NULL, &e) < 0)
		cp_error_log_free(LOG_LEVEL_WARN, "doctor", &e, "remove probe %s", s->id);
	else if ((have_ws && lifecycle_workspace_volume_drop(lc, &w, &e) < 0) ||
	         store_sandbox_delete(store, s->id, &e) < 0 ||
	         (have_ws && !strcmp(w.mode, "managed") && store_workspace_delete(store, w.id, &e) < 0))
		cp_error_log_free(LOG_LEVEL_WARN, "doctor", &e, "forget probe %s", s->id);
	else if (have_ws && !strcmp(w.mode, "managed") && w.path)
		nftw(w.path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	workspace_record_clear(&w);
}

static int probe_create(struct lifecycle *lc, const char *node, int network_off, struct sandbox_record *ret,
                        struct cp_error **err)
{
	/* Where it was asked: never left to placement, so each result is the
	 * named node's. */
	struct lifecycle_create_options o = {.network_off = network_off, .node = node ? node : "local"};
	struct lifecycle_create_result res = {0};
	if (lifecycle_sandbox_create(lc, &o, &res, err) < 0)
		return cp_error_prefix(err, "create the doctor's probe sandbox");
	*ret = res.sandbox;
	res.sandbox = (struct sandbox_record){0}; /* ownership moved to *ret */
	lifecycle_create_result_clear(&res);
	return 0;
}

static void network_off_check(struct lifecycle *lc, const char *node, struct ops_probe_report *r)
{
	const char *attack = "see any network interface but loopback in a sandbox created with network off";
	struct sandbox_record s = {0};
	_cleanup_error_ struct cp_error *e = NULL;
	if (probe_create(lc, node, 1, &s, &e) < 0) {
		ops_probe_report_add(r, "network_off", attack, OPS_CHECK_FAILED, "%s", e->message);
		return;
	}
	if (s.network) {
		ops_probe_report_add(
		    r, "network_off", attack, OPS_CHECK_SKIPPED,
		    "this build does not honour the network_off create option yet (the sandbox has network)");
	} else {
		_cleanup_free_ char *out = NULL;
		if (ops_probe_run(lc, s.id, "ls /sys/class/net | tr '\\n' ' '", &out, &e) < 0) {
			ops_probe_report_add(r, "network_off", attack, OPS_CHECK_FAILED, "%s", e->message);
		} else {
			char *t = out + strlen(out);
			while (t > out && (t[-1] == ' ' || t[-1] == '\n'))
				*--t = '\0';
			ops_probe_report_add(r, "network_off", attack,
			                     strcmp(out, "lo") ? OPS_CHECK_FAILED : OPS_CHECK_PASSED, "interfaces: %s",
			                     out);
		}
	}
	probe_remove(lc, &s);
	sandbox_record_clear(&s);
}

int ops_isolation_probe(struct lifecycle *lc, const char *node, struct ops_probe_report *ret, struct cp_error **err)
{
	const struct config *cfg = lifecycle_config(lc);
	struct canaries c = {0};
	struct sandbox_record s = {0};
	struct ops_probe_report r = {0};
	_cleanup_free_ char *cmd = NULL, *out = NULL;
	int rc = -1;
	int remote = node && strcmp(node, STORE_NODE_LOCAL);
	snprintf(r.node, sizeof(r.node), "%s", remote ? node : STORE_NODE_LOCAL);

	if (canaries_plant(cfg, &c, err) < 0 || probe_create(lc, node, 0, &s, err) < 0)
		goto out;
	cmd = survey_command(&c);
	if (ops_probe_run(lc, s.id, cmd, &out, err) < 0)
		goto out;
	int vm = policy_runtime_is_vm(s.runtime);
	judge_survey(cfg, &c, out, vm, &r);
	if (vm)
		ops_vm_probe(lc, &s, &r);
	if (!remote)
		ops_attack_host_files(lc, s.id, s.workspace_id, vm, &r);
	char edge[2048];
	enum ops_check_result edge_result;
	ops_host_edge_attack(lc, &s, &edge_result, edge, sizeof(edge));
	ops_probe_report_add(&r, "host_services", OPS_HOST_EDGE_ATTACK, edge_result, "%s", edge);
	network_off_check(lc, node, &r);
	if (remote) {
		ops_probe_report_add(
		    &r, "this_machine_only", OPS_THIS_MACHINE_ONLY, OPS_CHECK_SKIPPED,
		    "run on node 'local' (chat2sbx doctor --node local): direct workspaces and the vm "
		    "runtime stay on this machine, a managed workspace on node '%s' is an engine volume "
		    "there, and export bundles are read here whichever node made them",
		    node);
	} else {
		ops_git_guard_probe(lc, &r);  /* git_probe.c */
		ops_delta_bomb_probe(lc, &r); /* attack_delta_bomb.c */
	}
	*ret = r;
	r = (struct ops_probe_report){0};
	rc = 0;
out:
	if (s.id)
		probe_remove(lc, &s);
	sandbox_record_clear(&s);
	canaries_remove(&c);
	ops_probe_report_clear(&r);
	return rc;
}

int ops_isolation_require(struct lifecycle *lc, struct cp_error **err)
{
	struct ops_probe_report r = {0};
	if (ops_isolation_probe(lc, STORE_NODE_LOCAL, &r, err) < 0)
		return cp_error_prefix(err, "verify isolation");
	int rc = ops_probe_report_require(&r, err);
	ops_probe_report_clear(&r);
	return rc;
}
