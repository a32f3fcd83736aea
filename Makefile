# ngx_clef top-level build.
#
#   make          build/libclef.a, build/clef (CLI), the nginx module, the CUDA library
#   make test     install what is missing (auto/deps), build, run every test
#   make run      install, build, start nginx on 127.0.0.1:8080 with conf/clef.conf
#
# Sources are found by wildcard: a new engine/*.c, engine/cpu/*.c or cli/*.c is
# built without editing this file; a new t/unit/test_*.c becomes a test.

BUILD      ?= build
ABS_BUILD  := $(abspath $(BUILD))
CC         ?= cc
JOBS       ?= $(shell nproc)
PKGS       := libpcre2-8 libutf8proc jansson openblas

WARN       := -Wall -Wextra -Werror -Wno-unused-parameter
PKG_CFLAGS  = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS    = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CFLAGS_BASE = -std=c11 -D_GNU_SOURCE -fPIC -g $(WARN) -Iengine $(PKG_CFLAGS)
# The CPU backend is the hot path: AVX2/FMA (x86-64-v3) everywhere we run.
CFLAGS     ?= -O2
CPU_CFLAGS ?= -O3 -march=x86-64-v3 -ffp-contract=off
LIBS        = $(PKG_LIBS) -lm -lpthread -ldl

SAN_FLAGS  := -O1 -fsanitize=address,undefined -fno-omit-frame-pointer \
              -fno-sanitize-recover=undefined

ENGINE_SRC := $(wildcard engine/*.c engine/cpu/*.c engine/media/*.c)
CLI_SRC    := $(wildcard cli/*.c)
UNIT_SRC   := $(wildcard t/unit/test_*.c)
UNIT_NAMES := $(patsubst t/unit/%.c,%,$(UNIT_SRC))

OBJ        := $(patsubst %.c,$(BUILD)/obj/%.o,$(ENGINE_SRC))
SAN_OBJ    := $(patsubst %.c,$(BUILD)/asan/obj/%.o,$(ENGINE_SRC))
CLI_OBJ    := $(patsubst %.c,$(BUILD)/obj/%.o,$(CLI_SRC))
UNIT_BIN   := $(addprefix $(BUILD)/t/,$(UNIT_NAMES))
SAN_BIN    := $(addprefix $(BUILD)/asan/t/,$(UNIT_NAMES))

.PHONY: all deps test test-unit test-asan test-nginx run clean
all: $(BUILD)/libclef.a $(BUILD)/clef

deps:
	@auto/deps

# ---- libclef -----------------------------------------------------------

$(BUILD)/obj/engine/cpu/%.o: engine/cpu/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(CPU_CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/asan/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(SAN_FLAGS) -march=x86-64-v3 -MMD -MP -c -o $@ $<

$(BUILD)/libclef.a: $(OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/asan/libclef.a: $(SAN_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/clef: $(CLI_OBJ) $(BUILD)/libclef.a
	$(CC) -o $@ $(CLI_OBJ) $(BUILD)/libclef.a $(LIBS)

# ---- unit tests (TAP, run by prove) ------------------------------------

$(BUILD)/t/%: t/unit/%.c t/unit/check.h $(BUILD)/libclef.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(CFLAGS) -It/unit -o $@ $< $(BUILD)/libclef.a $(LIBS)

$(BUILD)/asan/t/%: t/unit/%.c t/unit/check.h $(BUILD)/asan/libclef.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(SAN_FLAGS) -It/unit -o $@ $< $(BUILD)/asan/libclef.a $(LIBS)

test-unit: $(UNIT_BIN) $(BUILD)/clef
	prove --exec '' $(UNIT_BIN)

test-asan: $(SAN_BIN)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  prove --exec '' $(SAN_BIN)

test: deps
	$(MAKE) -j$(JOBS) all $(UNIT_BIN) $(SAN_BIN)
	$(MAKE) test-unit
	$(MAKE) test-asan

run: deps all
	@echo "make run: the nginx server arrives with the module (issue 'The nginx module'); not yet."
	@exit 1

clean:
	rm -rf $(BUILD)/obj $(BUILD)/asan $(BUILD)/t $(BUILD)/libclef.a $(BUILD)/clef

-include $(OBJ:.o=.d) $(SAN_OBJ:.o=.d) $(CLI_OBJ:.o=.d)
