/* test_guard_vm.c: a vm sandbox's container settings (guard/
 * vm.c, issue 15): the launcher as entrypoint with the guest's
 * settings in its environment, runc, every capability dropped but the
 * launcher's few, /dev/kvm only under KVM, the process limit moved into the
 * guest; the smallest memory ceiling; the launcher's refusals as reasons.
 * Pure: no engine. */
#include <criterion/criterion.h>
#include <string.h>

#include "guard/guard.h"

static const char *env_get(const char *const *env, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; env && env[i]; i++)
		if (!strncmp(env[i], name, n) && env[i][n] == '=')
			return env[i] + n + 1;
	return NULL;
}

static size_t count(const char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	return n;
}

struct fixture {
	struct config cfg;
	struct guard_host host;
	struct sandbox_record s;
	struct workspace_record w;
	struct docker_container_spec spec;
	struct guard_vm_parts parts;
};

static void fixture_init(struct fixture *f, const char *accel, const char *mode, int network)
{
	static const char *const env[] = {"PATH=/usr/bin:/bin", "CHAT2SBX_SANDBOX_ID=sbx_a", NULL};
	static const char *const entry[] = {POLICY_HELPER_TARGET, NULL};
	memset(f, 0, sizeof(*f));
	f->cfg.vm_docker = "demand";
	f->host.cfg = &f->cfg;
	f->s.id = "sbx_a";
	f->s.runtime = POLICY_RUNTIME_VM;
	f->s.vm_accel = (char *)accel;
	f->s.network = network;
	f->w.mode = (char *)mode;
	f->spec.env = env;
	f->spec.entrypoint = entry;
	f->spec.pids_limit = 2048;
	f->spec.runtime = POLICY_RUNTIME_VM;
}

Test(guard_vm, container_runs_the_launcher_with_the_guest_settings)
{
	struct fixture f;
	fixture_init(&f, "tcg", "managed", 1);
	guard_vm_container(&f.host, &f.s, &f.w, 0, 0, &f.spec, &f.parts);
	cr_assert_eq(count(f.spec.entrypoint), 2);
	cr_expect_str_eq(f.spec.entrypoint[0], GUARD_VM_TARGET);
	cr_expect_str_eq(f.spec.entrypoint[1], "launch");
	cr_expect_null(f.spec.runtime, "runc (the engine's default) runs the container, not a runtime called vm");
	cr_expect_str_eq(env_get(f.spec.env, "PATH"), "/usr/bin:/bin", "the sandbox's own environment is kept");
	cr_expect_str_eq(env_get(f.spec.env, "CHAT2SBX_SANDBOX_ID"), "sbx_a");
	cr_expect_str_eq(env_get(f.spec.env, "CHAT2SBX_VM_ACCEL"), "tcg");
	cr_expect_str_eq(env_get(f.spec.env, "CHAT2SBX_VM_WORKSPACE"), "managed");
	cr_expect_str_eq(env_get(f.spec.env, "CHAT2SBX_VM_NETWORK"), "1");
	cr_expect_str_eq(env_get(f.spec.env, "CHAT2SBX_VM_PIDS"), "2048", "the process limit goes into the guest");
	cr_expect_str_eq(env_get(f.spec.env, "CHAT2SBX_VM_DOCKER"), "demand");
	cr_expect_null(env_get(f.spec.env, "CHAT2SBX_VM_MOUNT"), "a managed workspace has no host identity to check");
	cr_expect_gt(f.spec.pids_limit, 0, "the container still has a process limit (QEMU's threads)");
	cr_expect_lt(f.spec.pids_limit, 2048);
	cr_expect_eq(f.spec.cap_drop_all, 1);
	const char *want[] = {"CHOWN", "DAC_OVERRIDE", "FOWNER", "SETGID", "SETUID", "KILL"};
	cr_assert_eq(count(f.spec.cap_add), 6);
	for (size_t i = 0; i < 6; i++)
		cr_expect_str_eq(f.spec.cap_add[i], want[i]);
	cr_expect_null(f.spec.devices, "no /dev/kvm under TCG");
}

Test(guard_vm, kvm_gets_the_device_and_a_host_workspace_its_identity)
{
	struct fixture f;
	fixture_init(&f, "kvm", "direct", 0);
	guard_vm_container(&f.host, &f.s, &f.w, 2049, 123456789, &f.spec, &f.parts);
	cr_assert_eq(count(f.spec.devices), 1);
	cr_expect_str_eq(f.spec.devices[0], "/dev/kvm");
	cr_expect_str_eq(env_get(f.spec.env, "CHAT2SBX_VM_ACCEL"), "kvm");
	cr_expect_str_eq(env_get(f.spec.env, "CHAT2SBX_VM_WORKSPACE"), "direct");
	cr_expect_str_eq(env_get(f.spec.env, "CHAT2SBX_VM_NETWORK"), "0", "network: false is no guest interface");
	cr_expect_str_eq(env_get(f.spec.env, "CHAT2SBX_VM_MOUNT"), "2049:123456789",
	                 "the launcher refuses to boot on another directory");
}

Test(guard_vm, memory_below_the_minimum_is_refused_with_the_size_to_ask)
{
	struct cp_error *err = NULL;
	cr_expect_eq(guard_vm_memory_check(0, &err), 0, "no ceiling asked: the default");
	cr_expect_eq(guard_vm_memory_check(POLICY_VM_MIN_MEMORY, &err), 0);
	cr_expect_eq(guard_vm_memory_check(256LL << 20, &err), -1);
	cr_assert_not_null(err);
	cr_expect_eq(err->code, CP_ERR_INVALID_ARGUMENT);
	cr_expect(strstr(err->message, "256 MiB") && strstr(err->message, "\"512m\""), "%s", err->message);
	cp_error_free(err);
}

Test(guard_vm, launcher_refusals_become_reasons)
{
	cr_expect(strstr(guard_vm_exit_reason(78), "another directory"));
	cr_expect(strstr(guard_vm_exit_reason(79), "could not boot"));
	cr_expect_null(guard_vm_exit_reason(0));
	cr_expect_null(guard_vm_exit_reason(137), "a killed container is no refusal of ours");
	struct docker_container_state st = {.status = "restarting", .running = 1, .exit_code = 78};
	cr_expect_eq(guard_vm_refused(&st), 1, "the engine shows Running while it waits to restart");
	st.status = "running";
	cr_expect_eq(guard_vm_refused(&st), 0, "running again: the launcher is checking");
	st.status = "exited";
	st.running = 0;
	cr_expect_eq(guard_vm_refused(&st), 1);
	st.exit_code = 0;
	cr_expect_eq(guard_vm_refused(&st), 0, "an ordinary stop");
	cr_expect_eq(policy_runtime_is_vm("vm"), 1);
	cr_expect_eq(policy_runtime_is_vm("runc"), 0);
	cr_expect_eq(policy_runtime_is_vm(NULL), 0);
	cr_expect_eq(guard_vm_hello_timeout_ms("vm"), POLICY_VM_HELLO_TIMEOUT_MS);
	cr_expect_eq(guard_vm_hello_timeout_ms(NULL), POLICY_HELLO_TIMEOUT_MS);
}
