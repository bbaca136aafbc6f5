/* firewall.c: the host-edge firewall as serve, setup, status and doctor
 * use it (issue 12, item 4): which bridges it names (the fixed prefix and
 * the engine's names of older networks, guard/bridges.c), when it is
 * installed (serve as root at start and at every maintenance pass; setup
 * --install-firewall), how it is removed and what status says about it.
 * The rules and libnftables live in firewall/; this file only decides. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../base/cleanup.h"
#include "../base/log.h"
#include "../base/xalloc.h"
#include "../lifecycle/lifecycle.h"
#include "ops.h"

/* What a person does when serve cannot install the firewall itself. */
#define FIREWALL_HINT                                                                                                  \
	"run 'sudo chat2sbx setup --install-firewall' (again after every reboot, unless the package's "                \
	"chat2sbx-firewall unit does it at boot), or set CHAT2SBX_FIREWALL=0 "                                         \
	"if this host's own firewall keeps the sandbox bridges (" POLICY_BRIDGE_PREFIX "*) off its services"

/* Adds the addresses of host (an address, or a name resolved now) to *v
 * (*n entries, NULL-terminated), skipping ones it holds. */
static void add_host_addresses(const char *host, char ***v, size_t *n)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
	int rc = getaddrinfo(host, NULL, &hints, &res);
	if (rc != 0) {
		log_warn("firewall", "node host '%s' does not resolve (%s): sandboxes on it are not kept off this host",
		         host, gai_strerror(rc));
		return;
	}
	for (struct addrinfo *a = res; a; a = a->ai_next) {
		char text[INET6_ADDRSTRLEN];
		const void *bytes = a->ai_family == AF_INET6
		                        ? (const void *)&((struct sockaddr_in6 *)a->ai_addr)->sin6_addr
		                        : (const void *)&((struct sockaddr_in *)a->ai_addr)->sin_addr;
		if ((a->ai_family != AF_INET && a->ai_family != AF_INET6) ||
		    !inet_ntop(a->ai_family, bytes, text, sizeof(text)))
			continue;
		int seen = 0;
		for (size_t i = 0; i < *n && !seen; i++)
			seen = !strcmp((*v)[i], text);
		if (seen)
			continue;
		*v = xrealloc(*v, (*n + 2) * sizeof(**v));
		(*v)[(*n)++] = xstrdup(text);
		(*v)[*n] = NULL;
	}
	freeaddrinfo(res);
}

/* The addresses of every node's engine host (issue 28), from the registry
 * when it exists; NULL-terminated into *ret (caller frees with
 * docker_strv_free), NULL for none. */
static int node_addresses(const struct config *cfg, char ***ret, struct cp_error **err)
{
	*ret = NULL;
	if (!cfg || !cfg->database_path)
		return 0;
	char **endpoints = NULL;
	if (store_node_endpoints_read(cfg->database_path, &endpoints, err) < 0)
		return cp_error_prefix(err, "read the nodes for the firewall");
	size_t n_addrs = 0;
	for (size_t i = 0; endpoints && endpoints[i]; i++) {
		_cleanup_free_ char *host = NULL;
		int port = 0;
		_cleanup_error_ struct cp_error *e = NULL;
		if (docker_endpoint_parse(endpoints[i], 1, &host, &port, &e) == 0)
			add_host_addresses(host, ret, &n_addrs);
		free(endpoints[i]);
	}
	free(endpoints);
	return 0;
}

int ops_firewall_build(const struct config *cfg, struct docker_engine *engine, struct firewall_ruleset *ret,
                       struct cp_error **err)
{
	char **legacy = NULL, **nodes = NULL;
	if (engine && guard_legacy_bridges(engine, &legacy, err) < 0)
		return cp_error_prefix(err, "find the bridges of chat2sbx's networks");
	if (node_addresses(cfg, &nodes, err) < 0) {
		docker_strv_free(legacy);
		return -1;
	}
	struct firewall_spec spec = {.bridge_prefix = POLICY_BRIDGE_PREFIX,
	                             .legacy_bridges = (const char *const *)legacy,
	                             .node_addresses = (const char *const *)nodes};
	int r = firewall_ruleset_build(&spec, ret, err);
	docker_strv_free(legacy);
	docker_strv_free(nodes);
	return r;
}

void ops_firewall_describe(const struct firewall_ruleset *rs, const char *state, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s: table %s %s drops what the bridges %s*", state, FIREWALL_FAMILY,
	                 FIREWALL_TABLE, POLICY_BRIDGE_PREFIX);
	for (size_t i = 0; i < rs->n_legacy && n > 0 && (size_t)n < size; i++)
		n += snprintf(buf + n, size - (size_t)n, "%s%s", i ? ", " : " and ", rs->legacy[i]);
	if (n > 0 && (size_t)n < size)
		snprintf(buf + n, size - (size_t)n, " send to this host's own addresses");
}

int ops_firewall_install(const struct config *cfg, struct docker_engine *engine, int *ret_changed,
                         enum firewall_state *ret_before, char *detail, size_t size, struct cp_error **err)
{
	struct firewall_ruleset rs = {0};
	enum firewall_state st = FIREWALL_MISSING;
	char was[512] = "";
	int r = -1;
	*ret_changed = 0;
	if (ops_firewall_build(cfg, engine, &rs, err) < 0 || firewall_state_read(&rs, &st, was, sizeof(was), err) < 0)
		goto out;
	enum firewall_state before = st;
	if (ret_before)
		*ret_before = before;
	if (st != FIREWALL_INSTALLED) {
		if (firewall_ruleset_apply(&rs, err) < 0)
			goto out;
		/* Read back: the kernel holds what was meant, or this fails. */
		char now[512];
		if (firewall_state_read(&rs, &st, now, sizeof(now), err) < 0)
			goto out;
		if (st != FIREWALL_INSTALLED) {
			cp_error_set(err, CP_ERR_INTERNAL, "the firewall table was written but reads back %s: %s",
			             firewall_state_name(st), now);
			goto out;
		}
		*ret_changed = 1;
	}
	/* A serve that is not root trusts this note (firewall_note.c). */
	if (geteuid() == 0) {
		_cleanup_error_ struct cp_error *e = NULL;
		if (ops_firewall_note_write(OPS_FIREWALL_NOTE, rs.fingerprint, &e) < 0)
			log_warn("firewall", "%s; a serve that is not root cannot know the firewall is in place",
			         e->message);
	}
	ops_firewall_describe(&rs, *ret_changed ? "installed" : "in place", detail, size);
	if (before == FIREWALL_DIFFERENT && strlen(detail) + strlen(was) + 12 < size)
		snprintf(detail + strlen(detail), size - strlen(detail), " (it was %s)", was);
	r = 0;
out:
	firewall_ruleset_clear(&rs);
	return r;
}

int ops_firewall_uninstall(int *ret_removed, struct cp_error **err)
{
	if (firewall_remove(ret_removed, err) < 0)
		return -1;
	if (geteuid() == 0 && unlink(OPS_FIREWALL_NOTE) < 0 && errno != ENOENT)
		log_warn("firewall", "remove the firewall note %s: %s", OPS_FIREWALL_NOTE, strerror(errno));
	return 0;
}

void ops_firewall_report(const struct config *cfg, struct docker_engine *engine, struct ops_firewall_report *ret)
{
	*ret = (struct ops_firewall_report){.enabled = cfg->firewall, .permitted = firewall_permitted()};
	struct firewall_ruleset rs = {0};
	_cleanup_error_ struct cp_error *e = NULL;
	char seen[512] = "";
	if (!ret->permitted) {
		char why[700];
		if (ops_firewall_unprivileged_check(cfg, engine, why, sizeof(why)) == 1)
			snprintf(ret->detail, sizeof(ret->detail), "installed by root: %s", why);
		else
			snprintf(
			    ret->detail, sizeof(ret->detail),
			    "unknown: reading nftables needs root and %s (run 'sudo chat2sbx status', or 'chat2sbx "
			    "doctor' to attack the edge)",
			    why);
	} else if (ops_firewall_build(cfg, engine, &rs, &e) < 0 ||
	           firewall_state_read(&rs, &ret->state, seen, sizeof(seen), &e) < 0) {
		snprintf(ret->detail, sizeof(ret->detail), "unknown: %s", e->message);
	} else {
		ret->known = 1;
		if (FIREWALL_PROTECTS(ret->state))
			ops_firewall_describe(&rs, "installed", ret->detail, sizeof(ret->detail));
		else if (!cfg->firewall)
			snprintf(ret->detail, sizeof(ret->detail),
			         "%s (CHAT2SBX_FIREWALL=0: this host's own firewall must keep the bridges %s* off its "
			         "services)",
			         ret->state == FIREWALL_MISSING ? "not installed" : seen, POLICY_BRIDGE_PREFIX);
		else
			snprintf(ret->detail, sizeof(ret->detail),
			         "%s: %s; sandboxes may reach this host's services. A chat2sbx serve running as root "
			         "puts it in place within a minute; otherwise %s",
			         firewall_state_name(ret->state), seen, FIREWALL_HINT);
	}
	firewall_ruleset_clear(&rs);
}

int ops_firewall_unprivileged_check(const struct config *cfg, struct docker_engine *engine, char *detail, size_t size)
{
	struct firewall_ruleset rs = {0};
	_cleanup_error_ struct cp_error *e = NULL;
	enum firewall_state st = FIREWALL_MISSING;
	char seen[512] = "";
	int r = 0;
	if (ops_firewall_build(cfg, engine, &rs, &e) < 0) {
		snprintf(detail, size, "cannot build the ruleset to compare: %s", e->message);
	} else if (firewall_state_read(&rs, &st, seen, sizeof(seen), &e) == 0) {
		/* This process may read nftables after all (a capability
		 * given to the service): the kernel's word is the best. */
		r = FIREWALL_PROTECTS(st);
		if (r)
			ops_firewall_describe(&rs, "installed", detail, size);
		else
			snprintf(detail, size, "table inet chat2sbx is %s: %s", firewall_state_name(st), seen);
	} else {
		r = ops_firewall_note_check(OPS_FIREWALL_NOTE, rs.fingerprint, 0, detail, size);
	}
	firewall_ruleset_clear(&rs);
	return r;
}

int ops_firewall_serve_start(const struct config *cfg, struct docker_engine *engine, struct cp_error **err)
{
	if (!cfg->firewall) {
		log_warn("firewall",
		         "CHAT2SBX_FIREWALL=0: chat2sbx does not keep sandboxes off this host's own services; this "
		         "host's firewall must drop what the bridges %s* send to its addresses ('chat2sbx doctor' "
		         "attacks it)",
		         POLICY_BRIDGE_PREFIX);
		return 0;
	}
	if (!firewall_permitted()) {
		char why[1024];
		if (ops_firewall_unprivileged_check(cfg, engine, why, sizeof(why)) == 1) {
			log_info("firewall",
			         "serve is not root; the firewall that keeps sandboxes off this host's services "
			         "is in place: %s",
			         why);
			return 0;
		}
		return cp_error_set(err, CP_ERR_DENIED,
		                    "serve is not root and cannot tell that the firewall keeping sandboxes off this "
		                    "host's services is in place (%s); %s",
		                    why, FIREWALL_HINT);
	}
	int changed = 0;
	char detail[1024];
	if (ops_firewall_install(cfg, engine, &changed, NULL, detail, sizeof(detail), err) < 0)
		return cp_error_prefix(err,
		                       "install the firewall that keeps sandboxes off this host's services (fix the "
		                       "cause, or set CHAT2SBX_FIREWALL=0 if this host's own firewall does it)");
	log_info("firewall", "%s", detail);
	return 0;
}

void ops_firewall_maintain(const struct config *cfg, struct docker_engine *engine)
{
	if (!cfg->firewall || !firewall_permitted())
		return;
	int changed = 0;
	enum firewall_state before = FIREWALL_MISSING;
	char detail[1024];
	_cleanup_error_ struct cp_error *e = NULL;
	if (ops_firewall_install(cfg, engine, &changed, &before, detail, sizeof(detail), &e) < 0)
		cp_error_log_free(LOG_LEVEL_WARN, "firewall", &e, "keep the firewall in place");
	else if (changed && before == FIREWALL_COVERS)
		log_info("firewall", "a network of an older chat2sbx is gone; %s", detail);
	else if (changed)
		log_warn("firewall", "the firewall was not in place (removed, flushed or out of date); %s", detail);
}
