/*
 * The encoding plan: every text of a record that the encoder tokenizes,
 * rendered in advance, in one flat position-independent blob.
 *
 * encode_record (docs/spec/encoder-and-head.md §3.3) is two stages:
 *   1. render (no tokenizer): the state as Python's json.dumps writes it,
 *      and for each question its field header, its instruction and one
 *      JSON text per option.  Linear in the body, cheap: an nginx worker
 *      does it right after validation, so the engine never parses a body.
 *   2. tokenize (encode.h): the engine turns a plan into ids and spans,
 *      with its work bounded by the record's token limit.
 * clef_encode() runs both for callers that hold a parsed request (the CLI,
 * the tests).
 *
 * The blob, little-endian u32 fields unless said, no padding, read with
 * memcpy:
 *   "CLP4", n_questions, n_options, n_media,
 *   n_questions x { type, n_options },
 *   then the texts, each as { length, bytes }: the state, then for every
 *   question its header and its instruction, then its options' texts,
 *   then n_media x { kind (u8), format (u8), width, height, frames,
 *   duration_us (u64), { length, bytes } }: the request's media items in
 *   kind order (media/kinds.h), as the worker read them (media/media.h;
 *   format 0 and no bytes for an item it never read).  The engine decodes
 *   them (it never parses JSON or base64).  Last, the request's
 *   media_kwargs (media/media_kwargs.h): set (u32), fps (f64),
 *   size_shortest, size_longest, min_pixels, max_pixels (u64 each),
 *   cap_pixels_per_frame (u8), max_video_tokens (u64).
 * A blob of another version (CLP2: images without a kind; CLP3: no
 * media_kwargs) is refused, with a message that names both versions.
 */
#ifndef CLEF_PLAN_H
#define CLEF_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/error.h"
#include "media/kinds.h"
#include "media/media.h"
#include "protocol/request.h"

/* How long a record may be and what becomes of a longer one: the worker's
 * cheap bound (clef_plan_min_ids) and the engine's encoder read both. */
#define CLEF_DEFAULT_MAX_LENGTH  65536

typedef enum {
    CLEF_TRUNCATE_REJECT = 0,    /* too long: 400 max_tokens_exceeded */
    CLEF_TRUNCATE_STATE          /* reference: keep the state's first tokens */
} clef_truncate;

typedef struct {
    const char  *s;
    size_t       len;
} clef_text;

typedef struct {
    clef_qtype   type;
    int          n_options;
    clef_text    header;        /* "\nFIELD i\nID: <id>\nTYPE: <type>\n
                                   INSTRUCTION: " */
    clef_text    instruction;   /* its span: rendered, or the id when
                                   missing, null or "" */
    clef_text   *options;       /* rendered {"description", "option_id"} */
} clef_plan_question;

typedef struct {
    clef_text            state;
    int                  n_questions;
    int                  n_options;
    clef_plan_question  *questions;   /* owned by the view */
    clef_text           *options;     /* owned by the view */
    int                  n_media;
    clef_media_input    *media;       /* owned by the view, bytes in the
                                         blob; format 0: never read */
    clef_media_kwargs    kwargs;      /* what the request's media_kwargs
                                         change in its processors */
} clef_plan;

/* Renders req into a blob appended to out.  Returns 0, or -1 (500) on
 * allocation failure. */
int  clef_plan_build(const clef_request *req, clef_buf *out, clef_error *err);

/* A view of a blob made by clef_plan_build(): texts point into blob, which
 * must outlive the view.  Checks every length against len; -1 (500
 * "plan_invalid") for a blob that is not a plan. */
int  clef_plan_view(clef_plan *p, const void *blob, size_t len,
    clef_error *err);
void clef_plan_free(clef_plan *p);

/*
 * A lower bound of the ids the plan's texts tokenize to, given the most
 * bytes one id stands for (clef_tokenizer_max_token_bytes): NFC can shrink
 * a non-ASCII character's bytes to a third at most (a decomposed Hangul
 * syllable), ASCII never changes.  A worker compares it with the token
 * limit to refuse a hopeless record before it reaches the engine.
 * state_only: the state's texts alone (what truncation may cut).
 */
size_t clef_plan_min_ids(const clef_plan *p, size_t max_token_bytes,
    int state_only);

/*
 * The ids the plan's media items add, from their headers alone (kinds.h's
 * header_ids, with what the plan's media_kwargs change in mc: an image's
 * pads and its <|vision_start|> and <|vision_end|>;
 * the one "\n" after all of them is left out: a lower bound).  Exact for
 * an image's pads, a lower bound for a video's (its header does not say
 * what the decoder's scan will), so a worker can refuse a record whose
 * media alone cannot fit before the engine decodes a pixel.  0 without media, or for items never
 * read; -1 when a processor refuses a size (the engine then says which
 * item).
 */
int64_t clef_plan_media_ids(const clef_plan *p, const clef_media_conf *mc);

/* "images" when every item is an image (likewise for each kind), else
 * "media items": for messages about all of them. */
const char *clef_plan_media_noun(const clef_plan *p);

#endif
