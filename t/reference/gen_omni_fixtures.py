#!/usr/bin/env python3
"""End-to-end golden outputs of the reference Clef Omni model on a tiny
checkpoint.

t/fixtures/models/omni1.json is written by `build/clef mkmodel` (seed and
shard count below, the tokenizer t/fixtures/tokenizer/qwen3-omni) into a
temporary directory and its files checked against
t/fixtures/models/omni1.sha256.  The reference then runs in fp32 exactly as
Cloudflare's Omni code runs it (transformers 5.10.2):

  load      load_release_model(ckpt, device="cpu", dtype=torch.float32):
            Qwen3OmniMoeForConditionalGeneration with enable_audio_output
            False (the thinker; talker.* and code2wav.* left unread), the
            joint head loaded strictly, the processor
  encoder   encode_record with the processor (DEFAULT_MAX_LENGTH 64000)
  forward   ClefModel.forward
  answer    systemone()

and each request becomes one JSON line of t/fixtures/e2e/omni1.jsonl in the
format of gen_model_fixtures.py (the hidden rows are the thinker's
final-norm output as the head receives it).  t/fixtures/e2e/manifest-omni.json lists it.

    build/refenv-omni/bin/python t/reference/gen_omni_fixtures.py

The reference is imported by path from build/reference (fetch-reference.sh
omni).
"""

import base64
import json
import pathlib
import random
import tempfile

import torch
from gen_model_fixtures import SEED, check_hashes, hidden_positions, requests
from reference import OMNI_TOKENIZER, load_omni_joint_schema_model

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLEF = ROOT / "build/clef"
MODELS = ROOT / "t/fixtures/models"
OUT = ROOT / "t/fixtures/e2e"
CHECKPOINTS = {"omni1": {"seed": 21, "shards": 2}}
OMNI_MAX_LENGTH = 64000     # the reference's DEFAULT_MAX_LENGTH
CORPUS = ROOT / "t/fixtures/images/corpus"
TYPES = {"png": "image/png", "jpg": "image/jpeg", "webp": "image/webp"}


def data_url(name):
    data = (CORPUS / name).read_bytes()
    return (f"data:{TYPES[name.rsplit('.', 1)[1]]};base64,"
            + base64.b64encode(data).decode())


def image_requests():
    """Images as Clef Omni's reference takes them: PIL-decoded (no EXIF
    turn), sized within its IMAGE_SIZE, each placeholder with its "\n"."""
    q1 = {"animal": {"type": "choice", "instructions": "Which animal?",
                     "criteria": {"cat": None, "dog": "a dog", "none": "no animal"}}}
    q2 = {"bright": {"type": "noul", "instructions": "Is the picture bright?"},
          "count": {"type": "score", "instructions": "How many objects?",
                    "criteria": ["none", "one", "several"]}}
    out = []

    def add(name, images, questions, state="What does the picture show?"):
        out.append((name, {"model": "clef-omni", "state": state,
                           "images": [data_url(i) for i in images],
                           "questions": questions}, OMNI_MAX_LENGTH, "reject"))

    add("image-png-upscaled", ["png_rgb_64x48.png"], q1)
    add("image-jpeg-exif-not-turned", ["jpg_exif6_120x80.jpg"], q2)
    add("image-webp-and-palette", ["webp_lossy_180x120.webp",
                                   "png_palette_trns_50x50.png"], q1)
    add("image-jpeg-downscaled", ["jpg_3000x5000.jpg"], q2,
        state={"ticket": "photo of the damaged parcel attached"})
    add("image-three", ["png_rgba_100x80.png", "jpg_q90_444_200x150.jpg",
                        "webp_lossless_96x96.webp"], q1)
    add("image-gray-alpha", ["png_gray_alpha_60x90.png"], q2)
    return out


def mkmodel(name, seed, shards, out):
    import subprocess
    subprocess.run([str(CLEF), "mkmodel", "--config", str(MODELS / f"{name}.json"),
                    "--tokenizer", str(OMNI_TOKENIZER), "--seed", str(seed),
                    "--shards", str(shards), "--out", str(out)],
                   check=True, stdout=subprocess.DEVNULL)


@torch.inference_mode()
def run_case(mod, model, processor, name, text, max_length, truncate):
    request = json.loads(text)
    tokenizer = processor.tokenizer
    record = mod.encode_record(tokenizer, request, max_length=max_length,
                               processor=processor)
    if truncate == "reject":
        assert len(record.input_ids) < max_length, name
    batch = mod.collate_records([record], tokenizer.pad_token_id, torch.device("cpu"))
    # the thinker's final-norm output as the head receives it (its lm_head
    # is the identity), media and DeepStack included
    seen = {}
    head_forward = model.head.forward

    def keep(hidden_states, *args, **kwargs):
        seen["hidden"] = hidden_states
        return head_forward(hidden_states, *args, **kwargs)

    model.head.forward = keep
    try:
        logits = model(batch)[0]
    finally:
        model.head.forward = head_forward
    hidden = seen["hidden"][0]
    answer = mod.systemone(model, processor, request, max_length=max_length)

    positions = hidden_positions(record)
    questions = []
    for q, ql in zip(record.questions, logits):
        probs = ql.float().softmax(-1).tolist()
        top = sorted(probs, reverse=True)
        assert len(top) == 1 or top[0] - top[1] > 1e-4, (name, q.question_id, top[:2])
        questions.append({
            "id": q.question_id,
            "options": list(q.option_ids),
            "logits": [float(x) for x in ql.float().tolist()],
            "probabilities": [float(x) for x in probs],
        })
    return {
        "name": name,
        "body": text,
        "max_length": max_length,
        "truncate": truncate,
        "input_tokens": len(record.input_ids),
        "hidden": {"positions": positions,
                   "rows": [[float(x) for x in hidden[p].tolist()] for p in positions]},
        "questions": questions,
        "answer": answer,
    }


def main():
    mod = load_omni_joint_schema_model()
    torch.manual_seed(0)
    rng = random.Random(SEED)
    cases = requests(rng) + image_requests()
    OUT.mkdir(parents=True, exist_ok=True)
    import transformers
    manifest = {"generator": "t/reference/gen_omni_fixtures.py",
                "torch": torch.__version__,
                "transformers": transformers.__version__, "models": {}}
    for name, ck in CHECKPOINTS.items():
        with tempfile.TemporaryDirectory() as tmp:
            ckpt = pathlib.Path(tmp) / name
            mkmodel(name, ck["seed"], ck["shards"], ckpt)
            listed = check_hashes(name, ckpt)
            model, processor = mod.load_release_model(ckpt, device="cpu",
                                                      dtype=torch.float32)
            lines = []
            for case_name, body, max_length, truncate in cases:
                if truncate == "reject":
                    max_length = OMNI_MAX_LENGTH
                text = json.dumps(body, ensure_ascii=False)
                lines.append(run_case(mod, model, processor, case_name, text,
                                      max_length, truncate))
            (OUT / f"{name}.jsonl").write_text(
                "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines))
            manifest["models"][name] = {
                "seed": ck["seed"], "shards": ck["shards"],
                "tokenizer": "tokenizer/qwen3-omni",
                "sha256": f"t/fixtures/models/{name}.sha256",
                "files": listed, "cases": len(lines)}
            print(f"{name}: {len(lines)} cases")
    (OUT / "manifest-omni.json").write_text(json.dumps(manifest, indent=1) + "\n")


if __name__ == "__main__":
    main()
