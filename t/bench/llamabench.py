"""What the benchmarks against llama.cpp (t/bench/cpu-vs-llama.sh,
t/bench/http-vs-llama.sh) share: requests of an exact number of input
tokens, the same for both engines, and llama-server started, waited for
and asked."""
import json
import socket
import subprocess
import sys
import time
import urllib.request

QUESTIONS = {
    "urgent": {"type": "noul", "instructions": "Does this convey urgency?"},
    "dept": {"type": "choice", "instructions": "Which team?",
             "criteria": {"billing": None, "technical": "Bugs, outages", "sales": None}},
}


def body(words):
    state = "Help! My payouts have been failing for days." + " hello" * words
    return {"model": "clef", "state": state, "questions": QUESTIONS}


def n_tokens(clef, model, words):
    out = subprocess.run([clef, "encode", model, "--max-length", "65536"],
                         input=json.dumps(body(words)) + "\n", text=True,
                         capture_output=True, check=True).stdout
    return len(json.loads(out.splitlines()[0])["input_ids"])


def body_of_length(clef, model, tokens):
    """a request of exactly `tokens` input tokens (one " hello" is one token)"""
    base = n_tokens(clef, model, 1)
    words = max(1, tokens - base + 1)
    while n_tokens(clef, model, words) > tokens and words > 1:
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
    with urllib.request.urlopen(req, timeout=900) as r:
        return json.loads(r.read())


def probs(answer):
    if "probabilities" in answer:
        return answer["probabilities"]
    return {"true": answer["noul"]}


def worst_difference(ours, theirs):
    """the largest |probability| difference over the answers of two engines
    to the same requests"""
    worst = 0.0
    for a, b in zip(ours, theirs):
        for q, ans in a["answers"].items():
            pa, pb = probs(ans), probs(b["answers"][q])
            worst = max(worst, max(abs(pa[k] - pb[k]) for k in pa))
    return worst


def wait_ready(p, port, path, log, what):
    for _ in range(600):
        if p.poll() is not None:
            sys.exit(f"{what} exited ({p.returncode}); see {log}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    p.kill()
    sys.exit(f"{what} did not become ready in 300 s; see {log}")


def start_llama(server, gguf, threads, longest, poll, parallel=1, log=None):
    """llama-server with `threads` threads, a context and ubatch that hold
    the longest record whole (a decision record must be one ubatch), its
    weights read into memory, at --poll `poll`; its log beside the file
    unless `log` says where"""
    port = free_port()
    ctx = (longest + 1024) * parallel
    log = log or f"{gguf}.poll{poll}.server.log"
    p = subprocess.Popen([server, "-m", gguf, "-t", str(threads), "-c", str(ctx),
                          "-b", str(longest + 1024), "-ub", str(longest + 1024),
                          "--parallel", str(parallel), "--load-mode", "none",
                          "--poll", poll, "--host", "127.0.0.1", "--port", str(port)],
                         stdout=subprocess.DEVNULL, stderr=open(log, "w"))
    wait_ready(p, port, "/health", log, "llama-server")
    return p, port
