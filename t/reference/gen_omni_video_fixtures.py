#!/usr/bin/env python3
"""Clef Omni requests with videos (no sound heard) against Cloudflare's Omni
reference, on the tiny checkpoint t/fixtures/models/omni1.json.

    t/reference/fetch-reference.sh omni
    build/refenv-omni/bin/python t/reference/gen_omni_video_fixtures.py

Needs build/clef (mkmodel) and Debian's ffmpeg (two clips of its own; the
others are t/fixtures/video/clips of gen_video_fixtures.py).  The reference
runs in fp32 as gen_omni_fixtures.py runs it: load_release_model, then
encode_record with the processor (its load_video: PyAV, every frame at or
past each 1/2 s step, scaled to at most 256 x 32 x 32 pixels; then
Qwen3OmniMoeProcessor with videos_kwargs fps 2.0 and do_sample_frames
False), collate_records and ClefModel.

Writes t/fixtures/vision/omni_videos.jsonl, one request per line:
  name, body (videos written "clip:NAME.EXT", images "corpus:NAME.EXT": the
  test puts the file's data URL there), and either
  - error: the refusal this server gives (type), with why: what the
    reference does instead (media_kwargs beside its videos_kwargs raise or
    apply its own way), or
  - input_ids, questions (id, span, option spans, option ids),
    video_grid_thw,
    image_grid_thw, video_second_per_grid, use_audio_in_video (false),
    frames: per video the weighted sums (gen_video_fixtures.py's wsum) of
    load_video's frames (the odd count's repeated last included),
    resized: per video the weighted sums of each resized frame, i.e.
    round(pixel_values_videos * 127.5 + 127.5) un-patchified (exact:
    asserted), pixel_sum: the float64 sum of pixel_values_videos,
    logits and probabilities per question, and step_effect: the largest
    change of a probability when every video sample moves one uint8 step
    (pixel_values_videos +- 1/127.5), the scale of one-step input changes.
"""
import dataclasses
import json
import pathlib
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import reference  # noqa: E402

ROOT = reference.ROOT
CLIPS = ROOT / "t/fixtures/video/clips"
IMAGES = ROOT / "t/fixtures/images/corpus"
OUT = ROOT / "t/fixtures/vision/omni_videos.jsonl"
MODELS = ROOT / "t/fixtures/models"
MAX_LENGTH = 64000

QUESTIONS = [
    {"scene": {"type": "choice", "instructions": "What does the clip show?",
               "criteria": {"pattern": "a test pattern", "people": None,
                            "text": "mostly text"}}},
    {"moving": {"type": "noul", "instructions": "Does anything move?"},
     "quality": {"type": "score", "instructions": "How sharp is it?",
                 "criteria": ["blurred", "fair", "sharp"]}},
]
STATES = ["Describe the clip.", {"ticket": 7, "note": "security camera"}]

# (videos, images, media_kwargs, refusal): codecs, containers, sizes below
# and above 256 x 32 x 32 pixels, odd kept counts, 0.6 to 15 s, variable
# rate, two videos, videos beside images, and clips with an audio track
# mixed with silent ones (the reference's sound is then off; records whose
# every video has sound are gen_omni_avideo_fixtures.py's)
CASES = [
    (["h264_160x120_30fps.mp4"], [], None, None),
    (["vp8_176x144_24fps.webm"], [], None, None),
    (["h264_mkv_30fps.mkv"], ["png_rgb_64x48.png"], None, None),
    (["h264_odd_161x97_444.mp4"], [], None, None),
    (["frames_3.mp4"], [], None, None),
    (["h264_vfr.mp4"], [], None, None),
    (["omni_640x480_0.6s.mp4"], ["jpg_q90_444_200x150.jpg",
                                 "webp_lossless_96x96.webp"], None, None),
    (["hevc_192x108.mp4", "av1_150x100_webm.webm"], [], None, None),
    (["h264_aac.mp4", "h264_160x120_30fps.mp4"], [], None, None),
    (["vp9_opus.webm", "av1_128x96.mp4"], ["png_rgba_100x80.png"], None, None),
    (["omni_aac_320x180_5.5s.mkv", "vp9_odd_161x97.webm"], [], None, None),
    (["h264_1280x720_2fps_15s.mp4"], [], None, None),
    (["h264_60fps.mp4"], ["png_gray_alpha_60x90.png"], None, None),
    (["h264_160x120_30fps.mp4"], [], {"fps": 1}, "media_kwargs_unsupported"),
]


def wsum(b):
    """gen_video_fixtures.py's weighted byte sum (that script needs
    torchcodec, which this environment has not), as 16 hex digits."""
    b = np.ascontiguousarray(b, dtype=np.uint8).reshape(-1).astype(np.uint64)
    i = np.arange(b.size, dtype=np.uint64)
    with np.errstate(over="ignore"):
        w = (i * np.uint64(0x9E3779B97F4A7C15)) | np.uint64(1)
        s = np.sum(b * w, dtype=np.uint64)
    return "%016x" % int(s)


def ffmpeg(out, *args):
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-nostdin", *args,
                    "-fflags", "+bitexact", "-flags:v", "+bitexact", str(out)],
                   check=True)


def make_clips():
    """The two clips of this generator's own (a few tens of KB)."""
    a = CLIPS / "omni_640x480_0.6s.mp4"
    if not a.exists():
        ffmpeg(a, "-f", "lavfi", "-i", "testsrc2=size=640x480:rate=12:duration=0.6",
               "-c:v", "libx264", "-preset", "veryfast", "-crf", "38",
               "-pix_fmt", "yuv420p")
    b = CLIPS / "omni_aac_320x180_5.5s.mkv"
    if not b.exists():
        ffmpeg(b, "-f", "lavfi", "-i", "testsrc=size=320x180:rate=4:duration=5.5",
               "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=16000:duration=5.5",
               "-c:v", "libx264", "-preset", "veryfast", "-crf", "40",
               "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "24k", "-shortest")


def make_checkpoint(tmp):
    out = pathlib.Path(tmp) / "omni1"
    subprocess.run([str(ROOT / "build/clef"), "mkmodel", "--config",
                    str(MODELS / "omni1.json"), "--tokenizer",
                    str(reference.OMNI_TOKENIZER), "--seed", "21", "--shards", "2",
                    "--out", str(out)], check=True, stdout=subprocess.DEVNULL)
    want = dict(reversed(l.split()) for l in open(MODELS / "omni1.sha256"))
    got = subprocess.run(["sha256sum"] + sorted(want), cwd=out, check=True,
                         capture_output=True, text=True).stdout
    assert dict(reversed(l.split()) for l in got.splitlines()) == want, "omni1 sha256"
    return out


def run(model, mod, enc, pad):
    batch = mod.collate_records([enc], pad, torch.device("cpu"))
    with torch.inference_mode():
        return [ql.float() for ql in model(batch)[0]]


def step_effect(model, mod, enc, pad, probs):
    worst = 0.0
    for sign in (1, -1):
        media = dict(enc.media)
        media["pixel_values_videos"] = enc.media["pixel_values_videos"] + sign / 127.5
        moved = dataclasses.replace(enc, media=media)
        for ql, p in zip(run(model, mod, moved, pad), probs):
            worst = max(worst, float((ql.softmax(-1) - p).abs().max()))
    return worst


def resized_sums(pv, grid, patch=16, temporal=2, merge=2):
    """Each resized frame of one video from its pixel_values_videos rows
    (t, h/2, w/2, 2, 2) x (channel, temporal, y, x)."""
    t, h, w = grid
    x = pv.reshape(t, h // merge, w // merge, merge, merge, 3, temporal, patch, patch)
    # -> (t, temporal, h/2, 2, y, w/2, 2, x, channel)
    x = x.permute(0, 6, 1, 3, 7, 2, 4, 8, 5).reshape(t * temporal, h * patch, w * patch, 3)
    v = x.double() * 127.5 + 127.5
    r = v.round()
    assert (v - r).abs().max() < 1e-3, "pixel values are whole steps"
    return [wsum(f.numpy().astype(np.uint8)) for f in r]


def main():
    make_clips()
    mod = reference.load_omni_joint_schema_model()
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = make_checkpoint(tmp)
        model, processor = mod.load_release_model(ckpt, device="cpu",
                                                  dtype=torch.float32)
        pad = processor.tokenizer.pad_token_id
        for n, (videos, images, kwargs, refusal) in enumerate(CASES):
            body = {"model": "clef-omni", "state": STATES[n % len(STATES)],
                    "videos": [f"clip:{v}" for v in videos],
                    "questions": QUESTIONS[n % len(QUESTIONS)]}
            record = dict(body, videos=[(CLIPS / v).read_bytes() for v in videos])
            if images:
                body["images"] = [f"corpus:{x}" for x in images]
                record["images"] = [(IMAGES / x).read_bytes() for x in images]
            if kwargs is not None:
                body["media_kwargs"] = kwargs
                record["media_kwargs"] = kwargs
            name = f"omni_vid{n:02d}_{len(videos)}v{len(images)}i"
            loaded = [mod.load_video(v) for v in record["videos"]]
            heard = all(track is not None for _, track in loaded)
            if refusal is not None:
                try:
                    mod.encode_record(processor.tokenizer, record,
                                      max_length=MAX_LENGTH, processor=processor)
                    why = "the reference applies the kwargs its own way"
                except Exception as e:      # noqa: BLE001
                    why = "the reference raises: " + str(e).splitlines()[0]
                lines.append({"name": name, "body": body, "error": refusal, "why": why})
                print(name, refusal, why, file=sys.stderr)
                continue
            assert not heard, name
            enc = mod.encode_record(processor.tokenizer, record, max_length=MAX_LENGTH,
                                    processor=processor)
            assert enc.media["use_audio_in_video"] is False
            logits = run(model, mod, enc, pad)
            probs = [ql.softmax(-1) for ql in logits]
            effect = step_effect(model, mod, enc, pad, probs)
            grids = enc.media["video_grid_thw"].tolist()
            pv = enc.media["pixel_values_videos"]
            resized, row = [], 0
            for g in grids:
                rows = g[0] * g[1] * g[2]
                resized.append(resized_sums(pv[row:row + rows], g))
                row += rows
            lines.append({
                "name": name,
                "body": body,
                "input_ids": list(enc.input_ids),
                "questions": [{"id": q.question_id, "span": list(q.question_span),
                               "options": [list(s) for s in q.option_spans],
                               "option_ids": list(q.option_ids)}
                              for q in enc.questions],
                "video_grid_thw": grids,
                "image_grid_thw": (enc.media["image_grid_thw"].tolist()
                                   if "image_grid_thw" in enc.media else []),
                "video_second_per_grid": enc.media["video_second_per_grid"].tolist(),
                "use_audio_in_video": False,
                "frames": [[wsum(f) for f in frames] for frames, _ in loaded],
                "resized": resized,
                "pixel_sum": float(pv.double().sum()),
                "logits": [[float(v) for v in ql] for ql in logits],
                "probabilities": [[float(v) for v in p] for p in probs],
                "step_effect": effect,
            })
            print(name, len(enc.input_ids), "tokens", grids, "step effect %.3g" % effect,
                  file=sys.stderr)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with open(OUT, "w") as f:
        for c in lines:
            f.write(json.dumps(c, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
