#!/usr/bin/env python3
"""Compares what `clef audio --dump DIR` wrote with the reference, clip by
clip: the 16 kHz samples (PyAV, as joint_schema_model.py's _decode_audio)
and the log-mel features (WhisperFeatureExtractor as the processor calls
it).  With --alone (the default here) each clip is its own record.

    build/clef audio --alone --dump /tmp/ad t/fixtures/audio/clips/*.wav ...
    build/refenv-omni/bin/python t/reference/compare_audio.py /tmp/ad FILE...

Prints per clip: samples (ours, reference), the largest absolute sample
difference, bit-identical or not, and the largest feature difference.
"""
import pathlib
import sys

import numpy as np
from gen_audio_fixtures import AUDIO_KWARGS, PREPROCESSOR, decode_audio
from transformers import WhisperFeatureExtractor


def main():
    out = pathlib.Path(sys.argv[1])
    fe = WhisperFeatureExtractor(**PREPROCESSOR)
    worst = 0.0
    for name in sys.argv[2:]:
        p = pathlib.Path(name)
        ref = decode_audio(p.read_bytes())
        ours = np.fromfile(out / (p.name + ".f32"), dtype="<f4")
        if ref.size != ours.size:
            print(f"{p.name}: {ours.size} samples, reference {ref.size}")
            continue
        d = float(np.abs(ref - ours).max())
        feats = fe([ref], **AUDIO_KWARGS, return_tensors="np")
        f = int(feats["attention_mask"].sum())
        rf = feats["input_features"][0, :, :f]
        of = np.fromfile(out / (p.name + ".mel"), dtype="<f4").reshape(
            rf.shape[0], -1)
        fd = float(np.abs(rf - of).max()) if of.shape == rf.shape else -1
        worst = max(worst, fd)
        print(f"{p.name}: {ours.size} samples, max |diff| {d:.3g}"
              f"{' (bit-identical)' if (ref.view('u4') == ours.view('u4')).all() else ''}"
              f", features {of.shape[1]} frames (ref {f}), max |diff| {fd:.3g}")
    print(f"largest feature difference {worst:.3g}")


if __name__ == "__main__":
    main()
