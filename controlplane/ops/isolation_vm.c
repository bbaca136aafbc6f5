/* isolation_vm.c: the doctor's checks for a vm probe sandbox (issue 15).
 * In a guest, root holds every capability of the guest's own kernel, its
 * memory is the VM's and its /run/docker.sock is the guest's own engine, so
 * the survey's answers to those questions mean nothing there; the boundary
 * is QEMU and its container. These checks ask them from the container's
 * side (the engine's exec API: QEMU's /proc status, the container's
 * memory ceiling, mounts and TCP listeners) and attack from the guest what
 * it must not reach: the host's engine through the socket, and the
 * container's own services through QEMU's user-mode gateway (10.0.2.2,
 * which is the container's loopback). */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "../base/cleanup.h"
#include "../base/xalloc.h"
#include "../lifecycle/lifecycle.h"
#include "ops_internal.h"

#define VM_EXEC_TIMEOUT_MS 20000L
/* QEMU's user-mode network: the gateway is the container's own loopback. */
#define VM_GATEWAY "10.0.2.2"
/* Probe runs that ask the guest's engine before it counts as not answering. */
#define VM_ENGINE_TRIES 6
/* Where the launcher is mounted (lifecycle_internal.h GUARD_VM_TARGET). */
#define VM_LAUNCHER_TARGET "/.chat2sbx/vm"

/* Run in the probe's container (the vm image has a shell): QEMU's status
 * and oom_score_adj, the container's memory ceiling (cgroup v2 or v1), its
 * PID 1's mounts, its TCP sockets and how its seccomp filter answers the
 * calls that go around mode checks (the launcher's `syscalls`). */
static const char container_script[] =
    "echo @@qemu\n"
    "for d in /proc/[0-9]*; do\n"
    "  case \"$(cat $d/comm 2>/dev/null)\" in qemu-system*)\n"
    "    cat $d/status; echo \"OomScoreAdj:\t$(cat $d/oom_score_adj)\"; break ;; esac\n"
    "done\n"
    "echo @@memory; cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes "
    "2>/dev/null || echo none\n"
    "echo @@mounts; cat /proc/1/mountinfo\n"
    "echo @@tcp; cat /proc/net/tcp /proc/net/tcp6 2>/dev/null\n"
    "echo @@syscalls; " VM_LAUNCHER_TARGET " syscalls\n"
    "echo @@end\n";

int ops_vm_qemu_judge(const char *status, const char *syscalls, char *buf, size_t size)
{
	unsigned long ruid = 0, euid = 0;
	const char *u = strstr(status, "\nUid:");
	uint64_t caps = 0;
	char names[256];
	if (!u || sscanf(u + 5, "%lu %lu", &ruid, &euid) != 2) {
		snprintf(buf, size, "no QEMU process found in the container (or its status could not be read)");
		return -1;
	}
	if (ruid == 0 || euid == 0) {
		snprintf(buf, size, "QEMU runs as root (uid %lu/%lu)", ruid, euid);
		return -1;
	}
	if (ops_capabilities_parse(status, &caps) < 0) {
		snprintf(buf, size, "QEMU's CapEff could not be read");
		return -1;
	}
	if (caps) {
		int dangerous = ops_capabilities_dangerous(caps, names, sizeof(names));
		snprintf(buf, size, "QEMU holds capabilities (CapEff %016llx%s%s)", (unsigned long long)caps,
		         dangerous > 0 ? ": " : "", dangerous > 0 ? names : "");
		return -1;
	}
	if (!strstr(status, "NoNewPrivs:\t1")) {
		snprintf(buf, size, "no-new-privileges is off for QEMU");
		return -1;
	}
	if (!strstr(status, "Seccomp:\t2")) {
		snprintf(buf, size, "QEMU runs without a seccomp filter");
		return -1;
	}
	static const char *const around[] = {"io_uring_setup", "openat2"};
	const char *why[2] = {NULL, NULL};
	for (size_t i = 0; i < 2; i++) {
		char key[64];
		snprintf(key, sizeof(key), "\"%s\":\"refused: ", around[i]);
		why[i] = syscalls ? strstr(syscalls, key) : NULL;
		if (!why[i]) {
			snprintf(buf, size, "%s is not refused in QEMU's container (%s)", around[i],
			         syscalls && *syscalls ? syscalls : "the container's answer had no syscalls line");
			return -1;
		}
		why[i] += strlen(key);
	}
	snprintf(buf, size,
	         "QEMU runs as uid %lu with no capabilities, no-new-privileges and seccomp filtering "
	         "(io_uring_setup refused: %.*s, openat2 refused: %.*s in its container)",
	         euid, (int)strcspn(why[0], "\""), why[0], (int)strcspn(why[1], "\""), why[1]);
	return 0;
}

long long ops_pids_limit(const char *text)
{
	long long best = -1;
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		char *end = NULL;
		long long v = strtoll(p, &end, 10);
		if (end != p && v > 0 && (*end == '\n' || *end == '\0') && (best < 0 || v < best))
			best = v;
	}
	return best;
}

size_t ops_tcp_listeners(const char *proc_net_tcp, int *ports, size_t max)
{
	size_t n = 0;
	for (const char *line = proc_net_tcp; line && *line && n < max;
	     line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		char local[128], remote[128], state[8];
		if (sscanf(line, " %*[0-9]: %127s %127s %7s", local, remote, state) != 3 || strcmp(state, "0A"))
			continue;
		const char *colon = strrchr(local, ':');
		long port = colon ? strtol(colon + 1, NULL, 16) : 0;
		if (port <= 0 || port > 65535)
			continue;
		int seen = 0;
		for (size_t i = 0; i < n; i++)
			seen |= ports[i] == (int)port;
		if (!seen)
			ports[n++] = (int)port;
	}
	return n;
}

/* The text between "@@name\n" and the next "@@" of out (borrowed; cut in place). */
static char *part(char *out, const char *name)
{
	char mark[32];
	snprintf(mark, sizeof(mark), "@@%s\n", name);
	char *p = strstr(out, mark);
	return p ? p + strlen(mark) : NULL;
}

/* Ends each part at the next "\n@@" (the markers are gone after). */
static void cut_parts(char *out)
{
	for (char *p = out; (p = strstr(p, "\n@@")); p += 3)
		p[1] = '\0';
}

static void check_qemu(struct ops_probe_report *r, const char *qemu, const char *syscalls)
{
	char buf[1024];
	int bad = ops_vm_qemu_judge(qemu ? qemu : "", syscalls, buf, sizeof(buf)) < 0;
	ops_probe_report_add(r, "privileges",
	                     "break out of the guest into QEMU and act there as root or with a capability (QEMU's "
	                     "uid, CapEff, no-new-privileges, seccomp)",
	                     bad ? OPS_CHECK_FAILED : OPS_CHECK_PASSED, "%s", buf);
}

static void check_memory(struct ops_probe_report *r, const char *memory, const char *qemu)
{
	const char *attack = "take all of the host's memory (the container's ceiling over QEMU, its oom_score_adj)";
	char *end = NULL;
	long long mem = memory ? strtoll(memory, &end, 10) : 0;
	const char *adj_line = qemu ? strstr(qemu, "OomScoreAdj:\t") : NULL;
	long long adj = adj_line ? strtoll(adj_line + 13, NULL, 10) : -1000;
	if (!memory || end == memory || mem <= 0 || mem >= (1LL << 62))
		ops_probe_report_add(r, "memory_limit", attack, OPS_CHECK_FAILED,
		                     "the container has no memory ceiling");
	else if (adj < POLICY_OOM_SCORE_ADJ)
		ops_probe_report_add(
		    r, "memory_limit", attack, OPS_CHECK_FAILED,
		    "QEMU's oom_score_adj is %lld: the kernel could pick the host's own processes first", adj);
	else
		ops_probe_report_add(r, "memory_limit", attack, OPS_CHECK_PASSED,
		                     "container ceiling %lld MiB over QEMU and the guest, oom_score_adj %lld",
		                     mem >> 20, adj);
}

/* The guest's /run/docker.sock must be the guest's own engine: the kernel
 * it reports is the guest's, not the host's; and no engine socket or
 * credential directory is mounted into the container itself. */
static void check_socket(struct lifecycle *lc, const struct sandbox_record *s, const char *mounts,
                         struct ops_probe_report *r)
{
	const struct config *cfg = lifecycle_config(lc);
	const char *attack = "reach the host's Docker Engine (the guest's socket, the container's mounts)";
	char buf[1024];
	const char *sock_base = strrchr(cfg->docker_socket, '/');
	if (mounts && ops_mountinfo_find_socket(mounts, sock_base ? sock_base + 1 : NULL, buf, sizeof(buf))) {
		ops_probe_report_add(r, "docker_socket", attack, OPS_CHECK_FAILED,
		                     "the engine socket is mounted into the container at %s", buf);
		return;
	}
	/* The launcher's mount is judged like the helper's: its host path may
	 * sit under ~/.local; the helper's is skipped by the finder. */
	_cleanup_free_ char *judged = mounts ? xstrdup(mounts) : NULL;
	for (char *p = judged; p && (p = strstr(p, " " VM_LAUNCHER_TARGET " "));) {
		while (p > judged && p[-1] != '\n')
			p--;
		for (; *p && *p != '\n'; p++)
			*p = ' ';
	}
	struct passwd *pw = getpwuid(getuid());
	if (judged &&
	    ops_mountinfo_find_credentials(judged, pw ? pw->pw_dir : NULL, POLICY_HELPER_TARGET, buf, sizeof(buf))) {
		ops_probe_report_add(r, "docker_socket", attack, OPS_CHECK_FAILED,
		                     "a credential directory is mounted into the container: %s", buf);
		return;
	}
	/* The first connection starts the guest's dockerd (socket activation),
	 * which under TCG can keep the guest too busy to answer for a while:
	 * asked again, a few times, each bounded. */
	_cleanup_free_ char *out = NULL;
	_cleanup_error_ struct cp_error *e = NULL;
	/* Two lines: the guest's kernel, then the engine's (empty while it
	 * does not answer: curl -s is silent). */
	for (int i = 0; i < VM_ENGINE_TRIES; i++) {
		free(out);
		out = NULL;
		cp_error_freep(&e);
		if (ops_probe_run(lc, s->id,
		                  "uname -r; curl -s --max-time 30 --unix-socket /run/docker.sock http://guest/version "
		                  "| grep -o '\"KernelVersion\":\"[^\"]*\"' | cut -d'\"' -f4",
		                  &out, &e) == 0 &&
		    strchr(out, '\n') && strchr(out, '\n')[1] > ' ')
			break;
	}
	if (e) {
		ops_probe_report_add(r, "docker_socket", attack, OPS_CHECK_FAILED,
		                     "could not ask the guest's engine: %s", e->message);
		return;
	}
	char guest[256] = "", engine[256] = "";
	sscanf(out, "%255s %255s", guest, engine);
	struct utsname host;
	uname(&host);
	if (!*engine)
		ops_probe_report_add(r, "docker_socket", attack, OPS_CHECK_FAILED,
		                     "the guest's /run/docker.sock did not answer (guest kernel %s)", guest);
	else if (strcmp(engine, guest) || !strcmp(engine, host.release))
		ops_probe_report_add(r, "docker_socket", attack, OPS_CHECK_FAILED,
		                     "the engine behind the guest's socket runs kernel %s, not the guest's %s", engine,
		                     guest);
	else
		ops_probe_report_add(r, "docker_socket", attack, OPS_CHECK_PASSED,
		                     "the guest's socket is its own engine (kernel %s; the host's is %s); no socket "
		                     "or credentials mounted into the container",
		                     engine, host.release);
}

/* From the guest, connects to the container's loopback (QEMU's gateway) on
 * every port a socket of the container listens on, serve's port and the
 * engine's TCP ports: none may answer (the probe exposes nothing). */
static void check_container_services(struct lifecycle *lc, const struct sandbox_record *s, const char *tcp,
                                     struct ops_probe_report *r)
{
	const char *attack = "reach a service of the sandbox's container (QEMU's monitor, a listener) from the guest "
	                     "through QEMU's gateway " VM_GATEWAY;
	if (!s->network) {
		ops_probe_report_add(r, "vm_container_services", attack, OPS_CHECK_SKIPPED, "the probe has no network");
		return;
	}
	int ports[64];
	size_t n = ops_tcp_listeners(tcp ? tcp : "", ports, 60);
	size_t listening = n;
	const int fixed[] = {lifecycle_config(lc)->port, 2375, 2376, 22};
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if (fixed[i] > 0)
			ports[n++] = fixed[i];
	char cmd[4096], list[512] = "";
	size_t len = (size_t)snprintf(cmd, sizeof(cmd), "for p in");
	size_t ll = 0;
	for (size_t i = 0; i < n && len < sizeof(cmd) - 16; i++) {
		len += (size_t)snprintf(cmd + len, sizeof(cmd) - len, " %d", ports[i]);
		if (ll < sizeof(list) - 8)
			ll += (size_t)snprintf(list + ll, sizeof(list) - ll, "%s%d", i ? "," : "", ports[i]);
	}
	snprintf(cmd + len, sizeof(cmd) - len,
	         "; do (timeout 3 bash -c \"exec 3<>/dev/tcp/" VM_GATEWAY "/$p\") 2>/dev/null && echo \"open $p\"; "
	         "done; echo done");
	_cleanup_free_ char *out = NULL;
	_cleanup_error_ struct cp_error *e = NULL;
	if (ops_probe_run(lc, s->id, cmd, &out, &e) < 0) {
		ops_probe_report_add(r, "vm_container_services", attack, OPS_CHECK_FAILED, "%s", e->message);
		return;
	}
	char *open_line = strstr(out, "open ");
	if (open_line || !strstr(out, "done")) {
		if (open_line)
			open_line[strcspn(open_line, "\n")] = '\0';
		ops_probe_report_add(r, "vm_container_services", attack, OPS_CHECK_FAILED, "%s",
		                     open_line ? open_line : "the attempt did not finish");
		return;
	}
	ops_probe_report_add(r, "vm_container_services", attack, OPS_CHECK_PASSED,
	                     "the container listens on %zu TCP port(s); %s:{%s} refused from the guest; QEMU's monitor "
	                     "is a Unix socket only the container sees",
	                     listening, VM_GATEWAY, list);
}

void ops_vm_probe(struct lifecycle *lc, const struct sandbox_record *s, struct ops_probe_report *r)
{
	const char *container = s->container_id ? s->container_id : s->container_name;
	const char *argv[] = {"/bin/sh", "-c", container_script, NULL};
	struct docker_exec_result x = {0};
	_cleanup_error_ struct cp_error *e = NULL;
	if (docker_container_exec(lifecycle_engine(lc), container, argv, VM_EXEC_TIMEOUT_MS, &x, &e) < 0 ||
	    x.exit_code != 0 || !strstr(x.out, "@@end")) {
		const char *why = e ? e->message : "the container's answer was cut short";
		ops_probe_report_add(r, "privileges", "look at QEMU from its container", OPS_CHECK_FAILED, "%s", why);
		docker_exec_result_clear(&x);
		return;
	}
	const char *qemu = part(x.out, "qemu"), *memory = part(x.out, "memory"), *mounts = part(x.out, "mounts"),
	           *tcp = part(x.out, "tcp"), *syscalls = part(x.out, "syscalls");
	cut_parts(x.out); /* after: it overwrites the markers */
	check_qemu(r, qemu, syscalls);
	check_memory(r, memory, qemu);
	check_socket(lc, s, mounts, r);
	check_container_services(lc, s, tcp, r);
	docker_exec_result_clear(&x);
}
