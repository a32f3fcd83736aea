/*
 * Encoding a record with images: the plan's image files decoded and
 * preprocessed (image_decode.h, processor.h), then the encoder (encode.h)
 * with their pad tokens and M-RoPE positions.  The engine's preparing
 * thread does this for every record; the CLI and the tests through
 * clef_encode_with_images().
 */
#ifndef CLEF_ENCODE_IMAGES_H
#define CLEF_ENCODE_IMAGES_H

#include "model/model.h"
#include "protocol/encode.h"
#include "protocol/plan.h"

/* Decodes and preprocesses every image of plan into opts->images (with the
 * model's image token ids).  400 images_unsupported without a tower;
 * 400 image_invalid naming the first image that cannot be decoded. */
int  clef_encode_images_prepare(const clef_vision_config *vc,
    const clef_plan *plan, clef_encode_opts *opts, clef_error *err);

/* Frees opts->images and whatever pixels the record did not take. */
void clef_encode_images_release(clef_encode_opts *opts);

/* clef_encode() for a request whose images were read
 * (clef_request_check_media with images_ok); vc NULL: a model without a
 * tower. */
int  clef_encode_with_images(const clef_tokenizer *tk,
    const clef_vision_config *vc, const clef_request *req,
    const clef_encode_opts *opts, clef_record *rec, clef_error *err);

#endif
