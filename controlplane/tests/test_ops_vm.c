/* test_ops_vm.c: the doctor's pure judgments for vm probes
 * (ops/isolation_vm.c, issue 15): QEMU's /proc status, the listening ports
 * of /proc/net/tcp and the process limit among a cgroup's ancestors. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "../ops/ops.h"

static const char qemu_ok[] = "Name:\tqemu-system-x86\nUmask:\t0022\nState:\tS (sleeping)\nPid:\t17\nPPid:\t1\n"
                              "Uid:\t64099\t64099\t64099\t64099\nGid:\t64099\t64099\t64099\t64099\n"
                              "CapInh:\t0000000000000000\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\n"
                              "NoNewPrivs:\t1\nSeccomp:\t2\nSeccomp_filters:\t2\n";

static const char syscalls_ok[] =
    "{\"io_uring_setup\":\"refused: Function not implemented\",\"openat2\":\"refused: Function not implemented\"}";

static void judge_variant(const char *from, const char *to, const char *expect)
{
	char status[1024], buf[256];
	const char *at = strstr(qemu_ok, from);
	cr_assert(at, "the fixture has '%s'", from);
	snprintf(status, sizeof(status), "%.*s%s%s", (int)(at - qemu_ok), qemu_ok, to, at + strlen(from));
	cr_expect_eq(ops_vm_qemu_judge(status, syscalls_ok, buf, sizeof(buf)), -1, "%s", status);
	cr_expect(strstr(buf, expect), "'%s' says '%s'", buf, expect);
}

Test(ops_vm, qemu_must_run_unprivileged)
{
	char buf[256];
	cr_expect_eq(ops_vm_qemu_judge(qemu_ok, syscalls_ok, buf, sizeof(buf)), 0, "%s", buf);
	cr_expect(strstr(buf, "uid 64099"));
	cr_expect(strstr(buf, "io_uring_setup refused: Function not implemented"), "%s", buf);
	judge_variant("Uid:\t64099\t64099", "Uid:\t0\t0", "root");
	judge_variant("Uid:\t64099\t64099", "Uid:\t64099\t0", "root");
	judge_variant("CapEff:\t0000000000000000", "CapEff:\t0000000000200000", "capabilities");
	judge_variant("NoNewPrivs:\t1", "NoNewPrivs:\t0", "no-new-privileges");
	judge_variant("Seccomp:\t2", "Seccomp:\t0", "seccomp");
	cr_expect_eq(ops_vm_qemu_judge("", syscalls_ok, buf, sizeof(buf)), -1, "no QEMU found");
	cr_expect(strstr(buf, "no QEMU"));
}

/* io_uring and openat2 act on files past seccomp's view of mode bits: a
 * container whose filter lets either through fails, as does one that gave
 * no answer at all. */
Test(ops_vm, qemu_container_must_refuse_io_uring_and_openat2)
{
	char buf[1024];
	cr_expect_eq(
	    ops_vm_qemu_judge(qemu_ok, "{\"io_uring_setup\":\"ok\",\"openat2\":\"refused: x\"}", buf, sizeof(buf)), -1);
	cr_expect(strstr(buf, "io_uring_setup is not refused"), "%s", buf);
	cr_expect_eq(
	    ops_vm_qemu_judge(qemu_ok, "{\"io_uring_setup\":\"refused: x\",\"openat2\":\"ok\"}", buf, sizeof(buf)), -1);
	cr_expect(strstr(buf, "openat2 is not refused"), "%s", buf);
	cr_expect_eq(ops_vm_qemu_judge(qemu_ok, NULL, buf, sizeof(buf)), -1);
	cr_expect(strstr(buf, "no syscalls line"), "%s", buf);
	cr_expect_eq(ops_vm_qemu_judge(qemu_ok, "", buf, sizeof(buf)), -1);
}

Test(ops_vm, tcp_listeners_from_proc_net_tcp)
{
	static const char tcp[] =
	    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	    "   0: 00000000:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000 64099        0 1 1\n"
	    "   1: 0100007F:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1\n"
	    "   2: 0100007F:9C40 0100007F:1F40 01 00000000:00000000 00:00000000 00000000     0        0 3 1\n"
	    "  sl  local_address                         remote_address                        st tx_queue\n"
	    "   0: 00000000000000000000000000000000:1F40 00000000000000000000000000000000:0000 0A 00000000\n";
	int ports[8];
	size_t n = ops_tcp_listeners(tcp, ports, 8);
	cr_assert_eq(n, 2, "8000 and 22 listen; an established socket does not; 8000 once");
	cr_expect_eq(ports[0], 8000);
	cr_expect_eq(ports[1], 22);
	cr_expect_eq(ops_tcp_listeners(tcp, ports, 1), 1, "bounded by max");
	cr_expect_eq(ops_tcp_listeners("", ports, 8), 0);
}

Test(ops_vm, pids_limit_is_the_smallest_among_ancestors)
{
	cr_expect_eq(ops_pids_limit("max\n4096\nnone\n"), 4096, "a vm guest: sandbox/init max, sandbox 4096");
	cr_expect_eq(ops_pids_limit("2048\nnone\n"), 2048, "a container: its own cgroup");
	cr_expect_eq(ops_pids_limit("8192\n1024\n"), 1024);
	cr_expect_eq(ops_pids_limit("max\nnone\n"), -1, "no limit anywhere");
	cr_expect_eq(ops_pids_limit("12abc\n0\n-5\n"), -1, "not numbers, zero and negatives are no limit");
	cr_expect_eq(ops_pids_limit(""), -1);
}
