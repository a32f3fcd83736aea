#!/usr/bin/env python3
"""gguf-py reads what `clef mkmodel --gguf TYPE` writes as it reads the
files llama.cpp's converter and llama-quantize made from the same release.

For each TYPE of t/fixtures/gguf (the gg1 checkpoint, seed 20), runs
`build/clef mkmodel --config t/fixtures/models/gg1.json --tokenizer
t/fixtures/tokenizer/qwen3-trim --seed 20 --gguf TYPE` (the mmproj with
f16), reads the result with gguf-py's GGUFReader and checks against
t/fixtures/gguf/manifest.json (gguf-py's dump of llama.cpp's files) and the
committed files themselves:
  - every tensor of llama.cpp's file, none more: type, shape, and for
    F32/F16/BF16 files (and F32 tensors of any file) the FNV-1a 64 of its
    bytes; gguf-py's dequantization of every tensor against ours is
    t/unit/test_gguf_clef.c's check of the same manifest;
  - every metadata key of llama.cpp's file with its type and value, but
    general.size_label (llama.cpp's rounding of the parameter count) and
    the System One chat template the converter copies from its own source.
Prints one line per check and "N passed, N failed"; exits non-zero on a
failure.  Needs gguf-py (build/llama/venv, see t/bench/cpu-vs-llama.sh):

  make build/clef
  build/llama/venv/bin/python t/reference/check_mkmodel_gguf.py
"""
import json
import os
import subprocess
import sys
import tempfile

from gguf import GGUFReader

FIX = "t/fixtures/gguf"
TYPES = ["f32", "f16", "bf16", "q8_0", "q6_k", "q5_k_m", "q4_k_m"]
SKIP = {"general.size_label", "tokenizer.chat_template.systemone",
        "tokenizer.chat_templates"}


def fnv(b):
    h = 0xcbf29ce484222325
    for x in bytes(b):
        h = ((h ^ x) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def fields(path):
    r = GGUFReader(path)
    out = {}
    for k, f in r.fields.items():
        if k.startswith("GGUF.") or k in SKIP:
            continue
        v = f.contents()
        out[k] = ([t.name for t in f.types], v)
    return r, out


def main():
    man = json.load(open(os.path.join(FIX, "manifest.json")))
    passed = failed = 0

    def check(ok, what):
        nonlocal passed, failed
        print(("ok     " if ok else "FAILED ") + what)
        passed += ok
        failed += not ok

    with tempfile.TemporaryDirectory() as tmp:
        for t in TYPES:
            out = os.path.join(tmp, "gg1.%s.gguf" % t)
            cmd = ["build/clef", "mkmodel", "--config",
                   "t/fixtures/models/gg1.json", "--tokenizer",
                   "t/fixtures/tokenizer/qwen3-trim", "--seed", "20",
                   "--gguf", t, "--out", out]
            pairs = [(out, "gg1.%s.gguf" % t)]
            if t == "f16":
                mm = os.path.join(tmp, "gg1.mmproj.gguf")
                cmd += ["--mmproj", mm]
                pairs.append((mm, "gg1.mmproj.gguf"))
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            for mine, theirs in pairs:
                r, meta = fields(mine)
                _, ref = fields(os.path.join(FIX, theirs))
                for k in sorted(ref):
                    check(meta.get(k) == ref[k], "%s %s: %s" % (t, theirs, k))
                check(set(meta) == set(ref),
                      "%s %s: no other keys (%s)" % (t, theirs,
                                                    set(meta) ^ set(ref)))
                got = {x.name: x for x in r.tensors}
                want = man[theirs]
                check(set(got) == {e["name"] for e in want},
                      "%s %s: the same %d tensor names" % (t, theirs,
                                                           len(want)))
                for e in want:
                    x = got.get(e["name"])
                    ok = (x is not None and x.tensor_type.name == e["type"]
                          and [int(n) for n in x.shape] == e["ne"])
                    if ok and (t in ("f32", "f16", "bf16")
                               or e["type"] == "F32"):
                        ok = fnv(x.data.tobytes()) == e["raw_fnv"]
                    check(ok, "%s %s: %s %s %s" % (t, theirs, e["name"],
                                                   e["type"], e["ne"]))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
