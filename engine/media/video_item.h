/*
 * A video as a media item (media.h) for the vision tower: what the engine
 * makes of the decode process's answer (decoder.h), the scan's info and
 * the resized frames.  Everything else (the frames sampled, their times,
 * the grid) is computed again here from the info with the processor's own
 * arithmetic (video_sample.h), and the frames must be exactly as many
 * bytes as that says: the decode process is trusted with pixels, never
 * with sizes.
 */
#ifndef CLEF_VIDEO_ITEM_H
#define CLEF_VIDEO_ITEM_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "media/media.h"
#include "media/video_decode.h"
#include "media/video_sample.h"

/* The frames' bytes a video of info makes under vc; -1 when the processor
 * refuses it (the decode process then had to refuse it too). */
int64_t clef_video_frames_bytes(const clef_video_info *info,
    const clef_video_config *vc);

/* out from info and rgb ([frames][h][w][3] resized, rgb_len bytes), which
 * out takes (freed on failure); index names the video in errors. */
int clef_video_item(const clef_video_info *info, const clef_video_config *vc,
    uint8_t *rgb, size_t rgb_len, int index, clef_media_item *out,
    clef_error *err);

#endif
