/*
 * What a build without FFmpeg (make FFMPEG=no) answers where the decoders
 * would run: each entry point of the FFmpeg-using sources (the Makefile's
 * FFMPEG_SRC) fails with media_unsupported (clef_error_fail's table), so
 * that media it cannot decode get a clear error, never a silent skip.
 *
 * The build exists for machines without FFmpeg's headers, such as the GPU
 * machine t/cuda/device-check.sh runs on; never the default.
 */
#include "media/audio_decode.h"
#include "media/video_decode.h"


int
clef_video_open(const uint8_t *data, size_t len, int index,
    const clef_video_limits *lim, clef_video_decoder **out, clef_error *err)
{
    *out = NULL;
    return clef_error_fail(err, CLEF_E_UNSUPPORTED,
        "Video %d cannot be decoded: this build of ngx_clef has no FFmpeg "
        "(made with FFMPEG=no).", index);
}


int
clef_video_open_timed(const uint8_t *data, size_t len, int index,
    const clef_video_limits *lim, const clef_video_config *vc,
    clef_video_decoder **out, clef_error *err)
{
    return clef_video_open(data, len, index, lim, out, err);
}


int
clef_video_decode_timed(clef_video_decoder *d, clef_video_frame_fn fn,
    void *ctx, clef_error *err)
{
    return clef_error_fail(err, CLEF_E_INTERNAL,
                           "No video decoder: built with FFMPEG=no.");
}


const clef_video_info *
clef_video_decoder_info(const clef_video_decoder *d)
{
    return NULL;
}


int
clef_video_decode_frames(clef_video_decoder *d, const int64_t *indices,
    int32_t n, clef_video_frame_fn fn, void *ctx, clef_error *err)
{
    return clef_error_fail(err, CLEF_E_INTERNAL,
                           "No video decoder: built with FFMPEG=no.");
}


void
clef_video_close(clef_video_decoder *d)
{
}


int
clef_audio_decode(const uint8_t *data, size_t len, int index,
    const clef_audio_limits *lim, float **samples, int64_t *n,
    clef_audio_info *info, clef_error *err)
{
    *samples = NULL;
    *n = 0;
    return clef_error_fail(err, CLEF_E_UNSUPPORTED,
        "Audio clip %d cannot be decoded: this build of ngx_clef has no "
        "FFmpeg (made with FFMPEG=no).", index);
}
