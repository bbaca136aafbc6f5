/* vm.h: chat2sbx-vm, the one static program of the vm runtime (issue 15).
 * It plays three parts, chosen by how it is started:
 *   - `launch` — PID 1 of a vm sandbox's container: reads the container's
 *     limits, prepares the guest's disks and initramfs, runs QEMU as an
 *     unprivileged user and turns `docker stop` into an orderly power-off
 *     (launch.c);
 *   - `/init` — PID 1 of the guest (the kernel starts it from the
 *     initramfs): loads modules, mounts the root disk, the workspace over
 *     9p and Docker's disk, brings up the network, starts the guest agent
 *     and execs the unchanged chat2sbx-helper on the helper's virtio-serial
 *     port (guest_init.c, guest_agent.c);
 *   - `stat PATH`, `mounts`, `expose PORT` — small commands the control plane runs in
 *     the container with the engine's exec API (ctl.c).
 * Links only libc, so it runs in any image and in an initramfs. */
#ifndef C2S_VM_H
#define C2S_VM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- paths inside the vm image and the container (template/vm/README.md) ---- */
#define VM_IMAGE_DIR "/vm"
#define VM_KERNEL VM_IMAGE_DIR "/vmlinux"
#define VM_INITRD_MODULES VM_IMAGE_DIR "/initrd-modules.cpio"
#define VM_ROOT_BASE VM_IMAGE_DIR "/root.qcow2"
#define VM_DOCKER_BASE VM_IMAGE_DIR "/docker.qcow2"
#define VM_QEMU "/usr/bin/qemu-system-x86_64"
#define VM_QEMU_IMG "/usr/bin/qemu-img"
/* Per sandbox, in the container's writable layer (kept across stop/start). */
#define VM_STATE_DIR "/var/lib/chat2sbx-vm"
/* Per boot (sockets, the initramfs of this boot). */
#define VM_RUN_DIR "/run/chat2sbx-vm"
#define VM_CTL_SOCKET VM_RUN_DIR "/control.sock"
#define VM_QMP_SOCKET VM_RUN_DIR "/qmp.sock"
#define VM_INITRD VM_RUN_DIR "/initrd.cpio"
#define VM_PORTS_FILE VM_STATE_DIR "/ports"
/* Bind-mounted read-only by the control plane (guard/vm.c). */
#define VM_SELF "/.chat2sbx/vm"
#define VM_HELPER "/.chat2sbx/helper"
#define VM_WORKSPACE "/workspace"
#define VM_SOURCE "/.chat2sbx/source"

/* virtio-serial port names the guest looks for in /sys/class/virtio-ports. */
#define VM_PORT_HELPER "org.chat2sbx.helper"
#define VM_PORT_CONTROL "org.chat2sbx.control"
/* 9p mount tags. */
#define VM_TAG_WORKSPACE "workspace"
#define VM_TAG_SOURCE "source"

/* QEMU user-mode networking's fixed addresses (QEMU, "Network emulation"). */
#define VM_GUEST_ADDR "10.0.2.15"
#define VM_GUEST_GATEWAY "10.0.2.2"
#define VM_GUEST_DNS "10.0.2.3"

/* The uid and gid QEMU runs as when the workspace directory belongs to
 * root (a managed workspace is made over to it; docs/vm.md). */
#define VM_DEFAULT_UID 64099
#define VM_DEFAULT_GID 64099

/* The launcher's exit status when the mount identity check failed. */
#define VM_EXIT_MOUNT_CHANGED 78
/* ... when the sandbox cannot boot (bad settings, missing files). */
#define VM_EXIT_CONFIG 79

/* Most TCP ports forwarded into the guest (sandbox_expose allows 8). */
#define VM_MAX_PORTS 16

/* ---- QEMU's command line (qemu_args.c; pure, unit-tested) ---- */

struct vm_limits {
	int64_t memory_limit; /* the container's memory ceiling, bytes; 0 = none */
	int64_t host_memory;  /* MemTotal, bytes (the guest size when there is no ceiling) */
	int64_t cpu_quota_us; /* CFS quota per period; <= 0 = none */
	int64_t cpu_period_us;
	int host_cpus;   /* online CPUs */
	int64_t tsc_khz; /* the host's TSC in kHz (cpu MHz × 1000), 0 = unknown */
};

struct vm_config {
	const char *accel;          /* "kvm" or "tcg" */
	const char *sandbox_id;     /* "sbx_…" */
	const char *workspace_mode; /* "managed", "direct" or "clone" */
	int network;                /* 0: no interface but loopback in the guest */
	int64_t pids_limit;         /* the guest's pids.max; 0 = none */
	const char *docker;         /* "demand", "boot" or "off": when the guest's dockerd starts */
	int ports[VM_MAX_PORTS];    /* TCP ports forwarded from the container into the guest */
	size_t n_ports;
	int console_fd; /* fd QEMU writes the guest's console to (an -add-fd set) */
	int verbose;    /* 1: the kernel's boot messages on the console too (CHAT2SBX_VM_DEBUG=1) */
};

/* What qemu_args.c derived from the limits. */
struct vm_plan {
	int64_t guest_mib; /* the guest's RAM */
	int smp;           /* vCPUs */
	int tb_mib;        /* TCG translation cache; 0 under KVM */
};

/* QEMU's resident memory besides the guest's RAM (measured, docs/vm.md): its own
 * heap, threads, device buffers, plus the TCG
 * translation cache under TCG. */
#define VM_OVERHEAD_MIB 160
#define VM_TCG_TB_MIB 64
/* The smallest guest that boots the template with Docker in it. */
#define VM_MIN_GUEST_MIB 256

/* Guest RAM, vCPUs and the translation cache from the limits: the memory
 * ceiling less QEMU's overhead (the whole host's memory, the same way, when
 * there is none), rounded down to 2 MiB; vCPUs = the CPU quota rounded up
 * (at least 1, at most the host's CPUs; all of them without a quota).
 * Returns 0, or -1 with a sentence in err (size bytes) when the ceiling
 * leaves less than VM_MIN_GUEST_MIB. Pure. */
int vm_plan_make(const struct vm_limits *lim, const char *accel, struct vm_plan *ret, char *err, size_t size);

/* QEMU's argv for this boot: -M microvm, the accelerator, RAM and vCPUs of
 * plan, the kernel and this boot's initramfs, the kernel command line (with
 * chat2sbx.* settings for guest_init.c), the helper's virtio-serial port on
 * QEMU's stdio, the control port and QMP on Unix sockets, the two disks,
 * the workspace over 9p (security_model none, read-only for clone), user
 * networking with cfg's port forwards (none without network), free-page
 * reporting, an entropy source, QEMU's own seccomp sandbox. A
 * NULL-terminated vector of owned strings (vm_argv_free), or NULL when out
 * of memory. Pure. */
char **vm_qemu_argv(const struct vm_config *cfg, const struct vm_limits *lim, const struct vm_plan *plan);
void vm_argv_free(char **argv);

/* ---- the container's limits (limits.c) ---- */

/* Parsers of cgroup and /proc text (pure, unit-tested): each returns 0 and
 * sets *ret, or -1 when the text is not what the kernel writes.
 * memory: v1 memory.limit_in_bytes or v2 memory.max ("max" → 0: none; a
 * value at or above 2^62, v1's "unlimited", → 0). cpu: v2 cpu.max ("max
 * 100000" → quota -1), or v1's quota and period files. meminfo: MemTotal.
 * cpuinfo: the first "cpu MHz" as kHz. */
int vm_parse_memory_limit(const char *text, int64_t *ret);
int vm_parse_cpu_max(const char *text, int64_t *ret_quota, int64_t *ret_period);
int vm_parse_meminfo_total(const char *text, int64_t *ret);
int vm_parse_cpu_khz(const char *text, int64_t *ret);

/* Reads the container's limits (cgroup v2 or v1) and the host's memory,
 * CPUs and TSC rate. Missing files leave the "none" values. */
void vm_limits_read(struct vm_limits *ret);

/* ---- small helpers (util.c) ---- */

/* Reads at most size-1 bytes of path into buf (NUL-terminated). Returns the
 * length or -1 (errno). */
ssize_t vm_read_file(const char *path, char *buf, size_t size);
/* Writes text to path (O_WRONLY|O_CREAT|O_TRUNC, mode). 0 or -1 (errno). */
int vm_write_file(const char *path, const char *text, mode_t mode);
/* "chat2sbx-vm: " + message on stderr, one write. */
void vm_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* mkdir -p with mode for every missing component. 0 or -1 (errno). */
int vm_mkdir_p(const char *path, mode_t mode);
/* Monotonic clock in ms. */
int64_t vm_now_ms(void);

/* ---- initramfs (cpio.c) ---- */

/* Appends a newc cpio archive to fd holding the files (path in the archive,
 * file on disk, mode) and the directories they need, then the trailer. The
 * kernel unpacks concatenated archives in order, so this one adds to the
 * image's module archive. 0 or -1 with errno. */
struct vm_cpio_file {
	const char *name; /* "init" */
	const char *src;  /* "/.chat2sbx/vm" */
	mode_t mode;      /* 0755 */
};
int vm_cpio_write(int fd, const struct vm_cpio_file *files, size_t n);

/* ---- parts ---- */
/* The 9p mount of the workspace (or of clone mode's source) for a workspace
 * mode: the mount(2) options and flags (guest_init.c, issue 27). */
struct vm_workspace_mount {
	const char *target;
	const char *tag;
	const char *options;
	unsigned long flags;
};
void vm_workspace_mount_for(const char *mode, struct vm_workspace_mount *ret);

int vm_launch_main(int argc, char **argv);
int vm_guest_init_main(void);
/* The guest agent (guest_agent.c): forked by the guest's init before it
 * execs the helper; never returns. docker: as in vm_config. */
void vm_guest_agent_run(int control_fd, const char *docker) __attribute__((noreturn));
int vm_ctl_stat_main(int argc, char **argv);
int vm_ctl_mounts_main(int argc, char **argv);
int vm_ctl_expose_main(int argc, char **argv);
/* `chat2sbx-vm syscalls`: one JSON line, {"io_uring_setup":"ok"|"refused: WHY",
 * "openat2":...}, as the container's seccomp filter answers them; status 0. */
int vm_ctl_syscalls_main(int argc, char **argv);

#endif
