/* nodes.c: what a node's name may be (issue 28). A name is typed by a
 * person, shown in lists and used as a directory under STATE_DIR/nodes/,
 * so it is short, lower-case and safe as a path component. Pure. */
#include <string.h>

#include "policy.h"

#define NODE_NAME_MAX 32

int policy_node_name_check(const char *name, struct cp_error **err)
{
	size_t n = name ? strlen(name) : 0;
	if (!n || n > NODE_NAME_MAX)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "node name '%s': give 1 to %d characters of a-z, 0-9 and '-'", name ? name : "",
		                    NODE_NAME_MAX);
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		int ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c == '-' && i > 0 && i < n - 1);
		if (!ok)
			return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
			                    "node name '%s': only a-z, 0-9 and '-' (not first or last), as in 'gpu-2'",
			                    name);
	}
	if (!strcmp(name, "local"))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "node name 'local': that is this machine's engine; choose another name");
	return 0;
}
