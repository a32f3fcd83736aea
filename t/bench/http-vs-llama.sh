#!/usr/bin/env bash
# Benchmark (not a test): nginx + ngx_clef against llama-server over HTTP,
# on the same GGUF file, the same request bodies and the same threads, as a
# user compares them:
#
#     t/bench/http-vs-llama.sh [THREADS]            (default: all cores)
#
# Sets up llama.cpp and the medium checkpoint's GGUF files as
# t/bench/cpu-vs-llama.sh does (t/bench/llama-setup.sh).  For each TYPE
# (q8_0, q4_k_m), starts nginx with the module (`clef_model clef FILE.gguf
# threads=THREADS precision=PRECISION`, one worker) and llama-server on the
# same file (-t THREADS; --parallel 1 for one client, --parallel CLIENTS
# for many, its best case for each), checks that both give the same
# probabilities on a few requests, then for each workload of TOKENS input
# tokens a request and CLIENTS clients at once, sends the same bodies to
# each, ROUNDS rounds alternating which goes first, and prints per round the
# raw figures of both (input tokens/s over wall time, requests/s) and the
# medians with the ratio ngx_clef / llama-server.  With EXACT=1 (default)
# ngx_clef at fp32 (the exact mode) is measured as well, to say what the
# exact mode costs.  Environment: TYPES ("q8_0 q4_k_m"; the files are
# made for every type named: iq4_xs, q3_k_m, q5_k_m, q6_k ...), PRECISION (q8),
# TOKENS ("64 256 2048"), CLIENTS ("1 8"), ROUNDS (3), BUDGET (tokens per
# measurement, 16384), EXACT (1), BENCH_MODEL, LLAMA_DIR, LLAMA_SERVER (a
# llama-server to use instead of the one llama-setup.sh builds), NGINX
# (/usr/sbin/nginx).
#
# On a shared machine read the medians and the ratios; the machine's load
# falls on both sides alike because they alternate round by round.
set -euo pipefail
cd "$(dirname "$0")/../.."

THREADS=${1:-$(nproc)}
LLAMA_TYPES=$(echo "${TYPES:-q8_0 q4_k_m}" | tr 'a-z' 'A-Z')
. t/bench/llama-setup.sh
SERVER=${LLAMA_SERVER:-$SERVER}
make -j"$(nproc)" build/ngx_http_clef_module.so >/dev/null

exec "$VENV/bin/python" - "$SERVER" "$MODEL" "$THREADS" "$CLEF" <<'EOF'
import json, os, shutil, statistics, subprocess, sys, tempfile, threading, time

server, model, threads, clef = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
types = os.environ.get("TYPES", "q8_0 q4_k_m").split()
precision = os.environ.get("PRECISION", "q8")
lengths = [int(x) for x in os.environ.get("TOKENS", "64 256 2048").split()]
clients = [int(x) for x in os.environ.get("CLIENTS", "1 8").split()]
rounds = int(os.environ.get("ROUNDS", "3"))
budget = int(os.environ.get("BUDGET", "16384"))
exact = os.environ.get("EXACT", "1") == "1"
nginx = os.environ.get("NGINX", "/usr/sbin/nginx")
module = os.path.abspath("build/ngx_http_clef_module.so")
sys.path.insert(0, "t/bench")
from llamabench import body, body_of_length, free_port, post, start_llama, wait_ready, worst_difference


def start_nginx(gguf, prec):
    prefix = tempfile.mkdtemp(prefix="clef-http-")
    os.chmod(prefix, 0o755)
    for d in ("conf", "logs", "tmp"):
        os.mkdir(os.path.join(prefix, d))
    port = free_port()
    user = "user nobody nogroup;" if os.getuid() == 0 else ""
    with open(os.path.join(prefix, "conf/nginx.conf"), "w") as f:
        f.write(f"""load_module {module};
{user}
worker_processes 1;
pid logs/nginx.pid;
error_log logs/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path tmp/body;
    proxy_temp_path tmp/proxy;
    fastcgi_temp_path tmp/fastcgi;
    uwsgi_temp_path tmp/uwsgi;
    scgi_temp_path tmp/scgi;
    client_max_body_size 16m;
    clef_model clef {os.path.abspath(gguf)} threads={threads} precision={prec};
    clef_engine zone=clef:64m max_batch_tokens=65536 max_queue=4096 timeout=600s;
    server {{
        listen 127.0.0.1:{port};
        location = /v1/systemone {{ clef_systemone; }}
        location = /v1/models {{ clef_models; }}
    }}
}}
""")
    p = subprocess.Popen([nginx, "-p", prefix + "/", "-c", "conf/nginx.conf",
                          "-g", "daemon off;"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    wait_ready(p, port, "/v1/models", os.path.join(prefix, "logs/error.log"), "nginx")
    post(port, body(1))                  # the engine has the model loaded
    return p, port, prefix


def stop_nginx(s):
    p, port, prefix = s
    p.terminate()
    p.wait()
    shutil.rmtree(prefix, ignore_errors=True)


def measure(port, b, tokens, n_clients):
    """n requests of body b from n_clients threads at once: input tokens/s
    and requests/s over the wall time"""
    n = max(n_clients, budget // tokens // n_clients * n_clients)
    errors = []

    def client(k):
        try:
            for _ in range(k):
                post(port, b)
        except Exception as e:          # noqa: BLE001
            errors.append(e)

    ts = [threading.Thread(target=client, args=(n // n_clients,)) for _ in range(n_clients)]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    wall = time.perf_counter() - t0
    if errors:
        sys.exit(f"a request failed: {errors[0]}")
    return n * tokens / wall, n / wall


bodies = {t: body_of_length(clef, model, t) for t in lengths}
samples = [body(w) for w in (1, 40, 300)]
longest = max(lengths)
table = []
for typ in types:
    gguf = f"{model}.{typ}.gguf"
    mine = [precision] + (["fp32"] if exact and precision != "fp32" else [])
    ours = {}
    llamas = {}
    try:
        for prec in mine:
            ours[prec] = start_nginx(gguf, prec)
        for c in clients:
            llamas[c] = start_llama(server, gguf, threads, longest, "0", parallel=c,
                                    log=f"{gguf}.http.p{c}.server.log")
        worst = worst_difference([post(ours[precision][1], b) for b in samples],
                                 [post(llamas[clients[0]][1], b) for b in samples])
        print(f"# {typ}: agreement, ngx_clef {precision} vs llama-server: max "
              f"|probability| diff {worst:.2g} over {len(samples)} requests "
              f"(both rounded to 4 decimals)", flush=True)
        for tokens in lengths:
            for c in clients:
                res = {}
                lport = llamas[c][1]
                post(lport, bodies[tokens])
                for prec in mine:
                    post(ours[prec][1], bodies[tokens])
                for r in range(rounds):
                    order = [("llama", lport)] + [(p, ours[p][1]) for p in mine]
                    if r % 2 == 0:
                        order.reverse()
                    for who, port in order:
                        tps, rps = measure(port, bodies[tokens], tokens, c)
                        res.setdefault(who, []).append(tps)
                        print(f"# {typ} {tokens} tokens x {c} clients round {r + 1}: "
                              f"{'llama-server' if who == 'llama' else 'ngx_clef ' + who} "
                              f"{tps:,.0f} tokens/s ({rps:.2f} req/s)", flush=True)
                med = {k: statistics.median(v) for k, v in res.items()}
                table.append((typ, tokens, c, med))
    finally:
        for s in ours.values():
            stop_nginx(s)
        for p, port in llamas.values():
            p.terminate()
            p.wait()

print(f"# {model}, {threads} threads, HTTP, input tokens/s, median of {rounds} rounds")
head = ["file", "tokens", "clients", f"ngx_clef {precision}", "llama-server", "ratio"]
if exact:
    head += ["ngx_clef fp32", "fp32/q8"]
print("| " + " | ".join(head) + " |")
print("|---" * len(head) + "|")
for typ, tokens, c, med in table:
    row = [typ, str(tokens), str(c), f"{med[precision]:,.0f}", f"{med['llama']:,.0f}",
           f"{med[precision] / med['llama']:.2f}"]
    if exact:
        row += [f"{med['fp32']:,.0f}", f"{med['fp32'] / med[precision]:.2f}"]
    print("| " + " | ".join(row) + " |")
EOF
