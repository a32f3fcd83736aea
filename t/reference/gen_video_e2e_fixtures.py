"""Requests with videos (and images, and media_kwargs) on the random
checkpoint with a vision tower, and the reference's answers.

    t/reference/fetch-reference.sh video && t/reference/fetch-reference.sh
    build/refenv-video/bin/python t/reference/gen_video_e2e_fixtures.py

Needs build/clef (mkmodel), the clips of t/fixtures/video (gen_video_
fixtures.py) and the image corpus.  The checkpoint is t/fixtures/models/
v1.json written by `clef mkmodel` with seed 11 and 2 shards, as for the
image requests (gen_vision_fixtures.py; its files must match v1.sha256).
The reference, in fp32: transformers' Qwen3_5ForConditionalGeneration,
AutoProcessor from the checkpoint (Qwen3VLProcessor with
Qwen3VLVideoProcessor from its video_preprocessor_config.json, decoding
with torchcodec), Cloudflare's encode_record(..., processor=...) (which
passes media_kwargs to the processor) and collate_records, and ClefModel
with the JointSchemaHead in fp32.  Videos go in as file paths:
transformers' load_video refuses a data: URL, so a server in front of the
reference has to write a request's bytes to a file first.

Writes t/fixtures/vision/videos.jsonl, one request per line:
  name, body (the request, every video written "clip:NAME.EXT" and every
  image "corpus:NAME.EXT": the test puts the file's data URL there),
  input_ids, questions (id, span, option spans), video_grid_thw,
  image_grid_thw, logits and probabilities per question, and
  step_effect: the largest change of a probability when every sample of
  every video frame moves by one uint8 step (pixel_values_videos +-
  1/127.5, each direction run), the scale of the tolerance the test
  allows: max(1e-4, 3 x step_effect).
"""
import dataclasses
import json
import os
import subprocess
import sys
import tempfile

import torch
from safetensors.torch import load_file
from transformers import AutoProcessor, Qwen3_5ForConditionalGeneration
from transformers.utils import logging as hf_logging

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference  # noqa: E402

ROOT = reference.ROOT
CLIPS = ROOT / "t/fixtures/video/clips"
IMAGES = ROOT / "t/fixtures/images/corpus"
OUT = ROOT / "t/fixtures/vision"

STATES = [
    "What happens in the clip?",
    {"ticket": {"subject": "Checkout froze", "body": "Recording attached."}},
    ["first video", {"note": "compare with the second"}],
]
QUESTIONS = [
    {"moving": {"type": "noul", "instructions": "Does anything move?"}},
    {"scene": {"type": "choice", "instructions": "Which scene?",
               "criteria": {"indoor": None, "outdoor": "open air",
                            "screen": "a recording of a screen"}},
     "calm": {"type": "score", "criteria": ["still", "some motion",
                                            "busy"]}},
]

# (videos, images, media_kwargs): every codec, container, rate (variable
# ones too), rotation, odd size, colour tag and sound of the clip set,
# 2 to 1600 frames, two videos, videos beside images, and each key of
# media_kwargs the server takes
CASES = [
    (["h264_160x120_30fps.mp4"], [], None),
    (["h264_640x360_bframes.mp4"], [], None),
    (["h264_odd_161x97_444.mp4"], [], None),
    (["h264_422_200x150.mkv"], [], None),
    (["h264_mov_ntsc.mov", "vp8_176x144_24fps.webm"], [], None),
    (["h264_60fps.mp4"], [], None),
    (["h264_vfr.mp4"], [], None),
    (["h264_vfr_mkv.mkv"], [], None),
    (["h264_rot90.mp4", "h264_rot180.mov"], [], None),
    (["h264_rot270.mp4"], [], None),
    (["h264_bt709_tv_w150.mp4", "h264_full_range.mp4"], [], None),
    (["h264_bt2020.mp4"], [], None),
    (["h264_bt601.mkv"], [], None),
    (["h264_aac.mp4"], [], None),
    (["vp9_odd_161x97.webm"], [], None),
    (["vp9_10bit.webm", "vp9_opus.webm"], [], None),
    (["hevc_192x108.mp4"], [], None),
    (["hevc_10bit_mkv.mkv"], [], None),
    (["av1_128x96.mp4", "av1_150x100_webm.webm"], [], None),
    (["frames_2.mp4"], [], None),
    (["frames_3.mp4"], [], None),
    (["frames_5.webm"], [], None),
    (["tiny_24x20.mp4"], [], None),
    (["wide_1600x16.mp4"], [], None),
    (["frame_cap_400s.mp4"], [], None),
    (["h264_1280x720_2fps_15s.mp4"], [], None),
    (["h264_160x120_30fps.mp4"], ["png_rgb_64x48.png",
                                  "jpg_q75_420_257x193.jpg"], None),
    (["h264_mkv_30fps.mkv", "frames_3.mp4"], ["webp_lossy_180x120.webp"],
     None),
    (["h264_160x120_30fps.mp4"], [], {"fps": 1}),
    (["h264_640x360_bframes.mp4"], [], {"fps": 4.5}),
    (["h264_1280x720_2fps_15s.mp4"], [], {"fps": 0.5}),
    (["h264_1280x720_2fps_15s.mp4"], ["png_rgb_333x777.png"],
     {"size": {"shortest_edge": 4096, "longest_edge": 200000}}),
    (["h264_640x360_bframes.mp4"], ["png_rgb_333x777.png"],
     {"min_pixels": 100000, "max_pixels": 200000}),
    (["h264_640x360_bframes.mp4"], ["png_rgb_120x90.png"],
     {"size": {"shortest_edge": 50000, "longest_edge": 900000},
      "max_pixels": 70000}),
    (["h264_1280x720_2fps_15s.mp4"], [],
     {"cap_pixels_per_frame": True}),
    (["h264_1280x720_2fps_15s.mp4"], [],
     {"cap_pixels_per_frame": True, "max_video_tokens": 40, "fps": 1}),
]


def make_checkpoint(tmp):
    out = os.path.join(tmp, "v1")
    subprocess.run([str(ROOT / "build/clef"), "mkmodel", "--config",
                    str(ROOT / "t/fixtures/models/v1.json"), "--tokenizer",
                    str(reference.QWEN3_TOKENIZER), "--seed", "11", "--shards", "2",
                    "--out", out], check=True, stdout=subprocess.DEVNULL)
    want = dict(reversed(l.split()) for l in open(ROOT / "t/fixtures/models/v1.sha256"))
    got = subprocess.run(["sha256sum"] + sorted(want), cwd=out, check=True,
                         capture_output=True, text=True).stdout
    assert dict(reversed(l.split()) for l in got.splitlines()) == want, "v1 sha256"
    return out


def run(clef, jsm, enc, tokenizer):
    batch = jsm.collate_records([enc], tokenizer.pad_token_id, "cpu")
    with torch.inference_mode():
        return [ql.float() for ql in clef(batch)[0]]


def step_effect(clef, jsm, enc, tokenizer, probs):
    """The largest |p' - p| with every video sample one uint8 step up, then
    down (the processor's values are (v - 127.5) / 127.5)."""
    worst = 0.0
    for sign in (1, -1):
        media = dict(enc.media)
        media["pixel_values_videos"] = (enc.media["pixel_values_videos"]
                                        + sign / 127.5)
        moved = dataclasses.replace(enc, media=media)
        for ql, p in zip(run(clef, jsm, moved, tokenizer), probs):
            worst = max(worst, float((ql.softmax(-1) - p).abs().max()))
    return worst


def main():
    hf_logging.set_verbosity_error()
    jsm = reference.load_joint_schema_model()
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = make_checkpoint(tmp)
        model, info = Qwen3_5ForConditionalGeneration.from_pretrained(
            ckpt, dtype=torch.float32, output_loading_info=True)
        assert not info["missing_keys"], info["missing_keys"]
        assert not info["unexpected_keys"], info["unexpected_keys"]
        model.eval()
        head_cfg = json.load(open(os.path.join(ckpt, "joint_head_config.json")))
        head = jsm.JointSchemaHead(**head_cfg)
        head.load_state_dict(load_file(os.path.join(ckpt, "joint_head.safetensors")),
                             strict=True)
        head = head.float().eval()
        clef = jsm.ClefModel(model, head).eval()
        processor = AutoProcessor.from_pretrained(ckpt)
        assert type(processor.video_processor).__name__ == "Qwen3VLVideoProcessor"

        OUT.mkdir(parents=True, exist_ok=True)
        lines = []
        for n, (videos, images, kwargs) in enumerate(CASES):
            body = {"model": "jev-latest", "state": STATES[n % len(STATES)],
                    "videos": [f"clip:{v}" for v in videos],
                    "questions": QUESTIONS[n % len(QUESTIONS)]}
            request = dict(body, videos=[str(CLIPS / v) for v in videos])
            if images:
                body["images"] = [f"corpus:{x}" for x in images]
                request["images"] = [str(IMAGES / x) for x in images]
            if kwargs is not None:
                body["media_kwargs"] = kwargs
                request["media_kwargs"] = kwargs
            enc = jsm.encode_record(processor.tokenizer, request, max_length=65536,
                                    processor=processor)
            logits = run(clef, jsm, enc, processor.tokenizer)
            probs = [ql.softmax(-1) for ql in logits]
            effect = step_effect(clef, jsm, enc, processor.tokenizer, probs)
            lines.append({
                "name": f"vid{n:02d}_{len(videos)}v{len(images)}i"
                        + ("_kw" if kwargs else ""),
                "body": body,
                "input_ids": list(enc.input_ids),
                "questions": [{"id": q.question_id, "span": list(q.question_span),
                               "options": [list(s) for s in q.option_spans]}
                              for q in enc.questions],
                "video_grid_thw": enc.media["video_grid_thw"].tolist(),
                "image_grid_thw": (enc.media["image_grid_thw"].tolist()
                                   if "image_grid_thw" in enc.media else []),
                "logits": [[float(v) for v in ql] for ql in logits],
                "probabilities": [[float(v) for v in p] for p in probs],
                "step_effect": effect,
            })
            print(lines[-1]["name"], len(enc.input_ids), "tokens", videos, images,
                  kwargs, "step effect %.3g" % effect, file=sys.stderr)
        with open(OUT / "videos.jsonl", "w") as f:
            for c in lines:
                f.write(json.dumps(c, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
