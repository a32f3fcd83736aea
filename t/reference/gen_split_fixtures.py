#!/usr/bin/env python3
"""What llama-gguf-split writes for the gg1 Q4_K_M fixture (t/unit/test_gguf_split.c).

Runs llama.cpp's llama-gguf-split --split --split-max-tensors 40 on
t/fixtures/gguf/gg1.q4_k_m.gguf, without and with --no-tensor-first-split,
and writes t/fixtures/gguf/split.json: {"a": [FNV-1a 64 of each part, in
order], "b": [...]} ("a" the 3 parts, "b" the 4 with a metadata-only
first), the bytes `clef gguf-split` must write with the same options.

Run from the repository root with llama-gguf-split built beside
llama-quantize (t/reference/README.md):
  python3 t/reference/gen_split_fixtures.py
"""
import glob
import json
import os
import subprocess
import tempfile

SPLIT = os.environ.get("GGUF_SPLIT", "build/llama/qbuild/bin/llama-gguf-split")
SRC = "t/fixtures/gguf/gg1.q4_k_m.gguf"


def fnv(b):
    h = 0xcbf29ce484222325
    for x in b:
        h = ((h ^ x) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def main():
    out = {}
    with tempfile.TemporaryDirectory() as d:
        for key, extra in (("a", []), ("b", ["--no-tensor-first-split"])):
            subprocess.run([SPLIT, "--split", "--split-max-tensors", "40",
                            *extra, SRC, f"{d}/{key}"], check=True,
                           capture_output=True)
            parts = sorted(glob.glob(f"{d}/{key}-*-of-*.gguf"))
            out[key] = [fnv(open(p, "rb").read()) for p in parts]
    with open("t/fixtures/gguf/split.json", "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print({k: len(v) for k, v in out.items()})


if __name__ == "__main__":
    main()
