#!/usr/bin/env python3
"""Fixtures for the byte-level BPE tokenizer (engine/tokenizer.c).

Writes, with ids from Hugging Face `tokenizers` (add_special_tokens=False):
  t/fixtures/tokenizer/qwen3/cases.jsonl      texts for the Qwen3 tokenizer beside it
  t/fixtures/tokenizer/trained/tokenizer.json a small byte-level BPE trained here
  t/fixtures/tokenizer/trained/cases.jsonl    texts for it
  t/fixtures/tokenizer/edge/tokenizer.json    the trained one, reshaped to reach
                                              the rarer tokenizer.json features
  t/fixtures/tokenizer/edge/cases.jsonl       texts for it
  t/fixtures/tokenizer/regex.jsonl            Split(pattern, "isolated") pieces
                                              of texts, for the translation of
                                              Oniguruma patterns to PCRE2
  t/fixtures/tokenizer/unicode.json           per code point (those assigned in
                                              Python's Unicode version): what
                                              single-character patterns match,
                                              the word characters of single_word,
                                              and NFC
Each cases.jsonl line is {"text": ..., "ids": [...]}.  Deterministic (seeded).

Run from the repository root:
  build/refenv/bin/python t/reference/gen_tokenizer_fixtures.py [--qwen3 DIR]
"""
import argparse
import json
import os
import random
import unicodedata

from tokenizers import (AddedToken, Regex, Tokenizer, decoders, models,
                        normalizers, pre_tokenizers, trainers)

OUT = "t/fixtures/tokenizer"

# ---- text pools -----------------------------------------------------------

MULTILINGUAL = [
    "我们今天去公园散步，天气非常好。",
    "人工智能正在改变世界，但也带来了新的挑战：隐私、安全与公平。",
    "東京は日本の首都です。ひらがなとカタカナ、そして漢字を使います。",
    "ｶﾀｶﾅ ﾊﾝｶｸ と　全角スペース",
    "안녕하세요, 만나서 반갑습니다. 한국어 문장입니다.",
    "مرحبا بالعالم، كيف حالك اليوم؟",
    "اللُّغَةُ العَرَبِيَّةُ جَمِيلَةٌ",
    "שלום עולם, מה שלומך?",
    "नमस्ते दुनिया, आप कैसे हैं? क्षत्रिय ज्ञान",
    "আমি বাংলায় গান গাই।",
    "வணக்கம் உலகம்",
    "నమస్కారం ప్రపంచం",
    "ಕನ್ನಡ ಭಾಷೆ",
    "สวัสดีครับ ยินดีต้อนรับสู่ประเทศไทย",
    "ສະບາຍດີ",
    "សួស្តី​ពិភពលោក",
    "မင်္ဂလာပါ",
    "ආයුබෝවන්",
    "Привет, мир! Как дела? Ёжик в тумане.",
    "Ґанок, їжак, є, і — українська абетка.",
    "Γειά σου Κόσμε· ΤΕΛΟΣ, ς σ Σ, άέήίόύώ ΐΰ",
    "Բարեւ աշխարհ",
    "გამარჯობა მსოფლიო",
    "Tiếng Việt có dấu: ắ ằ ẳ ẵ ặ ơ ư đ",
    "İstanbul'da ıslak ığdır; I ı İ i",
    "Straße, Grüße, ÄÖÜ äöü ß ẞ",
    "L'été dernier, j'ai vu « ça » à l'hôtel.",
    "¿Dónde está el niño? ¡Olé!",
    "Zażółć gęślą jaźń",
    "Příliš žluťoučký kůň úpěl ďábelské ódy",
    "ሰላም ለዓለም",
    "ᠮᠣᠩᠭᠣᠯ ᠪᠢᠴᠢᠭ᠎ᠡ",
    "བོད་ཡིག",
    "ꦲꦏ꧀ꦱꦫꦗꦮ",
    "ᏣᎳᎩ ᎦᏬᏂᎯᏍᏗ",
    "𐌰𐌱𐌲 𝔾𝕠𝕠𝕕 𝕞𝕠𝕣𝕟𝕚𝕟𝕘 𝐀𝐁𝐂",
    "ⲁⲃⲅ ꙮ ᚠᚢᚦ",
]

EMOJI = [
    "😀", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇫🇷🇯🇵🇺🇸", "❤️", "🧑🏿‍🚀", "1️⃣", "#️⃣",
    "🏴󠁧󠁢󠁳󠁣󠁴󠁿", "👩‍❤️‍💋‍👨", "🤷‍♀️", "😂😂😂", "🙏", "✨🎉🥳", "☕", "⌚",
    "🀄", "🫠", "👁️‍🗨️", "🐈‍⬛",
]

COMBINING = [
    "e\u0301", "cafe\u0301", "a\u0308\u0304", "\u1100\u1161\u11a8",
    "\u1112\u1161\u11ab\u1100\u1173\u11af", "A\u030a", "\u212b", "\uf900",
    "o\u0323\u0302", "o\u0302\u0323", "\u0344", "\u0958", "\u2126", "ﬁ ﬂ",
    "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e",
    "\u0301start", "n\u0303o\u0303", "\u00e9\u0301", "\u1e9b\u0323",
    "\u0041\u0301\u0328", "\u0915\u093c", "\u09cb", "\u0b47\u0b3e",
    "\u3099", "か\u3099", "ﾊ\uff9f", "\u05d0\u05b7", "i\u0307", "\u01c4\u01c5",
]

CONTROL = [
    "\x00", "\x01\x02\x03", "\x07", "\x08", "\x0b", "\x0c", "\x1b[31mred\x1b[0m",
    "\x7f", "\x85", "\x9f", "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff",
    "\u00ad", "\u180e", "\u061c", "\u202e", "\u2066", "\x1c\x1d\x1e\x1f",
    "\ufffd", "\uffff", "\U0010fffd", "\ue000",
]

SPACES = [
    " ", "  ", "   ", "    ", " " * 9, "\t", "\t\t", "\n", "\n\n", "\n\n\n",
    "\r\n", "\r\n\r\n", "\r", " \n", "\n ", " \t \n", "\t \r\n  ", "\u00a0",
    "\u00a0\u00a0", "\u2028", "\u2029", "\u3000", "\u3000\u3000", "\u2003",
    "\u1680", "\u205f", "\u202f", "\u2009\u200a", " \u00a0 ", "\u0085",
    "\n\u3000", "\x0b\x0c", " \x1c ",
]

CODE = [
    "def f(x):\n    return x ** 2  # square\n",
    "for (int i = 0; i < n; i++) {\n\tsum += a[i];\n}\n",
    "const add = (a, b) => a + b;\nconsole.log(`sum: ${add(1, 2)}`);",
    "fn main() {\n    let v: Vec<u8> = vec![1, 2, 3];\n    println!(\"{:?}\", v);\n}",
    "#!/bin/sh\nset -eu\nfor f in *.c; do gcc -O2 -c \"$f\"; done\n",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name DESC;",
    "<div class=\"x\"><a href='/p?a=1&amp;b=2'>link</a></div>",
    "all: build/clef\n\tcc -o $@ $^ -lm\n",
    "x = re.compile(r'^\\s*(\\w+)\\s*=\\s*\"([^\"]*)\"$')",
    "if (a && b || !c) { return a->b[0] >> 2; } else { i++; j--; }",
    "    \tmixed = [1,2,3]\r\n\treturn {'k': v for k, v in d.items()}",
    "/* comment */ // another\n#include <stdio.h>\nint main(void){return 0;}",
    "$ git commit -m 'fix: handle \\r\\n'",
    "λx. x + 1 ≤ ∞ ≠ ∅ ∀y∈ℝ → ∃z",
    "{{ template }} {% if x %}{{ x | upper }}{% endif %}",
]

NUMBERS = [
    "12345678901234567890", "3.14159265358979", "1,000,000", "0x1F2E3D", "1e-7",
    "-0.0", "2024-05-09T07:35:25Z", "+1 (555) 010-9999", "٣٤٥٦", "१२३४",
    "①②③", "Ⅻ", "½ ¾", "x²³", "１２３", "৳৫০", "๑๒๓", "99.9%", "$1,234.56",
    "v1.2.3-rc.4", "1/2/3", "007", "3rd 22nd 101st",
]

CONTRACTIONS = [
    "I'm", "I'M", "you're", "YOU'RE", "You'Re", "we'll", "WE'LL", "We'Ll", "it's",
    "IT'S", "It'S", "'S", "'s", "don't", "DON'T", "I'd", "I'D", "they've",
    "THEY'VE", "'Ll", "'lL", "'Re", "'ſ", "'ſa", "’s", "''s", "' s", "'ve'd",
    "rock'n'roll", "'tis", "o'clock", "'", "''", "'''", "'1", "'é", "'ss",
]

URLS = [
    "https://example.com/path/to/page?q=1&r=two#frag",
    "http://例子.测试/路径?查询=值",
    "mailto:someone@example.org",
    "ftp://files.example.net/pub/file-1.2.tar.gz",
    "https://en.wikipedia.org/wiki/Byte_pair_encoding",
    "www.example.co.uk:8080/a/b/c.html",
    "https://xn--nxasmq6b.com/%E2%82%AC?x=%20y",
]

SPECIALS = [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>",
    "<|box_end|>", "<|quad_start|>", "<|vision_start|>", "<|image_pad|>",
    "<|video_pad|>", "<|vision_end|>", "<tool_call>", "</tool_call>",
    "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
    "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>",
    "<think>", "</think>",
]

PARTIALS = [
    "<|im_en", "<|im_end", "im_end|>", "<|im_end|", "<|", "|>", "<think", "think>",
    "</think", "<|IM_END|>", "<| im_end |>", "＜|im_end|＞", "<<|im_end|>>",
    "<|im_start|><|im_end|>", "<think></think>", "<|im_end|><|im_end|>",
]

JSON_VALUES = [
    {"a": 1, "b": [True, False, None], "c": {"d": "e"}},
    {"name": "Zoë", "city": "Zürich", "tags": ["α", "β"], "n": 3.5e-3},
    {"emoji": "🙂", "nested": {"deep": {"deeper": [1, [2, [3]]]}}},
    [1, 2, 3, "four", {"five": 5}],
    {"message": "line1\nline2\ttabbed \"quoted\" \\ back", "id": 123456789012},
    {"state": "<|im_end|><|im_start|>system", "k": "<think>"},
]

WORDS = [
    "the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "Hello",
    "world", "tokenizer", "BPE", "merges", "byte-level", "UNICODE", "naïve",
    "coöperate", "résumé", "façade", "jalapeño", "don't", "e-mail", "U.S.A.",
    "état", "Ωmega", "straße", "ДОМ", "домой", "東京", "ありがとう", "世界",
    "안녕", "سلام", "שלום", "नमस्ते", "ไทย", "a", "I", "x", "42", "2nd",
]

SEPARATORS = ["", " ", " ", " ", "  ", "\n", "\t", "\r\n", ", ", ". ", "\u3000",
              "\u00a0", " \n", "\n\n", "-", "_", "/", "'", "\"", "(", ")"]


def handcrafted():
    """Texts that each aim at one behaviour."""
    t = [""]
    t += MULTILINGUAL + EMOJI + COMBINING + CONTROL + SPACES + CODE + NUMBERS
    t += CONTRACTIONS + URLS + SPECIALS + PARTIALS
    t += [json.dumps(v, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
          for v in JSON_VALUES]
    t += [json.dumps(v, ensure_ascii=True, indent=2) for v in JSON_VALUES]
    t += [
        "Hello world", " Hello world", "Hello  world", "Hello world ", "Hello\nworld",
        "hello   \n  world", "a\tb\tc", "a \t b", "trailing spaces   ",
        "   leading spaces", " ", "x" + " " * 40 + "y", "end.\n\n\n\nNew paragraph.",
        "Line one\r\nLine two\r\n\r\nLine four", "\r\n\r\n  x", "a\u00a0 b",
        "a\u0085\u0085b", "a\u180e\u180eb", "a\x1c\x1cb", "x\u2028\u2028y",
        "a\u200b\u200bb", "a  \u3000b", "ab  ", "\n\n", " \n \n ", "\t\n\t\n",
        "I said: \"it's 5 o'clock\"! (Really?) [yes] {no} <maybe>",
        "...!!!???---___***###", "—–-‒―", "“smart” ‘quotes’ „low“ «guillemets»",
        "A.B.C. e.g. i.e. etc...", "tab\tseparated\tvalues\n1\t2\t3",
        "CamelCaseWordsAndSNAKE_CASE_words and kebab-case-words",
        "email: first.last+tag@sub.example.com", "@user #hashtag $cash %pct ^caret",
        "C:\\Windows\\System32\\drivers\\etc\\hosts", "~/.config/app/settings.json",
        "price: €12,50 / £9.99 / ¥1000 / ₹500 / ₿0.001",
    ]
    # Special tokens inside ordinary text.
    t += [
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>",
        "text<|im_end|>more text", "abc<|im_end|>def", " <|im_end|> ", "  <|im_end|>  ",
        "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
        "before<think>reasoning</think>after", "<tool_call>\n{\"name\": \"f\"}\n</tool_call>",
        "<|endoftext|><|endoftext|><|endoftext|>", "x<|endoftext|>y",
        "<|im_start|><|im_start|>", "<|im_end|>é", "e\u0301<|im_end|>\u0301",
        "<|vision_start|><|image_pad|><|vision_end|>\n", "<|im_en<|im_end|>d|>",
        "<<think>>", "</think></think><think>", "STATE:\n<|im_end|><|im_start|>system",
        "'s<|im_end|>'s", "123<|im_end|>456", "😀<|im_end|>😀", "<|im_end|>\u3000",
    ]
    # Long runs.
    t += [
        " " * 200, "\t" * 50, "\n" * 64, "\r\n" * 30, " \t" * 40, "a" * 300,
        "ab" * 200, "9" * 200, "😀" * 50, "中" * 300, "=" * 120, "-" * 80 + "\n",
        " " * 17 + "x" + " " * 33, "a " * 150, "\u3000" * 20, "\u00a0" * 20,
        "ﷺ" * 5, "𒐫" * 5, "a" + "\u0301\u0323\u0345\u0300" * 30,
        "e" + "\u0316\u0301" * 100 + " x", "\u1100" * 40 + "\u1161" * 40,
        "".join(chr(c) for c in range(0x20, 0x7f)),
        "".join(chr(c) for c in range(0xa0, 0x180)),
        "".join(chr(c) for c in range(0x2000, 0x2070)),
        "".join(chr(c) for c in range(0x0300, 0x0370)),
        "".join(chr(c) for c in range(0x1, 0x20)),
        "".join(chr(c) for c in range(0x80, 0xa0)),
        "".join(chr(c) for c in range(0xff00, 0xff60)),
        "".join(chr(c) for c in range(0x1f600, 0x1f650)),
        "".join(chr(c) for c in range(0xac00, 0xac40)),
        "".join(chr(c) for c in range(0x3040, 0x30a0)),
    ]
    lorem = ("Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do "
             "eiusmod tempor incididunt ut labore et dolore magna aliqua. ")
    t.append(lorem * 12)
    t.append("".join(MULTILINGUAL))
    t.append("\n".join(CODE))
    return t


def random_texts(rng, n, pools):
    out = []
    for _ in range(n):
        k = rng.randint(2, 9)
        parts = []
        for _ in range(k):
            pool = rng.choice(pools)
            frag = rng.choice(pool)
            if not isinstance(frag, str):
                frag = json.dumps(frag, ensure_ascii=rng.random() < 0.3)
            if rng.random() < 0.15 and len(frag) > 3:
                a = rng.randrange(len(frag))
                frag = frag[a:a + rng.randint(1, 12)]
            parts.append(frag)
            parts.append(rng.choice(SEPARATORS))
        text = "".join(parts)
        if rng.random() < 0.1:
            text = text.upper()
        out.append(text)
    return out


def write_cases(path, tok, texts):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    seen = set()
    n = 0
    with open(path, "w", encoding="utf-8") as f:
        for text in texts:
            if text in seen:
                continue
            seen.add(text)
            ids = tok.encode(text, add_special_tokens=False).ids
            f.write(json.dumps({"text": text, "ids": ids}, ensure_ascii=False))
            f.write("\n")
            n += 1
    print(f"{path}: {n} cases")


# ---- the trained tokenizer ------------------------------------------------

TRAINED_ADDED = [
    # content, special, lstrip, rstrip, normalized, single_word
    ("<|endoftext|>", True, False, False, False, False),
    ("<|im_start|>", True, False, False, False, False),
    ("<|im_end|>", True, False, False, False, False),
    ("<mask>", True, True, False, False, False),
    ("[SEP]", True, False, True, False, False),
    ("<pad>", True, True, True, False, False),
    ("<tool>", False, False, False, False, False),
    ("café", False, False, False, True, False),
    ("Ångström", False, True, True, True, False),
    ("<br>", False, False, True, True, False),
    ("foo", False, False, False, False, True),
    ("NOTE:", False, True, False, True, True),
    ("<|im", False, False, False, False, False),
]


def train_corpus(rng):
    lines = []
    pools = [MULTILINGUAL, CODE, WORDS, NUMBERS, CONTRACTIONS, URLS, EMOJI, COMBINING]
    for _ in range(3000):
        lines.append(" ".join(rng.choice(rng.choice(pools)) for _ in range(rng.randint(3, 12))))
    lines += MULTILINGUAL * 5 + CODE * 5
    return lines


def build_trained(rng):
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.Sequence([normalizers.NFC()])
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=3000, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=["<|endoftext|>"])
    tok.train_from_iterator(train_corpus(rng), trainer=trainer)
    for content, special, lstrip, rstrip, normalized, single in TRAINED_ADDED:
        at = AddedToken(content, single_word=single, lstrip=lstrip, rstrip=rstrip,
                        normalized=normalized, special=special)
        if special:
            tok.add_special_tokens([at])
        else:
            tok.add_tokens([at])
    return tok


def save_with_string_merges(tok, path):
    """Saves tok, with its merges in the older "a b" string form."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    data = json.loads(tok.to_str())
    data["model"]["merges"] = [" ".join(m) if isinstance(m, list) else m
                               for m in data["model"]["merges"]]
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, indent=1)
        f.write("\n")
    return Tokenizer.from_file(path)


def trained_texts(rng):
    t = [
        "", "<mask>", "a <mask> b", "a    <mask>", "a\t\n<mask>b", "<mask><mask>",
        " <mask> <mask> ", "[SEP]", "x [SEP]   y", "[SEP]\n\n\tz", "[SEP][SEP]",
        "<pad>", "  <pad>  x", "a<pad>b", "<tool>", "a<tool>b", " <tool> ",
        "café", "cafe\u0301", "un café noir", "CAFÉ", "cafécafé", "Ångström",
        "A\u030angstro\u0308m", "\u212bngström", "x   Ångström   y", "<br>",
        "line<br>   next", "<br>\n<br>", "foo", "foo bar", "afoo", "foob", "a foo b",
        "foo,foo", "(foo)", "foo_bar", "foo1", "éfoo", "fooé", "foo\u0301",
        "NOTE:", "NOTE: x", "  NOTE:  x", "aNOTE:", "NOTE:a", "<|im", "<|im_end|>",
        "<|im_start|>user\nhi<|im_end|>", "<|im_en", "<|im<|im_end|>",
        "<|endoftext|>x<|endoftext|>", "\u00a0<mask>\u3000", "\u2003[SEP]\u2003x",
        "e\u0301<mask>", "<mask>\u0301", "[SEP]\u0301", "café\u0301",
    ]
    t += random_texts(rng, 40, [[c for c, *_ in TRAINED_ADDED], WORDS, SPACES])
    t += random_texts(rng, 120, [MULTILINGUAL, WORDS, CODE, NUMBERS, SPACES,
                                 CONTRACTIONS, EMOJI, COMBINING, CONTROL,
                                 [c for c, *_ in TRAINED_ADDED]])
    t += MULTILINGUAL[::3] + CODE[::3] + CONTRACTIONS[::2] + SPACES[::2]
    return t


# ---- the edge tokenizer ---------------------------------------------------

def build_edge(trained_path, path):
    """The trained tokenizer reshaped: several Split pre-tokenizers (a String
    pattern, Oniguruma constructs PCRE2 spells differently), ByteLevel
    without its regex, an unk_token standing in for bytes missing from the
    vocab, fused, and added tokens whose stated ids are not the ones HF
    assigns."""
    with open(trained_path, encoding="utf-8") as f:
        data = json.load(f)
    model = data["model"]
    # Drop the characters of the bytes 0x00-0x08 and every token using them.
    gone = set()
    for tokstr in list(model["vocab"]):
        if any(ord(ch) in range(0x100, 0x109) for ch in tokstr):
            gone.add(tokstr)
    vocab = {}
    for tokstr, i in sorted(model["vocab"].items(), key=lambda kv: kv[1]):
        if tokstr not in gone:
            vocab[tokstr] = len(vocab)
    vocab["<unk>"] = len(vocab)
    merges = []
    for m in model["merges"]:
        a, b = m.split(" ") if isinstance(m, str) else m
        if a in vocab and b in vocab and a + b in vocab:
            merges.append([a, b])
    model["vocab"] = vocab
    model["merges"] = merges
    model["unk_token"] = "<unk>"
    model["fuse_unk"] = True
    data["normalizer"] = {"type": "NFC"}
    data["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"String": "||"}, "behavior": "Isolated",
         "invert": False},
        {"type": "Split", "pattern": {"Regex": "\\h+|\\u00e9+|(?m:<<.+?>>)|x{,2}y|\\bq\\w*\\b|\\v"},
         "behavior": "Isolated", "invert": False},
        {"type": "Split", "pattern": {"Regex": "\\w+|[^\\w\\s]+|\\s+"},
         "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
         "use_regex": False},
    ]}
    first = len(vocab)
    data["added_tokens"] = [
        {"id": first + 5, "content": "<s>", "single_word": False, "lstrip": False,
         "rstrip": False, "normalized": False, "special": True},
        {"id": 7, "content": "hello", "single_word": False, "lstrip": False,
         "rstrip": False, "normalized": True, "special": False},
        {"id": first + 1, "content": "</s>", "single_word": False, "lstrip": True,
         "rstrip": True, "normalized": False, "special": True},
        {"id": first + 9, "content": "<s>", "single_word": False, "lstrip": True,
         "rstrip": False, "normalized": False, "special": False},
        {"id": first + 2, "content": "ü", "single_word": True, "lstrip": False,
         "rstrip": False, "normalized": True, "special": False},
    ]
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, indent=1)
        f.write("\n")
    return Tokenizer.from_file(path)


def edge_texts(rng):
    t = [
        "", "a||b", "||||", "|||", "|", "a | | b", "cafe 0x1F deadbeef", "DEADBEEF",
        "ééé", "e\u0301e\u0301", "É", "<<x\ny>>", "<<a>> <<b", "xxxy", "xy", "y", "xxy",
        "quick queue q q1 qé", "aq q_ q-q", "tab\x0bvt\x0b", "\x00\x01\x02 \x03",
        "\x07\x08\x09", "a\x00b", "\x00\x00\x00", "<s>", "a<s>b", "  <s>", "x </s>  y",
        "</s></s>", "hello", "Hello hello", "ü", "aü", "üa", "a ü b", "u\u0308",
        "日本語 テキスト", "naïve café", "x\u200dy", "a\u200cb", "Ⅻ ½ ²", "_a_ __",
        "ǅ ǈ", "\u0345", "a\u0345", "x\u180ey", "foo\u2028bar", "1\u00a02",
    ]
    t += random_texts(rng, 150, [MULTILINGUAL, WORDS, CODE, NUMBERS, SPACES, CONTROL,
                                 COMBINING, ["||", "<s>", "</s>", "hello", "ü", "q",
                                             "xy", "<<a>>", "\x0b", "\x01"]])
    return t


# ---- regex translation ----------------------------------------------------

REGEX_CASES = [
    (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
     ["it's I'M 'ſa ’s", "a\u00a0 b\u0085\u0085c\u180e\u180ed", "x  \n\n  y\t\r\n z  "]),
    (r"<<.+?>>", ["<<x\ny>> <<z>>"]),
    (r"(?m:<<.+?>>)", ["<<x\ny>> <<z>>"]),
    (r"(?m)a.b", ["a\nb a b"]),
    (r"(?i-m:A.B)", ["a\nb aXb"]),
    (r"(?x) a b # comment", ["abab a b"]),
    (r"^a", ["ab\nab", "a"]),
    (r"b$", ["ab\nab", "ab\n"]),
    (r"\Aa|b\z|c\Z", ["ab\nab", "c\n", "ac"]),
    (r"x{,2}y", ["xxxy", "y"]),
    (r"x{2,}|z{1,2}|w{2}", ["xxxy x zzz www"]),
    (r"\u00e9+|\u3042", ["ééaあ"]),
    (r"\h+", ["deadBEEFxyz 09 \t"]),
    (r"\H+", ["deadBEEFxyz 09"]),
    (r"[\h_]+", ["a0g_x"]),
    (r"\v|\f", ["a\x0bb\nc\x0c"]),
    (r"\bq\w*\b", ["aq q1 qé q_ q-q ²q q²"]),
    (r"\Bq", ["aq q1 qé q_ q-q ¹q"]),
    (r"\w+", ["a²b-c ½x ¹ ª º µ", "x\u200dy a\u200cb e\u0301 Ⓐ Ⅻ ٣"]),
    (r"\W+", ["a²b-c ½x"]),
    (r"[\w]+|[^\w\s]+", ["a²b-c ½x"]),
    (r"\d+|\D", ["١٢3 ²"]),
    (r"\s+|\S+", ["a \u00a0\u180e\u2028b\u3000c\x1cd"]),
    (r"[\s\d]+", ["1 2\u00a03x"]),
    (r"(?i)ǅ", ["Ǆǅǆ"]),
    (r"(?i:ß)", ["ssßẞSS"]),
    (r"(?i:k)+", ["kK\u212a"]),
    (r"(?i)[a-z]+", ["ABſK\u212a"]),
    (r"\R", ["a\r\nb\nc\rd\x85e\u2028f"]),
    (r"\X", ["e\u0301👨\u200d👩\u200d👧a🇫🇷"]),
    (r"\p{Han}+|\p{Hiragana}+", ["漢字かなカナ"]),
    (r"\p{^L}+", ["ab12cd"]),
    (r"\P{N}+", ["ab12cd"]),
    (r"\p{Lu}+", ["ABc"]),
    (r"\p{Greek}+", ["αβa"]),
    (r"(?<name>a)\k<name>", ["aaaa"]),
    (r"(a)\1", ["aaaa"]),
    (r"\x41+|\x{3b1}", ["AABα"]),
    (r"\N+", ["ab\ncd"]),
    (r".", ["a\rb\u2028c\x85\n"]),
    (r"a*", ["baa"]),
    (r"", ["abc"]),
    (r"x?", ["axxb"]),
    (r"\K", ["ab"]),
    (r"\e|\a|\cA|\0|\t+", ["\x1b\x07\x01\x00\t\t"]),
    (r"a++|(?>b+)", ["aaabbb"]),
    (r"(?<=a)b|(?<!a)c", ["abcac"]),
    (r"\G.", ["ab"]),
    (r"[]a]+", ["]a]b"]),
    (r"[^]a]+", ["]a]b"]),
    (r"[-a]+|\.|\-", ["-a-.b"]),
    (r"\'s|\\", ["'s\\"]),
]

CLASS_PATTERNS = [
    r"\s", r"\S", r"\w", r"\W", r"\d", r"\D", r"\h", r"\H", r"\p{L}", r"\p{N}",
    r"[^\s\p{L}\p{N}]", r"[^\r\n\p{L}\p{N}]", r"[\w]", r"[^\w]", r".", r"\v",
    r"(?i:s)", r"(?i:t)", r"(?i:r)", r"(?i:e)", r"(?i:v)", r"(?i:m)", r"(?i:l)", r"(?i:d)",
]


def isolated_pieces(pattern, text):
    pt = pre_tokenizers.Split(Regex(pattern), "isolated")
    return [s for s, _ in pt.pre_tokenize_str(text)]


def write_regex(path):
    n = 0
    with open(path, "w", encoding="utf-8") as f:
        for pattern, texts in REGEX_CASES:
            for text in texts:
                f.write(json.dumps({"pattern": pattern, "text": text,
                                    "pieces": isolated_pieces(pattern, text)},
                                   ensure_ascii=False))
                f.write("\n")
                n += 1
    print(f"{path}: {n} cases")


def to_ranges(cps):
    out = []
    for c in cps:
        if out and out[-1][1] == c - 1:
            out[-1][1] = c
        else:
            out.append([c, c])
    return out


def write_unicode(path, trained):
    cps = [c for c in range(0x110000) if not 0xd800 <= c <= 0xdfff]
    assigned = [c for c in cps if unicodedata.category(chr(c)) != "Cn"]
    is_assigned = set(assigned)
    subject = "".join(map(chr, cps))
    classes = {}
    for pattern in CLASS_PATTERNS:
        pt = pre_tokenizers.Split(Regex(pattern), "removed")
        kept = bytearray(len(cps))
        for _, (a, b) in pt.pre_tokenize_str(subject):
            kept[a:b] = b"\1" * (b - a)
        classes[pattern] = to_ranges([cps[i] for i in range(len(cps))
                                      if not kept[i] and cps[i] in is_assigned])
    # single_word: "foo" is one in the trained tokenizer; c + "foo" keeps it
    # whole unless c is a word character.
    foo = trained.token_to_id("foo")
    encs = trained.encode_batch([chr(c) + "foo" for c in assigned],
                                add_special_tokens=False)
    word = [c for c, e in zip(assigned, encs) if foo not in e.ids]
    # NFC: every code point NFC changes, and every canonical decomposition.
    nfc_norm = normalizers.NFC()
    inputs = [chr(c) for c in assigned if c != 10]
    inputs += ["".join(chr(int(x, 16)) for x in unicodedata.decomposition(chr(c)).split())
               for c in assigned
               if unicodedata.decomposition(chr(c))
               and not unicodedata.decomposition(chr(c)).startswith("<")]
    inputs += ["o\u0302\u0323", "a\u0301\u0328\u0300b", "\u1100\u1161\u11a8\u11a8",
               "e\u0301\u0301", "\u0f73\u0f73", "\u05d0\u05b8\u05b7"]
    # Every combining mark: is it reordered after U+0345 (class 240), does
    # it block a + U+0323?  HF's tables are older than Python's.
    marks = [c for c in assigned if unicodedata.combining(chr(c))]
    inputs += ["$\u0345" + chr(c) for c in marks]
    inputs += ["a" + chr(c) + "\u0323" for c in marks]
    inputs += ["a\U00016ff0\u0301", "a\u1df6\u0323x", "e\u0301\u1df6\u0301"]
    outputs = nfc_norm.normalize_str("\n".join(inputs)).split("\n")
    # The marks HF's tables know, over all code points: "$" U+0345 c
    # becomes "$" c U+0345.
    probe = [c for c in cps if c != 10]
    reordered = nfc_norm.normalize_str("\n".join("$\u0345" + chr(c) for c in probe)).split("\n")
    hf_marks = [c for c, o in zip(probe, reordered) if o == "$" + chr(c) + "\u0345"]
    assert len(outputs) == len(inputs)
    nfc = [[i, o] for i, o in zip(inputs, outputs) if i != o or len(i) > 1]
    data = {
        "unicode_version": unicodedata.unidata_version,
        "assigned": to_ranges(assigned),
        "classes": classes,
        "rust_word": to_ranges(word),
        "nfc": nfc,
        "hf_marks": to_ranges(hf_marks),
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    print(f"{path}: {len(classes)} classes, {len(nfc)} NFC cases")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--qwen3", default=os.path.join(OUT, "qwen3"),
                    help="the Qwen3 tokenizer directory (default: the repository's)")
    args = ap.parse_args()
    rng = random.Random(20250509)

    qwen = Tokenizer.from_file(os.path.join(args.qwen3, "tokenizer.json"))
    texts = handcrafted()
    pools = [MULTILINGUAL, EMOJI, COMBINING, CONTROL, SPACES, CODE, NUMBERS,
             CONTRACTIONS, URLS, SPECIALS, PARTIALS, JSON_VALUES, WORDS, WORDS]
    texts += random_texts(rng, 420, pools)
    write_cases(os.path.join(OUT, "qwen3/cases.jsonl"), qwen, texts)

    trained_path = os.path.join(OUT, "trained/tokenizer.json")
    trained = save_with_string_merges(build_trained(rng), trained_path)
    write_cases(os.path.join(OUT, "trained/cases.jsonl"), trained, trained_texts(rng))

    edge_path = os.path.join(OUT, "edge/tokenizer.json")
    os.makedirs(os.path.dirname(edge_path), exist_ok=True)
    edge = build_edge(trained_path, edge_path)
    write_cases(os.path.join(OUT, "edge/cases.jsonl"), edge, edge_texts(rng))

    write_regex(os.path.join(OUT, "regex.jsonl"))
    write_unicode(os.path.join(OUT, "unicode.json"), trained)


if __name__ == "__main__":
    main()
