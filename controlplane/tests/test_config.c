/* test_config.c: the settings table: defaults, derived paths, precedence
 * (yaml < .env < environment), and precise errors for bad values. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"

struct fake_env {
	const char *pairs[32];
};

static const char *fake_get(void *ud, const char *name)
{
	struct fake_env *e = ud;
	for (int i = 0; e->pairs[i]; i += 2)
		if (!strcmp(e->pairs[i], name))
			return e->pairs[i + 1];
	return NULL;
}

static char tmp[64];

static void setup(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/c2s-config-XXXXXX");
	cr_assert_not_null(mkdtemp(tmp));
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	cr_assert_eq(system(cmd), 0);
}

static struct config *load(struct fake_env *fe, const char *dotenv, struct cp_error **err)
{
	struct config_env env = {fake_get, fe, "/home/u", dotenv, "/opt/c2s"};
	struct config *c = NULL;
	if (config_load(&env, &c, err) < 0)
		return NULL;
	return c;
}

TestSuite(config, .init = setup, .fini = teardown);

Test(config, defaults)
{
	struct fake_env fe = {{NULL}};
	struct cp_error *err = NULL;
	struct config *c = load(&fe, NULL, &err);
	cr_assert_not_null(c, "%s", err ? err->message : "");
	cr_expect_str_eq(c->host, "127.0.0.1");
	cr_expect_eq(c->port, 18788);
	cr_expect_str_eq(c->data_root, "/home/u/.chat2sbx");
	cr_expect_str_eq(c->state_dir, "/home/u/.chat2sbx/state");
	cr_expect_str_eq(c->workspace_root, "/home/u/.chat2sbx/workspaces");
	cr_expect_str_eq(c->database_path, "/home/u/.chat2sbx/state/chat2sbx.sqlite");
	cr_expect_str_eq(c->allowed_host_roots, "/home/u/repositories");
	cr_expect_eq(c->enable_tunnel, 1);
	cr_expect_str_eq(c->tunnel_client, "/home/u/.local/bin/tunnel-client");
	cr_expect_str_eq(c->secret_dir, "/home/u/.secrets/tunnel-client");
	cr_expect_eq(c->max_active_sandboxes, 0);
	cr_expect_str_eq(c->docker_socket, "/var/run/docker.sock");
	cr_expect_str_eq(c->template_image, "chat2sbx-template:" CHAT2SBX_VERSION);
	cr_expect_str_eq(c->runtime, "");
	cr_expect_str_eq(c->expose_host, "127.0.0.1");
	cr_expect_eq(c->max_yield_ms, 30000);
	cr_expect_str_eq(c->helper_path, "/opt/c2s/chat2sbx-helper");
	config_free(c);
}

Test(config, environment_overrides_and_derived_paths)
{
	struct fake_env fe = {{"CHAT2SBX_DATA_ROOT", "/srv/c2s", "CHAT2SBX_PORT", "9000", "CHAT2SBX_ENABLE_TUNNEL", "0",
	                       "DOCKER_HOST", "unix:///run/other.sock", "CHAT2SBX_MAX_ACTIVE_SANDBOXES", "3", NULL}};
	struct cp_error *err = NULL;
	struct config *c = load(&fe, NULL, &err);
	cr_assert_not_null(c, "%s", err ? err->message : "");
	cr_expect_eq(c->port, 9000);
	cr_expect_eq(c->enable_tunnel, 0);
	cr_expect_str_eq(c->state_dir, "/srv/c2s/state");
	cr_expect_str_eq(c->database_path, "/srv/c2s/state/chat2sbx.sqlite");
	cr_expect_str_eq(c->docker_socket, "/run/other.sock");
	cr_expect_eq(c->max_active_sandboxes, 3);
	config_free(c);
}

Test(config, precedence_yaml_dotenv_environment)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/config.yaml", tmp);
	FILE *f = fopen(path, "w");
	fprintf(f, "# operator settings\nmaxActiveSandboxes: 5\nport: 7001\nhost: 127.0.0.2\n");
	fclose(f);
	char dotenv[128];
	snprintf(dotenv, sizeof(dotenv), "%s/.env", tmp);
	f = fopen(dotenv, "w");
	fprintf(f, "# comment\nexport CHAT2SBX_PORT=\"7002\"\n\nCHAT2SBX_MAX_YIELD_MS=1000\n");
	fclose(f);
	struct fake_env fe = {{"CHAT2SBX_DATA_ROOT", tmp, "CHAT2SBX_MAX_YIELD_MS", "2000", NULL}};
	struct cp_error *err = NULL;
	struct config *c = load(&fe, dotenv, &err);
	cr_assert_not_null(c, "%s", err ? err->message : "");
	cr_expect_eq(c->max_active_sandboxes, 5, "yaml sets what nothing else does");
	cr_expect_eq(c->port, 7002, ".env wins over yaml");
	cr_expect_eq(c->max_yield_ms, 2000, "environment wins over .env");
	cr_expect_str_eq(c->host, "127.0.0.2");
	config_free(c);
}

Test(config, env_wins_over_yaml_for_sandbox_limit)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/config.yaml", tmp);
	FILE *f = fopen(path, "w");
	fprintf(f, "maxActiveSandboxes: 5\n");
	fclose(f);
	struct fake_env fe = {{"CHAT2SBX_DATA_ROOT", tmp, "CHAT2SBX_MAX_ACTIVE_SANDBOXES", "unlimited", NULL}};
	struct cp_error *err = NULL;
	struct config *c = load(&fe, NULL, &err);
	cr_assert_not_null(c);
	cr_expect_eq(c->max_active_sandboxes, 0);
	config_free(c);
}

Test(config, bad_values_name_the_variable)
{
	const char *cases[][3] = {
	    {"CHAT2SBX_PORT", "70000", "CHAT2SBX_PORT '70000'"},
	    {"CHAT2SBX_PORT", "12x", "not an integer"},
	    {"CHAT2SBX_ENABLE_TUNNEL", "maybe", "CHAT2SBX_ENABLE_TUNNEL 'maybe'"},
	    {"CHAT2SBX_MAX_ACTIVE_SANDBOXES", "-1", "or 'unlimited'"},
	    {"CHAT2SBX_MAX_YIELD_MS", "90000", "100..60000"},
	    {"CHAT2SBX_DATA_ROOT", "relative/dir", "absolute path"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fake_env fe = {{cases[i][0], cases[i][1], NULL}};
		struct cp_error *err = NULL;
		struct config *c = load(&fe, NULL, &err);
		cr_expect_null(c, "%s=%s accepted", cases[i][0], cases[i][1]);
		cr_assert_not_null(err);
		cr_expect_eq(err->code, CP_ERR_INVALID_ARGUMENT);
		cr_expect(strstr(err->message, cases[i][2]) != NULL, "message '%s' lacks '%s'", err->message,
		          cases[i][2]);
		cp_error_free(err);
	}
}

Test(config, malformed_yaml_names_file_and_key)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/config.yaml", tmp);
	FILE *f = fopen(path, "w");
	fprintf(f, "maxActiveSandboxes:\n  - 1\n  - 2\n");
	fclose(f);
	struct fake_env fe = {{"CHAT2SBX_DATA_ROOT", tmp, NULL}};
	struct cp_error *err = NULL;
	cr_expect_null(load(&fe, NULL, &err));
	cr_assert_not_null(err);
	cr_expect(strstr(err->message, "config.yaml") && strstr(err->message, "maxActiveSandboxes"), "%s",
	          err->message);
	cp_error_free(err);

	f = fopen(path, "w");
	fprintf(f, "maxActiveSandboxes: abc\n");
	fclose(f);
	err = NULL;
	cr_expect_null(load(&fe, NULL, &err));
	cr_assert_not_null(err);
	cr_expect(strstr(err->message, "CHAT2SBX_MAX_ACTIVE_SANDBOXES 'abc' (from config.yaml)"), "%s", err->message);
	cp_error_free(err);
}

Test(config, env_example_lists_every_setting)
{
	FILE *f = fopen(".env.example", "r");
	cr_assert_not_null(f, ".env.example must exist at the repository top (tests run from there)");
	char text[16384];
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	size_t count = 0;
	const struct config_setting_info *s = config_settings(&count);
	for (size_t i = 0; i < count; i++) {
		char want[128];
		snprintf(want, sizeof(want), "%s=", s[i].env);
		cr_expect(strstr(text, want) != NULL, ".env.example lacks %s", s[i].env);
	}
}

Test(config, unknown_yaml_key_is_refused)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/config.yaml", tmp);
	FILE *f = fopen(path, "w");
	fprintf(f, "maxActiveSandbox: 3\n");
	fclose(f);
	struct fake_env fe = {{"CHAT2SBX_DATA_ROOT", tmp, NULL}};
	struct cp_error *err = NULL;
	cr_expect_null(load(&fe, NULL, &err));
	cr_assert_not_null(err);
	cr_expect(strstr(err->message, "unknown key 'maxActiveSandbox'"), "%s", err->message);
	cp_error_free(err);
}
