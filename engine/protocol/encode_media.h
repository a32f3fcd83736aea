/*
 * Encoding a record with media: the plan's items decoded and processed by
 * their kind's row of media/prepare.h, then the encoder (encode.h) with
 * their ids, spans and M-RoPE positions.  The engine's preparing thread
 * does this for every record; the CLI and the tests through
 * clef_encode_with_media().
 */
#ifndef CLEF_ENCODE_MEDIA_H
#define CLEF_ENCODE_MEDIA_H

#include "media/kinds.h"
#include "model/model.h"
#include "protocol/encode.h"
#include "protocol/plan.h"

/* Decodes and processes every item of plan into opts->media, with the
 * kinds' tokens.  400 <field>_unsupported (images_unsupported, ...) for a
 * kind mc does not take or an item the worker never read; 413
 * max_tokens_exceeded when the items' headers alone cannot fit; the
 * kind's refusal (400 image_invalid) naming the first item that cannot be
 * decoded. */
int  clef_encode_media_prepare(const clef_media_conf *mc,
    const clef_plan *plan, clef_encode_opts *opts, clef_error *err);

/* Frees opts->media and whatever data the record did not take. */
void clef_encode_media_release(clef_encode_opts *opts);

/* clef_encode() for a request whose media were read
 * (clef_request_check_media), with what m takes (model/model_media.h). */
int  clef_encode_with_media(const clef_model *m, const clef_request *req,
    const clef_encode_opts *opts, clef_record *rec, clef_error *err);

#endif
