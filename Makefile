# ngx_clef top-level build.
#
#   make          build/libclef.a (all of libclef: the CLI and the tests),
#                 build/libclef_client.a (its client part: the nginx module),
#                 build/libclef_engine.so (the engine, dlopen'ed by the engine
#                 process alone), build/clef (CLI), the nginx module, the CUDA
#                 library
#   make test     install what is missing (auto/deps), build, run every test
#   make run      install, build, start nginx on 127.0.0.1:8080 with conf/clef.conf
#                 (make run PORT=8081, or LISTEN=0.0.0.0:8081)
#   make install  the module (and the CUDA library) into /usr/lib/nginx/modules,
#                 enabled as Debian's nginx modules are; make uninstall
#
# Sources are found by wildcard: a new .c anywhere under engine/ (two folders
# deep at most) or in cli/ is built without editing this file; a new
# t/unit/test_*.c becomes a test.

BUILD      ?= build
ABS_BUILD  := $(abspath $(BUILD))
CC         ?= cc
JOBS       ?= $(shell nproc)
# FFmpeg decodes videos and audio (engine/media/video_decode.c,
# video_process.c, audio_decode.c, and av_memio.c, their input in memory):
# never in the client part the module links, nor in libclef_engine.so; in
# build/clef-decoder, the engine's sandboxed decode process (decoder/), and
# in libclef.a (build/clef's `clef video`, the tests)
#
# make FFMPEG=no builds without FFmpeg, for machines without its headers
# (the GPU machine of t/cuda/device-check.sh): FFMPEG_SRC, every source that
# includes an FFmpeg header, is left out and engine/media/no_ffmpeg.c fails
# their entry points with media_unsupported; build/clef-decoder is not
# built, so the engine answers every video with media_unsupported.  Never
# the default.
FFMPEG     ?= yes
FFMPEG_SRC := engine/media/video_decode.c engine/media/audio_decode.c \
              engine/media/av_memio.c
FFMPEG_PKGS := libavformat libavcodec libavfilter libswscale libavutil
ifeq ($(FFMPEG),no)
FFMPEG_PKGS :=
endif
PKGS       := libpcre2-8 libutf8proc jansson openblas libpng libjpeg libwebp \
              libwebpdemux $(FFMPEG_PKGS)
# what the client part of libclef (below) links: the nginx module's
# dependencies, besides nginx's own
CLIENT_PKGS := libpcre2-8 libutf8proc jansson

WARN       := -Wall -Wextra -Werror -Wno-unused-parameter
PKG_CFLAGS  = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS    = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CLIENT_LIBS = $(shell pkg-config --libs $(CLIENT_PKGS) 2>/dev/null) -lm -ldl
# engine/ groups its files by concern (README "Layout"); only engine/ is on
# the include path, so every include names its folder ("protocol/plan.h")
ENGINE_INC  := -Iengine
CFLAGS_BASE = -std=c11 -D_GNU_SOURCE -fPIC -g $(WARN) $(ENGINE_INC) $(PKG_CFLAGS)
# The CPU backend is the hot path: AVX2/FMA (x86-64-v3) everywhere we run.
CFLAGS     ?= -O2
CPU_CFLAGS ?= -O3 -march=x86-64-v3 -ffp-contract=off
LIBS        = $(PKG_LIBS) -lm -lpthread -ldl

SAN_FLAGS  := -O1 -fsanitize=address,undefined -fno-omit-frame-pointer \
              -fno-sanitize-recover=undefined

ENGINE_SRC := $(wildcard engine/*.c engine/*/*.c engine/*/*/*.c)
ifeq ($(FFMPEG),no)
ENGINE_SRC := $(filter-out $(FFMPEG_SRC),$(ENGINE_SRC))
# no decode process: the engine decodes images itself (media/prepare.c)
CFLAGS_BASE += -DCLEF_IMAGES_IN_ENGINE
else
ENGINE_SRC := $(filter-out engine/media/no_ffmpeg.c,$(ENGINE_SRC))
endif
CLI_SRC    := $(wildcard cli/*.c)
UNIT_SRC   := $(wildcard t/unit/test_*.c)
UNIT_NAMES := $(patsubst t/unit/%.c,%,$(UNIT_SRC))

OBJ        := $(patsubst %.c,$(BUILD)/obj/%.o,$(ENGINE_SRC))
# The client part of libclef (engine/clef.h; serve/engine_library.h says
# why the split): what an nginx worker and the master run.  A file here must
# not reach into the rest; test-split (t/engine-split.t) fails when the
# module's .so needs a clef symbol this part does not define.
CLIENT_SRC := $(wildcard engine/base/*.c engine/text/*.c engine/model/*.c) \
              $(addprefix engine/,backend/registry.c backend/device_plan.c \
                protocol/request.c protocol/plan.c protocol/answer.c \
                media/base64.c media/image_input.c media/image_probe.c \
                media/image_size.c media/kinds.c media/media_kwargs.c \
                media/media_wire.c media/video_input.c media/video_probe.c \
                media/video_sample.c media/audio_input.c media/audio_probe.c \
                media/audio_tokens.c \
                serve/client.c serve/queue.c serve/wake.c serve/stats.c \
                serve/keeper.c serve/engine_log.c serve/engine_library.c)
CLIENT_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(CLIENT_SRC))
SAN_OBJ    := $(patsubst %.c,$(BUILD)/asan/obj/%.o,$(ENGINE_SRC))
CLI_OBJ    := $(patsubst %.c,$(BUILD)/obj/%.o,$(CLI_SRC))
UNIT_BIN   := $(addprefix $(BUILD)/t/,$(UNIT_NAMES))
SAN_BIN    := $(addprefix $(BUILD)/asan/t/,$(UNIT_NAMES))

# the decode process only where FFmpeg is (FFMPEG=no: none)
DECODER_BIN := $(if $(filter no,$(FFMPEG)),,$(BUILD)/clef-decoder)

.PHONY: all deps test test-unit test-asan test-nginx test-coretypes run clean
all: $(BUILD)/libclef.a $(BUILD)/libclef_client.a $(BUILD)/libclef_engine.so \
     $(BUILD)/clef $(DECODER_BIN)

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

$(BUILD)/libclef_client.a: $(CLIENT_OBJ)
	@rm -f $@
	ar rcs $@ $^

# every object, one exported symbol (engine/exports.map): the library's own
# calls bind inside it, never to the module's copies of the client part
#
# Not FFmpeg: the engine decodes videos in build/clef-decoder, a process of
# its own under a sandbox (engine/media/decoder.h), and FFmpeg's 150-odd
# libraries would add ~0.1 s to every engine start (enough to change what
# t/nginx-lifecycle.t sees of a reload)
#
# Nor the image codecs: the decode process decodes a record's images too
# (media/prepare.c's image row), so no codec parses a request's bytes in
# the engine; only a build without it (FFMPEG=no) keeps them here.
FFMPEG_OBJ      := $(addprefix $(BUILD)/obj/engine/media/,video_decode.o \
                   video_process.o audio_decode.o av_memio.o)
IMAGE_CODEC_PKGS := libpng libjpeg libwebp libwebpdemux
IMAGE_CODEC_OBJ := $(addprefix $(BUILD)/obj/engine/media/,decode_png.o \
                   decode_jpeg.o decode_webp.o image_decode.o exif.o)
ifeq ($(FFMPEG),no)
IMAGE_CODEC_OBJ :=
IMAGE_CODEC_PKGS :=
endif
ENGINE_LIB_OBJ  := $(filter-out $(FFMPEG_OBJ) $(IMAGE_CODEC_OBJ),$(OBJ))
ENGINE_LIB_LIBS  = $(shell pkg-config --libs $(filter-out $(FFMPEG_PKGS) \
                   $(IMAGE_CODEC_PKGS),$(PKGS)) 2>/dev/null) -lm -lpthread -ldl
$(BUILD)/libclef_engine.so: $(ENGINE_LIB_OBJ) engine/exports.map
	$(CC) -shared -o $@ -Wl,-soname,libclef_engine.so -Wl,--no-undefined \
	  -Wl,--version-script=engine/exports.map $(ENGINE_LIB_OBJ) $(ENGINE_LIB_LIBS)

$(BUILD)/asan/libclef.a: $(SAN_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/clef: $(CLI_OBJ) $(BUILD)/libclef.a
	$(CC) -o $@ $(CLI_OBJ) $(BUILD)/libclef.a $(LIBS)

# the engine's decode process: FFmpeg and libseccomp, the video kind's
# decoding files and what they need of libclef
DECODER_SRC := $(wildcard decoder/*.c)
DECODER_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(DECODER_SRC))
DECODER_LIBS = $(shell pkg-config --libs $(FFMPEG_PKGS) $(IMAGE_CODEC_PKGS) \
               libseccomp 2>/dev/null) -lm -lpthread
$(BUILD)/clef-decoder: $(DECODER_OBJ) $(BUILD)/libclef.a
	$(CC) -o $@ $(DECODER_OBJ) $(BUILD)/libclef.a $(DECODER_LIBS)

# the tests' hostile decode process (t/decoder/hostile.c says what it does;
# t/nginx-decoders.t runs it): the same program with a hostile child
HOSTILE_BIN := $(if $(DECODER_BIN),$(BUILD)/t/clef-decoder-hostile)
$(BUILD)/t/clef-decoder-hostile: $(DECODER_SRC) t/decoder/hostile.c \
                                 $(BUILD)/libclef.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(CFLAGS) -DCLEF_DECODER_HOSTILE -o $@ \
	  $(DECODER_SRC) t/decoder/hostile.c $(BUILD)/libclef.a $(DECODER_LIBS)

# ---- unit tests (TAP, run by prove) ------------------------------------

$(BUILD)/t/%: t/unit/%.c t/unit/check.h $(BUILD)/libclef.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(CFLAGS) -It/unit -MMD -MP -o $@ $< $(BUILD)/libclef.a $(LIBS)

$(BUILD)/asan/t/%: t/unit/%.c t/unit/check.h $(BUILD)/asan/libclef.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(SAN_FLAGS) -It/unit -MMD -MP -o $@ $< $(BUILD)/asan/libclef.a $(LIBS)

# the decode process that media go through (images included): a test
# binary is not beside it, as the engine's library is (media/decoder.h)
UNIT_ENV := $(if $(DECODER_BIN),CLEF_DECODER=$(abspath $(DECODER_BIN)))

test-unit: $(UNIT_BIN) $(BUILD)/clef $(DECODER_BIN)
	$(UNIT_ENV) prove --exec '' $(UNIT_BIN)

test-asan: $(SAN_BIN) $(DECODER_BIN)
	$(UNIT_ENV) ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  prove --exec '' $(SAN_BIN)

# The CPU numeric tests again with OpenBLAS forced to other cores: the CPU
# backend computes with its own GEMM (engine/cpu/kernels/gemm.h) and must not depend
# on the core OpenBLAS picks.  OpenBLAS 0.3.21 forced to a core the CPU
# lacks does not fall back: its first call dies of SIGILL.  The SkylakeX
# (AVX-512) pass runs on CPUs without AVX-512 too, on purpose: there it
# fails loudly if any OpenBLAS routine is ever called on this path.
CORE_TESTS := $(addprefix $(BUILD)/t/,test_cpu_gemm test_cpu_gemm_bf16 test_cpu_ops \
              test_cpu_backbone test_head test_decide_e2e test_audio_tower)
#
# And once more on the AVX2 kernel where the CPU would run the wide AVX-512
# one (gemm_kernel.h): every check must hold on both kernels.
test-coretypes: $(CORE_TESTS) $(BUILD)/clef $(DECODER_BIN)
	$(UNIT_ENV) OPENBLAS_CORETYPE=Haswell prove --exec '' $(CORE_TESTS)
	$(UNIT_ENV) OPENBLAS_CORETYPE=SkylakeX prove --exec '' $(CORE_TESTS)
	$(UNIT_ENV) CLEF_CPU_GEMM_KERNEL=avx2 prove --exec '' $(CORE_TESTS)

# unit tests first (fast, precise failures), then the sanitized run, then
# the prove suites (mkmodel determinism and the nginx suites)
test: deps
	$(MAKE) -j$(JOBS) all $(UNIT_BIN) $(SAN_BIN)
	$(MAKE) test-unit
	$(MAKE) test-coretypes
	$(MAKE) test-asan
	$(MAKE) test-nginx

clean:
	rm -rf $(BUILD)/obj $(BUILD)/asan $(BUILD)/t $(BUILD)/libclef.a $(BUILD)/clef

# ---- CUDA backend (owner: cuda/; t/cuda/) -------------------------------
#
# build/libclef_cuda.so: cuda/*.cu through nvcc (sm_90a machine code plus
# compute_90 PTX), cuda/*.c through $(CC), and a private copy of libclef;
# only clef_cuda_* / clef_k_* / clef_gemm_* are exported.  The engine
# dlopen()s it (engine/backend/backend.c); build/clef and the nginx module never
# link it.  ptxas's register/spill report lands in build/cuda/ptxas.log and
# t/cuda/check-spills.sh fails the tests when a kernel spills.  Without nvcc
# the CUDA part is skipped with a message.
#
# WERROR= (empty) builds without warnings as errors, C and nvcc alike: the
# device check (t/cuda/device-check.sh) meets a host compiler CI never ran,
# and one warning new to it must not cost the only GPU run.  CI keeps it.
# CUDA_EXTRA_INC / CUDA_EXTRA_LIBS: where cuBLASLt lives outside the
# toolkit (the device check points them at a wheel's nvidia/cublas).
# NCCL (tensor parallelism over several GPUs, cuda/comm_nccl.c) is linked
# when NCCL_HOME (default: the toolkit) has include/nccl.h and
# lib64/ or lib/libnccl.so; without them the library still builds, and
# its NCCL communicator says so when a replica of several devices opens.

WERROR      ?= -Werror
ifeq ($(strip $(WERROR)),)
WARN        := $(filter-out -Werror,$(WARN))
endif
comma       := ,
CUDA_EXTRA_INC  ?=
CUDA_EXTRA_LIBS ?=

NVCC        ?= $(firstword $(shell command -v nvcc 2>/dev/null) $(wildcard /usr/local/cuda/bin/nvcc))

ifneq ($(NVCC),)
CUDA_HOME   ?= $(patsubst %/bin/nvcc,%,$(NVCC))
CUDA_LIBDIR ?= $(firstword $(wildcard $(CUDA_HOME)/lib64) $(CUDA_HOME)/lib)
CUDA_ARCH   := -gencode arch=compute_90a,code=sm_90a -gencode arch=compute_90,code=compute_90
NVCCFLAGS   ?= -O3 -std=c++17 -lineinfo $(CUDA_ARCH) \
               $(if $(strip $(WERROR)),--Werror all-warnings) \
               -Xcompiler -fPIC,-Wall,-Wextra,-Wno-unused-parameter$(if $(strip $(WERROR)),$(comma)-Werror)
NCCL_HOME   ?= $(CUDA_HOME)
NCCL_LIBDIR ?= $(patsubst %/libnccl.so,%,$(firstword $(wildcard $(NCCL_HOME)/lib64/libnccl.so $(NCCL_HOME)/lib/libnccl.so)))
ifneq ($(and $(wildcard $(NCCL_HOME)/include/nccl.h),$(NCCL_LIBDIR)),)
NCCL_CFLAGS := -DCLEF_HAVE_NCCL -I$(NCCL_HOME)/include
NCCL_LIBS   := -L$(NCCL_LIBDIR) -Wl,-rpath,$(NCCL_LIBDIR) -lnccl
else
NCCL_CFLAGS :=
NCCL_LIBS   :=
$(info NCCL not found under NCCL_HOME=$(NCCL_HOME): libclef_cuda.so is built without it (tp over one device only))
endif
CUDA_INC     = $(ENGINE_INC) -Icuda -I$(CUDA_HOME)/include $(CUDA_EXTRA_INC)
CUDA_CU     := $(wildcard cuda/*.cu)
CUDA_CSRC   := $(wildcard cuda/*.c)
CUDA_OBJ    := $(patsubst cuda/%.cu,$(BUILD)/cuda/%.cu.o,$(CUDA_CU)) \
               $(patsubst cuda/%.c,$(BUILD)/cuda/%.c.o,$(CUDA_CSRC))
CUDA_HDRS   := $(wildcard cuda/*.h cuda/*.cuh)
CUDA_LIB    := $(BUILD)/libclef_cuda.so
CUDA_LINK    = -L$(BUILD) -lclef_cuda -L$(CUDA_LIBDIR) -lcudart \
               -Wl,--enable-new-dtags,-rpath,$(ABS_BUILD):$(CUDA_LIBDIR)
CUDA_TSRC   := $(wildcard t/cuda/test_*.c)
CUDA_TESTS  := $(patsubst t/cuda/%.c,$(BUILD)/t/cuda/%,$(CUDA_TSRC))
CUDA_BENCH  := $(BUILD)/t/cuda/cuda_bench $(BUILD)/t/cuda/cuda_bench_tp

.PHONY: cuda test-cuda clean-cuda
all: cuda
cuda: $(CUDA_LIB) $(BUILD)/cuda/ptxas.log $(CUDA_TESTS) $(CUDA_BENCH)

$(BUILD)/cuda/%.cu.o: cuda/%.cu $(CUDA_HDRS)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) $(CUDA_INC) -Xptxas -v -c $< -o $@ 2> $(BUILD)/cuda/$*.ptxas \
	  || { cat $(BUILD)/cuda/$*.ptxas >&2; exit 1; }
	@grep -v -e '^ptxas info' -e 'bytes stack frame' $(BUILD)/cuda/$*.ptxas >&2 || true

$(BUILD)/cuda/%.c.o: cuda/%.c $(CUDA_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(CFLAGS) $(CUDA_INC) $(NCCL_CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/cuda/ptxas.log: $(patsubst cuda/%.cu,$(BUILD)/cuda/%.cu.o,$(CUDA_CU))
	cat $(patsubst cuda/%.cu,$(BUILD)/cuda/%.ptxas,$(CUDA_CU)) > $@

$(CUDA_LIB): $(CUDA_OBJ) $(BUILD)/libclef.a cuda/exports.map
	$(CC) -shared -o $@ -Wl,-soname,libclef_cuda.so $(CUDA_OBJ) $(BUILD)/libclef.a \
	  -Wl,--version-script=cuda/exports.map $(CUDA_EXTRA_LIBS) -L$(CUDA_LIBDIR) \
	  -Wl,--enable-new-dtags,-rpath,$(CUDA_LIBDIR) $(NCCL_LIBS) -lcublasLt -lcudart \
	  -lstdc++ $(LIBS)

$(BUILD)/t/cuda/%: t/cuda/%.c t/unit/check.h $(BUILD)/libclef.a $(CUDA_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(CFLAGS) -It/unit $(CUDA_INC) -MMD -MP -o $@ $< $(BUILD)/libclef.a \
	  $(CUDA_LINK) $(CUDA_EXTRA_LIBS) $(LIBS)

# device-check-nodev.t: the device check's own no-device exit (quick,
# env file written), forced even where a GPU exists
test-cuda: cuda $(BUILD)/clef
	t/cuda/check-spills.sh $(BUILD)/cuda/ptxas.log
	prove --exec '' $(CUDA_TESTS) t/cuda/device-check-nodev.t

clean-cuda:
	rm -rf $(BUILD)/cuda $(BUILD)/t/cuda $(CUDA_LIB)

-include $(patsubst %.o,%.d,$(filter %.c.o,$(CUDA_OBJ)))
else
.PHONY: cuda test-cuda clean-cuda
all: cuda
cuda:
	@echo "nvcc not found: the CUDA backend (build/libclef_cuda.so) and its tests are skipped"
test-cuda:
	@echo "nvcc not found: CUDA tests skipped"
clean-cuda:
endif

test-unit: test-cuda
clean: clean-cuda

# ---- end of the CUDA section ---------------------------------------------

-include $(OBJ:.o=.d) $(SAN_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(DECODER_OBJ:.o=.d) $(UNIT_BIN:=.d) $(SAN_BIN:=.d) $(wildcard $(BUILD)/t/cuda/*.d)

# ==== nginx module ========================================================
# build/ngx_http_clef_module.so, built out of tree against Debian's nginx-dev
# headers with the packaged binary's own configure flags (conf_flags), so
# that /usr/sbin/nginx loads it (docs/nginx-module-build.md); then
# the t/*.t suites (prove) and `make run`.

NGX_SRC      ?= /usr/share/nginx/src
NGX_BIN      ?= /usr/sbin/nginx
NGX_BUILD    := $(ABS_BUILD)/ngx
NGX_MODULE   := $(BUILD)/ngx_http_clef_module.so
NGX_MOD_SRC  := $(sort $(wildcard ngx_http_clef_module/*.c))
NGX_MOD_DEP  := $(wildcard ngx_http_clef_module/*.h engine/*.h engine/*/*.h engine/*/*/*.h)
NGX_SIG      := grep -E '^[0-9]+,[0-9]+,[0-9]+,[01]{30,}$$'
# -z now, like the packaged nginx (recipe §2)
export DEB_BUILD_MAINT_OPTIONS ?= hardening=+all

.PHONY: module module-configure test-nginx clean-nginx install uninstall FORCE
all: $(NGX_MODULE)
module: $(NGX_MODULE)
# test-nginx runs from the test recipe, after the unit tests (see above)
clean: clean-nginx

# configure (the slow step, ~17 s) runs again only when `config` or the
# list of module sources changes
$(NGX_BUILD)/sources: FORCE
	@mkdir -p $(NGX_BUILD)
	@echo "$(NGX_MOD_SRC)" | cmp -s - $@ || echo "$(NGX_MOD_SRC)" > $@

$(NGX_BUILD)/Makefile: config $(NGX_BUILD)/sources $(BUILD)/libclef_client.a
	@echo "configuring the nginx module against $(NGX_SRC) (Debian conf_flags)"
	cd $(NGX_SRC) && CLEF_LIB=$(ABS_BUILD)/libclef_client.a CLEF_LIBS="$(CLIENT_LIBS)" \
	  CLEF_INCS="$(patsubst -I%,%,$(filter -I%,$(PKG_CFLAGS)))" \
	  bash -ec '. ./conf_flags; ./configure \
	    --with-cc-opt="$$(dpkg-buildflags --get CFLAGS) -fPIC $$(dpkg-buildflags --get CPPFLAGS)" \
	    --with-ld-opt="$$(dpkg-buildflags --get LDFLAGS) -fPIC" \
	    "$${NGX_CONF_FLAGS[@]}" \
	    --add-dynamic-module=$(CURDIR) \
	    --builddir=$(NGX_BUILD)' > $(ABS_BUILD)/ngx-configure.log 2>&1 \
	  || { tail -30 $(ABS_BUILD)/ngx-configure.log; exit 1; }
	@touch $@

module-configure: $(NGX_BUILD)/Makefile

# -f must be absolute (make changes into $(NGX_SRC) first); the module is
# relinked whenever libclef_client.a or its version script
# (ngx_http_clef_module/exports.map: it exports the module alone) changes,
# and comes with the engine
# library it loads (beside it, as `make install` places them); `install`
# gives the .so a new inode, never overwriting one a running nginx has
# mapped (recipe §6.7)
$(NGX_MODULE): $(NGX_BUILD)/Makefile $(NGX_MOD_SRC) $(NGX_MOD_DEP) \
               ngx_http_clef_module/exports.map \
               $(BUILD)/libclef_client.a $(BUILD)/libclef_engine.so
	@rm -f $(NGX_BUILD)/ngx_http_clef_module.so
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
	  $(MAKE) -f $(NGX_BUILD)/Makefile -C $(NGX_SRC) -j$(JOBS) modules
	@test "$$(strings $(NGX_BUILD)/ngx_http_clef_module.so | $(NGX_SIG))" = \
	      "$$(strings $(NGX_BIN) | $(NGX_SIG))" \
	  || { echo "module signature differs from $(NGX_BIN)" >&2; exit 1; }
	@echo "module signature matches $(NGX_BIN): $$(strings $(NGX_BIN) | $(NGX_SIG))"
	install -m 0755 $(NGX_BUILD)/ngx_http_clef_module.so $@

# t/*.t against the packaged nginx with the module: the suites on the
# harness (load, faults, cluster: t/lib/ClefNginx.pm) one after the other,
# as they measure what they load; the Test::Nginx::Socket suites four at a
# time (each has its own server root and port; they mostly wait on nginx),
# then again in HUP mode (one nginx, reloaded between blocks); then
# t/example/, a user's own suite (docs/testing.md), run
# as a user runs it, in both modes.  auto/test-nginx finds Test::Nginx (or
# fails, saying why).
NGX_TN_SUITES  = $(shell grep -l '^use Test::Nginx::Socket' t/*.t)
NGX_TN_JOBS   ?= 4
NGX_EXAMPLE_MODEL := $(BUILD)/t/example-model
test-nginx: all $(HOSTILE_BIN) $(NGX_EXAMPLE_MODEL)/joint_head_config.json
	@inc=$$(auto/test-nginx) || exit 1; \
	export CLEF_MODULE=$(abspath $(NGX_MODULE)) CLEF_BIN=$(ABS_BUILD)/clef; \
	set -x; prove $$inc $(filter-out $(NGX_TN_SUITES),$(wildcard t/*.t)) \
	&& prove -j$(NGX_TN_JOBS) $$inc $(NGX_TN_SUITES) \
	&& TEST_NGINX_USE_HUP=1 prove -j$(NGX_TN_JOBS) $$inc $(NGX_TN_SUITES) \
	&& for hup in '' 1; do \
	  TEST_NGINX_USE_HUP=$$hup TEST_NGINX_BINARY=$(NGX_BIN) \
	  TEST_NGINX_LOAD_MODULES=$(abspath $(NGX_MODULE)) \
	  TEST_NGINX_CLEF_MODEL=$(abspath $(NGX_EXAMPLE_MODEL)) \
	  TEST_NGINX_SERVROOT=$(ABS_BUILD)/t/example-servroot \
	  TEST_NGINX_PORT=$$(perl -It/lib -MClefModels -e 'print ClefModels::free_port()') \
	  prove $$inc t/example/ || exit 1; done

# the example's model, as its README makes it
$(NGX_EXAMPLE_MODEL)/joint_head_config.json: | $(BUILD)/clef
	rm -rf $(NGX_EXAMPLE_MODEL)
	$(BUILD)/clef mkmodel --shape tiny --seed 1 \
	  --tokenizer t/fixtures/tokenizer/qwen3 --out $(NGX_EXAMPLE_MODEL)

# make run: install, build, make a demo checkpoint (random weights) unless
# CLEF_MODEL=/path is given, serve in the foreground on 127.0.0.1:8080, or
# on PORT=N / LISTEN=ADDR given on make's command line (CLEF_PORT and
# CLEF_LISTEN in the environment do the same).  A PORT that comes from the
# environment is left alone: it belongs to something else.
run: deps
	$(MAKE) -j$(JOBS) all
	@$(if $(filter command line,$(origin PORT)),CLEF_PORT='$(PORT)') \
	 $(if $(filter command line,$(origin LISTEN)),CLEF_LISTEN='$(LISTEN)') \
	 auto/run-nginx

# make install: what a Debian libnginx-mod-* package installs.  The module
# goes where Debian's nginx keeps its modules, the CUDA library (when it was
# built) beside it, because the engine dlopen()s libclef_cuda.so next to the
# object it is linked into before it asks the dynamic linker
# (engine/backend/backend.c); a snippet with its load_module line goes to
# modules-available, linked from modules-enabled, which Debian's
# /etc/nginx/nginx.conf includes.  DESTDIR stages it all elsewhere
# (t/install.t checks the list of files).  `install` writes new inodes, so
# a running nginx keeps the copy it has mapped until it reloads.
NGX_MODULES_DIR       ?= /usr/lib/nginx/modules
NGX_MODULES_AVAILABLE ?= /usr/share/nginx/modules-available
NGX_MODULES_ENABLED   ?= /etc/nginx/modules-enabled
NGX_SNIPPET           := mod-http-clef.conf
NGX_SNIPPET_LINK      := 50-mod-http-clef.conf

install: all
	install -d $(DESTDIR)$(NGX_MODULES_DIR) $(DESTDIR)$(NGX_MODULES_AVAILABLE) \
	  $(DESTDIR)$(NGX_MODULES_ENABLED)
	install -m 0644 $(NGX_MODULE) $(DESTDIR)$(NGX_MODULES_DIR)/ngx_http_clef_module.so
	install -m 0644 $(BUILD)/libclef_engine.so $(DESTDIR)$(NGX_MODULES_DIR)/libclef_engine.so
	@# without FFmpeg (FFMPEG=no) no decode process, and no older one stays
	if [ -n "$(DECODER_BIN)" ]; then \
	  install -m 0755 $(BUILD)/clef-decoder $(DESTDIR)$(NGX_MODULES_DIR)/clef-decoder; \
	else rm -f $(DESTDIR)$(NGX_MODULES_DIR)/clef-decoder; fi
	@# without a CUDA build, no older libclef_cuda.so stays next to the new module
	if [ -f $(BUILD)/libclef_cuda.so ]; then \
	  install -m 0644 $(BUILD)/libclef_cuda.so $(DESTDIR)$(NGX_MODULES_DIR)/libclef_cuda.so; \
	else rm -f $(DESTDIR)$(NGX_MODULES_DIR)/libclef_cuda.so; fi
	@# written beside its place and renamed: never half a file, even with
	@# two installs at once (t/install.t runs in concurrent test runs)
	printf 'load_module %s/ngx_http_clef_module.so;\n' '$(NGX_MODULES_DIR)' \
	  > $(DESTDIR)$(NGX_MODULES_AVAILABLE)/.$(NGX_SNIPPET).$$$$ \
	  && chmod 0644 $(DESTDIR)$(NGX_MODULES_AVAILABLE)/.$(NGX_SNIPPET).$$$$ \
	  && mv -f $(DESTDIR)$(NGX_MODULES_AVAILABLE)/.$(NGX_SNIPPET).$$$$ \
	       $(DESTDIR)$(NGX_MODULES_AVAILABLE)/$(NGX_SNIPPET)
	ln -sfn $(NGX_MODULES_AVAILABLE)/$(NGX_SNIPPET) \
	  $(DESTDIR)$(NGX_MODULES_ENABLED)/$(NGX_SNIPPET_LINK)

uninstall:
	rm -f $(DESTDIR)$(NGX_MODULES_ENABLED)/$(NGX_SNIPPET_LINK) \
	  $(DESTDIR)$(NGX_MODULES_AVAILABLE)/$(NGX_SNIPPET) \
	  $(DESTDIR)$(NGX_MODULES_DIR)/ngx_http_clef_module.so \
	  $(DESTDIR)$(NGX_MODULES_DIR)/libclef_engine.so \
	  $(DESTDIR)$(NGX_MODULES_DIR)/clef-decoder \
	  $(DESTDIR)$(NGX_MODULES_DIR)/libclef_cuda.so

clean-nginx:
	rm -rf $(NGX_BUILD) $(NGX_MODULE) $(ABS_BUILD)/ngx-configure.log

FORCE:
# ==== end of nginx module =================================================
