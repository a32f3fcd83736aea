#!/usr/bin/env python3
"""Audio clips and the Clef Omni reference's 16 kHz samples and log-mel
features on them.

    build/refenv-omni/bin/python t/reference/gen_audio_fixtures.py

Synthesises signals (tones, noise, chirps, speech-like AM, silence) at
8, 16, 22.05, 44.1 and 48 kHz, mono, stereo and 5.1, encodes each with
Debian's ffmpeg CLI into one container (WAV PCM16 / float, FLAC, MP3,
Ogg/Opus, Ogg/Vorbis, M4A/AAC), and writes t/fixtures/audio/:

  clips/NAME.EXT   the clips (kept small: under ~0.5 MB in all)
  samples.jsonl    per clip (and per sound track of two videos of
                   t/fixtures/video/clips, file relative to clips/): the
                   file, its content type, and what the
                   reference's _decode_audio() (PyAV, AudioResampler
                   format flt, layout mono, rate 16000, fed every decoded
                   frame then None) gives: n (samples), sha256 of the
                   float32 bytes, wsum (below), sum and sum of squares
                   (float64), and
                   at = [[i, float.hex(x[i])], ...] (the first and last 32
                   samples and 128 positions drawn with a fixed seed)
  features.jsonl   per record (1 to 4 clips, in order): what
                   Qwen3OmniMoeProcessor's feature extractor gives
                   (WhisperFeatureExtractor from the tiny Omni
                   checkpoint's preprocessor_config.json, called with the
                   processor's audio_kwargs: padding longest, no
                   truncation, attention mask): per clip frames (its
                   feature_attention_mask sum), tokens
                   (_get_feat_extract_output_lengths), and of its valid
                   frames [n_mels][frames]: row sums and the sum of
                   squares (float64, float.hex), the first 2 and last 6
                   frames in full, and 128 (mel, frame) values drawn with
                   a fixed seed, each [mel, frame, v] (v: the shortest
                   decimal that reads back as the float32); pad (the
                   record's padded frames)
  lengths.jsonl    _get_feat_extract_output_lengths for frames 1..3000
  refused.jsonl    files the reference cannot take, and why (no audio
                   stream, undecodable)

wsum is the 64-bit weighted sum of the samples' float32 bit patterns,
sum(u[i] * w[i]) mod 2^64 with w[i] = (i * 0x9E3779B97F4A7C15 mod 2^64) | 1
(t/fixtures/video's): equal sums say bit-identical samples.

The features are the feature extractor's, called directly with the
processor's audio_kwargs; check_processor() first runs the whole
Qwen3OmniMoeProcessor (AutoProcessor on the tiny Omni checkpoint that
`build/clef mkmodel` writes from t/fixtures/models/omni1.json, called as
joint_schema_model.py's _encode_media calls it) on every record and
asserts the same input_features and feature_attention_mask, and as many
<|audio_pad|> tokens per clip as _get_feat_extract_output_lengths says.

The clips of one record are padded together to its longest (the
processor's padding="longest"), so the features of a clip depend on the
record it is in: its last frames see zeros instead of the reflection of
its own end, and the max-8 floor is taken over the padded spectrogram.
The records below put short clips beside long ones on purpose.
"""
import base64
import hashlib
import io
import json
import pathlib
import random
import subprocess
import tempfile

import torch

import av
import numpy as np
from transformers import WhisperFeatureExtractor
from transformers.models.qwen3_omni_moe.processing_qwen3_omni_moe import (
    _get_feat_extract_output_lengths)

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "t/fixtures/audio"
CLIPS = OUT / "clips"

# the tiny Omni checkpoint's preprocessor_config.json (cli/mkmodel_omni.c,
# the release's values)
PREPROCESSOR = {
    "chunk_length": 300, "dither": 0.0,
    "feature_extractor_type": "WhisperFeatureExtractor", "feature_size": 128,
    "hop_length": 160, "n_fft": 400, "n_samples": 4800000,
    "nb_max_frames": 30000, "padding_side": "right", "padding_value": 0.0,
    "return_attention_mask": True, "sampling_rate": 16000,
}
# Qwen3OmniMoeProcessorKwargs' audio_kwargs
AUDIO_KWARGS = {"sampling_rate": 16000, "padding": True, "truncation": False,
                "return_attention_mask": True}

TYPES = {"wav": "audio/wav", "flac": "audio/flac", "mp3": "audio/mpeg",
         "ogg": "audio/ogg", "opus": "audio/ogg", "m4a": "audio/mp4"}


def signal(kind, sr, secs, ch, rng):
    n = max(1, int(round(sr * secs)))
    t = np.arange(n) / sr
    out = []
    for c in range(ch):
        f0 = 220.0 * (1 + c * 0.5)
        if kind == "tone":
            x = 0.5 * np.sin(2 * np.pi * (440 + 110 * c) * t)
        elif kind == "noise":
            x = 0.3 * rng.standard_normal(n)
        elif kind == "chirp":
            f1 = min(sr / 2 * 0.9, 6000)
            x = 0.4 * np.sin(2 * np.pi * (f0 * t + (f1 - f0) * t * t
                                          / (2 * max(secs, 1e-3))))
        elif kind == "speech":
            # a voiced buzz (harmonics of a wandering pitch) under a
            # syllable-rate envelope, plus breath noise
            pitch = 120 + 30 * np.sin(2 * np.pi * 0.7 * t) + 15 * c
            ph = 2 * np.pi * np.cumsum(pitch) / sr
            x = sum(np.sin(k * ph) / k for k in range(1, 12))
            env = 0.5 * (1 + np.sin(2 * np.pi * 4.0 * t)) ** 2 / 4
            x = 0.25 * env * x + 0.01 * rng.standard_normal(n)
        elif kind == "silence":
            x = np.zeros(n)
        elif kind == "click":
            # quiet, then a burst at the very end (the padded frames)
            x = 0.001 * np.sin(2 * np.pi * 300 * t)
            x[-min(n, 80):] = 0.9
        else:
            raise ValueError(kind)
        out.append(x)
    return np.clip(np.stack(out, axis=1), -1, 1).astype(np.float32)


# name, signal, rate, seconds, channels, codec arguments, extension
CLIP_SPECS = [
    ("tone16k", "tone", 16000, 1.0, 1, ["-c:a", "pcm_s16le"], "wav"),
    ("short16k", "tone", 16000, 0.1, 1, ["-c:a", "pcm_s16le"], "wav"),
    ("silence16k", "silence", 16000, 0.3, 1, ["-c:a", "pcm_s16le"], "wav"),
    ("noise8k", "noise", 8000, 0.5, 1, ["-c:a", "pcm_s16le"], "wav"),
    ("long8k", "speech", 8000, 4.0, 1, ["-c:a", "pcm_s16le"], "wav"),
    ("chirp44k_st", "chirp", 44100, 0.2, 2, ["-c:a", "pcm_f32le"], "wav"),
    ("click16k_f32", "click", 16000, 0.73, 1, ["-c:a", "pcm_f32le"], "wav"),
    ("speech22k", "speech", 22050, 1.0, 1, ["-c:a", "flac"], "flac"),
    ("tone48k_51", "tone", 48000, 0.2, 6, ["-c:a", "flac"], "flac"),
    ("noise44k_st", "noise", 44100, 0.15, 2, ["-c:a", "flac"], "flac"),
    ("speech44k_st", "speech", 44100, 3.0, 2,
     ["-c:a", "libmp3lame", "-b:a", "32k"], "mp3"),
    ("chirp16k", "chirp", 16000, 1.5, 1,
     ["-c:a", "libmp3lame", "-b:a", "24k"], "mp3"),
    ("long12s", "speech", 8000, 12.0, 1,
     ["-c:a", "libmp3lame", "-b:a", "8k"], "mp3"),
    ("tone48k_opus", "tone", 48000, 2.0, 1,
     ["-c:a", "libopus", "-b:a", "16k"], "opus"),
    ("speech48k_st_opus", "speech", 48000, 1.2, 2,
     ["-c:a", "libopus", "-b:a", "24k"], "opus"),
    ("chirp22k_vorbis", "chirp", 22050, 1.0, 1,
     ["-c:a", "libvorbis", "-q:a", "0"], "ogg"),
    ("speech44k_aac", "speech", 44100, 2.0, 2,
     ["-c:a", "aac", "-b:a", "32k"], "m4a"),
    ("tone48k_51_aac", "tone", 48000, 0.6, 6,
     ["-c:a", "aac", "-b:a", "64k"], "m4a"),
    ("noise8k_aac", "noise", 8000, 0.25, 1,
     ["-c:a", "aac", "-b:a", "16k"], "m4a"),
]

# the sound of videos (t/fixtures/video/clips): the reference decodes a
# video's track with the same _decode_audio, and appends it to the
# record's clips (audio in video); name, file
VIDEO_TRACKS = [("track_h264_aac", "h264_aac.mp4"),
                ("track_vp9_opus", "vp9_opus.webm")]
VIDEO_TYPES = {"mp4": "video/mp4", "webm": "video/webm"}

# records: clips padded together (the coupling), 1 to 4 each
RECORDS = [
    ["short16k", "tone16k"],
    ["tone16k", "short16k"],
    ["click16k_f32", "long8k"],
    ["silence16k", "noise8k", "chirp44k_st"],
    ["speech22k", "tone48k_51", "speech44k_st", "long12s"],
    ["tone48k_opus", "speech48k_st_opus", "chirp22k_vorbis"],
    ["speech44k_aac", "tone48k_51_aac", "noise8k_aac", "noise44k_st"],
    ["chirp16k", "chirp16k"],
    ["tone16k", "track_h264_aac", "track_vp9_opus"],
]


def encode(spec, rng):
    name, kind, sr, secs, ch, codec, ext = spec
    x = signal(kind, sr, secs, ch, rng)
    path = CLIPS / f"{name}.{ext}"
    fmt = {"opus": "ogg", "m4a": "ipod"}.get(ext, ext)
    subprocess.run(
        ["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-f", "f32le",
         "-ar", str(sr), "-ac", str(ch), "-i", "-", *codec,
         "-map_metadata", "-1", "-fflags", "+bitexact",
         "-flags:a", "+bitexact", "-f", fmt, str(path)],
        input=x.tobytes(), check=True)
    return path


def decode_audio(data):
    """The reference's _decode_audio (joint_schema_model.py), verbatim in
    behaviour."""
    import itertools
    with av.open(io.BytesIO(data)) as container:
        stream = next((s for s in container.streams if s.type == "audio"),
                      None)
        if stream is None:
            return None
        resampler = av.AudioResampler(format="flt", layout="mono",
                                      rate=16000)
        chunks = []
        for frame in itertools.chain(container.decode(stream), (None,)):
            chunks.extend(r.to_ndarray().reshape(-1)
                          for r in resampler.resample(frame))
    if not chunks:
        return None
    samples = np.concatenate(chunks).astype(np.float32, copy=False)
    return samples if samples.size else None


def wsum(samples):
    u = samples.view(np.uint32).astype(np.uint64)
    w = (np.arange(u.size, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
         ) | np.uint64(1)
    return f"{int((u * w).sum(dtype=np.uint64)):016x}"


def hexes(values):
    return [float(v).hex() for v in values]


def f32(v):
    """The shortest decimal that reads back as this float32."""
    return float(np.format_float_positional(np.float32(v), unique=True))


def sample_entry(name, path, samples, rng, typ=None, file=None):
    n = samples.size
    idx = sorted(set(list(range(min(32, n)))
                     + list(range(max(0, n - 32), n))
                     + [int(i) for i in rng.integers(0, n, 128)]))
    return {"name": name, "file": file or path.name,
            "type": typ or TYPES[path.suffix[1:]], "n": n,
            "sha256": hashlib.sha256(samples.tobytes()).hexdigest(),
            "wsum": wsum(samples),
            "sum": float(samples.astype(np.float64).sum()).hex(),
            "sumsq": float((samples.astype(np.float64) ** 2).sum()).hex(),
            "at": [[i, float(samples[i]).hex()] for i in idx]}


def features(fe, clips, rng):
    enc = fe(clips, **AUDIO_KWARGS, return_tensors="np")
    feats = np.asarray(enc["input_features"], dtype=np.float32)
    mask = np.asarray(enc["attention_mask"])
    frames = mask.sum(-1)
    tokens = _get_feat_extract_output_lengths(frames)
    out = []
    for k in range(len(clips)):
        f = int(frames[k])
        v = feats[k, :, :f]
        assert mask[k, :f].all() and not mask[k, f:].any()
        cols = sorted(set(list(range(min(2, f)))
                          + list(range(max(0, f - 6), f))))
        draws = [(int(m), int(t)) for m, t in
                 zip(rng.integers(0, v.shape[0], 128),
                     rng.integers(0, f, 128))]
        out.append({
            "frames": f, "tokens": int(tokens[k]),
            "row_sum": hexes(v.astype(np.float64).sum(1)),
            "sumsq": float((v.astype(np.float64) ** 2).sum()).hex(),
            "cols": {str(t): [f32(x) for x in v[:, t]] for t in cols},
            "at": [[m, t, f32(v[m, t])] for m, t in draws]})
    return {"pad": int(feats.shape[-1]), "clips": out}


def hostile(rng):
    """Files the reference refuses, and one it takes that is odd."""
    cases = []
    with tempfile.TemporaryDirectory() as tmp:
        # a video with no audio stream (an MP4 sent as audio/mp4)
        p = pathlib.Path(tmp) / "v.mp4"
        subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error",
                        "-y", "-f", "lavfi", "-i",
                        "color=c=red:s=32x32:d=0.2", "-c:v", "libx264",
                        "-pix_fmt", "yuv420p", "-fflags", "+bitexact",
                        str(p)], check=True)
        data = p.read_bytes()
    (CLIPS / "video_only.m4a").write_bytes(data)
    cases.append(("video_only.m4a", "audio/mp4", "no_stream"))
    # a WAV header with its data cut off
    wav = (CLIPS / "tone16k.wav").read_bytes()
    (CLIPS / "truncated.wav").write_bytes(wav[:40])
    cases.append(("truncated.wav", "audio/wav", "invalid"))
    # noise that no demuxer takes
    (CLIPS / "garbage.mp3").write_bytes(bytes(rng.integers(0, 256, 600,
                                                           dtype=np.uint8)))
    cases.append(("garbage.mp3", "audio/mpeg", "invalid"))
    out = []
    for name, typ, why in cases:
        try:
            got = decode_audio((CLIPS / name).read_bytes())
            ref = "none" if got is None else f"{got.size} samples"
        except Exception as e:                      # noqa: BLE001
            ref = type(e).__name__
        out.append({"file": name, "type": typ, "refusal": why,
                    "reference": ref})
    return out


def check_processor(records, samples):
    """The processor as the reference calls it gives what features()
    records (see the module's docstring)."""
    from transformers import AutoProcessor
    clef = ROOT / "build/clef"
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([str(clef), "mkmodel", "--config",
                        str(ROOT / "t/fixtures/models/omni1.json"),
                        "--tokenizer",
                        str(ROOT / "t/fixtures/tokenizer/qwen3-omni"),
                        "--seed", "21", "--out", tmp], check=True,
                       stdout=subprocess.DEVNULL)
        proc = AutoProcessor.from_pretrained(tmp)
    fe = WhisperFeatureExtractor(**PREPROCESSOR)
    pad = proc.tokenizer.convert_tokens_to_ids("<|audio_pad|>")
    start = proc.tokenizer.convert_tokens_to_ids("<|audio_start|>")
    for names in records:
        clips = [samples[n] for n in names]
        enc = proc(text="<|audio_start|><|audio_pad|><|audio_end|>\n"
                   * len(clips), audio=clips, add_special_tokens=False,
                   return_tensors="pt",
                   size={"shortest_edge": 65_536, "longest_edge": 1_048_576})
        ref = fe(clips, **AUDIO_KWARGS, return_tensors="pt")
        assert torch.equal(enc["input_features"], ref["input_features"])
        assert torch.equal(enc["feature_attention_mask"],
                           ref["attention_mask"])
        ids = enc["input_ids"][0].tolist()
        runs, k = [], 0
        while k < len(ids):
            if ids[k] == start:
                j = k + 1
                while ids[j] == pad:
                    j += 1
                runs.append(j - k - 1)
                k = j
            k += 1
        assert runs == [int(v) for v in _get_feat_extract_output_lengths(
            ref["attention_mask"].sum(-1))], (names, runs)
    print(f"processor: {len(records)} records as the extractor gives them")


def main():
    CLIPS.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(22)
    paths = {spec[0]: encode(spec, rng) for spec in CLIP_SPECS}
    samples = {}
    with open(OUT / "samples.jsonl", "w") as f:
        for name, path in paths.items():
            s = decode_audio(path.read_bytes())
            samples[name] = s
            f.write(json.dumps(sample_entry(name, path, s, rng)) + "\n")
        for name, video in VIDEO_TRACKS:
            path = ROOT / "t/fixtures/video/clips" / video
            s = decode_audio(path.read_bytes())
            samples[name] = s
            f.write(json.dumps(sample_entry(
                name, path, s, rng, VIDEO_TYPES[path.suffix[1:]],
                "../../video/clips/" + video)) + "\n")
    singles = [[n] for n in paths] + [[n] for n, _ in VIDEO_TRACKS]
    check_processor(singles + RECORDS, samples)
    fe = WhisperFeatureExtractor(**PREPROCESSOR)
    with open(OUT / "features.jsonl", "w") as f:
        for names in singles + RECORDS:
            rec = features(fe, [samples[n] for n in names], rng)
            rec["names"] = names
            f.write(json.dumps(rec) + "\n")
    with open(OUT / "lengths.jsonl", "w") as f:
        n = np.arange(1, 3001)
        f.write(json.dumps({"frames_from": 1, "tokens": [
            int(v) for v in _get_feat_extract_output_lengths(n)]}) + "\n")
    with open(OUT / "refused.jsonl", "w") as f:
        for case in hostile(rng):
            f.write(json.dumps(case) + "\n")
    total = sum(p.stat().st_size for p in CLIPS.iterdir())
    print(f"{len(paths)} clips, {total} bytes; {len(RECORDS)} records")


if __name__ == "__main__":
    main()
