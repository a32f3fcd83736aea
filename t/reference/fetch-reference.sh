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

# venv DIR IMPORTS PACKAGE...: DIR holds a venv whose python imports
# IMPORTS (a python statement), the packages installed when it does not.
venv() {
    local dir=$1 imports=$2
    shift 2
    if [ ! -x "$dir/bin/python" ]; then
        python3 -m venv "$dir"
        "$dir/bin/pip" install -q --upgrade pip
    fi
    "$dir/bin/python" -c "$imports" 2>/dev/null \
        || "$dir/bin/pip" install -q "$@"
}

# vendored FILE PATTERN PIP-DOWNLOAD-ARGS...: FILE, unpacked under
# build/reference from the members PATTERN of the wheel pip downloads.
vendored() {
    local file=$1 pattern=$2 tmp
    shift 2
    [ -f "$file" ] && return 0
    tmp=$(mktemp -d)
    "$REFENV/bin/pip" download -q --no-deps -d "$tmp" "$@"
    mkdir -p build/reference
    (cd build/reference && unzip -o -q "$tmp"/*.whl "$pattern")
    rm -rf "$tmp"
}

if [ "${1:-}" = video ]; then
    REFENV=${REFENV:-build/refenv-video}
    venv "$REFENV" 'import torch, torchvision, torchcodec, transformers, numpy' \
        torch torchvision torchcodec transformers numpy pillow
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
    REF=build/reference/ollajev/_vendor/clef_omni/joint_schema_model.py
    SHA=21d05ebb8cbea26a26af65eca3d16cf4b69bf80a320e2d5b203e86f0d632a670
    venv "$REFENV" 'import torch, torchvision, av, transformers, accelerate, safetensors, numpy, PIL, gguf; assert transformers.__version__ == "5.10.2"' \
        torch torchvision av 'transformers==5.10.2' accelerate safetensors numpy pillow gguf
    vendored "$REF" 'ollajev/_vendor/clef_omni/*' 'ollajev==0.4.0' \
        --python-version 3.12 --only-binary=:all:
else
    REFENV=${REFENV:-build/refenv}
    REF=build/reference/unsloth/_vendor/clef/joint_schema_model.py
    SHA=0e304cf7c6500e8bb59bef7e2afd2c6373f82596dfb3b57d1aa93c175e2dc3a3
    venv "$REFENV" 'import torch, torchvision, transformers, tokenizers, safetensors, numpy, PIL' \
        torch torchvision transformers tokenizers safetensors numpy pillow
    vendored "$REF" 'unsloth/_vendor/clef/*' unsloth
fi
echo "$SHA  $REF" | sha256sum -c --quiet
echo "reference ready: $REFENV, $REF"
