"""Video clips and the reference video processor's output on them.

    t/reference/fetch-reference.sh video
    build/refenv-video/bin/python t/reference/gen_video_fixtures.py

Encodes its own clips with Debian's ffmpeg (several codecs, containers,
frame rates including variable ones, durations from one frame to past the
768-frame cap, rotation, odd sizes, colour tags, clips with sound, and
hostile files) and writes t/fixtures/video/:

  clips/NAME.EXT   the clips (a few hundred KB in all)
  cases.jsonl      per clip: the file, its content type, and either the
                   reference's output or the refusal expected:
                     frames, fps (float.hex), indices, grid [t, h, w],
                     times (each pair's "<t seconds>" text, as the
                     processor put it in the prompt), tokens,
                     decoded: per sampled frame the 64-bit weighted sum
                       (below) of torchcodec's rgb24 frame as decoded,
                     resized: the same of each resized frame, i.e.
                       round(pixel_values_videos * 127.5 + 127.5)
                       un-patchified (the inverse is exact: asserted),
                     pixels: sampled [row, col, float.hex(value)] of
                       pixel_values_videos
  math.jsonl       the processor's arithmetic on random inputs: frame
                   count and indices (sample_frames), the video
                   smart_resize, the pair times and their text

The reference is what transformers' AutoProcessor builds from a release
directory (Qwen3VLProcessor with Qwen3VLVideoProcessor, from the release's
video_preprocessor_config.json), decoding with torchcodec on the system's
FFmpeg.  It is given file paths: transformers' load_video takes a URL or a
path, and refuses a data: URL (TypeError), so a server in front of it must
write the request's bytes somewhere first.

The weighted sum of bytes b[0..n) is sum(b[i] * w[i]) mod 2^64 with
w[i] = (i * 0x9E3779B97F4A7C15 mod 2^64) | 1: any single changed byte
changes it, and numpy computes it fast (t/unit/test_video.c does the same).
"""
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch
from transformers import AutoProcessor
from transformers.models.qwen3_vl.video_processing_qwen3_vl import smart_resize
from transformers.video_utils import VideoMetadata
from torchcodec.decoders import VideoDecoder

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.join(HERE, "..", "..")
ROOT = os.path.join(REPO, "t", "fixtures", "video")
CLIPS = os.path.join(ROOT, "clips")
TOKENIZER = os.path.join(REPO, "t", "fixtures", "tokenizer", "qwen3")
VIDEO_PLACEHOLDER = "<|vision_start|><|video_pad|><|vision_end|>"

# the release's video_preprocessor_config.json (docs/spec/backbone.md §5.4)
VIDEO_CONFIG = {
    "size": {"shortest_edge": 4096, "longest_edge": 25165824},
    "patch_size": 16, "temporal_patch_size": 2, "merge_size": 2,
    "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
    "processor_class": "Qwen3VLProcessor",
    "video_processor_type": "Qwen3VLVideoProcessor",
}
IMAGE_CONFIG = {
    "size": {"shortest_edge": 65536, "longest_edge": 16777216},
    "patch_size": 16, "temporal_patch_size": 2, "merge_size": 2,
    "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
    "do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": True,
    "do_resize": True, "do_convert_rgb": True, "resample": 3,
    "image_processor_type": "Qwen2VLImageProcessorFast",
    "processor_class": "Qwen3VLProcessor",
}

MASK = (1 << 64) - 1


def wsum(b):
    """The weighted byte sum of the docstring, as a 16-digit hex string."""
    b = np.ascontiguousarray(b, dtype=np.uint8).reshape(-1).astype(np.uint64)
    i = np.arange(b.size, dtype=np.uint64)
    with np.errstate(over="ignore"):
        w = (i * np.uint64(0x9E3779B97F4A7C15)) | np.uint64(1)
        s = np.sum(b * w, dtype=np.uint64)
    return "%016x" % int(s)


def ffmpeg(out, *args):
    cmd = ["ffmpeg", "-v", "error", "-y", "-nostdin", *args,
           "-fflags", "+bitexact", "-flags:v", "+bitexact", out]
    subprocess.run(cmd, check=True)


SRC = ["-f", "lavfi", "-i"]


def clips():
    """(name, ext, content_type, ffmpeg args); a callable instead of args
    writes the file itself."""
    x264 = ["-c:v", "libx264", "-preset", "veryfast", "-threads", "1"]
    x265 = ["-c:v", "libx265", "-preset", "ultrafast", "-x265-params",
            "pools=1:frame-threads=1:log-level=error"]
    vp8 = ["-c:v", "libvpx", "-threads", "1", "-b:v", "300k"]
    vp9 = ["-c:v", "libvpx-vp9", "-threads", "1", "-row-mt", "0",
           "-b:v", "300k", "-deadline", "realtime", "-cpu-used", "8"]
    av1 = ["-c:v", "libaom-av1", "-cpu-used", "8", "-threads", "1",
           "-row-mt", "0", "-b:v", "300k"]
    ts = lambda w, h, r, t: SRC + [f"testsrc2=size={w}x{h}:rate={r}", "-t", str(t)]
    sine = SRC + ["sine=frequency=440:sample_rate=48000"]
    mp4, mkv, webm, mov = "video/mp4", "video/x-matroska", "video/webm", "video/quicktime"
    c = [
        ("h264_160x120_30fps", "mp4", mp4, ts(160, 120, 30, 3) + x264 + ["-pix_fmt", "yuv420p"]),
        ("h264_640x360_bframes", "mp4", mp4, ts(640, 360, 30, 2) + x264 + ["-pix_fmt", "yuv420p", "-bf", "3"]),
        ("h264_1280x720_2fps_15s", "mp4", mp4, ts(1280, 720, 2, 15) + x264 + ["-pix_fmt", "yuv420p", "-crf", "40"]),
        ("h264_odd_161x97_444", "mp4", mp4, ts(161, 97, 25, 2) + x264 + ["-pix_fmt", "yuv444p"]),
        ("h264_422_200x150", "mkv", mkv, ts(200, 150, 25, 2) + x264 + ["-pix_fmt", "yuv422p"]),
        ("h264_mkv_30fps", "mkv", mkv, ts(192, 144, 30, 3) + x264 + ["-pix_fmt", "yuv420p"]),
        ("h264_mov_ntsc", "mov", mov, ts(176, 144, "30000/1001", 3) + x264 + ["-pix_fmt", "yuv420p"]),
        ("h264_60fps", "mp4", mp4, ts(192, 108, 60, 2) + x264 + ["-pix_fmt", "yuv420p"]),
        ("h264_vfr", "mp4", mp4, ts(160, 96, 30, 4) + x264 + [
            "-pix_fmt", "yuv420p", "-vf",
            "setpts='if(lt(N,30),N/30,if(lt(N,60),1+(N-30)/10,4+(N-60)/60))/TB'",
            "-fps_mode", "vfr"]),
        ("h264_vfr_mkv", "mkv", mkv, ts(128, 96, 24, 5) + x264 + [
            "-pix_fmt", "yuv420p", "-vf", "setpts='(N+0.37*mod(N*N,7))/24/TB'",
            "-fps_mode", "vfr"]),
        ("h264_rot90", "mp4", mp4, rotated(ts(160, 96, 25, 2) + x264 + ["-pix_fmt", "yuv420p"], 90)),
        ("h264_rot270", "mp4", mp4, rotated(ts(160, 96, 25, 2) + x264 + ["-pix_fmt", "yuv420p"], 270)),
        ("h264_rot180", "mov", mov, rotated(ts(128, 96, 25, 2) + x264 + ["-pix_fmt", "yuv420p"], 180)),
        ("h264_rot90_w128", "mp4", mp4, rotated(ts(128, 64, 25, 2) + x264 + ["-pix_fmt", "yuv420p"], 90)),
        ("h264_bt709_tv", "mp4", mp4, ts(160, 120, 25, 2) + x264 + [
            "-pix_fmt", "yuv420p", "-colorspace", "bt709", "-color_primaries", "bt709",
            "-color_trc", "bt709", "-color_range", "tv"]),
        ("h264_bt709_tv_w150", "mp4", mp4, ts(150, 120, 25, 2) + x264 + [
            "-pix_fmt", "yuv420p", "-colorspace", "bt709", "-color_primaries", "bt709",
            "-color_trc", "bt709", "-color_range", "tv"]),
        ("h264_full_range", "mp4", mp4, ts(160, 120, 25, 2) + x264 + ["-pix_fmt", "yuvj420p", "-color_range", "pc"]),
        ("h264_full_range_w150", "mkv", mkv, ts(150, 120, 25, 2) + x264 + ["-pix_fmt", "yuvj420p", "-color_range", "pc"]),
        ("h264_bt2020", "mp4", mp4, ts(160, 120, 25, 2) + x264 + [
            "-pix_fmt", "yuv420p", "-colorspace", "bt2020nc", "-color_primaries", "bt2020",
            "-color_trc", "bt2020-10"]),
        ("h264_bt601", "mkv", mkv, ts(150, 120, 25, 2) + x264 + [
            "-pix_fmt", "yuv420p", "-colorspace", "smpte170m", "-color_primaries", "smpte170m",
            "-color_trc", "smpte170m"]),
        ("h264_aac", "mp4", mp4, ts(160, 120, 25, 3) + sine + x264 + [
            "-pix_fmt", "yuv420p", "-c:a", "aac", "-t", "3"]),
        ("vp8_176x144_24fps", "webm", webm, ts(176, 144, 24, 3) + vp8),
        ("vp9_odd_161x97", "webm", webm, ts(161, 97, 25, 2) + vp9 + ["-pix_fmt", "yuv420p"]),
        ("vp9_10bit", "webm", webm, ts(160, 96, 25, 2) + vp9 + ["-pix_fmt", "yuv420p10le", "-profile:v", "2"]),
        ("vp9_opus", "webm", webm, ts(192, 96, 30, 2) + sine + vp9 + [
            "-pix_fmt", "yuv420p", "-c:a", "libopus", "-t", "2"]),
        ("hevc_192x108", "mp4", mp4, ts(192, 108, 25, 2) + x265 + ["-pix_fmt", "yuv420p", "-tag:v", "hvc1"]),
        ("hevc_10bit_mkv", "mkv", mkv, ts(160, 96, 30, 2) + x265 + ["-pix_fmt", "yuv420p10le"]),
        ("av1_128x96", "mp4", mp4, ts(128, 96, 25, 2) + av1 + ["-pix_fmt", "yuv420p"]),
        ("av1_150x100_webm", "webm", webm, ts(150, 100, 24, 2) + av1 + ["-pix_fmt", "yuv420p"]),
        ("frames_2", "mp4", mp4, ts(160, 120, 25, 1) + x264 + ["-pix_fmt", "yuv420p", "-frames:v", "2"]),
        ("frames_3", "mp4", mp4, ts(160, 120, 25, 1) + x264 + ["-pix_fmt", "yuv420p", "-frames:v", "3"]),
        ("frames_5", "webm", webm, ts(160, 120, 25, 1) + vp9 + ["-pix_fmt", "yuv420p", "-frames:v", "5"]),
        ("frame_cap_400s", "mp4", mp4, ts(64, 48, 4, 400) + x264 + ["-pix_fmt", "yuv420p", "-g", "400", "-crf", "45"]),
        ("tiny_24x20", "mp4", mp4, ts(24, 20, 25, 2) + x264 + ["-pix_fmt", "yuv420p"]),
        ("wide_1600x16", "mp4", mp4, ts(1600, 16, 25, 1) + x264 + ["-pix_fmt", "yuv420p"]),
        # refused
        ("one_frame", "mp4", mp4, ts(160, 120, 25, 1) + x264 + ["-pix_fmt", "yuv420p", "-frames:v", "1"]),
        ("mpeg4_part2", "mp4", mp4, ts(160, 120, 25, 1) + ["-c:v", "mpeg4"]),
        ("audio_only", "mp4", mp4, sine + ["-t", "1", "-c:a", "aac"]),
        ("avi_container", "avi", "video/avi", ts(160, 120, 25, 1) + x264 + ["-pix_fmt", "yuv420p"]),
        ("hours_header", "mp4", mp4, SRC + ["color=c=gray:size=32x32:rate=1", "-t", "7200"] + x264 + ["-pix_fmt", "yuv420p", "-g", "7200"]),
        ("aspect_3400x16", "mp4", mp4, ts(3400, 16, 25, 1) + x264 + ["-pix_fmt", "yuv420p"]),
        ("truncated_moov_end", "mp4", mp4, lambda out: truncate("h264_160x120_30fps.mp4", out, 0.5)),
        ("truncated_faststart", "mp4", mp4, lambda out: faststart_cut(out)),
        ("gigapixel_header", "mp4", mp4, lambda out: gigapixel(out)),
        ("garbage", "mp4", mp4, lambda out: open(out, "wb").write(
            random.Random(7).randbytes(20000))),
    ]
    return c


def rotated(args, degrees):
    """Encoded, then remuxed with a display matrix: ffmpeg 5.1 keeps the
    rotate tag only on a stream copy."""
    def make(out):
        tmp = out + ".plain" + os.path.splitext(out)[1]
        ffmpeg(tmp, *args)
        ffmpeg(out, "-i", tmp, "-c", "copy", "-metadata:s:v:0", f"rotate={degrees}")
        os.remove(tmp)
    return make


def truncate(src, out, frac):
    data = open(os.path.join(CLIPS, src), "rb").read()
    open(out, "wb").write(data[: int(len(data) * frac)])


def faststart_cut(out):
    tmp = out + ".full.mp4"
    ffmpeg(tmp, *(SRC + ["testsrc2=size=160x120:rate=25", "-t", "3"]),
           "-c:v", "libx264", "-threads", "1", "-pix_fmt", "yuv420p",
           "-movflags", "+faststart")
    data = open(tmp, "rb").read()
    os.remove(tmp)
    open(out, "wb").write(data[: int(len(data) * 0.6)])


def gigapixel(out):
    """A small H.264 mp4 whose sample description claims 65535 x 65535."""
    data = bytearray(open(os.path.join(CLIPS, "h264_160x120_30fps.mp4"), "rb").read())
    at = data.find(b"avc1", data.find(b"stsd"))
    assert at > 0
    data[at + 28: at + 32] = b"\xff\xff\xff\xff"
    at = data.find(b"tkhd")
    # tkhd v0: width and height 16.16 at the box's end
    size = int.from_bytes(data[at - 4: at], "big")
    end = at - 4 + size
    data[end - 8: end] = b"\xff\xff\x00\x00\xff\xff\x00\x00"
    open(out, "wb").write(bytes(data))


def release_dir():
    d = tempfile.mkdtemp(prefix="clef-video-ref-")
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(TOKENIZER, f), d)
    json.dump(IMAGE_CONFIG, open(os.path.join(d, "preprocessor_config.json"), "w"))
    json.dump(VIDEO_CONFIG, open(os.path.join(d, "video_preprocessor_config.json"), "w"))
    return d


def unpatchify(pv, grid):
    t, h, w = grid
    v = pv.reshape(t, h // 2, w // 2, 2, 2, 3, 2, 16, 16)
    # -> (t, temporal, channel, h/2, 2, 16, w/2, 2, 16)
    v = v.permute(0, 6, 5, 1, 3, 7, 2, 4, 8).reshape(t * 2, 3, h * 16, w * 16)
    return v


def reference(proc, path, rng):
    vp = proc.video_processor
    meta_out = vp(videos=[path], return_metadata=True, return_tensors="pt")
    meta = meta_out["video_metadata"][0]
    out = proc(text=[VIDEO_PLACEHOLDER + "\n"], videos=[path], return_tensors="pt")
    pv = out["pixel_values_videos"]
    assert torch.equal(pv, meta_out["pixel_values_videos"])
    grid = [int(x) for x in out["video_grid_thw"][0]]
    ids = out["input_ids"][0].tolist()
    text = proc.tokenizer.decode(ids)
    times = re.findall(r"<[0-9.]+ seconds>", text)
    assert len(times) == grid[0], (times, grid)
    video_pad = proc.tokenizer.convert_tokens_to_ids("<|video_pad|>")
    tokens = sum(1 for i in ids if i == video_pad)

    idx = [int(i) for i in meta.frames_indices]
    dec = VideoDecoder(path, seek_mode="exact", num_ffmpeg_threads=0)
    assert dec.metadata.num_frames == meta.total_num_frames
    frames = dec.get_frames_at(idx).data.permute(0, 2, 3, 1).contiguous().numpy()

    v = unpatchify(pv, grid)
    u8 = torch.round(v * 127.5 + 127.5)
    assert torch.equal((u8 - 127.5) / 127.5, v), "not an exact inverse"
    u8 = u8.to(torch.uint8).permute(0, 2, 3, 1).contiguous().numpy()[: len(idx)]

    rows = [(int(rng.integers(pv.shape[0])), int(rng.integers(pv.shape[1]))) for _ in range(24)]
    return {
        "frames": int(meta.total_num_frames), "fps": float(meta.fps).hex(),
        "indices": idx, "grid": grid, "times": times, "tokens": tokens,
        "size": [int(frames.shape[2]), int(frames.shape[1])],
        "decoded": [wsum(f) for f in frames],
        "resized": [wsum(f) for f in u8],
        "pixels": [[r, c, float(pv[r, c]).hex()] for r, c in rows],
    }


def make_clips():
    shutil.rmtree(CLIPS, ignore_errors=True)
    os.makedirs(CLIPS)
    out = []
    for name, ext, ctype, args in clips():
        path = os.path.join(CLIPS, f"{name}.{ext}")
        if callable(args):
            args(path)
        else:
            ffmpeg(path, *args)
        out.append((name, ext, ctype, path))
    return out


# what ngx_clef refuses, and why, where the reference does otherwise or
# fails in its own words
REFUSED = {
    "one_frame": "video_one_frame",
    "mpeg4_part2": "video_codec_unsupported",
    "audio_only": "video_no_stream",
    "avi_container": "video_invalid",
    "hours_header": "video_too_long",
    "aspect_3400x16": "video_invalid",
    "truncated_moov_end": "video_invalid",
    "gigapixel_header": "video_too_many_pixels",
    "garbage": "video_invalid",
}


# damaged files the reference may still read: expected as it reads them,
# or refused as video_invalid where it fails too
MAY_FAIL = {"truncated_faststart"}


def math_cases(vp, proc):
    rng = random.Random(20261205)
    out = []
    for _ in range(1500):
        total = rng.choice([1, 2, 3, 4, 5, 7, 8, 9, 30, 31, 61, 100, 767, 768, 769,
                            1535, 1536, 1537, 5000, rng.randint(1, 40000)])
        fps = rng.choice([30.0, 29.97002997002997, 25.0, 24.0, 60.0, 1.0, 2.0, 0.5,
                          rng.uniform(0.2, 120.0), total / rng.uniform(0.05, 900.0)])
        idx = vp.sample_frames(VideoMetadata(total_num_frames=total, fps=fps))
        n = len(idx)
        h = rng.choice([1, 15, 16, 31, 32, 33, 97, 120, 480, 720, 1080, 2160,
                        rng.randint(1, 4000)])
        w = rng.choice([1, 15, 32, 33, 161, 160, 640, 1280, 1920, 3840,
                        rng.randint(1, 4000)])
        try:
            rh, rw = smart_resize(num_frames=n, height=h, width=w, factor=32,
                                  temporal_factor=2, min_pixels=4096,
                                  max_pixels=25165824)
            size = [rh, rw]
        except ValueError as e:
            size = str(e).split(":")[0][:40]
        times = None
        if 2 <= n <= 48:
            ts = proc._calculate_timestamps(list(idx), fps, 2)
            times = [f"<{t:.1f} seconds>" for t in ts]
        out.append({"total": total, "fps": float(fps).hex(), "n": n,
                    "indices": [int(i) for i in idx] if n <= 12 else None,
                    "indices_sum": int(np.sum(idx)), "h": h, "w": w,
                    "size": size, "times": times})
    return out


def main():
    rng = np.random.default_rng(20261205)
    made = make_clips()
    d = release_dir()
    proc = AutoProcessor.from_pretrained(d)
    assert type(proc).__name__ == "Qwen3VLProcessor", type(proc)
    assert type(proc.video_processor).__name__ == "Qwen3VLVideoProcessor"
    cases = []
    for name, ext, ctype, path in made:
        case = {"name": name, "file": f"clips/{name}.{ext}", "content_type": ctype}
        try:
            ref = reference(proc, path, rng)
        except Exception as e:  # the reference's own refusal
            ref = None
            case["reference_error"] = f"{type(e).__name__}: {str(e)[:160]}"
        if name in REFUSED or (ref is None and name in MAY_FAIL):
            case["error"] = {"status": 400, "type": REFUSED.get(name, "video_invalid")}
        elif ref is None:
            raise SystemExit(f"{name}: the reference failed: {case['reference_error']}")
        else:
            case.update(ref)
        cases.append(case)
        print(name, case.get("grid"), case.get("error") or "", case.get("reference_error") or "",
              file=sys.stderr)
    with open(os.path.join(ROOT, "cases.jsonl"), "w") as f:
        for c in cases:
            f.write(json.dumps(c) + "\n")
    with open(os.path.join(ROOT, "math.jsonl"), "w") as f:
        for c in math_cases(proc.video_processor, proc):
            f.write(json.dumps(c) + "\n")
    shutil.rmtree(d)


if __name__ == "__main__":
    main()
