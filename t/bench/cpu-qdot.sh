#!/usr/bin/env bash
# The quantized products (t/bench/cpu-qdot.c) against the exact fp32
# product, one thread, CPU time, on the linear layers' shapes of the medium
# and clef-flash checkpoints:
#
#     t/bench/cpu-qdot.sh [M [R [TYPE...]]]       (M 256, R 5, all types)
#
# Prints GOP/s of each and the ratio q8 / fp32.  A benchmark, not a test.
set -euo pipefail
cd "$(dirname "$0")/../.."

make -j"$(nproc)" build/libclef.a >/dev/null
mkdir -p build/bench
cc -std=c11 -D_GNU_SOURCE -O2 -Iengine -o build/bench/cpu-qdot \
    t/bench/cpu-qdot.c build/libclef.a -ljansson -lm -lpthread -ldl
exec build/bench/cpu-qdot "$@"
