/*
 * The media kinds in the engine (see prepare.h): one row each.
 */
#include "media/prepare.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "media/audio_decode.h"
#include "media/audio_features.h"
#include "media/decoder.h"
#include "media/decoder_wire.h"
#include "media/image_decode.h"
#include "media/image_input.h"
#include "media/processor.h"
#include "media/video_sound.h"


/* A record's images as the decode process answered them (image_begin):
 * the first `decoded` decoded, the next one refused with err. */
typedef struct {
    clef_rgb_image  rgb[CLEF_DEC_MAX_FILES];
    int             n, decoded;
    clef_error      err;
} image_batch;


#ifndef CLEF_IMAGES_IN_ENGINE

/* Every image of the record through one child of the decode process
 * (decoder.h), so that no codec parses a request's bytes in the engine;
 * its pixels are those clef_image_decode_exif() makes here. */
static int
image_begin(const clef_media_input *in, int n, const clef_media_conf *mc,
    clef_media_run *run, clef_error *err)
{
    image_batch  *b = calloc(1, sizeof(*b));

    if (b == NULL) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "Out of memory.");
    }
    b->n = n;
    run->batch[CLEF_MEDIA_IMAGE] = b;
    if (clef_decoder_images_run(&run->dec, in, n, 0, CLEF_IMAGE_MAX_PIXELS,
                                CLEF_MC_IMAGE(mc).exif_orientation, b->rgb,
                                &b->decoded, &b->err) != 0)
    {
        /* the server's failure fails the record; a file's waits for its
         * image's turn, after the images before it are processed */
        if (b->err.status < 400 || b->err.status >= 500) {
            *err = b->err;
            return -1;
        }
    }
    return 0;
}


static void
image_release(clef_media_run *run)
{
    image_batch  *b = run->batch[CLEF_MEDIA_IMAGE];
    int           k;

    if (b != NULL) {
        for (k = 0; k < b->decoded; k++) {
            clef_rgb_image_free(&b->rgb[k]);
        }
        free(b);
        run->batch[CLEF_MEDIA_IMAGE] = NULL;
    }
}


static int
image_pixels(const clef_media_input *in, int index, const clef_media_conf *mc,
    const clef_media_run *run, clef_rgb_image *rgb, clef_error *err)
{
    image_batch  *b = run != NULL ? run->batch[CLEF_MEDIA_IMAGE] : NULL;
    int           decoded;

    if (b == NULL) {
        /* prepared alone, without its record's begin step (tests) */
        return clef_decoder_images_run(run != NULL ? &run->dec : NULL, in, 1,
                                       index, CLEF_IMAGE_MAX_PIXELS,
                                       CLEF_MC_IMAGE(mc).exif_orientation,
                                       rgb, &decoded, err);
    }
    if (index < 0 || index > b->decoded || index >= b->n) {
        return clef_error_fail(err, CLEF_E_INTERNAL, "image %d was not "
                               "decoded with its record's", index);
    }
    if (index == b->decoded) {
        *err = b->err;
        return -1;
    }
    *rgb = b->rgb[index];
    memset(&b->rgb[index], 0, sizeof(b->rgb[index]));
    return 0;
}

#else

/* make FFMPEG=no: no decode process (Makefile), images in the engine */
#define image_begin    NULL
#define image_release  NULL

static int
image_pixels(const clef_media_input *in, int index, const clef_media_conf *mc,
    const clef_media_run *run, clef_rgb_image *rgb, clef_error *err)
{
    (void) run;
    return clef_image_decode_exif(in, index, CLEF_IMAGE_MAX_PIXELS,
                                  CLEF_MC_IMAGE(mc).exif_orientation, rgb, err);
}

#endif


static int
image_prepare(const clef_media_input *in, int index, const clef_media_conf *mc,
    const clef_media_run *run, clef_media_item *out, clef_error *err)
{
    clef_rgb_image  rgb;
    int             rc;

    if (image_pixels(in, index, mc, run, &rgb, err) != 0) {
        return -1;
    }
    rc = clef_image_preprocess(&rgb, index, &CLEF_MC_IMAGE(mc), out, err);
    clef_rgb_image_free(&rgb);
    return rc;
}


/* <|vision_start|>, one <|image_pad|> per merged patch, <|vision_end|>
 * (docs/spec/encoder-and-head.md §3.6): one span.  An audio clip alike:
 * <|audio_start|>, one <|audio_pad|> per row of the audio tower
 * (media/audio_features.h), <|audio_end|> (docs/spec/backbone.md §6). */
static int
span_expand(const clef_media_item *items, int item,
    const clef_media_tokens *toks, const clef_tokenizer *tk, clef_ids *ids,
    clef_media_span *spans)
{
    const clef_media_item    *it = &items[item];
    const clef_media_tokens  *tok = &toks[it->kind];
    int64_t                   i;

    (void) tk;
    if (clef_ids_push(ids, tok->start) != 0
        || clef_ids_reserve(ids, (size_t) it->tokens + 1) != 0)
    {
        return -1;
    }
    spans[0].start = (int32_t) ids->n;
    spans[0].len = (int32_t) it->tokens;
    spans[0].item = item;
    spans[0].row = 0;
    for (i = 0; i < it->tokens; i++) {
        ids->v[ids->n++] = tok->pad;
    }
    return clef_ids_push(ids, tok->end) != 0 ? -1 : 1;
}


/* One run of n pads of item from its row: a span, ids pushed. */
static int
push_run(clef_ids *ids, int32_t pad, int item, int64_t row, int64_t n,
    clef_media_span *span)
{
    int64_t  i;

    if (clef_ids_reserve(ids, (size_t) n) != 0) {
        return -1;
    }
    span->start = (int32_t) ids->n;
    span->len = (int32_t) n;
    span->item = item;
    span->row = (int32_t) row;
    for (i = 0; i < n; i++) {
        ids->v[ids->n++] = pad;
    }
    return 0;
}


/* A Clef Omni video heard with its sound (media.h): Qwen3-Omni's
 * processor (replace_multimodal_special_tokens, use_audio_in_video) walks
 * the video's pads, whose time is their frame pair's t x t_step
 * (seconds a pair x position_id_per_seconds), and the track's pads, whose
 * time is their index, and takes the video's next while its time is at
 * most the audio's: a pair's pads stay together, the runs take turns, and
 * what is left of either ends it. */
static int
sound_expand(const clef_media_item *items, int item,
    const clef_media_tokens *toks, clef_ids *ids, clef_media_span *spans)
{
    const clef_media_item  *v = &items[item];
    int                     track = v->sound - 1;
    int64_t                 per = (int64_t) v->grid_h * v->grid_w
                                  / (v->merge * v->merge);
    int64_t                 A = items[track].tokens, g = 0, a = 0, g0, a0;
    int                     n = 0;

    if (clef_ids_push(ids, toks[CLEF_MEDIA_VIDEO].start) != 0
        || clef_ids_push(ids, toks[CLEF_MEDIA_AUDIO].start) != 0)
    {
        return -1;
    }
    while (g < v->grid_t && a < A) {
        if (g * v->t_step <= a) {
            for (g0 = g; g < v->grid_t && g * v->t_step <= a; g++) {
                /* void */
            }
            if (push_run(ids, toks[CLEF_MEDIA_VIDEO].pad, item, g0 * per,
                         (g - g0) * per, &spans[n++]) != 0)
            {
                return -1;
            }
        } else {
            for (a0 = a; a < A && a < g * v->t_step; a++) {
                /* void */
            }
            if (push_run(ids, toks[CLEF_MEDIA_AUDIO].pad, track, a0, a - a0,
                         &spans[n++]) != 0)
            {
                return -1;
            }
        }
    }
    if ((g < v->grid_t
         && push_run(ids, toks[CLEF_MEDIA_VIDEO].pad, item, g * per,
                     (v->grid_t - g) * per, &spans[n++]) != 0)
        || (a < A
            && push_run(ids, toks[CLEF_MEDIA_AUDIO].pad, track, a, A - a,
                        &spans[n++]) != 0)
        || clef_ids_push(ids, toks[CLEF_MEDIA_AUDIO].end) != 0
        || clef_ids_push(ids, toks[CLEF_MEDIA_VIDEO].end) != 0)
    {
        return -1;
    }
    return n;
}


/* In the decode process, never in the engine (decoder.h says why). */
static int
video_prepare(const clef_media_input *in, int index, const clef_media_conf *mc,
    const clef_media_run *run, clef_media_item *out, clef_error *err)
{
    clef_video_limits  lim;

    clef_video_limits_default(&lim);
    return clef_decoder_video_run(run != NULL ? &run->dec : NULL, in->data,
                                  in->len, index, &lim,
                                  &CLEF_MC_VIDEO(mc), out, err);
}


/* Per frame pair (docs/spec/backbone.md §5.4): "<t seconds>", tokenized
 * on its own as the processor's text puts it between special tokens, then
 * <|vision_start|>, the pair's <|video_pad|>s, <|vision_end|>: one span
 * and one M-RoPE group a pair. */
static int
video_expand(const clef_media_item *items, int item,
    const clef_media_tokens *toks, const clef_tokenizer *tk, clef_ids *ids,
    clef_media_span *spans)
{
    const clef_media_item    *it = &items[item];
    const clef_media_tokens  *tok = &toks[CLEF_MEDIA_VIDEO];
    int64_t                   per = (int64_t) it->grid_h * it->grid_w
                                    / (it->merge * it->merge);
    int64_t                   i;
    char                      text[64];
    int                       j, n;

    if (it->t_step > 0 && it->sound > 0) {
        return sound_expand(items, item, toks, ids, spans);
    }
    if (it->t_step > 0) {
        /* Clef Omni: the whole video in one span, as an image */
        return span_expand(items, item, toks, tk, ids, spans);
    }
    for (j = 0; j < it->grid_t; j++) {
        n = clef_video_time_text(it->timestamps[j], text, sizeof(text));
        if (n <= 0 || (size_t) n >= sizeof(text)
            || clef_tokenizer_encode(tk, text, (size_t) n, ids) != 0
            || clef_ids_push(ids, tok->start) != 0
            || clef_ids_reserve(ids, (size_t) per + 1) != 0)
        {
            return -1;
        }
        spans[j].start = (int32_t) ids->n;
        spans[j].len = (int32_t) per;
        spans[j].item = item;
        spans[j].row = (int32_t) (j * per);
        for (i = 0; i < per; i++) {
            ids->v[ids->n++] = tok->pad;
        }
        if (clef_ids_push(ids, tok->end) != 0) {
            return -1;
        }
    }
    return it->grid_t;
}


int
clef_media_spans_max(const clef_media_item *it)
{
    if (it->kind == CLEF_MEDIA_VIDEO && it->sound > 0) {
        return 2 * it->grid_t + 1;
    }
    return it->grid_t > 1 ? it->grid_t : 1;
}


/* Decoded in the decode process (decoder.h); the samples wait in the
 * item for the record's other clips (audio_finish). */
static int
audio_prepare(const clef_media_input *in, int index, const clef_media_conf *mc,
    const clef_media_run *run, clef_media_item *out, clef_error *err)
{
    clef_audio_limits  lim;
    float             *samples;
    int64_t            n;

    memset(out, 0, sizeof(*out));
    clef_audio_limits_default(&lim);
    if (clef_decoder_audio_run(run != NULL ? &run->dec : NULL, in->data,
                               in->len, index, &lim, &samples, &n, NULL, err)
        != 0)
    {
        return -1;
    }
    out->kind = CLEF_MEDIA_AUDIO;
    out->values = samples;
    out->samples = n;
    return 0;
}


/* The record's clips padded together into their features (the reason this
 * is a step of its own: audio_features.h), the videos' tracks among them
 * when the videos are heard (media.h: they follow the clips, as the
 * reference's audio.extend(tracks)). */
static int
audio_finish(clef_media_item *items, int n, const clef_media_conf *mc,
    clef_error *err)
{
    clef_media_item  **clips = calloc((size_t) n + 1, sizeof(*clips));
    const float      **s = calloc((size_t) n + 1, sizeof(*s));
    int64_t           *len = calloc((size_t) n + 1, sizeof(*len));
    float            **out = calloc((size_t) n + 1, sizeof(*out));
    int32_t           *frames = calloc((size_t) n + 1, sizeof(*frames));
    char               loc[64];
    int                k, c = 0, v, rc = -1;

    if (clips == NULL || s == NULL || len == NULL || out == NULL
        || frames == NULL)
    {
        clef_error_fail(err, CLEF_E_NO_MEMORY, "Out of memory.");
        goto done;
    }
    for (k = 0; k < n; k++) {
        if (items[k].kind == CLEF_MEDIA_AUDIO && items[k].samples > 0) {
            clips[c] = &items[k];
            s[c] = items[k].values;
            len[c++] = items[k].samples;
        }
    }
    /* clips first, then tracks: a first clip that is a track means the
     * record's only audio is its videos' sound, named after the first
     * video heard */
    v = 0;
    if (c > 0 && clips[0]->sound_of > 0) {
        for (k = 0; k < clips[0]->sound_of - 1; k++) {
            v += items[k].kind == CLEF_MEDIA_VIDEO;
        }
    }
    snprintf(loc, sizeof(loc), "[\"body\",\"videos\",%d]", v);
    if (clef_audio_record_features_of(&CLEF_MC_AUDIO(mc), s, len, c,
            c > 0 && clips[0]->sound_of > 0 ? "The videos' audio tracks"
                                             : NULL,
            c > 0 && clips[0]->sound_of > 0 ? loc : NULL, out, frames, err)
        != 0)
    {
        goto done;
    }
    for (k = 0; k < c; k++) {
        free(clips[k]->values);
        clips[k]->values = out[k];
        clips[k]->samples = 0;
        clips[k]->grid_t = 1;
        clips[k]->grid_h = CLEF_MC_AUDIO(mc).n_mels;
        clips[k]->grid_w = frames[k];
        clips[k]->tokens = clef_audio_output_tokens(frames[k]);
    }
    rc = 0;

done:
    free(clips);
    free(s);
    free(len);
    free(out);
    free(frames);
    return rc;
}


static const clef_media_prep  preps[CLEF_MEDIA_KINDS] = {
    [CLEF_MEDIA_IMAGE] = { CLEF_MEDIA_IMAGE, image_prepare, image_begin,
                           image_release, NULL, span_expand, NULL },
    [CLEF_MEDIA_VIDEO] = { CLEF_MEDIA_VIDEO, video_prepare, NULL, NULL,
                           clef_video_sound_extend, video_expand, NULL },
    [CLEF_MEDIA_AUDIO] = { CLEF_MEDIA_AUDIO, audio_prepare, NULL, NULL,
                           NULL, span_expand, audio_finish },
};


const clef_media_prep *
clef_media_prep_of(int kind)
{
    return kind > 0 && kind < CLEF_MEDIA_KINDS && preps[kind].prepare != NULL
           ? &preps[kind] : NULL;
}
