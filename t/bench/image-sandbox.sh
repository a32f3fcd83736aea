#!/usr/bin/env bash
# What the sandbox costs an image (t/bench/image-sandbox.c says how it is
# measured): the image corpus's files, records of 1 and of 4 images,
# decoded in this process and through the decode process, alternating
# rounds, best of each.
#
#     t/bench/image-sandbox.sh [ROUNDS] [SECONDS]      (default: 3, 2)
set -euo pipefail
cd "$(dirname "$0")/../.."

ROUNDS=${1:-3}
EACH=${2:-2}
make -j"$(nproc)" build/libclef.a build/clef-decoder >/dev/null
mkdir -p build/bench
LIBS=$(pkg-config --libs libpcre2-8 libutf8proc jansson openblas libpng \
       libjpeg libwebp libwebpdemux libavformat libavcodec libavfilter \
       libswscale libavutil)
cc -std=c11 -D_GNU_SOURCE -O2 -Iengine -o build/bench/image-sandbox \
    t/bench/image-sandbox.c build/libclef.a $LIBS -lm -lpthread -ldl
C=t/fixtures/images/corpus
CLEF_DECODER=$PWD/build/clef-decoder build/bench/image-sandbox "$ROUNDS" "$EACH" \
    $C/jpg_q90_444_200x150.jpg $C/jpg_progressive_300x200.jpg \
    $C/png_rgb_333x777.png $(ls $C/*.webp | head -1)
