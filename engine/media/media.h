/*
 * Media items: what a request's images, videos and audio clips are at each
 * step, whatever their kind.
 *
 *   clef_media_input  a file as a worker read it: its kind and format, its
 *                     bytes and what its header says (kinds.h); the plan
 *                     carries it to the engine (protocol/plan.h)
 *   clef_media_item   what the kind's decoder and processor made of it in
 *                     the engine (prepare.h): its encoder's input, its grid
 *                     and how many pad tokens it becomes; a record and a
 *                     batch carry it to the backend's encoder for the kind
 *   clef_media_span   which tokens of a record (or of a packed batch) take
 *                     their embeddings from which rows of an item's
 *                     encoder output
 *
 * Everything kind-specific sits behind two tables, kinds.c (the request's
 * side: fields, limits, the reader of the wire form and headers) and
 * prepare.c (the engine's side: decoder, processor, tokens), and behind one
 * encoder per kind in each backend.  Nothing in media/ depends on backend/
 * or model/.
 */
#ifndef CLEF_MEDIA_H
#define CLEF_MEDIA_H

#include <stddef.h>
#include <stdint.h>

/* In the order a record places its items before the state: Clef Omni's
 * reference puts images, then audio clips, then videos (its
 * _encode_media); the plan keeps a request's items in kind order. */
typedef enum {
    CLEF_MEDIA_IMAGE = 1,
    CLEF_MEDIA_AUDIO = 2,
    CLEF_MEDIA_VIDEO = 3
} clef_media_kind;

/* Arrays indexed by kind have CLEF_MEDIA_KINDS entries (0 is no kind). */
#define CLEF_MEDIA_KINDS      4
/* A kind's bit in a set of kinds (clef_media_conf.accepts). */
#define CLEF_MEDIA_BIT(kind)  (1u << ((kind) - 1))

typedef struct {
    clef_media_kind  kind;
    int              format;       /* the kind's own enum (image_input.h's
                                      clef_image_format); 0: the worker did
                                      not read the file */
    const uint8_t   *data;         /* the file's bytes */
    size_t           len;
    int32_t          width;        /* kinds with pixels: as stored, before */
    int32_t          height;       /* any orientation */
    int32_t          frames;       /* 1 for an image */
    int64_t          duration_us;  /* 0 for an image */
} clef_media_input;

/* What a worker lets through of a kind (kinds.h has the defaults). */
typedef struct {
    int      max_items;     /* per request */
    size_t   max_base64;    /* per item, as sent */
    size_t   max_bytes;     /* decoded, all items of the kind */
    int64_t  max_pixels;    /* per item (per frame) */
} clef_media_limits;

typedef struct {
    clef_media_kind  kind;
    int32_t          grid_t;       /* the encoder's input in patches: */
    int32_t          grid_h;       /* temporal groups, rows, columns */
    int32_t          grid_w;
    int64_t          tokens;       /* the pad tokens it becomes */
    uint8_t         *bytes;        /* the processor's output in the kind's
                                      layout (kinds with pixels: RGB frames,
                                      [frames][grid_h patch][grid_w patch]
                                      [3]), or NULL and */
    float           *values;       /* the encoder's input rows as given
                                      (tests: the reference's pixels; an
                                      audio clip: its log-mel features
                                      [grid_h = n_mels][grid_w = frames],
                                      audio_features.h) */
    int32_t          frames;       /* frames in bytes (an image: 1) */
    int64_t          samples;      /* an audio clip between its kind's
                                      prepare and finish (prepare.h):
                                      values holds its 16 kHz samples, this
                                      many; 0 once values are features */
    double          *timestamps;   /* [grid_t] seconds of each temporal
                                      group (a video's frame pairs, as the
                                      reference computes them, in double);
                                      NULL for a kind without time */
    int32_t          t_step;       /* > 0: the item is one span whose
                                      temporal groups are t_step M-RoPE
                                      time positions apart (Clef Omni's
                                      videos); 0: a span a group */
    int              has_audio;    /* a video whose file has an audio
                                      stream */
    int32_t          sound;        /* a video heard with its sound: 1 +
                                      the index in its record of the audio
                                      item that is its track; 0: its
                                      frames alone */
    int32_t          sound_of;     /* an audio item that is a video's
                                      track: 1 + the video's index in its
                                      record; 0: a clip of the request's
                                      "audio" */
    int              patch;        /* kinds with pixels: patch side, */
    int              temporal;     /* temporal slots and merge of the */
    int              merge;        /* tower's patches */
    float            mean[3];      /* and the fused normalisation */
    float            std[3];       /* constants (processor.h) */
} clef_media_item;

/*
 * Audio in video (Clef Omni, its reference's use_audio_in_video): when
 * every video of a record has sound, each video's track, decoded from the
 * video's file as a clip is, becomes an audio item of the record.  A
 * record's items are then its images, its audio clips, its videos (the
 * request's order within each kind) and last the videos' tracks, in the
 * videos' order: the reference's audio list is the clips, then the tracks
 * (audio.extend(tracks)), and every backend takes a record's audio items
 * in item order and pads them together (backend/audio_layout.h).  The
 * video and its track point at each other (sound, sound_of).  The track
 * has no placement of its own: its pads sit inside the video's, between
 * <|vision_start|><|audio_start|> and <|audio_end|><|vision_end|>,
 * interleaved with the video's by time (prepare.h), as several spans of
 * either item, each with its row offset; all of them share the video's
 * start position (protocol/encode.h).
 */

/* Frees what the item owns and zeroes it. */
void clef_media_item_free(clef_media_item *it);

typedef struct {
    int32_t  start;      /* first token (record- or batch-relative) */
    int32_t  len;
    int32_t  item;       /* which media item of the record or batch */
    int32_t  row;        /* the item's encoder output row for start */
} clef_media_span;

/* The tokens of a kind in a record: around each of its spans and in it
 * (config.json's; <|vision_start|> <|image_pad|> <|vision_end|>). */
typedef struct {
    int32_t  start;
    int32_t  pad;
    int32_t  end;
} clef_media_tokens;

#endif
