/* test_policy_limits.c: the cpus and pids_limit values sandbox_create
 * accepts (policy/limits.c), exact to the nano-CPU, and the refusals. */
#include <criterion/criterion.h>
#include <string.h>

#include "config/config.h"
#include "policy/policy.h"
#define CONFIG_AUTO_TEST CONFIG_AUTO

Test(policy_cpus, accepted_values_become_nano_cpus)
{
	struct {
		const char *in;
		int64_t nano;
	} ok[] = {{"1.5", 1500000000LL}, {"2", 2000000000LL}, {"0.25", 250000000LL}, {".5", 500000000LL},
	          {"1.", 1000000000LL},  {"0.000000001", 1},  {"4", 4000000000LL},   {"3.999999999", 3999999999LL}};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		int64_t got = -1;
		struct cp_error *err = NULL;
		cr_expect_eq(policy_cpus_parse(ok[i].in, 4, &got, &err), 0, "%s: %s", ok[i].in,
		             err ? err->message : "");
		cr_expect_eq(got, ok[i].nano, "%s", ok[i].in);
		cp_error_freep(&err);
	}
}

Test(policy_cpus, refusals_name_the_value_and_leave_the_output_alone)
{
	const char *bad[] = {"",   "0",  "0.0",         "-1", "+1",           "abc", "1e3",        "1,5",
	                     " 1", "1 ", "4.000000001", "5",  "1.0000000001", "0x2", "99999999999"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int64_t got = -7;
		struct cp_error *err = NULL;
		cr_expect_eq(policy_cpus_parse(bad[i], 4, &got, &err), -1, "'%s' accepted", bad[i]);
		cr_expect_eq(got, -7, "%s", bad[i]);
		if (err) {
			cr_expect_eq(err->code, CP_ERR_INVALID_ARGUMENT);
			cr_expect(strstr(err->message, "cpus") != NULL, "%s", err->message);
		}
		cp_error_freep(&err);
	}
	struct cp_error *err = NULL;
	int64_t got = 0;
	cr_expect_eq(policy_cpus_parse(NULL, 4, &got, &err), -1);
	cp_error_freep(&err);
	/* The message says the machine's maximum. */
	cr_expect_eq(policy_cpus_parse("8", 2, &got, &err), -1);
	cr_expect(strstr(err->message, "\"2\"") != NULL, "%s", err->message);
	cp_error_freep(&err);
}

Test(policy_pids, range)
{
	struct cp_error *err = NULL;
	cr_expect_eq(policy_pids_check(POLICY_PIDS_MIN, 0, &err), 0);
	cr_expect_eq(policy_pids_check(POLICY_PIDS_MAX, 0, &err), 0);
	cr_expect_eq(policy_pids_check(256, 0, &err), 0);
	int64_t bad[] = {POLICY_PIDS_MIN - 1, POLICY_PIDS_MAX + 1, 0, -1};
	for (size_t i = 0; i < 4; i++) {
		cr_expect_eq(policy_pids_check(bad[i], 0, &err), -1, "%lld", (long long)bad[i]);
		if (err)
			cr_expect(strstr(err->message, "16-32768") != NULL, "%s", err->message);
		cp_error_freep(&err);
	}
	/* The machine's share per sandbox is the upper end, and says why. */
	cr_expect_eq(policy_pids_check(2048, 2048, &err), 0);
	cr_expect_eq(policy_pids_check(2049, 2048, &err), -1);
	cr_expect(strstr(err->message, "16-2048") && strstr(err->message, "kernel's process limit"), "%s",
	          err->message);
	cp_error_freep(&err);
}

/* The host this machine kind has: 24 GiB, pid_max 32768, threads-max 192725. */
static const struct policy_host host24 = {
    .mem_total_bytes = 24LL * 1024 * 1024 * 1024, .pid_max = 32768, .threads_max = 192725};

Test(policy_host_limits, derived_defaults)
{
	struct policy_sandbox_limits l;
	struct cp_error *err = NULL;
	cr_assert_eq(policy_sandbox_limits(&host24, 0, CONFIG_AUTO_TEST, -1, 1, &l, &err), 0, "%s",
	             err ? err->message : "");
	cr_expect_eq(l.default_memory_bytes, 8LL << 30, "half the memory, at most 8 GiB");
	cr_expect_eq(l.max_memory_bytes, 24LL << 30);
	cr_expect_eq(l.max_active, 12, "one per 2 GiB");
	cr_expect_eq(l.pids_budget, 24576, "3/4 of min(pid_max, threads-max)");
	cr_expect_eq(l.pids_cap, 24576 / 13, "12 active + 1 warm share the budget");
	cr_expect_eq(l.pids_default, 24576 / 13, "below 4096: the share");
	cr_expect_leq((l.max_active + 1) * l.pids_cap, l.pids_budget, "all together stay within the budget");

	/* A small host: 1 GiB, threads-max the smaller. */
	struct policy_host small = {.mem_total_bytes = 1LL << 30, .pid_max = 4194304, .threads_max = 7000};
	cr_assert_eq(policy_sandbox_limits(&small, 0, CONFIG_AUTO_TEST, -1, 0, &l, &err), 0);
	cr_expect_eq(l.default_memory_bytes, 512LL << 20);
	cr_expect_eq(l.max_active, 2, "at least 2");
	cr_expect_eq(l.pids_budget, 5250);
	cr_expect_eq(l.pids_default, 2625);

	/* Unlimited: one sandbox gets at most a quarter of the budget. */
	cr_assert_eq(policy_sandbox_limits(&host24, 0, 0, -1, 0, &l, &err), 0);
	cr_expect_eq(l.max_active, 0);
	cr_expect_eq(l.pids_cap, 24576 / 4);
	cr_expect_eq(l.pids_default, 4096);
}

Test(policy_host_limits, settings_that_do_not_fit_are_refused_with_the_numbers)
{
	struct policy_sandbox_limits l;
	struct cp_error *err = NULL;
	cr_expect_eq(policy_sandbox_limits(&host24, 32LL << 30, CONFIG_AUTO_TEST, -1, 0, &l, &err), -1);
	cr_expect(strstr(err->message, "CHAT2SBX_DEFAULT_MEMORY 32g is more than this machine's memory (24g)"), "%s",
	          err->message);
	cp_error_freep(&err);
	/* Eight sandboxes of 4096 would exhaust pid_max 32768 (the report). */
	cr_expect_eq(policy_sandbox_limits(&host24, 0, 8, 4096, 0, &l, &err), -1);
	cr_expect(strstr(err->message, "CHAT2SBX_PIDS_LIMIT 4096 is too high") && strstr(err->message, "32768") &&
	              strstr(err->message, "set at most 3072"),
	          "%s", err->message);
	cp_error_freep(&err);
	cr_expect_eq(policy_sandbox_limits(&host24, 0, 8, 3072, 0, &l, &err), 0);
	cp_error_freep(&err);
	cr_expect_eq(policy_sandbox_limits(&host24, 0, 100000, -1, 0, &l, &err), -1);
	cr_expect(strstr(err->message, "fewer than 16"), "%s", err->message);
	cp_error_freep(&err);
	cr_expect_eq(policy_sandbox_limits(&host24, 4LL << 30, 3, 6000, 1, &l, &err), 0, "3 + 1 warm: 6144 each");
	cr_expect_eq(l.default_memory_bytes, 4LL << 30);
	cr_expect_eq(l.pids_default, 6000);
}

/* Another node's limits (issue 28): its memory's, this machine's settings
 * held to it, its process budget from the assumed kernel default. */
Test(policy_node_limits, derived_from_the_nodes_memory_and_held_to_it)
{
	struct policy_sandbox_limits l;
	policy_node_sandbox_limits(4 * (1LL << 30), 0, 0, 0, 0, 0, &l);
	cr_expect_eq(l.default_memory_bytes, 2LL << 30, "half of 4 GiB");
	cr_expect_eq(l.max_memory_bytes, 4LL << 30);
	cr_expect_eq(l.max_active, 2, "one per 2 GiB");
	cr_expect_eq(l.pids_budget, POLICY_NODE_PROCS_ASSUMED * 3 / 4);
	cr_expect_eq(l.pids_cap, 24576 / 2);
	cr_expect_eq(l.pids_default, 4096);

	/* A large node: 8 GiB ceiling, 32 sandboxes share the budget. */
	policy_node_sandbox_limits(128 * (1LL << 30), 0, 0, 0, 0, 1, &l);
	cr_expect_eq(l.default_memory_bytes, 8LL << 30);
	cr_expect_eq(l.max_active, 32);
	cr_expect_eq(l.pids_cap, 24576 / 33, "32 + 1 warm");
	cr_expect_eq(l.pids_default, 24576 / 33);
	cr_expect_leq(33 * l.pids_cap, l.pids_budget, "all together stay within the budget");

	/* This machine's settings, held to the node rather than refused. */
	policy_node_sandbox_limits(4 * (1LL << 30), 0, 0, 16LL << 30, 100000, 0, &l);
	cr_expect_eq(l.default_memory_bytes, 4LL << 30, "a 16 GiB setting becomes the node's 4 GiB");
	cr_expect_eq(l.pids_default, 12288, "a pids setting above the share becomes the share");
	policy_node_sandbox_limits(4 * (1LL << 30), 0, 0, 1LL << 30, 500, 0, &l);
	cr_expect_eq(l.default_memory_bytes, 1LL << 30);
	cr_expect_eq(l.pids_default, 500);

	/* A warm pool too large for the budget: each gets the least, and the
	 * memory is still the node's. */
	policy_node_sandbox_limits(64 * (1LL << 30), 0, 0, 0, 0, 5000, &l);
	cr_expect_eq(l.pids_cap, POLICY_PIDS_MIN);
	cr_expect_eq(l.pids_default, POLICY_PIDS_MIN);
	cr_expect_eq(l.default_memory_bytes, 8LL << 30);

	/* Memory not known: the least, and a limit (placement refuses it). */
	policy_node_sandbox_limits(0, 0, 0, 0, 0, 0, &l);
	cr_expect_eq(l.default_memory_bytes, POLICY_MEMORY_MIN_BYTES);
	cr_expect_eq(l.max_memory_bytes, 0);
	cr_expect_eq(l.max_active, POLICY_ACTIVE_MIN);
}

/* Security review, defect 5: a negative count is a number, just too small. */
Test(policy_cpus, negative_says_greater_than_zero)
{
	const char *neg[] = {"-1", "-0.5", "-.5"};
	for (size_t i = 0; i < 3; i++) {
		int64_t got = 0;
		struct cp_error *err = NULL;
		cr_expect_eq(policy_cpus_parse(neg[i], 4, &got, &err), -1);
		cr_assert_not_null(err);
		cr_expect(strstr(err->message, "must be greater than 0") && !strstr(err->message, "not a number"), "%s",
		          err->message);
		cp_error_freep(&err);
	}
}

Test(policy_memory, fraction_of_a_byte_says_what_to_use)
{
	int64_t got = 0;
	struct cp_error *err = NULL;
	cr_expect_eq(policy_memory_parse("1.5", &got, &err), -1);
	cr_assert_not_null(err);
	cr_expect(strstr(err->message, "1536m"), "%s", err->message);
	cp_error_freep(&err);
	cr_expect_eq(policy_memory_parse("1.5g", &got, &err), 0);
	cr_expect_eq(got, 1536LL << 20);
}

/* A node's real process limits, once its probe read them (migration 0019). */
Test(policy_node_limits, from_the_nodes_own_pid_max_when_known)
{
	struct policy_sandbox_limits l;
	policy_node_sandbox_limits(128 * (1LL << 30), 4194304, 1000000, 0, 0, 0, &l);
	cr_expect_eq(l.pids_budget, 1000000LL * 3 / 4, "the smaller of pid_max and threads-max");
	cr_expect_eq(l.pids_cap, 750000 / 32);
	policy_node_sandbox_limits(4 * (1LL << 30), 4194304, 0, 0, 0, 0, &l);
	cr_expect_eq(l.pids_budget, POLICY_NODE_PROCS_ASSUMED * 3 / 4, "half known is not known");
	policy_node_sandbox_limits(4 * (1LL << 30), 4096, 100000, 0, 0, 0, &l);
	cr_expect_eq(l.pids_budget, 3072, "a node with fewer processes than assumed gives fewer");
	/* So few that not even the least fits each sandbox: the least each,
	 * and the memory rules as ever (a zero ceiling would be none). */
	policy_node_sandbox_limits(4 * (1LL << 30), 301, 20, 0, 0, 0, &l);
	cr_expect_eq(l.pids_default, POLICY_PIDS_MIN);
	cr_expect_eq(l.default_memory_bytes, 2LL << 30);
	cr_expect_eq(l.max_memory_bytes, 4LL << 30);
	cr_expect_eq(l.max_active, 2);
}

static int procs(const char *text, int64_t *pid_max, int64_t *threads_max)
{
	return policy_node_procs_parse(text, strlen(text), pid_max, threads_max);
}

Test(policy_node_limits, the_probes_answer_is_read_strictly)
{
	int64_t p = -7, t = -7;
	cr_assert_eq(procs("4194304\n254397\n", &p, &t), 0);
	cr_expect_eq(p, 4194304);
	cr_expect_eq(t, 254397);
	const char *bad[] = {"4194304\n254397",
	                     "4194304 254397\n",
	                     "4194304\n",
	                     "4194304\n254397\n\n",
	                     "04194304\n254397\n",
	                     "-1\n254397\n",
	                     "4194305\n254397\n",
	                     "300\n254397\n",
	                     "32768\n19\n",
	                     "32768\n1073741824\n",
	                     "32768\n99999999999\n",
	                     "",
	                     "\n\n",
	                     "32768\n254397\n32768\n"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		p = t = -7;
		cr_expect_eq(procs(bad[i], &p, &t), -1, "[%zu] %s", i, bad[i]);
		cr_expect_eq(p, -7, "untouched");
	}
	char nul[] = "32768\n254397\n";
	nul[3] = '\0';
	cr_expect_eq(policy_node_procs_parse(nul, sizeof(nul) - 1, &p, &t), -1);
}
