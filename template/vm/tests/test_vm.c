/* test_vm.c: the vm runtime's pure parts: the container's limits mapped
 * to QEMU (guest RAM, vCPUs, the translation cache), QEMU's command line
 * for each setting, the cgroup and /proc parsers, and the initramfs
 * archive read back as the kernel reads it. */
#include <criterion/criterion.h>
#include <sys/mount.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../src/vm.h"

#define MiB (1024LL * 1024)
#define GiB (1024 * MiB)

static struct vm_limits limits(int64_t ceiling, int64_t quota, int cpus)
{
	return (struct vm_limits){.memory_limit = ceiling,
	                          .host_memory = 24 * GiB,
	                          .cpu_quota_us = quota,
	                          .cpu_period_us = 100000,
	                          .host_cpus = cpus,
	                          .tsc_khz = 2095991};
}

Test(vm_plan, guest_gets_the_ceiling_less_qemus_overhead)
{
	struct vm_limits lim = limits(2 * GiB, -1, 2);
	struct vm_plan p;
	char err[256];
	cr_assert_eq(vm_plan_make(&lim, "tcg", &p, err, sizeof err), 0);
	cr_expect_eq(p.guest_mib, 2048 - VM_OVERHEAD_MIB - VM_TCG_TB_MIB);
	cr_expect_eq(p.tb_mib, VM_TCG_TB_MIB);
	cr_assert_eq(vm_plan_make(&lim, "kvm", &p, err, sizeof err), 0);
	cr_expect_eq(p.guest_mib, 2048 - VM_OVERHEAD_MIB, "no translation cache under KVM");
	cr_expect_eq(p.tb_mib, 0);
}

Test(vm_plan, guest_ram_is_whole_2mib_pages)
{
	struct vm_limits lim = limits(1 * GiB + 3 * MiB, -1, 2);
	struct vm_plan p;
	char err[256];
	cr_assert_eq(vm_plan_make(&lim, "kvm", &p, err, sizeof err), 0);
	cr_expect_eq(p.guest_mib % 2, 0);
	cr_expect_eq(p.guest_mib, 1024 + 2 - VM_OVERHEAD_MIB);
}

Test(vm_plan, no_ceiling_sizes_the_guest_from_the_host)
{
	struct vm_limits lim = limits(0, -1, 2);
	struct vm_plan p;
	char err[256];
	cr_assert_eq(vm_plan_make(&lim, "kvm", &p, err, sizeof err), 0);
	cr_expect_eq(p.guest_mib, 24 * 1024 - VM_OVERHEAD_MIB);
}

Test(vm_plan, a_ceiling_too_small_is_refused_with_the_minimum)
{
	struct vm_limits lim = limits(300 * MiB, -1, 2);
	struct vm_plan p = {.guest_mib = -7};
	char err[256] = "";
	cr_assert_eq(vm_plan_make(&lim, "tcg", &p, err, sizeof err), -1);
	cr_expect_eq(p.guest_mib, -7, "nothing set on failure");
	char want[64];
	snprintf(want, sizeof want, "\"%dm\"", VM_MIN_GUEST_MIB + VM_OVERHEAD_MIB + VM_TCG_TB_MIB);
	cr_expect(strstr(err, want), "the message names the smallest memory that works: %s", err);
	lim.memory_limit = (VM_MIN_GUEST_MIB + VM_OVERHEAD_MIB + VM_TCG_TB_MIB) * MiB;
	cr_expect_eq(vm_plan_make(&lim, "tcg", &p, err, sizeof err), 0, "that minimum boots");
	cr_expect_eq(p.guest_mib, VM_MIN_GUEST_MIB);
}

Test(vm_plan, vcpus_follow_the_cpu_quota)
{
	struct vm_plan p;
	char err[256];
	struct {
		int64_t quota;
		int host, want;
	} rows[] = {
	    {-1, 2, 2},                 /* no quota: every host CPU */
	    {50000, 2, 1},              /* 0.5 → 1 */
	    {100000, 2, 1},             /* 1 → 1 */
	    {150000, 2, 2},             /* 1.5 → 2 (rounded up) */
	    {900000, 2, 2},             /* more than the host: the host's */
	    {1, 8, 1},      {-1, 0, 1}, /* an unknown host count still boots */
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct vm_limits lim = limits(2 * GiB, rows[i].quota, rows[i].host);
		cr_assert_eq(vm_plan_make(&lim, "tcg", &p, err, sizeof err), 0);
		cr_expect_eq(p.smp, rows[i].want, "quota %lld on %d CPUs: %d vCPUs, got %d", (long long)rows[i].quota,
		             rows[i].host, rows[i].want, p.smp);
	}
}

/* Index of the argument after flag whose value contains part, or -1. */
static int find_arg(char **argv, const char *flag, const char *part)
{
	for (int i = 0; argv[i]; i++)
		if (!strcmp(argv[i], flag) && argv[i + 1] && strstr(argv[i + 1], part))
			return i + 1;
	return -1;
}

static char **argv_for(struct vm_config *cfg, const char *accel, int64_t ceiling)
{
	struct vm_limits lim = limits(ceiling, 150000, 2);
	struct vm_plan p;
	char err[256];
	cr_assert_eq(vm_plan_make(&lim, accel, &p, err, sizeof err), 0);
	cfg->accel = accel;
	char **argv = vm_qemu_argv(cfg, &lim, &p);
	cr_assert_not_null(argv);
	return argv;
}

Test(vm_argv, tcg_and_kvm_pick_their_accelerator_and_cpu)
{
	struct vm_config cfg = {.sandbox_id = "sbx_a", .workspace_mode = "managed", .network = 1, .docker = "demand"};
	char **a = argv_for(&cfg, "tcg", 2 * GiB);
	cr_expect_str_eq(a[0], VM_QEMU);
	cr_expect_geq(find_arg(a, "-accel", "tcg,thread=multi,tb-size=64"), 0);
	cr_expect_geq(find_arg(a, "-cpu", "max"), 0);
	cr_expect_geq(find_arg(a, "-m", "1824M"), 0);
	cr_expect_geq(find_arg(a, "-smp", "2"), 0);
	cr_expect_geq(find_arg(a, "-M", "microvm"), 0);
	cr_expect_geq(find_arg(a, "-sandbox", "on,"), 0, "QEMU's own seccomp filter is on");
	vm_argv_free(a);
	a = argv_for(&cfg, "kvm", 2 * GiB);
	int i = find_arg(a, "-accel", "kvm");
	cr_expect_geq(i, 0);
	cr_expect_str_eq(a[i], "kvm");
	cr_expect_geq(find_arg(a, "-cpu", "host"), 0);
	cr_expect_geq(find_arg(a, "-m", "1888M"), 0);
	vm_argv_free(a);
}

Test(vm_argv, kernel_command_line_carries_the_guest_settings)
{
	struct vm_config cfg = {
	    .sandbox_id = "sbx_b", .workspace_mode = "clone", .network = 0, .pids_limit = 300, .docker = "boot"};
	char **a = argv_for(&cfg, "tcg", 2 * GiB);
	int i = find_arg(a, "-append", "chat2sbx.");
	cr_assert_geq(i, 0);
	cr_expect(strstr(a[i], "chat2sbx.sandbox=sbx_b"));
	cr_expect(strstr(a[i], "chat2sbx.workspace=clone"));
	cr_expect(strstr(a[i], "chat2sbx.network=0"));
	cr_expect(strstr(a[i], "chat2sbx.pids=300"));
	cr_expect(strstr(a[i], "chat2sbx.docker=boot"));
	cr_expect(strstr(a[i], "tsc_early_khz=2095991 tsc=reliable"), "microvm has no other timer to calibrate with");
	cr_expect(strstr(a[i], "panic=-1") && strstr(a[i], "reboot=t"), "a crash or reboot ends QEMU");
	cr_expect(strstr(a[i], " quiet"));
	vm_argv_free(a);
	cfg.verbose = 1;
	a = argv_for(&cfg, "tcg", 2 * GiB);
	i = find_arg(a, "-append", "chat2sbx.");
	cr_expect(!strstr(a[i], " quiet"), "CHAT2SBX_VM_DEBUG shows the boot");
	vm_argv_free(a);
}

Test(vm_argv, workspace_modes_share_the_right_directory)
{
	struct vm_config cfg = {.sandbox_id = "sbx_c", .workspace_mode = "managed", .network = 1, .docker = "demand"};
	char **a = argv_for(&cfg, "tcg", 2 * GiB);
	int i = find_arg(a, "-fsdev", "path=" VM_WORKSPACE ",");
	cr_assert_geq(i, 0);
	cr_expect(strstr(a[i], "security_model=none"), "no root-owned or privileged files on the host");
	cr_expect(!strstr(a[i], "readonly"));
	cr_expect_geq(find_arg(a, "-device", "mount_tag=" VM_TAG_WORKSPACE), 0);
	vm_argv_free(a);
	cfg.workspace_mode = "clone";
	a = argv_for(&cfg, "tcg", 2 * GiB);
	i = find_arg(a, "-fsdev", "path=" VM_SOURCE ",");
	cr_assert_geq(i, 0, "clone shares the read-only source");
	cr_expect(strstr(a[i], "readonly=on"));
	cr_expect_lt(find_arg(a, "-fsdev", "path=" VM_WORKSPACE ","), 0, "and not /workspace (the guest's own disk)");
	vm_argv_free(a);
}

Test(vm_guest, workspace_mount_per_mode)
{
	struct vm_workspace_mount m;
	vm_workspace_mount_for("managed", &m);
	cr_expect_str_eq(m.target, VM_WORKSPACE);
	cr_expect_str_eq(m.tag, VM_TAG_WORKSPACE);
	cr_expect(strstr(m.options, "cache=loose"), "only the sandbox writes a managed workspace: cached");
	cr_expect(m.flags & MS_SYNCHRONOUS, "its writes reach the host before write(2) returns");
	cr_expect(!(m.flags & MS_RDONLY));
	vm_workspace_mount_for("direct", &m);
	cr_expect_str_eq(m.target, VM_WORKSPACE);
	cr_expect(strstr(m.options, "cache=none"), "the person edits a direct workspace: coherent");
	cr_expect(!(m.flags & MS_RDONLY));
	vm_workspace_mount_for("clone", &m);
	cr_expect_str_eq(m.target, VM_SOURCE);
	cr_expect_str_eq(m.tag, VM_TAG_SOURCE);
	cr_expect(strstr(m.options, "cache=none"));
	cr_expect(m.flags & MS_RDONLY, "clone's source is read-only");
	vm_workspace_mount_for("something-new", &m);
	cr_expect(strstr(m.options, "cache=none"), "an unknown mode gets the coherent mount");
	vm_workspace_mount_for(NULL, &m);
	cr_expect(strstr(m.options, "cache=none"));
	const char *modes[] = {"managed", "direct", "clone"};
	for (size_t i = 0; i < 3; i++) {
		vm_workspace_mount_for(modes[i], &m);
		cr_expect(m.flags & MS_NOSUID && m.flags & MS_NODEV, "%s: nosuid, nodev", modes[i]);
		cr_expect(strstr(m.options, "trans=virtio,version=9p2000.L"), "%s", modes[i]);
		cr_expect(strstr(m.options, "msize=512000"), "%s", modes[i]);
	}
}

Test(vm_argv, network_and_port_forwards)
{
	struct vm_config cfg = {.sandbox_id = "sbx_d",
	                        .workspace_mode = "direct",
	                        .network = 1,
	                        .docker = "demand",
	                        .ports = {8000, 3000},
	                        .n_ports = 2};
	char **a = argv_for(&cfg, "tcg", 2 * GiB);
	int i = find_arg(a, "-netdev", "user,");
	cr_assert_geq(i, 0);
	cr_expect(strstr(a[i], "hostfwd=tcp::8000-:8000"));
	cr_expect(strstr(a[i], "hostfwd=tcp::3000-:3000"));
	cr_expect(strstr(a[i], "ipv6=off"));
	vm_argv_free(a);
	cfg.network = 0;
	a = argv_for(&cfg, "tcg", 2 * GiB);
	cr_expect_lt(find_arg(a, "-netdev", ""), 0, "network off: no interface in the guest");
	cr_expect_lt(find_arg(a, "-device", "virtio-net"), 0);
	vm_argv_free(a);
}

Test(vm_argv, helper_port_is_qemus_stdio_and_memory_goes_back)
{
	struct vm_config cfg = {
	    .sandbox_id = "sbx_e", .workspace_mode = "managed", .network = 1, .docker = "demand", .console_fd = 7};
	char **a = argv_for(&cfg, "tcg", 2 * GiB);
	cr_expect_geq(find_arg(a, "-chardev", "stdio,id=helper"), 0);
	cr_expect_geq(find_arg(a, "-device", "virtserialport,chardev=helper,name=" VM_PORT_HELPER), 0);
	cr_expect_geq(find_arg(a, "-device", "name=" VM_PORT_CONTROL), 0);
	cr_expect_geq(find_arg(a, "-add-fd", "fd=7,"), 0, "the console goes to the fd given");
	cr_expect_geq(find_arg(a, "-device", "free-page-reporting=on"), 0);
	cr_expect_geq(find_arg(a, "-drive", VM_STATE_DIR "/root.qcow2"), 0);
	cr_expect_geq(find_arg(a, "-drive", VM_STATE_DIR "/docker.qcow2"), 0);
	vm_argv_free(a);
}

Test(vm_parse, memory_limits_v1_and_v2)
{
	int64_t v = -1;
	cr_expect_eq(vm_parse_memory_limit("max\n", &v), 0);
	cr_expect_eq(v, 0);
	cr_expect_eq(vm_parse_memory_limit("2147483648\n", &v), 0);
	cr_expect_eq(v, 2 * GiB);
	cr_expect_eq(vm_parse_memory_limit("9223372036854771712\n", &v), 0, "v1's unlimited");
	cr_expect_eq(v, 0);
	cr_expect_eq(vm_parse_memory_limit("", &v), -1);
	cr_expect_eq(vm_parse_memory_limit("12k\n", &v), -1);
	cr_expect_eq(vm_parse_memory_limit("-5\n", &v), -1);
	cr_expect_eq(vm_parse_memory_limit("maxi", &v), -1);
}

Test(vm_parse, cpu_quota)
{
	int64_t q = 0, p = 0;
	cr_expect_eq(vm_parse_cpu_max("max 100000\n", &q, &p), 0);
	cr_expect_eq(q, -1);
	cr_expect_eq(p, 100000);
	cr_expect_eq(vm_parse_cpu_max("150000 100000\n", &q, &p), 0);
	cr_expect_eq(q, 150000);
	cr_expect_eq(vm_parse_cpu_max("150000\n", &q, &p), -1, "no period");
	cr_expect_eq(vm_parse_cpu_max("x 100000\n", &q, &p), -1);
	cr_expect_eq(vm_parse_cpu_max("100 0\n", &q, &p), -1);
}

Test(vm_parse, meminfo_and_cpuinfo)
{
	int64_t v = 0;
	cr_expect_eq(vm_parse_meminfo_total("MemTotal:       24597636 kB\nMemFree: 1 kB\n", &v), 0);
	cr_expect_eq(v, 24597636LL * 1024);
	cr_expect_eq(vm_parse_meminfo_total("MemFree: 1 kB\n", &v), -1);
	cr_expect_eq(vm_parse_cpu_khz("processor\t: 0\ncpu MHz\t\t: 2095.991\ncache size: 1\n", &v), 0);
	cr_expect_eq(v, 2095991);
	cr_expect_eq(vm_parse_cpu_khz("processor\t: 0\n", &v), -1);
	cr_expect_eq(vm_parse_cpu_khz("cpu MHz\t\t: fast\n", &v), -1);
}

/* Reads one newc header at *off of buf; fills name and size and moves *off
 * past the (padded) name and data. */
static void read_entry(const char *buf, size_t len, size_t *off, char *name, size_t *size, unsigned *mode)
{
	cr_assert_leq(*off + 110, len);
	cr_assert(!memcmp(buf + *off, "070701", 6), "newc magic at %zu", *off);
	char field[9] = "";
	memcpy(field, buf + *off + 6 + 8, 8);
	*mode = (unsigned)strtoul(field, NULL, 16);
	memcpy(field, buf + *off + 6 + 6 * 8, 8);
	*size = strtoul(field, NULL, 16);
	memcpy(field, buf + *off + 6 + 11 * 8, 8);
	size_t namesize = strtoul(field, NULL, 16);
	memcpy(name, buf + *off + 110, namesize);
	cr_assert_eq(name[namesize - 1], '\0');
	*off += (110 + namesize + 3) & ~(size_t)3;
	*off += (*size + 3) & ~(size_t)3;
}

Test(vm_cpio, archive_reads_back_with_parents_and_trailer)
{
	char dir[] = "/tmp/test_vm_cpio.XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char src[300], out[300];
	snprintf(src, sizeof src, "%s/payload", dir);
	snprintf(out, sizeof out, "%s/out.cpio", dir);
	cr_assert_eq(vm_write_file(src, "hello, guest", 0644), 0);
	struct vm_cpio_file files[] = {{"init", src, 0755}, {"sub/dir/file", src, 0600}};
	int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(vm_cpio_write(fd, files, 2), 0);
	close(fd);
	static char buf[4096];
	ssize_t len = vm_read_file(out, buf, sizeof buf);
	cr_assert_gt(len, 0);
	cr_expect_eq(len % 4, 0, "entries are padded to 4 bytes");
	size_t off = 0, size;
	unsigned mode;
	char name[256];
	const char *want[] = {"init", "sub", "sub/dir", "sub/dir/file", "TRAILER!!!"};
	for (size_t i = 0; i < 5; i++) {
		size_t at = off;
		read_entry(buf, (size_t)len, &off, name, &size, &mode);
		cr_expect_str_eq(name, want[i]);
		if (i == 0) {
			cr_expect_eq(mode, S_IFREG | 0755);
			cr_expect_eq(size, 12);
			size_t data = (at + 110 + 5 + 3) & ~(size_t)3;
			cr_expect(!memcmp(buf + data, "hello, guest", 12));
		}
		if (i == 1)
			cr_expect_eq(mode, S_IFDIR | 0755);
		if (i == 3)
			cr_expect_eq(mode, S_IFREG | 0600);
	}
	cr_expect_eq(off, (size_t)len, "nothing after the trailer");
	unlink(src);
	unlink(out);
	rmdir(dir);
}

Test(vm_cpio, a_missing_file_fails)
{
	int fd = open("/dev/null", O_WRONLY);
	struct vm_cpio_file files[] = {{"init", "/nonexistent/chat2sbx-vm", 0755}};
	cr_expect_eq(vm_cpio_write(fd, files, 1), -1);
	close(fd);
}
