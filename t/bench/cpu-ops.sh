#!/usr/bin/env bash
# The CPU ops around the linear layers (t/bench/cpu-ops.c: conv + silu,
# gated norm, delta rule, attention, its gate, silu*up) of this tree against
# those of another git revision, one thread, CPU time, in one run:
#
#     t/bench/cpu-ops.sh REV [TOKENS...]            (default: 256 2048)
#
# Builds REV's build/libclef.a under build/bench/rev-REV/ (from
# `git archive`, once, as t/bench/cpu-vs-rev.sh does) and this tree's,
# links cpu-ops.c against each, then for each length runs ROUNDS rounds of,
# alternately, REV's and this tree's binary (best of REPEAT runs of each op
# inside) and prints per op the best ms of each and the ratio REV / this
# tree (the speed-up).  A benchmark, not a test.  Environment: ROUNDS (2),
# REPEAT (5).
set -euo pipefail
cd "$(dirname "$0")/../.."

REV=${1:?usage: t/bench/cpu-ops.sh REV [TOKENS...]}
shift
LENGTHS=${*:-256 2048}
ROUNDS=${ROUNDS:-2}
REPEAT=${REPEAT:-5}
SHA=$(git rev-parse --short "$REV")
BASE=build/bench/rev-$SHA
INC="-Iengine"

make -j"$(nproc)" build/libclef.a >/dev/null
if [ ! -f "$BASE/build/libclef.a" ]; then
    rm -rf "$BASE"
    mkdir -p "$BASE"
    git archive "$SHA" | tar -x -C "$BASE"
    make -C "$BASE" -j"$(nproc)" build/libclef.a >/dev/null
fi
LIBS="-ljansson -lm -lpthread -ldl"
cc -std=c11 -D_GNU_SOURCE -O2 $INC -o build/bench/cpu-ops t/bench/cpu-ops.c \
    build/libclef.a $LIBS
cc -std=c11 -D_GNU_SOURCE -O2 -I"$BASE/engine" -I"$BASE/engine/base" \
    -o "$BASE/cpu-ops" t/bench/cpu-ops.c "$BASE/build/libclef.a" $LIBS

for T in $LENGTHS; do
    for r in $(seq "$ROUNDS"); do
        "$BASE/cpu-ops" "$T" "$REPEAT" | sed "s/^/rev /"
        build/bench/cpu-ops "$T" "$REPEAT" | sed "s/^/new /"
    done | awk -v T="$T" -v rev="$SHA" '
        { key = $2; for (i = 3; i < NF; i++) key = key " " $i
          v = $NF + 0
          if (!(key in order)) { order[key] = ++n; names[n] = key }
          if ($1 == "rev" && (!(key in a) || v < a[key])) a[key] = v
          if ($1 == "new" && (!(key in b) || v < b[key])) b[key] = v }
        END { printf "# %d tokens, 1 thread, CPU ms, best of rounds\n", T
              printf "%-12s %10s %10s %8s\n", "op", rev, "this", "speed-up"
              for (i = 1; i <= n; i++) { k = names[i]
                  printf "%-12s %10.3f %10.3f %8.2f\n", k, a[k], b[k], a[k] / b[k] } }'
done
