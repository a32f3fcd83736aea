/*
 * Decoding a video file held in memory, the way the reference decodes it.
 *
 * The reference (transformers 5.x, Qwen3VLVideoProcessor.fetch_videos ->
 * read_video_torchcodec) opens the file with torchcodec's VideoDecoder
 * (seek_mode "exact") on the system's FFmpeg and asks it for the frames at
 * the sampled indices.  What that means, read in torchcodec's source and
 * checked against it on t/fixtures/video:
 *
 *   stream   av_find_best_stream's video stream, decoded by
 *            avcodec_find_decoder()'s decoder for its codec;
 *   scan     every packet of the file is read once before decoding: the
 *            stream's frame count is its number of packets (those marked
 *            discard left out), its begin the smallest pts (dts when there
 *            is none) and its end the largest pts + duration, each turned
 *            into seconds as pts * num / den in double; the average fps is
 *            frames / (end - begin), the header's r_frame_rate when that
 *            span is 0.  Frame i is the i-th packet in pts order;
 *   frames   frame i is the first frame the decoder outputs whose pts (its
 *            packet's dts when it has none) is at least packet i's pts;
 *   colour   to rgb24 by FFmpeg itself, with the frame's own matrix and
 *            range tags: libswscale (flags 0, sws_setColorspaceDetails from
 *            the frame's colorspace and range) when the stream needs no
 *            rotation and its width is a multiple of 32, otherwise
 *            libavfilter's graph "copy" (or "format=rgb24,ROTATION") into a
 *            buffersink of rgb24, which is where torchcodec's CPU path
 *            branches (its swscale path needs 32-aligned widths);
 *   rotation the stream's display matrix rounded to a multiple of 90
 *            degrees: transpose=cclock (90), transpose=clock (-90),
 *            hflip,vflip (180); width and height swap for +-90;
 *   size     every decoded frame must have the stream's size (torchcodec
 *            writes each frame into a batch sized from the stream's
 *            parameters and refuses one that does not fit).
 *
 * Safety, because the file comes from a request:
 *   - input only from memory, through a custom AVIO context (read and seek
 *     over the buffer); AVFormatContext.io_open is replaced by a function
 *     that refuses every open, so no demuxer can reach a file, a URL or
 *     any other protocol (mov's dref, HLS-style references, image
 *     sequences): with custom I/O, io_open is libavformat's only way to
 *     open a second resource; protocol_whitelist is also set to "" as a
 *     second lock;
 *   - demuxers allowed: mov/mp4 and matroska/webm only (format_whitelist);
 *     decoders: the video stream's must be one of h264, hevc, vp8, vp9 and
 *     AV1 (libdav1d, or FFmpeg's av1), and codec_whitelist keeps
 *     avformat_find_stream_info from opening any other decoder (no audio
 *     decoder ever runs on a clip with sound);
 *   - bounded threads per video (limits.threads), max_streams 16;
 *   - bounds checked from the container before any frame is decoded: the
 *     frame size (the codec parameters), the duration and frame count
 *     (the header where it states them, then the packet scan, which reads
 *     no pixel), and the decoding work (frames x pixels) they imply; the
 *     decoder's own max_pixels refuses a frame larger than the stream said;
 *   - a time budget: a deadline checked by libavformat's interrupt
 *     callback, by the read callback and between packets.
 *
 * Clef Omni's timed sampling (video_sample.h) decodes as its reference's
 * PyAV loop does instead (clef_video_open_timed, clef_video_decode_timed):
 *
 *   stream   the file's first video stream (PyAV's container.streams
 *            order), the display matrix ignored;
 *   frames   every frame the decoder outputs, in order, to the end;
 *            those without a pts are skipped (PyAV's frame.time is None);
 *   scale    to rgb24 at the timed size by libswscale with SWS_BILINEAR,
 *            the frame's matrix and range as PyAV's reformat hands them
 *            to sws_scale_frame (an unspecified matrix is BT.601, an
 *            unspecified range limited, RGB out full range).
 *
 * Further isolation (not done here, see docs/design/media.md): decoding runs in
 * the engine process, never in an nginx worker; a decode process with a
 * seccomp filter (read/write/mmap/exit only, no open, no socket) would
 * contain a memory-safety bug in FFmpeg's decoders the way the engine
 * process contains a CUDA fault.
 */
#ifndef CLEF_VIDEO_DECODE_H
#define CLEF_VIDEO_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "media/video_sample.h"

#define CLEF_VIDEO_MAX_SECONDS        600.0       /* 10 minutes */
#define CLEF_VIDEO_MAX_FRAMES         36000       /* 10 minutes at 60 fps */
#define CLEF_VIDEO_MAX_PIXELS         (16 << 20)  /* per frame, as images */
#define CLEF_VIDEO_MAX_DECODE_PIXELS  (INT64_C(1) << 34)
                                          /* frames x pixels decoded: 8000
                                             frames of 1920 x 1080 */
#define CLEF_VIDEO_DECODE_SECONDS     60.0        /* per video, whatever it is */
#define CLEF_VIDEO_THREADS            2           /* decoder threads a video */

typedef struct {
    double   max_seconds;
    int64_t  max_frames;
    int64_t  max_pixels;
    int64_t  max_decode_pixels;
    double   max_decode_seconds;
    int      threads;
} clef_video_limits;

/* The bounds above (defined in video_sample.c: no codec needed). */
void clef_video_limits_default(clef_video_limits *lim);

/* What the scan says of a video (see above). */
typedef struct {
    int64_t  n_frames;          /* packets of the stream */
    double   fps;               /* the reference's average_fps */
    double   duration;          /* end - begin, seconds */
    int32_t  width, height;     /* of the frames returned (upright) */
    int      rotation;          /* 0, 90, -90 or 180 */
    char     codec[16];         /* "h264", "hevc", "vp8", "vp9", "av1" */
    int      has_audio;         /* the file has an audio stream */
    int32_t  kept;              /* timed sampling: the frames kept */
} clef_video_info;

typedef struct clef_video_decoder  clef_video_decoder;

/*
 * Opens data (not copied: it must outlive the decoder) and scans it.
 * index names the video in errors: 400 with loc ["body","videos",index]
 * and types video_invalid (not a file of an allowed container, truncated,
 * undecodable), video_no_stream, video_codec_unsupported,
 * video_too_many_pixels, video_too_long, video_too_many_frames,
 * video_decode_budget (frames x pixels, or the time budget).
 */
int clef_video_open(const uint8_t *data, size_t len, int index,
    const clef_video_limits *lim, clef_video_decoder **out,
    clef_error *err);

/* The same for timed sampling (its stream choice and orientation). */
int clef_video_open_timed(const uint8_t *data, size_t len, int index,
    const clef_video_limits *lim, const clef_video_config *vc,
    clef_video_decoder **out, clef_error *err);

const clef_video_info *clef_video_decoder_info(const clef_video_decoder *d);

/* Called once per requested position k with the frame, rgb24 upright,
 * [height][width][3] (the info's size); non-zero stops decoding, and
 * clef_video_decode_frames() then fails with err as the callback left it. */
typedef int (*clef_video_frame_fn)(void *ctx, int32_t k, const uint8_t *rgb,
    clef_error *err);

/*
 * Decodes the frames at indices[0..n) (ascending, each below n_frames;
 * repeats allowed), calling fn for each.  Errors as clef_video_open's.
 */
int clef_video_decode_frames(clef_video_decoder *d, const int64_t *indices,
    int32_t n, clef_video_frame_fn fn, void *ctx, clef_error *err);

/*
 * Timed sampling: decodes the whole stream, calling fn with each frame
 * kept (k counts them), rgb24 of clef_video_timed_size() of the stream's
 * size; info.kept is set at the end.  Errors as clef_video_open's, and
 * 400 video_invalid when no frame is kept.
 */
int clef_video_decode_timed(clef_video_decoder *d, clef_video_frame_fn fn,
    void *ctx, clef_error *err);

void clef_video_close(clef_video_decoder *d);

#endif
