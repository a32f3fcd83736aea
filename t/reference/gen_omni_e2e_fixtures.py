#!/usr/bin/env python3
"""Clef Omni end to end from the raw request body: text, images, audio
clips (every container) and silent videos, against Cloudflare's Omni
reference on the tiny checkpoint t/fixtures/models/omni1.json.

    t/reference/fetch-reference.sh omni
    build/refenv-omni/bin/python t/reference/gen_omni_e2e_fixtures.py

Needs build/clef (mkmodel).  The clips are the committed files of
t/fixtures/audio/clips (gen_audio_fixtures.py: tones, noise, chirps,
speech-like, silence at 8 to 48 kHz, mono, stereo and 5.1, in WAV, FLAC,
MP3, Ogg/Opus, Ogg/Vorbis and M4A/AAC), t/fixtures/video/clips and
t/fixtures/images/corpus.  Each request's body is built here as a client
sends it (data URLs of the files) and given whole to the reference, as
gen_omni_fixtures.py runs it (fp32, transformers 5.10.2):
load_release_model, encode_record with the processor (its _decode_audio:
PyAV, AudioResampler to 16 kHz mono float; images, then audio, then
videos; one silent video turns the sound of every video off),
collate_records, ClefModel.forward.

Writes t/fixtures/e2e/omni1_audio.jsonl, one request per line:

  name, body        the request with its files named, not inlined:
                    "audio:NAME" (t/fixtures/audio/clips), "clip:NAME"
                    (t/fixtures/video/clips), "corpus:NAME" (images); the
                    test puts each file's data URL there
  input_tokens      the reference's input_ids length
  input_ids         its ids
  clips             per audio clip, its feature frames (the processor's
                    feature_attention_mask sum)
  questions         per question: id, option ids (the encoder's order),
                    logits and probabilities (the reference's softmax)
  step_effect       the largest change of any probability when the
                    record's log-mel features move by FEATURE_STEP (each
                    value +FEATURE_STEP, each -FEATURE_STEP, and each by
                    +-FEATURE_STEP with a drawn sign): the effect of the
                    one-step input change the engine is allowed
                    (t/unit/test_audio.c asserts its features within 1e-4
                    of the reference's, whose own float32 STFT is that far
                    from exact); 0 without audio
"""
import base64
import dataclasses
import json
import pathlib
import sys
import tempfile

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from gen_model_fixtures import check_hashes                  # noqa: E402
from gen_omni_audio_fixtures import cpu_without_accelerate   # noqa: E402
from gen_omni_fixtures import CHECKPOINTS, mkmodel           # noqa: E402
from reference import load_omni_joint_schema_model           # noqa: E402
from sweep_omni_media import (SPEECH, X264, corrupt, ffmpeg,  # noqa: E402
                              multi, sine, vsrc)

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "t/fixtures/e2e/omni1_audio.jsonl"
REFUSALS = ROOT / "t/fixtures/e2e/omni1_refusals.jsonl"
NAME = "omni1"
MAX_LENGTH = 64000
FEATURE_STEP = 1e-4
DIRS = {"audio": ROOT / "t/fixtures/audio/clips",
        "clip": ROOT / "t/fixtures/video/clips",
        "corpus": ROOT / "t/fixtures/images/corpus"}
TYPES = {"wav": "audio/wav", "flac": "audio/flac", "mp3": "audio/mpeg",
         "ogg": "audio/ogg", "opus": "audio/ogg", "m4a": "audio/mp4",
         "mka": "audio/webm", "weba": "audio/webm", "mov": "video/quicktime",
         "mp4": "video/mp4", "webm": "video/webm", "mkv": "video/x-matroska",
         "png": "image/png", "jpg": "image/jpeg", "webp": "image/webp"}

Q_SOUND = {"sound": {"type": "choice", "instructions": "What makes this sound?",
                     "criteria": {"bird": None, "engine": "an engine",
                                  "voice": "a human voice", "nothing": "silence"}}}
Q_LOUD = {"loud": {"type": "noul", "instructions": "Is the recording loud?"},
          "count": {"type": "score", "instructions": "How many sound sources?",
                    "criteria": ["none", "one", "several"]}}
Q_URGENT = {"urgent": {"type": "noul", "instructions": "Does the caller sound urgent?",
                       "criteria": {"true": "urgent, distressed"}}}
Q_SCENE = {"scene": {"type": "choice", "instructions": "What do the media show?",
                     "criteria": {"pattern": "a test pattern", "people": None,
                                  "animal": "an animal"}},
           "match": {"type": "noul", "instructions": "Does the sound fit the picture?"}}
Q_QUALITY = {"quality": {"type": "score", "instructions": "How clean is the audio?",
                         "criteria": ["noisy", "fair", "clean", "studio"]}}
STATES = ["Listen to the clips.", {"ticket": 4711, "note": "customer voicemail"},
          "A recording from the machine room.", {"caller": "unknown", "minutes": 3}]

# name, images, audio, videos, questions
CASES = [
    ("text-only-choice", [], [], [], Q_SOUND),
    ("text-only-object-state", [], [], [], {**Q_LOUD, **Q_QUALITY}),
    ("image-only", ["png_rgb_64x48.png"], [], [], Q_SCENE),
    ("images-two", ["jpg_q90_444_200x150.jpg", "webp_lossless_96x96.webp"], [], [],
     Q_SCENE),
    ("wav-tone-16k", [], ["tone16k.wav"], [], Q_SOUND),
    ("wav-noise-8k", [], ["noise8k.wav"], [], Q_LOUD),
    ("wav-f32-stereo-44k", [], ["chirp44k_st.wav"], [], Q_SOUND),
    ("wav-f32-click", [], ["click16k_f32.wav"], [], Q_QUALITY),
    ("wav-silence", [], ["silence16k.wav"], [], Q_LOUD),
    ("flac-speech-22k", [], ["speech22k.flac"], [], Q_URGENT),
    ("flac-tone-5.1-48k", [], ["tone48k_51.flac"], [], Q_SOUND),
    ("flac-noise-stereo", [], ["noise44k_st.flac"], [], Q_LOUD),
    ("mp3-speech-stereo", [], ["speech44k_st.mp3"], [], {**Q_URGENT, **Q_SOUND}),
    ("mp3-chirp-16k", [], ["chirp16k.mp3"], [], Q_SOUND),
    ("mp3-twelve-seconds", [], ["long12s.mp3"], [], Q_URGENT),
    ("opus-tone-48k", [], ["tone48k_opus.opus"], [], Q_QUALITY),
    ("opus-speech-stereo", [], ["speech48k_st_opus.opus"], [], Q_URGENT),
    ("vorbis-chirp-22k", [], ["chirp22k_vorbis.ogg"], [], Q_SOUND),
    ("m4a-speech-stereo", [], ["speech44k_aac.m4a"], [], Q_URGENT),
    ("m4a-tone-5.1", [], ["tone48k_51_aac.m4a"], [], Q_LOUD),
    ("m4a-noise-8k", [], ["noise8k_aac.m4a"], [], Q_QUALITY),
    ("two-wav-short-first", [], ["short16k.wav", "tone16k.wav"], [], Q_LOUD),
    ("three-mixed-rates", [], ["silence16k.wav", "noise8k.wav", "chirp44k_st.wav"],
     [], {**Q_SOUND, **Q_LOUD}),
    ("four-containers", [], ["speech22k.flac", "tone48k_opus.opus",
                             "speech44k_aac.m4a", "chirp16k.mp3"], [], Q_URGENT),
    ("four-long", [], ["long8k.wav", "long12s.mp3", "click16k_f32.wav",
                       "noise44k_st.flac"], [], Q_QUALITY),
    ("same-clip-twice", [], ["chirp16k.mp3", "chirp16k.mp3"], [], Q_SOUND),
    ("image-and-wav", ["png_rgba_100x80.png"], ["tone16k.wav"], [], Q_SCENE),
    ("two-images-two-clips", ["png_gray_alpha_60x90.png", "webp_lossy_180x120.webp"],
     ["speech48k_st_opus.opus", "noise8k_aac.m4a"], [], {**Q_SCENE, **Q_URGENT}),
    ("wav-and-silent-video", [], ["tone16k.wav"], ["h264_160x120_30fps.mp4"], Q_SCENE),
    ("image-flac-video", ["png_rgb_64x48.png"], ["speech22k.flac"],
     ["vp8_176x144_24fps.webm"], Q_SCENE),
    ("two-clips-two-silent-videos", [], ["silence16k.wav", "tone48k_51_aac.m4a"],
     ["frames_3.mp4", "av1_128x96.mp4"], {**Q_SCENE, **Q_LOUD}),
    ("sounding-and-silent-video", [], [], ["h264_aac.mp4", "h264_160x120_30fps.mp4"],
     Q_SCENE),
    ("clip-sounding-and-silent-video", [], ["chirp22k_vorbis.ogg"],
     ["vp9_opus.webm", "frames_3.mp4"], {**Q_SOUND, **Q_SCENE}),
    ("opus-and-image-score", ["jpg_q90_444_200x150.jpg"], ["tone48k_opus.opus"], [],
     Q_QUALITY),
    # the clips of sweep_omni_media.py's kinds (make_clips below): sample
    # formats, layouts and codecs the clips above lack, lengths around the
    # tower's chunk and window, and videos whose sound is off
    ("wav-u8-11k", [], ["omni_u8_11k.wav"], [], Q_SOUND),
    ("wav-s24-2.1-and-f64-quad", [], ["omni_s24_22k_21.wav",
                                      "omni_f64_8k_quad.wav"], [], Q_LOUD),
    ("wav-mulaw-alaw-msadpcm", [], ["omni_mulaw_8k.wav", "omni_alaw_8k.wav",
                                    "omni_ms_adpcm_22k.wav"], [], Q_URGENT),
    ("flac24-5.0-96k", [], ["omni_flac24_96k_50.flac"], [], Q_SOUND),
    ("mp3-8k-mono-and-48k-vbr", [], ["omni_mp3_8k_mono.mp3",
                                     "omni_mp3_48k_vbr_st.mp3"], [], Q_URGENT),
    ("opus-webm-vorbis-mka", [], ["omni_opus_st.weba", "omni_vorbis_44k.mka"],
     [], Q_QUALITY),
    ("alac-aac-7.1-ac3", [], ["omni_alac_st.m4a", "omni_aac_71.m4a",
                              "omni_ac3_51.mka"], [], Q_LOUD),
    ("20ms-beside-8.01s", [], ["omni_len_20ms.wav", "omni_len_8.01s.flac"], [],
     Q_SOUND),
    ("75-seconds", [], ["omni_len_75s.mp3"], [], Q_URGENT),
    ("silence-dc-overrange", [], ["omni_lead_silence.flac", "omni_dc_offset.wav",
                                  "omni_over_one_f32.wav"], [], Q_SOUND),
    ("zero-packet-track", [], ["omni_len_20ms.wav"],
     ["omni_v_zero_packets.mkv"], Q_SCENE),
    ("no-sample-track-beside-sound", [], [],
     ["omni_v_2samples.mkv", "h264_aac.mp4"], Q_SCENE),
    ("silent-beside-wmav2", ["png_rgb_64x48.png"], [],
     ["h264_160x120_30fps.mp4", "omni_v_wmav2.mkv"], Q_SCENE),
    # frames and track end where a damaged block stops the demuxer
    ("silent-beside-damaged-lace", [], ["omni_u8_11k.wav"],
     ["h264_160x120_30fps.mp4", "omni_av_damaged_lace.mkv"], Q_SCENE),
]

# requests the reference raises on, and what the engine answers: name,
# images, audio, videos, status, type, loc
REFUSED = [
    ("damaged-track", [], [], ["omni_v_corrupt_aac.mp4"],
     400, "audio_invalid", ["body", "videos", 0]),
    ("silent-beside-damaged-track", [], ["tone16k.wav"],
     ["h264_160x120_30fps.mp4", "omni_v_corrupt_aac.mp4"],
     400, "audio_invalid", ["body", "videos", 1]),
    ("zero-packets-beside-damaged-track", [], [],
     ["omni_v_zero_packets.mkv", "omni_v_corrupt_aac.mp4"],
     400, "audio_invalid", ["body", "videos", 1]),
    ("damaged-mp3", [], ["tone16k.wav", "omni_corrupt_mp3.mp3"], [],
     400, "audio_invalid", ["body", "audio", 1]),
    ("159-samples", [], ["omni_len_159.wav"], [],
     400, "audio_too_short", ["body", "audio", 0]),
    ("10ms-track", [], [], ["omni_v_track_10ms.mov"],
     400, "audio_too_short", ["body", "videos", 0]),
]

AUDIO_CLIPS = {
    "omni_u8_11k.wav": sine(11025, 0.8, 500) + ["-c:a", "pcm_u8"],
    "omni_s24_22k_21.wav": multi(22050, 0.2, "2.1", 3) + ["-c:a", "pcm_s24le"],
    "omni_f64_8k_quad.wav": multi(8000, 0.15, "quad", 4) + ["-c:a", "pcm_f64le"],
    "omni_mulaw_8k.wav": sine(8000, 1.0, expr=SPEECH) + ["-c:a", "pcm_mulaw"],
    "omni_alaw_8k.wav": sine(8000, 0.7, expr=SPEECH) + ["-c:a", "pcm_alaw"],
    "omni_ms_adpcm_22k.wav": sine(22050, 0.9, expr=SPEECH)
    + ["-c:a", "adpcm_ms"],
    "omni_flac24_96k_50.flac": multi(96000, 0.15, "5.0", 5)
    + ["-c:a", "flac", "-sample_fmt", "s32", "-bits_per_raw_sample", "24"],
    "omni_mp3_8k_mono.mp3": sine(8000, 2.2, expr=SPEECH)
    + ["-c:a", "libmp3lame", "-b:a", "16k"],
    "omni_mp3_48k_vbr_st.mp3": multi(48000, 1.6, "stereo", 2)
    + ["-c:a", "libmp3lame", "-q:a", "7"],
    "omni_opus_st.weba": multi(48000, 1.3, "stereo", 2)
    + ["-c:a", "libopus", "-b:a", "24k", "-f", "webm"],
    "omni_vorbis_44k.mka": sine(44100, 1.2, expr=SPEECH)
    + ["-c:a", "libvorbis", "-q:a", "0"],
    "omni_alac_st.m4a": multi(22050, 0.6, "stereo", 2) + ["-c:a", "alac"],
    "omni_aac_71.m4a": multi(48000, 1.0, "7.1", 8) + ["-c:a", "aac", "-b:a", "96k"],
    "omni_ac3_51.mka": multi(48000, 0.8, "5.1", 6) + ["-c:a", "ac3", "-b:a", "96k"],
    "omni_len_20ms.wav": sine(16000, 0.02) + ["-c:a", "pcm_s16le"],
    "omni_len_159.wav": sine(16000, 159 / 16000) + ["-c:a", "pcm_s16le"],
    "omni_len_8.01s.flac": sine(16000, 8.01, 440) + ["-c:a", "flac"],
    "omni_len_75s.mp3": sine(16000, 75, expr=SPEECH)
    + ["-c:a", "libmp3lame", "-b:a", "8k"],
    "omni_lead_silence.flac": ["-f", "lavfi", "-i",
                               "aevalsrc='if(lt(t,1.2),0,0.5*sin(2*PI*440*t))'"
                               ":s=16000:d=1.6", "-c:a", "flac"],
    "omni_dc_offset.wav": sine(16000, 0.5, expr="0.6+0.3*sin(2*PI*300*t)")
    + ["-c:a", "pcm_f32le"],
    "omni_over_one_f32.wav": sine(16000, 0.4, expr="3*sin(2*PI*200*t)")
    + ["-c:a", "pcm_f32le"],
}
VIDEO_CLIPS = {
    # a track of 2 samples at 48 kHz: none at 16 kHz (the reference's None)
    "omni_v_2samples.mkv": vsrc(1.5) + sine(48000, 2 / 48000) + X264
    + ["-c:a", "pcm_s16le"],
    "omni_v_track_10ms.mov": vsrc(1.0) + sine(16000, 0.01) + X264
    + ["-c:a", "pcm_s16le"],
    # a codec this server does not take, beside a silent video: not heard
    "omni_v_wmav2.mkv": vsrc(1.0) + sine(22050, 1.0, 300) + X264
    + ["-c:a", "wmav2"],
}


def make_clips():
    """The clips of the cases above that no other generator writes (Debian's
    ffmpeg; kept when present), and gen_omni_avideo_fixtures.py's."""
    from gen_omni_avideo_fixtures import make_sweep_clips
    make_sweep_clips()
    audio, video = DIRS["audio"], DIRS["clip"]
    for name, args in AUDIO_CLIPS.items():
        if not (audio / name).exists():
            ffmpeg(audio / name, args)
    for name, args in VIDEO_CLIPS.items():
        if not (video / name).exists():
            ffmpeg(video / name, args)
    z = video / "omni_v_zero_packets.mkv"
    if not z.exists():
        # an audio stream declared, never a packet of it
        with tempfile.TemporaryDirectory() as tmp:
            src = pathlib.Path(tmp) / "src.mkv"
            ffmpeg(src, vsrc(1.5) + sine(16000, 1.5) + ["-map", "0:v", "-map",
                                                        "1:a"] + X264
                   + ["-c:a", "pcm_s16le"])
            ffmpeg(z, ["-i", str(src), "-map", "0", "-c", "copy", "-bsf:a",
                       "noise=dropamount=1"])
    with tempfile.TemporaryDirectory() as tmp:
        src = pathlib.Path(tmp) / "src.mp4"
        if not (video / "omni_v_corrupt_aac.mp4").exists():
            ffmpeg(src, vsrc(1.2) + multi(48000, 1.2, "stereo", 2) + X264
                   + ["-c:a", "aac", "-b:a", "64k"])
            corrupt(src, video / "omni_v_corrupt_aac.mp4", every=2)
        src = pathlib.Path(tmp) / "src.mp3"
        if not (audio / "omni_corrupt_mp3.mp3").exists():
            ffmpeg(src, multi(44100, 1.0, "stereo", 2)
                   + ["-c:a", "libmp3lame", "-q:a", "6"])
            corrupt(src, audio / "omni_corrupt_mp3.mp3", every=3)


def data_url(ref):
    where, name = ref.split(":", 1)
    data = (DIRS[where] / name).read_bytes()
    return (f"data:{TYPES[name.rsplit('.', 1)[1]]};base64,"
            + base64.b64encode(data).decode())


def inline(body):
    out = dict(body)
    for key in ("images", "audio", "videos"):
        if key in out:
            out[key] = [data_url(x) for x in out[key]]
    return out


def run(model, mod, enc, pad):
    batch = mod.collate_records([enc], pad, torch.device("cpu"))
    with torch.inference_mode():
        return [ql.float() for ql in model(batch)[0]]


def step_effect(model, mod, enc, pad, probs):
    """The largest probability change of the record when its features move
    by FEATURE_STEP (up, down, a drawn sign each)."""
    if not enc.media or "input_features" not in enc.media:
        return 0.0
    feats = enc.media["input_features"]
    g = torch.Generator().manual_seed(len(enc.input_ids))
    drawn = torch.randint(0, 2, feats.shape, generator=g).to(feats.dtype) * 2 - 1
    worst = 0.0
    for delta in (FEATURE_STEP, -FEATURE_STEP, drawn * FEATURE_STEP):
        media = dict(enc.media)
        media["input_features"] = feats + delta
        moved = dataclasses.replace(enc, media=media)
        for ql, p in zip(run(model, mod, moved, pad), probs):
            worst = max(worst, float((ql.softmax(-1) - p).abs().max()))
    return worst


def body_of(n, images, audio, videos, questions):
    body = {"model": "clef-omni", "state": STATES[n % len(STATES)]}
    if images:
        body["images"] = [f"corpus:{x}" for x in images]
    if audio:
        body["audio"] = [f"audio:{x}" for x in audio]
    if videos:
        body["videos"] = [f"clip:{x}" for x in videos]
    body["questions"] = questions
    return body


def refusals(mod, processor):
    """Each REFUSED request: the reference raises on it."""
    lines = []
    for n, (name, images, audio, videos, status, kind, loc) in \
            enumerate(REFUSED):
        body = body_of(n, images, audio, videos, Q_SCENE)
        try:
            mod.encode_record(processor.tokenizer, inline(body),
                              max_length=MAX_LENGTH, processor=processor)
        except Exception as e:      # noqa: BLE001
            raised = f"{type(e).__name__}: {e}"
        else:
            raise AssertionError(f"{name}: the reference answers")
        lines.append({"name": name, "body": body, "reference": raised[:200],
                      "status": status, "type": kind, "loc": loc})
        print(f"{name}: the reference raises {raised[:80]}", file=sys.stderr)
    REFUSALS.write_text("".join(json.dumps(c) + "\n" for c in lines))


def main():
    make_clips()
    mod = load_omni_joint_schema_model()
    cpu_without_accelerate()
    torch.manual_seed(0)
    ck = CHECKPOINTS[NAME]
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = pathlib.Path(tmp) / NAME
        mkmodel(NAME, ck["seed"], ck["shards"], ckpt)
        check_hashes(NAME, ckpt)
        model, processor = mod.load_release_model(ckpt, device="cpu",
                                                  dtype=torch.float32)
        pad = processor.tokenizer.pad_token_id
        refusals(mod, processor)
        for n, (name, images, audio, videos, questions) in enumerate(CASES):
            body = body_of(n, images, audio, videos, questions)
            request = inline(body)
            enc = mod.encode_record(processor.tokenizer, request,
                                    max_length=MAX_LENGTH, processor=processor)
            assert len(enc.input_ids) < MAX_LENGTH, name
            media = enc.media or {}
            assert not media.get("use_audio_in_video", False), name
            logits = run(model, mod, enc, pad)
            probs = [ql.softmax(-1) for ql in logits]
            # the systemone path from the body as sent gives the same ids
            assert mod.systemone(model, processor, request) is not None
            effect = step_effect(model, mod, enc, pad, probs)
            qs = []
            for q, ql, p in zip(enc.questions, logits, probs):
                top = sorted(p.tolist(), reverse=True)
                assert len(top) == 1 or top[0] - top[1] > 1e-3, (name, q.question_id)
                qs.append({"id": q.question_id, "options": list(q.option_ids),
                           "logits": [float(v) for v in ql],
                           "probabilities": [float(v) for v in p]})
            frames = (media["feature_attention_mask"].sum(-1).tolist()
                      if "feature_attention_mask" in media else [])
            lines.append({"name": name, "body": body,
                          "input_tokens": len(enc.input_ids),
                          "input_ids": list(enc.input_ids),
                          "clips": [int(f) for f in frames],
                          "questions": qs, "step_effect": effect})
            print(f"{name}: {len(enc.input_ids)} tokens, frames {frames}, "
                  f"step effect {effect:.3g}", file=sys.stderr)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in lines))
    print(f"{NAME}: {len(lines)} requests", file=sys.stderr)


if __name__ == "__main__":
    main()
