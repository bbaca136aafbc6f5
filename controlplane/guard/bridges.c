/* bridges.c: the host interface names of chat2sbx's bridge networks (issue
 * 12): the fixed ones new networks get (POLICY_BRIDGE_PREFIX...), so the
 * host's firewall can name them, and the engine's own names of networks an
 * older chat2sbx made without one. Decides names; asks the engine only to
 * list networks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/xalloc.h"
#include "../base/cleanup.h"
#include "guard.h"

void guard_expose_bridge_name(const char *sandbox_id, char *buf, size_t size)
{
	size_t n = strlen(sandbox_id);
	snprintf(buf, size, "%sx%s", POLICY_BRIDGE_PREFIX, sandbox_id + (n > 10 ? n - 10 : 0));
}

int guard_legacy_bridges(struct docker_engine *engine, char ***ret, struct cp_error **err)
{
	/* The shared network carries POLICY_LABEL_NETWORK, expose networks
	 * POLICY_LABEL_EXPOSE_SANDBOX (any registry: every data root's
	 * sandboxes must stay off the host). */
	const char *labels[] = {POLICY_LABEL_NETWORK, POLICY_LABEL_EXPOSE_SANDBOX};
	struct docker_network_bridge *nets[2] = {NULL, NULL};
	size_t n[2] = {0, 0};
	int r = 0;
	for (size_t i = 0; i < 2 && r == 0; i++)
		r = docker_network_bridges(engine, labels[i], &nets[i], &n[i], err);
	char **v = r == 0 ? xcalloc(n[0] + n[1] + 1, sizeof(*v)) : NULL;
	size_t k = 0;
	for (size_t i = 0; i < 2 && r == 0; i++)
		for (size_t j = 0; j < n[i] && r == 0; j++) {
			const char *ifname = nets[i][j].interface;
			if (!strncmp(ifname, POLICY_BRIDGE_PREFIX, strlen(POLICY_BRIDGE_PREFIX)))
				continue;
			v[k++] = xstrdup(ifname);
		}
	for (size_t i = 0; i < 2; i++)
		docker_network_bridges_free(nets[i], n[i]);
	if (r < 0) {
		docker_strv_free(v);
		return -1;
	}
	*ret = v;
	return 0;
}
