#!/bin/bash
# The run of the CUDA backend on the GPU machine (one H200): environment,
# build, every CUDA test (each kernel's in a process of its own), a
# clef-flash checkpoint made in the background, the benchmark, and with
# the time left the kernel tests under compute-sanitizer memcheck.  Steps
# are budgeted to end within DEADLINE_S = 480 s of the start, build
# included: the device command limit is 600 s and the session's whole
# device budget 15 minutes, the machine's start included.
#
# Here, once:      t/cuda/device-deps.sh          (fills .devcarry/)
# On the device:   run, command "bash t/cuda/device-check.sh",
#                  carry [".devcarry"], timeout_s 600
# Without a GPU it writes env.txt and summary.txt and exits 2 at once.
#
# Under $OUT (build/device-check by default; 8 files, the most the device
# tool brings back), each written as its step goes:
#   summary.txt      one line per step as it ends, then the key figures
#   env.txt          tools found (make cc g++ prove pkg-config dpkg-deb ...),
#                    cuBLASLt / NCCL libraries and headers, nvidia-smi, disk
#   build.log        make (with WERROR= : no -Werror there), check-spills
#   tests.log        test_cuda_open, test_cuda_kernels NAME for each
#                    sub-test, test_cuda_vision NAME for each sub-test (the
#                    vision tower: kernels, then images end to end against
#                    the CPU backend, then video_v1: videos' frame pairs,
#                    their frames random, beside images; the decoded clips
#                    only where FFmpeg is), test_cuda_forward (tiny releases
#                    and the GGUF fixtures Q4_K_M/Q8_0/F16/BF16, IQ4_XS,
#                    Q3_K_M, Q2_K, IQ2_XXS and two mixes against the CPU
#                    backend), test_cuda_omni (Clef Omni's routed
#                    experts and DeepStack), test_cuda_audio (Clef Omni's
#                    audio tower: kernels, then the audio fixtures fed the
#                    reference's features against the CPU backend),
#                    test_cuda_tp (TAP)
#   mkmodel.log      clef mkmodel --shape clef-flash
#   bench.txt        cuda_bench, each figure printed as measured, then
#                    cuda_bench_tp (tp=1 / tp=2 tokens/s, all-reduce share)
#   cuda_bench.json  its numbers, rewritten after each section
#   sanitizer.log    compute-sanitizer --tool memcheck per kernel sub-test
# Exit: 0 everything ran and passed, 1 something failed or was cut short,
# 2 no device.  A rerun after a fix needs a fresh machine unless it comes
# within the 30 s the machine stays warm, and a machine starts only with 4
# minutes of device time left: shorten it with DEADLINE_S (every phase
# scales; e.g. command "DEADLINE_S=150 bash t/cuda/device-check.sh").
#
# Settings: MODEL_SHAPE (clef-flash), MODEL_DIR (/tmp/$MODEL_SHAPE),
# DEADLINE_S (480), FORCE_CARRIED_DEPS=1 (build
# against .devcarry's packages even where the system has its own),
# FORCE_NO_DEVICE=1 (take the no-device exit anywhere; its test does),
# ASSUME_DEVICE=1 (run every step without a device: a dry run of this
# script, in which the tests skip and the bench cannot open).
set -u

OUT=${OUT:-build/device-check}
SHAPE=${MODEL_SHAPE:-clef-flash}
MODEL=${MODEL_DIR:-/tmp/$SHAPE}
DEADLINE=${DEADLINE_S:-480}
JOBS=$(nproc 2>/dev/null || echo 4)
# Seconds each phase leaves for those after it, in proportion to DEADLINE:
# at 480 the kernel tests stop starting at t = 200, the forward test ends
# by 310 and mkmodel by 350; the bench then has at least two minutes and
# memcheck whatever remains.
R_KERNELS=$(( DEADLINE * 280 / 480 ))
R_VISION=$(( DEADLINE * 230 / 480 ))
R_FORWARD=$(( DEADLINE * 170 / 480 ))
R_MKMODEL=$(( DEADLINE * 130 / 480 ))
T0=$(date +%s)
SUM=$OUT/summary.txt
TLOG=$OUT/tests.log
FAILED=0

mkdir -p "$OUT"
: > "$SUM"

now() {
    echo $(( $(date +%s) - T0 ))
}

# Seconds a step may take: at most $1, and never past the deadline less
# $2 seconds kept for what must follow.  At least 1: `timeout 0` would
# mean no limit at all.
budget() {
    local b=$(( DEADLINE - $(now) - ${2:-0} ))

    [ "$b" -gt "$1" ] && b=$1
    echo $(( b > 1 ? b : 1 ))
}

# One summary line: step, status, detail; echoed too.
note() {
    printf '%-28s %-14s t=%3ds  %s\n' "$1" "$2" "$(now)" "${3:-}" | tee -a "$SUM"
}

status_of() {
    case $1 in
    0) echo ok ;;
    124|137) echo "timed out" ;;
    *) echo "failed ($1)" ;;
    esac
}

# ---- environment -------------------------------------------------------

NVCC=$(command -v nvcc || { [ -x /usr/local/cuda/bin/nvcc ] && echo /usr/local/cuda/bin/nvcc; })
CUDA_HOME=${NVCC:+$(dirname "$(dirname "$NVCC")")}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}

# Site-packages folder of a pip wheel (nvidia/cublas, nvidia/nccl), if any.
wheel_dir() {
    command -v python3 > /dev/null 2>&1 || return 1
    timeout 20 python3 -c "import importlib.util as u, sys
s = u.find_spec('nvidia.$1')
print(list(s.submodule_search_locations)[0]) if s else sys.exit(1)" 2> /dev/null
}

{
    echo "date: $(date -u)   host: $(uname -a)"
    head -4 /etc/os-release 2> /dev/null
    echo "cores: $JOBS"
    free -g 2> /dev/null
    echo "== disk"
    df -h . /tmp 2> /dev/null
    echo "== tools"
    for c in make cc gcc g++ prove perl pkg-config dpkg-deb ar tar xz python3 \
             nvcc compute-sanitizer nvidia-smi timeout c++filt; do
        printf '  %-18s %s\n' "$c" "$(command -v "$c" || echo MISSING)"
    done
    cc --version 2> /dev/null | head -1
    "${NVCC:-nvcc}" --version 2> /dev/null | tail -2
    echo "== cuBLASLt and NCCL: libraries (CUDA_HOME $CUDA_HOME)"
    ls -l "$CUDA_HOME"/lib64/libcublasLt.so* "$CUDA_HOME"/lib64/libnccl.so* \
          /usr/lib/x86_64-linux-gnu/libcublasLt.so* /usr/lib/x86_64-linux-gnu/libnccl.so* \
          2> /dev/null
    ldconfig -p 2> /dev/null | grep -E 'libcublasLt|libnccl|libcudart'
    for w in cublas nccl cuda_runtime; do
        d=$(wheel_dir $w) && echo "wheel nvidia/$w: $d" && ls "$d"/lib 2> /dev/null | head -5
    done
    echo "== cuBLASLt and NCCL: headers"
    ls -l "$CUDA_HOME"/include/cublasLt.h "$CUDA_HOME"/include/nccl.h \
          /usr/include/cublasLt.h /usr/include/nccl.h 2> /dev/null
    echo "== nvidia-smi"
    timeout 20 nvidia-smi 2>&1 || echo "nvidia-smi: not available"
    echo "== /dev/nvidia*"
    ls /dev/nvidia* 2>&1
    echo "== carried (.devcarry)"
    ls -la .devcarry .devcarry/debs 2>&1 | head -30
} > "$OUT/env.txt" 2>&1

has_device() {
    [ -n "${FORCE_NO_DEVICE:-}" ] && return 1
    [ -n "${ASSUME_DEVICE:-}" ] && return 0
    if command -v nvidia-smi > /dev/null 2>&1 \
       && timeout 20 nvidia-smi -L 2> /dev/null | grep -q '^GPU '; then
        return 0
    fi
    ls /dev/nvidia[0-9]* > /dev/null 2>&1
}

if ! has_device; then
    why="nvidia-smi lists no GPU and there is no /dev/nvidia0"
    [ -n "${FORCE_NO_DEVICE:-}" ] && why="FORCE_NO_DEVICE is set"
    note "device" "NO DEVICE" "$why: nothing built or run; see env.txt"
    echo "device-check: no device ($why); environment in $OUT/env.txt"
    exit 2
fi
note "device" ok "$(timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total \
                    --format=csv,noheader 2> /dev/null | head -1)"

# ---- what the build needs: the system's, else the carried ----------------

D=/tmp/clef-devdeps
L=$D/usr/lib/x86_64-linux-gnu

# .deb -> folder: dpkg-deb, else ar + tar, else python3's own reader.
unpack_deb() {
    local f t

    f=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
    if command -v dpkg-deb > /dev/null 2>&1; then
        dpkg-deb -x "$f" "$2"
    elif command -v ar > /dev/null 2>&1 && command -v tar > /dev/null 2>&1; then
        t=$(mktemp -d)
        (cd "$t" && ar x "$f") && tar -xf "$t"/data.tar.* -C "$2"
        rm -rf "$t"
    elif command -v python3 > /dev/null 2>&1; then
        python3 - "$f" "$2" <<'EOF'
import io, sys, tarfile
data, out = open(sys.argv[1], 'rb').read(), sys.argv[2]
i = 8                                     # "!<arch>\n", then 60-byte headers
while i < len(data):
    name, size = data[i:i + 16].decode().strip().rstrip('/'), int(data[i + 48:i + 58])
    if name.startswith('data.tar'):
        tarfile.open(fileobj=io.BytesIO(data[i + 60:i + 60 + size])).extractall(out)
    i += 60 + size + (size & 1)
EOF
    else
        return 1
    fi
}

MAKE=make
MAKEVARS=("WERROR=")
DEBS_UNPACKED=0
unpack_carried() {
    [ "$DEBS_UNPACKED" = 1 ] && return 0
    mkdir -p "$D"
    for f in .devcarry/debs/*.deb; do
        [ -f "$f" ] || { echo "no carried packages (run t/cuda/device-deps.sh here)"; return 1; }
        unpack_deb "$f" "$D" || { echo "cannot unpack $f"; return 1; }
    done
    DEBS_UNPACKED=1
}

deps_note=system
if ! command -v make > /dev/null 2>&1; then
    if unpack_carried > "$OUT/build.log" 2>&1 && [ -x "$D/usr/bin/make" ]; then
        MAKE=$D/usr/bin/make
        deps_note="carried make"
    else
        note "make" "MISSING" "and none carried: nothing can be built"
    fi
fi
if [ -n "${FORCE_CARRIED_DEPS:-}" ] \
   || ! pkg-config --exists libpcre2-8 libutf8proc jansson openblas libpng \
                            libjpeg libwebp libwebpdemux 2> /dev/null \
   || [ ! -f /usr/include/oneapi/dnnl/dnnl.h ]; then
    unpack_carried >> "$OUT/build.log" 2>&1
    MAKEVARS+=("PKG_CFLAGS=-DUTF8PROC_EXPORTS -I$D/usr/include -I$D/usr/include/x86_64-linux-gnu -I$D/usr/include/x86_64-linux-gnu/openblas-pthread"
               "PKG_LIBS=-L$L -L$L/openblas-pthread -lpcre2-8 -lutf8proc -ljansson -lopenblas -lpng16 -lz -ljpeg -lwebpdemux -lwebp")
    export LD_LIBRARY_PATH=$L:$L/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    deps_note="$deps_note, carried libraries"
fi

# FFmpeg (the video decoder) only where the system's headers and libraries
# are found and the build uses the system's other libraries too: the
# carried set has none (FFmpeg with its codecs is far over the carry
# limit), and the CUDA tests decode no video.  FFMPEG=no leaves its
# sources out (Makefile).
if [ "$DEBS_UNPACKED" = 1 ] \
   || ! pkg-config --exists libavformat libavcodec libavfilter libswscale \
                            libavutil 2> /dev/null; then
    MAKEVARS+=("FFMPEG=no")
    deps_note="$deps_note, no FFmpeg (FFMPEG=no)"
fi

# cuBLASLt from a wheel when the toolkit has no development copy.
if [ ! -f "$CUDA_HOME/include/cublasLt.h" ] || ! ls "$CUDA_HOME"/lib64/libcublasLt.so > /dev/null 2>&1; then
    if cb=$(wheel_dir cublas) && [ -f "$cb/include/cublasLt.h" ]; then
        mkdir -p /tmp/clef-cublas
        so=$(ls "$cb"/lib/libcublasLt.so.* 2> /dev/null | head -1)
        ln -sf "$so" /tmp/clef-cublas/libcublasLt.so
        MAKEVARS+=("CUDA_EXTRA_INC=-I$cb/include"
                   "CUDA_EXTRA_LIBS=-L/tmp/clef-cublas -Wl,-rpath,$cb/lib")
        export LD_LIBRARY_PATH=$cb/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
        deps_note="$deps_note, cuBLASLt of $cb"
    fi
fi

# NCCL from the system (Debian/Ubuntu's libnccl-dev puts it outside the
# toolkit, where the Makefile's NCCL_HOME does not look), else from a wheel,
# when the toolkit has none (tensor parallelism; the
# library builds without it too, and test_cuda_tp then fails its NCCL
# checks with a message saying so).
if [ ! -f "$CUDA_HOME/include/nccl.h" ] || ! ls "$CUDA_HOME"/lib64/libnccl.so* > /dev/null 2>&1; then
    if [ -f /usr/include/nccl.h ] && [ -e /usr/lib/x86_64-linux-gnu/libnccl.so ]; then
        mkdir -p /tmp/clef-nccl/include /tmp/clef-nccl/lib
        ln -sf /usr/include/nccl.h /tmp/clef-nccl/include/nccl.h
        ln -sf /usr/lib/x86_64-linux-gnu/libnccl.so /tmp/clef-nccl/lib/libnccl.so
        MAKEVARS+=("NCCL_HOME=/tmp/clef-nccl")
        deps_note="$deps_note, the system's NCCL"
    elif nc=$(wheel_dir nccl) && [ -f "$nc/include/nccl.h" ]; then
        so=$(ls "$nc"/lib/libnccl.so.* 2> /dev/null | head -1)
        mkdir -p /tmp/clef-nccl/lib
        ln -sfn "$nc/include" /tmp/clef-nccl/include
        ln -sf "$so" /tmp/clef-nccl/lib/libnccl.so
        ln -sf "$so" /tmp/clef-nccl/lib/libnccl.so.2
        MAKEVARS+=("NCCL_HOME=/tmp/clef-nccl")
        deps_note="$deps_note, NCCL of $nc"
    else
        deps_note="$deps_note, no NCCL"
    fi
fi

# the Qwen tokenizer travels with the working tree
TOKENIZER=t/fixtures/tokenizer/qwen3
note "dependencies" ok "$deps_note; tokenizer $TOKENIZER"

# ---- build -------------------------------------------------------------

B0=$(date +%s)
# the decode process where FFmpeg is (test_cuda_vision's decoded clips)
DECODER=build/clef-decoder
case " ${MAKEVARS[*]} " in *" FFMPEG=no "*) DECODER= ;; esac
timeout -k 5 "$(budget 240 "$R_KERNELS")" "$MAKE" -j"$JOBS" "${MAKEVARS[@]}" build/clef $DECODER cuda \
    >> "$OUT/build.log" 2>&1
rc=$?
note "build" "$(status_of $rc)" "$(( $(date +%s) - B0 )) s, make ${MAKEVARS[*]:0:1} -j$JOBS"
if [ $rc -ne 0 ]; then
    tail -40 "$OUT/build.log"
    echo "device-check: the build failed; see $OUT/build.log"
    exit 1
fi
{ echo "== check-spills"; t/cuda/check-spills.sh build/cuda/ptxas.log; } >> "$OUT/build.log" 2>&1
rc=$?
note "spills" "$(status_of $rc)" "$(tail -1 "$OUT/build.log")"
[ $rc -ne 0 ] && FAILED=1

# ---- the checkpoint, in the background while the tests run ---------------

# Its own time limit ends it R_MKMODEL before the deadline, leaving the
# bench its time; a sparse checkpoint (a second or two) replaces one that
# did not finish.
MKPID=
SPARSE=
mkmodel_start() {
    local avail limit

    avail=$(df -P -B1G "$(dirname "$MODEL")" 2> /dev/null | awk 'NR == 2 { print $4 }')
    SPARSE=
    limit=$(budget 300 "$R_MKMODEL")
    if [ -n "${1:-}" ] || [ "${avail:-0}" -lt 24 ]; then
        SPARSE=--sparse             # holes read as zeros: timings only
        limit=$(budget 60 60)
    fi
    rm -rf "$MODEL"
    (
        M0=$(date +%s)
        timeout -k 5 "$limit" build/clef mkmodel --shape "$SHAPE" \
            --tokenizer "$TOKENIZER" --seed 1 $SPARSE --out "$MODEL"
        rc=$?
        echo "mkmodel${SPARSE:+ --sparse}: exit $rc after $(( $(date +%s) - M0 )) s (${avail:-?} GB free)"
        [ $rc -eq 0 ] && [ -z "$SPARSE" ] && touch "$MODEL/.device-check-done"
        exit $rc
    ) >> "$OUT/mkmodel.log" 2>&1 &
    MKPID=$!
}
if [ -f "$MODEL/.device-check-done" ]; then
    echo "reusing $MODEL" > "$OUT/mkmodel.log"
    note "mkmodel" reused "$MODEL (complete, from an earlier run on this machine)"
else
    : > "$OUT/mkmodel.log"
    mkmodel_start
fi

# ---- tests, one process each ---------------------------------------------

# run_test LABEL LIMIT CMD...: TAP of CMD appended to tests.log, one
# summary line with its counts.
run_test() {
    local label=$1 limit=$2 tmp rc pass fail plan
    shift 2

    tmp=$(mktemp)
    echo "== $label ($*)" >> "$TLOG"
    timeout -k 5 "$limit" "$@" > "$tmp" 2>&1
    rc=$?
    cat "$tmp" >> "$TLOG"
    pass=$(grep -c '^ok ' "$tmp")
    fail=$(grep -c '^not ok ' "$tmp")
    plan=$(grep -m1 -E '^1\.\.[0-9]+' "$tmp")
    if grep -q '^1\.\.0 # SKIP' "$tmp"; then
        note "$label" "SKIPPED" "$(grep -m1 '# SKIP' "$tmp")"
        FAILED=1
    elif [ $rc -eq 0 ] && [ "$fail" -eq 0 ]; then
        note "$label" ok "$pass checks"
    else
        note "$label" "$( [ $rc -eq 124 ] || [ $rc -eq 137 ] && echo "timed out" || echo FAILED)" \
             "$fail of $((pass + fail)) failed, exit $rc${plan:+, plan $plan}$(grep -m1 '^Bail out!' "$tmp" | sed 's/^/, /')"
        grep -E '^not ok|^#   ' "$tmp" | head -8 | sed 's/^/    /' | tee -a "$SUM"
        FAILED=1
    fi
    rm -f "$tmp"
}

: > "$TLOG"
run_test "test_cuda_open" "$(budget 60 "$R_KERNELS")" build/t/cuda/test_cuda_open

# Each kernel's sub-test in a process of its own, while the clock leaves
# room for the forward test and the benchmark.
SUBTESTS=$(build/t/cuda/test_cuda_kernels --list 2> /dev/null)
[ -z "$SUBTESTS" ] && { note "kernels" "not run" "build/t/cuda/test_cuda_kernels --list gave nothing"; FAILED=1; }
for s in $SUBTESTS; do
    if [ "$(budget 60 "$R_KERNELS")" -lt 10 ]; then
        note "kernels/$s" "not run" "no time left before the forward test and the bench"
        FAILED=1
        continue
    fi
    run_test "kernels/$s" "$(budget 60 "$R_KERNELS")" build/t/cuda/test_cuda_kernels "$s"
done

# The vision tower (cuda/vision*.c): its kernels, then the towers of v1
# and vision72 with the requests of t/fixtures/vision against the CPU
# backend; each in a process of its own, ending R_VISION before the
# deadline so that the forward test keeps its time.
VSUBTESTS=$(build/t/cuda/test_cuda_vision --list 2> /dev/null)
[ -z "$VSUBTESTS" ] && { note "vision" "not run" "build/t/cuda/test_cuda_vision --list gave nothing"; FAILED=1; }
for s in $VSUBTESTS; do
    if [ "$(budget 120 "$R_VISION")" -lt 10 ]; then
        note "vision/$s" "not run" "no time left before the forward test"
        FAILED=1
        continue
    fi
    run_test "vision/$s" "$(budget 120 "$R_VISION")" build/t/cuda/test_cuda_vision "$s"
done
grep -E '^# (v1|vision72|video_v1): ' "$TLOG" | sed 's/^# /    /' | tee -a "$SUM"

run_test "test_cuda_forward" "$(budget 120 "$R_FORWARD")" build/t/cuda/test_cuda_forward

# Clef Omni (cuda/moe.cu, DeepStack): the routing and grouped GEMM
# kernels, then the tiny Omni checkpoint's fixture requests against the
# CPU backend and the reference; one process, kept short.
run_test "test_cuda_omni" "$(budget 60 "$R_MKMODEL")" build/t/cuda/test_cuda_omni
grep -E '^# probabilities: ' "$TLOG" | sed 's/^# /    omni /' | tee -a "$SUM"

# Clef Omni's audio tower (cuda/audio*.c): its kernels, then the records
# of t/fixtures/audio against the CPU tower and backend and the reference;
# one process, kept short.
run_test "test_cuda_audio" "$(budget 60 "$R_MKMODEL")" build/t/cuda/test_cuda_audio
grep -E '^# audio: ' "$TLOG" | sed 's/^# /    /' | tee -a "$SUM"

# Tensor parallelism: tp=1 over both communicators, tp=2 and 4 as logical
# ranks of this GPU, NCCL across GPUs where several exist (test_cuda_tp.c).
run_test "test_cuda_tp" "$(budget 90 "$R_MKMODEL")" build/t/cuda/test_cuda_tp
grep -E '^# (tp=|cuda backend)' "$TLOG" | sed 's/^/    /' >> "$SUM"

# ---- the benchmark -------------------------------------------------------

if [ -n "$MKPID" ]; then
    wait "$MKPID"
    rc=$?
    if [ $rc -ne 0 ] && [ -z "$SPARSE" ]; then
        note "mkmodel" "$(status_of $rc)" "$(tail -1 "$OUT/mkmodel.log"); a sparse checkpoint instead"
        mkmodel_start sparse
        wait "$MKPID"
        rc=$?
    fi
    note "mkmodel${SPARSE:+ (sparse)}" "$(status_of $rc)" "$(tail -1 "$OUT/mkmodel.log")"
    [ -n "$SPARSE" ] && note "  sparse checkpoint" "" "zero weights: timings only, and optimistic"
fi

if [ -f "$MODEL/config.json" ]; then
    # 50 s kept for cuda_bench_tp after it
    limit=$(budget 240 50)
    timeout -k 5 "$limit" build/t/cuda/cuda_bench "$MODEL" --out "$OUT" \
        > "$OUT/bench.txt" 2>&1
    rc=$?
    note "bench" "$(status_of $rc)" "limit $limit s; $(grep -c '^check: ok' "$OUT/bench.txt") checks ok, $(grep -c '^check: FAILED' "$OUT/bench.txt") failed"
    [ $rc -ne 0 ] && FAILED=1
    note "gpu after bench" "" "$(timeout 20 nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw \
                               --format=csv,noheader 2> /dev/null | head -1)"
    # tp=1 against tp=2 (same-device on one GPU, NCCL on two), appended
    # to bench.txt: the device tool brings back 8 files, all taken
    limit=$(budget 120 5)
    { echo; echo "==== cuda_bench_tp"; } >> "$OUT/bench.txt"
    timeout -k 5 "$limit" build/t/cuda/cuda_bench_tp "$MODEL" --budget 16384 --runs 3 \
        >> "$OUT/bench.txt" 2>&1
    rc=$?
    note "bench tp" "$(status_of $rc)" "limit $limit s; $(sed -n '/^==== cuda_bench_tp/,$p' "$OUT/bench.txt" | grep -c '^check: FAILED') checks failed"
    [ $rc -ne 0 ] && FAILED=1
else
    note "bench" "not run" "no checkpoint at $MODEL"
    FAILED=1
fi

# ---- memcheck with what is left ------------------------------------------

SAN=$(command -v compute-sanitizer || { [ -x "$CUDA_HOME/bin/compute-sanitizer" ] && echo "$CUDA_HOME/bin/compute-sanitizer"; })
: > "$OUT/sanitizer.log"
if [ -z "$SAN" ]; then
    note "memcheck" "not run" "no compute-sanitizer"
else
    # the delta rule and attention first: shared-memory tiles and tile edges
    # (vision:NAME, omni:NAME, audio:NAME: a sub-test of
    # test_cuda_vision, _omni, _audio)
    for s in gdn gdn_slow_decay attention omni:moe_route omni:moe_gemm \
             audio:akernels vision:vattention vision:vrotary \
             vision:vpatchify vision:vpos vision:vlayernorm vision:velementwise \
             conv rmsnorm \
             gated_norm embed swiglu group_attention span_mean fields_scores \
             layernorm rows gemm; do
        limit=$(budget 90 5)
        if [ "$limit" -lt 20 ]; then
            note "memcheck/$s" "not run" "no time left"
            continue
        fi
        tmp=$(mktemp)
        case $s in
        vision:*) bin=build/t/cuda/test_cuda_vision; sub=${s#vision:} ;;
        omni:*)   bin=build/t/cuda/test_cuda_omni; sub=${s#omni:} ;;
        audio:*)  bin=build/t/cuda/test_cuda_audio; sub=${s#audio:} ;;
        *)        bin=build/t/cuda/test_cuda_kernels; sub=$s ;;
        esac
        timeout -k 5 "$limit" "$SAN" --tool memcheck --error-exitcode 9 --print-limit 10 \
            "$bin" "$sub" > "$tmp" 2>&1
        rc=$?
        { echo "== memcheck $s: exit $rc"; cat "$tmp"; } >> "$OUT/sanitizer.log"
        case $rc in
        0) note "memcheck/$s" clean "$(grep -c '^ok ' "$tmp") checks passed under memcheck" ;;
        9) note "memcheck/$s" ERRORS "$(grep -m1 -E '^=+ (Invalid|Error|Program hit)' "$tmp")"
           FAILED=1 ;;
        *) note "memcheck/$s" "$(status_of $rc)" "$(grep -c '^not ok ' "$tmp") checks failed" ;;
        esac
        rm -f "$tmp"
    done
fi

# ---- summary -------------------------------------------------------------

{
    echo
    echo "---- figures (bench.txt) ----"
    grep -E '^(device|check|  (eager|graph)|  [0-9]+ |long record|  (328|16k|65536)|tp=|  tp=)' \
        "$OUT/bench.txt" 2> /dev/null
    echo "done at t=$(now)s; $( [ $FAILED -eq 0 ] && echo 'everything passed' || echo 'something failed: see above')"
} >> "$SUM"
echo
echo "---- summary ($OUT/summary.txt) ----"
cat "$SUM"
exit $FAILED
