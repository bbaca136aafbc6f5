/* ops_internal.h: private to ops/ (never included from another layer): what
 * the isolation probe's attacks in separate files share with isolation.c. */
#ifndef CP_OPS_INTERNAL_H
#define CP_OPS_INTERNAL_H

#include <stddef.h>

#include "../store/store.h"
#include "ops.h"

struct lifecycle;

/* Runs command (bash -c, cwd /) in the probe sandbox through its helper
 * channel, as a model's bash call would, bounded by the probe's wait (45 s,
 * a command timeout of 35 s); *ret_output (caller frees) is the combined
 * output (at most 256 KiB). TIMEOUT when it did not finish; channel errors
 * pass through (isolation.c). */
int ops_probe_run(struct lifecycle *lc, const char *sandbox_id, const char *command, char **ret_output,
                  struct cp_error **err);

/* Removes path and everything below it, never following a symlink
 * (remove_tree.c); what cannot be removed stays. */
void ops_remove_tree(const char *path);

/* The "host_services" attack (host_edge.c, issue 12): a TCP listener on
 * 0.0.0.0 of the host, which probe (a running sandbox with the operator's
 * configuration, borrowed) tries to reach through its networks' gateways
 * and every IPv4 address of the host. *ret is FAILED when a connection
 * reached the listener, or when CHAT2SBX_FIREWALL=1 and table inet
 * chat2sbx could be read and is not in place; detail (always terminated)
 * names the port, the addresses tried and the table's state. Blocks a few
 * seconds (every attempt in parallel, 3 s each). */
void ops_host_edge_attack(struct lifecycle *lc, const struct sandbox_record *probe, enum ops_check_result *ret,
                          char *detail, size_t size);

/* Check "setuid_files" (issue 12): in the probe sandbox (sandbox_id, whose
 * managed workspace is workspace_id) tries to plant setuid/setgid programs
 * and file capabilities in /workspace (chmod 4755 and g+s, install -m 4755,
 * cp -p of an image's setuid program, tar -xp, perl chmod and sysopen,
 * python os.chmod, open O_CREAT 04755, mknod S_IFREG|04755, chmod through
 * /proc/self/fd, openat2 and fchmodat2 with 04755, setxattr
 * security.capability; io_uring_setup must be refused), then scans the host
 * copies with ops_setid_scan. Passed when no host file carries a bit or
 * capabilities and io_uring is refused; failed (naming the files, or why it
 * proved nothing) otherwise. vm (a vm probe): the guest's io_uring is its
 * own kernel's and not judged here (its file operations reach the host as
 * 9p requests of QEMU, whose container ops_vm_probe judges). Its directory is removed from inside. Adds one
 * outcome to r. Blocks up to two probe runs (90 s). */
void ops_attack_host_files(struct lifecycle *lc, const char *sandbox_id, const char *workspace_id, int vm,
                           struct ops_probe_report *r);

/* The checks of a vm probe (isolation_vm.c, issue 15), asked of QEMU and
 * its container from the container's side (exec API) and attacked from the
 * guest: "privileges" (QEMU's uid, capabilities, no-new-privileges,
 * seccomp), "memory_limit" (the container's ceiling, QEMU's
 * oom_score_adj), "docker_socket" (the guest's socket is its own engine;
 * nothing mounted into the container) and "vm_container_services" (the
 * container's listeners, serve's port and the engine's TCP ports refuse the
 * guest at QEMU's gateway). They replace the survey's judgments of the same
 * names, which a guest's own kernel answers. Adds four outcomes to r.
 * Blocks up to one exec (20 s) and seven probe runs (45 s each; the
 * guest engine is asked up to six times while its dockerd starts). */
void ops_vm_probe(struct lifecycle *lc, const struct sandbox_record *s, struct ops_probe_report *r);

#define OPS_HOST_EDGE_ATTACK                                                                                           \
	"connect to a listener the doctor opened on 0.0.0.0 of the host, through the bridge gateway and every host "   \
	"address"
#define OPS_THIS_MACHINE_ONLY                                                                                          \
	"the attacks that only make sense on serve's own machine (direct-mode .git, setuid plants through the "        \
	"workspace, the export-bundle bomb)"

#endif
