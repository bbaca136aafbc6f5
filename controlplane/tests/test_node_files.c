/* test_node_files.c: a node's TLS files under STATE_DIR/nodes/<name>/ (issue
 * 28, node/files.c): copied 0600 into 0700 directories; a symbolic link on
 * the way refused and never written through; sources that are not small
 * regular files refused naming the option; a failed install and a removal
 * leave nothing; node add refuses bad names and plain TCP before it touches
 * a file. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "node/node.h"

static char dir[64], state[128], src[128];

static void put(const char *name, const char *text)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", src, name);
	FILE *f = fopen(p, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
}

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/c2s-nodefiles-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(state, sizeof(state), "%s/state", dir);
	snprintf(src, sizeof(src), "%s/src", dir);
	cr_assert_eq(mkdir(state, 0700), 0);
	cr_assert_eq(mkdir(src, 0755), 0);
	put("ca.pem", "-----BEGIN CERTIFICATE-----\nca\n");
	put("cert.pem", "-----BEGIN CERTIFICATE-----\ncert\n");
	put("key.pem", "-----BEGIN PRIVATE KEY-----\nkey\n");
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(node_files, .init = setup, .fini = teardown);

static struct docker_tls_files sources(char paths[3][256])
{
	snprintf(paths[0], 256, "%s/ca.pem", src);
	snprintf(paths[1], 256, "%s/cert.pem", src);
	snprintf(paths[2], 256, "%s/key.pem", src);
	return (struct docker_tls_files){paths[0], paths[1], paths[2]};
}

static mode_t mode_of(const char *path)
{
	struct stat st;
	cr_assert_eq(lstat(path, &st), 0, "%s", path);
	return st.st_mode & 07777;
}

Test(node_files, copies_are_0600_in_0700_directories_and_removed_whole)
{
	char paths[3][256];
	struct docker_tls_files tls = sources(paths);
	char *ca = NULL, *cert = NULL, *key = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(node_files_install(state, "n1", &tls, &ca, &cert, &key, &err), 0, "%s", err ? err->message : "");
	char want[256];
	snprintf(want, sizeof(want), "%s/nodes/n1/key.pem", state);
	cr_expect_str_eq(key, want);
	cr_expect_eq(mode_of(key), 0600);
	cr_expect_eq(mode_of(ca), 0600);
	cr_expect_eq(mode_of(cert), 0600);
	snprintf(want, sizeof(want), "%s/nodes/n1", state);
	cr_expect_eq(mode_of(want), 0700);
	snprintf(want, sizeof(want), "%s/nodes", state);
	cr_expect_eq(mode_of(want), 0700);
	char buf[64] = "";
	FILE *f = fopen(key, "r");
	cr_assert_not_null(f);
	cr_expect_gt(fread(buf, 1, sizeof(buf) - 1, f), 0);
	fclose(f);
	cr_expect_str_eq(buf, "-----BEGIN PRIVATE KEY-----\nkey\n");

	/* Again over what an interrupted add left: emptied first, not refused. */
	free(ca), free(cert), free(key);
	cr_assert_eq(node_files_install(state, "n1", &tls, &ca, &cert, &key, &err), 0, "%s", err ? err->message : "");
	free(ca), free(cert), free(key);

	cr_assert_eq(node_files_remove(state, "n1", &err), 0, "%s", err ? err->message : "");
	snprintf(want, sizeof(want), "%s/nodes/n1", state);
	cr_expect_eq(access(want, F_OK), -1, "the directory is gone");
	cr_assert_eq(node_files_remove(state, "n1", &err), 0, "removing what is gone is no error");
}

Test(node_files, a_symbolic_link_on_the_way_is_refused_not_followed)
{
	char paths[3][256], elsewhere[128], link[192];
	struct docker_tls_files tls = sources(paths);
	snprintf(elsewhere, sizeof(elsewhere), "%s/elsewhere", dir);
	cr_assert_eq(mkdir(elsewhere, 0700), 0);
	snprintf(link, sizeof(link), "%s/nodes", state);
	cr_assert_eq(symlink(elsewhere, link), 0);
	char *ca = NULL, *cert = NULL, *key = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(node_files_install(state, "n1", &tls, &ca, &cert, &key, &err), -1);
	cr_expect_eq(err->code, CP_ERR_UNAVAILABLE);
	cr_expect(strstr(err->message, "symbolic link") != NULL, "%s", err->message);
	cr_expect_null(key);
	cp_error_freep(&err);
	char inside[256];
	snprintf(inside, sizeof(inside), "%s/n1", elsewhere);
	cr_expect_eq(access(inside, F_OK), -1, "nothing written through the link");

	/* A link in place of a file of the node's own directory. */
	cr_assert_eq(unlink(link), 0);
	snprintf(link, sizeof(link), "%s/nodes", state);
	cr_assert_eq(mkdir(link, 0700), 0);
	snprintf(link, sizeof(link), "%s/nodes/n2", state);
	cr_assert_eq(mkdir(link, 0700), 0);
	snprintf(link, sizeof(link), "%s/nodes/n2/ca.pem", state);
	snprintf(inside, sizeof(inside), "%s/planted", elsewhere);
	cr_assert_eq(symlink(inside, link), 0);
	cr_assert_eq(node_files_install(state, "n2", &tls, &ca, &cert, &key, &err), 0,
	             "the planted link is removed, not followed: %s", err ? err->message : "");
	cr_expect_eq(access(inside, F_OK), -1, "nothing written through the link");
	cr_expect_eq(mode_of(ca), 0600);
	free(ca), free(cert), free(key);
}

Test(node_files, sources_must_be_small_regular_files_and_a_failure_leaves_nothing)
{
	char paths[3][256];
	struct docker_tls_files tls = sources(paths);
	struct {
		int which;
		const char *path, *option;
	} rows[] = {{2, "/nonexistent/key.pem", "--tls-key"}, {0, "/tmp", "--tls-ca"}, {1, "", "--tls-cert"}};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct docker_tls_files t = tls;
		const char **slot = rows[i].which == 0 ? &t.ca : rows[i].which == 1 ? &t.cert : &t.key;
		*slot = rows[i].path;
		char *ca = NULL, *cert = NULL, *key = NULL;
		struct cp_error *err = NULL;
		cr_assert_eq(node_files_install(state, "n1", &t, &ca, &cert, &key, &err), -1);
		cr_expect_eq(err->code, CP_ERR_INVALID_ARGUMENT);
		cr_expect(strstr(err->message, rows[i].option) != NULL, "%s", err->message);
		cp_error_freep(&err);
		char d[256];
		snprintf(d, sizeof(d), "%s/nodes/n1", state);
		cr_expect_eq(access(d, F_OK), -1, "row %zu left %s", i, d);
	}
	/* Too big to be a certificate. */
	char big[256];
	snprintf(big, sizeof(big), "%s/big.pem", src);
	int fd = open(big, O_WRONLY | O_CREAT, 0600);
	cr_assert_eq(ftruncate(fd, NODE_TLS_FILE_MAX + 1), 0);
	close(fd);
	tls.cert = big;
	char *ca = NULL, *cert = NULL, *key = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(node_files_install(state, "n1", &tls, &ca, &cert, &key, &err), -1);
	cr_expect(strstr(err->message, "--tls-cert") != NULL, "%s", err->message);
	cp_error_freep(&err);
}

Test(node_files, add_refuses_bad_names_and_plain_tcp_before_any_file)
{
	char paths[3][256];
	struct docker_tls_files tls = sources(paths), none = {0};
	char db[192];
	snprintf(db, sizeof(db), "%s/reg.sqlite", state);
	struct store *store = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(store_open(db, &store, &err), 0);
	struct config cfg = {.state_dir = state};
	struct node_record n = {0};
	cr_assert_eq(node_add(&cfg, store, "Bad", "tcp://10.0.0.2:2376", &tls, NULL, 1, &n, &err), -1);
	cr_expect_eq(err->code, CP_ERR_INVALID_ARGUMENT);
	cp_error_freep(&err);
	cr_assert_eq(node_add(&cfg, store, "n1", "tcp://10.0.0.2:2376", &none, NULL, 1, &n, &err), -1);
	cr_expect(strstr(err->message, "plain TCP without TLS is refused") != NULL, "%s", err->message);
	cp_error_freep(&err);
	/* An engine that does not answer: no row, no files. */
	cr_assert_eq(node_add(&cfg, store, "n1", "tcp://127.0.0.1:1", &tls, NULL, 1, &n, &err), -1);
	cr_expect(strstr(err->message, "add node 'n1'") == err->message, "%s", err->message);
	cp_error_freep(&err);
	char d[256];
	snprintf(d, sizeof(d), "%s/nodes/n1", state);
	cr_expect_eq(access(d, F_OK), -1, "no files left");
	cr_assert_eq(store_node_get(store, "n1", &n, &err), -1);
	cr_expect_eq(err->code, CP_ERR_NOT_FOUND);
	cp_error_freep(&err);
	store_free(store);
}
