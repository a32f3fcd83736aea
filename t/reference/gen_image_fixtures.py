"""Image corpus and the reference processor's output on it.

    build/refenv/bin/python t/reference/gen_image_fixtures.py

Writes t/fixtures/images/:
  corpus/NAME.EXT      generated images (seeded): every format and mode the
                       engine decodes, sizes from 10x10 to 16 MP, aspect
                       ratios around the 200:1 limit, around min/max pixels
  expect/NAME.png      the reference's resized uint8 image (lossless), i.e.
                       round(pixel_values * 127.5 + 127.5) of its patches
  cases.jsonl          one line per image: name, file, content_type,
                       width, height (as loaded, upright), grid [t, h, w],
                       or refused: the reason, and how the reference got it

The reference is transformers' Qwen2VLImageProcessor (torchvision backend,
the one AutoProcessor builds from Clef's preprocessor_config.json), fed the
data URL exactly as the Clef reference passes request["images"]: its
fetch_images() -> load_image_as_tensor() -> torchvision decode_image(RGB,
apply_exif_orientation=True).  Two cases where we differ on purpose
(docs/design/media.md, engine/media/image_decode.h): 16-bit PNGs (the
reference feeds uint16 to a processor made for uint8; expected here from
torchvision's own to_dtype(uint8, scale=True) of its decode), and animated
WebP (refused by the reference; expected here from Pillow's first frame,
RGB).
"""
import base64
import io
import json
import math
import os
import sys

import numpy as np
import torch
from PIL import Image
from torchvision.io import ImageReadMode, decode_image
from torchvision.transforms.v2 import functional as tvF
from transformers.models.qwen2_vl.image_processing_qwen2_vl import Qwen2VLImageProcessor

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "images")
RNG = np.random.default_rng(20261203)


def processor():
    return Qwen2VLImageProcessor(
        size={"shortest_edge": 65536, "longest_edge": 16777216}, patch_size=16,
        temporal_patch_size=2, merge_size=2, image_mean=[0.5] * 3, image_std=[0.5] * 3)


def scene(w, h, noise=8.0):
    """A smooth picture (gradients, a disc, stripes) with a little noise:
    compresses well, still exercises every filter tap."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    r = 128 + 100 * np.sin(x / max(w, 1) * 6.0) * np.cos(y / max(h, 1) * 4.0)
    g = 255 * (x + y) / max(w + h, 1)
    cx, cy = w * 0.6, h * 0.4
    b = np.where((x - cx) ** 2 + (y - cy) ** 2 < (min(w, h) * 0.3) ** 2, 220.0, 40.0)
    b += 30 * ((x // max(w // 16, 1)) % 2)
    img = np.stack([r, g, b], axis=-1)
    if noise:
        img += RNG.normal(0, noise, img.shape)
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def exif_bytes(orientation):
    ex = Image.Exif()
    ex[0x0112] = orientation
    return ex.tobytes()


def save(name, ext, writer):
    path = os.path.join(ROOT, "corpus", f"{name}.{ext}")
    buf = io.BytesIO()
    writer(buf)
    data = buf.getvalue()
    with open(path, "wb") as f:
        f.write(data)
    return data


def make_corpus():
    """(name, ext, content_type, bytes, note) for every corpus image."""
    out = []

    def add(name, ext, img_or_writer, **kw):
        ctype = {"png": "image/png", "jpg": "image/jpeg", "webp": "image/webp"}[ext]
        fmt = {"png": "PNG", "jpg": "JPEG", "webp": "WEBP"}[ext]
        if callable(img_or_writer):
            data = save(name, ext, img_or_writer)
        else:
            data = save(name, ext, lambda b: img_or_writer.save(b, fmt, **kw))
        out.append((name, ext, ctype, data))

    rgb = lambda w, h, n=8.0: Image.fromarray(scene(w, h, n), "RGB")

    # PNG modes
    add("png_rgb_64x48", "png", rgb(64, 48))
    a = scene(100, 80)
    alpha = (np.arange(100)[None, :] * 2.5).astype(np.uint8).repeat(80, 0)
    add("png_rgba_100x80", "png", Image.fromarray(np.dstack([a, alpha]), "RGBA"))
    pal = rgb(50, 50).quantize(colors=64)
    pal.info["transparency"] = 3
    add("png_palette_trns_50x50", "png", pal, transparency=3)
    add("png_palette_4bit_70x30", "png", rgb(70, 30).quantize(colors=16), bits=4)
    add("png_gray_90x60", "png", rgb(90, 60).convert("L"))
    add("png_gray_alpha_60x90", "png", Image.fromarray(np.dstack([scene(60, 90)[..., 0], scene(60, 90)[..., 1]]), "LA"))
    add("png_gray_1bit_77x41", "png", rgb(77, 41).convert("1"))
    g16 = (scene(80, 64, 0)[..., 1].astype(np.uint16) * 257 + RNG.integers(0, 257, (64, 80))).astype(np.uint16)
    add("png_gray16_80x64", "png", Image.fromarray(g16))
    add("png_rgb_120x90", "png", rgb(120, 90))
    add("png_exif6_96x64", "png", rgb(96, 64), exif=exif_bytes(6))
    add("png_rgb_333x777", "png", rgb(333, 777))

    # JPEG
    add("jpg_q90_444_200x150", "jpg", rgb(200, 150), quality=90, subsampling=0)
    add("jpg_q75_420_257x193", "jpg", rgb(257, 193), quality=75, subsampling=2)
    add("jpg_422_160x120", "jpg", rgb(160, 120), quality=85, subsampling=1)
    add("jpg_progressive_300x200", "jpg", rgb(300, 200), quality=80, progressive=True)
    add("jpg_gray_128x96", "jpg", rgb(128, 96).convert("L"), quality=90)
    add("jpg_cmyk_64x64", "jpg", rgb(64, 64).convert("CMYK"), quality=95)
    for o in range(2, 9):
        add(f"jpg_exif{o}_120x80", "jpg", rgb(120, 80), quality=92, exif=exif_bytes(o))
    add("jpg_3000x5000", "jpg", rgb(3000, 5000, 2.0), quality=60)

    # WebP
    add("webp_lossy_180x120", "webp", rgb(180, 120), quality=80)
    add("webp_lossless_96x96", "webp", rgb(96, 96), lossless=True)
    add("webp_alpha_lossy_100x70", "webp", Image.fromarray(np.dstack([scene(100, 70), alpha[:70, :100]]), "RGBA"), quality=85)
    frames = [rgb(64, 48), Image.fromarray(255 - scene(64, 48), "RGB")]
    add("webp_animated_64x48", "webp", lambda b: frames[0].save(b, "WEBP", save_all=True, append_images=frames[1:], duration=100, lossless=True))

    # sizes, aspect ratios, pixel bounds
    add("size_10x10", "png", rgb(10, 10))
    add("size_11x13", "png", rgb(11, 13))
    add("aspect_10x2000", "png", rgb(2000, 10))          # exactly 200:1
    add("aspect_2000x10", "png", rgb(10, 2000))
    add("aspect_20x3990", "png", rgb(3990, 20))
    add("aspect_10x2001", "png", rgb(2001, 10))          # refused: over 200:1
    add("minpix_255x256", "png", rgb(256, 255))
    add("minpix_256x256", "png", rgb(256, 256))
    add("minpix_257x256", "png", rgb(256, 257))
    add("minpix_240x260", "png", rgb(260, 240))
    add("maxpix_4096x4096", "jpg", rgb(4096, 4096, 2.0), quality=50)
    add("maxpix_4095x4097", "jpg", rgb(4097, 4095, 2.0), quality=50)
    add("maxpix_4100x4100", "jpg", rgb(4100, 4100, 0.0), quality=30)   # refused: over 16 Mi pixels
    add("big_3500x4700", "png", rgb(4700, 3500, 0.0))
    add("odd_1x300", "png", rgb(300, 1))                 # aspect 300: refused
    add("odd_17x3333", "webp", rgb(17, 3333), quality=70)
    return out


def reference_tensor(name, ctype, data):
    """The uint8 CHW tensor the reference resizes, or (None, reason)."""
    url = f"data:{ctype};base64," + base64.b64encode(data).decode()
    ip = processor()
    try:
        t = ip.fetch_images([url])[0]
    except Exception as e:  # the animated WebP
        if "Animated webp" not in str(e):
            raise
        im = Image.open(io.BytesIO(data))
        im.seek(0)
        t = torch.from_numpy(np.asarray(im.convert("RGB")).copy()).permute(2, 0, 1)
        return t, "pillow-first-frame (reference refuses: %s)" % str(e).split("\n")[-1][-40:]
    if t.dtype == torch.uint16:
        return tvF.to_dtype(t, torch.uint8, scale=True), "uint16 scaled to uint8"
    return t, "reference"


def main():
    os.makedirs(os.path.join(ROOT, "corpus"), exist_ok=True)
    os.makedirs(os.path.join(ROOT, "expect"), exist_ok=True)
    corpus = make_corpus()
    ip = processor()
    lines = []
    for name, ext, ctype, data in corpus:
        case = {"name": name, "file": f"corpus/{name}.{ext}", "content_type": ctype}
        t, how = reference_tensor(name, ctype, data)
        case["height"], case["width"] = int(t.shape[1]), int(t.shape[2])
        case["how"] = how
        if t.shape[1] * t.shape[2] > 16 * 1024 * 1024:
            case["refused"] = "image_too_many_pixels"
        elif max(t.shape[1:]) / min(t.shape[1:]) > 200:
            case["refused"] = "image_aspect_ratio"
        if "refused" in case:
            lines.append(case)
            print(name, case["refused"], file=sys.stderr)
            continue
        out = ip([t], return_tensors="pt")
        pv, grid = out["pixel_values"], out["image_grid_thw"][0].tolist()
        gh, gw = grid[1], grid[2]
        # undo the patch flattening: rows (gh/2, gw/2, 2, 2) x (3, 2, 16, 16)
        p = pv.reshape(gh // 2, gw // 2, 2, 2, 3, 2, 16, 16)[:, :, :, :, :, 0]
        img = p.permute(0, 2, 5, 1, 3, 6, 4).reshape(gh * 16, gw * 16, 3)
        u8 = torch.round(img * 127.5 + 127.5)
        assert torch.equal((u8 - 127.5) / 127.5, img), name   # exactly invertible
        Image.fromarray(u8.to(torch.uint8).numpy(), "RGB").save(
            os.path.join(ROOT, "expect", f"{name}.png"), optimize=True)
        case["grid"] = grid
        lines.append(case)
        print(name, grid, how, file=sys.stderr)
    with open(os.path.join(ROOT, "cases.jsonl"), "w") as f:
        for c in lines:
            f.write(json.dumps(c, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
