/* template.c: finding the template image after an upgrade. The image is
 * tagged chat2sbx-template:VERSION, so a new version looks for a tag that
 * does not exist yet, while an image built from the same inputs (template/
 * build.sh's content hash, the label org.chat2sbx.template.hash) is very
 * likely there. build.sh, run with CHAT2SBX_TEMPLATE_RETAG_ONLY=1, computes
 * that hash (its one definition) and re-tags such an image, or says a build
 * is needed; it never builds. serve calls this before refusing for a missing
 * template (docs/operations.md, "Upgrades"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/child.h"
#include "../base/cleanup.h"
#include "../base/xalloc.h"
#include "ops.h"

#define RETAG_WALL_MS 120000
#define RETAG_NEEDS_BUILD 4 /* build.sh's status: no image with these inputs */

int ops_template_retag(const struct config *cfg, char *detail, size_t size, struct cp_error **err)
{
	_cleanup_free_ char *script = NULL;
	if (config_install_path(cfg, CONFIG_DIR_DATA, "template/build.sh", "the template's build script", &script,
	                        err) < 0)
		return -1;
	const char *path_env = getenv("PATH");
	const char *home_env = getenv("HOME");
	_cleanup_free_ char *e_path =
	    xasprintf("PATH=%s", path_env && *path_env ? path_env : "/usr/sbin:/usr/bin:/sbin:/bin");
	_cleanup_free_ char *e_home = xasprintf("HOME=%s", home_env && *home_env ? home_env : "/");
	_cleanup_free_ char *e_image = xasprintf("CHAT2SBX_TEMPLATE_IMAGE=%s", cfg->template_image);
	_cleanup_free_ char *e_sock = xasprintf("CHAT2SBX_DOCKER_SOCKET=%s", cfg->docker_socket);
	const char *envp[] = {e_path, e_home, e_image, e_sock, "CHAT2SBX_TEMPLATE_RETAG_ONLY=1", "LC_ALL=C", NULL};
	const char *argv[] = {"bash", script, NULL};
	struct child_spec spec = {.path = "/bin/bash",
	                          .argv = argv,
	                          .envp = envp,
	                          .in_fd = -1,
	                          .out_max = 16384,
	                          .limits = {.wall_ms = RETAG_WALL_MS}};
	struct child_result res = {0};
	if (child_run(&spec, &res, err) < 0)
		return cp_error_prefix(err, "run '%s' to look for the template", script);
	int r;
	if (res.exited && res.code == 0) {
		const char *line = strstr(res.out, "re-tagged") ? strstr(res.out, "re-tagged") : "up to date";
		snprintf(detail, size, "%.*s", (int)strcspn(line, "\n"), line);
		r = 1;
	} else if (res.exited && res.code == RETAG_NEEDS_BUILD) {
		snprintf(detail, size, "no image built from these template inputs is in the engine");
		r = 0;
	} else {
		const char *tail = res.err_len ? res.err_tail : res.out;
		size_t len = strlen(tail);
		while (len && tail[len - 1] == '\n')
			len--;
		const char *start = len > 300 ? tail + len - 300 : tail;
		cp_error_set(err, CP_ERR_UNAVAILABLE, "'%s' (looking for the template image) %s %d: %.*s", script,
		             res.timed_out ? "timed out after"
		             : res.exited  ? "exited with status"
		                           : "was killed by signal",
		             res.timed_out ? RETAG_WALL_MS / 1000
		             : res.exited  ? res.code
		                           : res.signal,
		             (int)(tail + len - start), start);
		r = -1;
	}
	child_result_clear(&res);
	return r;
}
