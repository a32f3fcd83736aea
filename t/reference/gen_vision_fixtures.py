"""Requests with images on a random checkpoint with a vision tower, and the
reference's answers.

    build/refenv/bin/python t/reference/gen_vision_fixtures.py

Needs build/clef (mkmodel) and the image corpus (gen_image_fixtures.py).
The checkpoint is t/fixtures/models/v1.json written by `clef mkmodel` with
seed 11 and 2 shards (its files must match v1.sha256).  The reference, in
fp32: transformers' Qwen3_5ForConditionalGeneration (its vision tower
included: no weight may be missing), AutoProcessor from the checkpoint
(Qwen3VLProcessor with the torchvision Qwen2VLImageProcessor), Cloudflare's
encode_record(..., processor=...) and collate_records, and ClefModel with
the JointSchemaHead in fp32.  Images go in as the request carries them, as
data URLs (the reference's processor loads them itself).

Writes t/fixtures/vision/cases.jsonl, one request per line:
  name, body (the request with every image written "corpus:NAME.EXT"; the
  test puts the file's data URL there), input_ids, questions (id, span,
  option spans), image_grid_thw, image_start (first pad of each image),
  logits and probabilities per question (request order, encoder option
  order).
"""
import base64
import json
import os
import random
import subprocess
import sys
import tempfile

import torch
from safetensors.torch import load_file
from transformers import AutoProcessor, Qwen3_5ForConditionalGeneration

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference  # noqa: E402

ROOT = reference.ROOT
IMAGES = ROOT / "t/fixtures/images"
OUT = ROOT / "t/fixtures/vision"

# small and medium corpus images of every format and mode (the 16 MP ones
# cost minutes in the reference's fp32 vision tower and add nothing here)
POOL = [
    "png_rgb_64x48.png", "png_rgba_100x80.png", "png_palette_trns_50x50.png",
    "png_palette_4bit_70x30.png", "png_gray_90x60.png", "png_gray_alpha_60x90.png",
    "png_gray_1bit_77x41.png", "png_rgb_120x90.png", "png_exif6_96x64.png",
    "jpg_q90_444_200x150.jpg", "jpg_q75_420_257x193.jpg", "jpg_422_160x120.jpg",
    "jpg_progressive_300x200.jpg", "jpg_gray_128x96.jpg", "jpg_cmyk_64x64.jpg",
    "jpg_exif3_120x80.jpg", "jpg_exif6_120x80.jpg", "jpg_exif8_120x80.jpg",
    "webp_lossy_180x120.webp", "webp_lossless_96x96.webp",
    "webp_alpha_lossy_100x70.webp", "size_10x10.png", "size_11x13.png",
    "minpix_255x256.png", "minpix_257x256.png", "aspect_10x2000.png",
    "odd_17x3333.webp", "png_rgb_333x777.png",
]
CTYPE = {"png": "image/png", "jpg": "image/jpeg", "webp": "image/webp"}

STATES = [
    "What does the picture show?",
    {"ticket": {"subject": "Broken screen", "body": "See the photo attached."}},
    ["first photo", "second photo", {"note": "compare them"}],
    "Les photos montrent-elles un chat ? 写真に猫はいますか？",
]
QUESTIONS = [
    {"animal": {"type": "choice", "instructions": "Which animal?",
                "criteria": {"cat": None, "dog": "a dog", "none": "no animal"}}},
    {"damaged": {"type": "noul", "instructions": "Is anything damaged?"},
     "severity": {"type": "score", "instructions": "How bad?",
                  "criteria": ["fine", "scratched", "broken"]}},
    {"bright": {"type": "noul"},
     "colour": {"type": "choice", "criteria": {"red": "mostly red", "green": None,
                                               "blue": None, "grey": "no colour"}}},
]


def data_url(name):
    ext = name.rsplit(".", 1)[1]
    with open(IMAGES / "corpus" / name, "rb") as f:
        return f"data:{CTYPE[ext]};base64," + base64.b64encode(f.read()).decode()


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


def cases():
    rnd = random.Random(20261203)
    out = []
    # every pool image once, one to four per request, then mixed ones
    order = POOL[:]
    rnd.shuffle(order)
    i = 0
    while i < len(order):
        n = 1 + (len(out) % 4)
        out.append(order[i:i + n])
        i += n
    while len(out) < 32:
        out.append(rnd.sample(POOL, 1 + rnd.randrange(4)))
    return out


def main():
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

        OUT.mkdir(parents=True, exist_ok=True)
        lines = []
        for n, names in enumerate(cases()):
            body = {"model": "jev-latest", "state": STATES[n % len(STATES)],
                    "images": [f"corpus:{x}" for x in names],
                    "questions": QUESTIONS[n % len(QUESTIONS)]}
            request = dict(body, images=[data_url(x) for x in names])
            enc = jsm.encode_record(processor.tokenizer, request, max_length=65536,
                                    processor=processor)
            batch = jsm.collate_records([enc], processor.tokenizer.pad_token_id, "cpu")
            with torch.inference_mode():
                logits = clef(batch)[0]
            ids = list(enc.input_ids)
            pad = model.config.image_token_id
            starts = [i for i in range(len(ids)) if ids[i] == pad
                      and (i == 0 or ids[i - 1] != pad)]
            lines.append({
                "name": f"v{n:02d}_{len(names)}img",
                "body": body,
                "input_ids": ids,
                "questions": [{"id": q.question_id, "span": list(q.question_span),
                               "options": [list(s) for s in q.option_spans]}
                              for q in enc.questions],
                "image_grid_thw": enc.media["image_grid_thw"].tolist(),
                "image_start": starts,
                "logits": [[float(v) for v in ql.float()] for ql in logits],
                "probabilities": [[float(v) for v in ql.float().softmax(-1)]
                                  for ql in logits],
            })
            print(lines[-1]["name"], len(ids), "tokens", names, file=sys.stderr)
        with open(OUT / "cases.jsonl", "w") as f:
            for c in lines:
                f.write(json.dumps(c, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
