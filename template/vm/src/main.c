/* main.c: chat2sbx-vm's entry point: which part to play (vm.h). As the
 * guest's /init the kernel starts it as PID 1 with the name "/init". */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "vm.h"

int main(int argc, char **argv)
{
	if (getpid() == 1 && argc >= 1 && !strcmp(argv[0], "/init"))
		return vm_guest_init_main();
	if (argc >= 2 && !strcmp(argv[1], "launch"))
		return vm_launch_main(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "stat"))
		return vm_ctl_stat_main(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "mounts"))
		return vm_ctl_mounts_main(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "expose"))
		return vm_ctl_expose_main(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "syscalls"))
		return vm_ctl_syscalls_main(argc - 1, argv + 1);
	fprintf(stderr, "usage: chat2sbx-vm launch | stat PATH | mounts | expose PORT | syscalls\n"
	                "The vm runtime's launcher, guest init and container commands (template/vm/README.md).\n");
	return 2;
}
