#!/usr/bin/env bash
# The CPU backend against transformers on the same checkpoint, same machine,
# same thread count, in one run:
#
#     t/bench/cpu-vs-transformers.sh [THREADS]        (default: all cores)
#
# Makes (once) a `clef mkmodel --shape medium` checkpoint (hidden 1024,
# 8 layers: 6 Gated DeltaNet + 2 gated attention) under build/bench/, then
#   1. `clef bench --profile` at TOKENS tokens in RECORDS records: backbone
#      and head apart, the backbone's time per op, and its cost per token
#      for one record of 64 .. MAX_SCALING tokens;
#   2. ROUNDS rounds of, alternately, `clef bench` on that batch and
#      transformers' Qwen3.5 text model forward in fp32 on the same token
#      counts (the RECORDS records of equal length as one [RECORDS, len]
#      batch: no padding, transformers' best case), torch threads = THREADS,
#      REPEAT forwards each after a warm-up;
# and prints both backbone throughputs and their ratio, best round against
# best round (on a shared machine the best round is the one least disturbed
# by others; the median is printed too).  Environment: TOKENS (2048),
# RECORDS (4), REPEAT (2), ROUNDS (3), MAX_SCALING (16384),
# BENCH_MODEL (build/bench/medium, made with t/fixtures/tokenizer/qwen3),
# REFENV (build/refenv).
set -euo pipefail
cd "$(dirname "$0")/../.."

THREADS=${1:-$(nproc)}
TOKENS=${TOKENS:-2048}
RECORDS=${RECORDS:-4}
REPEAT=${REPEAT:-2}
ROUNDS=${ROUNDS:-3}
MAX_SCALING=${MAX_SCALING:-16384}
MODEL=${BENCH_MODEL:-build/bench/medium}
PY=${REFENV:-build/refenv}/bin/python

[ -x build/clef ] || make -j"$(nproc)" all >/dev/null
if [ ! -f "$MODEL/config.json" ]; then
    mkdir -p "$(dirname "$MODEL")"
    build/clef mkmodel --shape medium --tokenizer t/fixtures/tokenizer/qwen3 \
        --seed 1 --out "$MODEL"
fi

echo "== clef bench --profile ($THREADS threads)"
build/clef bench "$MODEL" --tokens "$TOKENS" --records "$RECORDS" -t "$THREADS" \
    --repeat "$REPEAT" --max-scaling "$MAX_SCALING" --profile

echo
echo "== clef bench and transformers, $ROUNDS rounds ($THREADS threads, fp32)"
"$PY" - "$MODEL" "$TOKENS" "$RECORDS" "$THREADS" "$REPEAT" "$ROUNDS" <<'PY'
import re, statistics, subprocess, sys, time
import torch
from transformers import Qwen3_5ForConditionalGeneration
from transformers.utils import logging

logging.set_verbosity_error()
path = sys.argv[1]
tokens, records, threads, repeat, rounds = map(int, sys.argv[2:])
torch.set_num_threads(threads)
model = Qwen3_5ForConditionalGeneration.from_pretrained(path, dtype=torch.float32).eval()
text = model.model.language_model
vocab = model.config.text_config.vocab_size
ids = torch.randint(0, vocab, (records, tokens // records),
                    generator=torch.Generator().manual_seed(1))
clef = ["build/clef", "bench", path, "--tokens", str(ids.numel()), "--records",
        str(records), "-t", str(threads), "--repeat", str(repeat), "--max-scaling", "0"]

ours, theirs = [], []
with torch.inference_mode():
    text(input_ids=ids, use_cache=False)                       # warm-up
    for r in range(rounds):
        out = subprocess.run(clef, check=True, capture_output=True, text=True).stdout
        ours.append(float(re.search(r"^backbone: ([0-9.]+) tokens/s", out, re.M).group(1)))
        t0 = time.perf_counter()
        for _ in range(repeat):
            text(input_ids=ids, use_cache=False)
        theirs.append(ids.numel() * repeat / (time.perf_counter() - t0))
        print(f"round {r + 1}: clef {ours[-1]:8.1f} tokens/s   transformers "
              f"{theirs[-1]:8.1f} tokens/s   ratio {ours[-1] / theirs[-1]:.2f}x", flush=True)

print()
print(f"batch: {ids.numel()} tokens, {records} records of {tokens // records}; "
      f"transformers attention: {model.config._attn_implementation}")
print(f"clef cpu backbone:   {max(ours):.1f} tokens/s (best), {statistics.median(ours):.1f} (median)")
print(f"transformers (fp32): {max(theirs):.1f} tokens/s (best), {statistics.median(theirs):.1f} (median)")
print(f"ratio: {max(ours) / max(theirs):.2f}x best/best, "
      f"{statistics.median(ours) / statistics.median(theirs):.2f}x median/median")
PY
