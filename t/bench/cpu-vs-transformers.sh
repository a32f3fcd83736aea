#!/usr/bin/env bash
# The CPU backend against transformers on the same checkpoint, same machine,
# same thread count, in one run:
#
#     t/bench/cpu-vs-transformers.sh [THREADS]        (default: all cores)
#
# Makes (once) a `clef mkmodel --shape medium` checkpoint (hidden 1024,
# 8 layers: 6 Gated DeltaNet + 2 gated attention) under build/bench/, then
#   1. `clef bench` at TOKENS tokens in RECORDS records (backbone and head
#      apart, per-op profile, the per-token cost from 64 to MAX_SCALING
#      tokens);
#   2. transformers' Qwen3.5 text model forward in fp32 on the same token
#      counts: the RECORDS records of equal length as one [RECORDS, len]
#      batch (no padding, transformers' best case), torch threads = THREADS;
# and prints both backbone throughputs and their ratio.  Environment:
# TOKENS (2048), RECORDS (4), REPEAT (3), MAX_SCALING (16384),
# BENCH_MODEL (build/bench/medium), CLEF_SHARED (../shared),
# REFENV (build/refenv).
set -euo pipefail
cd "$(dirname "$0")/../.."

THREADS=${1:-$(nproc)}
TOKENS=${TOKENS:-2048}
RECORDS=${RECORDS:-4}
REPEAT=${REPEAT:-3}
MAX_SCALING=${MAX_SCALING:-16384}
MODEL=${BENCH_MODEL:-build/bench/medium}
SHARED=${CLEF_SHARED:-../shared}
PY=${REFENV:-build/refenv}/bin/python

[ -x build/clef ] || make -j"$(nproc)" all >/dev/null
if [ ! -f "$MODEL/config.json" ]; then
    mkdir -p "$(dirname "$MODEL")"
    build/clef mkmodel --shape medium --tokenizer "$SHARED/tokenizers/qwen3" \
        --seed 1 --out "$MODEL"
fi

echo "== clef bench ($THREADS threads)"
out=$(build/clef bench "$MODEL" --tokens "$TOKENS" --records "$RECORDS" \
        -t "$THREADS" --repeat "$REPEAT" --max-scaling "$MAX_SCALING" --profile)
echo "$out"
clef_tps=$(echo "$out" | awk '/^backbone:/ { print $2 }')

echo
echo "== transformers ($THREADS torch threads, fp32)"
tf_tps=$("$PY" - "$MODEL" "$TOKENS" "$RECORDS" "$THREADS" "$REPEAT" <<'PY'
import sys, time
import torch
from transformers import Qwen3_5ForConditionalGeneration
from transformers.utils import logging

logging.set_verbosity_error()
path, tokens, records, threads, repeat = sys.argv[1], *map(int, sys.argv[2:])
torch.set_num_threads(threads)
model = Qwen3_5ForConditionalGeneration.from_pretrained(path, dtype=torch.float32).eval()
text = model.model.language_model
vocab = model.config.text_config.vocab_size
ids = torch.randint(0, vocab, (records, tokens // records),
                    generator=torch.Generator().manual_seed(1))
with torch.inference_mode():
    text(input_ids=ids, use_cache=False)                       # warm-up
    t0 = time.perf_counter()
    for _ in range(repeat):
        text(input_ids=ids, use_cache=False)
    dt = (time.perf_counter() - t0) / repeat
print(f"transformers text model: {ids.numel() / dt:.1f} tokens/s "
      f"({dt:.4f} s per forward of {records} x {tokens // records}, "
      f"attention {model.config._attn_implementation})", file=sys.stderr)
print(f"{ids.numel() / dt:.1f}")
PY
)

echo
echo "== result"
echo "clef cpu backbone:   $clef_tps tokens/s"
echo "transformers (fp32): $tf_tps tokens/s"
awk -v a="$clef_tps" -v b="$tf_tps" 'BEGIN { printf "ratio: %.2fx\n", a / b }'
