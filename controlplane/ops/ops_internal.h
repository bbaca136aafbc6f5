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
#define OPS_HOST_EDGE_ATTACK                                                                                           \
	"connect to a listener the doctor opened on 0.0.0.0 of the host, through the bridge gateway and every host "   \
	"address"

#endif
