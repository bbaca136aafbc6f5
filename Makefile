# chat2sbx — one GNU Makefile for the control plane, the helper, tests and
# the template. `make help` lists the targets.
.DEFAULT_GOAL := all
SHELL := /bin/bash

VERSION := $(shell cat VERSION)
GIT_VERSION := $(shell git describe --always --dirty 2>/dev/null || echo unknown)

CC ?= cc
CFLAGS ?= -O2 -g
# The flags as given, before the additions below: a sub-make gets these
# (make exports CFLAGS from the environment with the additions, which it
# would add again).
GIVEN_CFLAGS := $(CFLAGS)
override CFLAGS += -std=gnu17 -Wall -Wextra -D_GNU_SOURCE -MMD -MP \
	-DCHAT2SBX_VERSION='"$(VERSION)"' -DCHAT2SBX_GIT_VERSION='"$(GIT_VERSION)"'
LDFLAGS ?=
GIVEN_LDFLAGS := $(LDFLAGS)
# WERROR=1 (make check, make test) turns every warning into an error.
WERROR ?=
override CFLAGS += $(if $(filter-out 0,$(WERROR)),-Werror)
# CPPFLAGS (as dpkg-buildflags gives them: -D_FORTIFY_SOURCE) go with CFLAGS.
override CFLAGS += $(CPPFLAGS)

PKGS := libcurl json-c sqlite3 yaml-0.1 libmicrohttpd libnftables libarchive zlib nettle
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CRITERION_LIBS = $(shell pkg-config --libs criterion 2>/dev/null)

BUILD := build
SANITIZE ?= address,undefined

# ---- sources (one folder per layer; see controlplane/README.md) ----
CP_LIB_SRCS := $(sort $(wildcard controlplane/base/*.c controlplane/config/*.c controlplane/store/*.c \
	controlplane/docker/*.c controlplane/helper/*.c controlplane/mcp/*.c controlplane/policy/*.c \
	controlplane/lifecycle/*.c controlplane/workspace/*.c controlplane/node/*.c controlplane/guard/*.c controlplane/export/*.c controlplane/tools/*.c controlplane/tunnel/*.c controlplane/ops/*.c controlplane/ui/*.c \
	controlplane/firewall/*.c)) \
	controlplane/serve.c
CLI_SRCS := $(sort $(wildcard cli/*.c))
GEN_SRCS := $(BUILD)/gen/migrations.c $(BUILD)/gen/seccomp_default.c $(BUILD)/gen/ui_app_js.c $(BUILD)/gen/ui_style_css.c
HELPER_SRCS := $(sort $(filter-out template/helper/tests/%,$(wildcard template/helper/*.c)))
# The helper shares the control plane's abort-on-failure allocators (libc
# only) and json-c constructors (json-c, which the helper links anyway).
HELPER_SRCS += controlplane/base/xalloc.c controlplane/base/xjson.c
CP_TEST_SRCS := $(sort $(wildcard controlplane/tests/*.c))
HELPER_TEST_SRCS := $(sort $(wildcard template/helper/tests/*.c))
# The vm runtime's launcher, guest init and container commands (template/vm/).
VM_SRCS := $(sort $(wildcard template/vm/src/*.c))
VM_TEST_SRCS := $(sort $(wildcard template/vm/tests/*.c))
MIGRATIONS := $(sort $(wildcard migrations/*.sql))

CP_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(CP_LIB_SRCS) $(CLI_SRCS) $(GEN_SRCS))
CP_LIB_OBJS_SAN := $(patsubst %.c,$(BUILD)/san/%.o,$(CP_LIB_SRCS) $(GEN_SRCS))
CP_TEST_OBJS := $(patsubst %.c,$(BUILD)/san/%.o,$(CP_TEST_SRCS))
HELPER_OBJS := $(patsubst %.c,$(BUILD)/helper/%.o,$(HELPER_SRCS))
HELPER_LIB_OBJS_SAN := $(patsubst %.c,$(BUILD)/san/%.o,$(filter-out template/helper/main.c,$(HELPER_SRCS)))
HELPER_TEST_OBJS := $(patsubst %.c,$(BUILD)/san/%.o,$(HELPER_TEST_SRCS))
VM_OBJS := $(patsubst %.c,$(BUILD)/vm/%.o,$(VM_SRCS))
VM_LIB_OBJS_SAN := $(patsubst %.c,$(BUILD)/san/%.o,$(filter-out template/vm/src/main.c,$(VM_SRCS)))
VM_TEST_OBJS := $(patsubst %.c,$(BUILD)/san/%.o,$(VM_TEST_SRCS))

BIN := $(BUILD)/chat2sbx
HELPER_BIN := $(BUILD)/chat2sbx-helper
CP_TESTS := $(BUILD)/test_controlplane
HELPER_TESTS := $(BUILD)/test_helper
VM_BIN := $(BUILD)/chat2sbx-vm
VM_TESTS := $(BUILD)/test_vm
FUZZ_DIR := controlplane/fuzz
FUZZ_HARNESSES := fuzz_mcp_request fuzz_docker_demux fuzz_helper_frame fuzz_export_pack fuzz_patch_parse fuzz_tool_args fuzz_rpc_params \
	fuzz_export_bundle
FUZZ_BINS := $(addprefix $(BUILD)/fuzz/bin/,$(FUZZ_HARNESSES))
FUZZ_REPLAYS := $(addprefix $(BUILD)/replay/,$(FUZZ_HARNESSES))

.PHONY: all run test check lint lint-c lint-sh unit e2e template template-vm test-vm test-nodes e2e-installed deps engine clean help fmt fmt-check fuzz fuzz-replay check-docs docs check-gate
all: $(BIN) $(HELPER_BIN) $(VM_BIN)

# Objects are rebuilt when the flags change (WERROR, CFLAGS, SANITIZE, CC):
# the flags are written to a stamp every object depends on, only when they
# differ from the last build's (the git version is left out: it changes with
# every edit and only main.c and serve.c print it).
FLAGS_STAMP := $(BUILD)/flags.stamp
FLAGS_TEXT := $(CC) $(filter-out -DCHAT2SBX_GIT_VERSION=%,$(CFLAGS)) $(SANITIZE)
ifneq ($(FLAGS_TEXT),$(file <$(FLAGS_STAMP)))
$(shell mkdir -p $(BUILD))
$(file >$(FLAGS_STAMP),$(FLAGS_TEXT))
endif

$(BIN): $(CP_OBJS)
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS) -lpthread

# The helper runs in any image, so it is linked statically (libc, json-c,
# PCRE2 and nettle for SHA-256).
HELPER_PKGS := json-c libpcre2-8 nettle
$(HELPER_BIN): $(HELPER_OBJS)
	$(CC) -static $(LDFLAGS) -o $@ $^ $(shell pkg-config --static --libs $(HELPER_PKGS)) -lutil -lresolv

# chat2sbx-vm runs as a container's PID 1 and as a guest's /init (in an
# initramfs, before any library exists), so it is static and links libc only.
$(VM_BIN): $(VM_OBJS)
	$(CC) -static $(LDFLAGS) -o $@ $^

$(BUILD)/vm/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itemplate/vm/src -Itemplate/helper -c -o $@ $<

$(BUILD)/obj/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -Icontrolplane -Itemplate/helper -c -o $@ $<

$(BUILD)/helper/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(shell pkg-config --cflags $(HELPER_PKGS)) -Itemplate/helper -c -o $@ $<

$(BUILD)/san/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -O1 -fno-omit-frame-pointer -fsanitize=$(SANITIZE) $(PKG_CFLAGS) \
		-Icontrolplane -Itemplate/helper -Itemplate/vm/src -c -o $@ $<

# Migrations are compiled into the binary so the schema always matches the code.
$(BUILD)/gen/migrations.c: $(MIGRATIONS) scripts/embed-migrations.sh
	@mkdir -p $(dir $@)
	scripts/embed-migrations.sh $(MIGRATIONS) > $@

# The engine's default seccomp profile, the base of the sandbox profile
# (controlplane/docker/profiles/README.md), compiled in like the migrations.
SECCOMP_BASE := controlplane/docker/profiles/seccomp-default.json
$(BUILD)/gen/seccomp_default.c: $(SECCOMP_BASE) scripts/embed-file.sh
	@mkdir -p $(dir $@)
	scripts/embed-file.sh docker_seccomp_default_json $(SECCOMP_BASE) > $@

# The owner page's script and style (issue 26), compiled in: serve needs no
# file beside it and no network to show the page.
$(BUILD)/gen/ui_app_js.c: controlplane/ui/assets/app.js scripts/embed-file.sh
	@mkdir -p $(dir $@)
	scripts/embed-file.sh ui_app_js $< > $@
$(BUILD)/gen/ui_style_css.c: controlplane/ui/assets/style.css scripts/embed-file.sh
	@mkdir -p $(dir $@)
	scripts/embed-file.sh ui_style_css $< > $@

# docgen prints facts of the code's tables for the docs (make docs, make
# check-docs): the tool reference page and the settings' names.
DOCGEN := $(BUILD)/docgen
$(DOCGEN): $(BUILD)/obj/scripts/docgen.o $(patsubst %.c,$(BUILD)/obj/%.o,$(CP_LIB_SRCS) $(GEN_SRCS))
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS) -lpthread

$(CP_TESTS): $(CP_TEST_OBJS) $(CP_LIB_OBJS_SAN)
	$(CC) -fsanitize=$(SANITIZE) -o $@ $^ $(PKG_LIBS) $(CRITERION_LIBS) -lpthread

$(HELPER_TESTS): $(HELPER_TEST_OBJS) $(HELPER_LIB_OBJS_SAN)
	$(CC) -fsanitize=$(SANITIZE) -o $@ $^ $(shell pkg-config --libs $(HELPER_PKGS)) $(CRITERION_LIBS) -lutil -lresolv

$(VM_TESTS): $(VM_TEST_OBJS) $(VM_LIB_OBJS_SAN)
	$(CC) -fsanitize=$(SANITIZE) -o $@ $^ $(CRITERION_LIBS)

deps:
	scripts/deps.sh all

engine: deps
	scripts/ensure-engine.sh

# Unit tests under ASan/UBSan (no engine needed); unit adds the fuzz corpus replay.
.PHONY: unit-tests
unit-tests: $(CP_TESTS) $(if $(HELPER_TEST_SRCS),$(HELPER_TESTS)) $(VM_TESTS)
	scripts/unit.sh $(CP_TESTS)
	$(if $(HELPER_TEST_SRCS),scripts/unit.sh $(HELPER_TESTS))
	scripts/unit.sh $(VM_TESTS)

unit: unit-tests fuzz-replay

# ---- fuzzing (controlplane/fuzz/README.md) ----
# make fuzz: libFuzzer harnesses built with clang, each run FUZZ_SECONDS over
# a working corpus in build/fuzz/corpus seeded from controlplane/fuzz.
# fuzz-replay (part of unit): the same harnesses built with $(CC) as plain
# programs that replay controlplane/fuzz/corpus and regressions once.
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 120
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all
# Library sources each harness links (the objects the unit tests link).
FUZZ_SRCS_fuzz_mcp_request := $(sort $(wildcard controlplane/base/*.c controlplane/mcp/*.c))
FUZZ_SRCS_fuzz_docker_demux := controlplane/docker/demux.c
FUZZ_SRCS_fuzz_helper_frame := template/helper/frame.c template/helper/hlog.c controlplane/base/xalloc.c
FUZZ_SRCS_fuzz_export_pack := controlplane/export/pack_check.c controlplane/base/error.c \
	controlplane/base/xalloc.c controlplane/base/clock.c
FUZZ_SRCS_fuzz_export_bundle := controlplane/export/bundle.c controlplane/policy/refs.c controlplane/base/text.c \
	controlplane/base/error.c controlplane/base/xalloc.c
FUZZ_SRCS_fuzz_rpc_params := template/helper/rpc.c template/helper/hlog.c controlplane/base/xalloc.c \
	controlplane/base/xjson.c
FUZZ_SRCS_fuzz_tool_args := $(FUZZ_SRCS_fuzz_mcp_request)
FUZZ_SRCS_fuzz_patch_parse := template/helper/patch_parse.c template/helper/rpc.c template/helper/utf8.c \
	template/helper/hlog.c controlplane/base/xalloc.c controlplane/base/xjson.c

$(BUILD)/fuzz/obj/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CFLAGS) -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link $(FUZZ_SAN) $(PKG_CFLAGS) \
		-Icontrolplane -Itemplate/helper -c -o $@ $<

define FUZZ_HARNESS
$(BUILD)/fuzz/bin/$(1): $(BUILD)/fuzz/obj/$(FUZZ_DIR)/$(1).o $(patsubst %.c,$(BUILD)/fuzz/obj/%.o,$(FUZZ_SRCS_$(1)))
	@mkdir -p $$(dir $$@)
	$(FUZZ_CC) -fsanitize=fuzzer $(FUZZ_SAN) -o $$@ $$^ $$(PKG_LIBS) -lpthread
$(BUILD)/replay/$(1): $(BUILD)/san/$(FUZZ_DIR)/$(1).o $(BUILD)/san/$(FUZZ_DIR)/replay_main.o \
		$(patsubst %.c,$(BUILD)/san/%.o,$(FUZZ_SRCS_$(1)))
	@mkdir -p $$(dir $$@)
	$(CC) -fsanitize=$(SANITIZE) -o $$@ $$^ $$(PKG_LIBS) -lpthread
endef
$(foreach h,$(FUZZ_HARNESSES),$(eval $(call FUZZ_HARNESS,$(h))))

fuzz: $(FUZZ_BINS)
	@status=0; for h in $(FUZZ_HARNESSES); do \
		mkdir -p $(BUILD)/fuzz/corpus/$$h $(BUILD)/fuzz/artifacts; \
		echo "fuzz: $$h for $(FUZZ_SECONDS)s"; \
		$(BUILD)/fuzz/bin/$$h -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
			-artifact_prefix=$(BUILD)/fuzz/artifacts/$$h- $(BUILD)/fuzz/corpus/$$h $(FUZZ_DIR)/corpus/$$h \
			$$(test -d $(FUZZ_DIR)/regressions/$$h && echo $(FUZZ_DIR)/regressions/$$h) || status=1; \
	done; \
	[ $$status = 0 ] || echo "fuzz: a harness failed; reproducers are in $(BUILD)/fuzz/artifacts" >&2; \
	exit $$status

$(FUZZ_BINS): | fuzz-deps
.PHONY: fuzz-deps
fuzz-deps:
	@$(FUZZ_CC) --version >/dev/null 2>&1 || scripts/deps.sh fuzz

fuzz-replay: $(FUZZ_REPLAYS)
	scripts/fuzz-replay.sh $(BUILD)/replay $(FUZZ_DIR) $(FUZZ_HARNESSES)

# The template image (cached by a hash of its inputs). With
# CHAT2SBX_RUNTIME=vm in the environment, the vm runtime's image too.
TEMPLATE_BUILD = template/build.sh $(HELPER_BIN)$(if $(filter vm,$(CHAT2SBX_RUNTIME)), && $(TEMPLATE_VM_BUILD))
# The vm runtime's image, derived from the template image
# (template/vm/README.md; cached by a hash of its inputs; a boot is
# smoke-tested after each build).
TEMPLATE_VM_BUILD = template/vm/build.sh $(VM_BIN) $(HELPER_BIN)

template: all
	$(TEMPLATE_BUILD)

template-vm: all
	template/build.sh $(HELPER_BIN)
	$(TEMPLATE_VM_BUILD)

# The vm image too: e2e 31 boots one vm sandbox (the vm runtime's fast
# subset; cached, a few minutes the first time).
e2e: all
	scripts/ensure-engine.sh
	template/build.sh $(HELPER_BIN)
	$(TEMPLATE_VM_BUILD)
	e2e/run.sh

# Installed like any Linux tool and used by a normal user (issue 25;
# e2e/installed/run.sh): as root on a throwaway machine, it installs into
# /usr/local, adds a user, upgrades, uninstalls. Not part of `make e2e`.
# Path A (make install) always; path B (the package) where make deb can run
# (E2E_INSTALLED_PATHS="a deb" by default on Debian with dpkg-buildpackage).
# `make test` runs path B: the package is what the issue's users install.
E2E_INSTALLED_PATHS ?= a $(if $(shell command -v dpkg-buildpackage),deb)
e2e-installed: all
	scripts/ensure-engine.sh
	for p in $(E2E_INSTALLED_PATHS); do e2e/installed/run.sh $$p || exit 1; done

# The vm runtime's end-to-end scenarios (e2e/vm/; slow under TCG, so not
# part of `make test`; docs/vm.md).
test-vm: all
	scripts/ensure-engine.sh
	template/build.sh $(HELPER_BIN)
	$(TEMPLATE_VM_BUILD)
	e2e/run.sh --vm

# Other Docker Engines as nodes (issue 28; e2e/nodes/, docs/nodes.md): a
# second dockerd in a network namespace per scenario, mutual TLS, the node
# commands. As root; not part of `make e2e` (about 15 s, but it makes
# namespaces and an engine of its own).
test-nodes: all
	scripts/ensure-engine.sh
	e2e/run.sh --nodes

# Everything on a fresh Debian machine: packages, then the gate (make
# check), the Debian package (make check-deb), then the engine, the
# template and the end-to-end tests, all built with -Werror, then the
# package installed, used by a normal user, upgraded and removed.
test:
	scripts/deps.sh all
	$(MAKE) check
	$(MAKE) check-deb
	$(MAKE) WERROR=1 e2e
	$(MAKE) WERROR=1 e2e-installed E2E_INSTALLED_PATHS=deb

# The gate (issue 24): no root, no package installation, no engine, no
# network. In order: the build with -Werror, the format, the static analysis
# and shellcheck, the unit tests under ASan/UBSan, the fuzz-corpus replay,
# the structure checks. Stops at the first step that fails.
check:
	$(MAKE) WERROR=1 all
	$(MAKE) fmt-check
	$(MAKE) WERROR=1 lint
	$(MAKE) WERROR=1 unit-tests
	$(MAKE) WERROR=1 fuzz-replay
	$(MAKE) WERROR=1 check-docs
	$(MAKE) WERROR=1 check-man
	$(MAKE) WERROR=1 check-install
	$(MAKE) check-gate

# make check's own test: a planted warning, format error and -fanalyzer
# finding each fail its rules (scripts/tests/gate-check.sh, in a copy).
check-gate:
	scripts/tests/gate-check.sh

# ---- lint: gcc -fanalyzer over every production .c, and shellcheck ----
# Each file is analysed once per change (a stamp object in build/lint).
# A finding the analyser gets wrong is silenced only in scripts/lint.suppress
# (file, warning option, the reason), reviewed like code.
LINT_SUPPRESS := scripts/lint.suppress
lint_flags = $(shell awk -v f='$(1)' '$$1 == f ":" { print $$2 }' $(LINT_SUPPRESS))
LINT_CP := $(patsubst %.c,$(BUILD)/lint/obj/%.o,$(CP_LIB_SRCS) $(CLI_SRCS) scripts/docgen.c)
LINT_HELPER := $(patsubst %.c,$(BUILD)/lint/helper/%.o,$(filter template/helper/%,$(HELPER_SRCS)))
LINT_VM := $(patsubst %.c,$(BUILD)/lint/vm/%.o,$(VM_SRCS))
ANALYZE := -fanalyzer -Werror

$(BUILD)/lint/obj/%.o: %.c $(FLAGS_STAMP) $(LINT_SUPPRESS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(ANALYZE) $(call lint_flags,$<) $(PKG_CFLAGS) -Icontrolplane -Itemplate/helper -c -o $@ $<
$(BUILD)/lint/helper/%.o: %.c $(FLAGS_STAMP) $(LINT_SUPPRESS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(ANALYZE) $(call lint_flags,$<) $(shell pkg-config --cflags $(HELPER_PKGS)) -Itemplate/helper -c -o $@ $<
$(BUILD)/lint/vm/%.o: %.c $(FLAGS_STAMP) $(LINT_SUPPRESS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(ANALYZE) $(call lint_flags,$<) -Itemplate/vm/src -Itemplate/helper -c -o $@ $<

SHELL_SCRIPTS = $(wildcard scripts/*.sh scripts/tests/*.sh template/build.sh template/vm/*.sh) e2e/run.sh e2e/deps.sh e2e/bench/baseline.sh \
	e2e/installed/run.sh e2e/nodes/engine.sh

lint: lint-c lint-sh
lint-c: $(LINT_CP) $(LINT_HELPER) $(LINT_VM)
lint-sh:
	@command -v shellcheck >/dev/null 2>&1 || { echo "lint: shellcheck is missing: run scripts/deps.sh (or apt-get install shellcheck)" >&2; exit 1; }
	shellcheck $(SHELL_SCRIPTS)

# The internals tour names only files and functions that exist, every
# include follows its layers (scripts/check-docs.sh; controlplane/README.md),
# and no two files of one folder call each other in a loop
# (scripts/check-loops.sh, over the built objects; folders listed in
# scripts/check-loops.allow are reported, not failed). Then the checks' own
# test: a planted loop and a planted wrong include must fail them.
# Then every *.md and man/*.scd: links, anchors, repository paths, commands,
# settings, make targets, the package list and the generated tool reference
# (scripts/check-manual.sh), and that check's own test.
check-docs: $(BIN) $(HELPER_BIN) $(VM_BIN) $(DOCGEN)
	scripts/check-docs.sh
	scripts/check-loops.sh $(BUILD)
	scripts/tests/structure-check.sh
	scripts/check-manual.sh $(BUILD)
	scripts/tests/manual-check.sh $(BUILD)

# The pages generated from the code's tables (docs/testing.md).
docs: $(DOCGEN)
	$(DOCGEN) tools > docs/tool-reference.md.tmp && mv docs/tool-reference.md.tmp docs/tool-reference.md

# Install what is missing, build, start the engine, build the template, serve.
run:
	scripts/deps.sh all
	$(MAKE) all
	scripts/ensure-engine.sh
	$(TEMPLATE_BUILD)
	scripts/run.sh $(BIN)

# ---- install (issue 25): the installed layout, make install, make uninstall ----
# PREFIX (default /usr/local) and DESTDIR as every Makefile takes them. The
# installed chat2sbx finds its programs in PKGLIBDIR and its data in
# PKGDATADIR, compiled in (controlplane/config/install_dirs.c, the one file
# built twice): build/chat2sbx, the source tree's, finds them from its own
# location as before; build/install/chat2sbx is the one `make install`
# copies. CHAT2SBX_LIB_DIR and CHAT2SBX_DATA_DIR override them at run time.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
PKGLIBDIR ?= $(PREFIX)/lib/chat2sbx
PKGDATADIR ?= $(PREFIX)/share/chat2sbx
INSTALL_BUILD := $(BUILD)/install
INSTALL_BIN := $(INSTALL_BUILD)/chat2sbx
INSTALL_DIRS_SRC := controlplane/config/install_dirs.c
INSTALL_DIRS_OBJ := $(INSTALL_BUILD)/install_dirs.o
# Rebuilt when the directories change (as FLAGS_STAMP for the flags).
INSTALL_STAMP := $(INSTALL_BUILD)/dirs.stamp
INSTALL_DIRS_TEXT := $(PKGLIBDIR) $(PKGDATADIR)
ifneq ($(INSTALL_DIRS_TEXT),$(file <$(INSTALL_STAMP)))
$(shell mkdir -p $(INSTALL_BUILD))
$(file >$(INSTALL_STAMP),$(INSTALL_DIRS_TEXT))
endif

# The compiled-in directories must be absolute and one word each: a
# relative one would be looked up from whatever folder chat2sbx runs in.
# (A recipe, not a prerequisite of the object: install-files asks make -q
# whether the object is current, and a phony prerequisite never is.)
define check_install_paths
@for d in $(BINDIR) $(PKGLIBDIR) $(PKGDATADIR) $(MANDIR) $(COMPLETIONDIR) $(SYSTEMDUSERDIR); do \
	case "$$d" in /*) ;; *) echo "make: '$$d' is not an absolute path; give PREFIX (and BINDIR, PKGLIBDIR, PKGDATADIR) as /..." >&2; exit 2;; esac; \
done
@if [ "$(words $(PREFIX))" != 1 ] || [ "$(words $(DESTDIR) x)" -gt 2 ]; then \
	echo "make: PREFIX and DESTDIR must not contain spaces ('$(PREFIX)', '$(DESTDIR)')" >&2; exit 2; fi
endef
.PHONY: install-paths
install-paths:
	$(check_install_paths)

$(INSTALL_DIRS_OBJ): $(INSTALL_DIRS_SRC) $(FLAGS_STAMP) $(INSTALL_STAMP)
	$(check_install_paths)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DCHAT2SBX_LIB_DIR='"$(PKGLIBDIR)"' -DCHAT2SBX_DATA_DIR='"$(PKGDATADIR)"' -c -o $@ $<

$(INSTALL_BIN): $(filter-out $(BUILD)/obj/$(INSTALL_DIRS_SRC:.c=.o),$(CP_OBJS)) $(INSTALL_DIRS_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS) -lpthread

# The generated files (cli/gen/gendoc.c): chat2sbx(1)'s commands from the
# CLI's help table, chat2sbx.conf(5)'s settings from the settings table, the
# bash completion, and the systemd user unit `setup --install-service`
# writes, for BINDIR.
GENDOC := $(BUILD)/gendoc
GENDOC_OBJS := $(BUILD)/obj/cli/gen/gendoc.o $(BUILD)/obj/cli/help.o $(BUILD)/obj/cli/service_unit.o \
	$(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard controlplane/base/*.c controlplane/config/*.c))
$(GENDOC): $(GENDOC_OBJS)
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS) -lpthread

MAN_PAGES := $(BUILD)/man/chat2sbx.1 $(BUILD)/man/chat2sbx.conf.5
$(BUILD)/man/chat2sbx.1.scd: man/chat2sbx.1.scd $(GENDOC)
	@mkdir -p $(dir $@)
	$(GENDOC) man1 < $< > $@.tmp && mv $@.tmp $@
$(BUILD)/man/chat2sbx.conf.5.scd: man/chat2sbx.conf.5.scd $(GENDOC)
	@mkdir -p $(dir $@)
	$(GENDOC) man5 < $< > $@.tmp && mv $@.tmp $@
$(BUILD)/man/%: $(BUILD)/man/%.scd
	@command -v scdoc >/dev/null 2>&1 || { echo "man: scdoc is missing: run scripts/deps.sh (or apt-get install scdoc)" >&2; exit 1; }
	scdoc < $< > $@.tmp && mv $@.tmp $@
COMPLETION := $(BUILD)/install/chat2sbx.bash
SERVICE_UNIT := $(BUILD)/install/chat2sbx.service
$(COMPLETION): $(GENDOC)
	$(GENDOC) completion > $@.tmp && mv $@.tmp $@
$(SERVICE_UNIT): $(GENDOC) $(INSTALL_STAMP)
	$(GENDOC) unit $(BINDIR) > $@.tmp && mv $@.tmp $@

.PHONY: man install uninstall check-man check-install
man: $(MAN_PAGES)

# `chat2sbx --help`, `chat2sbx CMD --help` and chat2sbx(1) agree; every
# setting is in chat2sbx.conf(5) (scripts/tests/man-check.sh).
check-man: $(BIN) $(MAN_PAGES)
	scripts/tests/man-check.sh $(BIN) $(BUILD)/man

# What `make install` lays out, exactly: scripts/tests/install-layout.txt
# (scripts/tests/install-layout.sh checks it, and `make uninstall` against
# nothing left).
MANDIR ?= $(PREFIX)/share/man
COMPLETIONDIR ?= $(PREFIX)/share/bash-completion/completions
SYSTEMDUSERDIR ?= $(PREFIX)/lib/systemd/user
TEMPLATE_INPUTS := template/build.sh template/Dockerfile template/packages.txt
VM_TEMPLATE_INPUTS := template/vm/build.sh template/vm/guest-build.sh template/vm/apt-install.sh \
	template/vm/mkcpio.py template/vm/Dockerfile template/vm/Dockerfile.runtime template/vm/modules.txt \
	template/vm/guest-packages.txt template/vm/runtime-packages.txt

# What install copies; `make install-build` builds them (and copies nothing),
# `make install-files` copies them (and builds nothing: debian/rules builds
# as the user and copies under fakeroot). Every file and mode is in
# scripts/tests/install-layout.txt. mkcpio.py is run as `python3 mkcpio.py`
# inside a container, never executed itself, so it is data (0644).
INSTALL_INPUTS := $(INSTALL_BIN) $(HELPER_BIN) $(VM_BIN) $(MAN_PAGES) $(COMPLETION) $(SERVICE_UNIT)
.PHONY: install-build install-files
install-build: $(INSTALL_INPUTS)

install: install-paths install-build
	$(install_files)

install-files: install-paths
	@$(MAKE) -s -q CFLAGS='$(GIVEN_CFLAGS)' LDFLAGS='$(GIVEN_LDFLAGS)' $(INSTALL_INPUTS) || { echo "install-files: the files to install are not built, or were built with other flags or another PREFIX; run 'make PREFIX=$(PREFIX) install-build' first (with the same CFLAGS)" >&2; exit 1; }
	$(install_files)

define install_files
install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(PKGLIBDIR) $(DESTDIR)$(PKGDATADIR)/template/vm \
	$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(COMPLETIONDIR) $(DESTDIR)$(SYSTEMDUSERDIR)
install -m 0755 $(INSTALL_BIN) $(DESTDIR)$(BINDIR)/chat2sbx
install -m 0755 $(HELPER_BIN) $(VM_BIN) $(DESTDIR)$(PKGLIBDIR)/
install -m 0644 VERSION .env.example $(DESTDIR)$(PKGDATADIR)/
install -m 0755 template/build.sh $(DESTDIR)$(PKGDATADIR)/template/
install -m 0644 $(filter-out %.sh,$(TEMPLATE_INPUTS)) $(DESTDIR)$(PKGDATADIR)/template/
install -m 0755 $(filter %.sh,$(VM_TEMPLATE_INPUTS)) $(DESTDIR)$(PKGDATADIR)/template/vm/
install -m 0644 $(filter-out %.sh,$(VM_TEMPLATE_INPUTS)) $(DESTDIR)$(PKGDATADIR)/template/vm/
install -m 0644 $(BUILD)/man/chat2sbx.1 $(DESTDIR)$(MANDIR)/man1/
install -m 0644 $(BUILD)/man/chat2sbx.conf.5 $(DESTDIR)$(MANDIR)/man5/
install -m 0644 $(COMPLETION) $(DESTDIR)$(COMPLETIONDIR)/chat2sbx
install -m 0644 $(SERVICE_UNIT) $(DESTDIR)$(SYSTEMDUSERDIR)/chat2sbx.service
endef

# Removes exactly what install put, then the directories of its own.
uninstall: install-paths
	rm -f $(DESTDIR)$(BINDIR)/chat2sbx $(DESTDIR)$(PKGLIBDIR)/chat2sbx-helper $(DESTDIR)$(PKGLIBDIR)/chat2sbx-vm \
		$(DESTDIR)$(PKGDATADIR)/VERSION $(DESTDIR)$(PKGDATADIR)/.env.example \
		$(addprefix $(DESTDIR)$(PKGDATADIR)/,$(TEMPLATE_INPUTS) $(VM_TEMPLATE_INPUTS)) \
		$(DESTDIR)$(MANDIR)/man1/chat2sbx.1 $(DESTDIR)$(MANDIR)/man5/chat2sbx.conf.5 \
		$(DESTDIR)$(COMPLETIONDIR)/chat2sbx $(DESTDIR)$(SYSTEMDUSERDIR)/chat2sbx.service
	-rmdir $(DESTDIR)$(PKGDATADIR)/template/vm $(DESTDIR)$(PKGDATADIR)/template $(DESTDIR)$(PKGDATADIR) \
		$(DESTDIR)$(PKGLIBDIR) 2>/dev/null

# make install DESTDIR=tmp PREFIX=/usr lays out exactly the documented
# files, the installed binary looks in PREFIX's directories, and make
# uninstall leaves nothing (no root, no engine).
check-install:
	scripts/tests/install-layout.sh

# ---- the Debian package (issue 25; debian/, docs/operations.md) ----
# make deb: build/deb/chat2sbx_<VERSION>_amd64.deb with dpkg-buildpackage,
# out of a copy of the tree (scripts/deb.sh). DEB_VERSION=0.1.0+test2 gives
# the package another version (upgrade tests; the program's own stays
# VERSION). make lintian: no error, no warning not overridden with its
# reason. make check-deb: that, and the package's files, fields,
# maintainer scripts and firewall unit (scripts/tests/deb-check.sh).
DEB_VERSION ?= $(VERSION)
DEB_FILE := $(BUILD)/deb/chat2sbx_$(DEB_VERSION)_amd64.deb
.PHONY: deb lintian check-deb deb-deps
deb-deps:
	@command -v dpkg-buildpackage >/dev/null 2>&1 && command -v dh >/dev/null 2>&1 && command -v lintian >/dev/null 2>&1 && \
		command -v fakeroot >/dev/null 2>&1 || scripts/deps.sh deb

deb: deb-deps
	DEB_VERSION=$(DEB_VERSION) scripts/deb.sh

lintian: deb
	lintian -I -E --pedantic --fail-on error,warning $(DEB_FILE)
	@echo "lintian: no error, no warning; overridden, each with its reason in debian/chat2sbx.lintian-overrides:"
	@lintian --show-overrides $(DEB_FILE) 2>/dev/null | grep '^O: ' || true

check-deb: deb-deps
	DEB_VERSION=$(DEB_VERSION) scripts/tests/deb-check.sh

# ---- benchmark (issues 8 and 27; docs/performance.md) ----
# make bench: the C load client (libcurl, one handle per thread) and the
# driver e2e/bench/run.mjs, which starts serve on a free port with a
# temporary data root and measures round trips, creates, throughput, memory
# and streaming against the engine's own baselines, then runc and vm side by
# side (the vm column only where chat2sbx-vm is built; BENCH_VM=only runs just
# that comparison, BENCH_VM=off leaves vm out). Each row has its target
# (issue 27's); a missed one fails the run after the table (BENCH_NO_FAIL=1:
# a warning). BENCH_BASELINE=<commit>: that commit built from git (cached in
# $(BUILD)/bench/baseline/) and served beside this build, calls alternated,
# plus issue 27's rows (BENCH_AB_ONLY=1: the A/B rows only).
# Results: $(BUILD)/bench/results.json. e2e/deps.sh: the driver's node modules.
BENCH_VM ?= auto
BENCH_BASELINE ?=
BENCH_LOADCLIENT := $(BUILD)/bench/loadclient

$(BENCH_LOADCLIENT): e2e/bench/loadclient.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(shell pkg-config --cflags libcurl json-c) -o $@ $< $(shell pkg-config --libs libcurl json-c) -lpthread

.PHONY: bench
bench: all $(BENCH_LOADCLIENT)
	scripts/ensure-engine.sh
	$(TEMPLATE_BUILD)
	e2e/deps.sh e2e
	node e2e/bench/run.mjs --bin $(BIN) --loadclient $(BENCH_LOADCLIENT) --out $(BUILD)/bench/results.json --vm $(BENCH_VM) \
		$(if $(BENCH_BASELINE),--baseline $(BENCH_BASELINE))

# make bench-git-tree: what the per-call check of a direct workspace's .git
# costs on a repository of 5 000 loose objects and 300 branches (issue 23;
# e2e/bench/git_tree_bench.c, docs/workspaces.md "No link, FIFO or device anywhere in .git").
GIT_TREE_BENCH := $(BUILD)/bench/git_tree_bench
GIT_TREE_BENCH_OBJS := $(addprefix $(BUILD)/obj/controlplane/,guard/git_tree.o policy/git_tree.o policy/refs.o \
	base/error.o base/xalloc.o)

$(GIT_TREE_BENCH): e2e/bench/git_tree_bench.c $(GIT_TREE_BENCH_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -Icontrolplane -o $@ $^ $(PKG_LIBS)

.PHONY: bench-git-tree
bench-git-tree: $(GIT_TREE_BENCH)
	$(GIT_TREE_BENCH)

FMT_FILES = $(wildcard controlplane/*.[ch] controlplane/*/*.[ch] cli/*.[ch] cli/gen/*.[ch] template/helper/*.[ch] template/helper/tests/*.[ch] \
	template/vm/src/*.[ch] template/vm/tests/*.[ch] scripts/*.c)

fmt:
	clang-format -i $(FMT_FILES)

fmt-check:
	@clang-format --dry-run --Werror $(FMT_FILES) && echo "fmt-check: every C file is formatted (.clang-format)"

clean:
	rm -rf $(BUILD)

help:
	@echo "make            build build/chat2sbx, build/chat2sbx-helper and build/chat2sbx-vm"
	@echo "make run        install what is missing, build, build the template, serve on loopback"
	@echo "make test       install what is missing, make check, then the template and e2e on the real engine"
	@echo "make check      the gate, no root/engine/network: -Werror build, fmt-check, lint, unit tests, fuzz replay, check-docs"
	@echo "make lint       gcc -fanalyzer over the production C (scripts/lint.suppress) and shellcheck over the scripts"
	@echo "make unit       unit tests only (and the fuzz corpus replay)"
	@echo "make e2e        end-to-end tests (real engine, real MCP clients of 2025 and 2026-07-28), then the MCP conformance suites"
	@echo "make fuzz       libFuzzer harnesses (clang), FUZZ_SECONDS each (default 120)"
	@echo "make template   build the sandbox template image (cached by content hash)"
	@echo "make template-vm  build the vm runtime's image from it (QEMU, kernel, guest disks; cached)"
	@echo "make test-vm    the vm runtime's end-to-end scenarios (slow under TCG; not in make test)"
	@echo "make test-nodes other engines as nodes over mutual TLS (root; e2e/nodes; not in make test)"
	@echo "make fmt        format the C sources (.clang-format); make fmt-check only checks"
	@echo "make check-docs every doc is true: the internals tour, links, paths, commands, settings, targets; no call loop"
	@echo "make docs       regenerate docs/tool-reference.md from the tool table"
	@echo "make bench      benchmark against the engine's baselines and issue 27's targets, fails on a miss (docs/performance.md);"
	@echo "                BENCH_BASELINE=<commit> A/B against that commit, BENCH_QUICK=1 smaller, BENCH_NO_FAIL=1 only warn, BENCH_VM=off|only"
	@echo "make bench-git-tree  the per-call cost of a direct workspace's .git check"
	@echo "make man        chat2sbx(1) and chat2sbx.conf(5) into build/man (scdoc)"
	@echo "make install    install under PREFIX (/usr/local; DESTDIR too); make uninstall removes it"
	@echo "make install-build / install-files  the same in two steps: build only, then copy only"
	@echo "make deb        build/deb/chat2sbx_VERSION_amd64.deb (DEB_VERSION=... another version); make lintian, make check-deb"
	@echo "make e2e-installed  install (make install, the package), use as a test user, upgrade, remove (root; throwaway machine)"
	@echo "make check-man / check-install / check-gate  the man pages, the installed layout, the gate's own test (all in make check)"
	@echo "make clean      remove build/"

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
