/* test_lifecycle_destroy_person.c: the person's destroy
 * (lifecycle_sandbox_destroy_person), which `chat2sbx sandbox destroy` and
 * the page's Destroy share, for an id without a registry row: a container
 * of this registry by that name is removed only with force (its work
 * cannot be saved without its row); without one the registry's NOT_FOUND
 * stands. Against the fake engine (tests/fake_engine.c). */
#include <criterion/criterion.h>
#include <string.h>

#include "lifecycle_fixture.h"

static const struct fake_route routes[] = {
    {"GET", "/version", {.fixture = "version.http"}},
    {"GET",
     "/containers/json?all=1&filters=%7B%22label%22%3A%5B%22org.chat2sbx.registry",
     {.fixture = "list_removal.http"}},                          /* sbx_new, sbx_run, sbx_exp: none has a row here */
    {"GET", "/containers/json", {.fixture = "list_empty.http"}}, /* no forwarder */
    {"GET", "/networks", {.fixture = "list_empty.http"}},
    {"DELETE", "/containers/", {.fixture = "remove_ok.http"}},
};

static void start(void)
{
	lc_fixture_setup("person", routes, sizeof(routes) / sizeof(routes[0]));
}

TestSuite(destroy_person, .init = start, .fini = lc_fixture_teardown, .timeout = 30);

Test(destroy_person, an_orphan_container_goes_only_with_force)
{
	struct lifecycle_destroy_result res = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(lifecycle_sandbox_destroy_person(fx.lc, "sbx_new", 0, "cli", &res, &err), -1);
	cr_assert_eq(err->code, CP_ERR_CONFLICT, "%s", err->message);
	cr_expect(strstr(err->message, "cannot be saved"), "%s", err->message);
	cr_expect(strstr(err->message, "chat2sbx sandbox destroy sbx_new --force"), "%s", err->message);
	cp_error_free(err);
	err = NULL;
	lifecycle_destroy_result_clear(&res);
	cr_expect_eq(fake_count("DELETE", "/containers/"), 0);

	cr_assert_eq(lifecycle_sandbox_destroy_person(fx.lc, "sbx_new", 1, "ui", &res, &err), 1, "%s",
	             err ? err->message : "");
	cr_expect_eq(fake_count("DELETE", "/containers/cnew"), 1, "this registry's container, by its id");
	cr_expect_eq(fake_count("DELETE", "/containers/"), 1, "and nothing else");
	lifecycle_destroy_result_clear(&res);
}

Test(destroy_person, no_row_and_no_container_is_not_found)
{
	struct lifecycle_destroy_result res = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(lifecycle_sandbox_destroy_person(fx.lc, "sbx_none", 1, "cli", &res, &err), -1);
	cr_expect_eq(err->code, CP_ERR_NOT_FOUND, "%s", err->message);
	cp_error_free(err);
	lifecycle_destroy_result_clear(&res);
	cr_expect_eq(fake_count("DELETE", "/containers/"), 0);
}
