#!/usr/bin/env bash
# The CPU backend of this tree against the one of another git revision, on
# the same checkpoint, same machine, same threads, in one run:
#
#     t/bench/cpu-vs-rev.sh REV [THREADS]             (default: all cores)
#
# e.g. REV = the commit before a change to engine/cpu.  Builds REV's
# build/clef under build/bench/rev-REV/ (from `git archive`, once) and this
# tree's build/clef, makes (once) a `clef mkmodel --shape medium` checkpoint
# under build/bench/, then for each workload (RECORDS x TOKENS-per-record)
# runs ROUNDS rounds of, alternately, REV's and this tree's `clef bench`
# (one warm-up and REPEAT timed forwards each) and prints both total
# throughputs (backbone + head), best round against best round (on a shared
# machine the best round is the one least disturbed by others), and the
# ratio this tree / REV.  A benchmark, not a test: it asserts nothing.
# Environment: WORKLOADS ("1x256 4x512 1x2048"), REPEAT (2), ROUNDS (3),
# BENCH_MODEL (build/bench/medium-qwen3: the medium shape with Qwen3's
# tokenizer, whose image tokens the tower's config needs).
set -euo pipefail
cd "$(dirname "$0")/../.."

REV=${1:?usage: t/bench/cpu-vs-rev.sh REV [THREADS]}
THREADS=${2:-$(nproc)}
WORKLOADS=${WORKLOADS:-1x256 4x512 1x2048}
REPEAT=${REPEAT:-2}
ROUNDS=${ROUNDS:-3}
MODEL=${BENCH_MODEL:-build/bench/medium-qwen3}
SHA=$(git rev-parse --short "$REV")
BASE=build/bench/rev-$SHA

make -j"$(nproc)" build/clef >/dev/null
if [ ! -x "$BASE/build/clef" ]; then
    rm -rf "$BASE"
    mkdir -p "$BASE"
    git archive "$SHA" | tar -x -C "$BASE"
    make -C "$BASE" -j"$(nproc)" build/clef >/dev/null
fi
if [ ! -f "$MODEL/config.json" ]; then
    mkdir -p "$(dirname "$MODEL")"
    build/clef mkmodel --shape medium --tokenizer t/fixtures/tokenizer/qwen3 \
        --seed 1 --out "$MODEL" >/dev/null
fi

# total tokens/s of one `clef bench` run
rate() {
    "$1" bench "$MODEL" --records "$2" --tokens "$3" -t "$THREADS" \
        --repeat "$REPEAT" --max-scaling 0 | awk '/^total:/ { print $2 }'
}

build/clef bench "$MODEL" --tokens 256 --records 1 -t "$THREADS" --repeat 1 \
    --max-scaling 0 | sed -n 3p
printf '%-10s %14s %14s %8s\n' workload "$SHA tok/s" "tree tok/s" ratio
for w in $WORKLOADS; do
    records=${w%x*}
    tokens=$(( records * ${w#*x} ))
    best_base=0
    best_tree=0
    for _ in $(seq "$ROUNDS"); do
        b=$(rate "$BASE/build/clef" "$records" "$tokens")
        t=$(rate build/clef "$records" "$tokens")
        best_base=$(echo "$b $best_base" | awk '{ print ($1 > $2) ? $1 : $2 }')
        best_tree=$(echo "$t $best_tree" | awk '{ print ($1 > $2) ? $1 : $2 }')
    done
    printf '%-10s %14.1f %14.1f %8.3f\n' "$w" "$best_base" "$best_tree" \
        "$(echo "$best_tree $best_base" | awk '{ print $1 / $2 }')"
done
