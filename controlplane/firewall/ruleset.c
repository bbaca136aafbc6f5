/* ruleset.c: the text of table inet chat2sbx and the judgement of a listing
 * of it. Pure: no netlink, no engine, no files (nft.c applies the text).
 *
 * Why these rules (measured on Debian 12, kernel 6.x, Docker 20.10 with
 * iptables-nft, issue 12): the hook is prerouting at priority dstnat - 10,
 * after conntrack (-200) and before the engine's DNAT (dstnat, -100), so the
 * destination a sandbox wrote is still visible: `fib daddr type local` then
 * covers the bridge gateway, every other host address and ports published
 * on any of them (DNAT would otherwise turn those into forwarded traffic).
 * With br_netfilter loaded, bridged traffic passes this hook too, with the
 * bridge as iifname; it is never addressed to the host, so traffic between
 * the members of one bridge (the expose networks' forwarder and sandbox) is
 * untouched. Replies to what the host opened (docker-proxy and tests
 * connecting into containers) are accepted as established first. The
 * engine's embedded DNS answers inside each container's namespace
 * (127.0.0.11) and never crosses a bridge. */
#include "firewall.h"

#include <arpa/inet.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/cleanup.h"
#include "../base/xalloc.h"

void firewall_ruleset_clear(struct firewall_ruleset *rs)
{
	if (!rs)
		return;
	free(rs->text);
	free(rs->fingerprint);
	for (size_t i = 0; rs->legacy && rs->legacy[i]; i++)
		free(rs->legacy[i]);
	free(rs->legacy);
	*rs = (struct firewall_ruleset){0};
}

int firewall_ifname_valid(const char *name)
{
	size_t n = name ? strlen(name) : 0;
	if (n == 0 || n > FIREWALL_IFNAME_MAX)
		return 0;
	return strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == n;
}

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The legacy names, checked, without those the prefix covers, sorted and
 * unique, into a NULL-terminated vector *ret (caller frees). */
static int legacy_collect(const struct firewall_spec *spec, char ***ret, size_t *ret_n, struct cp_error **err)
{
	size_t n = 0;
	while (spec->legacy_bridges && spec->legacy_bridges[n])
		n++;
	char **v = xcalloc(n + 1, sizeof(*v));
	size_t k = 0, plen = strlen(spec->bridge_prefix);
	for (size_t i = 0; i < n; i++) {
		const char *name = spec->legacy_bridges[i];
		if (!firewall_ifname_valid(name)) {
			for (size_t j = 0; j < k; j++)
				free(v[j]);
			free(v);
			return cp_error_set(
			    err, CP_ERR_INVALID_ARGUMENT,
			    "build the firewall ruleset: '%s' is not an interface name (1-%d characters "
			    "of letters, digits, '_', '.', '-')",
			    name, FIREWALL_IFNAME_MAX);
		}
		if (strncmp(name, spec->bridge_prefix, plen) == 0)
			continue; /* the prefix rule covers it */
		v[k] = xstrdup(name);
		k++;
	}
	qsort(v, k, sizeof(*v), compare_names);
	size_t u = 0;
	for (size_t i = 0; i < k; i++) {
		if (u > 0 && !strcmp(v[u - 1], v[i]))
			free(v[i]);
		else
			v[u++] = v[i];
	}
	v[u] = NULL;
	*ret = v;
	*ret_n = u;
	return 0;
}

/* One rule per line: [0] host_edge, [1] from_sandbox. The last rule of
 * from_sandbox carries the fingerprint (fp, "" while hashing). Comments
 * stay under nft's 128-byte limit. */
/* The node addresses of one family (AF_INET: those without ':') as an nft
 * anonymous set's elements into m; returns how many. */
static size_t print_addresses(FILE *m, const char *const *addrs, int v6)
{
	size_t n = 0;
	for (size_t i = 0; addrs && addrs[i]; i++)
		if ((strchr(addrs[i], ':') != NULL) == v6)
			fprintf(m, "%s%s", n++ ? ", " : "", addrs[i]);
	return n;
}

/* The host_edge rules for the nodes' addresses of one family. Never on lo:
 * a node whose address is this host's own (127.0.0.1, or its LAN address:
 * another engine on this machine) must not cut this host's own loopback
 * traffic, which passes prerouting with that source. */
static size_t render_nodes(FILE *m, const char *const *addrs, int v6)
{
	char *list = NULL;
	size_t len = 0;
	FILE *l = xopen_memstream(&list, &len);
	size_t n = print_addresses(l, addrs, v6);
	if (fclose(l) != 0)
		cp_oom();
	if (n)
		fprintf(m,
		        "\t\tiifname != \"lo\" %s saddr { %s } ct state new fib daddr type local drop comment "
		        "\"sandboxes on other nodes reach this host as their node's address\"\n",
		        v6 ? "ip6" : "ip", list);
	free(list);
	return n ? 1 : 0;
}

static char *render(const char *prefix, char *const *legacy, const char *const *nodes, const char *fp, size_t *ret_edge,
                    size_t *ret_sandbox)
{
	char *text = NULL;
	size_t len = 0;
	FILE *m = xopen_memstream(&text, &len);
	fprintf(
	    m,
	    "# chat2sbx host edge (docs/security.md, \"The host edge\"): written by chat2sbx, replaced whole in one\n"
	    "# transaction; 'chat2sbx setup --uninstall-firewall' removes it.\n"
	    "table %s %s\n"
	    "delete table %s %s\n"
	    "table %s %s {\n",
	    FIREWALL_FAMILY, FIREWALL_TABLE, FIREWALL_FAMILY, FIREWALL_TABLE, FIREWALL_FAMILY, FIREWALL_TABLE);
	fprintf(m,
	        "\tset legacy_bridges {\n\t\ttype ifname\n\t\tcomment \"bridges of chat2sbx networks made "
	        "before their names began with %s\"\n",
	        prefix);
	if (legacy[0]) {
		fprintf(m, "\t\telements = { ");
		for (size_t i = 0; legacy[i]; i++)
			fprintf(m, "%s\"%s\"", i ? ", " : "", legacy[i]);
		fprintf(m, " }\n");
	}
	fprintf(m, "\t}\n\n");
	/* The loopback rules spare established traffic: only a connection the
	 * host itself opened from 127.0.0.0/8 through another interface (a
	 * route_localnet set-up) has such replies. */
	fprintf(m,
	        "\tchain host_edge {\n"
	        "\t\ttype filter hook prerouting priority dstnat - 10; policy accept;\n"
	        "\t\tiifname != \"lo\" ip daddr 127.0.0.0/8 ct state != { established, related } drop comment "
	        "\"loopback addresses arrive only on lo\"\n"
	        "\t\tiifname != \"lo\" ip6 daddr ::1 ct state != { established, related } drop comment "
	        "\"loopback addresses arrive only on lo\"\n"
	        "\t\tiifname \"%s*\" jump from_sandbox comment \"chat2sbx sandbox bridges\"\n"
	        "\t\tiifname @legacy_bridges jump from_sandbox comment \"chat2sbx sandbox bridges (older "
	        "networks)\"\n",
	        prefix);
	*ret_edge = 4 + render_nodes(m, nodes, 0) + render_nodes(m, nodes, 1);
	fprintf(m, "\t}\n\n");
	/* Neighbour discovery is no service; without it the host could not
	 * reach an IPv6 address on a bridge. (The engine turns IPv6 off in
	 * containers on networks without it, as chat2sbx's are: these IPv6
	 * rules are depth, not the only guard.) */
	fprintf(m,
	        "\tchain from_sandbox {\n"
	        "\t\tct state { established, related } accept comment \"replies to what the host opened\"\n"
	        "\t\ticmpv6 type { nd-neighbor-solicit, nd-neighbor-advert } accept comment \"neighbour "
	        "discovery\"\n"
	        "\t\tfib daddr type { local, broadcast, multicast } drop comment \"%s\"\n"
	        "\t}\n"
	        "}\n",
	        fp);
	*ret_sandbox = 3;
	if (fclose(m) != 0)
		cp_oom(); /* a memory stream fails only when it cannot allocate */
	return text;
}

/* FNV-1a, 64 bits: a change detector for the text, not a secret. */
static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h;
}

int firewall_ruleset_build(const struct firewall_spec *spec, struct firewall_ruleset *ret, struct cp_error **err)
{
	const char *prefix = spec ? spec->bridge_prefix : NULL;
	if (!prefix || strlen(prefix) >= FIREWALL_IFNAME_MAX || !firewall_ifname_valid(prefix))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "build the firewall ruleset: the bridge prefix '%s' is not 1-%d characters of "
		                    "letters, digits, '_', '.', '-'",
		                    prefix ? prefix : "", FIREWALL_IFNAME_MAX - 1);
	for (size_t i = 0; spec->node_addresses && spec->node_addresses[i]; i++) {
		const char *a = spec->node_addresses[i];
		unsigned char buf[16];
		if (inet_pton(strchr(a, ':') ? AF_INET6 : AF_INET, a, buf) != 1)
			return cp_error_set(
			    err, CP_ERR_INVALID_ARGUMENT,
			    "build the firewall ruleset: the node address '%.64s' is not an IPv4 or IPv6 "
			    "address",
			    a);
	}
	struct firewall_ruleset rs = {0};
	if (legacy_collect(spec, &rs.legacy, &rs.n_legacy, err) < 0)
		return -1;
	for (size_t i = 0; spec->node_addresses && spec->node_addresses[i]; i++)
		rs.n_nodes++;
	/* The fingerprint leaves out the legacy names (compared one by one in
	 * firewall_listing_judge): a table that still names a bridge that is
	 * gone protects as well as a current one. */
	char *none[] = {NULL};
	/* The node addresses are in it: another set of nodes is another table. */
	_cleanup_free_ char *unsigned_text =
	    render(prefix, none, spec->node_addresses, "", &rs.rules_edge, &rs.rules_sandbox);
	rs.fingerprint = xasprintf("chat2sbx host edge v%d %016llx", FIREWALL_RULESET_VERSION,
	                           (unsigned long long)fnv1a(unsigned_text));
	rs.text = render(prefix, rs.legacy, spec->node_addresses, rs.fingerprint, &rs.rules_edge, &rs.rules_sandbox);
	*ret = rs;
	return 0;
}

const char *firewall_state_name(enum firewall_state s)
{
	switch (s) {
	case FIREWALL_INSTALLED: return "installed";
	case FIREWALL_MISSING: return "missing";
	case FIREWALL_DIFFERENT: return "different";
	case FIREWALL_COVERS: return "installed";
	}
	return "different";
}

/* ---- judging a listing ---- */

static const char *get_str(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;
	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
	           ? json_object_get_string(v)
	           : NULL;
}

static int is_ours(struct json_object *o)
{
	const char *family = get_str(o, "family"), *table = get_str(o, "table");
	return family && table && !strcmp(family, FIREWALL_FAMILY) && !strcmp(table, FIREWALL_TABLE);
}

/* What one pass over the listing saw. */
struct seen {
	int table, edge_hooked, sandbox_chain, set;
	size_t rules_edge, rules_sandbox;
	const char *last_sandbox_comment; /* borrowed from the parsed listing */
	size_t n_elems, elems_match;
};

static void see_set(struct json_object *set, const struct firewall_ruleset *rs, struct seen *s)
{
	const char *name = get_str(set, "name");
	if (!name || strcmp(name, "legacy_bridges") || !is_ours(set))
		return;
	s->set = 1;
	struct json_object *elem = NULL;
	if (!json_object_object_get_ex(set, "elem", &elem) || !json_object_is_type(elem, json_type_array))
		return;
	s->n_elems = json_object_array_length(elem);
	for (size_t i = 0; i < s->n_elems; i++) {
		const char *e = json_object_get_string(json_object_array_get_idx(elem, i));
		for (size_t j = 0; e && j < rs->n_legacy; j++)
			if (!strcmp(e, rs->legacy[j])) {
				s->elems_match++;
				break;
			}
	}
}

static void see_chain(struct json_object *chain, struct seen *s)
{
	const char *name = get_str(chain, "name");
	if (!name || !is_ours(chain))
		return;
	if (!strcmp(name, "from_sandbox")) {
		s->sandbox_chain = 1;
		return;
	}
	struct json_object *prio = NULL;
	const char *type = get_str(chain, "type"), *hook = get_str(chain, "hook"), *policy = get_str(chain, "policy");
	if (!strcmp(name, "host_edge") && type && !strcmp(type, "filter") && hook && !strcmp(hook, "prerouting") &&
	    policy && !strcmp(policy, "accept") && json_object_object_get_ex(chain, "prio", &prio) &&
	    json_object_get_int(prio) == -110)
		s->edge_hooked = 1;
}

static void see_rule(struct json_object *rule, struct seen *s)
{
	const char *chain = get_str(rule, "chain");
	if (!chain || !is_ours(rule))
		return;
	if (!strcmp(chain, "host_edge")) {
		s->rules_edge++;
	} else if (!strcmp(chain, "from_sandbox")) {
		s->rules_sandbox++;
		s->last_sandbox_comment = get_str(rule, "comment");
	}
}

int firewall_listing_judge(const char *json, const struct firewall_ruleset *rs, enum firewall_state *ret, char *detail,
                           size_t size, struct cp_error **err)
{
	_cleanup_json_ struct json_object *root = json ? json_tokener_parse(json) : NULL;
	struct json_object *items = NULL;
	if (!root || !json_object_object_get_ex(root, "nftables", &items) ||
	    !json_object_is_type(items, json_type_array))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "read the firewall table: the listing is not libnftables JSON (no \"nftables\" "
		                    "array)");
	struct seen s = {0};
	for (size_t i = 0; i < json_object_array_length(items); i++) {
		struct json_object *item = json_object_array_get_idx(items, i), *o = NULL;
		if (json_object_object_get_ex(item, "table", &o)) {
			const char *family = get_str(o, "family"), *name = get_str(o, "name");
			s.table |= family && name && !strcmp(family, FIREWALL_FAMILY) && !strcmp(name, FIREWALL_TABLE);
		} else if (json_object_object_get_ex(item, "set", &o)) {
			see_set(o, rs, &s);
		} else if (json_object_object_get_ex(item, "chain", &o)) {
			see_chain(o, &s);
		} else if (json_object_object_get_ex(item, "rule", &o)) {
			see_rule(o, &s);
		}
	}
	snprintf(detail, size, "table %s %s matches this chat2sbx (%s)", FIREWALL_FAMILY, FIREWALL_TABLE,
	         rs->fingerprint);
	*ret = FIREWALL_DIFFERENT;
	if (!s.table)
		snprintf(detail, size, "the listing has no table %s %s", FIREWALL_FAMILY, FIREWALL_TABLE);
	else if (!s.edge_hooked)
		snprintf(detail, size, "chain host_edge is missing or not hooked at prerouting, priority dstnat - 10");
	else if (!s.sandbox_chain)
		snprintf(detail, size, "chain from_sandbox is missing");
	else if (s.rules_edge != rs->rules_edge || s.rules_sandbox != rs->rules_sandbox)
		snprintf(detail, size, "the chains hold %zu and %zu rules, this chat2sbx writes %zu and %zu",
		         s.rules_edge, s.rules_sandbox, rs->rules_edge, rs->rules_sandbox);
	else if (!s.last_sandbox_comment || strcmp(s.last_sandbox_comment, rs->fingerprint))
		snprintf(detail, size,
		         "written by another version or for other bridges or nodes ('%s', this one writes '%s')",
		         s.last_sandbox_comment ? s.last_sandbox_comment : "no fingerprint", rs->fingerprint);
	else if (!s.set || s.elems_match != rs->n_legacy)
		snprintf(detail, size, "set legacy_bridges lacks %zu of the %zu older bridges",
		         rs->n_legacy - s.elems_match, rs->n_legacy);
	else if (s.n_elems > s.elems_match)
		*ret = FIREWALL_COVERS;
	else
		*ret = FIREWALL_INSTALLED;
	if (*ret == FIREWALL_COVERS)
		snprintf(detail, size, "in place; set legacy_bridges also names %zu bridges no network has any more",
		         s.n_elems - s.elems_match);
	return 0;
}
