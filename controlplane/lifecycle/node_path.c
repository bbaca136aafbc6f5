/* node_path.c: a directory of another node, looked at on that node (issue
 * 28, item 4; docs/nodes.md "A direct workspace on another node"). The
 * engine API cannot open a path without following links, so serve makes a
 * short-lived check container of its own there (node_check.c; root with
 * CAP_DAC_READ_SEARCH only) with the node's root mounted read-only at
 * /host, and runs in it a fixed Python program of ours that walks the path one component at a
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
#include "lifecycle_internal.h"

/* Where the node's root is mounted in the checker. */
#define NODE_PATH_ROOT "/host"
/* The bounds of the .git walk, as the walk here has them (policy.h). */
#define STR_(x) #x
#define STR(x) STR_(x)
#define GIT_TREE_MAX_ENTRIES STR(POLICY_GIT_TREE_MAX_ENTRIES)
#define GIT_TREE_MAX_DEPTH STR(POLICY_GIT_TREE_MAX_DEPTH)
#define GIT_TREE_MAX_S "5"

/* argv[1] is the path on the node; one line out, as
 * policy_node_path_answer reads it. -I -S: no environment, no site. */
static const char node_path_program[] =
    "import errno,os,stat,sys,time\n"
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
    "if stat.S_ISREG(gs.st_mode): out('gitfile')\n"
    "if not stat.S_ISDIR(gs.st_mode): out('gitother')\n"
    /* The owner's git follows links in .git and takes its configuration
     * from the directory commondir names: nothing but regular files and
     * directories, commondir "." (policy_git_tree_judge's and
     * policy_git_commondir_check's rules), walked without following a
     * link, bounded as POLICY_GIT_TREE_MAX_* bound it here. */
    "gd=os.open('.git',os.O_RDONLY|os.O_DIRECTORY|os.O_NOFOLLOW|os.O_CLOEXEC,dir_fd=fd)\n"
    "gds=os.fstat(gd)\n"
    "if gds.st_ino!=gs.st_ino or gds.st_dev!=gs.st_dev: out('gitother')\n"
    "t0=time.monotonic();seen=[0]\n"
    "def bad(k,r): out('gitbad '+k+' '+r.encode('utf-8','surrogateescape')[:400].hex())\n"
    "def walk(d,rel,depth):\n"
    "    with os.scandir(d) as it:\n"
    "        for e in it:\n"
    "            seen[0]+=1\n"
    "            if seen[0]>" GIT_TREE_MAX_ENTRIES " or depth>" GIT_TREE_MAX_DEPTH " or "
    "time.monotonic()-t0>" GIT_TREE_MAX_S ": out('gitbig')\n"
    "            r=rel+e.name\n"
    "            m=e.stat(follow_symlinks=False).st_mode\n"
    "            if stat.S_ISDIR(m):\n"
    "                try:\n"
    "                    n=os.open(e.name,os.O_RDONLY|os.O_DIRECTORY|os.O_NOFOLLOW|os.O_CLOEXEC,dir_fd=d)\n"
    "                except OSError:\n"
    "                    bad('other',r)\n"
    "                walk(n,r+'/',depth+1);os.close(n)\n"
    "            elif not stat.S_ISREG(m):\n"
    "                bad('link' if stat.S_ISLNK(m) else 'fifo' if stat.S_ISFIFO(m) else 'socket' if "
    "stat.S_ISSOCK(m) else 'device' if stat.S_ISCHR(m) or stat.S_ISBLK(m) else 'other',r)\n"
    "            elif r=='commondir':\n"
    "                c=os.open('commondir',os.O_RDONLY|os.O_NOFOLLOW|os.O_NONBLOCK|os.O_CLOEXEC,dir_fd=d)\n"
    "                if os.read(c,4096).rstrip(b'\\r\\n')!=b'.': out('gitcommondir')\n"
    "walk(gd,'',0)\n"
    "out('ok %d %d dir %d %d'%(st.st_dev,st.st_ino,gs.st_dev,gs.st_ino))\n";

int lifecycle_node_path_check(struct lifecycle *lc, const char *node, const char *path,
                              struct policy_node_path_facts *ret, struct cp_error **err)
{
	/* Root with CAP_DAC_READ_SEARCH only: it reads any directory on the
	 * way (one its owner alone may enter too), writes nothing. */
	const char *caps[] = {"DAC_READ_SEARCH", NULL};
	const char *argv[] = {"python3", "-I", "-S", "-c", node_path_program, path, NULL};
	struct docker_mount mount = {.source = "/", .target = NODE_PATH_ROOT, .read_only = 1};
	struct lifecycle_node_check check = {
	    .argv = argv, .mounts = &mount, .n_mounts = 1, .cap_add = caps, .user = "0:0"};
	_cleanup_free_ char *out = NULL;
	if (lifecycle_node_check_run(lc, node, &check, &out, err) < 0 ||
	    policy_node_path_answer(node, path, out, strlen(out), ret, err) < 0)
		return cp_error_prefix(err, "check host path '%s' on node '%s'", path, node);
	return 0;
}
