/* qemu_args.c: a vm sandbox's limits and settings as QEMU's command line.
 * Pure (no I/O), so every mapping is unit-tested (template/vm/tests). The
 * machine is QEMU's microvm (virtio-mmio devices only, no PCI, no firmware
 * tables), the same on KVM and TCG apart from the accelerator and CPU. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm.h"

int vm_plan_make(const struct vm_limits *lim, const char *accel, struct vm_plan *ret, char *err, size_t size)
{
	struct vm_plan p = {0};
	int tcg = strcmp(accel, "kvm") != 0;
	p.tb_mib = tcg ? VM_TCG_TB_MIB : 0;
	int64_t overhead = (int64_t)(VM_OVERHEAD_MIB + p.tb_mib) << 20;
	int64_t ceiling = lim->memory_limit > 0 ? lim->memory_limit : lim->host_memory;
	int64_t guest = ceiling - overhead;
	guest = guest > 0 ? (guest >> 21) << 1 : 0; /* whole 2 MiB pages, in MiB */
	if (guest < VM_MIN_GUEST_MIB) {
		snprintf(err, size,
		         "a memory ceiling of %lld MiB leaves the guest %lld MiB after QEMU's own %lld MiB; a vm "
		         "sandbox needs at least %d MiB (memory \"%dm\")",
		         (long long)(ceiling >> 20), (long long)guest, (long long)(overhead >> 20), VM_MIN_GUEST_MIB,
		         VM_MIN_GUEST_MIB + VM_OVERHEAD_MIB + p.tb_mib);
		return -1;
	}
	p.guest_mib = guest;
	int host = lim->host_cpus > 0 ? lim->host_cpus : 1;
	p.smp = host;
	if (lim->cpu_quota_us > 0 && lim->cpu_period_us > 0) {
		int64_t n = (lim->cpu_quota_us + lim->cpu_period_us - 1) / lim->cpu_period_us;
		p.smp = n < 1 ? 1 : n > host ? host : (int)n;
	}
	*ret = p;
	return 0;
}

struct argv_builder {
	char **v;
	size_t n, cap;
	int oom;
};

static void add(struct argv_builder *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(struct argv_builder *b, const char *fmt, ...)
{
	if (b->oom)
		return;
	if (b->n + 2 > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 64;
		char **v = realloc(b->v, cap * sizeof(*v));
		if (!v) {
			b->oom = 1;
			return;
		}
		b->v = v;
		b->cap = cap;
	}
	va_list ap;
	va_start(ap, fmt);
	int r = vasprintf(&b->v[b->n], fmt, ap);
	va_end(ap);
	if (r < 0) {
		b->oom = 1;
		return;
	}
	b->v[++b->n] = NULL;
}

void vm_argv_free(char **argv)
{
	for (size_t i = 0; argv && argv[i]; i++)
		free(argv[i]);
	free(argv);
}

/* The kernel command line. console on the 8250 port (QEMU writes it to the
 * container's stderr); quiet, so only warnings reach it; panic=-1 and
 * reboot=t with QEMU's -no-reboot: a crashed or rebooted guest ends QEMU,
 * and the container's restart policy boots it again. tsc_early_khz and
 * tsc=reliable: microvm has no HPET or ACPI PM timer, and calibrating the
 * TSC against the PIT hung about one boot in twelve under load (measured,
 * ../shared/MACHINE-NOTES.md). mitigations=off: every process in the guest
 * is the sandbox's own; the boundary is the VM, and under TCG the
 * mitigations cost much. The chat2sbx.* words are for guest_init.c. */
static void add_cmdline(struct argv_builder *b, const struct vm_config *cfg, const struct vm_limits *lim)
{
	char tsc[96] = "";
	if (lim->tsc_khz > 0)
		snprintf(tsc, sizeof tsc, " tsc_early_khz=%lld tsc=reliable", (long long)lim->tsc_khz);
	add(b, "-append");
	add(b,
	    "console=ttyS0 %s pci=off panic=-1 reboot=t mitigations=off random.trust_cpu=on%s "
	    "chat2sbx.sandbox=%s chat2sbx.workspace=%s chat2sbx.network=%d chat2sbx.pids=%lld chat2sbx.docker=%s",
	    cfg->verbose ? "loglevel=7" : "quiet loglevel=4", tsc, cfg->sandbox_id, cfg->workspace_mode,
	    cfg->network ? 1 : 0, (long long)cfg->pids_limit, cfg->docker);
}

static void add_disk(struct argv_builder *b, const char *id, const char *file)
{
	add(b, "-drive");
	add(b, "if=none,id=%s,file=%s,format=qcow2,discard=unmap,detect-zeroes=unmap", id, file);
	add(b, "-device");
	add(b, "virtio-blk-device,drive=%s", id);
}

static void add_9p(struct argv_builder *b, const char *id, const char *path, const char *tag, int read_only)
{
	/* security_model none: files are created as QEMU's own user with the
	 * guest's modes; ownership changes the guest asks for are ignored, and
	 * setuid/setgid modes are refused by the container's seccomp profile,
	 * so nothing the guest makes on a host mount is root's or privileged. */
	add(b, "-fsdev");
	add(b, "local,id=%s,path=%s,security_model=none%s", id, path, read_only ? ",readonly=on" : "");
	add(b, "-device");
	add(b, "virtio-9p-device,fsdev=%s,mount_tag=%s", id, tag);
}

static void add_network(struct argv_builder *b, const struct vm_config *cfg)
{
	char fwd[VM_MAX_PORTS * 32 + 1] = "";
	size_t len = 0;
	for (size_t i = 0; i < cfg->n_ports && i < VM_MAX_PORTS; i++)
		len +=
		    (size_t)snprintf(fwd + len, sizeof fwd - len, ",hostfwd=tcp::%d-:%d", cfg->ports[i], cfg->ports[i]);
	add(b, "-netdev");
	add(b, "user,id=net0,ipv6=off%s", fwd);
	add(b, "-device");
	add(b, "virtio-net-device,netdev=net0");
}

char **vm_qemu_argv(const struct vm_config *cfg, const struct vm_limits *lim, const struct vm_plan *plan)
{
	struct argv_builder b = {0};
	int kvm = !strcmp(cfg->accel, "kvm");
	add(&b, "%s", VM_QEMU);
	add(&b, "-name");
	add(&b, "%s,debug-threads=on", cfg->sandbox_id);
	/* No option ROMs, no ACPI tables: the kernel is loaded directly (PVH)
	 * and finds its virtio-mmio devices on the command line QEMU adds. */
	add(&b, "-M");
	add(&b, "microvm,x-option-roms=off,acpi=on,isa-serial=on,rtc=on");
	add(&b, "-accel");
	if (kvm)
		add(&b, "kvm");
	else
		add(&b, "tcg,thread=multi,tb-size=%d", plan->tb_mib);
	add(&b, "-cpu");
	add(&b, kvm ? "host" : "max");
	add(&b, "-smp");
	add(&b, "%d", plan->smp);
	add(&b, "-m");
	add(&b, "%lldM", (long long)plan->guest_mib);
	add(&b, "-nodefaults");
	add(&b, "-no-user-config");
	add(&b, "-display");
	add(&b, "none");
	add(&b, "-no-reboot");
	/* QEMU's own seccomp filter on top of the container's: no new
	 * privileges, no processes, no scheduler or resource changes. */
	add(&b, "-sandbox");
	add(&b, "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny");
	add(&b, "-kernel");
	add(&b, "%s", VM_KERNEL);
	add(&b, "-initrd");
	add(&b, "%s", VM_INITRD);
	add_cmdline(&b, cfg, lim);
	/* The guest's console: the container's stderr, through an fd set. */
	add(&b, "-add-fd");
	add(&b, "fd=%d,set=1", cfg->console_fd);
	add(&b, "-chardev");
	add(&b, "file,id=console,path=/dev/fdset/1,append=on");
	add(&b, "-serial");
	add(&b, "chardev:console");
	/* The helper's JSON-RPC: a virtio-serial port on QEMU's stdio, which
	 * is the container's attached stdin/stdout (8-bit clean, no echo). */
	add(&b, "-device");
	add(&b, "virtio-serial-device,max_ports=4");
	add(&b, "-chardev");
	add(&b, "stdio,id=helper,signal=off");
	add(&b, "-device");
	add(&b, "virtserialport,chardev=helper,name=%s", VM_PORT_HELPER);
	add(&b, "-chardev");
	add(&b, "socket,id=control,path=%s,server=on,wait=off", VM_CTL_SOCKET);
	add(&b, "-device");
	add(&b, "virtserialport,chardev=control,name=%s", VM_PORT_CONTROL);
	add(&b, "-qmp");
	add(&b, "unix:%s,server=on,wait=off", VM_QMP_SOCKET);
	add_disk(&b, "root", VM_STATE_DIR "/root.qcow2");
	add_disk(&b, "docker", VM_STATE_DIR "/docker.qcow2");
	if (!strcmp(cfg->workspace_mode, "clone"))
		add_9p(&b, "source", VM_SOURCE, VM_TAG_SOURCE, 1);
	else
		add_9p(&b, "workspace", VM_WORKSPACE, VM_TAG_WORKSPACE, 0);
	if (cfg->network)
		add_network(&b, cfg);
	/* Memory the guest frees goes back to the host. */
	add(&b, "-device");
	add(&b, "virtio-balloon-device,free-page-reporting=on");
	add(&b, "-object");
	add(&b, "rng-random,id=rng,filename=/dev/urandom");
	add(&b, "-device");
	add(&b, "virtio-rng-device,rng=rng");
	if (b.oom) {
		vm_argv_free(b.v);
		return NULL;
	}
	return b.v;
}
