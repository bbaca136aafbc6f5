/* test_tunnel.c: the tunnel's configuration check (each refusal names the
 * file and the fix), the restart backoff, and tunnel.json's content. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tunnel/tunnel.h"
#include "tunnel/tunnel_internal.h"

#define GOOD_ID "tunnel_0123456789abcdef0123456789abcdef"

static char tmp[64], client[128], secrets[128], id_path[160], key_path[160];
static struct config cfg;

static void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f, "open %s", path);
	fputs(text, f);
	fclose(f);
	cr_assert_eq(chmod(path, mode), 0);
}

static void setup(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/c2s-tunnel-XXXXXX");
	cr_assert_not_null(mkdtemp(tmp));
	snprintf(client, sizeof(client), "%s/tunnel-client", tmp);
	snprintf(secrets, sizeof(secrets), "%s/secrets", tmp);
	snprintf(id_path, sizeof(id_path), "%s/tunnel-id", secrets);
	snprintf(key_path, sizeof(key_path), "%s/key", secrets);
	cr_assert_eq(mkdir(secrets, 0700), 0);
	write_file(client, "#!/bin/sh\nexit 0\n", 0755);
	write_file(id_path, GOOD_ID "\n", 0600);
	write_file(key_path, "sk-test-key", 0600);
	cfg = (struct config){.enable_tunnel = 1, .tunnel_client = client, .secret_dir = secrets, .state_dir = tmp};
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(tunnel, .init = setup, .fini = teardown);

/* Asserts a refusal whose message contains each of the given pieces. */
static void assert_refused(const char *piece1, const char *piece2)
{
	struct cp_error *err = NULL;
	cr_assert_eq(tunnel_config_check(&cfg, &err), -1);
	cr_assert_not_null(err);
	cr_assert_eq(err->code, CP_ERR_UNAVAILABLE);
	cr_assert_not_null(strstr(err->message, piece1), "'%s' not in: %s", piece1, err->message);
	if (piece2)
		cr_assert_not_null(strstr(err->message, piece2), "'%s' not in: %s", piece2, err->message);
	cr_assert_not_null(strstr(err->message, "CHAT2SBX_ENABLE_TUNNEL=0"), "%s", err->message);
	cp_error_free(err);
}

Test(tunnel, accepts_a_good_configuration)
{
	struct cp_error *err = NULL;
	cr_assert_eq(tunnel_config_check(&cfg, &err), 0, "%s", err ? err->message : "");
	write_file(id_path, GOOD_ID, 0600); /* no trailing newline */
	write_file(key_path, "sk-test-key", 0400);
	cr_assert_eq(tunnel_config_check(&cfg, &err), 0, "%s", err ? err->message : "");
	char id[64];
	cr_assert_eq(tunnel_id_read(&cfg, id, sizeof(id), &err), 0);
	cr_assert_str_eq(id, GOOD_ID);
}

Test(tunnel, disabled_checks_nothing)
{
	cfg.enable_tunnel = 0;
	unlink(client);
	struct cp_error *err = NULL;
	cr_assert_eq(tunnel_config_check(&cfg, &err), 0);
}

Test(tunnel, client_missing)
{
	unlink(client);
	assert_refused(client, "does not exist");
}

Test(tunnel, client_not_executable)
{
	chmod(client, 0644);
	assert_refused(client, "chmod +x");
}

Test(tunnel, client_is_a_directory)
{
	unlink(client);
	cr_assert_eq(mkdir(client, 0755), 0);
	assert_refused(client, "not an executable file");
}

Test(tunnel, tunnel_id_missing)
{
	unlink(id_path);
	assert_refused(id_path, "cannot be read");
}

Test(tunnel, tunnel_id_malformed)
{
	static const char *bad[] = {
	    "",
	    "tunnel_0123456789abcdef0123456789abcde\n",   /* 31 hex */
	    "tunnel_0123456789abcdef0123456789abcdef0\n", /* 33 hex */
	    "tunnel_0123456789ABCDEF0123456789abcdef\n",  /* upper case */
	    "Tunnel_0123456789abcdef0123456789abcdef\n",
	    " tunnel_0123456789abcdef0123456789abcdef\n",
	    "tunnel_0123456789abcdef0123456789abcdef\n\n",
	    "tunnel_0123456789abcdef0123456789abcdef \n",
	    "sk-proj-this-is-a-key-pasted-in-the-wrong-file\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		write_file(id_path, bad[i], 0600);
		struct cp_error *err = NULL;
		cr_assert_eq(tunnel_config_check(&cfg, &err), -1, "accepted '%s'", bad[i]);
		cr_assert_not_null(strstr(err->message, id_path), "%s", err->message);
		cr_assert_not_null(strstr(err->message, "32 lowercase hexadecimal"), "%s", err->message);
		/* The content is never echoed (it may be a key in the wrong file). */
		cr_assert_null(strstr(err->message, "sk-proj"), "%s", err->message);
		cp_error_free(err);
	}
}

Test(tunnel, key_missing)
{
	unlink(key_path);
	assert_refused(key_path, "missing");
}

Test(tunnel, key_not_a_regular_file)
{
	unlink(key_path);
	cr_assert_eq(mkdir(key_path, 0700), 0);
	assert_refused(key_path, "not a regular file");
}

Test(tunnel, key_readable_or_writable_by_others)
{
	static const mode_t bad[] = {0644, 0640, 0604, 0660, 0606, 0700, 0610, 0200, 0000};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(chmod(key_path, bad[i]), 0);
		assert_refused(key_path, "chmod 600");
	}
}

Test(tunnel, key_empty)
{
	write_file(key_path, "", 0600);
	assert_refused(key_path, "empty");
}

Test(tunnel, key_owned_by_someone_else)
{
	if (getuid() != 0)
		cr_skip_test("needs root to give the key file away");
	cr_assert_eq(chown(key_path, 65534, 65534), 0);
	assert_refused(key_path, "chown");
}

Test(tunnel, key_content_never_in_messages)
{
	chmod(key_path, 0644);
	struct cp_error *err = NULL;
	cr_assert_eq(tunnel_config_check(&cfg, &err), -1);
	cr_assert_null(strstr(err->message, "sk-test-key"));
	cp_error_free(err);
}

Test(tunnel, backoff_doubles_and_is_capped)
{
	cr_assert_eq(tunnel_backoff_ms(0), 0);
	cr_assert_eq(tunnel_backoff_ms(1), 1000);
	cr_assert_eq(tunnel_backoff_ms(2), 2000);
	cr_assert_eq(tunnel_backoff_ms(3), 4000);
	cr_assert_eq(tunnel_backoff_ms(6), 32000);
	cr_assert_eq(tunnel_backoff_ms(7), 60000);
	cr_assert_eq(tunnel_backoff_ms(8), 60000);
	cr_assert_eq(tunnel_backoff_ms(1000), 60000);
	cr_assert_eq(tunnel_backoff_ms(~0u), 60000);
	for (unsigned f = 1; f < 64; f++)
		cr_assert_geq(tunnel_backoff_ms(f + 1), tunnel_backoff_ms(f));
}

Test(tunnel, state_file_is_private_json)
{
	struct tunnel_status st = {.state = TUNNEL_STATE_BACKOFF, .pid = 0, .restarts = 3, .updated_at_ms = 42};
	snprintf(st.health_url, sizeof(st.health_url), "http://127.0.0.1:4567");
	snprintf(st.last_exit, sizeof(st.last_exit), "exit status 1");
	tunnel_state_write(&cfg, &st);
	char path[160];
	snprintf(path, sizeof(path), "%s/tunnel.json", tmp);
	struct stat sb;
	cr_assert_eq(stat(path, &sb), 0);
	cr_assert_eq(sb.st_mode & 07777, 0600);
	struct json_object *o = json_object_from_file(path);
	cr_assert_not_null(o);
	struct json_object *v;
	cr_assert(json_object_object_get_ex(o, "state", &v));
	cr_assert_str_eq(json_object_get_string(v), "backoff");
	cr_assert(json_object_object_get_ex(o, "pid", &v));
	cr_assert_null(v);
	cr_assert(json_object_object_get_ex(o, "restarts", &v));
	cr_assert_eq(json_object_get_int(v), 3);
	cr_assert(json_object_object_get_ex(o, "health_url", &v));
	cr_assert_str_eq(json_object_get_string(v), "http://127.0.0.1:4567");
	cr_assert(json_object_object_get_ex(o, "last_exit", &v));
	cr_assert_str_eq(json_object_get_string(v), "exit status 1");
	cr_assert(json_object_object_get_ex(o, "updated_at_ms", &v));
	cr_assert_eq(json_object_get_int64(v), 42);
	json_object_put(o);

	tunnel_state_write_refused(&cfg, "the runtime key file is bad");
	o = json_object_from_file(path);
	cr_assert(json_object_object_get_ex(o, "state", &v));
	cr_assert_str_eq(json_object_get_string(v), "refused");
	cr_assert(json_object_object_get_ex(o, "health_url", &v));
	cr_assert_null(v);
	json_object_put(o);
}
