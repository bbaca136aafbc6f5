/* vm.c: the decisions of the vm runtime (issue 15): whether this machine's
 * CPU offers hardware virtualization, which accelerator vm sandboxes get,
 * and which runtime "auto" means here. Pure: the caller reads
 * /proc/cpuinfo and tries /dev/kvm (guard/vm.c). */
#include <string.h>

#include "policy.h"

/* Whether word appears as a whole word in the line [line, end). */
static int has_word(const char *line, const char *end, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = line; p + n <= end; p++) {
		if (memcmp(p, word, n))
			continue;
		int before = p == line || p[-1] == ' ' || p[-1] == '\t' || p[-1] == ':';
		int after = p + n == end || p[n] == ' ' || p[n] == '\t' || p[n] == '\n';
		if (before && after)
			return 1;
	}
	return 0;
}

int policy_cpu_has_virtualization(const char *cpuinfo)
{
	for (const char *line = cpuinfo; line && *line;) {
		const char *end = strchr(line, '\n');
		if (!end)
			end = line + strlen(line);
		/* "flags\t\t: fpu vme ... vmx ..." (x86's /proc/cpuinfo). */
		if (!strncmp(line, "flags", 5) && (line[5] == '\t' || line[5] == ' ' || line[5] == ':')) {
			const char *colon = memchr(line, ':', (size_t)(end - line));
			if (colon && (has_word(colon + 1, end, "vmx") || has_word(colon + 1, end, "svm")))
				return 1;
		}
		line = *end ? end + 1 : end;
	}
	return 0;
}

int policy_vm_accel_choose(const char *setting, int cpu_virt, int kvm_access, const char **ret_accel,
                           const char **ret_why, struct cp_error **err)
{
	const char *missing = !cpu_virt     ? "this CPU advertises no hardware virtualization (neither vmx nor svm in "
	                                      "/proc/cpuinfo)"
	                      : !kvm_access ? "/dev/kvm is missing or cannot be opened for reading and writing"
	                                    : NULL;
	if (!setting || !*setting || !strcmp(setting, "auto")) {
		*ret_accel = missing ? "tcg" : "kvm";
		*ret_why = missing;
		return 0;
	}
	if (!strcmp(setting, "tcg")) {
		*ret_accel = "tcg";
		*ret_why = NULL;
		return 0;
	}
	if (!strcmp(setting, "kvm")) {
		if (missing)
			return cp_error_set(err, CP_ERR_UNAVAILABLE,
			                    "CHAT2SBX_VM_ACCEL is kvm, but %s; enable virtualization for this machine "
			                    "(or nested virtualization for its VM) and give this user /dev/kvm, or set "
			                    "CHAT2SBX_VM_ACCEL=auto (or tcg) to emulate, many times slower",
			                    missing);
		*ret_accel = "kvm";
		*ret_why = NULL;
		return 0;
	}
	return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
	                    "CHAT2SBX_VM_ACCEL '%s' is not one of auto (kvm where usable, else tcg), kvm or tcg",
	                    setting);
}

const char *policy_runtime_choose(const char *setting, int kvm_usable, int vm_image, const char **ret_why)
{
	const char *why = NULL, *runtime = NULL;
	if (setting && *setting && strcmp(setting, "auto")) {
		runtime = setting;
	} else if (!kvm_usable) {
		why = "no usable hardware virtualization here, so sandboxes are containers of the engine's default "
		      "runtime; CHAT2SBX_RUNTIME=vm asks for microVMs under emulation (TCG, many times slower)";
	} else if (!vm_image) {
		why =
		    "this machine can run microVMs with KVM, but the vm image is missing (make template-vm builds it), "
		    "so sandboxes are containers of the engine's default runtime for now";
	} else {
		runtime = POLICY_RUNTIME_VM;
		why = "hardware virtualization is usable here, so sandboxes are microVMs (KVM)";
	}
	if (ret_why)
		*ret_why = why;
	return runtime;
}

int policy_runtime_needs_image(const char *setting, int cpu_virt, int kvm_access)
{
	return (!setting || !*setting || !strcmp(setting, "auto")) && cpu_virt && kvm_access;
}

int policy_runtime_decide(const struct policy_runtime_facts *f, struct policy_runtime_decision *ret,
                          struct cp_error **err)
{
	struct policy_runtime_decision d = {0};
	d.runtime =
	    policy_runtime_choose(f->setting ? f->setting : "", f->cpu_virt && f->kvm_access, f->vm_image, &d.why);
	if (d.runtime && !strcmp(d.runtime, POLICY_RUNTIME_VM) &&
	    policy_vm_accel_choose(f->accel_setting, f->cpu_virt, f->kvm_access, &d.accel, &d.accel_why, err) < 0)
		return -1;
	*ret = d;
	return 0;
}

int policy_runtime_is_vm(const char *runtime)
{
	return runtime && !strcmp(runtime, POLICY_RUNTIME_VM);
}

int policy_runtime_direct_channel(const char *runtime)
{
	return !policy_runtime_is_vm(runtime) && !(runtime && !strcmp(runtime, "runsc"));
}
