#!/usr/bin/env python3
"""Golden outputs of Cloudflare's JointSchemaHead for t/unit/test_head.c.

A small random head (every parameter random, the three scalars non-zero,
prior_logit_scale above ln 100 so that its clamp acts), its weights rounded to
bf16 and stored as bf16 in joint_head.safetensors; random hidden states,
token ids and spans; the reference's fp32 logits.  Also one
nn.MultiheadAttention alone, with and without a LayerNorm on its memory.

    build/refenv/bin/python t/reference/gen_head_fixtures.py

The reference is imported by path from build/reference (fetch-reference.sh).
"""

import json
import math
import pathlib

import torch
from safetensors.torch import save_file
from reference import load_joint_schema_model as load_reference

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "t/fixtures/head"

CONFIG = dict(hidden_size=40, width=32, routing_layers=2, layers=2, heads=4,
              feedforward=48)
VOCAB = 97
SCALARS = dict(prior_logit_scale=4.8, joint_logit_scale=1.2, residual_gate=-0.3)


def bf16(t):
    return t.to(torch.bfloat16).float()


def randomize(head, gen):
    """Every parameter random (PyTorch's init leaves biases and LayerNorms at
    0/1, which would hide a swapped bias or norm), rounded to bf16."""
    with torch.no_grad():
        for name, p in head.named_parameters():
            if p.dim() == 0:
                p.fill_(SCALARS[name])
            elif "norm" in name and name.endswith("weight"):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=gen))
            elif p.dim() == 1:
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(torch.randn(p.shape, generator=gen) / math.sqrt(p.shape[-1]))
            p.copy_(bf16(p))


def make_case(mod, gen, name, length, questions):
    """questions: [(type, n_options)].  Spans are laid out like the encoder's:
    instructions, then each option's JSON, with gaps between them."""
    H = CONFIG["hidden_size"]
    hidden = (1.5 * torch.randn(length, H, generator=gen) + 0.3).float()
    ids = torch.randint(0, VOCAB, (length,), generator=gen, dtype=torch.long)
    need = sum(4 + 2 + 6 * n + 1 for _, n in questions)
    pos = max(1, length - need - 2)
    encoded = []
    for qi, (qtype, n_options) in enumerate(questions):
        qlen = 1 + int(torch.randint(0, 4, (1,), generator=gen))
        qspan = (pos, pos + qlen)
        pos += qlen + 2
        spans = []
        for _ in range(n_options):
            olen = 1 + int(torch.randint(0, 5, (1,), generator=gen))
            spans.append((pos, pos + olen))
            pos += olen + 1
        pos += 1
        encoded.append(mod.EncodedQuestion(
            question_id=f"q{qi}", question_type=qtype, question_span=qspan,
            option_spans=tuple(spans), option_ids=tuple(str(i) for i in range(n_options))))
    assert pos < length, (name, pos, length)
    record = mod.EncodedRecord(input_ids=tuple(ids.tolist()), questions=tuple(encoded),
                               record_id=name)
    return record, hidden, ids


def main():
    mod = load_reference()
    gen = torch.Generator().manual_seed(20261202)
    torch.manual_seed(0)

    head = mod.JointSchemaHead(**CONFIG).float().eval()
    randomize(head, gen)
    lm_head = bf16(0.7 * torch.randn(VOCAB, CONFIG["hidden_size"], generator=gen))

    specs = [
        ("basic", 90, [(0, 2), (1, 4), (2, 3)]),
        ("single", 16, [(1, 2)]),
        ("one_level", 40, [(2, 1), (0, 2)]),
        ("many", 1300, [(1, 12), (0, 2), (2, 5), (1, 3), (0, 2), (2, 10)]),
    ]
    tensors = {"lm_head.weight": lm_head.to(torch.bfloat16)}
    cases = []
    for name, length, questions in specs:
        record, hidden, ids = make_case(mod, gen, name, length, questions)
        with torch.inference_mode():
            logits = head(hidden.unsqueeze(0), ids.unsqueeze(0),
                          torch.ones(1, length, dtype=torch.long), [record], lm_head)[0]
        flat = torch.cat(logits).tolist()
        tensors[f"{name}.hidden"] = hidden.contiguous()
        tensors[f"{name}.input_ids"] = ids.to(torch.int32)
        cases.append({
            "name": name,
            "length": length,
            "questions": [{"type": q.question_type, "span": list(q.question_span),
                           "options": [list(s) for s in q.option_spans]}
                          for q in record.questions],
            "logits": flat,
        })

    # nn.MultiheadAttention alone: W=32, 4 heads, 700 keys (more than one of
    # the C code's key chunks), with random biases.
    W = CONFIG["width"]
    mha = torch.nn.MultiheadAttention(W, CONFIG["heads"], batch_first=True).eval()
    ln = torch.nn.LayerNorm(W)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.randn(3 * W, W, generator=gen) / math.sqrt(W))
        mha.in_proj_bias.copy_(0.2 * torch.randn(3 * W, generator=gen))
        mha.out_proj.weight.copy_(torch.randn(W, W, generator=gen) / math.sqrt(W))
        mha.out_proj.bias.copy_(0.2 * torch.randn(W, generator=gen))
        ln.weight.copy_(1.0 + 0.2 * torch.randn(W, generator=gen))
        ln.bias.copy_(0.1 * torch.randn(W, generator=gen))
    query = torch.randn(5, W, generator=gen)
    memory = 2.0 * torch.randn(700, W, generator=gen) + 0.5
    with torch.inference_mode():
        plain, _ = mha(query[None], memory[None], memory[None], need_weights=False)
        mn = ln(memory)
        normed, _ = mha(query[None], mn[None], mn[None], need_weights=False)
    mha_tensors = {
        "in_proj_weight": mha.in_proj_weight.detach().contiguous(),
        "in_proj_bias": mha.in_proj_bias.detach().contiguous(),
        "out_proj.weight": mha.out_proj.weight.detach().contiguous(),
        "out_proj.bias": mha.out_proj.bias.detach().contiguous(),
        "memory_norm.weight": ln.weight.detach().contiguous(),
        "memory_norm.bias": ln.bias.detach().contiguous(),
        "query": query.contiguous(),
        "memory": memory.contiguous(),
        "expected": plain[0].contiguous(),
        "expected_normed": normed[0].contiguous(),
    }

    OUT.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().to(torch.bfloat16).contiguous() for k, v in head.state_dict().items()}
    save_file(state, OUT / "joint_head.safetensors")
    (OUT / "joint_head_config.json").write_text(json.dumps(CONFIG, indent=2) + "\n")
    save_file(tensors, OUT / "inputs.safetensors")
    save_file(mha_tensors, OUT / "mha.safetensors")
    doc = {"generator": "t/reference/gen_head_fixtures.py", "config": CONFIG,
           "vocab": VOCAB, "scalars": SCALARS, "heads": CONFIG["heads"], "cases": cases}
    (OUT / "cases.json").write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {len(cases)} cases, {sum(len(c['logits']) for c in cases)} logits, "
          f"{len(state)} head tensors to {OUT}")


if __name__ == "__main__":
    main()
