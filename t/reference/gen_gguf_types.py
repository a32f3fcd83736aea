#!/usr/bin/env python3
"""Clef GGUF files of the types ngx_clef reads only (t/unit/test_gguf_types.c).

From t/fixtures/gguf/gg1.f32.gguf (llama.cpp's converter's file of the gg1
checkpoint, gen_gguf_fixtures.py), with llama.cpp's own llama-quantize:

1. build/gguf-types/gg1.imatrix.gguf: an importance matrix in the GGUF
   format llama-imatrix writes (general.type "imatrix", imatrix.datasets,
   imatrix.chunk_count, imatrix.chunk_size; per weight NAME.in_sum2 and
   NAME.counts, F32), written here: llama.cpp's graph refuses gg1 (keys of
   32, values of 64), so llama-imatrix cannot run it.  Each input column's
   importance is the mean square of that column of the weight times a
   seeded factor in [0.5, 2]: not uniform, so the searches it steers are
   exercised, and deterministic.
2. t/fixtures/gguf/types/gg1.<type>.gguf: llama-quantize --imatrix of the
   F32 file to each file type it offers whose tensors ngx_clef reads only
   (Q2_K, Q3_K_M, IQ4_NL, IQ4_XS, IQ3_XXS, IQ3_S, IQ2_XXS, IQ2_XS, IQ2_S,
   IQ1_S, IQ1_M, TQ1_0, TQ2_0).  gg1's rows of 64 values are not whole
   256-value blocks: llama-quantize gives those tensors its fallbacks
   (IQ4_NL, Q4_0, Q5_0, Q8_0), and the 256-value types go to the rows of
   256 (ffn_down, attn_output, ssm_out).
3. gg1.ud-mix.gguf: a dynamic mix as unsloth's UD files are made, Q4_K_M
   with --tensor-type overrides putting IQ4_XS, IQ2_S, Q3_K and Q2_K
   beside the fallbacks' IQ4_NL, Q5_0 and Q8_0 tensors; gg1.q1-mix.gguf
   the same with Q1_0 and Q2_0 on the rows of 256 (llama-quantize has no
   fallback for them: gg1 cannot be made Q1_0 or Q2_0 whole).
4. t/fixtures/gguf/types/manifest.json: {"files": {FILE: [{"name", "type",
   "ne", "raw_fnv", "f32_fnv"}...]}}: gguf-py's reading of every tensor,
   the FNV-1a 64 of its bytes and of gguf-py's dequantize of them (ggml's
   for Q1_0 and Q2_0, which gguf-py does not dequantize: ggml_ref.py).

Run from the repository root with llama-quantize built (t/reference/
README.md, "GGUF: llama.cpp's tools") and gguf-py, numpy installed:
  build/gguf-venv/bin/python t/reference/gen_gguf_types.py
"""
import json
import os
import subprocess
import sys

import numpy as np
from gguf import GGUFReader, GGUFWriter, GGMLQuantizationType

from ggml_ref import dequantize_any

SRC = "t/fixtures/gguf/gg1.f32.gguf"
OUT = "t/fixtures/gguf/types"
WORK = "build/gguf-types"
QUANTIZE = os.environ.get("QUANTIZE", "build/llama/qbuild/bin/llama-quantize")

TYPES = ["Q2_K", "Q3_K_M", "IQ4_NL", "IQ4_XS", "IQ3_XXS", "IQ3_S", "IQ2_XXS",
         "IQ2_XS", "IQ2_S", "IQ1_S", "IQ1_M", "TQ1_0", "TQ2_0"]
# regular expressions on tensor names, as unsloth's recipes give them: the
# rows of 256 (the only ones the 256-value types take in gg1) each a type
MIX = [r"blk\.0\.ffn_down=iq4_xs", r"blk\.1\.ffn_down=iq2_s",
       "attn_output=q3_k", "ssm_out=q2_k", "ffn_up=q8_0", "attn_qkv=q6_k"]
# Q1_0 and Q2_0 have no fallback for rows of 32 or 64 values (llama-quantize
# refuses gg1 in them): the rows of 256 only
BINARY = [r"^blk\.\d+\.ffn_down=q1_0", r"^blk\.\d+\.attn_output=q2_0",
          r"^blk\.\d+\.ssm_out=q2_0"]


def fnv(b):
    h = 0xcbf29ce484222325
    for x in bytes(b):
        h = ((h ^ x) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def write_imatrix(path):
    r = GGUFReader(SRC)
    rng = np.random.default_rng(31)
    w = GGUFWriter(path, arch="imatrix")
    # GGUFWriter writes general.architecture; llama.cpp's loader reads
    # general.type and the imatrix.* keys
    w.add_type("imatrix")
    w.add_array("imatrix.datasets", ["t/reference/gen_gguf_types.py"])
    w.add_uint32("imatrix.chunk_count", 1)
    w.add_uint32("imatrix.chunk_size", 512)
    for t in r.tensors:
        if len(t.shape) != 2 or not t.name.endswith(".weight"):
            continue
        v = np.asarray(t.data, dtype=np.float32).reshape(-1, int(t.shape[0]))
        imp = (v * v).mean(axis=0) * rng.uniform(0.5, 2.0, v.shape[1])
        w.add_tensor(t.name + ".in_sum2",
                     imp.astype(np.float32).reshape(1, -1))
        w.add_tensor(t.name + ".counts", np.ones((1, 1), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def quantize(imatrix, out, ftype, extra=()):
    cmd = [QUANTIZE, "--imatrix", imatrix, *extra, SRC, out, ftype]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stdout[-2000:]}{p.stderr[-2000:]}")


def manifest_of(path):
    r = GGUFReader(path)
    out = []
    for t in r.tensors:
        qt = GGMLQuantizationType(t.tensor_type)
        raw = np.asarray(t.data)
        deq = dequantize_any(raw, qt).astype("<f4")
        out.append({"name": t.name, "type": qt.name,
                    "ne": [int(x) for x in t.shape],
                    "raw_fnv": fnv(raw.tobytes()),
                    "f32_fnv": fnv(deq.tobytes())})
    return out


def main():
    os.makedirs(OUT, exist_ok=True)
    os.makedirs(WORK, exist_ok=True)
    imatrix = f"{WORK}/gg1.imatrix.gguf"
    write_imatrix(imatrix)
    files = {}
    for ftype in TYPES:
        name = f"gg1.{ftype.lower()}.gguf"
        quantize(imatrix, f"{OUT}/{name}", ftype)
        files[name] = manifest_of(f"{OUT}/{name}")
    extra = [x for m in MIX for x in ("--tensor-type", m)]
    quantize(imatrix, f"{OUT}/gg1.ud-mix.gguf", "Q4_K_M", extra)
    files["gg1.ud-mix.gguf"] = manifest_of(f"{OUT}/gg1.ud-mix.gguf")
    extra = [x for m in BINARY for x in ("--tensor-type", m)]
    quantize(imatrix, f"{OUT}/gg1.q1-mix.gguf", "Q4_K_M", extra)
    files["gg1.q1-mix.gguf"] = manifest_of(f"{OUT}/gg1.q1-mix.gguf")
    with open(f"{OUT}/manifest.json", "w") as f:
        json.dump({"files": files}, f, indent=1)
        f.write("\n")
    for name, ts in files.items():
        kinds = sorted({t["type"] for t in ts})
        print(f"{name}: {os.path.getsize(f'{OUT}/{name}')} bytes, {', '.join(kinds)}")


if __name__ == "__main__":
    main()
