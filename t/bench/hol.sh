#!/usr/bin/env bash
# Head-of-line blocking, this tree against another revision, in one run:
# the latency of a text request sent while two long videos are being
# prepared (t/bench/hol.pl), nginx with each build's module in turn,
# rounds alternating; medians of each printed with the videos' own times.
#
#     t/bench/hol.sh REV [ROUNDS]         (default ROUNDS 3)
#
# The videos: a 30-second 1920x1080 H.264 clip made once with ffmpeg's
# test source under build/bench/ (VIDEO= another file).  REV is built under
# build/bench/rev-REV/ from `git archive` (once).  A benchmark: it asserts
# nothing.
set -euo pipefail
cd "$(dirname "$0")/../.."

REV=${1:?usage: t/bench/hol.sh REV [ROUNDS]}
ROUNDS=${2:-3}
SHA=$(git rev-parse --short "$REV")
BASE=build/bench/rev-$SHA
VIDEO=${VIDEO:-build/bench/testsrc-1080p-30s.mp4}

make -j"$(nproc)" all >/dev/null
if [ ! -f "$BASE/build/ngx_http_clef_module.so" ]; then
    rm -rf "$BASE"
    mkdir -p "$BASE"
    git archive "$SHA" | tar -x -C "$BASE"
    make -C "$BASE" -j"$(nproc)" all >/dev/null
fi
if [ ! -f "$VIDEO" ]; then
    mkdir -p "$(dirname "$VIDEO")"
    ffmpeg -loglevel error -f lavfi -i testsrc2=size=1920x1080:rate=30 \
        -t 30 -c:v libx264 -preset veryfast -crf 40 -pix_fmt yuv420p "$VIDEO"
fi
inc=$(auto/test-nginx)
run() {
    CLEF_MODULE=$(pwd)/$1/ngx_http_clef_module.so CLEF_BIN=$(pwd)/$1/clef \
        perl $inc t/bench/hol.pl "$VIDEO" 1
}
: > build/bench/hol-rev.txt
: > build/bench/hol-tree.txt
for _ in $(seq "$ROUNDS"); do
    run "$BASE/build" >> build/bench/hol-rev.txt
    run build >> build/bench/hol-tree.txt
done
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
for side in rev tree; do
    f=build/bench/hol-$side.txt
    printf '%-5s text request %8.1f ms (rounds: %s); videos %s ms\n' \
        "$side" "$(cut -d' ' -f1 "$f" | median)" \
        "$(cut -d' ' -f1 "$f" | tr '\n' ' ')" \
        "$(cut -d' ' -f2,3 "$f" | tr '\n' ' ')"
done
a=$(cut -d' ' -f1 build/bench/hol-rev.txt | median)
b=$(cut -d' ' -f1 build/bench/hol-tree.txt | median)
awk -v a="$a" -v b="$b" -v rev="$SHA" 'BEGIN {
    printf "text latency: %s %.1f ms, tree %.1f ms: %.0fx lower\n", rev, a, b,
           a / b }'
