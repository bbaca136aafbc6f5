/* test_docker_networks.c: the Docker client's network calls (docker/networks.c,
 * docker/network_ops.c) and its runtime questions (GET /info, docker/info.c)
 * against the fake engine in sequence mode (fake_engine.h): the exact method,
 * path and body sent, and how the engine's answers and errors map. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "docker/docker.h"
#include "lifecycle/lifecycle.h"

#include "fake_engine.h"

TestSuite(docker_networks, .fini = fake_free_requests);

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* ---- networks ---- */

Test(docker_networks, network_ensure_creates_an_icc_off_bridge_once)
{
	static const struct fake_reply r[] = {
	    {.fixture = "version.http"},           {.fixture = "network_missing.http"},
	    {.fixture = "network_create_ok.http"}, {.fixture = "network_named_ok.http"},
	    {.fixture = "network_missing.http"},   {.fixture = "network_create_conflict.http"}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	struct cp_error *err = NULL;
	char bridge[64];
	cr_assert_eq(
	    docker_network_ensure(e, "chat2sbx", "org.chat2sbx.network", "c2s-sandboxes", bridge, sizeof(bridge), &err),
	    0, "%s", err ? err->message : "");
	cr_assert_str_eq(bridge, "c2s-sandboxes");
	cr_assert_eq(
	    docker_network_ensure(e, "chat2sbx", "org.chat2sbx.network", "c2s-sandboxes", bridge, sizeof(bridge), &err),
	    0, "an existing one on its bridge is used");
	cr_assert_str_eq(bridge, "c2s-sandboxes");
	cr_assert_eq(docker_network_ensure(e, "chat2sbx", "org.chat2sbx.network", "c2s-sandboxes", NULL, 0, &err), 0,
	             "a racing creator's network counts");
	docker_engine_free(e);
	fake_stop(fe);
	cr_assert_eq(fe->n_req, 6, "nothing but the GETs and creates: %zu requests", fe->n_req);
	cr_assert_str_eq(fe->req[1].line, "GET /v1.41/networks/chat2sbx HTTP/1.1");
	cr_assert_str_eq(fe->req[2].line, "POST /v1.41/networks/create HTTP/1.1");
	struct json_object *b = json_tokener_parse(fe->req[2].body);
	cr_assert_str_eq(json_object_get_string(fake_json_member(b, "Name")), "chat2sbx");
	cr_assert_str_eq(json_object_get_string(fake_json_member(b, "Driver")), "bridge");
	cr_assert_eq(json_object_get_boolean(fake_json_member(b, "CheckDuplicate")), 1);
	cr_assert_str_eq(json_object_get_string(
	                     fake_json_member(fake_json_member(b, "Options"), "com.docker.network.bridge.enable_icc")),
	                 "false");
	cr_assert_str_eq(
	    json_object_get_string(fake_json_member(fake_json_member(b, "Options"), "com.docker.network.bridge.name")),
	    "c2s-sandboxes");
	cr_assert_str_eq(
	    json_object_get_string(fake_json_member(fake_json_member(b, "Labels"), "org.chat2sbx.network")), "true");
	json_object_put(b);
	cr_assert_str_eq(fe->req[3].line, "GET /v1.41/networks/chat2sbx HTTP/1.1");
}

/* An older chat2sbx's network (no bridge name) that no container refers
 * to, in any state, is made again on the fixed bridge. */
Test(docker_networks, network_ensure_replaces_an_unused_nameless_network)
{
	static const struct fake_reply r[] = {
	    {.fixture = "version.http"},   {.fixture = "network_ok.http"},        {.fixture = "list_empty.http"},
	    {.fixture = "remove_ok.http"}, {.fixture = "network_create_ok.http"}, {.fixture = "network_named_ok.http"}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	struct cp_error *err = NULL;
	char bridge[64] = "";
	cr_assert_eq(
	    docker_network_ensure(e, "chat2sbx", "org.chat2sbx.network", "c2s-sandboxes", bridge, sizeof(bridge), &err),
	    0, "%s", err ? err->message : "");
	cr_assert_str_eq(bridge, "c2s-sandboxes", "the bridge it has afterwards");
	docker_engine_free(e);
	fake_stop(fe);
	/* Stopped containers count: all=1, filtered by the network's id. */
	cr_assert(strstr(fe->req[2].line, "GET /v1.41/containers/json?all=1&filters=") &&
	              strstr(fe->req[2].line, "0984ab57e739"),
	          "%s", fe->req[2].line);
	cr_assert_str_eq(fe->req[3].line, "DELETE /v1.41/networks/0984ab57e739 HTTP/1.1");
	cr_assert_str_eq(fe->req[4].line, "POST /v1.41/networks/create HTTP/1.1");
	struct json_object *b = json_tokener_parse(fe->req[4].body);
	cr_assert_str_eq(
	    json_object_get_string(fake_json_member(fake_json_member(b, "Options"), "com.docker.network.bridge.name")),
	    "c2s-sandboxes");
	json_object_put(b);
}

/* One still referred to is used as it is, and its engine-made bridge is
 * reported, so the firewall can name it. */
Test(docker_networks, network_ensure_keeps_a_nameless_network_in_use)
{
	static const struct fake_reply r[] = {
	    {.fixture = "version.http"}, {.fixture = "network_ok.http"}, {.fixture = "list_ok.http"}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	struct cp_error *err = NULL;
	char bridge[64] = "";
	cr_assert_eq(
	    docker_network_ensure(e, "chat2sbx", "org.chat2sbx.network", "c2s-sandboxes", bridge, sizeof(bridge), &err),
	    0, "%s", err ? err->message : "");
	cr_assert_str_eq(bridge, "br-0984ab57e739");
	docker_engine_free(e);
	fake_stop(fe);
	cr_assert_eq(fe->n_req, 3, "no removal, no create");
}

Test(docker_networks, network_bridges_names_each_bridge)
{
	static const struct fake_reply r[] = {{.fixture = "version.http"}, {.fixture = "network_list_bridges.http"}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	struct cp_error *err = NULL;
	struct docker_network_bridge *v = NULL;
	size_t n = 0;
	cr_assert_eq(docker_network_bridges(e, "org.chat2sbx.expose.sandbox", &v, &n, &err), 0, "%s",
	             err ? err->message : "");
	docker_engine_free(e);
	fake_stop(fe);
	cr_assert(strstr(fe->req[1].line, "GET /v1.41/networks?filters=") &&
	              strstr(fe->req[1].line, "org.chat2sbx.expose.sandbox"),
	          "%s", fe->req[1].line);
	cr_assert_eq(n, 2, "the macvlan one and the one without a usable id are left out (%zu)", n);
	cr_assert_str_eq(v[0].name, "chat2sbx");
	cr_assert_str_eq(v[0].interface, "c2s-sandboxes");
	cr_assert_eq(v[0].named, 1);
	cr_assert_str_eq(v[1].name, "chat2sbx-expose-sbx_old");
	cr_assert_str_eq(v[1].interface, "br-e1fdfc4db827", "libnetwork's br-<first 12 of the id>");
	cr_assert_eq(v[1].named, 0);
	docker_network_bridges_free(v, n);
}

/* The firewall's older bridges: both kinds of chat2sbx network, any
 * registry, only those not named with the prefix. */
Test(docker_networks, legacy_bridges_are_the_unprefixed_ones)
{
	static const struct fake_reply r[] = {
	    {.fixture = "version.http"}, {.fixture = "network_list_bridges.http"}, {.fixture = "list_empty.http"}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	struct cp_error *err = NULL;
	char **v = NULL;
	cr_assert_eq(guard_legacy_bridges(e, &v, &err), 0, "%s", err ? err->message : "");
	cr_assert_str_eq(v[0], "br-e1fdfc4db827");
	cr_assert_null(v[1], "c2s-sandboxes is covered by the prefix");
	docker_strv_free(v);
	docker_engine_free(e);
	fake_stop(fe);
	cr_assert(strstr(fe->req[1].line, "org.chat2sbx.network"), "%s", fe->req[1].line);
	cr_assert(strstr(fe->req[2].line, "org.chat2sbx.expose.sandbox"), "%s", fe->req[2].line);
}

Test(docker_networks, container_gateways_lists_each_network)
{
	static const struct fake_reply r[] = {{.fixture = "version.http"},
	                                      {.fixture = "inspect_gateways.http"},
	                                      {.fixture = "inspect_network_none.http"}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	struct cp_error *err = NULL;
	char **gw = NULL;
	cr_assert_eq(docker_container_gateways(e, "sbx_test", &gw, &err), 0, "%s", err ? err->message : "");
	cr_assert(gw[0] && gw[1] && !gw[2], "two gateways, the empty one left out");
	cr_assert(!strcmp(gw[0], "172.18.0.1") || !strcmp(gw[1], "172.18.0.1"));
	cr_assert(!strcmp(gw[0], "172.19.0.1") || !strcmp(gw[1], "172.19.0.1"));
	docker_strv_free(gw);
	cr_assert_eq(docker_container_gateways(e, "sbx_off", &gw, &err), 0);
	cr_assert_null(gw[0], "network none: no gateway");
	docker_strv_free(gw);
	docker_engine_free(e);
	fake_stop(fe);
	cr_assert_str_eq(fe->req[1].line, "GET /v1.41/containers/sbx_test/json HTTP/1.1");
}

Test(docker_networks, network_create_connect_disconnect_remove)
{
	static const struct fake_reply r[] = {{.fixture = "version.http"},
	                                      {.fixture = "network_create_ok.http"},
	                                      {.fixture = "network_connect_ok.http"},
	                                      {.fixture = "network_connect_ok.http"},
	                                      {.fixture = "remove_ok.http"}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	struct cp_error *err = NULL;
	const char *labels[] = {"org.chat2sbx.expose.sandbox", "sbx_a", NULL};
	char *id = NULL;
	cr_assert_eq(docker_network_create(e, "chat2sbx-expose-sbx_a", labels, 1, "c2s-xa", &id, &err), 0);
	cr_assert_str_eq(id, "0984ab57e739");
	free(id);
	cr_assert_eq(docker_network_connect(e, "chat2sbx-expose-sbx_a", "sbx_a", "sandbox", &err), 0);
	cr_assert_eq(docker_network_disconnect(e, "chat2sbx-expose-sbx_a", "sbx_a", &err), 0);
	cr_assert_eq(docker_network_remove(e, "chat2sbx-expose-sbx_a", &err), 0);
	cr_assert_null(err);
	docker_engine_free(e);
	fake_stop(fe);

	cr_assert_str_eq(fe->req[1].line, "POST /v1.41/networks/create HTTP/1.1");
	struct json_object *b = json_tokener_parse(fe->req[1].body);
	cr_assert_str_eq(json_object_get_string(fake_json_member(b, "Name")), "chat2sbx-expose-sbx_a");
	cr_assert_str_eq(json_object_get_string(fake_json_member(b, "Driver")), "bridge");
	fake_json_bool(b, "CheckDuplicate", 1);
	cr_assert_str_eq(json_object_get_string(
	                     fake_json_member(fake_json_member(b, "Options"), "com.docker.network.bridge.enable_icc")),
	                 "true");
	cr_assert_str_eq(
	    json_object_get_string(fake_json_member(fake_json_member(b, "Options"), "com.docker.network.bridge.name")),
	    "c2s-xa");
	cr_assert_str_eq(
	    json_object_get_string(fake_json_member(fake_json_member(b, "Labels"), "org.chat2sbx.expose.sandbox")),
	    "sbx_a");
	json_object_put(b);

	cr_assert_str_eq(fe->req[2].line, "POST /v1.41/networks/chat2sbx-expose-sbx_a/connect HTTP/1.1");
	b = json_tokener_parse(fe->req[2].body);
	cr_assert_str_eq(json_object_get_string(fake_json_member(b, "Container")), "sbx_a");
	cr_assert_str_eq(
	    json_object_to_json_string_ext(fake_json_member(fake_json_member(b, "EndpointConfig"), "Aliases"),
	                                   JSON_C_TO_STRING_PLAIN),
	    "[\"sandbox\"]");
	json_object_put(b);
	cr_assert_str_eq(fe->req[3].line, "POST /v1.41/networks/chat2sbx-expose-sbx_a/disconnect HTTP/1.1");
	b = json_tokener_parse(fe->req[3].body);
	fake_json_bool(b, "Force", 1);
	json_object_put(b);
	cr_assert_str_eq(fe->req[4].line, "DELETE /v1.41/networks/chat2sbx-expose-sbx_a HTTP/1.1");
}

Test(docker_networks, network_errors_carry_the_engine_words)
{
	static const struct fake_reply r[] = {{.fixture = "version.http"},
	                                      {.fixture = "network_create_conflict.http"},
	                                      {.fixture = "network_connect_exists.http"},
	                                      {.fixture = "network_remove_in_use.http"},
	                                      {.fixture = "network_missing.http"}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	struct cp_error *err = NULL;
	cr_assert_lt(docker_network_create(e, "chat2sbx", NULL, 0, NULL, NULL, &err), 0);
	cr_assert_eq(err->code, CP_ERR_CONFLICT);
	cp_error_freep(&err);
	cr_assert_lt(docker_network_connect(e, "chat2sbx-expose-sbx_a", "sbx_a", NULL, &err), 0);
	cr_assert(strstr(err->message, "already exists"), "%s", err->message);
	cp_error_freep(&err);
	cr_assert_lt(docker_network_remove(e, "chat2sbx-expose-sbx_a", &err), 0);
	cr_assert(strstr(err->message, "remove network 'chat2sbx-expose-sbx_a'") &&
	              strstr(err->message, "active endpoints"),
	          "%s", err->message);
	cp_error_freep(&err);
	cr_assert_lt(docker_network_remove(e, "gone", &err), 0);
	cr_assert_eq(err->code, CP_ERR_NOT_FOUND);
	cp_error_freep(&err);
	docker_engine_free(e);
	fake_stop(fe);
}

Test(docker_networks, network_list_filters_by_label)
{
	static const struct fake_reply r[] = {{.fixture = "version.http"}, {.fixture = "network_list_ok.http"}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	struct cp_error *err = NULL;
	char **names = NULL;
	size_t n = 0;
	cr_assert_eq(docker_network_list(e, "org.chat2sbx.expose.registry=/d/reg.sqlite", &names, &n, &err), 0);
	cr_assert_eq(n, 2);
	cr_assert_str_eq(names[0], "chat2sbx-expose-sbx_a");
	cr_assert_str_eq(names[1], "chat2sbx-expose-sbx_b");
	cr_assert_null(names[2]);
	docker_strv_free(names);
	docker_engine_free(e);
	fake_stop(fe);
	cr_assert_not_null(strstr(fe->req[1].line, "GET /v1.41/networks?filters="), "%s", fe->req[1].line);
	cr_assert_not_null(strstr(fe->req[1].line, "org.chat2sbx.expose.registry%3D%2Fd%2Freg.sqlite"), "%s",
	                   fe->req[1].line);
}

/* ---- runtimes (GET /info) ---- */

static struct docker_runtime_info runtime_info(const char *name)
{
	static const struct fake_reply r[] = {{.fixture = "version.http"}, {.fixture = "info_runtimes.http"}};
	fake_free_requests(); /* one fake per call here */
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	struct docker_runtime_info info = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(docker_engine_runtime_info(e, name, &info, &err), 0, "%s", err ? err->message : "");
	docker_engine_free(e);
	fake_stop(fe);
	cr_assert_str_eq(fe->req[1].line, "GET /v1.41/info HTTP/1.1");
	return info;
}

Test(docker_networks, runtime_info_reads_network_and_seccomp_arguments)
{
	static const struct {
		const char *name;
		int found, no_network, ignores_seccomp;
	} cases[] = {
	    {"runc", 1, 0, 0},
	    /* gVisor without --oci-seccomp would drop the sandbox profile. */
	    {"runsc", 1, 1, 1},
	    {"runsc-seccomp", 1, 1, 0},      /* path .../runsc, --oci-seccomp */
	    {"gvisor-single-dash", 1, 0, 0}, /* -oci-seccomp=true: Go flags take one dash */
	    {"gvisor-turned-off", 1, 0, 1},  /* --oci-seccomp then --oci-seccomp=false: the last counts */
	    {"crun", 1, 0, 0},               /* not gVisor: its arguments say nothing of seccomp */
	    {"missing", 0, 0, 0},
	};
	for (size_t i = 0; i < N(cases); i++) {
		struct docker_runtime_info info = runtime_info(cases[i].name);
		cr_assert_eq(info.found, cases[i].found, "%s found", cases[i].name);
		cr_assert_eq(info.no_network, cases[i].no_network, "%s no_network", cases[i].name);
		cr_assert_eq(info.ignores_seccomp, cases[i].ignores_seccomp, "%s ignores_seccomp", cases[i].name);
		cr_assert_str_eq(info.names, "runc, runsc, runsc-seccomp, gvisor-single-dash, gvisor-turned-off, crun");
		docker_runtime_info_clear(&info);
	}
}

Test(docker_networks, runtime_wrapper_keeps_its_answers)
{
	static const struct fake_reply r[] = {{.fixture = "version.http"}, {.fixture = "info_runtimes.http"}};
	struct fake_engine *fe = fake_start(r, N(r));
	struct docker_engine *e = fake_engine_open(fe);
	int found = -1, no_network = -1;
	char *names = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(docker_engine_runtime(e, "runsc", &found, &no_network, &names, &err), 0);
	cr_assert_eq(found, 1);
	cr_assert_eq(no_network, 1);
	cr_assert_not_null(strstr(names, "runsc-seccomp"));
	free(names);
	docker_engine_free(e);
	fake_stop(fe);
}
