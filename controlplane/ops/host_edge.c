/* host_edge.c: the doctor's attack on the host edge (issue 12, item 5): it
 * opens a TCP listener on 0.0.0.0 of the host and has the probe sandbox
 * connect to it through its networks' gateways and every other address of
 * the host; it also reads whether table inet chat2sbx is in place. The
 * listener's own accept queue is the judge: a connection that reached it
 * is an attack that succeeded, whatever the probe printed. Owns the
 * listener for the attack's duration only. */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../base/cleanup.h"
#include "../base/xalloc.h"
#include "../lifecycle/lifecycle.h"
#include "ops_internal.h"

/* Seconds each connection attempt may take inside the probe: dropped SYNs
 * never answer, so every attempt runs this long (all in parallel). */
#define HOST_EDGE_CONNECT_S 3
/* Most addresses tried (a host with more interfaces gets the first ones). */
#define HOST_EDGE_MAX_TARGETS 32

struct targets {
	char addr[HOST_EDGE_MAX_TARGETS][INET_ADDRSTRLEN];
	size_t n;
	size_t gateways; /* the first this many are the probe's gateways */
};

static void targets_add(struct targets *t, const char *addr)
{
	struct in_addr a;
	if (t->n >= HOST_EDGE_MAX_TARGETS || inet_pton(AF_INET, addr, &a) != 1)
		return;
	/* 127.0.0.0/8 inside the sandbox is the sandbox's own loopback. */
	if ((ntohl(a.s_addr) >> 24) == 127)
		return;
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->addr[i], addr))
			return;
	snprintf(t->addr[t->n++], INET_ADDRSTRLEN, "%s", addr);
}

/* The probe's gateways first, then every IPv4 address of the host. (The
 * engine turns IPv6 off in containers on networks without it, as
 * chat2sbx's are, so the probe has no IPv6 to attack with.) */
static void targets_collect(struct lifecycle *lc, const struct sandbox_record *probe, struct targets *t)
{
	char **gateways = NULL;
	_cleanup_error_ struct cp_error *e = NULL;
	const char *container = probe->container_id ? probe->container_id : probe->container_name;
	struct docker_engine *engine = NULL; /* the probe's node's */
	if (lifecycle_sandbox_engine(lc, probe, &engine, &e) == 0 &&
	    docker_container_gateways(engine, container, &gateways, &e) == 0)
		for (size_t i = 0; gateways[i]; i++)
			targets_add(t, gateways[i]);
	docker_strv_free(gateways);
	t->gateways = t->n;
	struct ifaddrs *ifs = NULL;
	if (getifaddrs(&ifs) < 0)
		return;
	for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
		char buf[INET_ADDRSTRLEN];
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		    inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, buf, sizeof(buf)))
			targets_add(t, buf);
	}
	freeifaddrs(ifs);
}

/* A listener on 0.0.0.0, port chosen by the kernel, non-blocking. */
static int listener_open(int *ret_port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
	socklen_t len = sizeof(a);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 64) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*ret_port = ntohs(a.sin_port);
	return fd;
}

/* Connections that reached the listener, their peers listed in buf. */
static size_t listener_drain(int fd, char *buf, size_t size)
{
	size_t n = 0, o = 0;
	buf[0] = '\0';
	for (;;) {
		struct sockaddr_in peer;
		socklen_t len = sizeof(peer);
		int c = accept4(fd, (struct sockaddr *)&peer, &len, SOCK_CLOEXEC);
		if (c < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		char addr[INET_ADDRSTRLEN] = "?";
		inet_ntop(AF_INET, &peer.sin_addr, addr, sizeof(addr));
		if (o < size)
			o += (size_t)snprintf(buf + o, size - o, "%s%s", n ? ", " : "", addr);
		n++;
		close(c);
	}
	return n;
}

/* One bash command: every target at once, each bounded by timeout(1);
 * "open ADDR" for each that connected. */
static char *attack_command(const struct targets *t, int port)
{
	char *cmd = NULL;
	size_t len = 0;
	FILE *m = xopen_memstream(&cmd, &len);
	for (size_t i = 0; i < t->n; i++)
		fprintf(m, "(timeout %d bash -c 'exec 3<>/dev/tcp/%s/%d' 2>/dev/null && echo 'open %s') &\n",
		        HOST_EDGE_CONNECT_S, t->addr[i], port, t->addr[i]);
	fprintf(m, "wait\necho @@done\n");
	if (fclose(m) != 0) {
		free(cmd);
		return NULL;
	}
	return cmd;
}

/* "a, b, c" of the first n addresses from `from`, into buf. */
static void list_addrs(const struct targets *t, size_t from, size_t to, char *buf, size_t size)
{
	size_t o = 0;
	buf[0] = '\0';
	for (size_t i = from; i < to && o < size; i++)
		o += (size_t)snprintf(buf + o, size - o, "%s%s", i > from ? ", " : "", t->addr[i]);
}

/* What the table's state adds to the verdict: 1 when it fails the check. */
static int judge_table(const struct config *cfg, struct lifecycle *lc, char *buf, size_t size)
{
	struct ops_firewall_report fr;
	ops_firewall_report(cfg, lifecycle_engine(lc), &fr);
	if (!fr.enabled) {
		snprintf(buf, size, "CHAT2SBX_FIREWALL=0: no chat2sbx table required, this host's own firewall held");
		return 0;
	}
	if (!fr.known) {
		snprintf(buf, size, "table %s %s not checked (%s)", FIREWALL_FAMILY, FIREWALL_TABLE, fr.detail);
		return 0;
	}
	if (!FIREWALL_PROTECTS(fr.state)) {
		snprintf(buf, size, "the firewall table is not in place: %s", fr.detail);
		return 1;
	}
	snprintf(buf, size, "table %s %s in place", FIREWALL_FAMILY, FIREWALL_TABLE);
	return 0;
}

void ops_host_edge_attack(struct lifecycle *lc, const struct sandbox_record *probe, enum ops_check_result *ret,
                          char *detail, size_t size)
{
	const struct config *cfg = lifecycle_config(lc);
	char table[1200];
	int table_failed = judge_table(cfg, lc, table, sizeof(table));
	if (!probe->network) {
		*ret = table_failed ? OPS_CHECK_FAILED : OPS_CHECK_PASSED;
		snprintf(detail, size, "the probe has no network (runtime %s), so it cannot reach the host; %s",
		         probe->runtime && *probe->runtime ? probe->runtime : "default", table);
		return;
	}
	struct targets t = {0};
	targets_collect(lc, probe, &t);
	int port = 0;
	_cleanup_close_ int fd = listener_open(&port);
	_cleanup_free_ char *cmd = fd >= 0 ? attack_command(&t, port) : NULL;
	_cleanup_free_ char *out = NULL;
	_cleanup_error_ struct cp_error *e = NULL;
	if (fd < 0 || !cmd) {
		*ret = OPS_CHECK_FAILED;
		snprintf(detail, size, "could not open a listener on 0.0.0.0 of the host to attack: %s",
		         strerror(errno));
		return;
	}
	if (t.gateways == 0 || ops_probe_run(lc, probe->id, cmd, &out, &e) < 0) {
		*ret = OPS_CHECK_FAILED;
		snprintf(detail, size, "the attack could not run: %s",
		         e ? e->message : "the probe's network gateway is unknown");
		return;
	}
	char peers[512], gws[256], others[1024], opened[512] = "";
	size_t reached = listener_drain(fd, peers, sizeof(peers)), o = 0;
	for (const char *p = strstr(out, "open "); p && o < sizeof(opened); p = strstr(p + 5, "open "))
		o += (size_t)snprintf(opened + o, sizeof(opened) - o, "%s%.*s", o ? ", " : "",
		                      (int)strcspn(p + 5, "\n"), p + 5);
	list_addrs(&t, 0, t.gateways, gws, sizeof(gws));
	list_addrs(&t, t.gateways, t.n, others, sizeof(others));
	if (reached || opened[0]) {
		*ret = OPS_CHECK_FAILED;
		snprintf(detail, size,
		         "the probe connected to the host's listener on 0.0.0.0:%d through %s (%zu connection%s "
		         "accepted, from %s); %s",
		         port, opened[0] ? opened : "?", reached, reached == 1 ? "" : "s", reached ? peers : "-",
		         table);
	} else {
		*ret = table_failed ? OPS_CHECK_FAILED : OPS_CHECK_PASSED;
		snprintf(
		    detail, size,
		    "no connection reached a listener on 0.0.0.0:%d of the host through the gateway %s or the host "
		    "addresses %s; %s",
		    port, gws, t.n > t.gateways ? others : "(none other)", table);
	}
}
