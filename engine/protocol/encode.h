/*
 * encode_record of the reference (docs/spec/encoder-and-head.md §3): the
 * request becomes
 *     prefix + media + state + schema + suffix
 * with every piece tokenized on its own, plus half-open absolute spans of
 * every question's instructions and every option's JSON.
 */
#ifndef CLEF_ENCODE_H
#define CLEF_ENCODE_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/error.h"
#include "media/media.h"
#include "protocol/plan.h"
#include "protocol/request.h"
#include "text/tokenizer.h"

struct clef_decoder_run;

typedef struct {
    int            max_length;   /* default CLEF_DEFAULT_MAX_LENGTH */
    clef_truncate  truncate;
    const int32_t *media_ids;    /* processor-expanded media tokens, or NULL */
    size_t         n_media_ids;
    /* or the media items themselves (media/media.h, prepared by their
     * kind's processor: protocol/encode_media.h), as many as the plan has,
     * in its order: each becomes the ids its kind makes of it
     * (media/prepare.h; an image: <|vision_start|>, one <|image_pad|> per
     * merged patch, <|vision_end|>), all of them followed by one "\n",
     * after the prefix (docs/spec/encoder-and-head.md §3.6); the record
     * then carries their spans and M-RoPE positions.  On success the
     * record owns the items' data (the caller's items are left without
     * it); on failure it stays the caller's. */
    clef_media_item   *media;
    int                n_media;
    clef_media_tokens  tokens[CLEF_MEDIA_KINDS];   /* each kind's, from
                                                      config.json */
    /* called now and then while a long media item is prepared (the
     * engine's watchdog heartbeat); may be NULL */
    void             (*progress)(void *ctx);
    void              *progress_ctx;
    /* or all of how its media go through the decode process (a lane,
     * progress, cancellation: media/decoder.h); NULL: the default lane
     * and the progress above */
    const struct clef_decoder_run  *media_run;
    int                newline_each;   /* Clef Omni: a "\n" after each
                                          item instead of one after all */
} clef_encode_opts;

void clef_encode_opts_default(clef_encode_opts *o);

typedef struct {
    int32_t  start;              /* half-open [start, end) */
    int32_t  end;
} clef_span;

typedef struct {
    clef_ids    ids;             /* input_ids */
    int         n_questions;
    clef_span  *question_spans;  /* [n_questions], request order */
    clef_qtype *question_types;  /* [n_questions] */
    int        *option_offset;   /* [n_questions + 1]: options of q are
                                    option_offset[q] .. option_offset[q+1]-1 */
    int         n_options;
    clef_span  *option_spans;    /* [n_options], question order then encoder order */
    size_t      state_tokens;    /* state tokens before truncation (counted
                                    up to 4 x max_length + 65536) */
    size_t      state_kept;      /* state tokens kept */
    int              n_media;
    clef_media_item *media;      /* [n_media], owned */
    int              n_spans;
    clef_media_span *spans;      /* [n_spans]: the items' pad tokens, in
                                    token order (an image: one span) */
    int32_t         *positions;  /* NULL for text, else [3][ids.n]: the
                                    temporal, height and width M-RoPE
                                    positions (clef_mrope_positions) */
} clef_record;

/*
 * The reference's get_rope_index for one record (docs/spec/backbone.md
 * §5.3): a run of text counts on from the last position on all three axes;
 * a span of an item whose merged grid is h x w, starting at position p,
 * puts its token (s, i, j) (s counting the span's h x w groups) at
 * (p + s, p + i, p + j) and the text after it at p + max(groups, h, w).
 * An image is one span of one group: (p, p + i, p + j), then
 * p + max(h, w).  An item with a t_step (Clef Omni's video, its reference's
 * get_rope_index without audio) puts group s at time p + s t_step, and
 * the text after it at p + max((groups - 1) t_step + 1, h, w).  An audio
 * clip's span counts on as text (p + i on every axis).  A video heard with
 * its sound (media/media.h, its reference's "Audio in Video"): its runs
 * and its track's all start at the same p, the video's token of group s
 * at (p + s t_step, p + i, p + j), the track's row a at p + a on every
 * axis, and the text after them at 1 + the largest position of the last
 * run.  pos: [3][n].
 */
void clef_mrope_positions(int64_t n, const clef_media_item *items,
    const clef_media_span *spans, int n_spans, int32_t *pos);

/* Tokenizes a plan (plan.h) into a record.  The work is bounded by the
 * limit: the schema and the state are tokenized only until they are known
 * not to fit (4 x max_length + 65536 ids counted at most, fewer when a
 * word's length alone proves it).  400 max_tokens_exceeded when the record
 * does not fit and may not be cut. */
int  clef_encode_plan(const clef_tokenizer *tk, const clef_plan *plan,
    const clef_encode_opts *opts, clef_record *rec, clef_error *err);

/* clef_plan_build() then clef_encode_plan(). */
int  clef_encode(const clef_tokenizer *tk, const clef_request *req,
    const clef_encode_opts *opts, clef_record *rec, clef_error *err);
void clef_record_free(clef_record *rec);

#endif
