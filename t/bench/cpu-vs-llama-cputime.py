#!/usr/bin/env python3
"""Work per token of ngx_clef and llama.cpp in CPU time, which a shared
machine's load moves far less than wall time:

    build/llama/venv/bin/python t/bench/cpu-vs-llama-cputime.py \
        LLAMA_SERVER MODEL THREADS RECORDSxTOKENS...

after t/bench/cpu-vs-llama.sh has built llama-server and made MODEL and its
two GGUFs.  llama.cpp: the llama-server process's utime + stime over the
timed requests (after a warm-up one; --poll 0, so that its threads sleep
between requests).  ngx_clef: `clef bench`'s CPU time as a child (rusage)
at --repeat 3 minus at --repeat 1, i.e. two forwards without the load.
Prints tokens per CPU-second and the ratio at each precision.  With
THREADS 1 neither engine waits at a barrier; with more, llama.cpp's threads
spin at the end of every op (ggml's barrier, whatever --poll says) and a
loaded machine inflates its CPU time, so read THREADS 1 as the work itself.
"""
import json, os, resource, socket, subprocess, sys, time, urllib.request
server, model, threads = sys.argv[1], sys.argv[2], sys.argv[3]
work = [tuple(int(x) for x in w.split("x")) for w in sys.argv[4:]]
HZ = os.sysconf("SC_CLK_TCK")
Q = {"urgent": {"type": "noul", "instructions": "Does this convey urgency?"},
     "dept": {"type": "choice", "instructions": "Which team?",
              "criteria": {"billing": None, "technical": "Bugs, outages", "sales": None}}}
def body(words):
    return {"model": "clef", "state": "Help! My payouts have been failing for days." + " hello" * words, "questions": Q}
def n_tokens(words):
    out = subprocess.run(["build/clef", "encode", model, "--max-length", "65536"], input=json.dumps(body(words)) + "\n",
                         text=True, capture_output=True, check=True).stdout
    return len(json.loads(out.splitlines()[0])["input_ids"])
def body_of_length(t):
    base = n_tokens(1); words = max(1, t - base + 1)
    while n_tokens(words) > t and words > 1: words -= 1
    return body(words)
def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p
def cpu_of(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / HZ
def post(port, b):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/systemone", data=json.dumps(b).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=900) as r: r.read()
def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN); return r.ru_utime + r.ru_stime
def ours(prec, R, T, repeat):
    c0 = children_cpu()
    subprocess.run(["build/clef", "bench", model, "--records", str(R), "--tokens", str(R * T), "-t", threads,
                    "--repeat", str(repeat), "--max-scaling", "0", "--precision", prec], capture_output=True, check=True)
    return children_cpu() - c0
bodies = {T: body_of_length(T) for _, T in work}
for prec, gg in (("fp32", "f32"), ("bf16", "bf16")):
    port = free_port()
    p = subprocess.Popen([server, "-m", f"{model}.{gg}.gguf", "-t", threads, "-c", str(max(T for _, T in work) + 1024),
                          "-b", "9216", "-ub", "9216", "--parallel", "1", "--load-mode", "none", "--poll", "0",
                          "--host", "127.0.0.1", "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200: break
        except OSError: time.sleep(0.5)
    try:
        for R, T in work:
            post(port, bodies[T])
            c0 = cpu_of(p.pid); t0 = time.perf_counter()
            for _ in range(R): post(port, bodies[T])
            lc = cpu_of(p.pid) - c0; lw = time.perf_counter() - t0
            oc = ours(prec, R, T, 3) - ours(prec, R, T, 1)
            print(f"{R} x {T} {prec}: llama.cpp {gg} {R*T/lc:.0f} tokens/CPU-s ({lc:.1f} CPU-s, wall {lw:.1f} s); "
                  f"ngx_clef {prec} {2*R*T/oc:.0f} tokens/CPU-s ({oc:.1f} CPU-s for 2 forwards); ratio {(2*R*T/oc)/(R*T/lc):.2f}", flush=True)
    finally:
        p.terminate(); p.wait()
