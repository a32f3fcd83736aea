#!/usr/bin/env python3
"""gguf-py reads what `clef mkmodel --gguf TYPE` writes for Clef Omni.

For each TYPE, `build/clef mkmodel --config t/fixtures/models/omni1.json
--tokenizer t/fixtures/tokenizer/qwen3-omni --seed 21 --gguf TYPE --mmproj`
and the release of the same seed; gguf-py's GGUFReader opens both files and
the checks are:
  - the model: general.architecture "clef-omni", the clef-omni.* keys of
    engine/model/gguf_clef.h with the config's values, the tokenizer's
    tokens; every layer's router ([E][H], F32 in every file, as the
    converter writes it and llama-quantize leaves it), its experts as three 3-D tensors of shape
    [E][rows][cols] (gguf-py's numpy order), the dense layer's ffn_*;
  - the mmproj: clip.vision.is_deepstack_layers true at the DeepStack
    blocks and v.deepstack.<block>.*, the audio tower's clip.audio.* keys
    and a.* / mm.a.* tensors, the conv biases [C, 1, 1];
  - gguf-py's dequantization of every tensor: for F32 every value of the
    release, each expert's slab its release tensor, bit for bit; for the
    block types within the type's error of the release.
Prints one line per check and "N passed, N failed"; exits non-zero on a
failure.

  make build/clef
  build/refenv-omni/bin/python t/reference/check_omni_gguf.py
"""
import json
import pathlib
import subprocess
import sys
import tempfile

import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize
from safetensors.torch import load_file

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLEF = ROOT / "build/clef"
CONFIG = ROOT / "t/fixtures/models/omni1.json"
TOKENIZER = ROOT / "t/fixtures/tokenizer/qwen3-omni"
SEED = 21
TYPES = {"f32": 0.0, "f16": 1e-3, "bf16": 0.0, "q8_0": 0.01, "q4_k_m": 0.12}

passed = failed = 0


def check(ok, what):
    global passed, failed
    print(("ok   " if ok else "FAIL ") + what)
    passed += bool(ok)
    failed += not ok


def value(r, key):
    f = r.fields.get(key)
    if f is None:
        return None
    v = f.contents()
    return v


def release(ckpt):
    out = {}
    for f in sorted(ckpt.glob("model*.safetensors")):
        for k, v in load_file(f).items():
            out[k] = v.float().numpy()      # bf16 and f32: exact
    return out


def read(path):
    r = GGUFReader(path)
    t = {x.name: x for x in r.tensors}
    return r, t


def deq(x):
    v = np.asarray(dequantize(x.data, x.tensor_type), dtype=np.float32)
    return v.reshape(tuple(int(n) for n in reversed(x.shape)))


def main():
    cfg = json.loads(CONFIG.read_text())
    E, H, I = cfg["num_experts"], cfg["hidden_size"], cfg["moe_intermediate_size"]
    L = cfg["num_hidden_layers"]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        subprocess.run([str(CLEF), "mkmodel", "--config", str(CONFIG), "--tokenizer",
                        str(TOKENIZER), "--seed", str(SEED), "--shards", "1", "--out",
                        str(tmp / "rel")], check=True, stdout=subprocess.DEVNULL)
        rel = release(tmp / "rel")
        for typ, tol in TYPES.items():
            m, mm = tmp / f"m.{typ}.gguf", tmp / f"mm.{typ}.gguf"
            subprocess.run([str(CLEF), "mkmodel", "--config", str(CONFIG), "--tokenizer",
                            str(TOKENIZER), "--seed", str(SEED), "--gguf", typ, "--out",
                            str(m), "--mmproj", str(mm)], check=True,
                           stdout=subprocess.DEVNULL)
            r, t = read(m)
            check(value(r, "general.architecture") == "clef-omni"
                  and value(r, "clef-omni.decision.type") == "clef",
                  f"{typ}: general.architecture clef-omni, decision.type clef")
            want = {"embedding_length": H, "block_count": L,
                    "feed_forward_length": cfg["intermediate_size"],
                    "attention.head_count": cfg["num_attention_heads"],
                    "attention.head_count_kv": cfg["num_key_value_heads"],
                    "attention.key_length": cfg["head_dim"],
                    "expert_count": E, "expert_used_count": cfg["num_experts_per_tok"],
                    "expert_feed_forward_length": I, "expert_weights_norm": True,
                    "rope.dimension_sections": cfg["rope_scaling"]["mrope_section"] + [0],
                    "decision.routing_block_count": cfg["head"]["routing_layers"],
                    "decision.block_count": cfg["head"]["layers"],
                    "decision.head_count": cfg["head"]["heads"]}
            bad = [k for k, v in want.items() if value(r, "clef-omni." + k) != v]
            check(not bad, f"{typ}: the clef-omni.* keys of the config {bad}")
            toks = value(r, "tokenizer.ggml.tokens")
            check(toks is not None and "<|audio_pad|>" in toks and "<|image_pad|>" in toks,
                  f"{typ}: tokenizer.ggml.tokens with the Omni media tokens")
            shapes_ok = True
            for layer in range(L):
                dense = layer in cfg.get("mlp_only_layers", [])
                if dense:
                    shapes_ok &= f"blk.{layer}.ffn_up.weight" in t
                    continue
                g = t.get(f"blk.{layer}.ffn_gate_inp.weight")
                shapes_ok &= g is not None and deq(g).shape == (E, H)
                shapes_ok &= g is not None and g.tensor_type.name == "F32"
                for p, shape in (("gate", (E, I, H)), ("up", (E, I, H)), ("down", (E, H, I))):
                    x = t.get(f"blk.{layer}.ffn_{p}_exps.weight")
                    shapes_ok &= x is not None and deq(x).shape == shape
            check(shapes_ok, f"{typ}: routers [E][H] in F32, experts"
                  f" [E][rows][cols] per routed layer, the dense layer's ffn_*")

            # every expert's slab against its release tensor, the rest by name
            worst, n = 0.0, 0
            for layer in range(L):
                if layer in cfg.get("mlp_only_layers", []):
                    continue
                for p in ("gate", "up", "down"):
                    x = deq(t[f"blk.{layer}.ffn_{p}_exps.weight"])
                    for e in range(E):
                        w = rel[f"thinker.model.layers.{layer}.mlp.experts.{e}.{p}_proj.weight"]
                        d = float(np.max(np.abs(x[e] - w))) / max(1e-30, float(np.max(np.abs(w))))
                        worst, n = max(worst, d), n + 1
            check(worst <= tol, f"{typ}: gguf-py's dequantized experts ({n} slabs) within"
                  f" {tol} of the release's (relative {worst:.3g})")

            r2, t2 = read(mm)
            deep = value(r2, "clip.vision.is_deepstack_layers")
            idx = cfg["vision_config"]["deepstack_visual_indexes"]
            check(deep is not None and [i for i, b in enumerate(deep) if b] == idx
                  and all(f"v.deepstack.{i}.fc1.weight" in t2 for i in idx),
                  f"{typ} mmproj: DeepStack blocks {idx} and v.deepstack.<block>.*")
            ac = cfg["audio_config"]
            check(value(r2, "clip.has_audio_encoder") is True
                  and value(r2, "clip.audio.embedding_length") == ac["d_model"]
                  and value(r2, "clip.audio.block_count") == ac["encoder_layers"]
                  and value(r2, "clip.audio.num_mel_bins") == ac["num_mel_bins"]
                  and value(r2, "clip.audio.projector_type") == "qwen3a",
                  f"{typ} mmproj: the audio tower's clip.audio.* keys")
            names = ["a.conv2d.1.weight", "a.conv_out.weight", "a.blk.0.attn_q.weight",
                     "a.blk.0.ln1.weight", "a.blk.0.ffn_down.weight", "a.post_ln.weight",
                     "mm.a.mlp.1.weight", "mm.a.mlp.2.bias"]
            b = t2.get("a.conv2d.1.bias")
            check(all(x in t2 for x in names) and b is not None
                  and deq(b).shape == (ac["downsample_hidden_size"], 1, 1),
                  f"{typ} mmproj: the audio tower's a.* and mm.a.* tensors, conv biases [C, 1, 1]")
            if typ == "f32":
                w = rel["thinker.audio_tower.conv2d2.weight"]
                check(np.array_equal(deq(t2["a.conv2d.2.weight"]), w),
                      "f32 mmproj: a.conv2d.2.weight the release's, bit for bit")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
