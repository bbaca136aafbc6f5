/* test_firewall.c: the host-edge firewall (firewall/, issue 12): the
 * ruleset text builder (prefix, legacy names, refused names, idempotence),
 * the judgement of a listing, and libnftables itself (dry run, apply, read
 * back, remove) in a private network namespace the test makes first, so the
 * machine's own ruleset is never touched. Also the bridge names the
 * lifecycle gives its networks, which the rules depend on. */
#include <criterion/criterion.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "firewall/firewall.h"
#include "lifecycle/lifecycle.h"

static struct firewall_ruleset build_ok(const char *prefix, const char *const *legacy)
{
	struct firewall_spec spec = {.bridge_prefix = prefix, .legacy_bridges = legacy};
	struct firewall_ruleset rs = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(firewall_ruleset_build(&spec, &rs, &err), 0, "%s", err ? err->message : "");
	return rs;
}

static int count(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

/* ---- the text ---- */

Test(firewall, ruleset_names_the_prefix_and_hooks_before_dnat)
{
	struct firewall_ruleset rs = build_ok("c2s-", NULL);
	/* Replaced whole in one batch: add, delete, define. */
	const char *add = strstr(rs.text, "\ntable inet chat2sbx\n");
	const char *del = strstr(rs.text, "\ndelete table inet chat2sbx\n");
	const char *def = strstr(rs.text, "\ntable inet chat2sbx {\n");
	cr_assert(add && del && def && add < del && del < def, "%s", rs.text);
	cr_assert(strstr(rs.text, "type filter hook prerouting priority dstnat - 10; policy accept;"), "%s", rs.text);
	cr_assert(strstr(rs.text, "iifname \"c2s-*\" jump from_sandbox"), "%s", rs.text);
	cr_assert(strstr(rs.text, "iifname @legacy_bridges jump from_sandbox"));
	cr_assert(strstr(rs.text, "iifname != \"lo\" ip daddr 127.0.0.0/8 ct state != { established, related } drop"));
	cr_assert(strstr(rs.text, "iifname != \"lo\" ip6 daddr ::1 ct state != { established, related } drop"));
	/* Replies first, then anything for the host itself is dropped. */
	const char *est = strstr(rs.text, "ct state { established, related } accept");
	const char *drop = strstr(rs.text, "fib daddr type { local, broadcast, multicast } drop");
	cr_assert(est && drop && est < drop, "%s", rs.text);
	cr_assert_null(strstr(rs.text, "elements"), "no legacy names, no elements");
	cr_assert_eq(rs.n_legacy, 0);
	cr_assert_eq(rs.rules_edge, 4);
	cr_assert_eq(rs.rules_sandbox, 3);
	cr_assert(!strncmp(rs.fingerprint, "chat2sbx host edge v1 ", 22), "%s", rs.fingerprint);
	cr_assert_eq(strlen(rs.fingerprint), 22 + 16);
	cr_assert_eq(count(rs.text, rs.fingerprint), 1, "the fingerprint is on one rule");
	firewall_ruleset_clear(&rs);
}

Test(firewall, legacy_names_are_sorted_unique_and_skip_the_prefix)
{
	const char *legacy[] = {"br-e1fdfc4db827", "br-0984ab57e739", "c2s-sandboxes", "br-e1fdfc4db827", NULL};
	struct firewall_ruleset rs = build_ok("c2s-", legacy);
	cr_assert_eq(rs.n_legacy, 2);
	cr_assert_str_eq(rs.legacy[0], "br-0984ab57e739");
	cr_assert_str_eq(rs.legacy[1], "br-e1fdfc4db827");
	cr_assert_null(rs.legacy[2]);
	cr_assert(strstr(rs.text, "elements = { \"br-0984ab57e739\", \"br-e1fdfc4db827\" }"), "%s", rs.text);
	cr_assert_null(strstr(rs.text, "\"c2s-sandboxes\""), "the prefix covers it");
	firewall_ruleset_clear(&rs);
}

Test(firewall, the_same_spec_gives_the_same_text)
{
	const char *a[] = {"br-1", "br-2", "br-3", NULL};
	const char *b[] = {"br-3", "br-1", "br-2", "br-1", NULL};
	struct firewall_ruleset x = build_ok("c2s-", a), y = build_ok("c2s-", b);
	cr_assert_str_eq(x.text, y.text, "order and repetition do not matter");
	cr_assert_str_eq(x.fingerprint, y.fingerprint);
	struct firewall_ruleset z = build_ok("c2s-", NULL);
	cr_assert_str_eq(x.fingerprint, z.fingerprint, "the legacy names are compared one by one, not hashed");
	cr_assert_str_neq(x.text, z.text);
	struct firewall_ruleset w = build_ok("sbx-", NULL);
	cr_assert_str_neq(z.fingerprint, w.fingerprint, "another prefix is another ruleset");
	firewall_ruleset_clear(&x);
	firewall_ruleset_clear(&y);
	firewall_ruleset_clear(&z);
	firewall_ruleset_clear(&w);
}

Test(firewall, names_that_could_break_out_of_the_text_are_refused)
{
	const char *bad[] = {"br-x\" accept",    "br x",  "br-*", "",  "br-0123456789abcd" /* 17 */,
	                     "br;flush ruleset", "br-\\", "br-é", NULL};
	for (size_t i = 0; bad[i]; i++) {
		const char *legacy[] = {bad[i], NULL};
		struct firewall_spec spec = {.bridge_prefix = "c2s-", .legacy_bridges = legacy};
		struct firewall_ruleset rs = {0};
		struct cp_error *err = NULL;
		cr_assert_lt(firewall_ruleset_build(&spec, &rs, &err), 0, "'%s' was accepted", bad[i]);
		cr_assert_eq(err->code, CP_ERR_INVALID_ARGUMENT);
		cr_assert(strstr(err->message, "not an interface name"), "%s", err->message);
		cp_error_free(err);
		cr_assert_null(rs.text, "nothing built");
	}
	const char *prefixes[] = {"", "c2s\"", "c2s-*", "0123456789abcde" /* 15: no room left */, NULL};
	for (size_t i = 0; prefixes[i]; i++) {
		struct firewall_spec spec = {.bridge_prefix = prefixes[i]};
		struct firewall_ruleset rs = {0};
		struct cp_error *err = NULL;
		cr_assert_lt(firewall_ruleset_build(&spec, &rs, &err), 0, "prefix '%s' was accepted", prefixes[i]);
		cr_assert(strstr(err->message, "bridge prefix"), "%s", err->message);
		cp_error_free(err);
	}
	cr_assert(firewall_ifname_valid("br-e1fdfc4db827"));
	cr_assert(firewall_ifname_valid("c2s-xabcdefghij"));
	cr_assert_not(firewall_ifname_valid(NULL));
}

/* The bridge names the lifecycle gives its networks fit the kernel's limit
 * and carry the prefix the rules name. */
Test(firewall, lifecycle_bridge_names_carry_the_prefix)
{
	cr_assert_leq(strlen(POLICY_NETWORK_BRIDGE), FIREWALL_IFNAME_MAX);
	cr_assert(!strncmp(POLICY_NETWORK_BRIDGE, POLICY_BRIDGE_PREFIX, strlen(POLICY_BRIDGE_PREFIX)));
	char a[32], b[32];
	guard_expose_bridge_name("sbx_abcdefghijklmnopqrst", a, sizeof(a));
	cr_assert_str_eq(a, "c2s-xklmnopqrst");
	cr_assert(firewall_ifname_valid(a));
	guard_expose_bridge_name("sbx_abcdefghij0000000000", b, sizeof(b));
	cr_assert_str_neq(a, b, "the random part of the id names the bridge");
	cr_assert(firewall_ifname_valid(b));
}

/* ---- judging a listing ---- */

/* A listing in libnftables-json(5) shape, the last rule's comment given. */
static char *listing(const char *hook, int prio, int edge_rules, int sandbox_rules, const char *comment,
                     const char *elems)
{
	char *out = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&out, &len);
	fprintf(m,
	        "{\"nftables\":[{\"metainfo\":{\"json_schema_version\":1}},"
	        "{\"table\":{\"family\":\"inet\",\"name\":\"chat2sbx\",\"handle\":1}},"
	        "{\"set\":{\"family\":\"inet\",\"name\":\"legacy_bridges\",\"table\":\"chat2sbx\",\"type\":\"ifname\"");
	if (elems)
		fprintf(m, ",\"elem\":[%s]", elems);
	fprintf(m,
	        "}},{\"chain\":{\"family\":\"inet\",\"table\":\"chat2sbx\",\"name\":\"host_edge\",\"type\":\"filter\","
	        "\"hook\":\"%s\",\"prio\":%d,\"policy\":\"accept\"}},"
	        "{\"chain\":{\"family\":\"inet\",\"table\":\"chat2sbx\",\"name\":\"from_sandbox\"}}",
	        hook, prio);
	for (int i = 0; i < edge_rules; i++)
		fprintf(m,
		        ",{\"rule\":{\"family\":\"inet\",\"table\":\"chat2sbx\",\"chain\":\"host_edge\",\"expr\":[]}}");
	for (int i = 0; i < sandbox_rules; i++)
		fprintf(m,
		        ",{\"rule\":{\"family\":\"inet\",\"table\":\"chat2sbx\",\"chain\":\"from_sandbox\"%s%s%s,"
		        "\"expr\":[]}}",
		        i == sandbox_rules - 1 && comment ? ",\"comment\":\"" : "",
		        i == sandbox_rules - 1 && comment ? comment : "",
		        i == sandbox_rules - 1 && comment ? "\"" : "");
	/* Another table's rule of the same chain name must not count. */
	fprintf(m, ",{\"rule\":{\"family\":\"ip\",\"table\":\"filter\",\"chain\":\"from_sandbox\",\"expr\":[]}}]}");
	fclose(m);
	return out;
}

static enum firewall_state judge(const char *json, const struct firewall_ruleset *rs, char *detail, size_t size)
{
	enum firewall_state st = FIREWALL_MISSING;
	struct cp_error *err = NULL;
	cr_assert_eq(firewall_listing_judge(json, rs, &st, detail, size, &err), 0, "%s", err ? err->message : "");
	return st;
}

Test(firewall, listing_judge_tells_in_place_from_changed)
{
	const char *legacy[] = {"br-aaaaaaaaaaaa", NULL};
	struct firewall_ruleset rs = build_ok("c2s-", legacy);
	char d[512];
	char *j = listing("prerouting", -110, 4, 3, rs.fingerprint, "\"br-aaaaaaaaaaaa\"");
	cr_assert_eq(judge(j, &rs, d, sizeof(d)), FIREWALL_INSTALLED, "%s", d);
	free(j);
	j = listing("prerouting", -110, 4, 3, rs.fingerprint, "\"br-aaaaaaaaaaaa\",\"br-gone00000000\"");
	cr_assert_eq(judge(j, &rs, d, sizeof(d)), FIREWALL_COVERS, "a bridge that is gone still named: %s", d);
	cr_assert(FIREWALL_PROTECTS(FIREWALL_COVERS));
	free(j);
	j = listing("prerouting", -110, 4, 3, rs.fingerprint, NULL);
	cr_assert_eq(judge(j, &rs, d, sizeof(d)), FIREWALL_DIFFERENT, "a legacy bridge not named");
	cr_assert(strstr(d, "lacks 1"), "%s", d);
	free(j);
	j = listing("prerouting", -110, 4, 0, NULL, "\"br-aaaaaaaaaaaa\"");
	cr_assert_eq(judge(j, &rs, d, sizeof(d)), FIREWALL_DIFFERENT, "a flushed chain");
	cr_assert(strstr(d, "4 and 0 rules"), "%s", d);
	free(j);
	j = listing("prerouting", -110, 4, 3, "chat2sbx host edge v1 0000000000000000", "\"br-aaaaaaaaaaaa\"");
	cr_assert_eq(judge(j, &rs, d, sizeof(d)), FIREWALL_DIFFERENT, "another version's rules");
	cr_assert(strstr(d, "another version"), "%s", d);
	free(j);
	j = listing("input", -110, 4, 3, rs.fingerprint, "\"br-aaaaaaaaaaaa\"");
	cr_assert_eq(judge(j, &rs, d, sizeof(d)), FIREWALL_DIFFERENT, "hooked elsewhere");
	free(j);
	j = listing("prerouting", -100, 4, 3, rs.fingerprint, "\"br-aaaaaaaaaaaa\"");
	cr_assert_eq(judge(j, &rs, d, sizeof(d)), FIREWALL_DIFFERENT, "at DNAT's priority: too late");
	free(j);
	cr_assert_eq(judge("{\"nftables\":[{\"metainfo\":{}}]}", &rs, d, sizeof(d)), FIREWALL_DIFFERENT);
	enum firewall_state st;
	struct cp_error *err = NULL;
	cr_assert_lt(firewall_listing_judge("not json", &rs, &st, d, sizeof(d), &err), 0);
	cr_assert_eq(err->code, CP_ERR_INVALID_ARGUMENT);
	cp_error_free(err);
	firewall_ruleset_clear(&rs);
}

/* ---- libnftables, in a private network namespace ---- */

/* Leaves the machine's network namespace for one of this test process's
 * own (Criterion runs each test in its own process): as root a new network
 * namespace; otherwise a user namespace too, where this process holds
 * CAP_NET_ADMIN over its new network namespace. Skips the test where
 * neither is allowed. */
static void private_netns(void)
{
	if (unshare(CLONE_NEWNET) == 0)
		return;
	uid_t uid = getuid();
	gid_t gid = getgid();
	if (unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0)
		cr_skip_test("cannot make a private network namespace here (%s): libnftables is not exercised",
		             strerror(errno));
	char map[64];
	FILE *f = fopen("/proc/self/setgroups", "w");
	if (f) {
		fputs("deny", f);
		fclose(f);
	}
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
	f = fopen("/proc/self/uid_map", "w");
	cr_assert_not_null(f);
	fputs(map, f);
	fclose(f);
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid);
	f = fopen("/proc/self/gid_map", "w");
	cr_assert_not_null(f);
	fputs(map, f);
	fclose(f);
}

static enum firewall_state state_of(const struct firewall_ruleset *rs, char *detail, size_t size)
{
	enum firewall_state st = FIREWALL_DIFFERENT;
	struct cp_error *err = NULL;
	cr_assert_eq(firewall_state_read(rs, &st, detail, size, &err), 0, "%s", err ? err->message : "");
	return st;
}

Test(firewall, the_kernel_takes_the_ruleset_in_a_dry_run)
{
	private_netns();
	cr_assert(firewall_permitted(), "CAP_NET_ADMIN in the private namespace");
	const char *legacy[] = {"br-e1fdfc4db827", NULL};
	struct firewall_ruleset rs = build_ok("c2s-", legacy);
	struct cp_error *err = NULL;
	cr_assert_eq(firewall_ruleset_check(&rs, &err), 0, "%s", err ? err->message : "");
	char d[512];
	cr_assert_eq(state_of(&rs, d, sizeof(d)), FIREWALL_MISSING, "a dry run commits nothing: %s", d);
	/* A broken text is refused with libnftables' words. */
	char *broken = strdup(rs.text);
	char *at = strstr(broken, "fib daddr");
	memcpy(at, "fob", 3);
	free(rs.text);
	rs.text = broken;
	cr_assert_lt(firewall_ruleset_check(&rs, &err), 0);
	cr_assert_eq(err->code, CP_ERR_INVALID_ARGUMENT);
	cr_assert(strstr(err->message, "Error"), "%s", err->message);
	cp_error_free(err);
	firewall_ruleset_clear(&rs);
}

/* Other nodes' addresses (issue 28): one rule per family, in the text the
 * fingerprint covers, so a table without them reads as different. */
static struct firewall_ruleset build_nodes(const char *const *nodes)
{
	struct firewall_spec spec = {.bridge_prefix = "c2s-", .node_addresses = nodes};
	struct firewall_ruleset rs = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(firewall_ruleset_build(&spec, &rs, &err), 0, "%s", err ? err->message : "");
	return rs;
}

Test(firewall, node_addresses_get_a_rule_per_family_and_change_the_fingerprint)
{
	const char *v4[] = {"10.0.0.2", "192.168.1.9", NULL};
	struct firewall_ruleset plain = build_ok("c2s-", NULL), rs = build_nodes(v4);
	cr_assert(strstr(rs.text, "ip saddr { 10.0.0.2, 192.168.1.9 } ct state new fib daddr type local drop"), "%s",
	          rs.text);
	cr_assert(strstr(rs.text, "iifname != \"lo\" ip saddr { 10.0.0.2"), "never on lo: %s", rs.text);
	cr_assert_null(strstr(rs.text, "ip6 saddr"), "no IPv6 node, no IPv6 rule");
	cr_assert_eq(rs.rules_edge, 5);
	cr_assert_eq(rs.n_nodes, 2);
	cr_assert_str_neq(rs.fingerprint, plain.fingerprint, "another set of nodes is another table");
	const char *both[] = {"10.0.0.2", "fd00::2", NULL};
	struct firewall_ruleset rs2 = build_nodes(both);
	cr_assert(strstr(rs2.text, "ip6 saddr { fd00::2 } ct state new"), "%s", rs2.text);
	cr_assert_eq(rs2.rules_edge, 6);
	/* What could break out of the text is refused. */
	const char *bad[] = {"10.0.0.2 } accept; #", "host.example", "", "10.0.0.256", NULL};
	for (size_t i = 0; bad[i]; i++) {
		const char *one[] = {bad[i], NULL};
		struct firewall_spec spec = {.bridge_prefix = "c2s-", .node_addresses = one};
		struct firewall_ruleset x = {0};
		struct cp_error *err = NULL;
		cr_assert_lt(firewall_ruleset_build(&spec, &x, &err), 0, "'%s' was accepted", bad[i]);
		cr_assert_eq(err->code, CP_ERR_INVALID_ARGUMENT);
		cp_error_free(err);
	}
	firewall_ruleset_clear(&plain);
	firewall_ruleset_clear(&rs);
	firewall_ruleset_clear(&rs2);
}

Test(firewall, node_rules_are_taken_by_the_kernel_and_judged)
{
	private_netns();
	const char *both[] = {"10.0.0.2", "fd00::2", NULL};
	struct firewall_ruleset rs = build_nodes(both), plain = build_ok("c2s-", NULL);
	struct cp_error *err = NULL;
	char d[512];
	cr_assert_eq(firewall_ruleset_apply(&rs, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(state_of(&rs, d, sizeof(d)), FIREWALL_INSTALLED, "%s", d);
	cr_assert_eq(state_of(&plain, d, sizeof(d)), FIREWALL_DIFFERENT, "without the nodes: %s", d);
	cr_assert_eq(firewall_ruleset_apply(&plain, &err), 0);
	cr_assert_eq(state_of(&rs, d, sizeof(d)), FIREWALL_DIFFERENT, "a table without the node rules: %s", d);
	int removed = 0;
	cr_assert_eq(firewall_remove(&removed, &err), 0);
	firewall_ruleset_clear(&rs);
	firewall_ruleset_clear(&plain);
}

Test(firewall, apply_is_idempotent_read_back_and_removed)
{
	private_netns();
	const char *legacy[] = {"br-e1fdfc4db827", NULL};
	struct firewall_ruleset rs = build_ok("c2s-", legacy);
	struct cp_error *err = NULL;
	char d[512];
	cr_assert_eq(firewall_ruleset_apply(&rs, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(state_of(&rs, d, sizeof(d)), FIREWALL_INSTALLED, "%s", d);
	cr_assert_eq(firewall_ruleset_apply(&rs, &err), 0, "a second apply replaces, never fails: %s",
	             err ? err->message : "");
	cr_assert_eq(state_of(&rs, d, sizeof(d)), FIREWALL_INSTALLED, "%s", d);

	/* Another spec reads as different until it is applied. */
	struct firewall_ruleset other = build_ok("c2s-", NULL);
	cr_assert_eq(state_of(&other, d, sizeof(d)), FIREWALL_COVERS, "the set names one more bridge: %s", d);
	const char *more[] = {"br-e1fdfc4db827", "br-0984ab57e739", NULL};
	struct firewall_ruleset wider = build_ok("c2s-", more);
	cr_assert_eq(state_of(&wider, d, sizeof(d)), FIREWALL_DIFFERENT, "a bridge is not named yet: %s", d);
	cr_assert_eq(firewall_ruleset_apply(&wider, &err), 0);
	cr_assert_eq(state_of(&wider, d, sizeof(d)), FIREWALL_INSTALLED, "%s", d);

	int removed = 0;
	cr_assert_eq(firewall_remove(&removed, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(removed, 1);
	cr_assert_eq(state_of(&rs, d, sizeof(d)), FIREWALL_MISSING, "%s", d);
	cr_assert_eq(firewall_remove(&removed, &err), 0, "removing an absent table is no error");
	cr_assert_eq(removed, 0);
	firewall_ruleset_clear(&rs);
	firewall_ruleset_clear(&other);
	firewall_ruleset_clear(&wider);
}

/* A refused apply leaves the table as it was: the batch is all or nothing. */
Test(firewall, a_refused_apply_changes_nothing)
{
	private_netns();
	struct firewall_ruleset rs = build_ok("c2s-", NULL);
	struct cp_error *err = NULL;
	char d[512];
	cr_assert_eq(firewall_ruleset_apply(&rs, &err), 0, "%s", err ? err->message : "");
	struct firewall_ruleset bad = build_ok("c2s-", NULL);
	char *broken = strdup(bad.text);
	memcpy(strstr(broken, "fib daddr"), "fob", 3);
	free(bad.text);
	bad.text = broken;
	cr_assert_lt(firewall_ruleset_apply(&bad, &err), 0);
	cp_error_free(err);
	cr_assert_eq(state_of(&rs, d, sizeof(d)), FIREWALL_INSTALLED, "the old table is whole: %s", d);
	firewall_ruleset_clear(&rs);
	firewall_ruleset_clear(&bad);
}

Test(firewall, without_cap_net_admin_it_says_what_is_needed)
{
	if (geteuid() == 0) {
		/* Drop to nobody in a child-free way: this test process is its own. */
		cr_assert_eq(setgid(65534), 0);
		cr_assert_eq(setuid(65534), 0);
	}
	cr_assert_not(firewall_permitted());
	struct firewall_ruleset rs = build_ok("c2s-", NULL);
	struct cp_error *err = NULL;
	enum firewall_state st;
	char d[64];
	cr_assert_lt(firewall_state_read(&rs, &st, d, sizeof(d), &err), 0);
	cr_assert_eq(err->code, CP_ERR_DENIED);
	cr_assert(strstr(err->message, "needs root (CAP_NET_ADMIN)"), "%s", err->message);
	cp_error_free(err);
	err = NULL;
	cr_assert_lt(firewall_ruleset_apply(&rs, &err), 0);
	cr_assert_eq(err->code, CP_ERR_DENIED);
	cp_error_free(err);
	firewall_ruleset_clear(&rs);
}
