/* test_docker_detail.c: the cause docker/ reads from an engine error
 * (base/error.h's detail), which callers such as lifecycle/expose.c test
 * instead of the engine's message text: the pure table, and each detail as it
 * arrives through a real request to the fake engine. */
#include <criterion/criterion.h>
#include <string.h>

#include "base/error.h"
#include "docker/docker.h"
#include "docker/engine_internal.h"

#include "fake_engine.h"

TestSuite(docker_detail, .fini = fake_free_requests);

#define N(a) (sizeof(a) / sizeof((a)[0]))

Test(docker_detail, engine_words_map_to_details)
{
	static const struct {
		const char *message;
		enum cp_error_detail detail;
	} cases[] = {
	    {"Bind for 0.0.0.0:8080 failed: port is already allocated", CP_DETAIL_PORT_IN_USE},
	    {"listen tcp4 0.0.0.0:8080: bind: address already in use", CP_DETAIL_PORT_IN_USE},
	    {"listen tcp4 0.0.0.0:8080: bind: Address already in use", CP_DETAIL_PORT_IN_USE},
	    {"endpoint with name sbx_a already exists in network n", CP_DETAIL_ALREADY_EXISTS},
	    {"network with name chat2sbx already exists", CP_DETAIL_ALREADY_EXISTS},
	    {"Conflict. The container name \"/sbx_a\" is already in use by container \"3f2a\".",
	     CP_DETAIL_ALREADY_EXISTS},
	    {"container sbx_a is already attached to network n", CP_DETAIL_ALREADY_ATTACHED},
	    {"write /var/lib/docker/x: No space left on device", CP_DETAIL_NO_SPACE},
	    {"removal of container sbx_a is already in progress", CP_DETAIL_REMOVAL_IN_PROGRESS},
	    {"No such container: sbx_a", CP_DETAIL_NONE},
	    {"error while removing network: network n has active endpoints", CP_DETAIL_NONE},
	    {"", CP_DETAIL_NONE},
	    {NULL, CP_DETAIL_NONE},
	};
	for (size_t i = 0; i < N(cases); i++)
		cr_assert_eq(docker_engine_detail(cases[i].message), cases[i].detail, "case %zu: '%s'", i,
		             cases[i].message ? cases[i].message : "(null)");
}

Test(docker_detail, status_error_keeps_code_message_and_detail)
{
	struct cp_error *err = NULL;
	cr_assert_eq(docker_error_status(&err, 409, "network with name x already exists", "create network 'x'"), -1);
	cr_assert_eq(err->code, CP_ERR_CONFLICT);
	cr_assert_eq(err->detail, CP_DETAIL_ALREADY_EXISTS);
	cr_assert_str_eq(err->message, "create network 'x': network with name x already exists");
	/* A second failure does not overwrite the first error or its detail. */
	cr_assert_eq(docker_error_status(&err, 500, "port is already allocated", "start"), -1);
	cr_assert_eq(err->detail, CP_DETAIL_ALREADY_EXISTS);
	cr_assert_eq(err->code, CP_ERR_CONFLICT);
	cp_error_freep(&err);
	cr_assert_eq(docker_error_status(&err, 502, NULL, "start"), -1);
	cr_assert_eq(err->detail, CP_DETAIL_NONE);
	cr_assert_str_eq(err->message, "start: the engine answered HTTP 502");
	cp_error_free(err);
	cr_assert_eq(docker_error_status(NULL, 409, "already exists", "x"), -1);
}

Test(docker_detail, engine_replies_carry_the_detail)
{
	static const struct fake_reply r[] = {{.fixture = "version.http"},
	                                      {.fixture = "start_port_allocated.http"},
	                                      {.fixture = "start_address_in_use.http"},
	                                      {.fixture = "start_error.http"},
	                                      {.fixture = "network_connect_exists.http"},
	                                      {.fixture = "network_missing.http"},
	                                      {.fixture = "create_no_space.http"}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	struct cp_error *err = NULL;
	cr_assert_lt(docker_container_start(e, "chat2sbx-fwd-sbx_a", &err), 0);
	cr_assert_eq(err->code, CP_ERR_UNAVAILABLE);
	cr_assert_eq(err->detail, CP_DETAIL_PORT_IN_USE, "%s", err->message);
	cp_error_freep(&err);
	cr_assert_lt(docker_container_start(e, "chat2sbx-fwd-sbx_a", &err), 0);
	cr_assert_eq(err->detail, CP_DETAIL_PORT_IN_USE, "%s", err->message);
	cp_error_freep(&err);
	cr_assert_lt(docker_container_start(e, "sbx_test", &err), 0);
	cr_assert_eq(err->detail, CP_DETAIL_NONE, "%s", err->message);
	cp_error_freep(&err);
	cr_assert_lt(docker_network_connect(e, "chat2sbx-expose-sbx_a", "sbx_a", NULL, &err), 0);
	cr_assert_eq(err->code, CP_ERR_DENIED);
	cr_assert_eq(err->detail, CP_DETAIL_ALREADY_EXISTS, "%s", err->message);
	cp_error_freep(&err);
	cr_assert_lt(docker_network_connect(e, "gone", "sbx_a", NULL, &err), 0);
	cr_assert_eq(err->code, CP_ERR_NOT_FOUND);
	cr_assert_eq(err->detail, CP_DETAIL_NONE, "%s", err->message);
	cp_error_freep(&err);
	cr_assert_lt(docker_container_start(e, "sbx_test", &err), 0);
	cr_assert_eq(err->detail, CP_DETAIL_NO_SPACE, "%s", err->message);
	cp_error_freep(&err);
	docker_engine_free(e);
	fake_stop(fe);
}
