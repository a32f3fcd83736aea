#!/bin/sh
# Fills .devcarry/ (git-ignored) with what t/cuda/device-check.sh needs on
# the GPU machine, where no package registry can be reached:
#   .devcarry/debs/    Debian packages of libclef's build dependencies
#                      (jansson, PCRE2, utf8proc, OpenBLAS; headers + libs)
#   .devcarry/shared/  the layout t/cuda/device-check.sh and the CUDA tests
#                      read through CLEF_SHARED (tokenizers/qwen3): a copy
#                      of the repository's t/fixtures/tokenizer/qwen3
# Run once on this machine, from the checkout the device tool sends:
#   t/cuda/device-deps.sh
# then run the check with carry [".devcarry"].
set -eu

root=$(git rev-parse --show-toplevel)
cd "$root"
exclude=$(git rev-parse --git-path info/exclude)

mkdir -p "$(dirname "$exclude")"
grep -qx '/.devcarry/' "$exclude" 2>/dev/null || echo '/.devcarry/' >> "$exclude"

rm -rf .devcarry
mkdir -p .devcarry/debs .devcarry/shared/tokenizers/qwen3
cp t/fixtures/tokenizer/qwen3/tokenizer.json \
   t/fixtures/tokenizer/qwen3/tokenizer_config.json .devcarry/shared/tokenizers/qwen3/
cd .devcarry/debs
apt-get download libjansson-dev libjansson4 libpcre2-dev libpcre2-8-0 \
    libpcre2-16-0 libpcre2-32-0 libpcre2-posix3 libutf8proc-dev libutf8proc2 \
    libopenblas-dev libopenblas-pthread-dev libopenblas0-pthread libgfortran5 \
    libquadmath0
cd "$root"
du -sh .devcarry
