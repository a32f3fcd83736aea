#!/usr/bin/env bash
# Tokenizer throughput: build/clef tokenize --bench against Hugging Face
# tokenizers (build/refenv), one thread each, on the same mixed-text corpus
# (code, JSON, English and multilingual prose), encoded as one piece with
# the Qwen3 tokenizer.  Prints both figures, their ratio, and whether the
# ids agree.
#
#   t/bench/tokenizer.sh
#
# The tokenizer is the repository's (t/fixtures/tokenizer/qwen3).  The
# English prose is the spec/*.md of CLEF_SHARED (default ../shared) when
# there is one, else the repository's own Markdown.
set -euo pipefail
cd "$(dirname "$0")/../.."

SHARED=${CLEF_SHARED:-../shared}
TOK=t/fixtures/tokenizer/qwen3
PY=${REFENV:-build/refenv}/bin/python
OUT=build/bench
CORPUS=$OUT/tokenizer-corpus.txt

[ -f "$TOK/tokenizer.json" ] || { echo "no $TOK/tokenizer.json" >&2; exit 1; }
[ -x "$PY" ] || { echo "no $PY: run t/reference/fetch-reference.sh" >&2; exit 1; }
make -s build/clef >/dev/null 2>&1 || make -s "$PWD/build/clef"
mkdir -p "$OUT"

# The corpus: a third each of code, JSON and prose, about 2 MB, seeded.
"$PY" - "$SHARED" "$CORPUS" <<'EOF'
import glob, json, random, sys
sys.path.insert(0, "t/reference")
import gen_tokenizer_fixtures as g

shared, out = sys.argv[1], sys.argv[2]
rng = random.Random(7)
code = "".join(open(p, encoding="utf-8").read()
               for p in sorted(glob.glob("engine/**/*.[ch]", recursive=True) + glob.glob("cli/*.c")
                               + glob.glob("t/unit/*.c") + glob.glob("t/reference/*.py")))
texts = [json.loads(l)["text"] for p in sorted(glob.glob("t/fixtures/tokenizer/*/cases.jsonl"))
         for l in open(p, encoding="utf-8")]
records = []
while sum(map(len, records)) < len(code):
    records.append(json.dumps({"id": len(records), "text": rng.choice(texts),
                               "tags": rng.sample(g.WORDS, 3),
                               "score": round(rng.random(), 4),
                               "nested": {"ok": rng.random() < 0.5, "n": None}},
                              ensure_ascii=rng.random() < 0.2))
docs = sorted(glob.glob(shared + "/spec/*.md")) \
    or sorted(glob.glob("*.md") + glob.glob("*/*.md") + glob.glob("t/*/*.md"))
english = "".join(open(p, encoding="utf-8").read() for p in docs)
prose = []
while sum(map(len, prose)) < len(code) // 2:
    para = [rng.choice(g.MULTILINGUAL) for _ in range(rng.randint(3, 8))]
    prose.append(" ".join(para) + "\n\n")
mixed = code + "\n".join(records) + "\n" + english[:len(code) // 2] + "".join(prose)
text = (mixed * (1 + 2_000_000 // len(mixed)))[:2_000_000]
with open(out, "w", encoding="utf-8") as f:
    f.write(text)
EOF

CLEF=$(build/clef tokenize "$TOK" --bench "$CORPUS")
echo "clef:"
echo "$CLEF" | sed 's/^/  /'

HF=$(RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false "$PY" - "$TOK" "$CORPUS" <<'EOF'
import sys, time
from tokenizers import Tokenizer
tok = Tokenizer.from_file(sys.argv[1] + "/tokenizer.json")
text = open(sys.argv[2], encoding="utf-8").read()
n = len(text.encode("utf-8"))
t0 = time.perf_counter()
ids = tok.encode(text, add_special_tokens=False).ids
cold = time.perf_counter() - t0
passes, start = 0, time.perf_counter()
while True:
    tok.encode(text, add_special_tokens=False)
    passes += 1
    if time.perf_counter() - start >= 2.0:
        break
warm = time.perf_counter() - start
print(f"bytes {n}\nids {len(ids)}\ncold_mb_s {n / cold / 1e6:.2f}")
print(f"warm_mb_s {n * passes / warm / 1e6:.2f}\npasses {passes + 1}")
with open(sys.argv[2] + ".hf-ids", "w") as f:
    f.write(" ".join(map(str, ids)))
EOF
)
echo "HF tokenizers:"
echo "$HF" | sed 's/^/  /'

# The same ids?  clef tokenize reads the corpus as one JSON line.
"$PY" -c 'import json, sys; print(json.dumps({"text": open(sys.argv[1], encoding="utf-8").read()}))' \
    "$CORPUS" | build/clef tokenize "$TOK" \
    | "$PY" -c 'import json, sys; print(" ".join(map(str, json.loads(sys.stdin.read())["ids"])))' \
    > "$CORPUS.clef-ids"
if cmp -s <(tr -d '\n' < "$CORPUS.clef-ids") <(tr -d '\n' < "$CORPUS.hf-ids"); then
    same="identical"
else
    same="DIFFERENT"
fi

get() { echo "$1" | awk -v k="$2" '$1 == k { print $2 }'; }
awk -v cc="$(get "$CLEF" cold_mb_s)" -v cw="$(get "$CLEF" warm_mb_s)" \
    -v hc="$(get "$HF" cold_mb_s)" -v hw="$(get "$HF" warm_mb_s)" -v same="$same" \
    'BEGIN {
        printf "ratio clef/HF: cold %.1fx, warm %.1fx (one thread each); ids %s\n",
               cc / hc, cw / hw, same
    }'
[ "$same" = identical ]
