#!/usr/bin/env python3
"""gguf-py reads what ngx_clef's GGUF writer writes (engine/model/gguf_write.c).

Runs `build/t/test_gguf --write FILE`, which writes a GGUF with every value
type, arrays of each, an array of arrays and tensors of every type ngx_clef
reads (quantized by ngx_clef's own quantizers), and FILE.json saying what it
holds.  Then reads FILE with gguf-py's GGUFReader and checks:
  - every key, with its type and value (arrays element by element);
  - every tensor: type, shape, the FNV-1a 64 of its bytes, and the FNV-1a
    64 of gguf-py's dequantization of them against that of ngx_clef's
    (t/unit/test_quant.c holds the same on random blocks; this is on the
    quantizers' own output).
Prints one line per check and "N passed, N failed"; exits non-zero on a
failure.  Needs gguf-py (build/llama/venv, see t/bench/cpu-vs-llama.sh):

  make build/t/test_gguf
  build/llama/venv/bin/python t/reference/check_gguf_write.py
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from gguf import GGUFReader, GGUFValueType
from gguf.quants import dequantize


def fnv(b):
    h = 0xcbf29ce484222325
    for x in bytes(b):
        h = ((h ^ x) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def as_text(vtype, v):
    """a scalar as the manifest spells it"""
    if vtype in (GGUFValueType.FLOAT32, GGUFValueType.FLOAT64):
        return "%.17g" % float(v)
    if vtype == GGUFValueType.BOOL:
        return "%d" % int(bool(v))
    return "%d" % int(v)


def field_values(field):
    """(type name, value) of a field as the manifest writes them"""
    t = field.types[0]
    if t == GGUFValueType.STRING:
        return "STRING", bytes(field.parts[field.data[0]]).decode()
    if t != GGUFValueType.ARRAY:
        return t.name, as_text(t, field.parts[field.data[0]][0])
    # parts: key length, key, type, element type, count, elements...
    # (types lists no element type for an empty array)
    elem = GGUFValueType(int(field.parts[3][0]))
    if elem == GGUFValueType.ARRAY:
        return "ARRAY:ARRAY", nested(field.parts, 3)[0]
    vals = []
    for i in field.data:
        part = field.parts[i]
        if elem == GGUFValueType.STRING:
            vals.append(bytes(part).decode())
        else:
            vals.append(as_text(elem, part[0]))
    return "ARRAY:" + elem.name, vals


def nested(parts, i):
    """the array whose element type is parts[i] (its count parts[i + 1]),
    and the index after it: gguf-py's contents() flattens arrays of arrays,
    its parts keep them"""
    elem, n, i = GGUFValueType(int(parts[i][0])), int(parts[i + 1][0]), i + 2
    out = []
    for _ in range(n):
        if elem == GGUFValueType.ARRAY:
            v, i = nested(parts, i)
        elif elem == GGUFValueType.STRING:
            v, i = bytes(parts[i + 1]).decode(), i + 2
        else:
            v, i = as_text(elem, parts[i][0]), i + 1
        out.append(v)
    return out, i


def main():
    ok = bad = 0

    def check(cond, what):
        nonlocal ok, bad
        ok, bad = ok + bool(cond), bad + (not cond)
        print(("ok" if cond else "not ok") + " - " + what)

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "w.gguf")
        subprocess.run(["build/t/test_gguf", "--write", path], check=True)
        man = json.load(open(path + ".json"))
        r = GGUFReader(path)
        fields = {k: f for k, f in r.fields.items() if not k.startswith("GGUF.")}
        check(list(fields) == [kv["key"] for kv in man["kv"]],
              "gguf-py reads the %d keys, in order" % len(man["kv"]))
        for kv in man["kv"]:
            f = fields.get(kv["key"])
            if f is None:
                check(False, "%s is read" % kv["key"])
                continue
            t, v = field_values(f)
            want = kv["value"]
            check(t == kv["type"] and v == want,
                  "%s: %s %r" % (kv["key"], t, v if len(str(v)) < 60 else "..."))
        check(len(r.tensors) == len(man["tensors"]),
              "gguf-py reads the %d tensors" % len(man["tensors"]))
        for t, want in zip(r.tensors, man["tensors"]):
            raw = np.asarray(t.data).view(np.uint8)
            f32 = dequantize(np.asarray(t.data), t.tensor_type).astype("<f4")
            check(t.name == want["name"] and t.tensor_type.name == want["type"]
                  and [int(n) for n in t.shape] == want["ne"]
                  and fnv(raw.tobytes()) == want["raw_fnv"]
                  and fnv(f32.tobytes()) == want["f32_fnv"],
                  "%s: %s %s, bytes and gguf-py's dequantization as ngx_clef's"
                  % (t.name, t.tensor_type.name, [int(n) for n in t.shape]))
    print("%d passed, %d failed" % (ok, bad))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
