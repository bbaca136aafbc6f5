/* test_policy_node_health.c: the health state machine of issue 28
 * (policy/node_health.c) over scripted probe answers: one miss is noise,
 * POLICY_NODE_DOWN_AFTER in a row is down since the first of them, the
 * first answer after is back, and the registry state each event leaves
 * (a drain outlives an outage). */
#include <criterion/criterion.h>

#include "policy/policy.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

Test(policy_node_health, misses_answers_and_the_events_they_make)
{
	/* Probes every 2 s: answers, a single miss, answers, two misses
	 * (down), more misses, an answer (back), answers. */
	struct {
		int answered;
		enum policy_node_health_event event;
		int answering;
		int64_t down_since_ms;
	} script[] = {
	    {1, POLICY_NODE_HEALTH_SAME, 1, 0},     /* t=0 */
	    {0, POLICY_NODE_HEALTH_SAME, 1, 0},     /* t=2000: one miss is noise */
	    {1, POLICY_NODE_HEALTH_SAME, 1, 0},     /* t=4000: and is forgotten */
	    {0, POLICY_NODE_HEALTH_SAME, 1, 0},     /* t=6000: first of a run */
	    {0, POLICY_NODE_HEALTH_DOWN, 0, 6000},  /* t=8000: down since the run began */
	    {0, POLICY_NODE_HEALTH_SAME, 0, 6000},  /* t=10000: still down, said once */
	    {0, POLICY_NODE_HEALTH_SAME, 0, 6000},  /* t=12000 */
	    {1, POLICY_NODE_HEALTH_BACK, 1, 0},     /* t=14000: back */
	    {1, POLICY_NODE_HEALTH_SAME, 1, 0},     /* t=16000 */
	    {0, POLICY_NODE_HEALTH_SAME, 1, 0},     /* t=18000: a new run ... */
	    {0, POLICY_NODE_HEALTH_DOWN, 0, 18000}, /* t=20000: ... down since its own start */
	};
	cr_assert_eq(POLICY_NODE_DOWN_AFTER, 2, "the script above assumes two misses");
	struct policy_node_health h = {.answering = 1};
	for (size_t i = 0; i < N(script); i++) {
		int64_t now = (int64_t)i * 2000;
		enum policy_node_health_event ev = policy_node_health_step(&h, script[i].answered, now);
		cr_assert_eq(ev, script[i].event, "probe %zu: event %d, wanted %d", i, ev, script[i].event);
		cr_assert_eq(h.answering, script[i].answering, "probe %zu", i);
		cr_assert_eq(h.down_since_ms, script[i].down_since_ms, "probe %zu: down since %lld", i,
		             (long long)h.down_since_ms);
		if (script[i].answered)
			cr_assert_eq(h.last_contact_ms, now, "probe %zu", i);
	}
	cr_assert_eq(h.last_contact_ms, 16000, "the last answer is kept while it misses");
}

Test(policy_node_health, a_node_that_never_answered_goes_down_and_comes_back)
{
	struct policy_node_health h = {.answering = 1};
	cr_assert_eq(policy_node_health_step(&h, 0, 100), POLICY_NODE_HEALTH_SAME);
	cr_assert_eq(policy_node_health_step(&h, 0, 200), POLICY_NODE_HEALTH_DOWN);
	cr_assert_eq(h.down_since_ms, 100);
	cr_assert_eq(h.last_contact_ms, 0, "no contact yet");
	for (int i = 0; i < 1000; i++)
		cr_assert_eq(policy_node_health_step(&h, 0, 300 + i), POLICY_NODE_HEALTH_SAME);
	cr_assert_eq(h.failures, POLICY_NODE_DOWN_AFTER, "the count stays bounded");
	cr_assert_eq(policy_node_health_step(&h, 1, 5000), POLICY_NODE_HEALTH_BACK);
	cr_assert_eq(h.failures, 0);
}

Test(policy_node_health, the_registry_state_after_each_event)
{
	struct {
		enum policy_node_state row;
		enum policy_node_health_event event;
		enum policy_node_state after;
	} rows[] = {
	    {POLICY_NODE_READY, POLICY_NODE_HEALTH_DOWN, POLICY_NODE_DOWN},
	    {POLICY_NODE_DOWN, POLICY_NODE_HEALTH_BACK, POLICY_NODE_READY},
	    /* An outage never undoes a drain, in either direction. */
	    {POLICY_NODE_DRAINING, POLICY_NODE_HEALTH_DOWN, POLICY_NODE_DRAINING},
	    {POLICY_NODE_DRAINING, POLICY_NODE_HEALTH_BACK, POLICY_NODE_DRAINING},
	    /* Nothing happened: nothing moves. */
	    {POLICY_NODE_READY, POLICY_NODE_HEALTH_SAME, POLICY_NODE_READY},
	    {POLICY_NODE_DOWN, POLICY_NODE_HEALTH_SAME, POLICY_NODE_DOWN},
	    {POLICY_NODE_DRAINING, POLICY_NODE_HEALTH_SAME, POLICY_NODE_DRAINING},
	    /* A row already down (left by an earlier serve) stays down until an answer. */
	    {POLICY_NODE_DOWN, POLICY_NODE_HEALTH_DOWN, POLICY_NODE_DOWN},
	    {POLICY_NODE_READY, POLICY_NODE_HEALTH_BACK, POLICY_NODE_READY},
	};
	for (size_t i = 0; i < N(rows); i++)
		cr_assert_eq(policy_node_state_after(rows[i].row, rows[i].event), rows[i].after, "row %zu", i);
}
