/*
 * The video path on arbitrary bytes: the in-memory demuxer (mov/mp4,
 * matroska/webm only), the scan, the decoder (h264, hevc, vp8, vp9, av1),
 * the colour conversion and the processor, as clef_video_load() runs them
 * in the engine, once with dense Clef's sampling (frame indices from the
 * scan, libavcodec frames resized by the processor) and once with Clef
 * Omni's timed sampling (frames kept by their times as they decode,
 * libswscale scaling).  Never a crash or a leak; a video loaded has its
 * frames (a whole number of temporal patches when timed: the reference
 * repeats the last frame), a grid of whole merge blocks and, sampled
 * uniformly, its pair times; a refusal is a complete 400 naming video 0.
 * The limits are lowered (64 Ki pixels a frame, 300 frames, 2 s of
 * decoding) so that an input claiming a huge or long video costs
 * milliseconds, and the pixel budget of the processor to 1 Mi.
 */
#include <stdint.h>

#include "fuzz_common.h"
#include "media/video_process.h"
#include "media/video_sample.h"

static void
load(const uint8_t *data, size_t size, const clef_video_limits *lim,
    const clef_video_config *vc)
{
    clef_video  v;
    clef_error  err;
    int         timed = vc->sampling == CLEF_VIDEO_TIMED;

    if (clef_video_load(data, size, 0, lim, vc, &v, &err) != 0) {
        if (err.status != 400 && err.status != 500) {
            fuzz_fail("refusal with status %d", err.status);
        }
        if (err.status == 400
            && strcmp(err.loc, "[\"body\",\"videos\",0]") != 0)
        {
            fuzz_fail("refusal without its video: %s", err.loc);
        }
        return;
    }
    if (v.rgb == NULL || v.n_frames < 2 || v.grid_t < 1
        || v.grid_t != (v.n_frames + v.temporal - 1) / v.temporal
        || v.grid_h < 2 || v.grid_w < 2 || v.grid_h % 2 || v.grid_w % 2
        || (timed && v.n_frames % v.temporal != 0)
        || (!timed && (v.times == NULL || v.info.n_frames < v.n_frames)))
    {
        fuzz_fail("%s: loaded %d frames, grid %d %d %d",
                  timed ? "timed" : "uniform", v.n_frames, v.grid_t,
                  v.grid_h, v.grid_w);
    }
    clef_video_free(&v);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    clef_video_limits  lim;
    clef_video_config  vc;

    clef_video_limits_default(&lim);
    lim.max_pixels = 1 << 16;
    lim.max_frames = 300;
    lim.max_decode_pixels = (int64_t) 1 << 24;
    lim.max_decode_seconds = 2.0;
    lim.threads = 1;
    clef_video_config_default(&vc);
    vc.max_pixels = 1 << 20;
    load(data, size, &lim, &vc);

    clef_video_config_default(&vc);
    clef_video_config_omni(&vc, CLEF_OMNI_POSITIONS_PER_SECOND);
    load(data, size, &lim, &vc);
    return 0;
}
