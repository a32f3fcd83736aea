/*
 * The videos of a request as they arrive (issue 21; Cloudflare's Clef
 * takes them beside images): a top-level "videos" array, at most
 * clef_max_videos (2) items, each a data URL
 * "data:video/mp4|webm|quicktime;base64,..." (video/x-matroska too) or an
 * object {"content_type": "video/mp4", "base64": "..."}.
 *
 * Reading them is the worker's part, before anything is queued, with no
 * codec: the wire form (media_wire.h), the limits, the base64, and the
 * container's header (video_probe.c): its family must be the declared
 * one's (MP4 and QuickTime are one, WebM and Matroska the other); what it
 * states of its video tracks is checked against the decoder's bounds
 * (video_decode.h), so that a small file claiming hours or gigapixels is
 * refused before the engine opens it.  Frames are decoded later, by the
 * engine's decode process (decoder.h).
 *
 *  status type                     when
 *  413    video_too_large          more than 13 MiB of base64
 *  413    videos_too_large         over 10 MiB decoded in all
 *  400    video_invalid            not an MP4, QuickTime, WebM or Matroska
 *                                  file, or an MP4 without its moov box
 *  400    video_type_mismatch      the bytes are the other family
 *  400    video_no_stream          its header lists tracks, none of them
 *                                  video
 *  400    video_codec_unsupported  no video track in H.264, HEVC, VP8, VP9
 *                                  or AV1
 *  400    video_too_many_pixels    a frame over 16 Mi pixels
 *  400    video_too_long           over 600 s
 *  400    video_too_many_frames    over 36,000 frames
 *  400    video_decode_budget      frames x pixels over 2^34
 * (and media_wire.h's refusals with "video"), each with loc
 * ["body","videos",I] naming the video.
 */
#ifndef CLEF_VIDEO_INPUT_H
#define CLEF_VIDEO_INPUT_H

#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/error.h"
#include "media/media.h"
#include "text/json.h"

typedef enum {
    CLEF_VIDEO_NONE = 0,
    CLEF_VIDEO_MP4 = 1,         /* ISO base media: MP4, QuickTime */
    CLEF_VIDEO_MKV = 2          /* Matroska, WebM */
} clef_video_format;

#define CLEF_VIDEO_MAX_ITEMS    2               /* Cloudflare's Clef */
#define CLEF_VIDEO_MAX_BASE64   (13u << 20)     /* per video: the body */
#define CLEF_VIDEO_MAX_BYTES    (10u << 20)     /* decoded, all videos */

/* What a container's header says of its video tracks (0: not stated). */
typedef struct {
    int      complete;          /* its track list was found */
    int      video_tracks;
    int      supported;         /* of them in one of the five codecs */
    char     codec[24];         /* the first video track's, as stored
                                   ("avc1", "V_VP9") */
    int32_t  width, height;     /* the largest video track's frames */
    int64_t  frames;            /* the most samples of a video track */
    int64_t  duration_us;       /* the longest the header states */
} clef_video_header;

/* The family the first bytes say, CLEF_VIDEO_NONE when neither. */
clef_video_format clef_video_sniff(const uint8_t *p, size_t len);

/* What the header of a file of family f states; -1 when an MP4 has no
 * moov box or a Matroska file no Segment (video_probe.c). */
int clef_video_probe(clef_video_format f, const uint8_t *p, size_t len,
    clef_video_header *h);

/*
 * Reads videos (a JSON array) into n media inputs of the video kind
 * (media.h: format, bytes, the largest frame size, frames and duration
 * where the header states them), allocated with their bytes in a; lim
 * NULL: the video kind's defaults (kinds.h).  Returns 0, or -1 with err
 * filled for the first video refused.
 */
int clef_video_inputs_read(clef_arena *a, const clef_json *videos,
    const clef_media_limits *lim, clef_media_input **out, clef_error *err);

#endif
