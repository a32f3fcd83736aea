/*
 * A request's "media_kwargs": the keyword arguments the reference hands its
 * processor (joint_schema_model.py's processor(text, images, videos,
 * **media_kwargs)).  Read in transformers 5.25 and tried on it key by key,
 * these change what its processors make, and are accepted within bounds:
 *
 *   fps                    videos: frames sampled per second (the count is
 *                          int(frames / video_fps x fps), within 4..768
 *                          and the frames there are); a number in
 *                          (0, 120]
 *   size                   images and videos: {"shortest_edge",
 *                          "longest_edge"}, both, the pixel budget of
 *                          smart_resize (a video's counts all its sampled
 *                          frames); integers in 1 .. 16777216
 *   min_pixels, max_pixels images only: size's shortest_edge and
 *                          longest_edge, over size when both are given;
 *                          integers in 1 .. 16777216
 *   cap_pixels_per_frame   videos: the per-frame pixel cap of the
 *                          processor (off unless true); a boolean
 *   max_video_tokens       videos, with the cap: its ceiling in merged
 *                          tokens per frame; an integer in 1 .. 24576
 *
 * Refused by name (400 media_kwargs_unsupported), every other key,
 * including those the reference takes and then drops: min_frames and
 * max_frames (its sampler reads them from its configuration only, so a
 * request's change nothing there), num_frames (it raises beside its fps),
 * and keys that would change the model's geometry (patch_size,
 * merge_size, ...).  A value of the wrong type or out of its bounds is 400
 * media_kwargs_invalid.  Both name the key: loc
 * ["body","media_kwargs",KEY].
 *
 * A worker reads them; the plan carries them (protocol/plan.h); the
 * worker's token count and the engine's processors apply them to the
 * model's configuration (clef_media_conf_apply_kwargs).
 */
#ifndef CLEF_MEDIA_KWARGS_H
#define CLEF_MEDIA_KWARGS_H

#include <stdint.h>

#include "media/kinds.h"
#include "text/json.h"

enum {
    CLEF_KW_FPS          = 1u << 0,
    CLEF_KW_SIZE         = 1u << 1,
    CLEF_KW_MIN_PIXELS   = 1u << 2,
    CLEF_KW_MAX_PIXELS   = 1u << 3,
    CLEF_KW_CAP          = 1u << 4,
    CLEF_KW_VIDEO_TOKENS = 1u << 5,
    CLEF_KW_ALL          = (1u << 6) - 1
};

/* the bounds of the values */
#define CLEF_KW_FPS_LIMIT     120.0
#define CLEF_KW_PIXELS_LIMIT  16777216      /* the image processor's own */
#define CLEF_KW_TOKENS_LIMIT  24576         /* 25165824 / 32^2 */

typedef struct {
    unsigned  set;              /* CLEF_KW_* of the keys given */
    double    fps;
    int64_t   size_shortest;    /* size.shortest_edge, size.longest_edge */
    int64_t   size_longest;
    int64_t   min_pixels;
    int64_t   max_pixels;
    int       cap_pixels_per_frame;
    int64_t   max_video_tokens;
} clef_media_kwargs;

typedef enum {
    CLEF_KW_OK = 0,
    CLEF_KW_UNSUPPORTED,        /* 400 media_kwargs_unsupported */
    CLEF_KW_INVALID             /* 400 media_kwargs_invalid */
} clef_kw_verdict;

/* Reads obj (a JSON object, or NULL / null for none) into kw, which is
 * zeroed first.  For the first key refused: its index in obj (*bad) and
 * why, a phrase that follows the key in a message ("must be a number
 * above 0 and at most 120"); the caller words the error (it echoes the
 * key). */
clef_kw_verdict clef_media_kwargs_read(const clef_json *obj,
    clef_media_kwargs *kw, size_t *bad, const char **why);

/* The model's configuration as a request's kwargs change it, in the
 * reference's precedence (min_pixels and max_pixels over size for
 * images). */
void clef_media_conf_apply_kwargs(clef_media_conf *mc,
    const clef_media_kwargs *kw);

#endif
