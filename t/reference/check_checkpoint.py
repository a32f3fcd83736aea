#!/usr/bin/env python3
"""Checks that a `clef mkmodel` directory is a checkpoint the reference accepts.

    build/refenv/bin/python t/reference/check_checkpoint.py DIR [DIR ...]

For each DIR:
  - transformers loads it as Qwen3_5ForConditionalGeneration in fp32 with no
    missing text weight, no unexpected and no mismatched tensor (only the vision
    tower, which mkmodel does not write, may be missing);
  - tied checkpoints share lm_head and the embedding;
  - Cloudflare's JointSchemaHead(**joint_head_config.json) loads
    joint_head.safetensors with strict=True;
  - one System One record, encoded by the reference encoder, runs through the
    backbone and the head: every layer's hidden state is finite with a standard
    deviation in [0.1, 10], and every question's probabilities are finite.
Exits non-zero when a check fails.  The reference module is imported by path
from build/reference (t/reference/fetch-reference.sh sets it up).
"""

import json
import pathlib
import sys

import torch
from safetensors.torch import load_file
from transformers import AutoTokenizer, Qwen3_5ForConditionalGeneration
from reference import load_joint_schema_model as load_reference

ROOT = pathlib.Path(__file__).resolve().parents[2]

RECORD = {
    "model": "check",
    "state": {"ticket": "My card was charged twice for the same order.",
              "customer": {"tier": "gold", "open_tickets": 2}},
    "questions": {
        "team": {"type": "choice", "instructions": "Which team should handle it?",
                 "criteria": {"billing": "Payments and refunds",
                              "shipping": "Deliveries", "tech": None}},
        "urgent": {"type": "noul", "instructions": "Is it urgent?"},
        "anger": {"type": "score", "instructions": "How upset is the customer?",
                  "criteria": ["calm", "annoyed", "angry"]},
    },
}


def check(directory, ref):
    path = pathlib.Path(directory)
    failures = []

    def expect(ok, what):
        print(f"  {'ok  ' if ok else 'FAIL'} {what}")
        if not ok:
            failures.append(what)

    print(f"{path}:")
    model, info = Qwen3_5ForConditionalGeneration.from_pretrained(
        path, dtype=torch.float32, output_loading_info=True)
    model.eval()
    missing = sorted(info["missing_keys"])
    text_missing = [k for k in missing if not k.startswith("model.visual.")]
    print(f"  load report: {len(missing)} missing ({len(missing) - len(text_missing)} "
          f"model.visual.*), {len(info['unexpected_keys'])} unexpected, "
          f"{len(info['mismatched_keys'])} mismatched, {len(info['error_msgs'])} errors")
    expect(not text_missing, f"no missing text weights {text_missing[:5]}")
    expect(not info["unexpected_keys"], f"no unexpected weights {sorted(info['unexpected_keys'])[:5]}")
    expect(not info["mismatched_keys"], f"no mismatched weights {sorted(info['mismatched_keys'])[:5]}")

    config = json.loads((path / "config.json").read_text())
    text = model.model.language_model
    embed = text.embed_tokens.weight
    lm_head = model.get_output_embeddings().weight
    if config["tie_word_embeddings"]:
        expect(lm_head.data_ptr() == embed.data_ptr(), "tied: lm_head is the embedding")
    else:
        expect(lm_head.data_ptr() != embed.data_ptr(), "untied: lm_head is its own tensor")
    tc = model.config.text_config
    print(f"  text: vocab {tc.vocab_size}, hidden {tc.hidden_size}, layers "
          f"{tc.layer_types}, rope {tc.rope_parameters}")

    head_config = json.loads((path / "joint_head_config.json").read_text())
    head = ref.JointSchemaHead(**head_config)
    state = load_file(path / "joint_head.safetensors")
    result = head.load_state_dict(state, strict=True)
    expect(not result.missing_keys and not result.unexpected_keys,
           f"JointSchemaHead({head_config}) strict load of {len(state)} tensors")
    head.eval()
    print(f"  head scalars: prior_logit_scale {head.prior_logit_scale.item():.4f}, "
          f"joint_logit_scale {head.joint_logit_scale.item():.4f}, "
          f"residual_gate {head.residual_gate.item():.4f}")

    tokenizer = AutoTokenizer.from_pretrained(path)
    record = ref.encode_record(tokenizer, RECORD)
    batch = ref.collate_records([record], tokenizer.pad_token_id or 0, torch.device("cpu"))
    with torch.inference_mode():
        out = text(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                   use_cache=False, output_hidden_states=True, return_dict=True)
        stds = [h.std().item() for h in out.hidden_states]
        finite = all(torch.isfinite(h).all().item() for h in out.hidden_states)
        last = out.last_hidden_state
        print(f"  {len(record.input_ids)} tokens; hidden std per layer input: "
              + ", ".join(f"{s:.3f}" for s in stds)
              + f"; final-norm output std {last.std().item():.3f}")
        expect(finite and torch.isfinite(last).all().item(), "hidden states finite")
        expect(all(0.1 <= s <= 10 for s in stds + [last.std().item()]),
               "hidden std within [0.1, 10] at every layer")
        logits = head(last, batch["input_ids"], batch["attention_mask"], [record], lm_head)[0]
    ok = True
    for question, values in zip(record.questions, logits):
        p = values.float().softmax(-1)
        ok = ok and bool(torch.isfinite(values).all())
        print(f"  {question.question_id}: logits "
              + ", ".join(f"{v:.4f}" for v in values.tolist())
              + "  p " + ", ".join(f"{v:.4f}" for v in p.tolist()))
    expect(ok, "option logits finite")
    return failures


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    ref = load_reference()
    torch.manual_seed(0)          # the reference may initialise the vision tower
    failed = 0
    for directory in sys.argv[1:]:
        failed += len(check(directory, ref))
    print("all checks passed" if not failed else f"{failed} checks failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
