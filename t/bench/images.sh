#!/usr/bin/env bash
# Images against the reference, in one run on this machine:
#
#     t/bench/images.sh [THREADS]          (default: all cores)
#
#  1. decode + preprocess, images/s: `clef image --bench` (libpng,
#     libjpeg-turbo, libwebp; smart_resize and the uint8 antialiased
#     bicubic; one thread, as the engine's preparing thread) against
#     transformers' Qwen2VLImageProcessor on the same files given as data
#     URLs (its fetch_images -> torchvision decode_image, then preprocess),
#     torch threads = 1;
#  2. the vision tower, patches/s: `clef image --model --bench` (the CPU
#     backend, THREADS threads) against transformers' Qwen3_5VisionModel in
#     fp32 (torch threads = THREADS) on the same checkpoint and images: a
#     tower of half the release's width (t/bench/vision-medium.json: depth 6,
#     hidden 576, 8 heads of 72 as in the release), made once under
#     build/bench/.
# Each side runs BENCH_SECONDS (default 5; not SECONDS, which bash keeps
# as its own clock) per measure, ROUNDS (3) rounds
# alternating; the best round of each is compared.  REFENV: build/refenv.
set -euo pipefail
cd "$(dirname "$0")/../.."

THREADS=${1:-$(nproc)}
SECONDS_EACH=${BENCH_SECONDS:-5}
ROUNDS=${ROUNDS:-3}
MODEL=build/bench/vision-medium
PY=${REFENV:-build/refenv}/bin/python
C=t/fixtures/images/corpus
FILES="$C/jpg_q90_444_200x150.jpg $C/jpg_progressive_300x200.jpg $C/png_rgb_333x777.png
       $C/png_rgba_100x80.png $C/webp_lossy_180x120.webp $C/jpg_3000x5000.jpg
       $C/minpix_257x256.png $C/png_palette_trns_50x50.png"
TOWER_FILES="$C/jpg_progressive_300x200.jpg $C/png_rgb_333x777.png $C/minpix_257x256.png"

[ -x build/clef ] || make -j"$(nproc)" all >/dev/null
if [ ! -f "$MODEL/config.json" ]; then
    mkdir -p build/bench
    build/clef mkmodel --config t/bench/vision-medium.json \
        --tokenizer t/fixtures/tokenizer/qwen3 --seed 1 --out "$MODEL" >/dev/null
fi

best() { sort -g | tail -1; }
ours_pre=(); ref_pre=(); ours_tower=(); ref_tower=()
for r in $(seq "$ROUNDS"); do
    out=$(build/clef image --bench "$SECONDS_EACH" $FILES | tail -1)
    ours_pre+=("$(echo "$out" | sed 's/.*"images_per_s":\([0-9.]*\).*/\1/')")
    ref_pre+=("$("$PY" - "$SECONDS_EACH" $FILES <<'PY'
import base64, sys, time, warnings
warnings.filterwarnings("ignore")
import torch
torch.set_num_threads(1)
from transformers.models.qwen2_vl.image_processing_qwen2_vl import Qwen2VLImageProcessor
ip = Qwen2VLImageProcessor(size={"shortest_edge": 65536, "longest_edge": 16777216},
                           patch_size=16, temporal_patch_size=2, merge_size=2,
                           image_mean=[0.5] * 3, image_std=[0.5] * 3)
secs = float(sys.argv[1])
urls = []
for p in sys.argv[2:]:
    ext = p.rsplit(".", 1)[1].replace("jpg", "jpeg")
    urls.append(f"data:image/{ext};base64," + base64.b64encode(open(p, "rb").read()).decode())
for u in urls:
    ip(ip.fetch_images([u]), return_tensors="pt")
n, t0 = 0, time.perf_counter()
while time.perf_counter() - t0 < secs:
    for u in urls:
        ip(ip.fetch_images([u]), return_tensors="pt")
        n += 1
print(n / (time.perf_counter() - t0))
PY
)")
    out=$(build/clef image --model "$MODEL" -t "$THREADS" --bench "$SECONDS_EACH" $TOWER_FILES | tail -1)
    ours_tower+=("$(echo "$out" | sed 's/.*"patches_per_s":\([0-9.]*\).*/\1/')")
    ref_tower+=("$("$PY" - "$MODEL" "$THREADS" "$SECONDS_EACH" $TOWER_FILES <<'PY'
import sys, time, warnings
warnings.filterwarnings("ignore")
import torch
from transformers import AutoProcessor, Qwen3_5ForConditionalGeneration
model_dir, threads, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
torch.set_num_threads(threads)
model = Qwen3_5ForConditionalGeneration.from_pretrained(model_dir, dtype=torch.float32).eval()
proc = AutoProcessor.from_pretrained(model_dir)
inputs = []
for p in sys.argv[4:]:
    ext = p.rsplit(".", 1)[1].replace("jpg", "jpeg")
    import base64
    url = f"data:image/{ext};base64," + base64.b64encode(open(p, "rb").read()).decode()
    out = proc.image_processor(proc.image_processor.fetch_images([url]), return_tensors="pt")
    inputs.append((out["pixel_values"], out["image_grid_thw"]))
with torch.inference_mode():
    for pv, g in inputs:
        model.model.visual(pv, grid_thw=g)
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < secs:
        for pv, g in inputs:
            model.model.visual(pv, grid_thw=g)
            n += int(pv.shape[0])
print(n / (time.perf_counter() - t0))
PY
)")
    echo "round $r: decode+preprocess ours ${ours_pre[-1]} images/s, reference ${ref_pre[-1]};" \
         "tower ours ${ours_tower[-1]} patches/s, reference ${ref_tower[-1]}"
done

op=$(printf '%s\n' "${ours_pre[@]}" | best); rp=$(printf '%s\n' "${ref_pre[@]}" | best)
ot=$(printf '%s\n' "${ours_tower[@]}" | best); rt=$(printf '%s\n' "${ref_tower[@]}" | best)
echo "decode + preprocess (1 thread): ours $op images/s, reference $rp images/s," \
     "ratio $(echo "$op / $rp" | bc -l | cut -c1-5)"
echo "vision tower ($THREADS threads, fp32): ours $ot patches/s, reference $rt patches/s," \
     "ratio $(echo "$ot / $rt" | bc -l | cut -c1-5)"
