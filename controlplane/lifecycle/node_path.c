/* node_path.c: a directory of another node, looked at on that node (issue
 * 28, item 4; docs/nodes.md "A direct workspace on another node"). The
 * engine API cannot open a path without following links, so serve makes a
 * short-lived container of its own there (the template image, no network,
 * a read-only root, every capability dropped but CAP_DAC_READ_SEARCH,
 * no-new-privileges, the sandbox seccomp profile) with the node's root
 * mounted read-only at /host, and runs in it, through the exec API, a
 * fixed Python program of ours that walks the path one component at a
 * time with O_NOFOLLOW (a symbolic link anywhere on it is refused) and
 * prints the identity (st_dev, st_ino) of the directory and of its .git.
 * Nothing of a model's ever runs in it, and it is removed at once; its
 * answer is still another machine's bytes, read strictly
 * (policy_node_path_answer). The sandbox's helper then stats its mounts
 * from inside before anything runs there and they must be those very
 * inodes (create.c, verify_host_mount), as on this machine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/cleanup.h"
#include "../base/id.h"
#include "../base/log.h"
#include "../base/xalloc.h"
#include "lifecycle_internal.h"

/* The bound of the exec (ms); the container's create, start and removal
 * are the engine's own calls, each bounded by the transport. */
#define NODE_PATH_EXEC_MS 10000L
/* Where the node's root is mounted in the checker. */
#define NODE_PATH_ROOT "/host"

/* argv[1] is the path on the node; one line out, as
 * policy_node_path_answer reads it. -I -S: no environment, no site. */
static const char node_path_program[] =
    "import errno,os,stat,sys\n"
    "def out(s):\n"
    "    sys.stdout.write(s+'\\n');sys.stdout.flush();os._exit(0)\n"
    "def lst(name,fd):\n"
    "    try:\n"
    "        return os.stat(name,dir_fd=fd,follow_symlinks=False).st_mode\n"
    "    except OSError:\n"
    "        return None\n"
    "fd=os.open('" NODE_PATH_ROOT "',os.O_RDONLY|os.O_DIRECTORY|os.O_CLOEXEC)\n"
    "for i,c in enumerate(sys.argv[1].split('/')[1:]):\n"
    "    try:\n"
    "        n=os.open(c,os.O_RDONLY|os.O_DIRECTORY|os.O_NOFOLLOW|os.O_CLOEXEC,dir_fd=fd)\n"
    "    except OSError as e:\n"
    "        m=lst(c,fd)\n"
    "        if m is not None and stat.S_ISLNK(m): out('link %d'%i)\n"
    "        if e.errno==errno.ENOENT: out('missing %d'%i)\n"
    "        if e.errno in (errno.EACCES,errno.EPERM): out('denied %d'%i)\n"
    "        if m is not None and not stat.S_ISDIR(m): out('notdir %d'%i)\n"
    "        raise\n"
    "    os.close(fd);fd=n\n"
    "st=os.fstat(fd)\n"
    "h,o,r=lst('HEAD',fd),lst('objects',fd),lst('refs',fd)\n"
    "if h is not None and stat.S_ISREG(h) and o is not None and stat.S_ISDIR(o) and r is not None and "
    "stat.S_ISDIR(r): out('bare')\n"
    "try:\n"
    "    g=os.open('.git',os.O_PATH|os.O_NOFOLLOW|os.O_CLOEXEC,dir_fd=fd)\n"
    "except FileNotFoundError:\n"
    "    out('ok %d %d none'%(st.st_dev,st.st_ino))\n"
    "gs=os.fstat(g)\n"
    "if stat.S_ISLNK(gs.st_mode): out('gitlink')\n"
    "k='dir' if stat.S_ISDIR(gs.st_mode) else 'file' if stat.S_ISREG(gs.st_mode) else None\n"
    "if k is None: out('gitother')\n"
    "out('ok %d %d %s %d %d'%(st.st_dev,st.st_ino,k,gs.st_dev,gs.st_ino))\n";

int lifecycle_node_path_check(struct lifecycle *lc, const char *node, const char *path,
                              struct policy_node_path_facts *ret, struct cp_error **err)
{
	struct docker_engine *engine = NULL;
	if (lifecycle_node_engine(lc, node, &engine, err) < 0)
		return cp_error_prefix(err, "check host path '%s' on node '%s'", path, node);
	const char *image = lc->cfg->template_image;
	_cleanup_free_ char *image_id = NULL;
	if (docker_image_inspect(engine, image, &image_id, err) < 0) {
		if ((*err)->code == CP_ERR_NOT_FOUND)
			(*err)->code = CP_ERR_UNAVAILABLE;
		return cp_error_prefix(err,
		                       "check host path '%s' on node '%s' (its check runs in the template image; "
		                       "load it there: docs/nodes.md, Set-up)",
		                       path, node);
	}
	_cleanup_free_ char *suffix = NULL;
	if (id_new("", &suffix, err) < 0)
		return -1;
	char name[96];
	snprintf(name, sizeof(name), "chat2sbx-pathcheck-%s", suffix);
	const char *labels[] = {POLICY_LABEL_PATH_CHECK, lc->cfg->database_path, NULL};
	const char *entrypoint[] = {"sh", "-c", "trap 'exit 0' TERM; sleep 60 & wait", NULL};
	const char *caps[] = {"DAC_READ_SEARCH", NULL};
	struct docker_mount mount = {.source = "/", .target = NODE_PATH_ROOT, .read_only = 1};
	struct docker_container_spec spec = {
	    .name = name,
	    .image = image,
	    .entrypoint = entrypoint,
	    .labels = labels,
	    .mounts = &mount,
	    .n_mounts = 1,
	    .memory_bytes = 64LL * 1024 * 1024,
	    .pids_limit = 16,
	    .network_disabled = 1,
	    .cap_drop_all = 1,
	    .cap_add = caps,
	    .read_only_rootfs = 1,
	    .user = "0:0", /* with CAP_DAC_READ_SEARCH only: it reads, writes nothing */
	    .no_stdin = 1,
	};
	_cleanup_free_ char *id = NULL;
	if (docker_container_create(engine, &spec, &id, err) < 0)
		return cp_error_prefix(err, "check host path '%s' on node '%s'", path, node);
	const char *argv[] = {"python3", "-I", "-S", "-c", node_path_program, path, NULL};
	struct docker_exec_result res = {0};
	int r = docker_container_start(engine, id, err);
	if (r == 0)
		r = docker_container_exec(engine, id, argv, NODE_PATH_EXEC_MS, &res, err);
	if (r == 0 && (res.exit_code != 0 || res.truncated || !res.out))
		r = cp_error_set(err, CP_ERR_UNAVAILABLE,
		                 "the check of host path '%s' on node '%s' failed (exit code %d): %.300s", path, node,
		                 res.exit_code, res.err ? res.err : "");
	if (r == 0)
		r = policy_node_path_answer(node, path, res.out, strlen(res.out), ret, err);
	docker_exec_result_clear(&res);
	_cleanup_error_ struct cp_error *e = NULL;
	if (docker_container_remove(engine, id, &e) < 0)
		log_warn("lifecycle", "node %s: remove the path check %s: %s", node, name, e->message);
	if (r < 0)
		return cp_error_prefix(err, "check host path '%s' on node '%s'", path, node);
	return 0;
}
