/* test_policy_limits.c: the cpus and pids_limit values sandbox_create
 * accepts (policy/limits.c), exact to the nano-CPU, and the refusals. */
#include <criterion/criterion.h>
#include <string.h>

#include "policy/policy.h"

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
	cr_expect_eq(policy_pids_check(POLICY_PIDS_MIN, &err), 0);
	cr_expect_eq(policy_pids_check(POLICY_PIDS_MAX, &err), 0);
	cr_expect_eq(policy_pids_check(256, &err), 0);
	int64_t bad[] = {POLICY_PIDS_MIN - 1, POLICY_PIDS_MAX + 1, 0, -1};
	for (size_t i = 0; i < 4; i++) {
		cr_expect_eq(policy_pids_check(bad[i], &err), -1, "%lld", (long long)bad[i]);
		if (err)
			cr_expect(strstr(err->message, "16-32768") != NULL, "%s", err->message);
		cp_error_freep(&err);
	}
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
