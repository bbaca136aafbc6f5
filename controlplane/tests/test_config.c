/* test_config.c: the settings table: defaults, derived paths, precedence
 * (yaml < .env < environment), and precise errors for bad values. */
#include <criterion/criterion.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "config/config_file.h"

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
	umask(022); /* files the tests write must pass the not-group-writable rule */
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
	cr_expect_eq(c->max_active_sandboxes, CONFIG_AUTO, "derived from the host at start");
	cr_expect_eq(c->pids_limit, CONFIG_AUTO);
	cr_expect_eq(c->default_memory_bytes, CONFIG_SIZE_AUTO);
	cr_expect_eq(c->mcp_token, 1);
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

static void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
	cr_assert_eq(chmod(path, mode), 0);
}

/* Security review, defect 1: test-only settings come only from the process
 * environment; a .env or config.yaml setting one is refused by name. */
Test(config, test_only_settings_are_refused_in_files)
{
	const char *lines[] = {"CHAT2SBX_TEST_UNSAFE_MOUNT_DOCKER_SOCKET=1\n", "CHAT2SBX_CLOCK_OFFSET_MS=5000\n"};
	const char *names[] = {"CHAT2SBX_TEST_UNSAFE_MOUNT_DOCKER_SOCKET", "CHAT2SBX_CLOCK_OFFSET_MS"};
	char dotenv[128];
	snprintf(dotenv, sizeof(dotenv), "%s/.env", tmp);
	for (int i = 0; i < 2; i++) {
		write_file(dotenv, lines[i], 0600);
		struct fake_env fe = {{"CHAT2SBX_DATA_ROOT", tmp, NULL}};
		struct cp_error *err = NULL;
		cr_expect_null(load(&fe, dotenv, &err), "%s accepted from .env", names[i]);
		cr_assert_not_null(err);
		cr_expect_eq(err->code, CP_ERR_INVALID_ARGUMENT);
		cr_expect(strstr(err->message, names[i]) && strstr(err->message, "process environment") &&
		              strstr(err->message, dotenv),
		          "%s", err->message);
		cp_error_free(err);
	}
	unlink(dotenv);

	char yaml[128];
	snprintf(yaml, sizeof(yaml), "%s/config.yaml", tmp);
	write_file(yaml, "testUnsafeMountDockerSocket: 1\n", 0600);
	struct fake_env fe = {{"CHAT2SBX_DATA_ROOT", tmp, NULL}};
	struct cp_error *err = NULL;
	cr_expect_null(load(&fe, NULL, &err));
	cr_assert_not_null(err);
	cr_expect(strstr(err->message, "testUnsafeMountDockerSocket") && strstr(err->message, "process environment"),
	          "%s", err->message);
	cp_error_free(err);
	unlink(yaml);

	/* The process environment still sets them. */
	struct fake_env ok = {
	    {"CHAT2SBX_TEST_UNSAFE_MOUNT_DOCKER_SOCKET", "1", "CHAT2SBX_CLOCK_OFFSET_MS", "5000", NULL}};
	err = NULL;
	struct config *c = load(&ok, NULL, &err);
	cr_assert_not_null(c, "%s", err ? err->message : "");
	cr_expect_eq(c->test_unsafe_mount_docker_socket, 1);
	cr_expect_eq(c->clock_offset_ms, 5000);
	config_free(c);
}

/* Security review, defect 1: a settings file others can write is refused,
 * naming the file and the fix. */
Test(config, writable_settings_files_are_refused)
{
	char dotenv[128], yaml[128];
	snprintf(dotenv, sizeof(dotenv), "%s/.env", tmp);
	snprintf(yaml, sizeof(yaml), "%s/config.yaml", tmp);
	const mode_t modes[] = {0620, 0602, 0666};
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		write_file(dotenv, "CHAT2SBX_PORT=18790\n", modes[i]);
		struct fake_env fe = {{"CHAT2SBX_DATA_ROOT", tmp, NULL}};
		struct cp_error *err = NULL;
		cr_expect_null(load(&fe, dotenv, &err), "mode %o accepted", (unsigned)modes[i]);
		cr_assert_not_null(err);
		cr_expect(strstr(err->message, dotenv) && strstr(err->message, "chmod go-w"), "%s", err->message);
		cp_error_free(err);
	}
	unlink(dotenv);

	write_file(yaml, "port: 18790\n", 0666);
	struct fake_env fe = {{"CHAT2SBX_DATA_ROOT", tmp, NULL}};
	struct cp_error *err = NULL;
	cr_expect_null(load(&fe, NULL, &err));
	cr_assert_not_null(err);
	cr_expect(strstr(err->message, "config.yaml") && strstr(err->message, "chmod go-w"), "%s", err->message);
	cp_error_free(err);

	/* A directory (not a regular file) under the name is refused too. */
	unlink(yaml);
	cr_assert_eq(mkdir(dotenv, 0700), 0);
	err = NULL;
	cr_expect_null(load(&fe, dotenv, &err));
	cr_assert_not_null(err);
	cr_expect(strstr(err->message, "not a regular file"), "%s", err->message);
	cp_error_free(err);
	rmdir(dotenv);

	/* Owner-only modes are read. */
	write_file(dotenv, "CHAT2SBX_PORT=18790\n", 0644);
	err = NULL;
	struct config *c = load(&fe, dotenv, &err);
	cr_assert_not_null(c, "%s", err ? err->message : "");
	cr_expect_eq(c->port, 18790);
	config_free(c);
}

/* The ownership rule itself, on a stat a test can forge. */
Test(config, settings_file_of_another_user_is_refused)
{
	struct stat st = {.st_mode = S_IFREG | 0600, .st_uid = geteuid() + 1000};
	struct cp_error *err = NULL;
	if (geteuid() + 1000 == 0)
		st.st_uid = 4242;
	cr_expect_eq(config_file_check_trusted(&st, "/x/.env", &err), -1);
	cr_assert_not_null(err);
	cr_expect(strstr(err->message, "/x/.env") && strstr(err->message, "from another directory"), "%s",
	          err->message);
	cp_error_free(err);
	st.st_uid = 0;
	err = NULL;
	cr_expect_eq(config_file_check_trusted(&st, "/x/.env", &err), 0, "root-owned files are trusted");
	st.st_uid = geteuid();
	cr_expect_eq(config_file_check_trusted(&st, "/x/.env", &err), 0);
}

/* Security review, defect 2: the endpoint has no authentication, so serve
 * binds loopback only. */
Test(config, non_loopback_host_is_refused)
{
	const char *bad[] = {"0.0.0.0", "::", "192.168.1.10", "172.17.0.1", "example.org", "128.0.0.1"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct fake_env fe = {{"CHAT2SBX_HOST", bad[i], NULL}};
		struct cp_error *err = NULL;
		cr_expect_null(load(&fe, NULL, &err), "CHAT2SBX_HOST=%s accepted", bad[i]);
		cr_assert_not_null(err);
		cr_expect(strstr(err->message, "CHAT2SBX_HOST") && strstr(err->message, "loopback") &&
		              strstr(err->message, "this machine"),
		          "%s", err->message);
		cp_error_free(err);
	}
	const char *good[] = {"127.0.0.1", "127.0.0.2", "::1", "localhost", "LOCALHOST"};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct fake_env fe = {{"CHAT2SBX_HOST", good[i], NULL}};
		struct cp_error *err = NULL;
		struct config *c = load(&fe, NULL, &err);
		cr_expect_not_null(c, "CHAT2SBX_HOST=%s refused: %s", good[i], err ? err->message : "");
		cp_error_free(err);
		config_free(c);
	}
}

Test(config, max_exposures_default_and_range)
{
	struct fake_env fe = {{NULL}};
	struct cp_error *err = NULL;
	struct config *c = load(&fe, NULL, &err);
	cr_assert_not_null(c);
	cr_expect_eq(c->max_exposures, 24);
	config_free(c);
	struct fake_env bad = {{"CHAT2SBX_MAX_EXPOSURES", "0", NULL}};
	cr_expect_null(load(&bad, NULL, &err));
	cr_assert_not_null(err);
	cr_expect(strstr(err->message, "CHAT2SBX_MAX_EXPOSURES"), "%s", err->message);
	cp_error_free(err);
}

Test(config, vm_settings_defaults_and_choices)
{
	struct fake_env fe = {{NULL}};
	struct cp_error *err = NULL;
	struct config *c = load(&fe, NULL, &err);
	cr_assert_not_null(c);
	cr_expect_str_eq(c->runtime, "", "auto by default");
	cr_expect_str_eq(c->vm_accel, "auto");
	cr_expect_str_eq(c->vm_docker, "demand");
	cr_expect_str_eq(c->vm_image, "chat2sbx-vm:" CHAT2SBX_VERSION);
	cr_expect_str_eq(c->vm_path, "/opt/c2s/chat2sbx-vm", "beside the binary");
	config_free(c);

	struct fake_env ok = {
	    {"CHAT2SBX_RUNTIME", "vm", "CHAT2SBX_VM_ACCEL", "tcg", "CHAT2SBX_VM_DOCKER", "boot", NULL}};
	c = load(&ok, NULL, &err);
	cr_assert_not_null(c, "%s", err ? err->message : "");
	cr_expect_str_eq(c->runtime, "vm");
	cr_expect_str_eq(c->vm_accel, "tcg");
	cr_expect_str_eq(c->vm_docker, "boot");
	config_free(c);

	const char *bad[][3] = {{"CHAT2SBX_VM_ACCEL", "qemu", "auto, kvm, tcg"},
	                        {"CHAT2SBX_VM_ACCEL", "KVM", "auto, kvm, tcg"},
	                        {"CHAT2SBX_VM_DOCKER", "always", "demand, boot, off"}};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct fake_env b = {{bad[i][0], bad[i][1], NULL}};
		cr_expect_null(load(&b, NULL, &err), "%s=%s", bad[i][0], bad[i][1]);
		cr_assert_not_null(err);
		cr_expect(strstr(err->message, bad[i][0]) && strstr(err->message, bad[i][1]) &&
		              strstr(err->message, bad[i][2]),
		          "%s", err->message);
		cp_error_free(err);
		err = NULL;
	}
}

/* Issue 25: chat2sbx's own files. The source tree's build (these tests)
 * finds them from the binary's directory: LIB_DIR is EXE_DIR, DATA_DIR the
 * tree above it; the file settings derive from LIB_DIR. */
Test(config, install_dirs_compiled_default)
{
	cr_expect_eq(config_installed, 0, "the unit tests are the source tree's build");
	struct fake_env fe = {{NULL}};
	struct cp_error *err = NULL;
	struct config *c = load(&fe, NULL, &err);
	cr_assert_not_null(c, "%s", err ? err->message : "");
	cr_expect_str_eq(c->lib_dir, "/opt/c2s");
	cr_expect_str_eq(c->data_dir, "/opt");
	cr_expect_str_eq(c->helper_path, "/opt/c2s/chat2sbx-helper");
	cr_expect_str_eq(c->vm_path, "/opt/c2s/chat2sbx-vm");
	config_free(c);

	/* A binary at the root: its source tree is "/", never "" or the
	 * working directory. */
	struct config_env env = {fake_get, &fe, "/home/u", NULL, "/bin"};
	cr_assert_eq(config_load(&env, &c, &err), 0);
	cr_expect_str_eq(c->data_dir, "/");
	config_free(c);
}

Test(config, install_dirs_environment_override)
{
	struct fake_env fe = {
	    {"CHAT2SBX_LIB_DIR", "/usr/lib/chat2sbx", "CHAT2SBX_DATA_DIR", "/usr/share/chat2sbx", NULL}};
	struct cp_error *err = NULL;
	struct config *c = load(&fe, NULL, &err);
	cr_assert_not_null(c, "%s", err ? err->message : "");
	cr_expect_str_eq(c->lib_dir, "/usr/lib/chat2sbx");
	cr_expect_str_eq(c->data_dir, "/usr/share/chat2sbx");
	cr_expect_str_eq(c->helper_path, "/usr/lib/chat2sbx/chat2sbx-helper", "derived from the override");
	cr_expect_str_eq(c->vm_path, "/usr/lib/chat2sbx/chat2sbx-vm");
	config_free(c);

	/* The file setting itself still wins over the directory. */
	struct fake_env fe2 = {{"CHAT2SBX_LIB_DIR", "/usr/lib/chat2sbx", "CHAT2SBX_HELPER_PATH", "/srv/helper", NULL}};
	c = load(&fe2, NULL, &err);
	cr_assert_not_null(c);
	cr_expect_str_eq(c->helper_path, "/srv/helper");
	config_free(c);

	struct fake_env rel = {{"CHAT2SBX_DATA_DIR", "share/chat2sbx", NULL}};
	cr_expect_null(load(&rel, NULL, &err), "a relative data dir is refused");
	cr_assert_not_null(err);
	cr_expect(strstr(err->message, "CHAT2SBX_DATA_DIR 'share/chat2sbx'"), "%s", err->message);
	cp_error_free(err);
}

/* The directories come from the environment only: a .env in the working
 * directory or config.yaml must not swap the helper mounted into sandboxes. */
Test(config, install_dirs_refused_in_dotenv)
{
	char dotenv[128];
	snprintf(dotenv, sizeof(dotenv), "%s/.env", tmp);
	const char *lines[] = {"CHAT2SBX_LIB_DIR=/tmp/evil\n", "CHAT2SBX_DATA_DIR=/tmp/evil\n"};
	for (int i = 0; i < 2; i++) {
		write_file(dotenv, lines[i], 0600);
		struct fake_env fe = {{"CHAT2SBX_DATA_ROOT", tmp, NULL}};
		struct cp_error *err = NULL;
		cr_expect_null(load(&fe, dotenv, &err), "%s accepted from .env", lines[i]);
		cr_assert_not_null(err);
		cr_expect(strstr(err->message, "environment-only setting") &&
		              strstr(err->message, "process environment"),
		          "%s", err->message);
		cp_error_free(err);
	}
}

static struct config *load_dirs(const char *lib, const char *data)
{
	struct fake_env fe = {{"CHAT2SBX_LIB_DIR", lib, "CHAT2SBX_DATA_DIR", data, NULL}};
	struct cp_error *err = NULL;
	struct config *c = load(&fe, NULL, &err);
	cr_assert_not_null(c, "%s", err ? err->message : "");
	return c;
}

/* A build script reads the files beside it: one of them writable by
 * others (or another user's) makes the script refused too. */
Test(config, install_path_judges_the_files_beside_it)
{
	char dir[160], script[200], input[200];
	snprintf(dir, sizeof(dir), "%s/template", tmp);
	cr_assert_eq(mkdir(dir, 0755), 0);
	snprintf(script, sizeof(script), "%s/build.sh", dir);
	write_file(script, "#!/bin/sh\n", 0755);
	snprintf(input, sizeof(input), "%s/Dockerfile", dir);
	write_file(input, "FROM scratch\n", 0644);
	cr_assert_eq(chmod(input, 0666), 0);
	struct config *c = load_dirs("/nonexistent/lib", tmp);
	char *path = NULL;
	struct cp_error *err = NULL;
	cr_expect_eq(
	    config_install_path(c, CONFIG_DIR_DATA, "template/build.sh", "the template's build script", &path, &err),
	    -1);
	cr_expect_null(path);
	cr_expect(err && err->code == CP_ERR_DENIED && strstr(err->message, input) && strstr(err->message, "0666"),
	          "%s", err ? err->message : "");
	cp_error_free(err);
	cr_assert_eq(chmod(input, 0644), 0);
	err = NULL;
	cr_expect_eq(
	    config_install_path(c, CONFIG_DIR_DATA, "template/build.sh", "the template's build script", &path, &err), 0,
	    "%s", err ? err->message : "");
	free(path);
	config_free(c);
}

Test(config, install_path_found_and_missing)
{
	char dir[160], script[200];
	snprintf(dir, sizeof(dir), "%s/template", tmp);
	cr_assert_eq(mkdir(dir, 0755), 0);
	snprintf(script, sizeof(script), "%s/build.sh", dir);
	write_file(script, "#!/bin/sh\n", 0755);
	struct config *c = load_dirs("/nonexistent/lib", tmp);

	char *path = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(
	    config_install_path(c, CONFIG_DIR_DATA, "template/build.sh", "the template's build script", &path, &err), 0,
	    "%s", err ? err->message : "");
	cr_expect_str_eq(path, script);
	free(path);

	path = NULL;
	cr_expect_eq(config_install_path(c, CONFIG_DIR_DATA, "template/vm/build.sh", "the vm template's build script",
	                                 &path, &err),
	             -1);
	cr_expect_null(path, "nothing handed out on failure");
	cr_assert_not_null(err);
	cr_expect_eq(err->code, CP_ERR_UNAVAILABLE);
	char want[300];
	snprintf(want, sizeof(want), "the vm template's build script '%s/template/vm/build.sh' is missing", tmp);
	cr_expect(strstr(err->message, want), "names what is missing: %s", err->message);
	cr_expect(strstr(err->message, "CHAT2SBX_DATA_DIR"), "names the directory's setting: %s", err->message);
	cr_expect(strstr(err->message, "build it with 'make'"), "says what to do: %s", err->message);
	cp_error_free(err);

	/* A directory alone is not the file; nor is a name that leaves it. */
	err = NULL;
	cr_expect_eq(config_install_path(c, CONFIG_DIR_LIB, "chat2sbx-helper", "the helper binary", &path, &err), -1);
	cr_expect(err && strstr(err->message, "'/nonexistent/lib/chat2sbx-helper'") &&
	              strstr(err->message, "CHAT2SBX_LIB_DIR"),
	          "%s", err ? err->message : "");
	cp_error_free(err);
	config_free(c);
}

Test(config, install_require_names_the_setting_to_fix)
{
	struct config *c = load_dirs("/nonexistent/lib", tmp);
	struct cp_error *err = NULL;
	/* The default helper path, inside LIB_DIR: what to build or install. */
	cr_expect_eq(config_install_require(c, c->helper_path, "the helper binary", "CHAT2SBX_HELPER_PATH", &err), -1);
	cr_assert_not_null(err);
	cr_expect(strstr(err->message, "the helper binary '/nonexistent/lib/chat2sbx-helper' is missing from "
	                               "chat2sbx's directory /nonexistent/lib (CHAT2SBX_LIB_DIR)"),
	          "%s", err->message);
	cp_error_free(err);

	/* A path the user set elsewhere: the setting to fix, not a reinstall.
	 * "/nonexistent/library" shares LIB_DIR's prefix but is not inside it. */
	err = NULL;
	cr_expect_eq(
	    config_install_require(c, "/nonexistent/library/helper", "the helper binary", "CHAT2SBX_HELPER_PATH", &err),
	    -1);
	cr_assert_not_null(err);
	cr_expect(strstr(err->message, "(CHAT2SBX_HELPER_PATH) is missing; point CHAT2SBX_HELPER_PATH at an existing"),
	          "%s", err->message);
	cp_error_free(err);

	char present[160];
	snprintf(present, sizeof(present), "%s/helper", tmp);
	write_file(present, "x", 0755);
	err = NULL;
	cr_expect_eq(config_install_require(c, present, "the helper binary", "CHAT2SBX_HELPER_PATH", &err), 0);
	cr_expect_null(err);
	config_free(c);
}

/* A file of chat2sbx's own that another local user could have swapped is
 * refused, through any component of its real path (issue 25: the helper is
 * copied into every sandbox, the template script runs on the host). */
Test(config, install_files_others_could_write_are_refused)
{
	char dir[160], file[200], link[200];
	snprintf(dir, sizeof(dir), "%s/lib", tmp);
	cr_assert_eq(mkdir(dir, 0755), 0);
	snprintf(file, sizeof(file), "%s/chat2sbx-helper", dir);
	write_file(file, "x", 0755);
	struct config *c = load_dirs(dir, tmp);
	char *path = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(config_install_path(c, CONFIG_DIR_LIB, "chat2sbx-helper", "the helper binary", &path, &err), 0,
	             "%s", err ? err->message : "");
	free(path);

	/* Its folder writable by everyone: anyone could have put it there. */
	cr_assert_eq(chmod(dir, 0777), 0);
	path = NULL;
	cr_expect_eq(config_install_path(c, CONFIG_DIR_LIB, "chat2sbx-helper", "the helper binary", &path, &err), -1);
	cr_expect_null(path);
	cr_assert_not_null(err);
	cr_expect_eq(err->code, CP_ERR_DENIED);
	cr_expect(strstr(err->message, dir) && strstr(err->message, "mode 0777") &&
	              strstr(err->message, "can be written by others"),
	          "%s", err->message);
	cp_error_free(err);
	err = NULL;
	cr_expect_eq(config_install_require(c, file, "the helper binary", "CHAT2SBX_HELPER_PATH", &err), -1);
	cr_expect(err && err->code == CP_ERR_DENIED, "%s", err ? err->message : "");
	cp_error_free(err);

	/* Sticky, as /tmp: no one else can replace what it holds. */
	cr_assert_eq(chmod(dir, 01777), 0);
	err = NULL;
	cr_expect_eq(config_install_require(c, file, "the helper binary", "CHAT2SBX_HELPER_PATH", &err), 0, "%s",
	             err ? err->message : "");
	cr_assert_eq(chmod(dir, 0755), 0);

	/* The file itself writable by others. */
	cr_assert_eq(chmod(file, 0757), 0);
	err = NULL;
	cr_expect_eq(config_install_require(c, file, "the helper binary", "CHAT2SBX_HELPER_PATH", &err), -1);
	cr_expect(err && strstr(err->message, "mode 0757"), "%s", err ? err->message : "");
	cp_error_free(err);
	cr_assert_eq(chmod(file, 0755), 0);

	/* A link from a trusted place to a file in an open folder: judged by
	 * where it leads. */
	char open_dir[160], planted[200];
	snprintf(open_dir, sizeof(open_dir), "%s/open", tmp);
	cr_assert_eq(mkdir(open_dir, 0755), 0);
	cr_assert_eq(chmod(open_dir, 0777), 0);
	snprintf(planted, sizeof(planted), "%s/helper", open_dir);
	write_file(planted, "x", 0755);
	snprintf(link, sizeof(link), "%s/linked-helper", dir);
	cr_assert_eq(symlink(planted, link), 0);
	err = NULL;
	cr_expect_eq(config_install_require(c, link, "the helper binary", "CHAT2SBX_HELPER_PATH", &err), -1);
	cr_expect(err && strstr(err->message, open_dir), "%s", err ? err->message : "");
	cp_error_free(err);

	/* Owned by another user, or group-writable for a shared group (root
	 * can make both here; the groups root, staff and a user's private group
	 * are harmless). */
	if (geteuid() == 0) {
		cr_assert_eq(chown(file, 65534, 65534), 0);
		err = NULL;
		cr_expect_eq(config_install_require(c, file, "the helper binary", "CHAT2SBX_HELPER_PATH", &err), -1);
		cr_expect(err && strstr(err->message, "owner uid 65534") &&
		              strstr(err->message, "belongs to another user"),
		          "%s", err ? err->message : "");
		cp_error_free(err);
		cr_assert_eq(chown(file, 0, 65534), 0);
		cr_assert_eq(chmod(file, 0775), 0);
		err = NULL;
		cr_expect_eq(config_install_require(c, file, "the helper binary", "CHAT2SBX_HELPER_PATH", &err), -1,
		             "group nogroup may write it");
		cp_error_free(err);
		cr_assert_eq(chown(file, 0, 0), 0);
		/* A link another user owns, even to the right file: they could
		 * point it elsewhere after the check. */
		char theirs[200];
		snprintf(theirs, sizeof(theirs), "%s/their-link", dir);
		cr_assert_eq(symlink(file, theirs), 0);
		cr_assert_eq(lchown(theirs, 65534, 65534), 0);
		err = NULL;
		cr_expect_eq(config_install_require(c, theirs, "the helper binary", "CHAT2SBX_HELPER_PATH", &err), -1);
		cr_expect(err && strstr(err->message, theirs) && strstr(err->message, "belongs to another user"), "%s",
		          err ? err->message : "");
		cp_error_free(err);
		cr_assert_eq(chmod(file, 0775), 0);
		err = NULL;
		cr_expect_eq(config_install_require(c, file, "the helper binary", "CHAT2SBX_HELPER_PATH", &err), 0,
		             "%s", err ? err->message : "");
	}
	config_free(c);
}

/* A unit or `env -i` starts serve without HOME: "~/" is then the home the
 * password database gives this uid, never another user's (/root). */
Test(config_env, home_unset_or_empty_is_the_password_database_home)
{
	struct passwd *pw = getpwuid(getuid());
	cr_assert_not_null(pw);
	const char *was = getenv("HOME");
	char *saved = was ? strdup(was) : NULL;
	unsetenv("HOME");
	struct config_env env = config_env_process();
	cr_expect_str_eq(env.home, pw->pw_dir && *pw->pw_dir ? pw->pw_dir : "/");
	setenv("HOME", "", 1);
	env = config_env_process();
	cr_expect_str_eq(env.home, pw->pw_dir && *pw->pw_dir ? pw->pw_dir : "/");
	setenv("HOME", "/home/someone", 1);
	env = config_env_process();
	cr_expect_str_eq(env.home, "/home/someone", "a set HOME wins");
	if (saved)
		setenv("HOME", saved, 1);
	else
		unsetenv("HOME");
	free(saved);
}
