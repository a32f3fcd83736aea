#!/usr/bin/env python3
"""Seed corpora for the libFuzzer harnesses, from the committed fixtures.

    t/fuzz/seed-corpus.py DIR      (from the repository root)

writes DIR/json, DIR/tokenizer, DIR/request and DIR/gguf (one file per
input, named by its hash, so running it again adds nothing new).  A request
input is one options byte (see t/fuzz/fuzz_request.c) and the body; a gguf
input a small GGUF file made here (every value type, nested arrays, tensors
of each type the reader takes, another alignment).
"""
import hashlib
import json
import os
import random
import struct
import sys

FIX = "t/fixtures"


def lines(path):
    with open(os.path.join(FIX, path), encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def put(d, data):
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    name = hashlib.sha1(data).hexdigest()
    path = os.path.join(d, name)
    if not os.path.exists(path):
        with open(path, "wb") as f:
            f.write(data)


# ---- GGUF seeds --------------------------------------------------------

# value type -> struct format (gguf.h: UINT8 0 ... FLOAT64 12)
SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "B",
           10: "Q", 11: "q", 12: "d"}
# GGML type -> (values, bytes) per block, for the types the reader takes
BLOCKS = {0: (1, 4), 1: (1, 2), 30: (1, 2), 2: (32, 18), 3: (32, 20),
          6: (32, 22), 7: (32, 24), 8: (32, 34), 12: (256, 144),
          13: (256, 176), 14: (256, 210),
          # read only: Q2_K, Q3_K, the i-quants, TQ1_0, TQ2_0, MXFP4, NVFP4
          10: (256, 84), 11: (256, 110), 16: (256, 66), 17: (256, 74),
          18: (256, 98), 19: (256, 50), 20: (32, 18), 21: (256, 110),
          22: (256, 82), 23: (256, 136), 29: (256, 56), 34: (256, 54),
          35: (256, 66), 39: (32, 17), 40: (64, 36)}


def gstr(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def gvalue(t, v):
    if t == 8:
        return gstr(v)
    if t == 9:
        elem, items = v
        body = b"".join(gvalue(elem, x) for x in items)
        return struct.pack("<IQ", elem, len(items)) + body
    return struct.pack("<" + SCALARS[t], v)


def gguf(kvs, tensors, alignment=32, rng=None):
    """kvs: [(key, type, value)]; tensors: [(name, ggml type, ne)]"""
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for key, t, v in kvs:
        out += gstr(key) + struct.pack("<I", t) + gvalue(t, v)
    offset, datas = 0, []
    for name, t, ne in tensors:
        per, size = BLOCKS[t]
        rows = 1
        for n in ne[1:]:
            rows *= n
        nbytes = ne[0] // per * size * rows
        out += gstr(name) + struct.pack("<I", len(ne))
        out += b"".join(struct.pack("<Q", n) for n in ne)
        out += struct.pack("<IQ", t, offset)
        datas.append(bytes(rng.randrange(256) for _ in range(nbytes)))
        offset += (nbytes + alignment - 1) // alignment * alignment
    out += b"\0" * (-len(out) % alignment)
    for d in datas:
        out += d + b"\0" * (-len(d) % alignment)
    return out


def gguf_seeds():
    rng = random.Random(20)
    kvs = [("general.architecture", 8, "clef"), ("clef.block_count", 4, 4),
           ("u8", 0, 200), ("i8", 1, -5), ("u16", 2, 60000), ("i16", 3, -3),
           ("i32", 5, -70000), ("f32", 6, 0.5), ("bool", 7, 1),
           ("u64", 10, 1 << 40), ("i64", 11, -(1 << 40)), ("f64", 12, 2.5),
           ("tokens", 9, (8, ["a", "bc", "\u00e9"])),
           ("types", 9, (5, [1, 3, 4])),
           ("nested", 9, (9, [(4, [1, 2]), (8, ["x"])]))]
    yield gguf(kvs, [("a", 0, [4, 2]), ("b", 1, [8]), ("c", 30, [2, 2, 2])],
               rng=rng)
    yield gguf(kvs[:2], [("q%d" % t, t, [per, 2])
                         for t, (per, _) in sorted(BLOCKS.items())
                         if per > 1], rng=rng)
    yield gguf(kvs[:1] + [("general.alignment", 4, 64)],
               [("x", 8, [64, 1, 1, 2]), ("y", 0, [3])], alignment=64, rng=rng)
    yield gguf([], [], rng=rng)


def main():
    out = sys.argv[1]
    dirs = {k: os.path.join(out, k)
            for k in ("json", "tokenizer", "request", "gguf")}
    for d in dirs.values():
        os.makedirs(d, exist_ok=True)

    bodies = [c["body"] for c in lines("encode/cases.jsonl")]
    docs = [c["in"] for c in lines("render/docs.jsonl")]
    floats = [c["repr"] for c in lines("render/floats.jsonl")][:200]
    texts = []
    for p in ("tokenizer/trained/cases.jsonl", "tokenizer/qwen3/cases.jsonl",
              "tokenizer/edge/cases.jsonl", "tokenizer/regex.jsonl"):
        texts += [c["text"] for c in lines(p)]

    for x in bodies + docs + floats:
        put(dirs["json"], x)
    for x in texts + bodies[:20]:
        put(dirs["tokenizer"], x)
    # every body with the default options, and a spread of the others
    for i, b in enumerate(bodies):
        put(dirs["request"], b"\0" + b.encode())
        put(dirs["request"], bytes([(i * 37 + 1) & 0xff]) + b.encode())
    for g in gguf_seeds():
        put(dirs["gguf"], g)
    print("seeded %s: %s" % (out, ", ".join(
        "%s %d" % (k, len(os.listdir(d))) for k, d in dirs.items())))


main()
