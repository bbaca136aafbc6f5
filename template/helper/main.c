/* main.c: entry point of chat2sbx-helper, PID 1 of every sandbox
 * container (mounted read-only at /.chat2sbx/helper). Start-up only:
 * options, log level, descriptor limit, then the event loop in loop.c (or
 * the keeper of one bash session, keeper.c, a forwarder, forward.c, or one
 * preview connection of a sandbox on another node, connect.c).
 * stdin carries requests, stdout replies, stderr log lines (proto.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "connect.h"
#include "forward.h"
#include "hlog.h"
#include "keeper.h"
#include "loop.h"
#include "proto.h"

#ifndef CHAT2SBX_VERSION
#define CHAT2SBX_VERSION "dev"
#endif

int main(int argc, char **argv)
{
	/* Each bash session's keeper is this binary again (keeper.h). */
	if (argc > 0 && strcmp(argv[0], KEEPER_ARGV0) == 0)
		return keeper_main();
	if (argc > 1 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "--help") == 0)) {
		printf("chat2sbx-helper %s (protocol %s)\n"
		       "Runs as PID 1 in a chat2sbx sandbox and serves newline-delimited "
		       "JSON-RPC on stdin/stdout; see template/helper/README.md.\n",
		       CHAT2SBX_VERSION, PROTO_VERSION);
		return 0;
	}
	const char *debug = getenv("CHAT2SBX_LOG_DEBUG");
	/* A sandbox_expose forwarder container runs only the relay (forward.h). */
	if (argc > 1 && strcmp(argv[1], "forward") == 0)
		return forward_main(argc - 1, argv + 1);
	/* One preview connection, started by serve with the exec API (connect.h). */
	if (argc > 1 && strcmp(argv[1], "connect") == 0)
		return connect_main(argc - 1, argv + 1);
	hlog_debug_enabled = debug && (strstr(debug, "helper") || strcmp(debug, "1") == 0 || strcmp(debug, "all") == 0);
	/* Every session holds a pipe and a log file open. */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	hlog_info("chat2sbx-helper %s (protocol %s) serving as pid %d", CHAT2SBX_VERSION, PROTO_VERSION, (int)getpid());
	struct loop_config cfg = {
	    .in_fd = STDIN_FILENO,
	    .out_fd = STDOUT_FILENO,
	    .workspace = PROTO_WORKSPACE,
	    .log_dir = PROTO_LOG_DIR,
	};
	return loop_run(&cfg);
}
