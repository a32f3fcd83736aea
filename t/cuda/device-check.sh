#!/bin/bash
# The one run of the CUDA backend on the GPU machine (one H200; see
# /work/.library/device/README.md): build, CUDA tests, a clef-flash
# checkpoint, the benchmark.  About 4-8 minutes.
#
# Here, once:      t/cuda/device-deps.sh        (fills .devcarry/)
# On the device:   run command "bash t/cuda/device-check.sh", carry [".devcarry"],
#                  timeout_s 600
#
# Writes under $OUT (7 files):
#   env.txt          nvidia-smi, nvcc, OS
#   build.log        make of build/clef and the CUDA library, tests, bench
#   spills.txt       ptxas registers / spills per kernel (t/cuda/check-spills.sh)
#   tests.log        the CUDA tests (TAP)
#   mkmodel.log      clef mkmodel --shape clef-flash
#   bench.txt        the benchmark's table
#   cuda_bench.json  the benchmark's numbers
# and ends with a short summary.  MODEL_SHAPE (default clef-flash) and
# MODEL_DIR (default /tmp/clef-flash) may be set to try the script
# elsewhere with a smaller checkpoint; FORCE_CARRIED_DEPS=1 builds against
# the carried packages even where the system has its own.
set -u

OUT=${OUT:-build/device-check}
SHAPE=${MODEL_SHAPE:-clef-flash}
MODEL=${MODEL_DIR:-/tmp/$SHAPE}
SHARED=${CLEF_SHARED:-.devcarry/shared}
JOBS=$(nproc)
T0=$(date +%s)
mkdir -p "$OUT"

step() {
    echo "== $1 (t = $(( $(date +%s) - T0 )) s)"
}
status() {
    # what a step ended with, for the summary
    if [ "$1" -eq 0 ]; then echo ok; elif [ "$1" -eq 124 ]; then echo "timed out"; else echo "failed ($1)"; fi
}

step "environment"
{
    nvidia-smi
    nvcc --version
    uname -a
    cat /etc/os-release
} > "$OUT/env.txt" 2>&1

# libclef's build dependencies: the system's when pkg-config finds them,
# otherwise the Debian packages carried in .devcarry/debs.
MAKEVARS=()
if [ -n "${FORCE_CARRIED_DEPS:-}" ] \
   || ! pkg-config --exists libpcre2-8 libutf8proc jansson openblas 2>/dev/null; then
    D=/tmp/clef-devdeps
    L=$D/usr/lib/x86_64-linux-gnu
    mkdir -p "$D"
    for f in .devcarry/debs/*.deb; do
        dpkg-deb -x "$f" "$D" || echo "cannot unpack $f"
    done
    MAKEVARS=("PKG_CFLAGS=-DUTF8PROC_EXPORTS -I$D/usr/include -I$D/usr/include/x86_64-linux-gnu -I$D/usr/include/x86_64-linux-gnu/openblas-pthread"
              "PKG_LIBS=-L$L -L$L/openblas-pthread -lpcre2-8 -lutf8proc -ljansson -lopenblas")
    export LD_LIBRARY_PATH=$L:$L/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    echo "using the carried packages in $D"
fi

step "build"
B0=$(date +%s)
timeout 200 make -j"$JOBS" "${MAKEVARS[@]}" build/clef cuda > "$OUT/build.log" 2>&1
BUILD=$(status $?)
BUILD_S=$(( $(date +%s) - B0 ))
echo "build: $BUILD in $BUILD_S s" | tee -a "$OUT/build.log"

step "spills"
t/cuda/check-spills.sh build/cuda/ptxas.log > "$OUT/spills.txt" 2>&1
SPILLS=$(status $?)

step "tests"
if command -v prove > /dev/null 2>&1; then
    CLEF_SHARED=$SHARED timeout 150 prove -v --exec '' build/t/cuda/test_* > "$OUT/tests.log" 2>&1
    TESTS=$(status $?)
else
    TESTS=ok
    for t in build/t/cuda/test_*; do
        echo "== $t" >> "$OUT/tests.log"
        CLEF_SHARED=$SHARED timeout 100 "$t" >> "$OUT/tests.log" 2>&1 || TESTS="failed ($t)"
    done
fi

step "mkmodel --shape $SHAPE"
if [ ! -f "$MODEL/config.json" ]; then
    rm -rf "$MODEL"
    M0=$(date +%s)
    timeout 200 build/clef mkmodel --shape "$SHAPE" --tokenizer "$SHARED/tokenizers/qwen3" \
        --seed 1 --out "$MODEL" > "$OUT/mkmodel.log" 2>&1
    MK=$(status $?)
    echo "mkmodel: $MK in $(( $(date +%s) - M0 )) s" | tee -a "$OUT/mkmodel.log"
else
    MK=ok
    echo "reusing $MODEL" > "$OUT/mkmodel.log"
fi

step "bench"
BENCH="not run"
if [ "$MK" = ok ]; then
    timeout 200 build/t/cuda/cuda_bench "$MODEL" --out "$OUT" > "$OUT/bench.txt" 2>&1
    BENCH=$(status $?)
fi

step "done"
echo
echo "---- summary ----"
printf '%-8s %s\n' build "$BUILD ($BUILD_S s)" spills "$SPILLS" tests "$TESTS" \
    mkmodel "$MK" bench "$BENCH"
grep -E '^(ok|not ok|1\.\.)' "$OUT/tests.log" | grep -v '^ok' | head -20
grep -E 'Result|Files=' "$OUT/tests.log"
grep -E 'attn_kernel|gdn_kernel|check-spills' "$OUT/spills.txt"
echo
cat "$OUT/bench.txt"
