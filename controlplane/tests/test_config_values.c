/* test_config_values.c: the settings table's columns for what is not a
 * plain number or string: sizes and percentages parsed at load, 'auto',
 * 'unlimited', 'none', enumerations, and their refusals naming the setting
 * and what it accepts. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "config/config.h"

struct fake_env {
	const char *pairs[8];
};

static const char *fake_get(void *ud, const char *name)
{
	struct fake_env *e = ud;
	for (int i = 0; e->pairs[i]; i += 2)
		if (!strcmp(e->pairs[i], name))
			return e->pairs[i + 1];
	return NULL;
}

/* Loads with one variable set; NULL and *err on refusal. No .env; the
 * config.yaml under /nonexistent is absent. */
static struct config *load_one(const char *name, const char *value, struct cp_error **err)
{
	struct fake_env fe = {{name, value, NULL}};
	struct config_env env = {fake_get, &fe, "/nonexistent/u", NULL, "/opt/c2s"};
	struct config *c = NULL;
	if (config_load(&env, &c, err) < 0)
		return NULL;
	return c;
}

#define MIB (1LL << 20)
#define GIB (1LL << 30)

Test(config_values, sizes_defaults_are_auto)
{
	struct cp_error *err = NULL;
	struct config *c = load_one("UNSET", "x", &err);
	cr_assert_not_null(c, "%s", err ? err->message : "");
	cr_expect_eq(c->min_free_disk_bytes, CONFIG_SIZE_AUTO);
	cr_expect_eq(c->min_free_disk_percent, 0);
	cr_expect_eq(c->default_disk_bytes, CONFIG_SIZE_AUTO);
	cr_expect_eq(c->default_memory_bytes, CONFIG_SIZE_AUTO);
	cr_expect_eq(c->max_active_sandboxes, CONFIG_AUTO);
	cr_expect_eq(c->pids_limit, CONFIG_AUTO);
	cr_expect_str_eq(c->vm_accel, "auto");
	cr_expect_str_eq(c->vm_docker, "demand");
	cr_expect_eq(c->max_export_bytes, 2147483648LL);
	cr_expect_eq(c->save_memory_bytes, GIB);
	config_free(c);
}

struct size_case {
	const char *name, *value;
	int64_t bytes;
	int percent;
};

Test(config_values, every_accepted_spelling_is_accepted)
{
	static const struct size_case cases[] = {
	    {"CHAT2SBX_MIN_FREE_DISK", "auto", CONFIG_SIZE_AUTO, 0},
	    {"CHAT2SBX_MIN_FREE_DISK", "AUTO", CONFIG_SIZE_AUTO, 0},
	    {"CHAT2SBX_MIN_FREE_DISK", "", CONFIG_SIZE_AUTO, 0},
	    {"CHAT2SBX_MIN_FREE_DISK", "10%", CONFIG_SIZE_AUTO, 10},
	    {"CHAT2SBX_MIN_FREE_DISK", "1%", CONFIG_SIZE_AUTO, 1},
	    {"CHAT2SBX_MIN_FREE_DISK", "50%", CONFIG_SIZE_AUTO, 50},
	    {"CHAT2SBX_MIN_FREE_DISK", "2g", 2 * GIB, 0},
	    {"CHAT2SBX_MIN_FREE_DISK", "48m", 48 * MIB, 0},
	    {"CHAT2SBX_MIN_FREE_DISK", "100MB", 100 * MIB, 0},
	    {"CHAT2SBX_MIN_FREE_DISK", "1.5G", 3 * GIB / 2, 0},
	    {"CHAT2SBX_MIN_FREE_DISK", "1048576", MIB, 0},
	    {"CHAT2SBX_MIN_FREE_DISK", "1024k", MIB, 0},
	    {"CHAT2SBX_DEFAULT_DISK", "auto", CONFIG_SIZE_AUTO, 0},
	    {"CHAT2SBX_DEFAULT_DISK", "None", CONFIG_SIZE_NONE, 0},
	    {"CHAT2SBX_DEFAULT_DISK", "20g", 20 * GIB, 0},
	    {"CHAT2SBX_DEFAULT_DISK", "256m", 256 * MIB, 0},
	    {"CHAT2SBX_DEFAULT_MEMORY", "auto", CONFIG_SIZE_AUTO, 0},
	    {"CHAT2SBX_DEFAULT_MEMORY", "4g", 4 * GIB, 0},
	    {"CHAT2SBX_DEFAULT_MEMORY", "512m", 512 * MIB, 0},
	    {"CHAT2SBX_DEFAULT_MEMORY", "6m", 6 * MIB, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cp_error *err = NULL;
		struct config *c = load_one(cases[i].name, cases[i].value, &err);
		cr_assert_not_null(c, "%s=%s: %s", cases[i].name, cases[i].value, err ? err->message : "");
		int64_t got = !strcmp(cases[i].name, "CHAT2SBX_MIN_FREE_DISK")  ? c->min_free_disk_bytes
		              : !strcmp(cases[i].name, "CHAT2SBX_DEFAULT_DISK") ? c->default_disk_bytes
		                                                                : c->default_memory_bytes;
		cr_expect_eq(got, cases[i].bytes, "%s=%s: %lld", cases[i].name, cases[i].value, (long long)got);
		cr_expect_eq(c->min_free_disk_percent, cases[i].percent, "%s=%s", cases[i].name, cases[i].value);
		config_free(c);
	}
	static const struct {
		const char *name, *value;
		int want;
	} ints[] = {
	    {"CHAT2SBX_MAX_ACTIVE_SANDBOXES", "auto", CONFIG_AUTO},
	    {"CHAT2SBX_MAX_ACTIVE_SANDBOXES", "Auto", CONFIG_AUTO},
	    {"CHAT2SBX_MAX_ACTIVE_SANDBOXES", "unlimited", 0},
	    {"CHAT2SBX_MAX_ACTIVE_SANDBOXES", "UNLIMITED", 0},
	    {"CHAT2SBX_MAX_ACTIVE_SANDBOXES", "0", 0},
	    {"CHAT2SBX_MAX_ACTIVE_SANDBOXES", "7", 7},
	    {"CHAT2SBX_PIDS_LIMIT", "auto", CONFIG_AUTO},
	    {"CHAT2SBX_PIDS_LIMIT", "16", 16},
	};
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
		struct cp_error *err = NULL;
		struct config *c = load_one(ints[i].name, ints[i].value, &err);
		cr_assert_not_null(c, "%s=%s: %s", ints[i].name, ints[i].value, err ? err->message : "");
		int got = !strcmp(ints[i].name, "CHAT2SBX_PIDS_LIMIT") ? c->pids_limit : c->max_active_sandboxes;
		cr_expect_eq(got, ints[i].want, "%s=%s", ints[i].name, ints[i].value);
		config_free(c);
	}
	static const char *const words[][2] = {
	    {"CHAT2SBX_VM_ACCEL", "kvm"},   {"CHAT2SBX_VM_ACCEL", "tcg"},  {"CHAT2SBX_VM_ACCEL", "auto"},
	    {"CHAT2SBX_VM_DOCKER", "boot"}, {"CHAT2SBX_VM_DOCKER", "off"}, {"CHAT2SBX_MCP_TOKEN", "off"},
	};
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		struct cp_error *err = NULL;
		struct config *c = load_one(words[i][0], words[i][1], &err);
		cr_expect_not_null(c, "%s=%s: %s", words[i][0], words[i][1], err ? err->message : "");
		config_free(c);
	}
}

Test(config_values, bad_values_are_refused_naming_the_setting_and_what_it_takes)
{
	static const char *const cases[][3] = {
	    /* name, value, a part of the message */
	    {"CHAT2SBX_MIN_FREE_DISK", "lots", "is not a size"},
	    {"CHAT2SBX_MIN_FREE_DISK", "lots", "\"N%\" (1-50) or 'auto'"},
	    {"CHAT2SBX_MIN_FREE_DISK", "0", "below the 1m minimum"},
	    {"CHAT2SBX_MIN_FREE_DISK", "51%", "not a percentage from 1% to 50%"},
	    {"CHAT2SBX_MIN_FREE_DISK", "0%", "not a percentage from 1% to 50%"},
	    {"CHAT2SBX_MIN_FREE_DISK", "5.5%", "not a percentage"},
	    {"CHAT2SBX_MIN_FREE_DISK", "2t", "unknown unit"},
	    {"CHAT2SBX_DEFAULT_DISK", "1m", "below the 256m minimum"},
	    {"CHAT2SBX_DEFAULT_DISK", "big", ", 'none' or 'auto'"},
	    {"CHAT2SBX_DEFAULT_MEMORY", "4000g", "above the 1024g maximum"},
	    {"CHAT2SBX_DEFAULT_MEMORY", "none", "is not a size"},
	    {"CHAT2SBX_VM_ACCEL", "hvf", "is not one of auto, kvm, tcg"},
	    {"CHAT2SBX_VM_DOCKER", "Boot", "is not one of demand, boot, off"},
	    {"CHAT2SBX_MAX_ACTIVE_SANDBOXES", "lots", "1..100000, 'auto' or 'unlimited'"},
	    {"CHAT2SBX_PIDS_LIMIT", "unlimited", "16..32768 or 'auto'"},
	    {"CHAT2SBX_MCP_TOKEN", "secret", "takes only 'off'"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cp_error *err = NULL;
		struct config *c = load_one(cases[i][0], cases[i][1], &err);
		cr_expect_null(c, "%s=%s accepted", cases[i][0], cases[i][1]);
		config_free(c);
		if (!err)
			continue;
		cr_expect_eq(err->code, CP_ERR_INVALID_ARGUMENT);
		cr_expect(strstr(err->message, cases[i][0]) != NULL, "%s=%s: %s", cases[i][0], cases[i][1],
		          err->message);
		cr_expect(strstr(err->message, cases[i][2]) != NULL, "%s=%s: want '%s' in: %s", cases[i][0],
		          cases[i][1], cases[i][2], err->message);
		cp_error_free(err);
	}
}

Test(config_values, each_default_is_documented_once)
{
	size_t n = 0;
	const struct config_setting_info *s = config_settings(&n);
	for (size_t i = 0; i < n; i++) {
		cr_expect_not_null(s[i].default_text, "%s has no documented default", s[i].env);
		if (!strcmp(s[i].env, "CHAT2SBX_MAX_YIELD_MS"))
			cr_expect_str_eq(s[i].default_text, "30000");
		if (!strcmp(s[i].env, "CHAT2SBX_PORT"))
			cr_expect_str_eq(s[i].default_text, "18788");
	}
}
