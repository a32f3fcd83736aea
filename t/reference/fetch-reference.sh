#!/usr/bin/env bash
# Sets up the reference environment used by the fixture generators:
#   build/refenv/                 a venv with torch, torchvision, transformers,
#                                 tokenizers, safetensors, pillow (no torchcodec:
#                                 the image fixtures assume torchvision's decoders)
#   build/reference/unsloth/_vendor/clef/joint_schema_model.py
#                                 Cloudflare's reference, as vendored (byte-identical
#                                 to upstream) in the unsloth wheel; imported by path.
# Nothing from here is committed.  Idempotent.
#
# `fetch-reference.sh omni` sets up build/refenv-omni (transformers 5.10.2,
# PyAV) and build/reference/ollajev/_vendor/clef_omni/joint_schema_model.py,
# Clef Omni's reference.
#
# `fetch-reference.sh video` sets up build/refenv-video instead: the same
# packages plus torchcodec, which transformers decodes videos with (on the
# system's FFmpeg: auto/deps installs it), kept apart because with
# torchcodec present transformers would also load images through it.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "${1:-}" = video ]; then
    REFENV=${REFENV:-build/refenv-video}
    if [ ! -x "$REFENV/bin/python" ]; then
        python3 -m venv "$REFENV"
        "$REFENV/bin/pip" install -q --upgrade pip
    fi
    "$REFENV/bin/python" -c 'import torch, torchvision, torchcodec, transformers, numpy' 2>/dev/null \
        || "$REFENV/bin/pip" install -q torch torchvision torchcodec transformers numpy pillow
    command -v ffmpeg >/dev/null || { echo "ffmpeg missing: run auto/deps" >&2; exit 1; }
    echo "reference ready: $REFENV"
    exit 0
fi
if [ "${1:-}" = omni ]; then
    # Clef Omni's reference runs on transformers 5.10.2 (the version
    # Cloudflare names; newer releases fail on video with sound) and PyAV;
    # ollajev vendors Cloudflare's Omni joint_schema_model.py unchanged
    # (its wheel asks for Python 3.12 but the file itself needs no more
    # than what the venv has, so it is downloaded for 3.12 and unpacked).
    REFENV=${REFENV:-build/refenv-omni}
    OREF=build/reference/ollajev/_vendor/clef_omni/joint_schema_model.py
    OSHA=21d05ebb8cbea26a26af65eca3d16cf4b69bf80a320e2d5b203e86f0d632a670
    if [ ! -x "$REFENV/bin/python" ]; then
        python3 -m venv "$REFENV"
        "$REFENV/bin/pip" install -q --upgrade pip
    fi
    "$REFENV/bin/python" -c 'import torch, torchvision, av, transformers, safetensors, numpy, PIL; assert transformers.__version__ == "5.10.2"' 2>/dev/null \
        || "$REFENV/bin/pip" install -q torch torchvision av 'transformers==5.10.2' safetensors numpy pillow gguf
    if [ ! -f "$OREF" ]; then
        tmp=$(mktemp -d)
        "$REFENV/bin/pip" download -q --no-deps 'ollajev==0.4.0' \
            --python-version 3.12 --only-binary=:all: -d "$tmp"
        mkdir -p build/reference
        (cd build/reference && unzip -o -q "$tmp"/ollajev-*.whl 'ollajev/_vendor/clef_omni/*')
        rm -rf "$tmp"
    fi
    echo "$OSHA  $OREF" | sha256sum -c --quiet
    echo "reference ready: $REFENV, $OREF"
    exit 0
fi
REFENV=${REFENV:-build/refenv}
REF=build/reference/unsloth/_vendor/clef/joint_schema_model.py
SHA=0e304cf7c6500e8bb59bef7e2afd2c6373f82596dfb3b57d1aa93c175e2dc3a3

if [ ! -x "$REFENV/bin/python" ]; then
    python3 -m venv "$REFENV"
    "$REFENV/bin/pip" install -q --upgrade pip
fi
"$REFENV/bin/python" -c 'import torch, torchvision, transformers, tokenizers, safetensors, numpy, PIL' 2>/dev/null \
    || "$REFENV/bin/pip" install -q torch torchvision transformers tokenizers safetensors numpy pillow

if [ ! -f "$REF" ]; then
    tmp=$(mktemp -d)
    "$REFENV/bin/pip" download -q --no-deps unsloth -d "$tmp"
    mkdir -p build/reference
    (cd build/reference && unzip -o -q "$tmp"/unsloth-*.whl 'unsloth/_vendor/clef/*')
    rm -rf "$tmp"
fi
echo "$SHA  $REF" | sha256sum -c --quiet
echo "reference ready: $REFENV, $REF"
