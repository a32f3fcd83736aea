/*
 * Records with images (see encode_images.h).
 */
#include "protocol/encode_images.h"

#include <stdlib.h>
#include <string.h>

#include "media/image_decode.h"


void
clef_encode_images_release(clef_encode_opts *opts)
{
    int  k;

    for (k = 0; opts->images != NULL && k < opts->n_images; k++) {
        clef_image_free(&opts->images[k]);
    }
    free(opts->images);
    opts->images = NULL;
    opts->n_images = 0;
}


int
clef_encode_images_prepare(const clef_vision_config *vc,
    const clef_plan *plan, clef_encode_opts *opts, clef_error *err)
{
    clef_image_input  in;
    clef_rgb_image    rgb;
    int64_t           ids;
    int               k, rc, max_length;

    opts->images = NULL;
    opts->n_images = 0;
    if (vc == NULL || plan->n_image_files != plan->n_images) {
        return clef_error_set(err, 400, "images_unsupported", "",
                              "This model does not accept images.");
    }
    /* images that cannot fit are refused before a pixel is decoded */
    ids = clef_plan_image_ids(plan, &vc->processor);
    max_length = opts->max_length > 0 ? opts->max_length
                                      : CLEF_DEFAULT_MAX_LENGTH;
    if (ids > max_length) {
        return clef_error_set(err, 413, "max_tokens_exceeded", "",
            "The %d images need %lld tokens; the limit is %d.",
            plan->n_images, (long long) ids, max_length);
    }
    opts->images = calloc((size_t) plan->n_images + 1, sizeof(clef_image));
    if (opts->images == NULL) {
        return clef_error_set(err, 500, "internal_error", "", "Out of memory.");
    }
    opts->n_images = plan->n_images;
    opts->image_token_id = vc->image_token_id;
    opts->vision_start_token_id = vc->vision_start_token_id;
    opts->vision_end_token_id = vc->vision_end_token_id;

    /* one image at a time: at most one decoded frame is held */
    for (k = 0; k < plan->n_images; k++) {
        in.format = (clef_image_format) plan->images[k].format;
        in.data = plan->images[k].data;
        in.len = plan->images[k].len;
        in.width = plan->images[k].width;
        in.height = plan->images[k].height;
        rc = clef_image_decode(&in, k, CLEF_IMAGE_MAX_PIXELS, &rgb, err);
        if (rc == 0) {
            rc = clef_image_preprocess(&rgb, k, &vc->processor,
                                       &opts->images[k], err);
            clef_rgb_image_free(&rgb);
        }
        if (rc != 0) {
            clef_encode_images_release(opts);
            return -1;
        }
    }
    return 0;
}


int
clef_encode_with_images(const clef_tokenizer *tk,
    const clef_vision_config *vc, const clef_request *req,
    const clef_encode_opts *opts, clef_record *rec, clef_error *err)
{
    clef_encode_opts  o;
    clef_buf          blob = { NULL, 0, 0 };
    clef_plan         plan;
    int               rc = -1;

    memset(rec, 0, sizeof(*rec));
    if (opts != NULL) {
        o = *opts;
    } else {
        clef_encode_opts_default(&o);
    }
    o.images = NULL;
    o.n_images = 0;
    if (clef_plan_build(req, &blob, err) != 0
        || clef_plan_view(&plan, blob.data, blob.len, err) != 0)
    {
        clef_buf_free(&blob);
        return -1;
    }
    if (plan.n_images == 0
        || clef_encode_images_prepare(vc, &plan, &o, err) == 0)
    {
        rc = clef_encode_plan(tk, &plan, &o, rec, err);
        clef_encode_images_release(&o);
    }
    clef_plan_free(&plan);
    clef_buf_free(&blob);
    return rc;
}
