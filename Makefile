# chat2sbx — one GNU Makefile for the control plane, the helper, tests and
# the template. `make help` lists the targets.
.DEFAULT_GOAL := all
SHELL := /bin/bash

VERSION := $(shell cat VERSION)
GIT_VERSION := $(shell git describe --always --dirty 2>/dev/null || echo unknown)

CC ?= cc
CFLAGS ?= -O2 -g
override CFLAGS += -std=gnu17 -Wall -Wextra -D_GNU_SOURCE -MMD -MP \
	-DCHAT2SBX_VERSION='"$(VERSION)"' -DCHAT2SBX_GIT_VERSION='"$(GIT_VERSION)"'
LDFLAGS ?=

PKGS := libcurl json-c sqlite3 yaml-0.1 libmicrohttpd
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CRITERION_LIBS = $(shell pkg-config --libs criterion 2>/dev/null)

BUILD := build
SANITIZE ?= address,undefined

# ---- sources (one folder per layer; see controlplane/README.md) ----
CP_LIB_SRCS := $(sort $(wildcard controlplane/base/*.c controlplane/config/*.c controlplane/store/*.c \
	controlplane/docker/*.c controlplane/helper/*.c controlplane/mcp/*.c controlplane/policy/*.c \
	controlplane/lifecycle/*.c controlplane/tools/*.c)) controlplane/main.c
CLI_SRCS := $(sort $(wildcard cli/*.c))
GEN_SRCS := $(BUILD)/gen/migrations.c
HELPER_SRCS := $(sort $(filter-out template/helper/tests/%,$(wildcard template/helper/*.c)))
CP_TEST_SRCS := $(sort $(wildcard controlplane/tests/*.c))
HELPER_TEST_SRCS := $(sort $(wildcard template/helper/tests/*.c))
MIGRATIONS := $(sort $(wildcard migrations/*.sql))

CP_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(CP_LIB_SRCS) $(CLI_SRCS) $(GEN_SRCS))
CP_LIB_OBJS_SAN := $(patsubst %.c,$(BUILD)/san/%.o,$(CP_LIB_SRCS) $(GEN_SRCS))
CP_TEST_OBJS := $(patsubst %.c,$(BUILD)/san/%.o,$(CP_TEST_SRCS))
HELPER_OBJS := $(patsubst %.c,$(BUILD)/helper/%.o,$(HELPER_SRCS))
HELPER_LIB_OBJS_SAN := $(patsubst %.c,$(BUILD)/san/%.o,$(filter-out template/helper/main.c,$(HELPER_SRCS)))
HELPER_TEST_OBJS := $(patsubst %.c,$(BUILD)/san/%.o,$(HELPER_TEST_SRCS))

BIN := $(BUILD)/chat2sbx
HELPER_BIN := $(BUILD)/chat2sbx-helper
CP_TESTS := $(BUILD)/test_controlplane
HELPER_TESTS := $(BUILD)/test_helper

.PHONY: all run test unit e2e template deps engine clean help fmt fmt-check
all: $(BIN) $(HELPER_BIN)

$(BIN): $(CP_OBJS)
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS) -lpthread

# The helper runs in any image, so it is linked statically (libc + json-c).
$(HELPER_BIN): $(HELPER_OBJS)
	$(CC) -static $(LDFLAGS) -o $@ $^ $(shell pkg-config --static --libs json-c libpcre2-8) -lutil

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -Icontrolplane -Itemplate/helper -c -o $@ $<

$(BUILD)/helper/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(shell pkg-config --cflags json-c libpcre2-8) -Itemplate/helper -c -o $@ $<

$(BUILD)/san/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -O1 -fno-omit-frame-pointer -fsanitize=$(SANITIZE) $(PKG_CFLAGS) \
		-Icontrolplane -Itemplate/helper -c -o $@ $<

# Migrations are compiled into the binary so the schema always matches the code.
$(BUILD)/gen/migrations.c: $(MIGRATIONS) scripts/embed-migrations.sh
	@mkdir -p $(dir $@)
	scripts/embed-migrations.sh $(MIGRATIONS) > $@

$(CP_TESTS): $(CP_TEST_OBJS) $(CP_LIB_OBJS_SAN)
	$(CC) -fsanitize=$(SANITIZE) -o $@ $^ $(PKG_LIBS) $(CRITERION_LIBS) -lpthread

$(HELPER_TESTS): $(HELPER_TEST_OBJS) $(HELPER_LIB_OBJS_SAN)
	$(CC) -fsanitize=$(SANITIZE) -o $@ $^ $(shell pkg-config --libs json-c libpcre2-8) $(CRITERION_LIBS) -lutil

deps:
	scripts/deps.sh all

engine: deps
	scripts/ensure-engine.sh

# Unit tests under ASan/UBSan (no engine needed).
unit: $(CP_TESTS) $(if $(HELPER_TEST_SRCS),$(HELPER_TESTS))
	scripts/unit.sh $(CP_TESTS)
	$(if $(HELPER_TEST_SRCS),scripts/unit.sh $(HELPER_TESTS))

template: all
	template/build.sh $(HELPER_BIN)

e2e: all
	scripts/ensure-engine.sh
	template/build.sh $(HELPER_BIN)
	e2e/run.sh

# Everything on a fresh Debian machine: packages, build, unit tests, engine,
# template, end-to-end tests.
test:
	scripts/deps.sh all
	$(MAKE) all unit
	$(MAKE) e2e

# Install what is missing, build, start the engine, build the template, serve.
run:
	scripts/deps.sh all
	$(MAKE) all
	scripts/ensure-engine.sh
	template/build.sh $(HELPER_BIN)
	scripts/run.sh $(BIN)

FMT_FILES = $(wildcard controlplane/*.[ch] controlplane/*/*.[ch] cli/*.[ch] template/helper/*.[ch] template/helper/tests/*.[ch])

fmt:
	clang-format -i $(FMT_FILES)

fmt-check:
	clang-format --dry-run --Werror $(FMT_FILES)

clean:
	rm -rf $(BUILD)

help:
	@echo "make            build build/chat2sbx and build/chat2sbx-helper"
	@echo "make run        install what is missing, build, build the template, serve on loopback"
	@echo "make test       install, build, unit tests (ASan/UBSan), template, e2e on the real engine"
	@echo "make unit       unit tests only"
	@echo "make e2e        end-to-end tests (real engine, official MCP SDK client)"
	@echo "make template   build the sandbox template image (cached by content hash)"
	@echo "make fmt        format the C sources (.clang-format); make fmt-check only checks"
	@echo "make clean      remove build/"

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
