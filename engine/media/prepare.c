/*
 * The media kinds in the engine (see prepare.h): one row each.
 */
#include "media/prepare.h"

#include "media/image_decode.h"
#include "media/image_input.h"
#include "media/processor.h"


static int
image_prepare(const clef_media_input *in, int index, const clef_media_conf *mc,
    clef_media_item *out, clef_error *err)
{
    clef_rgb_image  rgb;
    int             rc;

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
 * (spec/clef-encoder-and-head.md §3.6): one span. */
static int
image_expand(const clef_media_item *it, int item, const clef_media_tokens *tok,
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


static const clef_media_prep  preps[CLEF_MEDIA_KINDS] = {
    [CLEF_MEDIA_IMAGE] = { CLEF_MEDIA_IMAGE, image_prepare, image_expand },
};


const clef_media_prep *
clef_media_prep_of(int kind)
{
    return kind > 0 && kind < CLEF_MEDIA_KINDS && preps[kind].prepare != NULL
           ? &preps[kind] : NULL;
}
