#!/usr/bin/env bash
# CPU tensor parallelism: tokens/s of `clef bench` at tp=1 and tp=2 on a
# medium checkpoint (`clef mkmodel --shape medium`, made once under
# build/bench/), the same threads and the same fixed token budget, in one
# run, with the ratio tp=2 / tp=1 and the share of the ranks' backbone time
# spent in the all-reduce (waiting for the other rank included):
#
#     t/bench/tp.sh [THREADS]        (default: all cores)
#
# tp=N splits THREADS between N rank threads (each at least one).  On a
# machine with few cores tp=2 is not expected to be faster: the same cores
# run the same products, in two halves that meet at two all-reduces per
# layer.  What tp buys is each rank holding 1/N of the backbone; its point
# is the CUDA backend, where a rank is a device.  A benchmark, not a test:
# it asserts nothing.  Environment: TOKENS (2048), RECORDS (4), REPEAT (3),
# BENCH_MODEL (build/bench/medium-qwen3).
set -euo pipefail
cd "$(dirname "$0")/../.."

THREADS=${1:-$(nproc)}
TOKENS=${TOKENS:-2048}
RECORDS=${RECORDS:-4}
REPEAT=${REPEAT:-3}
MODEL=${BENCH_MODEL:-build/bench/medium-qwen3}

make -j"$(nproc)" build/clef >/dev/null
if [ ! -f "$MODEL/joint_head_config.json" ]; then
    mkdir -p "$(dirname "$MODEL")"
    build/clef mkmodel --shape medium --tokenizer t/fixtures/tokenizer/qwen3 \
        --seed 1 --out "$MODEL" >/dev/null
fi

declare -A TPS
for tp in 1 2; do
    out=$(build/clef bench "$MODEL" --tokens "$TOKENS" --records "$RECORDS" \
          --repeat "$REPEAT" --max-scaling 0 -t "$THREADS" --tp "$tp")
    TPS[$tp]=$(printf '%s\n' "$out" | awk '/^total:/ { print $2 }')
    share=$(printf '%s\n' "$out" | sed -n 's/^tp [0-9]*: all-reduce \([0-9.]*%\).*/\1/p')
    printf 'tp=%d: %s tokens/s (%d tokens in %d records, %d threads)%s\n' \
        "$tp" "${TPS[$tp]}" "$TOKENS" "$RECORDS" "$THREADS" \
        "${share:+; all-reduce ${share} of the backbone time}"
done
awk -v a="${TPS[1]}" -v b="${TPS[2]}" \
    'BEGIN { printf "ratio tp=2 / tp=1: %.3f\n", b / a }'
