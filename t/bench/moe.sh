#!/usr/bin/env bash
# Clef Omni's routed experts on the CPU backend against transformers' on
# the same checkpoint, same machine, same thread count, in one run:
#
#     t/bench/moe.sh [THREADS]                        (default: all cores)
#
# Makes (once) a checkpoint of t/bench/omni-moe.json under build/bench/:
# one decoder layer of Clef Omni's real sizes (hidden 2048, 128 experts,
# top 8, 768 columns each; random weights, so the routing spreads the
# tokens over the experts), then ROUNDS rounds of, alternately,
#   - `clef bench --profile` on TOKENS tokens in one record: the MoE
#     block's time is its profile's three MLP rows (router, routing and
#     gathering, each expert's gate|up product; SwiGLU; each expert's down
#     product and the weighted sums);
#   - transformers 5.10.2's Qwen3-Omni thinker layer's MLP (the sparse MoE
#     block, fp32) on TOKENS random hidden rows, torch threads = THREADS,
#     REPEAT forwards after a warm-up;
# and prints both MoE tokens/s and the ratio ours / transformers, best
# round against best round (on a shared machine the best round is the one
# least disturbed by others), and the backbone's tokens/s.  A benchmark,
# not a test: it asserts nothing.  Environment: TOKENS (1024), REPEAT (2),
# ROUNDS (2), BENCH_MODEL (build/bench/omni-moe), REFENV
# (build/refenv-omni: transformers 5.10.2, t/reference/fetch-reference.sh
# omni).
set -euo pipefail
cd "$(dirname "$0")/../.."

THREADS=${1:-$(nproc)}
TOKENS=${TOKENS:-1024}
REPEAT=${REPEAT:-2}
ROUNDS=${ROUNDS:-2}
MODEL=${BENCH_MODEL:-build/bench/omni-moe}
PY=${REFENV:-build/refenv-omni}/bin/python

[ -x build/clef ] || make -j"$(nproc)" all >/dev/null
if [ ! -f "$MODEL/config.json" ]; then
    mkdir -p "$(dirname "$MODEL")"
    build/clef mkmodel --config t/bench/omni-moe.json \
        --tokenizer t/fixtures/tokenizer/qwen3-omni --seed 1 --out "$MODEL"
fi

echo "== MoE block: clef bench and transformers, $ROUNDS rounds" \
     "($THREADS threads, fp32, $TOKENS tokens)"
"$PY" - "$MODEL" "$TOKENS" "$THREADS" "$REPEAT" "$ROUNDS" <<'PY'
import re, subprocess, sys, time
import torch
from transformers import AutoConfig, Qwen3OmniMoeForConditionalGeneration
from transformers.utils import logging

logging.set_verbosity_error()
path = sys.argv[1]
tokens, threads, repeat, rounds = map(int, sys.argv[2:])
torch.set_num_threads(threads)
config = AutoConfig.from_pretrained(path)
config.enable_audio_output = False
model, info = Qwen3OmniMoeForConditionalGeneration.from_pretrained(
    path, config=config, dtype=torch.float32, output_loading_info=True)
model.eval()
# the very weights ngx_clef reads: none of the thinker's left at random
missing = [k for k in info["missing_keys"] if k.startswith("thinker.model.")]
assert not missing, missing
layer = model.thinker.model.layers[0]
moe = layer.mlp
hidden = config.thinker_config.text_config.hidden_size
g = torch.Generator().manual_seed(0)
x = torch.randn(1, tokens, hidden, generator=g)


def ours():
    out = subprocess.run(
        ["build/clef", "bench", path, "--tokens", str(tokens), "--records",
         "1", "-t", str(threads), "--repeat", str(repeat), "--max-scaling",
         "0", "--profile"], check=True, capture_output=True, text=True).stdout
    ms = sum(float(m.group(1)) for m in
             re.finditer(r"^\s+mlp [^\n]*?\s([0-9.]+)\s+[0-9.]+%$", out, re.M))
    backbone = float(re.search(r"^backbone: ([0-9.]+) tokens/s", out, re.M).group(1))
    return tokens / (ms / 1000.0), backbone


@torch.inference_mode()
def theirs():
    moe(x)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        moe(x)
        best = min(best, time.perf_counter() - t0)
    return tokens / best


a, b, bb = [], [], []
for r in range(rounds):
    o, k = ours()
    t = theirs()
    a.append(o)
    bb.append(k)
    b.append(t)
    print(f"round {r + 1}: ngx_clef MoE {o:9.1f} tokens/s (backbone {k:.1f}), "
          f"transformers MoE {t:9.1f} tokens/s")
print(f"best: ngx_clef MoE {max(a):.1f} tokens/s, transformers {max(b):.1f} "
      f"tokens/s, ratio {max(a) / max(b):.2f}x; ngx_clef backbone "
      f"{max(bb):.1f} tokens/s")
PY
