#!/usr/bin/env bash
# Log-mel features against the reference, in one run on this machine:
#
#     t/bench/audio-features.sh
#
# The features step alone (samples already decoded to 16 kHz mono), seconds
# of audio featurised per second of CPU: `clef audio --bench` (the engine's
# audio_features.c: one thread, double precision, a mixed-radix FFT)
# against transformers 5.10.2's WhisperFeatureExtractor called as
# Qwen3OmniMoeProcessor calls it (padding "longest", the attention mask,
# its torch path: torch.stft in float32), on the same samples (PyAV's
# decode of the same files, as the reference decodes them), torch with one
# thread and with its default threads.  Records: one clip of 10 s, one of
# 5 minutes, and four clips padded together (3, 10, 30, 60 s), as WAV files
# made here under build/bench/ (speech-like signals; a WAV decodes to the
# same samples on both sides, so only the features are compared).  Each
# side runs BENCH_SECONDS (default 3) per record, ROUNDS (2) rounds; the
# best round of each is compared.  REFENV: build/refenv-omni.
set -euo pipefail
cd "$(dirname "$0")/../.."

SECONDS_EACH=${BENCH_SECONDS:-3}
ROUNDS=${ROUNDS:-2}
PY=${REFENV:-build/refenv-omni}/bin/python
B=build/bench
mkdir -p $B
for s in 3 10 30 60 300; do
    f=$B/audio_speech_${s}s.wav
    [ -f "$f" ] || ffmpeg -v error -y -nostdin -f lavfi \
        -i "sine=frequency=180:sample_rate=44100:duration=$s,volume=0.3,tremolo=f=4:d=0.8" \
        -f lavfi -i "anoisesrc=color=pink:sample_rate=44100:duration=$s:amplitude=0.02" \
        -filter_complex amix=inputs=2 -ac 1 -ar 16000 -c:a pcm_s16le "$f"
done
RECORDS=("$B/audio_speech_10s.wav" "$B/audio_speech_300s.wav"
         "$B/audio_speech_3s.wav $B/audio_speech_10s.wav $B/audio_speech_30s.wav $B/audio_speech_60s.wav")

[ -x build/clef ] || make -j"$(nproc)" build/clef >/dev/null

ref_bench() {
    "$PY" - "$SECONDS_EACH" "$1" "$@" <<'PY'
import json, sys, time, warnings
warnings.filterwarnings("ignore")
import torch
sys.path.insert(0, "t/reference")
from gen_audio_fixtures import AUDIO_KWARGS, PREPROCESSOR, decode_audio
from transformers import WhisperFeatureExtractor
from transformers.utils import logging
logging.set_verbosity_error()
secs, threads = float(sys.argv[1]), int(sys.argv[2])
if threads > 0:
    torch.set_num_threads(threads)
fe = WhisperFeatureExtractor(**PREPROCESSOR)
clips = [decode_audio(open(p, "rb").read()) for p in sys.argv[4].split()]
n, t0 = 0, time.perf_counter()
while True:
    fe(clips, **AUDIO_KWARGS, return_tensors="pt")
    n += 1
    t = time.perf_counter() - t0
    if t >= secs:
        break
print(json.dumps({"audio_seconds": sum(c.size for c in clips) / 16000,
                  "seconds": t / n}))
PY
}

best() {    # the smaller of $1 and $2 (empty $1: $2)
    python3 -c "import sys; a, b = sys.argv[1:]; print(b if not a else min(float(a), float(b)))" "${1:-}" "$2"
}

printf '%-44s %10s %12s %12s %12s %8s %8s\n' record audio_s ours_s ref1_s \
    refN_s ratio1 ratioN
for rec in "${RECORDS[@]}"; do
    o= r1= rn= secs=
    for r in $(seq "$ROUNDS"); do
        # shellcheck disable=SC2086
        line=$(build/clef audio --bench "$SECONDS_EACH" $rec)
        secs=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["audio_seconds"])' "$line")
        o=$(best "$o" "$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["seconds"])' "$line")")
        r1=$(best "$r1" "$(ref_bench 1 "$rec" | python3 -c 'import json,sys; print(json.load(sys.stdin)["seconds"])')")
        rn=$(best "$rn" "$(ref_bench 0 "$rec" | python3 -c 'import json,sys; print(json.load(sys.stdin)["seconds"])')")
    done
    name=$(echo "$rec" | sed "s|$B/audio_speech_||g; s|\.wav||g")
    python3 -c "
import sys
name, secs, o, r1, rn = sys.argv[1], *map(float, sys.argv[2:])
print(f'{name:<44} {secs:10.1f} {o:12.6f} {r1:12.6f} {rn:12.6f} {r1 / o:8.2f} {rn / o:8.2f}')
print(f'{\"\":<44} audio seconds per second: ours {secs / o:.0f}, reference {secs / r1:.0f} (1 thread), {secs / rn:.0f} (torch default threads)')
" "$name" "$secs" "$o" "$r1" "$rn"
done
echo "ratio = reference seconds / ours (above 1: ours faster); ours is one thread"
