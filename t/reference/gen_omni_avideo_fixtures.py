#!/usr/bin/env python3
"""Clef Omni requests with videos whose sound is heard (use_audio_in_video)
against Cloudflare's Omni reference, on the tiny checkpoint
t/fixtures/models/omni1.json.

    t/reference/fetch-reference.sh omni
    build/refenv-omni/bin/python t/reference/gen_omni_avideo_fixtures.py

Needs build/clef (mkmodel, `clef audio --dump`) and Debian's ffmpeg (two
clips of its own, in t/fixtures/video/clips; the others are
gen_video_fixtures.py's and gen_omni_video_fixtures.py's; audio clips are
t/fixtures/audio/clips of gen_audio_fixtures.py).  The reference runs in
fp32 as gen_omni_video_fixtures.py runs it: load_release_model, then
encode_record with the processor (load_video decodes each video's first
audio stream with _decode_audio, the clips' resampler; every video with a
track: audio.extend(tracks), videos_kwargs use_audio_in_video), then
collate_records and ClefModel.

Each request runs twice:
  - as the reference decodes it (PyAV, which carries FFmpeg 8.1):
    probabilities_pyav;
  - with every 16 kHz sample array (the clips' and the videos' tracks)
    replaced by the engine's own decode of the same file (`build/clef
    audio --dump`, the system's FFmpeg: AAC, Opus and Vorbis decoders round
    differently there, t/unit/test_audio.c), so that the rest is the
    reference's own arithmetic on the engine's input: probabilities.
The ids of both runs are asserted equal (the same sample counts).

Writes t/fixtures/vision/omni_avideos.jsonl, one request per line:
  name, body (videos "clip:NAME.EXT", images "corpus:NAME.EXT", audio
  "sound:NAME.EXT": the test puts the file's data URL there),
  use_audio_in_video, input_ids, positions ([3][n], the reference's
  get_rope_index as its forward calls it), questions (id, span, option
  spans, option ids), video_grid_thw, image_grid_thw, audio_tokens (per
  audio item of the reference's list: the clips, then the tracks heard),
  probabilities, probabilities_pyav, decode_effect (the largest
  |probabilities - probabilities_pyav|).
"""
import hashlib
import json
import pathlib
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import reference  # noqa: E402
from gen_omni_video_fixtures import (QUESTIONS, STATES, make_checkpoint,  # noqa: E402
                                     make_clips, ffmpeg)
import sweep_omni_media as sweep  # noqa: E402

ROOT = reference.ROOT
CLIPS = ROOT / "t/fixtures/video/clips"
IMAGES = ROOT / "t/fixtures/images/corpus"
SOUNDS = ROOT / "t/fixtures/audio/clips"
OUT = ROOT / "t/fixtures/vision/omni_avideos.jsonl"
MAX_LENGTH = 64000

# (videos, images, audio clips, heard): one and two videos with sound,
# with clips and images, tracks longer and shorter than the frames (the
# interleave ends on either), several sample rates and layouts, and
# records mixing a silent video with sounding ones (no sound heard; the
# clips still are)
CASES = [
    (["h264_aac.mp4"], [], [], True),
    (["vp9_opus.webm"], [], [], True),
    (["omni_aac_320x180_5.5s.mkv"], [], [], True),
    (["omni_av_vorbis_1.5s.webm"], [], [], True),
    (["omni_av_aac_4s_short.mp4"], [], [], True),
    (["h264_aac.mp4", "vp9_opus.webm"], [], [], True),
    (["h264_aac.mp4"], [], ["tone16k.wav"], True),
    (["omni_av_vorbis_1.5s.webm"], ["png_rgb_64x48.png"],
     ["speech22k.flac", "short16k.wav"], True),
    (["omni_av_aac_4s_short.mp4", "omni_av_vorbis_1.5s.webm"],
     ["jpg_q90_444_200x150.jpg"], ["noise8k_aac.m4a"], True),
    (["omni_aac_320x180_5.5s.mkv", "vp9_opus.webm"], ["png_rgb_64x48.png"],
     ["chirp16k.mp3"], True),
    (["h264_aac.mp4", "h264_160x120_30fps.mp4"], [], ["tone16k.wav"], False),
    (["vp9_opus.webm", "av1_128x96.mp4"], ["png_rgba_100x80.png"], [],
     False),
    # sweep_omni_media.py's kinds (make_sweep_clips): tracks in every
    # container and codec, late, first in the file, the second of two;
    # with up to 4 clips of gen_omni_e2e_fixtures.py's
    (["omni_av_mp3.mp4"], [], [], True),
    (["omni_av_pcm.mov"], [], [], True),
    (["omni_av_pcm_be24.mov"], [], [], True),
    (["omni_av_adpcm_qt.mov"], [], [], True),
    (["omni_av_flac.mkv"], [], [], True),
    (["omni_av_opus.mp4"], [], [], True),
    (["omni_av_ac3_51.mp4"], [], [], True),
    (["omni_av_late.mp4"], [], [], True),
    (["omni_av_two_tracks.mkv"], [], [], True),
    (["omni_av_audio_first.mkv"], [], [], True),
    (["omni_av_mono8k.mp4"], [], ["tone16k.wav"], True),
    (["omni_av_late.mp4", "omni_av_two_tracks.mkv"], [], ["short16k.wav"],
     True),
    (["omni_av_opus.mp4", "omni_av_flac.mkv"], ["png_rgb_64x48.png"],
     ["omni_mulaw_8k.wav", "omni_flac24_96k_50.flac", "omni_opus_st.weba",
      "omni_aac_71.m4a"], True),
    (["omni_av_ac3_51.mp4", "omni_av_mono8k.mp4"], [],
     ["omni_len_20ms.wav", "omni_len_8.01s.flac", "omni_alac_st.m4a",
      "omni_u8_11k.wav"], True),
    # a 10 ms track, heard beside a longer clip (alone it is refused)
    (["omni_v_track_10ms.mov"], [], ["short16k.wav"], True),
    (["omni_av_damaged_lace.mkv"], [], [], True),
]

SWEEP_CLIPS = {
    "omni_av_mp3.mp4": sweep.vsrc(1.5) + sweep.sine(44100, 1.5, 500) + sweep.X264
    + ["-c:a", "libmp3lame", "-b:a", "32k"],
    "omni_av_pcm.mov": sweep.vsrc(1.0) + sweep.sine(16000, 1.0, expr=sweep.SPEECH)
    + sweep.X264 + ["-c:a", "pcm_s16le"],
    "omni_av_pcm_be24.mov": sweep.vsrc(1.0) + sweep.sine(8000, 1.0, 700)
    + sweep.X264 + ["-c:a", "pcm_s24be"],
    "omni_av_adpcm_qt.mov": sweep.vsrc(1.5)
    + sweep.sine(22050, 1.5, expr=sweep.SPEECH) + sweep.X264
    + ["-c:a", "adpcm_ima_qt"],
    "omni_av_flac.mkv": sweep.vsrc(2.5) + sweep.sine(22050, 2.5, 350)
    + sweep.VP9 + ["-c:a", "flac"],
    "omni_av_opus.mp4": sweep.vsrc(1.7) + sweep.multi(48000, 1.7, "stereo", 2)
    + sweep.X264 + ["-c:a", "libopus", "-b:a", "24k"],
    "omni_av_ac3_51.mp4": sweep.vsrc(1.2) + sweep.multi(48000, 1.2, "5.1", 6)
    + sweep.X264 + ["-c:a", "ac3", "-b:a", "96k"],
    "omni_av_late.mp4": sweep.vsrc(3) + ["-itsoffset", "1.5"]
    + sweep.sine(44100, 1.5, 600) + ["-map", "0:v", "-map", "1:a"]
    + sweep.X264 + ["-c:a", "aac", "-b:a", "32k"],
    "omni_av_two_tracks.mkv": sweep.vsrc(1.5) + sweep.sine(16000, 1.5, 300)
    + sweep.sine(44100, 0.8, 1200) + ["-map", "0:v", "-map", "1:a", "-map",
                                      "2:a"] + sweep.X264
    + ["-c:a:0", "flac", "-c:a:1", "aac"],
    "omni_av_audio_first.mkv": sweep.sine(16000, 1.5, 440) + sweep.vsrc(1.5)
    + ["-map", "0:a", "-map", "1:v"] + sweep.X264 + ["-c:a", "libvorbis"],
    "omni_av_mono8k.mp4": sweep.vsrc(2) + sweep.sine(8000, 2, expr=sweep.SPEECH)
    + sweep.X264 + ["-c:a", "aac", "-b:a", "16k"],
}


def make_sweep_clips():
    for name, args in SWEEP_CLIPS.items():
        if not (CLIPS / name).exists():
            sweep.ffmpeg(CLIPS / name, args)
    # the FLAC track's blocks damaged (a lace that cannot be parsed): the
    # reference's demuxer, reading every stream, stops there, after one
    # frame and 1,672 samples
    lace = CLIPS / "omni_av_damaged_lace.mkv"
    if not lace.exists():
        sweep.corrupt(CLIPS / "omni_av_flac.mkv", lace, every=2, seed=1)


def make_av_clips():
    """Two small clips with sound of this generator's own."""
    a = CLIPS / "omni_av_vorbis_1.5s.webm"
    if not a.exists():
        # the track (3.2 s, 48 kHz stereo) outlasts the frames
        ffmpeg(a, "-f", "lavfi", "-i", "testsrc=size=160x90:rate=8:duration=1.5",
               "-f", "lavfi", "-i",
               "sine=frequency=330:sample_rate=48000:duration=3.2",
               "-ac", "2", "-c:v", "libvpx", "-b:v", "60k",
               "-c:a", "libvorbis", "-q:a", "0")
    b = CLIPS / "omni_av_aac_4s_short.mp4"
    if not b.exists():
        # the track (0.7 s, 22.05 kHz mono) ends long before the frames
        ffmpeg(b, "-f", "lavfi", "-i", "testsrc2=size=128x72:rate=6:duration=4",
               "-f", "lavfi", "-i",
               "sine=frequency=600:sample_rate=22050:duration=0.7",
               "-c:v", "libx264", "-preset", "veryfast", "-crf", "40",
               "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "24k")


def engine_samples(paths, tmp):
    """The engine's 16 kHz samples of each file, by its bytes' sha256;
    None where it finds no audio stream (the reference's None)."""
    out = {}
    d = pathlib.Path(tmp) / "dump"
    d.mkdir(exist_ok=True)
    for p in paths:
        key = hashlib.sha256(p.read_bytes()).hexdigest()
        r = subprocess.run([str(ROOT / "build/clef"), "audio", "--alone",
                            "--dump", str(d), str(p)], check=True,
                           capture_output=True, text=True)
        line = json.loads(r.stdout.splitlines()[0])
        if line.get("error", {}).get("type") == "audio_too_short":
            # features of a track this short alone are refused: its samples
            # beside a longer clip, in one record
            r = subprocess.run([str(ROOT / "build/clef"), "audio", "--dump",
                                str(d), str(p), str(SOUNDS / "tone16k.wav")],
                               check=True, capture_output=True, text=True)
            line = json.loads(r.stdout.splitlines()[0])
        if "error" in line:
            assert line["error"]["type"] == "audio_no_stream", line
            out[key] = None
        else:
            out[key] = np.fromfile(d / (p.name + ".f32"), dtype="<f4")
            assert out[key].size == line["samples"]
    return out


def run(model, mod, enc, pad):
    batch = mod.collate_records([enc], pad, torch.device("cpu"))
    with torch.inference_mode():
        return [ql.float() for ql in model(batch)[0]]


def positions(model, enc):
    m = enc.media
    ids = torch.tensor([enc.input_ids])
    fam = m.get("feature_attention_mask")
    pos, _ = model.thinker.get_rope_index(
        ids, m.get("image_grid_thw"), m.get("video_grid_thw"),
        torch.ones_like(ids), m["use_audio_in_video"],
        fam.sum(-1) if fam is not None else None,
        m.get("video_second_per_grid"))
    p = pos[:, 0, :]
    assert (p == p.round()).all()
    return p.long().tolist()


def encode(mod, processor, record):
    return mod.encode_record(processor.tokenizer, record, max_length=MAX_LENGTH,
                             processor=processor)


def main():
    make_clips()
    make_av_clips()
    make_sweep_clips()
    mod = reference.load_omni_joint_schema_model()
    pyav_decode = mod._decode_audio
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        files = sorted({CLIPS / v for c in CASES for v in c[0]}
                       | {SOUNDS / a for c in CASES for a in c[2]})
        ours = engine_samples(files, tmp)
        ckpt = make_checkpoint(tmp)
        model, processor = mod.load_release_model(ckpt, device="cpu",
                                                  dtype=torch.float32)
        pad = processor.tokenizer.pad_token_id
        for n, (videos, images, sounds, heard) in enumerate(CASES):
            body = {"model": "clef-omni", "state": STATES[n % len(STATES)],
                    "videos": [f"clip:{v}" for v in videos],
                    "questions": QUESTIONS[n % len(QUESTIONS)]}
            record = dict(body, videos=[(CLIPS / v).read_bytes() for v in videos])
            if images:
                body["images"] = [f"corpus:{x}" for x in images]
                record["images"] = [(IMAGES / x).read_bytes() for x in images]
            if sounds:
                body["audio"] = [f"sound:{a}" for a in sounds]
                record["audio"] = [(SOUNDS / a).read_bytes() for a in sounds]
            name = f"omni_av{n:02d}_{len(videos)}v{len(images)}i{len(sounds)}a"

            mod._decode_audio = pyav_decode
            ref = encode(mod, processor, record)
            probs_pyav = [ql.softmax(-1) for ql in run(model, mod, ref, pad)]
            mod._decode_audio = lambda data: ours[hashlib.sha256(data).hexdigest()]
            enc = encode(mod, processor, record)
            mod._decode_audio = pyav_decode
            assert enc.media["use_audio_in_video"] is heard, name
            assert ref.media["use_audio_in_video"] is heard, name
            assert list(enc.input_ids) == list(ref.input_ids), name
            logits = run(model, mod, enc, pad)
            probs = [ql.softmax(-1) for ql in logits]
            effect = max(float((a - b).abs().max())
                         for a, b in zip(probs, probs_pyav))
            fam = enc.media.get("feature_attention_mask")
            lines.append({
                "name": name,
                "body": body,
                "use_audio_in_video": heard,
                "input_ids": list(enc.input_ids),
                "positions": positions(model, enc),
                "questions": [{"id": q.question_id, "span": list(q.question_span),
                               "options": [list(s) for s in q.option_spans],
                               "option_ids": list(q.option_ids)}
                              for q in enc.questions],
                "video_grid_thw": enc.media["video_grid_thw"].tolist(),
                "image_grid_thw": (enc.media["image_grid_thw"].tolist()
                                   if "image_grid_thw" in enc.media else []),
                "audio_tokens": ([] if fam is None else
                                 [int(t) for t in mod_output_lengths(fam.sum(-1))]),
                "probabilities": [[float(v) for v in p] for p in probs],
                "probabilities_pyav": [[float(v) for v in p] for p in probs_pyav],
                "decode_effect": effect,
            })
            print(name, len(enc.input_ids), "tokens, heard" if heard else
                  "tokens, not heard", lines[-1]["audio_tokens"],
                  "decode effect %.3g" % effect, file=sys.stderr)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with open(OUT, "w") as f:
        for c in lines:
            f.write(json.dumps(c, ensure_ascii=False) + "\n")


def mod_output_lengths(frames):
    """The audio tower's positions of each clip (transformers'
    _get_feat_extract_output_lengths)."""
    r = frames % 100
    a = (r - 1) // 2 + 1
    a = (a - 1) // 2 + 1
    a = (a - 1) // 2 + 1
    return (a + frames // 100 * 13).tolist()


if __name__ == "__main__":
    main()
