#!/usr/bin/env bash
# Peak memory of `clef decide` answering one short request, on GGUF files
# of the real shapes, at precision q8 and fp32:
#
#     t/bench/memory.sh [SHAPE:TYPE ...]
#         (default: clef-flash:iq4_xs clef:iq4_xs clef:q3_k_m)
#
# Each file is written by `clef mkmodel --shape SHAPE --gguf TYPE --sparse`
# (the tensor types llama-quantize chooses for TYPE; the matrices are
# holes, which the kernel maps as zero pages of the file like any other,
# so the figures count every weight page the forward touches), then
# answered twice by `/usr/bin/time -v clef decide FILE --precision P -t
# THREADS` on the 152-token request of t/fixtures/e2e/r2.jsonl's first
# line, and deleted (a 27B file is 12-17 GB: one at a time).  Prints, per
# file, its size, its tensor data, and per precision the peak RSS (Maximum
# resident set size) and the wall time.  A benchmark, not a test: it
# asserts nothing.  Environment: THREADS (2), PRECISIONS ("q8 fp32"),
# MEMDIR (build/bench/memory; it needs room for the largest file), KEEP=1
# keeps the files.
set -euo pipefail
cd "$(dirname "$0")/../.."

THREADS=${THREADS:-2}
PRECISIONS=${PRECISIONS:-q8 fp32}
DIR=${MEMDIR:-build/bench/memory}
[ $# -gt 0 ] || set -- clef-flash:iq4_xs clef:iq4_xs clef:q3_k_m

make -j2 build/clef >/dev/null
mkdir -p "$DIR"
# a copy: a build during a run leaves the binary being measured alone
cp build/clef "$DIR/clef"
python3 -c 'import json, sys; print(json.loads(open(sys.argv[1]).readline())["body"])' \
    t/fixtures/e2e/r2.jsonl > "$DIR/request.jsonl"

gb() {
    awk -v b="$1" 'BEGIN { printf "%.2f GB", b / 1e9 }'
}

printf '%-12s %-8s %-10s %-10s %-22s %-22s\n' model type file tensors \
    "q8: peak RSS, wall" "fp32: peak RSS, wall"
for spec in "$@"; do
    shape=${spec%%:*}
    type=${spec#*:}
    file="$DIR/$shape-$type.gguf"
    data=$("$DIR/clef" mkmodel --shape "$shape" \
               --tokenizer t/fixtures/tokenizer/qwen3 --seed 1 --gguf "$type" \
               --sparse --out "$file" \
           | sed -n 's/.* \([0-9]*\) bytes of tensor data.*/\1/p')
    size=$(stat -c %s "$file")
    row=""
    for p in $PRECISIONS; do
        /usr/bin/time -v -o "$DIR/time-$p.txt" "$DIR/clef" decide "$file" \
            --precision "$p" -t "$THREADS" < "$DIR/request.jsonl" \
            > "$DIR/answer-$p.json"
        grep -q '"answers"' "$DIR/answer-$p.json" \
            || { echo "no answer at $p:"; cat "$DIR/answer-$p.json"; exit 1; }
        kb=$(sed -n 's/.*Maximum resident set size (kbytes): //p' \
                 "$DIR/time-$p.txt")
        wall=$(sed -n 's/.*Elapsed (wall clock) time.*: //p' "$DIR/time-$p.txt")
        row="$row$(printf '%-22s ' "$(gb $((kb * 1024))), $wall")"
    done
    printf '%-12s %-8s %-10s %-10s %s\n' "$shape" "$type" "$(gb "$size")" \
        "$(gb "$data")" "$row"
    [ "${KEEP:-0}" = 1 ] || rm -f "$file"
done
