/*
 * The media kinds in the engine: for each, the decoder and processor that
 * turn a file a worker read (kinds.h) into a media item for the kind's
 * encoder (media.h), and the ids an item becomes in a record.  This runs in
 * the engine's preparing thread, never in an nginx worker; a kind without a
 * row here is refused (this engine cannot prepare it).
 *
 *   image   decoded by the sandboxed decode process, a record's images
 *           in one child (image_decode.h: PNG, JPEG, WebP, EXIF; in the
 *           engine with FFMPEG=no), then processor.h (smart_resize, the
 *           antialiased bicubic, the normalisation);
 *           <|vision_start|>, its pads, <|vision_end|>
 *   video   decoded, sampled and resized by the engine's sandboxed decode
 *           process (decoder.h, video_process.h), made an item by
 *           video_item.h; per frame pair "<t seconds>", then
 *           <|vision_start|>, its pads, <|vision_end|> (one span a pair)
 *           (Clef Omni: one span of all its pads, no time texts); a
 *           video heard with its sound (media.h):
 *           <|vision_start|><|audio_start|>, then its pads and its
 *           track's audio pads interleaved as Qwen3-Omni's processor
 *           does (a frame pair's pads at time position t x t_step go
 *           before audio pad a when t x t_step <= a), then
 *           <|audio_end|><|vision_end|>: a span a run
 *   audio   decoded to 16 kHz mono by the decode process (decoder.h,
 *           audio_decode.h) in prepare; in finish, once every clip of the
 *           record is decoded, its log-mel features (audio_features.h),
 *           because the processor pads a record's clips together and a
 *           clip's features depend on the longest one.  The item: values
 *           [n_mels][frames] (its valid frames), grid 1 x n_mels x frames,
 *           tokens clef_audio_output_tokens(frames), no bytes, no times.
 *           <|audio_start|>, its pads, <|audio_end|> (one span).
 */
#ifndef CLEF_MEDIA_PREPARE_H
#define CLEF_MEDIA_PREPARE_H

#include "base/buf.h"
#include "base/error.h"
#include "media/decoder.h"
#include "media/kinds.h"
#include "media/media.h"
#include "text/tokenizer.h"

/* How a preparation runs (decoder.h): the decode lane its items go
 * through, progress now and then while a long item decodes (so that the
 * engine's watchdog does not take it for a hung forward), and whether its
 * request is gone. */
typedef struct {
    clef_decoder_run   dec;
    /* what a kind's begin() decoded for all the record's items of the
     * kind together, for its prepare() to take (images: one round trip a
     * record through the decode process); freed by its release() */
    void              *batch[CLEF_MEDIA_KINDS];
} clef_media_run;

typedef struct {
    clef_media_kind  kind;
    /* Decodes and processes in into out (mc: the model's configuration as
     * the request's media_kwargs change it); a refusal names the item by
     * its index among the request's items of its kind; run may be NULL. */
    int            (*prepare)(const clef_media_input *in, int index,
                              const clef_media_conf *mc,
                              const clef_media_run *run,
                              clef_media_item *out, clef_error *err);
    /* Before the record's items of the kind are prepared (NULL: no such
     * step), once, given them all, in[0..n) (they are contiguous in a
     * plan): a kind whose items are decoded together leaves what it made
     * in run->batch[kind].  -1 only for a failure of the whole record (a
     * refusal of one item is prepare()'s to return, in its turn). */
    int            (*begin)(const clef_media_input *in, int n,
                            const clef_media_conf *mc, clef_media_run *run,
                            clef_error *err);
    /* Frees run->batch[kind] (NULL when begin is). */
    void           (*release)(clef_media_run *run);
    /* After every item of the record is prepared and before any finish
     * (NULL: no such step), once per record when it has an item of the
     * kind: items of the kind that bring items of another kind add them
     * (a Clef Omni video heard with its sound: its track, an audio item,
     * media.h), growing *items (realloc) and *n.  in[0..n_in): the
     * record's inputs, item k < n_in made from in[k].  On failure the
     * caller frees the *n items. */
    int            (*extend)(const clef_media_input *in, int n_in,
                             clef_media_item **items, int *n,
                             const clef_media_conf *mc,
                             const clef_media_run *run, clef_error *err);
    /* Appends the ids of the record's item items[item] in the record's
     * media text to ids (its kind's start, pad and end tokens of tok,
     * indexed by kind, and any text of its own, tokenized with tk) and
     * its spans to spans (starts counted in ids, item: an index in the
     * record), which has room for clef_media_spans_max() of them.  A
     * video heard with its sound places its track too (media.h).
     * Returns how many spans it made, -1 when out of memory. */
    int            (*expand)(const clef_media_item *items, int item,
                             const clef_media_tokens *tok,
                             const clef_tokenizer *tk, clef_ids *ids,
                             clef_media_span *spans);
    /* After every item of a record is prepared, once per record when it
     * has an item of the kind (NULL: no such step), given all the
     * record's items[0..n) in the record's order.  For what couples a
     * record's items: an audio clip's features depend on the record's
     * longest clip, and the sound of its videos joins its clips (the
     * reference appends the videos' tracks to the clips before the
     * processor pads them), hence all items, not the kind's alone.  On
     * failure the caller frees the items. */
    int            (*finish)(clef_media_item *items, int n,
                             const clef_media_conf *mc, clef_error *err);
} clef_media_prep;

/* The most spans expand makes of it: a span per frame pair (Clef's
 * videos), runs of a video and of its track taking turns (a video heard
 * with its sound: at most a run of each a frame pair, and one more),
 * else one. */
int clef_media_spans_max(const clef_media_item *it);

/* The row of kind, NULL when this engine cannot prepare it. */
const clef_media_prep *clef_media_prep_of(int kind);

#endif
