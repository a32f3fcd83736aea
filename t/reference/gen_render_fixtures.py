#!/usr/bin/env python3
"""Fixtures for the JSON parser and renderer (engine/json.c, engine/render.c).

Writes, seeded and reproducible:
  t/fixtures/render/docs.jsonl    {"name", "in", "out"}: a JSON text and
                                  render(json.loads(in)), where render is the
                                  encoder's: a str as is, anything else
                                  json.dumps(v, ensure_ascii=False,
                                  separators=(",", ":"), sort_keys=True)
  t/fixtures/render/floats.jsonl  {"bits", "repr"}: a finite double (hex of its
                                  IEEE bits) and Python's repr of it

The JSON texts are written by a serialiser of this script that varies what
json.dumps would keep fixed (whitespace, \\u escapes, surrogate pairs,
number spellings), so the C parser sees many spellings of a value while
Python's json.loads decides what the value is.  Every text stays within the
C parser's stricter rules (no duplicate keys, no lone surrogates, depth <= 64).

Run: build/refenv/bin/python t/reference/gen_render_fixtures.py
"""
import json
import math
import os
import random
import struct
import sys

SEED = 20260217
OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "render")

EDGE_FLOATS = [
    "5e-324", "2.2250738585072014e-308", "1.7976931348623157e308", "1e16",
    "9999999999999998.0", "1e-5", "0.0001", "0.1", "1e22", "1e23",
    "123456789012345680.0", "-0.0", "0.0", "1E5", "1e+05", "2.5e-7",
    "1e-7", "1e5", "0.3", "2.675", "1.5", "100.0", "1e-4", "9.999999999999999e-5",
    "1e15", "1e+16", "12345678901234567890.0", "4.9406564584124654e-324",
    "2.2250738585072011e-308", "1.7976931348623158e308", "9007199254740993.0",
    "0.1000000000000000055511151231257827", "1e-400", "-1e-400", "0e0", "-0e-0",
    "1.0e0", "3.141592653589793", "7.120236347223045e-307", "1e308",
]

EDGE_INTS = [
    "0", "-0", "1", "-1", "9007199254740993", "18446744073709551616",
    "-9223372036854775809", "123456789" * 40, "-" + "987654321" * 33,
    "9" * 4300, "-" + "1" + "0" * 4299,
]

# characters to draw string content from: ASCII, controls, DEL, U+2028/9,
# Latin, CJK, combining marks, astral (emoji, math), BOM, U+FFFF
ALPHABET = (
    [chr(c) for c in range(0x20, 0x7f)] * 3
    + [chr(c) for c in range(0x00, 0x20)]
    + ["\x7f", "\u2028", "\u2029", "\u00e9", "\u00e8", "\u00df", "\u0301",
       "\u4e2d", "\u6587", "\ufeff", "\uffff", "\ufffd", "\U0001f600",
       "\U0001f4a9", "\U0001d11e", "\U00010000", "\U0010ffff", "\u0100",
       "\u07ff", "\u0800", "\"", "\\", "/"]
)

KEY_STEMS = ["", "a", "b", "A", "key", "k\u00e9y", "k\u00e8y", "ke\u0301y",
             "\u00e9", "e", "\U0001f600", "\uffff", "\x00", "a\x00", "a\x00b",
             "state", "z", "\u4e2d", "aa", "ab", "a b", "\u2028", "\x7f"]


def rand_text(r, lo=0, hi=12):
    return "".join(r.choice(ALPHABET) for _ in range(r.randint(lo, hi)))


def rand_key(r):
    if r.random() < 0.5:
        return r.choice(KEY_STEMS)
    return rand_text(r, 0, 8)


def rand_float(r):
    """A float value and a JSON spelling of it (or of a nearby decimal)."""
    kind = r.random()
    if kind < 0.25:
        text = r.choice(EDGE_FLOATS)
        return float(text), text
    if kind < 0.45:
        bits = r.getrandbits(63)
        if bits >> 52 == 0x7ff:
            bits &= ~(1 << 62)
        f = struct.unpack("<d", struct.pack("<Q", bits))[0]
        if r.random() < 0.5:
            f = -f
    elif kind < 0.75:
        f = round(r.uniform(-1000, 1000), r.randint(0, 6)) * 10.0 ** r.randint(-12, 20)
    else:
        # a decimal no float prints as: Python's float() rounds it
        digits = "".join(r.choice("0123456789") for _ in range(r.randint(1, 25)))
        digits = digits.lstrip("0") or "0"
        text = "%s%s.%s" % ("-" if r.random() < 0.3 else "", digits[:1],
                            digits[1:] or "0")
        if r.random() < 0.6:
            text += "%s%s%d" % (r.choice("eE"), r.choice(["", "+", "-"]),
                                r.randint(0, 330))
        if not math.isfinite(float(text)):
            return rand_float(r)                  # the C parser refuses inf
        return float(text), text
    return f, spell_float(r, f)


def spell_float(r, f):
    s = repr(f)
    way = r.random()
    if way < 0.4:
        return s
    if way < 0.5:
        return s.replace("e", "E")
    if way < 0.6:
        return "%.17e" % f
    if way < 0.7:
        return "%.25e" % f
    if way < 0.8 and "e" in s:
        m, e = s.split("e")
        return "%se%s0%s" % (m, e[0], e[1:])            # 1e+016
    if way < 0.9 and "." in s and "e" not in s:
        return s + "0" * r.randint(1, 4)                # 0.50000
    return s


def rand_int(r):
    kind = r.random()
    if kind < 0.15:
        return r.choice(EDGE_INTS[:9])
    if kind < 0.3:
        n = r.randint(20, 400)
        s = str(r.randint(1, 9)) + "".join(r.choice("0123456789") for _ in range(n - 1))
        return ("-" if r.random() < 0.5 else "") + s
    return str(r.randint(-10 ** r.randint(1, 19), 10 ** r.randint(1, 19)))


def ws(r):
    if r.random() < 0.6:
        return ""
    return "".join(r.choice(" \t\n\r") for _ in range(r.randint(1, 3)))


def spell_string(r, s, escape_rate):
    """A JSON string literal for s, each character raw or escaped at random."""
    out = ['"']
    for ch in s:
        c = ord(ch)
        esc = r.random() < escape_rate
        if ch == '"':
            out.append(r.choice(['\\"', "\\u0022"]))
        elif ch == "\\":
            out.append(r.choice(["\\\\", "\\u005c", "\\u005C"]))
        elif c < 0x20:
            short = {8: "\\b", 9: "\\t", 10: "\\n", 12: "\\f", 13: "\\r"}.get(c)
            if short and r.random() < 0.7:
                out.append(short)
            else:
                out.append(r.choice(["\\u%04x", "\\u%04X"]) % c)
        elif ch == "/" and esc:
            out.append("\\/")
        elif esc and c > 0xffff:
            c -= 0x10000
            hexfmt = r.choice(["\\u%04x", "\\u%04X"])
            out.append(hexfmt % (0xd800 + (c >> 10)) + hexfmt % (0xdc00 + (c & 0x3ff)))
        elif esc:
            out.append(r.choice(["\\u%04x", "\\u%04X"]) % c)
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def spell(r, v, escape_rate):
    """A JSON text for v (values are tagged: ("int", text), ("float", text))."""
    if isinstance(v, tuple):
        return v[1]
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, str):
        return spell_string(r, v, escape_rate)
    if isinstance(v, list):
        if not v:
            return "[" + ws(r) + "]"
        return "[" + ",".join(ws(r) + spell(r, x, escape_rate) + ws(r) for x in v) + "]"
    if not v:
        return "{" + ws(r) + "}"
    items = list(v.items())
    return "{" + ",".join(
        ws(r) + spell_string(r, k, escape_rate) + ws(r) + ":" + ws(r)
        + spell(r, x, escape_rate) + ws(r) for k, x in items) + "}"


def rand_value(r, depth, max_depth, spine=False):
    """A random value; along the spine, containers down to max_depth."""
    p = r.random()
    container = depth < max_depth and (spine or p < (0.7 if depth < 2 else 0.3))
    if container:
        n = r.randint(1 if spine else 0, 6 if depth < 3 else 3)
        deep_at = r.randrange(n) if spine else -1
        if r.random() < 0.5:
            return [rand_value(r, depth + 1, max_depth, i == deep_at) for i in range(n)]
        obj = {}
        for i in range(n):
            obj[rand_key(r)] = rand_value(r, depth + 1, max_depth, i == deep_at)
        return obj
    q = r.random()
    if q < 0.1:
        return r.choice([None, True, False])
    if q < 0.35:
        return ("int", rand_int(r))
    if q < 0.65:
        return ("float", rand_float(r)[1])
    return rand_text(r)


def render(v):
    if isinstance(v, str):
        return v
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def deep(depth):
    return "[" * (depth - 1) + '{"a":' + "1" + "}" + "]" * (depth - 1)


def hand_docs():
    docs = [("edge float " + t, t) for t in EDGE_FLOATS]
    docs += [("edge int %d" % i, t) for i, t in enumerate(EDGE_INTS)]
    docs += [("float list", "[" + ",".join(EDGE_FLOATS) + "]"),
             ("int vs float", '[1,1.0,-1,-1.0,0,0.0,-0,-0.0,1e0,10,1E1]'),
             ("literals", "[true,false,null]"),
             ("top string", '"state as plain text"'),
             ("top string escapes", '"line\\nbreak \\"q\\" \\u00e9 \\ud83d\\ude00"'),
             ("top string nul", '"a\\u0000b"'),
             ("top empty string", '""'),
             ("top int", "42"), ("top float", "0.5"), ("top null", " null "),
             ("empty containers", '{"a":[],"b":{},"":[{}]}'),
             ("key order code points",
              '{"\\uffff":1,"\\ud83d\\ude00":2,"\u00e9":3,"e\u0301":4,"z":5,'
              '"a\\u0000":6,"a":7,"":8,"A":9,"\\u007f":10,"\\u0080":11}'),
             ("keys differ only in non-ASCII",
              '{"k\u00e9y":1,"k\u00e8y":2,"k\\u00eay":3,"k\U0001f600y":4}'),
             ("nul keys", '{"\\u0000":1,"\\u0000\\u0000":2,"a\\u0000b":3,"a":4}'),
             ("controls", '"\\u0001\\u001f\\b\\f\\n\\r\\t\\u007f\\u2028\\u2029"'),
             ("controls in list", '["\\u0001\\u001f\\b\\f\\n\\r\\t\\u007f\\u2028\\u2029"]'),
             ("astral raw and escaped", '["\U0001f600","\\ud83d\\ude00","\\uD83D\\uDE00"]'),
             ("solidus", '["/","\\/"]'),
             ("whitespace", ' \t\r\n{ \n"a" :\t[ 1 ,\r2 ] , "b"\n:\n{ } }\n\t '),
             ("nested sort", '{"b":{"d":1,"c":2},"a":[{"z":1,"y":{"x":0,"w":0}}]}'),
             ("depth 64", deep(64)),
             ]
    return docs


def gen_docs(r):
    docs = hand_docs()
    for i in range(320):
        v = rand_value(r, 0, r.randint(0, 11), spine=r.random() < 0.8)
        docs.append(("random %d" % i, spell(r, v, r.choice([0.0, 0.1, 0.5, 1.0]))))
    out = []
    for name, text in docs:
        value = json.loads(text)
        out.append({"name": name, "in": text, "out": render(value)})
    return out


def dbl(bits):
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def gen_floats(r):
    bits = []
    for _ in range(3000):                       # random bit patterns
        b = r.getrandbits(64)
        if (b >> 52) & 0x7ff == 0x7ff:
            continue
        bits.append(b)
    for e in range(1, 0x7ff):                   # every power of two
        bits.append(e << 52)
    for b in (0, 1, 2, 3, 0x000fffffffffffff, 0x0010000000000000, 0x0010000000000001,
              0x7fefffffffffffff, 0x7feffffffffffffe, 0x3ff0000000000001,
              0x3fefffffffffffff):
        bits.append(b)
    for s in EDGE_FLOATS:                       # and their neighbours
        b = struct.unpack("<Q", struct.pack("<d", abs(float(s))))[0]
        bits += [b, b + 1, max(b - 1, 0)]
    seen, out = set(), []
    for b in bits:
        for signed in (b, b | (1 << 63)) if b < (1 << 63) and r.random() < 0.2 else (b,):
            if signed in seen or (signed >> 52) & 0x7ff == 0x7ff:
                continue
            seen.add(signed)
            out.append({"bits": "%016x" % signed, "repr": repr(dbl(signed))})
    return out


def write_jsonl(path, rows):
    with open(path, "w", encoding="ascii") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=True) + "\n")


def main():
    if sys.version_info < (3, 11):
        sys.exit("needs Python >= 3.11 (int max_str_digits, repr as in 3.11)")
    r = random.Random(SEED)
    os.makedirs(OUT_DIR, exist_ok=True)
    docs = gen_docs(r)
    floats = gen_floats(r)
    write_jsonl(os.path.join(OUT_DIR, "docs.jsonl"), docs)
    write_jsonl(os.path.join(OUT_DIR, "floats.jsonl"), floats)
    print("docs: %d, floats: %d" % (len(docs), len(floats)))


if __name__ == "__main__":
    main()
