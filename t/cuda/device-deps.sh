#!/bin/sh
# Fills .devcarry/ with what t/cuda/device-check.sh falls back to on the GPU
# machine, where no package registry can be reached:
#   .devcarry/debs/    Debian 12 packages: libclef's build dependencies
#                      (jansson, PCRE2, utf8proc, OpenBLAS, the image
#                      codecs; headers + libs; oneDNN's headers only, since
#                      the CPU backend dlopen()s the library),
#                      used when the machine's pkg-config does not find its
#                      own, and make, used when the machine has none
# About 15 MB.  .devcarry/.gitignore ignores the folder from inside, so
# git stays clean and no shared git metadata is touched.  Run once here,
# from the checkout the device tool sends:
#   t/cuda/device-deps.sh
# then the device check with carry [".devcarry"] (see device-check.sh).
set -eu

root=$(git rev-parse --show-toplevel)
cd "$root"
rm -rf .devcarry
mkdir -p .devcarry/debs
echo '*' > .devcarry/.gitignore
cd .devcarry/debs
apt-get download libjansson-dev libjansson4 libpcre2-dev libpcre2-8-0 \
    libpcre2-16-0 libpcre2-32-0 libpcre2-posix3 libutf8proc-dev libutf8proc2 \
    libopenblas-dev libopenblas-pthread-dev libopenblas0-pthread libgfortran5 \
    libquadmath0 libpng-dev libpng16-16 libjpeg62-turbo-dev libjpeg62-turbo \
    libwebp-dev libwebp7 libwebpdemux2 libwebpmux3 \
    zlib1g-dev libdnnl-dev make
cd "$root"
du -sh .devcarry
