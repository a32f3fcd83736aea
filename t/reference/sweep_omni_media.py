#!/usr/bin/env python3
"""Clef Omni's audio and video-with-sound path against Cloudflare's Omni
reference on clips unlike the committed ones (a sweep, not a fixture
generator: it writes nothing under t/, it prints).

    build/refenv-omni/bin/python t/reference/sweep_omni_media.py [--only RE]
        [--checkpoint omni1:21] [--checkpoint omni2:7] [--keep]

Needs build/clef (mkmodel, decide, audio) and Debian's ffmpeg, which
synthesises the clips under build/sweep/clips (kept between runs): audio at
rates from 8 to 96 kHz, layouts from mono to 7.1, WAV in every sample
format (u8 to f64, mu-law, A-law, IMA ADPCM, WAVE_FORMAT_EXTENSIBLE),
24-bit FLAC, MP3 (8 kHz mono, VBR stereo), Opus and Vorbis in
WebM/Matroska, ALAC and 7.1 AAC in M4A, clips from 20 ms to 90 s (around
the tower's chunk of 100 frames and its attention window of
n_window_infer frames), leading silence, DC offset, clipping; videos with
sound in every container (MP3, PCM, FLAC, Opus, 5.1 AAC), tracks shorter,
longer and later than the frames, two audio streams, a track of no packet,
a track of corrupt packets.

First, per file, the 16 kHz samples: the reference's _decode_audio (PyAV,
FFmpeg 8) beside the engine's (`clef audio --alone --dump`, Debian's
FFmpeg 5.1): counts and the largest difference.  Then per request (its
body with data URLs, as a client sends it): the reference's encode_record
and forward (fp32), its step effect (gen_omni_e2e_fixtures.py's: the
probabilities moved when every feature moves 1e-4), and `clef decide
--raw`; printed: input_tokens equal, argmax equal, max |p diff| against
1e-5 + step effect, or both refusals (the reference's exception, the
engine's status, type and loc).
"""
import argparse
import base64
import json
import pathlib
import re
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import reference  # noqa: E402
from gen_omni_audio_fixtures import cpu_without_accelerate  # noqa: E402

ROOT = reference.ROOT
CLEF = ROOT / "build/clef"
OUT = ROOT / "build/sweep/clips"
AUDIO = ROOT / "t/fixtures/audio/clips"
VIDEO = ROOT / "t/fixtures/video/clips"
IMAGES = ROOT / "t/fixtures/images/corpus"
MAX_LENGTH = 64000
BASE_TOL = 1e-5

TYPES = {"wav": "audio/wav", "flac": "audio/flac", "mp3": "audio/mpeg",
         "ogg": "audio/ogg", "opus": "audio/ogg", "m4a": "audio/mp4",
         "mka": "audio/webm", "weba": "audio/webm", "aac": "audio/aac",
         "mp4": "video/mp4", "mov": "video/quicktime", "webm": "video/webm",
         "mkv": "video/x-matroska", "png": "image/png", "jpg": "image/jpeg",
         "webp": "image/webp"}


def sine(rate, seconds, freq=440, expr=None):
    if expr is not None:
        return ["-f", "lavfi", "-i",
                f"aevalsrc='{expr}':s={rate}:d={seconds:.7f}"]
    return ["-f", "lavfi", "-i",
            f"sine=frequency={freq}:sample_rate={rate}:duration={seconds:.7f}"]


def multi(rate, seconds, layout, n):
    """n channels, each its own tone, in layout."""
    tones = "|".join(f"0.3*sin({220 + 110 * k}*2*PI*t)" for k in range(n))
    return ["-f", "lavfi", "-i",
            f"aevalsrc='{tones}':s={rate}:d={seconds}:c={layout}"]


SPEECH = ("0.4*sin(2*PI*(140+30*sin(2*PI*3*t))*t)*(0.5+0.5*sin(2*PI*4*t))"
          "+0.05*(random(0)-0.5)")


def vsrc(seconds, size="96x64", rate=6):
    return ["-f", "lavfi", "-i",
            f"testsrc2=size={size}:rate={rate}:duration={seconds}"]


X264 = ["-c:v", "libx264", "-preset", "veryfast", "-crf", "40",
        "-pix_fmt", "yuv420p"]
VP9 = ["-c:v", "libvpx-vp9", "-b:v", "50k", "-deadline", "realtime"]

# name: ffmpeg arguments (inputs and codecs; the output is the name)
AUDIO_CLIPS = {
    "u8_11k.wav": sine(11025, 1.3, 500) + ["-c:a", "pcm_u8"],
    "s24_22k_21.wav": multi(22050, 1.1, "2.1", 3) + ["-c:a", "pcm_s24le"],
    "s32_32k_30.wav": multi(32000, 0.9, "3.0", 3) + ["-c:a", "pcm_s32le"],
    "f64_96k_quad.wav": multi(96000, 0.8, "quad", 4) + ["-c:a", "pcm_f64le"],
    "mulaw_8k.wav": sine(8000, 1.5, expr=SPEECH) + ["-c:a", "pcm_mulaw"],
    "alaw_8k.wav": sine(8000, 1.2, expr=SPEECH) + ["-c:a", "pcm_alaw"],
    "ima_adpcm_16k.wav": sine(16000, 1.0, expr=SPEECH)
    + ["-c:a", "adpcm_ima_wav"],
    "ms_adpcm_22k.wav": sine(22050, 1.0, expr=SPEECH) + ["-c:a", "adpcm_ms"],
    "ext_s16_st.wav": multi(44100, 1.0, "stereo", 2)
    + ["-c:a", "pcm_s16le", "-rf64", "never", "-write_peak", "off"],
    "s16_61_48k.wav": multi(48000, 0.7, "6.1", 7) + ["-c:a", "pcm_s16le"],
    "f32_71_48k.wav": multi(48000, 0.7, "7.1", 8) + ["-c:a", "pcm_f32le"],
    "mono_s16_44k.wav": sine(44100, 2.0, 1000) + ["-c:a", "pcm_s16le"],
    "flac24_96k_50.flac": multi(96000, 0.9, "5.0", 5)
    + ["-c:a", "flac", "-sample_fmt", "s32", "-bits_per_raw_sample", "24"],
    "flac24_st_44k.flac": sine(44100, 1.4, expr=SPEECH) + [
        "-ac", "2", "-c:a", "flac", "-sample_fmt", "s32"],
    "flac_71_44k.flac": multi(44100, 0.8, "7.1", 8) + ["-c:a", "flac"],
    "mp3_8k_mono.mp3": sine(8000, 2.2, expr=SPEECH)
    + ["-c:a", "libmp3lame", "-b:a", "16k"],
    "mp3_48k_vbr_st.mp3": multi(48000, 1.6, "stereo", 2)
    + ["-c:a", "libmp3lame", "-q:a", "4"],
    "mp3_32k_cbr.mp3": sine(32000, 1.0, 330) + ["-c:a", "libmp3lame", "-b:a", "48k"],
    "opus_st.weba": multi(48000, 1.3, "stereo", 2) + ["-c:a", "libopus",
                                                       "-f", "webm"],
    "opus_51.mka": multi(48000, 0.9, "5.1", 6) + ["-c:a", "libopus",
                                                   "-mapping_family", "1"],
    "vorbis_44k.mka": sine(44100, 1.2, expr=SPEECH) + ["-c:a", "libvorbis"],
    "vorbis_11k.ogg": sine(11025, 1.1, 700) + ["-c:a", "libvorbis"],
    "alac_st.m4a": multi(44100, 1.0, "stereo", 2) + ["-c:a", "alac"],
    "alac_s24_96k.m4a": sine(96000, 0.6, 2000) + ["-c:a", "alac",
                                                   "-sample_fmt", "s32p"],
    "aac_71.m4a": multi(48000, 1.0, "7.1", 8) + ["-c:a", "aac", "-b:a", "128k"],
    "aac_32k_mono.m4a": sine(32000, 1.7, expr=SPEECH) + ["-c:a", "aac"],
    "aac_adts.aac": sine(22050, 1.0, 800) + ["-c:a", "aac", "-f", "adts"],
    "he_aac_like_22k.m4a": multi(22050, 1.5, "stereo", 2) + ["-c:a", "aac",
                                                               "-b:a", "24k"],
    # lengths around the hop, the chunk of 100 frames, the window of 800
    "len_20ms.wav": sine(16000, 0.02) + ["-c:a", "pcm_s16le"],
    "len_10ms_hop.wav": sine(16000, 0.01) + ["-c:a", "pcm_s16le"],
    "len_1sample.wav": sine(16000, 1 / 16000) + ["-c:a", "pcm_s16le"],
    "len_159.wav": sine(16000, 159 / 16000) + ["-c:a", "pcm_s16le"],
    "len_100ms.wav": sine(16000, 0.1) + ["-c:a", "pcm_s16le"],
    "len_0.99s.wav": sine(16000, 0.99) + ["-c:a", "pcm_s16le"],
    "len_1.0s_plus1.wav": sine(16000, 16001 / 16000) + ["-c:a", "pcm_s16le"],
    "len_1.01s.wav": sine(16000, 1.01) + ["-c:a", "pcm_s16le"],
    "len_7.99s.flac": sine(16000, 7.99, expr=SPEECH) + ["-c:a", "flac"],
    "len_8.0s.flac": sine(16000, 8.0, expr=SPEECH) + ["-c:a", "flac"],
    "len_8.01s.flac": sine(16000, 8.01, expr=SPEECH) + ["-c:a", "flac"],
    "len_16.05s.mp3": sine(16000, 16.05, expr=SPEECH)
    + ["-c:a", "libmp3lame", "-b:a", "24k"],
    "len_75s.mp3": sine(16000, 75, expr=SPEECH)
    + ["-c:a", "libmp3lame", "-b:a", "8k"],
    "len_90s_8k.wav": sine(8000, 90, expr=SPEECH) + ["-c:a", "pcm_u8"],
    "lead_silence.wav": ["-f", "lavfi", "-i",
                         "aevalsrc='if(lt(t,1.2),0,0.5*sin(2*PI*440*t))'"
                         ":s=16000:d=2"] + ["-c:a", "pcm_s16le"],
    "dc_offset.wav": sine(16000, 1.0, expr="0.6+0.3*sin(2*PI*300*t)")
    + ["-c:a", "pcm_f32le"],
    "clipped_s16.wav": sine(22050, 1.0, expr="1.8*sin(2*PI*200*t)")
    + ["-c:a", "pcm_s16le"],
    "over_one_f32.wav": sine(16000, 1.0, expr="3*sin(2*PI*200*t)")
    + ["-c:a", "pcm_f32le"],
    "all_zero_f32.wav": sine(16000, 0.5, expr="0") + ["-c:a", "pcm_f32le"],
}

# videos with sound (and without) of this sweep's own
VIDEO_CLIPS = {
    "v_mp3.mp4": vsrc(2) + sine(44100, 2, 500) + X264
    + ["-c:a", "libmp3lame", "-b:a", "32k"],
    "v_pcm.mov": vsrc(1.5) + sine(48000, 1.5, expr=SPEECH) + X264
    + ["-c:a", "pcm_s16le"],
    "v_pcm_s24.mkv": vsrc(1.5) + multi(32000, 1.5, "stereo", 2) + X264
    + ["-c:a", "pcm_s24le"],
    "v_flac.mkv": vsrc(2.5) + sine(22050, 2.5, expr=SPEECH) + VP9
    + ["-c:a", "flac"],
    "v_opus.mp4": vsrc(1.7) + multi(48000, 1.7, "stereo", 2) + X264
    + ["-c:a", "libopus", "-b:a", "24k"],
    "v_aac51.mp4": vsrc(1.2) + multi(48000, 1.2, "5.1", 6) + X264
    + ["-c:a", "aac", "-b:a", "96k"],
    "v_audio_short.mp4": vsrc(3) + sine(16000, 0.4, 900) + X264
    + ["-c:a", "aac"],
    "v_audio_long.mkv": vsrc(1) + sine(16000, 4.3, expr=SPEECH) + VP9
    + ["-c:a", "libvorbis"],
    "v_mono8k.mp4": vsrc(2) + sine(8000, 2, expr=SPEECH) + X264
    + ["-c:a", "aac", "-b:a", "16k"],
    "v_late_audio.mp4": vsrc(3) + ["-itsoffset", "1.5"] + sine(44100, 1.5, 600)
    + ["-map", "0:v", "-map", "1:a"] + X264 + ["-c:a", "aac"],
    "v_late_audio.mkv": vsrc(3) + ["-itsoffset", "1.0"] + sine(48000, 1.2, 600)
    + ["-map", "0:v", "-map", "1:a"] + VP9 + ["-c:a", "libopus"],
    "v_two_tracks.mkv": vsrc(1.5) + sine(16000, 1.5, 300) + sine(44100, 0.8, 1200)
    + ["-map", "0:v", "-map", "1:a", "-map", "2:a"] + X264
    + ["-c:a:0", "flac", "-c:a:1", "aac"],
    "v_two_tracks_aac_first.mp4": vsrc(1.5) + sine(22050, 0.9, 300)
    + sine(16000, 1.5, 1200) + ["-map", "0:v", "-map", "1:a", "-map", "2:a"]
    + X264 + ["-c:a", "aac"],
    "v_audio_before_video.mkv": sine(16000, 1.5, 440) + vsrc(1.5)
    + ["-map", "0:a", "-map", "1:v"] + X264 + ["-c:a", "pcm_s16le"],
    "v_silent.mp4": vsrc(1.5) + X264,
    "v_ac3.mp4": vsrc(1.5) + multi(48000, 1.5, "5.1", 6) + X264
    + ["-c:a", "ac3"],
    "v_pcm_be24.mov": vsrc(1.5) + sine(44100, 1.5, 700) + X264
    + ["-c:a", "pcm_s24be"],
    "v_adpcm_qt.mov": vsrc(1.5) + sine(22050, 1.5, expr=SPEECH) + X264
    + ["-c:a", "adpcm_ima_qt"],
    # tracks of 2 samples at 48 kHz (none at 16 kHz) and of 10 ms
    "v_track_2samples.mkv": vsrc(1.5) + sine(48000, 2 / 48000) + X264
    + ["-c:a", "pcm_s16le"],
    "v_track_10ms.mov": vsrc(1.5) + sine(16000, 0.01) + X264
    + ["-c:a", "pcm_s16le"],
}


def ffmpeg(out, args):
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-nostdin", *args,
                    "-fflags", "+bitexact", "-flags:v", "+bitexact", str(out)],
                   check=True)


def packets(path, stream="a:0"):
    r = subprocess.run(["ffprobe", "-v", "error", "-select_streams", stream,
                        "-show_entries", "packet=pos,size", "-of", "json",
                        str(path)], check=True, capture_output=True, text=True)
    return [(int(p["pos"]), int(p["size"]))
            for p in json.loads(r.stdout)["packets"] if "pos" in p]


def corrupt(src, dst, every=1, skip=1, seed=1):
    """src with the payload of its audio packets (after the first skip,
    every every-th) overwritten by random bytes."""
    data = bytearray(src.read_bytes())
    rng = np.random.default_rng(seed)
    for k, (pos, size) in enumerate(packets(src)):
        if k >= skip and (k - skip) % every == 0 and size > 4:
            data[pos + 2:pos + size] = rng.integers(0, 256, size - 2,
                                                    dtype=np.uint8).tobytes()
    dst.write_bytes(bytes(data))


def make_special():
    """Tracks of no packet and of corrupt packets."""
    # an audio stream declared, never a packet: the audio input ends at 0
    z = OUT / "v_zero_packets.mkv"
    if not z.exists():
        ffmpeg(z, vsrc(1.5) + ["-f", "lavfi", "-i",
                               "anullsrc=r=16000:cl=mono", "-map", "0:v",
                               "-map", "1:a", "-t:a", "0"] + X264
               + ["-c:a", "pcm_s16le"])
    z = OUT / "v_zero_packets.mp4"
    if not z.exists():
        ffmpeg(z, vsrc(1.5) + sine(16000, 1.5) + ["-map", "0:v", "-map", "1:a",
                                                  "-frames:a", "0"]
               + X264 + ["-c:a", "aac"])
    for src, name in (("v_mp3.mp4", "v_corrupt_mp3.mp4"),
                      ("v_flac.mkv", "v_corrupt_flac.mkv"),
                      ("v_opus.mp4", "v_corrupt_opus.mp4"),
                      ("v_aac51.mp4", "v_corrupt_aac.mp4")):
        if not (OUT / name).exists():
            corrupt(OUT / src, OUT / name, every=2)
    for src, name in (("mp3_48k_vbr_st.mp3", "corrupt_mp3.mp3"),
                      ("aac_32k_mono.m4a", "corrupt_aac.m4a"),
                      ("vorbis_44k.mka", "corrupt_vorbis.mka"),
                      ("flac24_st_44k.flac", "corrupt_flac.flac")):
        if not (OUT / name).exists():
            corrupt(OUT / src, OUT / name, every=3)


def make_joined():
    """Streams that change mid-way and cut copies (edit lists)."""
    with tempfile.TemporaryDirectory() as tmp:
        t = pathlib.Path(tmp)
        a, b = t / "a.ogg", t / "b.ogg"
        if not (OUT / "chained.ogg").exists():
            ffmpeg(a, sine(44100, 0.6, 300) + ["-c:a", "libvorbis"])
            ffmpeg(b, sine(22050, 0.6, 500) + ["-c:a", "libvorbis"])
            (OUT / "chained.ogg").write_bytes(a.read_bytes() + b.read_bytes())
        if not (OUT / "rate_change.mp3").exists():
            ffmpeg(t / "a.mp3", sine(44100, 0.6, 300)
                   + ["-c:a", "libmp3lame", "-write_xing", "0"])
            ffmpeg(t / "b.mp3", sine(22050, 0.6, 500)
                   + ["-c:a", "libmp3lame", "-write_xing", "0"])
            (OUT / "rate_change.mp3").write_bytes(
                (t / "a.mp3").read_bytes() + (t / "b.mp3").read_bytes())
        for name, src, cut in (("v_cut_copy.mp4", "v_mp3.mp4", "0.37"),
                               ("v_cut_copy_aac.mp4", "v_aac51.mp4", "0.41"),
                               ("v_cut_copy.mkv", "v_flac.mkv", "0.55")):
            if not (OUT / name).exists():
                ffmpeg(OUT / name, ["-ss", cut, "-i", str(OUT / src), "-c",
                                    "copy"])
        if not (OUT / "v_audio_early.mkv").exists():
            ffmpeg(OUT / "v_audio_early.mkv", vsrc(2) + ["-itsoffset", "-0.5"]
                   + sine(16000, 2, 440) + ["-map", "0:v", "-map", "1:a"]
                   + X264 + ["-c:a", "libopus"])


def make_clips():
    OUT.mkdir(parents=True, exist_ok=True)
    for name, args in {**AUDIO_CLIPS, **VIDEO_CLIPS}.items():
        if not (OUT / name).exists():
            try:
                ffmpeg(OUT / name, args)
            except subprocess.CalledProcessError:
                print(f"ffmpeg could not write {name}", file=sys.stderr)
    make_special()
    make_joined()


def where(name):
    for d in (OUT, AUDIO, VIDEO, IMAGES):
        if (d / name).exists():
            return d / name
    raise FileNotFoundError(name)


def data_url(name):
    return (f"data:{TYPES[name.rsplit('.', 1)[1]]};base64,"
            + base64.b64encode(where(name).read_bytes()).decode())


Q_SOUND = {"sound": {"type": "choice", "instructions": "What makes this sound?",
                     "criteria": {"bird": None, "engine": "an engine",
                                  "voice": "a human voice", "nothing": "silence"}}}
Q_LOUD = {"loud": {"type": "noul", "instructions": "Is the recording loud?"},
          "count": {"type": "score", "instructions": "How many sound sources?",
                    "criteria": ["none", "one", "several"]}}
Q_SCENE = {"scene": {"type": "choice", "instructions": "What do the media show?",
                     "criteria": {"pattern": "a test pattern", "people": None,
                                  "animal": "an animal"}},
           "match": {"type": "noul", "instructions": "Does the sound fit?"}}
QUESTIONS = [Q_SOUND, Q_LOUD, Q_SCENE, {**Q_SOUND, **Q_LOUD}]


def requests():
    """(name, images, audio, videos)."""
    out = []
    for a in AUDIO_CLIPS:
        out.append((f"a:{a}", [], [a], []))
    for v in VIDEO_CLIPS:
        out.append((f"v:{v}", [], [], [v]))
    for v in ("v_zero_packets.mkv", "v_zero_packets.mp4", "v_corrupt_mp3.mp4",
              "v_corrupt_flac.mkv", "v_corrupt_opus.mp4", "v_corrupt_aac.mp4"):
        out.append((f"v:{v}", [], [], [v]))
    for a in ("corrupt_mp3.mp3", "corrupt_aac.m4a", "corrupt_vorbis.mka",
              "corrupt_flac.flac"):
        out.append((f"a:{a}", [], [a], []))
    out += [
        ("silent+corrupt", [], [], ["v_silent.mp4", "v_corrupt_aac.mp4"]),
        ("corrupt+silent", [], [], ["v_corrupt_aac.mp4", "v_silent.mp4"]),
        ("silent+corrupt-flac", [], [], ["v_silent.mp4", "v_corrupt_flac.mkv"]),
        ("zero+corrupt", [], [], ["v_zero_packets.mkv", "v_corrupt_aac.mp4"]),
        ("zero+sound", [], ["tone16k.wav"], ["v_zero_packets.mkv", "v_mp3.mp4"]),
        ("sound+zero", [], [], ["v_pcm.mov", "v_zero_packets.mp4"]),
        ("silent+sound", [], ["len_0.99s.wav"], ["v_silent.mp4", "v_flac.mkv"]),
        ("two-sound-videos", [], [], ["v_late_audio.mp4", "v_two_tracks.mkv"]),
        ("4clips-2videos", ["png_rgb_64x48.png"],
         ["mulaw_8k.wav", "flac24_96k_50.flac", "opus_st.weba", "aac_71.m4a"],
         ["v_opus.mp4", "v_audio_long.mkv"]),
        ("4clips-2videos-b", [],
         ["len_20ms.wav", "len_8.01s.flac", "alac_st.m4a", "u8_11k.wav"],
         ["v_aac51.mp4", "v_mono8k.mp4"]),
        ("short-long-pad", [], ["len_10ms_hop.wav", "len_16.05s.mp3"], []),
        ("long-and-video", ["jpg_q90_444_200x150.jpg"], ["len_75s.mp3"],
         ["v_audio_short.mp4"]),
        ("four-long", [], ["len_75s.mp3", "len_90s_8k.wav", "len_7.99s.flac",
                           "len_1sample.wav"], []),
        ("images-2videos-sound", ["png_rgb_64x48.png", "webp_lossy_180x120.webp"],
         ["dc_offset.wav"], ["v_late_audio.mkv", "v_pcm_s24.mkv"]),
        ("same-video-twice", [], [], ["v_mp3.mp4", "v_mp3.mp4"]),
        ("a:chained.ogg", [], ["chained.ogg"], []),
        ("a:rate_change.mp3", [], ["rate_change.mp3"], []),
        ("v:v_cut_copy.mp4", [], [], ["v_cut_copy.mp4"]),
        ("v:v_cut_copy_aac.mp4", [], [], ["v_cut_copy_aac.mp4"]),
        ("v:v_cut_copy.mkv", [], [], ["v_cut_copy.mkv"]),
        ("v:v_audio_early.mkv", [], [], ["v_audio_early.mkv"]),
        ("silent+ac3", [], [], ["v_silent.mp4", "v_ac3.mp4"]),
        ("2samples+corrupt", [], [], ["v_track_2samples.mkv",
                                      "v_corrupt_mp3.mp4"]),
        ("2samples+sound", [], ["mp3_8k_mono.mp3"],
         ["v_pcm_be24.mov", "v_track_2samples.mkv"]),
        ("10ms-track+clip", [], ["len_100ms.wav"], ["v_track_10ms.mov"]),
        ("10ms-track+silent", [], [], ["v_track_10ms.mov", "v_silent.mp4"]),
        ("track-first-video", [], ["clipped_s16.wav"],
         ["v_audio_before_video.mkv", "v_two_tracks_aac_first.mp4"]),
    ]
    return out


def ref_samples(mod, name):
    try:
        return mod._decode_audio(where(name).read_bytes())
    except Exception as e:       # noqa: BLE001
        return e


def our_samples(name, tmp):
    p = where(name)
    r = subprocess.run([str(CLEF), "audio", "--alone", "--dump", tmp, str(p)],
                       capture_output=True, text=True)
    line = json.loads(r.stdout.splitlines()[0])
    if "error" in line:
        return line["error"]
    return np.fromfile(pathlib.Path(tmp) / (p.name + ".f32"), dtype="<f4")


def compare_samples(mod, names):
    print("== samples: reference (PyAV) vs engine (clef audio)")
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            a, b = ref_samples(mod, name), our_samples(name, tmp)
            if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
                d = (float(np.abs(a - b).max()) if a.size == b.size else
                     float("nan"))
                flag = "" if a.size == b.size and d < 1e-4 else "  <-- differ"
                print(f"{name:32s} n {a.size:8d} {b.size:8d} max|d| {d:.3g}{flag}")
            else:
                ra = (a if not isinstance(a, np.ndarray) else f"{a.size} samples")
                if a is None:
                    ra = "None"
                rb = (b.get("type") if isinstance(b, dict) else f"{b.size} samples")
                print(f"{name:32s} ref {type(a).__name__}:{str(ra)[:60]} "
                      f"ours {rb}")


def ours_decide(ckpt, bodies):
    text = "".join(json.dumps(b) + "\n" for b in bodies)
    r = subprocess.run([str(CLEF), "decide", str(ckpt), "--raw"], input=text,
                       capture_output=True, text=True)
    lines = r.stdout.splitlines()
    assert len(lines) == len(bodies), r.stderr[-2000:]
    return [json.loads(x) for x in lines]


def sweep(mod, config, seed, cases, tmp):
    # the fixture generators take this file's clip makers: imported here
    from gen_omni_e2e_fixtures import step_effect, run
    path = (pathlib.Path(config) if config.endswith(".json")
            else ROOT / f"t/fixtures/models/{config}.json")
    ckpt = pathlib.Path(tmp) / f"{path.stem}_{seed}"
    subprocess.run([str(CLEF), "mkmodel", "--config", str(path),
                    "--tokenizer", str(reference.OMNI_TOKENIZER), "--seed",
                    str(seed), "--shards", "2", "--out", str(ckpt)],
                   check=True, stdout=subprocess.DEVNULL)
    model, processor = mod.load_release_model(ckpt, device="cpu",
                                              dtype=torch.float32)
    pad = processor.tokenizer.pad_token_id
    bodies = []
    for n, (name, images, audio, videos) in enumerate(cases):
        body = {"model": "clef-omni", "state": f"Sweep case {n}."}
        if images:
            body["images"] = [data_url(x) for x in images]
        if audio:
            body["audio"] = [data_url(x) for x in audio]
        if videos:
            body["videos"] = [data_url(x) for x in videos]
        body["questions"] = QUESTIONS[n % len(QUESTIONS)]
        bodies.append(body)
    answers = ours_decide(ckpt, bodies)
    worst = (0.0, None)
    bad = 0
    print(f"== {config} seed {seed}: {len(cases)} requests")
    for (name, *_), body, ans in zip(cases, bodies, answers):
        try:
            enc = mod.encode_record(processor.tokenizer, body,
                                    max_length=MAX_LENGTH, processor=processor)
        except Exception as e:       # noqa: BLE001
            if "error" in ans:
                er = ans["error"]
                print(f"{name:34s} both refuse: ref {type(e).__name__}: "
                      f"{str(e)[:60]!r}; ours {er['status']} {er['type']} "
                      f"{er.get('loc')}")
            else:
                bad += 1
                print(f"{name:34s} MISMATCH: ref raises {type(e).__name__}: "
                      f"{str(e)[:80]!r}; ours answers")
            continue
        if "error" in ans:
            bad += 1
            er = ans["error"]
            print(f"{name:34s} MISMATCH: ref answers ({len(enc.input_ids)} "
                  f"tokens); ours {er['status']} {er['type']} {er.get('loc')}: "
                  f"{er['message'][:120]}")
            continue
        probs = [ql.softmax(-1) for ql in run(model, mod, enc, pad)]
        effect = step_effect(model, mod, enc, pad, probs)
        toks = ans["usage"]["input_tokens"] == len(enc.input_ids)
        arg, d = True, 0.0
        for q, p in zip(enc.questions, probs):
            raw = ans["answers"][q.question_id]["raw"]
            assert raw["options"] == list(q.option_ids), name
            ours = torch.tensor(raw["probabilities"], dtype=torch.float64)
            arg &= int(ours.argmax()) == int(p.argmax())
            d = max(d, float((ours - p.double()).abs().max()))
        bound = BASE_TOL + effect
        ok = toks and arg and d <= bound
        bad += not ok
        heard = (enc.media or {}).get("use_audio_in_video", False)
        if ok and d / bound > worst[0]:
            worst = (d / bound, name)
        print(f"{name:34s} {'ok ' if ok else 'MISMATCH'} tokens "
              f"{len(enc.input_ids)}/{ans['usage']['input_tokens']} argmax "
              f"{'=' if arg else '!='} max|dp| {d:.3g} bound {bound:.3g}"
              f"{' heard' if heard else ''}")
    print(f"== {config} seed {seed}: {bad} mismatches of {len(cases)}; "
          f"closest to its bound: {worst[1]} at {worst[0]:.2f} of it")
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default=None, help="regex over request names")
    ap.add_argument("--checkpoint", action="append", default=None,
                    help="CONFIG:SEED, CONFIG a name under "
                    "t/fixtures/models or a .json path (default omni1:21 "
                    "omni2:7)")
    ap.add_argument("--no-samples", action="store_true")
    args = ap.parse_args()
    make_clips()
    mod = reference.load_omni_joint_schema_model()
    cpu_without_accelerate()
    torch.manual_seed(0)
    cases = [c for c in requests()
             if args.only is None or re.search(args.only, c[0])]
    if not args.no_samples:
        names = sorted({x for c in cases for x in c[2] + c[3]})
        compare_samples(mod, names)
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for ck in args.checkpoint or ["omni1:21", "omni2:7"]:
            config, seed = ck.split(":")
            bad += sweep(mod, config, int(seed), cases, tmp)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
