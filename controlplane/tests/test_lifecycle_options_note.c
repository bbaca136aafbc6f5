/* test_lifecycle_options_note.c: the options_note of a sandbox_create that
 * returned an existing sandbox speaks of limits as a person reads them
 * ("no limit", "512m", "1.5"), never as raw fields (security review,
 * defect 5: "memory_bytes 0", "cpus 0.000"). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle/lifecycle_internal.h"

Test(options_note, no_limit_and_readable_sizes)
{
	struct sandbox_record have = {.memory_bytes = 0, .nano_cpus = 0, .network = 1};
	struct lifecycle_limits want = {.memory_bytes = 512LL << 20, .nano_cpus = 1500000000, .network = 1};
	char *note = lifecycle_limits_differ(&have, &want);
	cr_assert_not_null(note);
	cr_expect(strstr(note, "memory no limit (asked 512m)"), "%s", note);
	cr_expect(strstr(note, "cpus no limit (asked 1.5)"), "%s", note);
	cr_expect(!strstr(note, "memory_bytes") && !strstr(note, "0.000"), "%s", note);
	free(note);

	struct sandbox_record have2 = {.memory_bytes = 256LL << 20, .nano_cpus = 2000000000, .network = 1};
	struct lifecycle_limits want2 = {.network = 1};
	note = lifecycle_limits_differ(&have2, &want2);
	cr_assert_not_null(note);
	cr_expect(strstr(note, "memory 256m (asked no limit)") && strstr(note, "cpus 2 (asked no limit)"), "%s", note);
	free(note);

	struct lifecycle_limits same = {.memory_bytes = 256LL << 20, .nano_cpus = 2000000000, .network = 1};
	cr_expect_null(lifecycle_limits_differ(&have2, &same));
}
