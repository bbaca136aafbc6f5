/* test_ops.c: the pure decisions of doctor and status (ops/checks.c):
 * capability masks, mount tables, readiness and its exit status; the
 * loopback check of the HTTP probe; serve.json and tunnel.json round trips
 * in a temporary directory. */
#include <criterion/criterion.h>
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
	cr_assert_eq(ops_http_probe("GET", "http://192.0.2.1/", NULL, 100, &st, NULL, &e), -1);
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
	cr_assert_eq(ops_serve_state_write(dir, "http://127.0.0.1:5/mcp", 1, &e), 0);
	cr_assert_eq(ops_serve_state_read(dir, &s, &e), 0);
	cr_assert_eq(s.pid, getpid());
	cr_assert_str_eq(s.endpoint, "http://127.0.0.1:5/mcp");
	cr_assert_str_eq(s.version, CHAT2SBX_VERSION);
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
