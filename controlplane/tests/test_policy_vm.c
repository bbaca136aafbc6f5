/* test_policy_vm.c: the vm runtime's decisions (policy/vm.c): hardware
 * virtualization from /proc/cpuinfo, the accelerator for each setting and
 * machine, and what CHAT2SBX_RUNTIME's auto means. */
#include <criterion/criterion.h>
#include <string.h>

#include "../base/error.h"
#include "../policy/policy.h"

static const char intel_vmx[] = "processor\t: 0\nvendor_id\t: GenuineIntel\n"
                                "flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic vmx ssse3\n"
                                "bugs\t\t: spectre_v1\n\nprocessor\t: 1\nflags\t\t: fpu vmx\n";
static const char amd_svm[] = "processor\t: 0\nflags\t\t: fpu vme svm lahf_lm\n";
/* This machine's kind: a paravirtual nested KVM, no vmx/svm flag. */
static const char pvm[] = "processor\t: 0\nvendor_id\t: AuthenticAMD\n"
                          "flags\t\t: fpu vme de pse tsc msr pae hypervisor lahf_lm cmp_legacy\n"
                          "model name\t: AMD EPYC with svm_lock in the name\n";

Test(policy_vm, cpu_flags)
{
	cr_expect_eq(policy_cpu_has_virtualization(intel_vmx), 1);
	cr_expect_eq(policy_cpu_has_virtualization(amd_svm), 1);
	cr_expect_eq(policy_cpu_has_virtualization(pvm), 0, "only the flags line counts, as whole words");
	cr_expect_eq(policy_cpu_has_virtualization("flags\t\t: fpu vmxnet svmx\n"), 0);
	cr_expect_eq(policy_cpu_has_virtualization("vmx flags\n"), 0);
	cr_expect_eq(policy_cpu_has_virtualization("flags\t: vmx"), 1, "no final newline");
	cr_expect_eq(policy_cpu_has_virtualization(""), 0);
}

Test(policy_vm, accelerator_for_each_setting_and_machine)
{
	struct {
		const char *setting;
		int virt, access;
		const char *accel; /* NULL: refused */
		int why;           /* a reason for tcg is given */
	} rows[] = {
	    {"auto", 1, 1, "kvm", 0}, {"auto", 0, 1, "tcg", 1}, {"auto", 1, 0, "tcg", 1}, {"", 0, 0, "tcg", 1},
	    {"kvm", 1, 1, "kvm", 0},  {"kvm", 0, 1, NULL, 0},   {"kvm", 1, 0, NULL, 0},   {"tcg", 1, 1, "tcg", 0},
	    {"tcg", 0, 0, "tcg", 0},  {"qemu", 1, 1, NULL, 0},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		const char *accel = "unset", *why = "unset";
		struct cp_error *e = NULL;
		int r = policy_vm_accel_choose(rows[i].setting, rows[i].virt, rows[i].access, &accel, &why, &e);
		if (!rows[i].accel) {
			cr_expect_eq(r, -1, "row %zu refused", i);
			cr_expect_str_eq(accel, "unset", "nothing set on failure");
			cr_assert_not_null(e);
			cr_expect(strstr(e->message, "CHAT2SBX_VM_ACCEL"), "names the setting: %s", e->message);
			cp_error_free(e);
			continue;
		}
		cr_expect_eq(r, 0, "row %zu", i);
		cr_expect_str_eq(accel, rows[i].accel, "row %zu", i);
		cr_expect_eq(why != NULL, rows[i].why, "row %zu: reason %s", i, why ? why : "(none)");
	}
	const char *accel, *why;
	struct cp_error *e = NULL;
	cr_assert_eq(policy_vm_accel_choose("kvm", 0, 1, &accel, &why, &e), -1);
	cr_expect(strstr(e->message, "vmx nor svm"), "says what is missing: %s", e->message);
	cp_error_free(e);
	e = NULL;
	cr_assert_eq(policy_vm_accel_choose("kvm", 1, 0, &accel, &why, &e), -1);
	cr_expect(strstr(e->message, "/dev/kvm"), "%s", e->message);
	cp_error_free(e);
}

Test(policy_vm, runtime_auto_is_vm_only_with_kvm_and_its_image)
{
	const char *why = NULL;
	cr_expect_str_eq(policy_runtime_choose("", 1, 1, &why), POLICY_RUNTIME_VM);
	cr_expect(why && strstr(why, "KVM"));
	cr_expect_str_eq(policy_runtime_choose("auto", 1, 1, &why), POLICY_RUNTIME_VM);
	cr_expect_null(policy_runtime_choose("", 0, 1, &why), "no KVM: the engine's default");
	cr_expect(why && strstr(why, "CHAT2SBX_RUNTIME=vm"), "says how to ask for TCG anyway: %s", why);
	cr_expect_null(policy_runtime_choose("", 1, 0, &why), "no vm image yet: the engine's default");
	cr_expect(why && strstr(why, "make template"), "%s", why);
	cr_expect_str_eq(policy_runtime_choose("vm", 0, 0, &why), POLICY_RUNTIME_VM, "asked for: TCG");
	cr_expect_null(why);
	cr_expect_str_eq(policy_runtime_choose("runsc", 1, 1, &why), "runsc");
	cr_expect_str_eq(policy_runtime_choose("runc", 1, 1, NULL), "runc");
}

Test(policy_vm, runtime_decision_names_the_accelerator_only_for_vm)
{
	struct policy_runtime_decision d;
	struct cp_error *err = NULL;
	struct policy_runtime_facts f = {
	    .setting = "", .accel_setting = "auto", .cpu_virt = 1, .kvm_access = 1, .vm_image = 1};
	cr_assert(policy_runtime_needs_image(f.setting, 1, 1));
	cr_assert_eq(policy_runtime_decide(&f, &d, &err), 0);
	cr_expect_str_eq(d.runtime, POLICY_RUNTIME_VM);
	cr_expect_str_eq(d.accel, "kvm");
	f.vm_image = 0;
	cr_assert_eq(policy_runtime_decide(&f, &d, &err), 0);
	cr_expect_null(d.runtime);
	cr_expect_null(d.accel);
	cr_expect_not_null(d.why);
	/* A named runtime needs no image question and gets no accelerator. */
	cr_expect_not(policy_runtime_needs_image("runsc", 1, 1));
	f = (struct policy_runtime_facts){.setting = "runsc", .accel_setting = "auto"};
	cr_assert_eq(policy_runtime_decide(&f, &d, &err), 0);
	cr_expect_str_eq(d.runtime, "runsc");
	cr_expect_null(d.accel);
	/* vm asked with kvm forced on a machine without it: refused. */
	f = (struct policy_runtime_facts){.setting = "vm", .accel_setting = "kvm"};
	cr_assert_eq(policy_runtime_decide(&f, &d, &err), -1);
	cr_expect_eq(err->code, CP_ERR_UNAVAILABLE);
	cp_error_free(err);
}
