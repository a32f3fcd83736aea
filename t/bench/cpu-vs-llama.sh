#!/usr/bin/env bash
# The CPU backend against llama.cpp, the engine CPU users pick today, on the
# same checkpoint, same machine, same threads, in one run:
#
#     t/bench/cpu-vs-llama.sh [THREADS]             (default: all cores)
#
# 1. Sets up llama.cpp and the checkpoint (t/bench/llama-setup.sh): a
#    `clef mkmodel --shape medium` checkpoint converted by llama.cpp's
#    converter to GGUF f32 and bf16, and quantized by llama-quantize to
#    Q8_0 and Q4_K_M.
# 2. For each pair of PAIRS (ours:theirs), starts llama-server on a
#    loopback port it checks is free with theirs' GGUF, and checks that it
#    and `clef decide` give the same probabilities on a few requests: it
#    prints the largest difference (ours are rounded to 4 decimals).  Ours
#    reads the same file: the safetensors checkpoint for f32 and bf16 (the
#    GGUF holds the same values), the quantized GGUF itself for q8_0 and
#    q4_k_m, at precision q8 (int8 activations, cpu/kernels/qdot.h) and,
#    with EXACT=1 (default), at fp32 as well (the exact mode: the blocks
#    dequantized into the fp32 products), to say what exactness costs.
# 3. Prints prompt tokens/s for both (`clef bench`, total of backbone and
#    head, median of ROUNDS; llama.cpp: /v1/systemone requests of the same
#    lengths, sent one after another: it runs one decision record per
#    ubatch; input tokens over wall time, median of ROUNDS) for each workload
#    RECORDS x TOKENS, and the ratios ours / llama.cpp on the same file.
#    The two are measured in alternation, round by round, so that a shared
#    machine's load falls on both.
#
# Fairness.  llama-server gets the same threads for prompts (-t, and -tb
# follows it), one slot, a context and ubatch that hold the longest record
# whole (a decision record must be one ubatch), a warm-up request per
# workload before the timed ones, and --load-mode none: its weights are
# read into memory as ours are, where a mapped GGUF (the f32 one is 1.7 GB)
# could lose pages to a page cache under pressure on a shared machine and
# be read back from disk inside timed requests.  Its threads spin between
# graph nodes by default (--poll 50), which on a loaded machine can cost it
# time that blocking waits (--poll 0, how our pool waits) do not: it runs
# at every level of LLAMA_POLL and keeps its best, so no setting of its own
# can explain a ratio in our favour.
#
# A benchmark, not a test: it asserts nothing.  On a shared machine read the
# ratios.  Environment: WORKLOADS ("1x256 8x256 4x512 1x2048 1x8192"),
# PAIRS ("fp32:f32 bf16:bf16 q8:q8_0 q8:q4_k_m"), EXACT (1), ROUNDS (2),
# LLAMA_POLL ("50 0"), BENCH_MODEL (build/bench/medium-qwen3), LLAMA_DIR
# (build/llama), CLEF (build/clef: the binary measured as ours).
set -euo pipefail
cd "$(dirname "$0")/../.."

THREADS=${1:-$(nproc)}
WORKLOADS=${WORKLOADS:-1x256 8x256 4x512 1x2048 1x8192}
PAIRS=${PAIRS:-fp32:f32 bf16:bf16 q8:q8_0 q8:q4_k_m}
EXACT=${EXACT:-1}
ROUNDS=${ROUNDS:-2}
POLL=${LLAMA_POLL:-50 0}
. t/bench/llama-setup.sh

# ---- the run: agreement, then throughput --------------------------------
exec "$VENV/bin/python" - "$SERVER" "$MODEL" "$THREADS" "$ROUNDS" "$POLL" "$CLEF" \
    "$PAIRS" "$EXACT" $WORKLOADS <<'EOF'
import json, statistics, subprocess, sys, time

server, model, threads, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
polls = sys.argv[5].split()
clef = sys.argv[6]
pairs = [tuple(p.split(":")) for p in sys.argv[7].split()]
exact = sys.argv[8] == "1"
workloads = [tuple(int(x) for x in w.split("x")) for w in sys.argv[9:]]
longest = max(t for _, t in workloads)
sys.path.insert(0, "t/bench")
from llamabench import body, body_of_length, post, start_llama, worst_difference


def ours_file(theirs):
    """ours reads the safetensors checkpoint for the float types (the same
    values as the GGUF), the quantized GGUF itself for the block types"""
    return model if theirs in ("f32", "bf16") else f"{model}.{theirs}.gguf"


def ours_decide(path, precision, bodies):
    out = subprocess.run([clef, "decide", path, "-t", str(threads),
                          "--precision", precision],
                         input="".join(json.dumps(b) + "\n" for b in bodies),
                         text=True, capture_output=True, check=True).stdout
    return [json.loads(l) for l in out.splitlines()]


def ours_once(path, precision, records, tokens):
    """one `clef bench` run: a warm-up forward, then the best of two"""
    out = subprocess.run([clef, "bench", path, "--records", str(records),
                          "--tokens", str(records * tokens), "-t", str(threads),
                          "--repeat", "2", "--max-scaling", "0",
                          "--precision", precision],
                         capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        if line.startswith("total:"):
            return float(line.split()[1])
    sys.exit("clef bench printed no total")


def llama_once(port, records, tokens, bodies):
    b = bodies[tokens]
    t0 = time.perf_counter()
    for _ in range(records):
        post(port, b)
    return records * tokens / (time.perf_counter() - t0)


samples = [body(w) for w in (1, 40, 300)]
bodies = {t: body_of_length(clef, model, t) for t in sorted({t for _, t in workloads})}
# Per precision, one llama-server per --poll level, all up at once; per
# workload, after a warm-up request to each, ROUNDS rounds of each server
# then ours, so that both are measured in the same minutes of a shared
# machine (llama.cpp gets a try per poll level a round, we get one).
rates = {}
for ours, theirs in pairs:
    path = ours_file(theirs)
    mine = [ours] + (["fp32"] if exact and ours != "fp32" and path != model else [])
    servers = []
    try:
        for poll in polls:
            servers.append((poll,) + start_llama(server, f"{model}.{theirs}.gguf",
                                                 threads, longest, poll))
        port = servers[0][2]
        worst = worst_difference(ours_decide(path, ours, samples),
                                 [post(port, b) for b in samples])
        print(f"# agreement, ngx_clef {ours} vs llama.cpp on {theirs}: max "
              f"|probability| diff {worst:.2g} over {len(samples)} requests (ours "
              f"rounded to 4 decimals)", flush=True)
        for w in workloads:
            for poll, proc, port in servers:
                post(port, bodies[w[1]])            # warm-up
            for k in range(rounds):
                for poll, proc, port in servers:
                    r = llama_once(port, w[0], w[1], bodies)
                    key = ("llama", theirs) + w
                    rates.setdefault(key, []).append(r)
                    print(f"# {w[0]} x {w[1]} round {k + 1}: llama.cpp {theirs} "
                          f"--poll {poll} {r:.0f} tokens/s", flush=True)
                for prec in mine:
                    r = ours_once(path, prec, w[0], w[1])
                    key = ("clef", prec, theirs) + w
                    rates.setdefault(key, []).append(r)
                    print(f"# {w[0]} x {w[1]} round {k + 1}: ngx_clef {prec} on "
                          f"{theirs} {r:.0f} tokens/s", flush=True)
    finally:
        for poll, proc, port in servers:
            proc.terminate()
            proc.wait()

rates = {k: statistics.median(v) for k, v in rates.items()}
print(f"# {model}, {threads} threads, prompt tokens/s, median of {rounds} rounds "
      f"(llama.cpp: and of --poll {', '.join(polls)})")
cols = []
for ours, theirs in pairs:
    cols.append((f"clef {ours} {theirs}", lambda w, o=ours, t=theirs: rates[("clef", o, t) + w]))
    cols.append((f"llama {theirs}", lambda w, t=theirs: rates[("llama", t) + w]))
    cols.append(("ratio", lambda w, o=ours, t=theirs:
                 rates[("clef", o, t) + w] / rates[("llama", t) + w]))
    if ("clef", "fp32", theirs) + workloads[0] in rates and ours != "fp32":
        cols.append((f"clef fp32 {theirs}", lambda w, t=theirs: rates[("clef", "fp32", t) + w]))
        cols.append(("exact/fast", lambda w, o=ours, t=theirs:
                     rates[("clef", "fp32", t) + w] / rates[("clef", o, t) + w]))
print("| work | " + " | ".join(c[0] for c in cols) + " |")
print("|---" * (len(cols) + 1) + "|")
for w in workloads:
    cells = []
    for name, f in cols:
        v = f(w)
        cells.append(f"{v:.2f}" if name in ("ratio", "exact/fast") else f"{v:,.0f}")
    print(f"| {w[0]} x {w[1]} | " + " | ".join(cells) + " |")
EOF
