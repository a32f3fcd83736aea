#!/usr/bin/env python3
"""Writes t/fixtures/tokenizer/qwen3-omni: Qwen3's tokenizer
(t/fixtures/tokenizer/qwen3, unmodified there) with the seven special tokens
Qwen3-Omni's tokenizer adds after it (ids 151669-151675: the audio start,
end and pad tokens and the speech output's four), and the tokenizer_config
keys Qwen3OmniMoeProcessor reads (image_token, audio_token, video_token,
vision_bos/eos_token, audio_bos/eos_token).  Standard library only;
deterministic.  Run from anywhere."""
import json
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "fixtures", "tokenizer", "qwen3")
DST = os.path.join(HERE, "..", "fixtures", "tokenizer", "qwen3-omni")

ADDED = [
    (151669, "<|audio_start|>"),
    (151670, "<|audio_end|>"),
    (151671, "<tts_pad>"),
    (151672, "<tts_text_bos>"),
    (151673, "<tts_text_eod>"),
    (151674, "<tts_text_bos_single>"),
    (151675, "<|audio_pad|>"),
]


def main():
    os.makedirs(DST, exist_ok=True)
    with open(os.path.join(SRC, "tokenizer.json"), encoding="utf-8") as f:
        tok = json.load(f)
    last = max(a["id"] for a in tok["added_tokens"])
    assert last == ADDED[0][0] - 1, last
    for i, content in ADDED:
        tok["added_tokens"].append({
            "id": i, "content": content, "single_word": False,
            "lstrip": False, "rstrip": False, "normalized": False,
            "special": True})
    with open(os.path.join(DST, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")

    with open(os.path.join(SRC, "tokenizer_config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    for i, content in ADDED:
        cfg["added_tokens_decoder"][str(i)] = {
            "content": content, "lstrip": False, "normalized": False,
            "rstrip": False, "single_word": False, "special": True}
    cfg["additional_special_tokens"] += ["<|audio_start|>", "<|audio_end|>",
                                         "<|audio_pad|>"]
    cfg.update({
        "image_token": "<|image_pad|>",
        "audio_token": "<|audio_pad|>",
        "video_token": "<|video_pad|>",
        "vision_bos_token": "<|vision_start|>",
        "vision_eos_token": "<|vision_end|>",
        "audio_bos_token": "<|audio_start|>",
        "audio_eos_token": "<|audio_end|>",
        "model_specific_special_tokens": {
            "image_token": "<|image_pad|>",
            "audio_token": "<|audio_pad|>",
            "video_token": "<|video_pad|>",
            "vision_bos_token": "<|vision_start|>",
            "vision_eos_token": "<|vision_end|>",
            "audio_bos_token": "<|audio_start|>",
            "audio_eos_token": "<|audio_end|>",
        },
        "processor_class": "Qwen3OmniMoeProcessor",
    })
    with open(os.path.join(DST, "tokenizer_config.json"), "w",
              encoding="utf-8") as f:
        json.dump(cfg, f, ensure_ascii=False, indent=2, sort_keys=True)
        f.write("\n")
    for name in ("LICENSE", ".gitattributes"):
        shutil.copy(os.path.join(SRC, name), os.path.join(DST, name))
    with open(os.path.join(DST, "README.md"), "w", encoding="utf-8") as f:
        f.write("Qwen3's tokenizer (../qwen3, Apache-2.0: LICENSE) with the "
                "seven special\ntokens Qwen3-Omni adds (ids 151669-151675) "
                "and the processor's token\nkeys in tokenizer_config.json; "
                "written by t/reference/gen_omni_tokenizer.py.\n")


if __name__ == "__main__":
    main()
