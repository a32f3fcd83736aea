"""Every pixel of ngx_clef's video frames against the reference's.

    build/refenv-video/bin/python t/reference/compare_video.py [CLIP...]

For each clip (default: the accepted clips of t/fixtures/video/cases.jsonl)
runs `build/clef video --dump` and compares, value by value:
  decoded  the sampled frames as decoded (rgb24, upright) with torchcodec's
           VideoDecoder(seek_mode="exact").get_frames_at(indices), the call
           transformers makes;
  resized  the resized frames with the reference processor's
           pixel_values_videos, un-patchified to uint8 (exact inverse);
and the indices, fps, grid and "<t seconds>" texts with the reference's.
Prints one line per clip and the totals: frames and values compared, how
many differ, and the largest difference.  Writes nothing.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_video_fixtures as g  # noqa: E402

from transformers import AutoProcessor  # noqa: E402
from torchcodec.decoders import VideoDecoder  # noqa: E402
import torch  # noqa: E402

CLEF = os.path.join(g.REPO, "build", "clef")


def main():
    names = sys.argv[1:]
    cases = [json.loads(l) for l in open(os.path.join(g.ROOT, "cases.jsonl"))]
    cases = [c for c in cases if "error" not in c and (not names or c["name"] in names)]
    d = g.release_dir()
    proc = AutoProcessor.from_pretrained(d)
    tot = {"frames": 0, "dec_values": 0, "dec_diff": 0, "dec_max": 0,
           "res_values": 0, "res_diff": 0, "res_max": 0, "meta_diff": 0}
    with tempfile.TemporaryDirectory() as out:
        for c in cases:
            path = os.path.join(g.ROOT, c["file"])
            r = subprocess.run([CLEF, "video", "--dump", out, path],
                               capture_output=True, text=True, check=True)
            ours = json.loads(r.stdout.splitlines()[0])
            if "error" in ours:
                print(f"{c['name']}: refused: {ours['error']}")
                tot["meta_diff"] += 1
                continue
            meta = proc.video_processor(videos=[path], return_metadata=True,
                                        return_tensors="pt")
            m = meta["video_metadata"][0]
            idx = [int(i) for i in m.frames_indices]
            ref_out = proc(text=[g.VIDEO_PLACEHOLDER + "\n"], videos=[path],
                           return_tensors="pt")
            grid = [int(x) for x in ref_out["video_grid_thw"][0]]
            text = proc.tokenizer.decode(ref_out["input_ids"][0].tolist())
            import re
            times = re.findall(r"<[0-9.]+ seconds>", text)
            same_meta = (ours["indices"] == idx and ours["grid"] == grid
                         and ours["times"] == times
                         and ours["frames"] == m.total_num_frames
                         and float.fromhex(ours["fps"]) == float(m.fps))
            tot["meta_diff"] += not same_meta

            dec = VideoDecoder(path, seek_mode="exact", num_ffmpeg_threads=0)
            ref = dec.get_frames_at(idx).data.permute(0, 2, 3, 1).numpy()
            base = os.path.basename(path)
            mine = np.fromfile(os.path.join(out, base + ".decoded"), np.uint8)
            mine = mine.reshape(ref.shape)
            dd = np.abs(mine.astype(np.int16) - ref.astype(np.int16))

            v = g.unpatchify(ref_out["pixel_values_videos"], grid)
            u8 = torch.round(v * 127.5 + 127.5).to(torch.uint8)
            u8 = u8.permute(0, 2, 3, 1).numpy()[: len(idx)]
            mres = np.fromfile(os.path.join(out, base + ".resized"), np.uint8)
            mres = mres.reshape(u8.shape)
            rd = np.abs(mres.astype(np.int16) - u8.astype(np.int16))

            tot["frames"] += len(idx)
            tot["dec_values"] += dd.size
            tot["dec_diff"] += int(np.count_nonzero(dd))
            tot["dec_max"] = max(tot["dec_max"], int(dd.max()))
            tot["res_values"] += rd.size
            tot["res_diff"] += int(np.count_nonzero(rd))
            tot["res_max"] = max(tot["res_max"], int(rd.max()))
            print(f"{c['name']}: {len(idx)} frames, meta {'same' if same_meta else 'DIFFERS'}, "
                  f"decoded {np.count_nonzero(dd)}/{dd.size} differ (max {dd.max()}), "
                  f"resized {np.count_nonzero(rd)}/{rd.size} differ (max {rd.max()})")
    print(json.dumps(tot))


if __name__ == "__main__":
    main()
