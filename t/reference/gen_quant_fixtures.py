#!/usr/bin/env python3
"""Fixtures for the GGML block types (engine/model/quant*.c).

For each type ngx_clef reads, random blocks and what gguf-py's
dequantizer (gguf/quants.py) makes of them:

  t/fixtures/quant/NAME.bin    the blocks, as a GGUF tensor stores them
  t/fixtures/quant/NAME.f32    gguf.quants.dequantize(blocks), f32
                               little-endian: the exact bits to reproduce
  t/fixtures/quant/manifest.json
      {"types": [{"name", "id", "block", "bytes", "values"}...],
       "layouts": {"NAME": [id, block, bytes], ...}}
      the types above, and gguf-py's GGML_QUANT_SIZES for every type (the
      layouts ngx_clef checks files against)

The blocks are uniformly random bytes, except that each fp16 scale or
minimum is a random finite fp16 (subnormals, zeros and +-65504 included):
a NaN's bits after arithmetic are the machine's, not gguf-py's.  F16 and
BF16 get every class of value (NaN payloads too: widening keeps them).
Deterministic (seeded); small (about 200 KB).

Run from the repository root, with gguf-py installed (t/bench/cpu-vs-llama.sh
sets up build/llama/venv with it):
  build/llama/venv/bin/python t/reference/gen_quant_fixtures.py
"""
import json
import os

import numpy as np
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType as T

from ggml_ref import dequantize_any

OUT = "t/fixtures/quant"

# type -> (number of blocks, byte offsets of its fp16 fields)
TYPES = {
    T.F32: (2048, []),
    T.F16: (4096, None),
    T.BF16: (4096, None),
    T.Q8_0: (96, [0]),
    T.Q4_0: (96, [0]),
    T.Q4_1: (96, [0, 2]),
    T.Q5_0: (96, [0]),
    T.Q5_1: (96, [0, 2]),
    T.Q4_K: (24, [0, 2]),
    T.Q5_K: (24, [0, 2]),
    T.Q6_K: (24, [208]),
    # read only (llama-quantize's smaller files), after the others so that
    # the seeded draws of the types above are unchanged
    T.Q2_K: (24, [80, 82]),
    T.Q3_K: (24, [108]),
    T.IQ4_NL: (96, [0]),
    T.IQ4_XS: (24, [0]),
    T.IQ3_XXS: (24, [0]),
    T.IQ3_S: (24, [0]),
    T.IQ2_XXS: (24, [0]),
    T.IQ2_XS: (24, [0]),
    T.IQ2_S: (24, [0]),
    T.IQ1_S: (24, [0]),
    T.IQ1_M: (24, "iq1m"),
    T.TQ1_0: (24, [52]),
    T.TQ2_0: (24, [64]),
    T.MXFP4: (96, []),      # an e8m0 exponent: every byte is a finite scale
    T.NVFP4: (48, []),      # four e4m3: likewise
    # gguf-py has no dequantizer for these two: ggml's own (ggml_dequant)
    T.Q1_0: (48, [0]),
    T.Q2_0: (96, [0]),
}

def finite_f16(rng, n):
    """n random fp16 bit patterns, none of them inf or NaN"""
    h = rng.integers(0, 1 << 16, size=n, dtype=np.uint32)
    h = np.where(((h >> 10) & 0x1F) == 0x1F, h & ~np.uint32(0x4000), h)
    # the edges: zeros, the largest, the smallest subnormal
    edges = np.array([0x0000, 0x8000, 0x7BFF, 0xFBFF, 0x0001, 0x8001, 0x0400],
                     dtype=np.uint32)
    h[:min(n, len(edges))] = edges[:min(n, len(edges))]
    return h.astype(np.uint16)


def blocks_for(rng, qtype, n_blocks, f16_fields):
    block, size = GGML_QUANT_SIZES[qtype]
    if qtype == T.F32:
        v = rng.standard_normal(n_blocks).astype(np.float32)
        v[:6] = [0.0, -0.0, np.inf, -np.inf, 3.4e38, 1e-45]
        return v.view(np.uint8)
    if qtype in (T.F16, T.BF16):
        # every class: random patterns, then zeros, infinities, NaNs with
        # payloads, subnormals
        h = rng.integers(0, 1 << 16, size=n_blocks, dtype=np.uint32)
        if qtype == T.F16:
            special = [0x0000, 0x8000, 0x7C00, 0xFC00, 0x7C01, 0x7E00, 0xFE01,
                       0x7FFF, 0x0001, 0x83FF, 0x7BFF, 0x0400]
        else:
            special = [0x0000, 0x8000, 0x7F80, 0xFF80, 0x7F81, 0x7FC0, 0xFFC1,
                       0x7FFF, 0x0001, 0x807F, 0x7F7F, 0x0080]
        h[:len(special)] = special
        return h.astype(np.uint16).view(np.uint8)
    raw = rng.integers(0, 256, size=(n_blocks, size), dtype=np.uint8)
    if f16_fields == "iq1m":
        # IQ1_M's f16 d is the top nibbles of its four u16 scales (bytes 49,
        # 51, 53, 55): a finite one, nibble k in u16 k
        h = finite_f16(rng, n_blocks)
        for k in range(4):
            nib = ((h >> (4 * k)) & 0xF).astype(np.uint8)
            raw[:, 49 + 2 * k] = (raw[:, 49 + 2 * k] & 0x0F) | (nib << 4)
        return raw.reshape(-1)
    for off in f16_fields:
        raw[:, off:off + 2] = finite_f16(rng, n_blocks).view(np.uint8).reshape(n_blocks, 2)
    return raw.reshape(-1)


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(20)
    types = []
    for qtype, (n_blocks, fields) in TYPES.items():
        block, size = GGML_QUANT_SIZES[qtype]
        raw = blocks_for(rng, qtype, n_blocks, fields or [])
        want = dequantize_any(raw.reshape(1, -1), qtype)
        assert want.size == n_blocks * block
        with open(f"{OUT}/{qtype.name}.bin", "wb") as f:
            f.write(raw.tobytes())
        with open(f"{OUT}/{qtype.name}.f32", "wb") as f:
            f.write(want.astype("<f4").tobytes())
        types.append({"name": qtype.name, "id": int(qtype), "block": block,
                      "bytes": size, "values": int(want.size)})
    layouts = {t.name: [int(t), b, s] for t, (b, s) in GGML_QUANT_SIZES.items()}
    with open(f"{OUT}/manifest.json", "w") as f:
        json.dump({"types": types, "layouts": layouts}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
