/* test_ops.c: the pure decisions of doctor and status (ops/checks.c):
 * capability masks, mount tables, readiness and its exit status; the
 * loopback check of the HTTP probe; serve.json and tunnel.json round trips
 * in a temporary directory. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <sys/xattr.h>
#include <dirent.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ops/ops.h"

Test(ops, capabilities_parse_reads_capeff)
{
	uint64_t m = 0;
	cr_assert_eq(ops_capabilities_parse("Name:\tcat\nCapInh:\t0000000000000000\nCapEff:\t00000000a80425fb\n"
	                                    "CapBnd:\t00000000a80425fb\n",
	                                    &m),
	             0);
	cr_assert_eq(m, 0xa80425fbULL);
	cr_assert_eq(ops_capabilities_parse("CapPrm:\t0\n", &m), -1, "no CapEff line");
	cr_assert_eq(ops_capabilities_parse("CapEff:\tzz\n", &m), -1, "not hex");
	cr_assert_eq(ops_capabilities_parse(NULL, &m), -1);
}

Test(ops, docker_default_capabilities_are_not_dangerous)
{
	/* The engine's default set (CHOWN DAC_OVERRIDE FOWNER FSETID KILL SETGID
	 * SETUID SETPCAP NET_BIND_SERVICE NET_RAW SYS_CHROOT MKNOD AUDIT_WRITE
	 * SETFCAP) = 0xa80425fb. */
	char buf[256];
	cr_assert_eq(ops_capabilities_dangerous(0xa80425fbULL, buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "");
}

Test(ops, dangerous_capabilities_are_named)
{
	char buf[256];
	uint64_t m = (1ULL << 21) | (1ULL << 12) | (1ULL << 0);
	cr_assert_eq(ops_capabilities_dangerous(m, buf, sizeof(buf)), 2);
	cr_assert_str_eq(buf, "CAP_NET_ADMIN,CAP_SYS_ADMIN");
	/* privileged: every capability */
	cr_assert_geq(ops_capabilities_dangerous(0x000001ffffffffffULL, buf, sizeof(buf)), 14);
	cr_assert(strstr(buf, "CAP_SYS_MODULE") && strstr(buf, "CAP_SYS_PTRACE") && strstr(buf, "CAP_BPF"));
	/* a small buffer is cut, still terminated */
	char small[8];
	cr_assert_eq(ops_capabilities_dangerous(m, small, sizeof(small)), 2);
	cr_assert_eq(strlen(small), 7);
}

static const char mounts_clean[] =
    "600 500 0:50 / / rw,relatime - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/X\n"
    "601 600 0:53 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw\n"
    "602 600 0:54 / /dev rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755\n"
    "610 600 8:1 /tmp/e2e/data/workspaces/ws_abc /workspace rw,relatime - ext4 /dev/sda1 rw\n"
    "611 600 8:1 /root/.local/bin/chat2sbx-helper /.chat2sbx/helper ro,relatime - ext4 /dev/sda1 rw\n"
    "612 600 8:1 /var/lib/docker/containers/abc/resolv.conf /etc/resolv.conf rw - ext4 /dev/sda1 rw\n";

Test(ops, mountinfo_without_socket_or_credentials_passes)
{
	char buf[512];
	cr_assert_eq(ops_mountinfo_find_socket(mounts_clean, "docker.sock", buf, sizeof(buf)), 0);
	cr_assert_eq(ops_mountinfo_find_credentials(mounts_clean, "/root", "/.chat2sbx/helper", buf, sizeof(buf)), 0,
	             "the helper file under ~/.local is ours: %s", buf);
}

Test(ops, mountinfo_finds_the_engine_socket)
{
	char buf[512];
	char text[2048];
	snprintf(text, sizeof(text), "%s%s", mounts_clean,
	         "700 600 0:25 /docker.sock /var/run/docker.sock rw,nosuid - tmpfs tmpfs rw\n");
	cr_assert_eq(ops_mountinfo_find_socket(text, "docker.sock", buf, sizeof(buf)), 1);
	cr_assert(strstr(buf, "/var/run/docker.sock"), "%s", buf);
	/* a socket with another name, mounted elsewhere */
	cr_assert_eq(
	    ops_mountinfo_find_socket("1 0 0:1 /engine.sock /tmp/e rw - tmpfs t rw\n", "engine.sock", buf, sizeof(buf)),
	    1);
	cr_assert_eq(ops_mountinfo_find_socket("1 0 0:1 /engine.sock /tmp/e rw - tmpfs t rw\n", NULL, buf, sizeof(buf)),
	             0);
}

Test(ops, mountinfo_finds_credentials_and_home)
{
	char buf[512];
	cr_assert_eq(ops_mountinfo_find_credentials("1 0 8:1 /root/.ssh /mnt/keys rw - ext4 /dev/sda1 rw\n", "/root",
	                                            "/.chat2sbx/helper", buf, sizeof(buf)),
	             1);
	cr_assert(strstr(buf, "/mnt/keys"), "%s", buf);
	cr_assert_eq(ops_mountinfo_find_credentials("1 0 8:1 /srv/x /home/u/.aws rw - ext4 /dev/sda1 rw\n", NULL, NULL,
	                                            buf, sizeof(buf)),
	             1, "a credential name as the mount point counts too");
	cr_assert_eq(ops_mountinfo_find_credentials("1 0 8:1 /home/u /host rw - ext4 /dev/sda1 rw\n", "/home/u", NULL,
	                                            buf, sizeof(buf)),
	             1);
	cr_assert(strstr(buf, "host home"), "%s", buf);
	cr_assert_eq(ops_mountinfo_find_credentials("1 0 8:1 /home/u/.sshx /w rw - ext4 /dev/sda1 rw\n", "/home/u",
	                                            NULL, buf, sizeof(buf)),
	             0, ".sshx is not .ssh");
}

Test(ops, readiness_exit_status)
{
	struct ops_readiness all = {.service_up = 1, .mcp_answering = 1, .engine_up = 1, .template_present = 1};
	const char *why = "x";
	cr_assert_eq(ops_readiness_exit_status(&all, &why), 0);
	cr_assert_null(why);

	struct ops_readiness r = all;
	r.service_up = 0;
	cr_assert_eq(ops_readiness_exit_status(&r, &why), OPS_EXIT_NOT_READY);
	cr_assert(strstr(why, "service"));
	r = all;
	r.mcp_answering = 0;
	cr_assert_eq(ops_readiness_exit_status(&r, &why), OPS_EXIT_NOT_READY);
	r = all;
	r.engine_up = 0;
	cr_assert_eq(ops_readiness_exit_status(&r, &why), OPS_EXIT_NOT_READY);
	cr_assert(strstr(why, "Engine"));
	r = all;
	r.template_present = 0;
	cr_assert_eq(ops_readiness_exit_status(&r, &why), OPS_EXIT_NOT_READY);
	cr_assert(strstr(why, "template"));
	r = all;
	r.tunnel_enabled = 1;
	cr_assert_eq(ops_readiness_exit_status(&r, &why), OPS_EXIT_NOT_READY, "enabled, not ready");
	cr_assert(strstr(why, "tunnel"));
	r.tunnel_ready = 1;
	cr_assert_eq(ops_readiness_exit_status(&r, NULL), 0);
	r = all;
	r.tunnel_ready = 0; /* disabled: its readiness does not matter */
	cr_assert_eq(ops_readiness_exit_status(&r, NULL), 0);
	r = all;
	r.firewall_missing = 1;
	cr_assert_eq(ops_readiness_exit_status(&r, &why), OPS_EXIT_NOT_READY, "the firewall is not in place");
	cr_assert(strstr(why, "firewall"));
	r = all;
	r.service_up = 0;
	r.engine_denied = 1;
	cr_assert_eq(ops_readiness_exit_status(&r, &why), OPS_EXIT_NOT_READY);
	cr_expect(strstr(why, "may not use the Docker Engine's socket"), "the socket's right comes first: %s", why);
}

Test(ops, only_loopback_urls_are_probed)
{
	cr_assert(ops_url_is_loopback("http://127.0.0.1:18788/mcp"));
	cr_assert(ops_url_is_loopback("http://localhost:1/readyz"));
	cr_assert(ops_url_is_loopback("http://[::1]:8/x"));
	cr_assert(!ops_url_is_loopback("http://10.0.0.1:18788/mcp"));
	cr_assert(!ops_url_is_loopback("https://127.0.0.1/mcp"));
	cr_assert(!ops_url_is_loopback("http://127.0.0.1.example:80/"));
	cr_assert(!ops_url_is_loopback(NULL));
	long st = 0;
	struct cp_error *e = NULL;
	cr_assert_eq(
	    ops_http_probe(&(struct ops_http_request){.method = "GET", .url = "http://192.0.2.1/", .timeout_ms = 100},
	                   &st, NULL, &e),
	    -1);
	cr_assert_eq(e->code, CP_ERR_INVALID_ARGUMENT);
	cp_error_free(e);
}

Test(ops, serve_state_round_trip)
{
	char dir[] = "/tmp/test-ops-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	struct cp_error *e = NULL;
	struct ops_serve_state s = {0};
	cr_assert_eq(ops_serve_state_read(dir, &s, &e), -1);
	cr_assert_eq(e->code, CP_ERR_NOT_FOUND);
	cp_error_free(e);
	e = NULL;
	cr_assert_eq(ops_serve_state_write(dir,
	                                   &(struct ops_serve_state){.endpoint = "http://127.0.0.1:5/mcp",
	                                                             .socket = "/s/mcp.sock",
	                                                             .token_file = "/s/token",
	                                                             .token_required = 1,
	                                                             .tunnel_enabled = 1},
	                                   &e),
	             0);
	cr_assert_eq(ops_serve_state_read(dir, &s, &e), 0);
	cr_assert_eq(s.pid, getpid());
	cr_assert_str_eq(s.endpoint, "http://127.0.0.1:5/mcp");
	cr_assert_str_eq(s.version, CHAT2SBX_VERSION);
	cr_assert_str_eq(s.socket, "/s/mcp.sock");
	cr_assert_str_eq(s.token_file, "/s/token");
	cr_assert(s.token_required);
	cr_assert(s.tunnel_enabled && s.started_at_ms > 0);
	cr_assert(ops_pid_alive(s.pid));
	ops_serve_state_clear(&s);
	ops_serve_state_remove(dir);
	char path[300];
	snprintf(path, sizeof(path), "%s/serve.json", dir);
	cr_assert_neq(access(path, F_OK), 0, "removed at clean exit");

	snprintf(path, sizeof(path), "%s/tunnel.json", dir);
	FILE *f = fopen(path, "w");
	fputs("{\"state\":\"backoff\",\"pid\":null,\"restarts\":3,\"health_url\":\"http://127.0.0.1:9\","
	      "\"last_exit\":\"exit status 1\",\"updated_at_ms\":5}",
	      f);
	fclose(f);
	struct ops_tunnel_state t = {0};
	cr_assert_eq(ops_tunnel_state_read(dir, &t, &e), 0);
	cr_assert_str_eq(t.state, "backoff");
	cr_assert_eq(t.pid, 0);
	cr_assert_eq(t.restarts, 3);
	cr_assert_str_eq(t.health_url, "http://127.0.0.1:9");
	cr_assert_str_eq(t.last_exit, "exit status 1");
	ops_tunnel_state_clear(&t);
	unlink(path);
	rmdir(dir);
}

/* ---- the MCP bearer token file (ops/token.c) ---- */

static void token_path_of(const char *dir, char *buf, size_t size)
{
	ops_mcp_token_path(dir, buf, size);
}

Test(ops, mcp_token_is_made_once_0600_and_read_back)
{
	char dir[] = "/tmp/test-ops-token-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char a[OPS_MCP_TOKEN_LEN + 1], b[OPS_MCP_TOKEN_LEN + 1];
	struct cp_error *e = NULL;
	cr_assert_eq(ops_mcp_token_read(dir, a, &e), -1);
	cr_assert_eq(e->code, CP_ERR_NOT_FOUND);
	cr_assert(strstr(e->message, "first start"), "%s", e->message);
	cp_error_freep(&e);
	int created = 0;
	cr_assert_eq(ops_mcp_token_ensure(dir, a, &created, &e), 0, "%s", e ? e->message : "");
	cr_assert(created);
	cr_assert_eq(strlen(a), OPS_MCP_TOKEN_LEN);
	cr_assert_eq(strspn(a, "0123456789abcdef"), OPS_MCP_TOKEN_LEN);
	char path[300];
	token_path_of(dir, path, sizeof(path));
	struct stat st;
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0600);
	cr_assert_eq(ops_mcp_token_ensure(dir, b, &created, &e), 0);
	cr_assert_not(created, "a second start keeps the token");
	cr_assert_str_eq(a, b);
	cr_assert_eq(ops_mcp_token_read(dir, b, &e), 0);
	cr_assert_str_eq(a, b);
	/* No temporary file is left beside it. */
	DIR *d = opendir(dir);
	int entries = 0;
	for (struct dirent *de; (de = readdir(d));)
		entries += de->d_name[0] != '.' || strncmp(de->d_name, ".token", 6) == 0;
	closedir(d);
	cr_assert_eq(entries, 1);
	/* Two fresh directories get different tokens. */
	char dir2[] = "/tmp/test-ops-token-XXXXXX";
	cr_assert_not_null(mkdtemp(dir2));
	cr_assert_eq(ops_mcp_token_ensure(dir2, b, NULL, &e), 0);
	cr_assert_str_neq(a, b);
	token_path_of(dir2, path, sizeof(path));
	unlink(path);
	rmdir(dir2);
	token_path_of(dir, path, sizeof(path));
	unlink(path);
	rmdir(dir);
}

Test(ops, mcp_token_file_others_can_read_or_that_is_not_a_token_is_refused)
{
	char dir[] = "/tmp/test-ops-token-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char path[300], t[OPS_MCP_TOKEN_LEN + 1];
	token_path_of(dir, path, sizeof(path));
	struct cp_error *e = NULL;
	cr_assert_eq(ops_mcp_token_ensure(dir, t, NULL, &e), 0);
	cr_assert_eq(chmod(path, 0644), 0);
	cr_assert_eq(ops_mcp_token_ensure(dir, t, NULL, &e), -1, "a readable token is not silently kept or replaced");
	cr_assert_eq(e->code, CP_ERR_DENIED);
	cr_assert(strstr(e->message, "0644"), "%s", e->message);
	cp_error_freep(&e);

	unlink(path);
	FILE *f = fopen(path, "w");
	fputs("not-a-token\n", f);
	fclose(f);
	chmod(path, 0600);
	cr_assert_eq(ops_mcp_token_read(dir, t, &e), -1);
	cr_assert_eq(e->code, CP_ERR_INVALID_ARGUMENT);
	cp_error_freep(&e);

	/* A symlink in its place (pointing at a file of the attacker's choice)
	 * is never followed. */
	unlink(path);
	char target[320];
	snprintf(target, sizeof(target), "%s/elsewhere", dir);
	f = fopen(target, "w");
	fputs("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n", f);
	fclose(f);
	chmod(target, 0600);
	cr_assert_eq(symlink(target, path), 0);
	cr_assert_eq(ops_mcp_token_read(dir, t, &e), -1);
	cr_assert_eq(e->code, CP_ERR_DENIED);
	cp_error_freep(&e);
	unlink(path);
	unlink(target);
	rmdir(dir);
}

/* ---- the host-files attack's judge (ops/attack_host_files.c) ---- */

static void touch(const char *dir, const char *name, mode_t mode)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600);
	cr_assert_geq(fd, 0, "create %s", p);
	close(fd);
	cr_assert_eq(chmod(p, mode), 0, "chmod %s %o", p, (unsigned)mode);
}

Test(ops, setid_scan_finds_setuid_setgid_and_capabilities_without_following_links)
{
	char dir[] = "/tmp/c2s-setid-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char sub[600], p[700], link[700];
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	cr_assert_eq(mkdir(sub, 0755), 0);
	touch(dir, "plain", 0755);
	touch(dir, "sticky", 01755);
	struct ops_setid_findings f = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(ops_setid_scan(dir, &f, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(f.found, 0, "%s", f.detail);
	cr_assert_eq(f.entries, 3);

	touch(sub, "suid", 04755);
	touch(dir, "sgid", 02755);
	/* A link to a setuid file elsewhere is not followed: the link itself is
	 * judged, and it has no such bit. */
	snprintf(p, sizeof(p), "%s/suid", sub);
	snprintf(link, sizeof(link), "%s/link", dir);
	cr_assert_eq(symlink(p, link), 0);
	cr_assert_eq(ops_setid_scan(dir, &f, &err), 0);
	cr_assert_eq(f.found, 2, "%s", f.detail);
	cr_assert_not_null(strstr(f.detail, "sub/suid (mode 4755)"), "%s", f.detail);
	cr_assert_not_null(strstr(f.detail, "sgid (mode 2755)"), "%s", f.detail);

	/* File capabilities (only root may set them; skipped otherwise). */
	snprintf(p, sizeof(p), "%s/plain", dir);
	static const unsigned char cap[20] = {0x01, 0, 0, 0x02, 0x80};
	if (setxattr(p, "security.capability", cap, sizeof(cap), 0) == 0) {
		cr_assert_eq(ops_setid_scan(dir, &f, &err), 0);
		cr_assert_eq(f.found, 3, "%s", f.detail);
		cr_assert_not_null(strstr(f.detail, "plain (file capabilities)"), "%s", f.detail);
	}

	/* A setgid directory counts, the scanned one included. */
	cr_assert_eq(chmod(sub, 02755), 0);
	cr_assert_eq(ops_setid_scan(sub, &f, &err), 0);
	cr_assert_eq(f.found, 2, "%s", f.detail);
	cr_assert_not_null(strstr(f.detail, ". (mode 2755)"), "%s", f.detail);

	cr_assert_lt(ops_setid_scan(link, &f, &err), 0, "a symlink is not opened as the directory");
	cr_assert_eq(err->code, CP_ERR_UNAVAILABLE);
	cp_error_free(err);

	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}
