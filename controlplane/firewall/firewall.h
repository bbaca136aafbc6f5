/* firewall.h: the host edge (issue 12, item 4; DESIGN.md "Runtimes and the
 * host edge"): one nftables table, `inet chat2sbx`, that drops what the
 * sandbox bridges send to any address of the host itself (the bridge
 * gateways, every host address, ports the engine DNAT-publishes on them) and
 * packets for loopback addresses that arrive on any other interface.
 * ruleset.c builds the table's text and judges a listing of it (pure);
 * nft.c is the only libnftables code: it applies the text as one atomic
 * transaction, reads back whether it is in place and removes it. Depends on
 * base/ only; knows nothing of the engine (ops/firewall.c supplies the
 * bridge names). */
#ifndef CP_FIREWALL_H
#define CP_FIREWALL_H

#include <stddef.h>

#include "../base/error.h"

/* The table, as nft names it. Nothing else of the machine's ruleset is
 * read or touched. */
#define FIREWALL_FAMILY "inet"
#define FIREWALL_TABLE "chat2sbx"
/* Longest interface name the kernel takes (IFNAMSIZ - 1). */
#define FIREWALL_IFNAME_MAX 15
/* Version of the rules' shape, part of the fingerprint: a newer chat2sbx
 * with other rules replaces an older table instead of taking it as current. */
#define FIREWALL_RULESET_VERSION 1

/* Which interfaces are sandbox bridges. */
struct firewall_spec {
	/* Every interface whose name starts with this (1-14 characters of
	 * [A-Za-z0-9_.-]); the engine names chat2sbx's bridges so
	 * (com.docker.network.bridge.name, lifecycle.h). */
	const char *bridge_prefix;
	/* And these exact names (NULL-terminated, may be NULL; each 1-15
	 * characters of the same set): bridges of networks an older chat2sbx
	 * made before it named them. Names the prefix covers are left out. */
	const char *const *legacy_bridges;
	/* Addresses of other machines whose engines are nodes (issue 28;
	 * NULL-terminated, may be NULL; each an IPv4 or IPv6 literal): their
	 * sandboxes reach this host as the node's own address, so new
	 * connections from them to this host's addresses are dropped. */
	const char *const *node_addresses;
};

/* A built ruleset. */
struct firewall_ruleset {
	char *text;        /* owned: the nft script; replaces the whole table in one transaction */
	char *fingerprint; /* owned: "chat2sbx host edge v1 <16 hex>", a hash of the text without it */
	char **legacy;     /* owned, NULL-terminated: the legacy names in the set, sorted, unique */
	size_t n_legacy;
	size_t n_nodes;       /* node addresses named in the rules */
	size_t rules_edge;    /* rules in chain host_edge */
	size_t rules_sandbox; /* rules in chain from_sandbox */
};
void firewall_ruleset_clear(struct firewall_ruleset *rs);

/* 1 when name is a usable interface name: 1 to FIREWALL_IFNAME_MAX
 * characters of [A-Za-z0-9_.-] (no quote, space or wildcard can reach the
 * nft text). Pure. */
int firewall_ifname_valid(const char *name);

/* Builds the table for spec into *ret (caller clears). The same spec gives
 * the same text, whatever the order or repetition of the legacy names, so
 * applying it twice changes nothing. INVALID_ARGUMENT names a bad prefix
 * or interface name. Pure (allocates only). */
int firewall_ruleset_build(const struct firewall_spec *spec, struct firewall_ruleset *ret, struct cp_error **err);

/* What the machine holds, compared with a built ruleset. */
enum firewall_state {
	FIREWALL_INSTALLED, /* the table is there and is exactly this ruleset */
	FIREWALL_MISSING,   /* no table inet chat2sbx */
	FIREWALL_DIFFERENT, /* a table of that name, but not this ruleset (older, changed, flushed) */
	FIREWALL_COVERS,    /* this ruleset, whose set also names bridges no network has any more: it
	                     * protects as INSTALLED does; installing again tidies it */
};
/* 1 for INSTALLED and COVERS: every sandbox bridge is kept off the host. */
#define FIREWALL_PROTECTS(s) ((s) == FIREWALL_INSTALLED || (s) == FIREWALL_COVERS)
/* "installed" (also for COVERS), "missing", "different". */
const char *firewall_state_name(enum firewall_state s);

/* Judges the JSON listing of the table (libnftables' `list table inet
 * chat2sbx` in JSON, schema version 1: libnftables-json(5)) against rs:
 * the two chains with their hook and priority, the number of rules in
 * each, the fingerprint on the last rule (a hash of the text without the
 * legacy names), the legacy set's elements. *ret gets INSTALLED, COVERS
 * (every legacy name there, and more) or DIFFERENT, and detail (always
 * terminated) what differs. INVALID_ARGUMENT when json is not such a listing. Pure. */
int firewall_listing_judge(const char *json, const struct firewall_ruleset *rs, enum firewall_state *ret, char *detail,
                           size_t size, struct cp_error **err);

/* ---- the kernel's ruleset (firewall/nft.c) ---- */

/* 1 when this process may read and change the ruleset of its network
 * namespace (CAP_NET_ADMIN in its effective set: root, or a service given
 * that capability); 0 otherwise. Never fails. */
int firewall_permitted(void);

/* Hands rs->text to libnftables with NFT_CTX_DRY_RUN: parsed and checked
 * against the kernel's cache, nothing committed. INVALID_ARGUMENT with
 * libnftables' own words when the text is refused; DENIED when this
 * process lacks CAP_NET_ADMIN. Blocks on netlink only (milliseconds). */
int firewall_ruleset_check(const struct firewall_ruleset *rs, struct cp_error **err);

/* Replaces table inet chat2sbx by rs in one netlink transaction (the table
 * is added, deleted and defined again in the same batch): either the whole
 * new table is in place afterwards or the old state is unchanged, never a
 * half-written table. Idempotent. DENIED without CAP_NET_ADMIN;
 * UNAVAILABLE with libnftables' words when the kernel refuses (no
 * nf_tables, a missing expression). Blocks on netlink only. */
int firewall_ruleset_apply(const struct firewall_ruleset *rs, struct cp_error **err);

/* Reads table inet chat2sbx and judges it against rs (firewall_listing_judge).
 * detail as there. DENIED without CAP_NET_ADMIN (reading nftables needs it
 * too). Blocks on netlink only. */
int firewall_state_read(const struct firewall_ruleset *rs, enum firewall_state *ret, char *detail, size_t size,
                        struct cp_error **err);

/* Removes table inet chat2sbx in one transaction; an absent table is no
 * error. *ret_removed (may be NULL) says whether there was one. DENIED
 * without CAP_NET_ADMIN. Blocks on netlink only. */
int firewall_remove(int *ret_removed, struct cp_error **err);

#endif
