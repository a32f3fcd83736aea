#!/usr/bin/env python3
"""Seed corpora for the libFuzzer harnesses, from the committed fixtures.

    t/fuzz/seed-corpus.py DIR      (from the repository root)

writes DIR/json, DIR/tokenizer and DIR/request (one file per input, named by
its hash, so running it again adds nothing new).  A request input is one
options byte (see t/fuzz/fuzz_request.c) and the body.
"""
import hashlib
import json
import os
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


def main():
    out = sys.argv[1]
    dirs = {k: os.path.join(out, k) for k in ("json", "tokenizer", "request")}
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
    print("seeded %s: %s" % (out, ", ".join(
        "%s %d" % (k, len(os.listdir(d))) for k, d in dirs.items())))


main()
