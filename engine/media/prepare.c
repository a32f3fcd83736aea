/*
 * The media kinds in the engine (see prepare.h): one row each.
 */
#include "media/prepare.h"

#include <stdio.h>

#include "media/decoder.h"
#include "media/image_decode.h"
#include "media/image_input.h"
#include "media/processor.h"


static int
image_prepare(const clef_media_input *in, int index, const clef_media_conf *mc,
    const clef_media_run *run, clef_media_item *out, clef_error *err)
{
    clef_rgb_image  rgb;
    int             rc;

    (void) run;
    if (clef_image_decode_exif(in, index, CLEF_IMAGE_MAX_PIXELS,
                               mc->processor.exif_orientation, &rgb, err)
        != 0)
    {
        return -1;
    }
    rc = clef_image_preprocess(&rgb, index, &mc->processor, out, err);
    clef_rgb_image_free(&rgb);
    return rc;
}


/* <|vision_start|>, one <|image_pad|> per merged patch, <|vision_end|>
 * (spec/clef-encoder-and-head.md §3.6): one span.  An audio clip alike:
 * <|audio_start|>, one <|audio_pad|> per row of the audio tower
 * (media/audio_tokens.h), <|audio_end|> (spec/qwen35-backbone.md §6). */
static int
span_expand(const clef_media_item *it, int item, const clef_media_tokens *tok,
    const clef_tokenizer *tk, clef_ids *ids, clef_media_span *spans)
{
    int64_t  i;

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


/* In the decode process, never in the engine (decoder.h says why). */
static int
video_prepare(const clef_media_input *in, int index, const clef_media_conf *mc,
    const clef_media_run *run, clef_media_item *out, clef_error *err)
{
    clef_video_limits  lim;

    clef_video_limits_default(&lim);
    return clef_decoder_video(in->data, in->len, index, &lim, &mc->video,
                              run != NULL ? run->progress : NULL,
                              run != NULL ? run->ctx : NULL, out, err);
}


/* Per frame pair (spec/qwen35-backbone.md §5.4): "<t seconds>", tokenized
 * on its own as the processor's text puts it between special tokens, then
 * <|vision_start|>, the pair's <|video_pad|>s, <|vision_end|>: one span
 * and one M-RoPE group a pair. */
static int
video_expand(const clef_media_item *it, int item, const clef_media_tokens *tok,
    const clef_tokenizer *tk, clef_ids *ids, clef_media_span *spans)
{
    int64_t  per = (int64_t) it->grid_h * it->grid_w / (it->merge * it->merge);
    int64_t  i;
    char     text[64];
    int      j, n;

    if (it->t_step > 0) {
        /* Clef Omni: the whole video in one span, as an image */
        return span_expand(it, item, tok, tk, ids, spans);
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


/* Audio clips are not decoded by this engine yet (their decoder and
 * log-mel features are another change's): refused by name.  Items made
 * from features (the tests' reference features) are placed by
 * span_expand. */
static int
audio_prepare(const clef_media_input *in, int index, const clef_media_conf *mc,
    const clef_media_run *run, clef_media_item *out, clef_error *err)
{
    (void) in;
    (void) mc;
    (void) run;
    (void) out;
    return clef_error_set(err, 400, "audio_unsupported", "",
                          "This engine does not decode audio clips yet "
                          "(audio clip %d).", index);
}


static const clef_media_prep  preps[CLEF_MEDIA_KINDS] = {
    [CLEF_MEDIA_IMAGE] = { CLEF_MEDIA_IMAGE, image_prepare, span_expand },
    [CLEF_MEDIA_VIDEO] = { CLEF_MEDIA_VIDEO, video_prepare, video_expand },
    [CLEF_MEDIA_AUDIO] = { CLEF_MEDIA_AUDIO, audio_prepare, span_expand },
};


const clef_media_prep *
clef_media_prep_of(int kind)
{
    return kind > 0 && kind < CLEF_MEDIA_KINDS && preps[kind].prepare != NULL
           ? &preps[kind] : NULL;
}
