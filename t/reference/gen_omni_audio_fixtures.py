#!/usr/bin/env python3
"""Clef Omni's audio tower and audio placement against the reference, on the
tiny checkpoint t/fixtures/models/omni1.json.

The checkpoint is written by `build/clef mkmodel` (gen_omni_fixtures.py's
seed and shards) and checked against t/fixtures/models/omni1.sha256; the
reference runs in fp32 as Cloudflare's Omni code runs it (transformers
5.10.2): load_release_model, encode_record with the processor, one record
per collate_records, ClefModel.forward.

Each record's clips are synthesised here as 16 kHz mono float32 samples
(tones, chirps, noise, amplitude-modulated "speech-like" bursts, silence;
0.2 s to 12 s, so that the tower's 100-frame chunks and its 104-token
attention windows are both crossed), passed to the reference as sample
arrays (its load_audio takes them as they are), with and without images.
One JSON line per record in t/fixtures/audio/omni1.jsonl:

  name, body          the request without its audio ("corpus:NAME" images,
                      as t/fixtures/vision's)
  audio               per clip: frames (its feature_attention_mask sum),
                      mels, features (float32 [mels][frames], row-major,
                      base64: the reference's input_features for the
                      clip's valid frames), tokens and output (float32
                      [tokens][hidden], base64: the reference's audio tower
                      output for the clip, get_audio_features on the
                      record's clips together as the forward runs it)
  input_ids           the record's ids (encode_record)
  questions           question span and option spans
  probabilities       per question, the reference's softmax

    build/refenv-omni/bin/python t/reference/gen_omni_audio_fixtures.py
"""

import base64
import json
import pathlib
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from gen_model_fixtures import check_hashes                 # noqa: E402
from gen_omni_fixtures import CHECKPOINTS, data_url, mkmodel  # noqa: E402
from reference import load_omni_joint_schema_model          # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "t/fixtures/audio"
RATE = 16000
NAME = "omni1"


# ---- clips ---------------------------------------------------------------

def tone(rng, sec, f=440.0, amp=0.5):
    t = np.arange(int(round(sec * RATE))) / RATE
    return amp * np.sin(2 * np.pi * f * t + rng.uniform(0, np.pi))


def chirp(rng, sec, f0=150.0, f1=3500.0, amp=0.4):
    n = int(round(sec * RATE))
    t = np.arange(n) / RATE
    k = (f1 - f0) / max(sec, 1e-3)
    return amp * np.sin(2 * np.pi * (f0 * t + 0.5 * k * t * t))


def noise(rng, sec, amp=0.1):
    return amp * rng.standard_normal(int(round(sec * RATE)))


def speechlike(rng, sec):
    """Harmonics of a wandering pitch under a syllable-rate envelope."""
    n = int(round(sec * RATE))
    t = np.arange(n) / RATE
    pitch = 120 + 30 * np.sin(2 * np.pi * 0.7 * t)
    phase = 2 * np.pi * np.cumsum(pitch) / RATE
    voice = sum(np.sin(h * phase) / h for h in range(1, 8))
    env = np.clip(np.sin(2 * np.pi * 4.0 * t + rng.uniform(0, 6)), 0, None)
    return 0.3 * env * voice + 0.01 * rng.standard_normal(n)


def silence(rng, sec):
    return np.zeros(int(round(sec * RATE)))


def clip(kind, sec, rng, **kw):
    return np.asarray(kind(rng, sec, **kw), dtype=np.float32)


Q_ANIMAL = {"sound": {"type": "choice", "instructions": "What makes this sound?",
                      "criteria": {"bird": None, "engine": "an engine",
                                   "voice": "a human voice", "nothing": "silence"}}}
Q_LOUD = {"loud": {"type": "noul", "instructions": "Is the recording loud?"},
          "count": {"type": "score", "instructions": "How many sound sources?",
                    "criteria": ["none", "one", "several"]}}
Q_URGENT = {"urgent": {"type": "noul", "instructions": "Does the caller sound urgent?"}}


def records(rng):
    out = []

    def add(name, clips, questions, images=(), state="Listen to the clips."):
        out.append((name, {"model": "clef-omni", "state": state,
                           "images": list(images), "questions": questions},
                    clips))

    add("tone-one-second", [clip(tone, 1.0, rng)], Q_ANIMAL)
    add("noise-shortest", [clip(noise, 0.2, rng)], Q_LOUD)
    add("chirp-twelve-seconds", [clip(chirp, 12.0, rng)], Q_ANIMAL,
        state={"ticket": "recording of the machine room", "priority": 2})
    add("two-short", [clip(tone, 0.5, rng, f=880.0), clip(noise, 0.73, rng)],
        Q_LOUD)
    add("three-mixed", [clip(speechlike, 1.6, rng), clip(noise, 0.3, rng, amp=0.3),
                        clip(silence, 1.0, rng)], Q_URGENT)
    add("four-clips", [clip(tone, 0.35, rng, f=300.0), clip(speechlike, 0.9, rng),
                       clip(chirp, 1.55, rng), clip(noise, 0.21, rng)],
        {**Q_ANIMAL, **Q_URGENT})
    add("image-then-clip", [clip(speechlike, 1.23, rng)], Q_ANIMAL,
        images=["png_rgb_64x48.png"])
    add("two-images-two-clips", [clip(chirp, 2.07, rng, f0=500.0),
                                 clip(tone, 0.44, rng, f=1200.0)], Q_LOUD,
        images=["png_rgba_100x80.png", "jpg_q90_444_200x150.jpg"])
    add("silence-only", [clip(silence, 0.6, rng)], Q_LOUD,
        state="Is anybody there?")
    add("image-two-short-clips", [clip(noise, 0.8, rng, amp=0.02),
                                  clip(tone, 0.25, rng, f=220.0)], Q_URGENT,
        images=["webp_lossy_180x120.webp"])
    add("around-one-and-a-half", [clip(speechlike, 1.49, rng),
                               clip(speechlike, 1.51, rng)],
        {**Q_LOUD, **Q_ANIMAL})
    add("short-clip-and-image", [clip(tone, 0.2, rng, f=660.0)], Q_ANIMAL,
        images=["png_gray_alpha_60x90.png"], state={"note": "short beep"})
    add("two-windows", [clip(speechlike, 8.1, rng)], Q_URGENT,
        state="A voicemail left overnight.")
    add("long-and-short", [clip(noise, 0.5, rng, amp=0.05),
                           clip(chirp, 3.0, rng, f0=2000.0, f1=200.0)], Q_LOUD)
    return out


# ---- the reference --------------------------------------------------------

def b64(a):
    return base64.b64encode(np.ascontiguousarray(a, dtype="<f4").tobytes()).decode()


@torch.inference_mode()
def run_record(mod, model, processor, name, body, clips):
    request = dict(body)
    request["images"] = [data_url(i) for i in body["images"]]
    if not request["images"]:
        del request["images"]
    request["audio"] = clips
    tokenizer = processor.tokenizer
    record = mod.encode_record(tokenizer, request, processor=processor)
    batch = mod.collate_records([record], tokenizer.pad_token_id,
                                torch.device("cpu"))
    logits = model(batch)[0]

    media = record.media
    feats = media["input_features"].float()           # [clips][mels][padded]
    mask = media["feature_attention_mask"]            # [clips][padded]
    tower = model.thinker.get_audio_features(
        feats, feature_attention_mask=mask).last_hidden_state
    lens = mask.sum(-1).tolist()
    audio, row = [], 0
    for k, frames in enumerate(lens):
        tokens = int(((((frames % 100) - 1) // 2 + 1 - 1) // 2 + 1 - 1) // 2
                     + 1 + (frames // 100) * 13)
        audio.append({
            "frames": int(frames), "mels": int(feats.shape[1]),
            "seconds": len(clips[k]) / RATE,
            "features": b64(feats[k, :, :frames].numpy()),
            "tokens": tokens,
            "output": b64(tower[row:row + tokens].numpy()),
        })
        row += tokens
    assert row == tower.shape[0], (name, row, tower.shape)
    questions, probs = [], []
    for q, ql in zip(record.questions, logits):
        p = ql.float().softmax(-1)
        probs.append([float(x) for x in p.tolist()])
        questions.append({"id": q.question_id, "span": list(q.question_span),
                          "options": [list(s) for s in q.option_spans]})
        top = sorted(probs[-1], reverse=True)
        assert len(top) == 1 or top[0] - top[1] > 1e-4, (name, top[:2])
    return {"name": name, "body": {**body, "images": [f"corpus:{i}" for i in body["images"]]},
            "audio": audio, "input_ids": list(record.input_ids),
            "questions": questions, "probabilities": probs}


def cpu_without_accelerate():
    """load_release_model asks from_pretrained for device_map {"": "cpu"},
    which transformers 5.10.2 refuses without the accelerate package; on the
    CPU the map changes nothing, so it is left out (the environment of
    fetch-reference.sh omni has no accelerate)."""
    from transformers import Qwen3OmniMoeForConditionalGeneration as M
    load = M.from_pretrained.__func__

    def from_pretrained(cls, *args, **kwargs):
        if kwargs.get("device_map") == {"": "cpu"}:
            del kwargs["device_map"]
        return load(cls, *args, **kwargs)

    M.from_pretrained = classmethod(from_pretrained)


def main():
    mod = load_omni_joint_schema_model()
    cpu_without_accelerate()
    torch.manual_seed(0)
    rng = np.random.default_rng(20261009)
    recs = records(rng)
    OUT.mkdir(parents=True, exist_ok=True)
    ck = CHECKPOINTS[NAME]
    import transformers
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = pathlib.Path(tmp) / NAME
        mkmodel(NAME, ck["seed"], ck["shards"], ckpt)
        check_hashes(NAME, ckpt)
        model, processor = mod.load_release_model(ckpt, device="cpu",
                                                  dtype=torch.float32)
        lines = [run_record(mod, model, processor, n, b, c) for n, b, c in recs]
    (OUT / f"{NAME}.jsonl").write_text(
        "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines))
    (OUT / "manifest.json").write_text(json.dumps({
        "generator": "t/reference/gen_omni_audio_fixtures.py",
        "torch": torch.__version__, "transformers": transformers.__version__,
        "model": NAME, "seed": ck["seed"], "shards": ck["shards"],
        "records": len(lines),
        "clips": sum(len(x["audio"]) for x in lines)}, indent=1) + "\n")
    print(f"{NAME}: {len(lines)} records, "
          f"{sum(len(x['audio']) for x in lines)} clips")


if __name__ == "__main__":
    main()
