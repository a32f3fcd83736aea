/*
 * The media kinds as a request carries them (docs/spec/protocol.md §2,
 * docs/spec/encoder-and-head.md §2): one row per kind, which the request's
 * validation (protocol/request.c), the plan (protocol/plan.c), the engine
 * and the backends read for everything a kind changes in them: the
 * request's field, the words of its refusals, its limits, the reader of its
 * wire form and headers, and the ids an item adds from its header alone.
 *
 * This is a worker's half: no reader decodes a pixel or links a codec.
 * The engine's half, a decoder and a processor per kind, is prepare.h.
 *
 * A kind is served when its row has a reader and the model has an encoder
 * for it (clef_media_conf); a request with a kind the model does not take
 * is refused by name (400 audio_unsupported, ...), never answered as if
 * the field were absent.
 */
#ifndef CLEF_MEDIA_KINDS_H
#define CLEF_MEDIA_KINDS_H

#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/error.h"
#include "media/audio_features.h"
#include "media/media.h"
#include "media/processor.h"
#include "media/video_sample.h"
#include "text/json.h"

/* What a model makes of a record whose videos all have an audio stream
 * (clef_media_conf.videos_with_sound). */
enum {
    CLEF_VIDEO_SOUND_IGNORED = 0,   /* Clef: its reference never reads it */
    CLEF_VIDEO_SOUND_HEARD = 1      /* Clef Omni: its reference interleaves
                                       each video's track with its frames
                                       (use_audio_in_video, media.h); 400
                                       videos_with_sound_unsupported where
                                       the backend has no audio tower */
};

/* A kind's part of what the serving model takes: its tokens and its
 * processor's settings, the member of proc its kind names. */
typedef struct {
    clef_media_tokens          tokens;     /* config.json's */
    union {
        clef_processor_config  image;      /* preprocessor_config.json */
        clef_audio_config      audio;      /* preprocessor_config.json's
                                              feature extractor keys */
        clef_video_config      video;      /* video_preprocessor_
                                              config.json */
    }                          proc;
} clef_media_kind_conf;

/* What the serving model takes: the kinds it has an encoder for, and each
 * kind's settings, indexed by kind. */
typedef struct {
    unsigned               accepts;     /* CLEF_MEDIA_BIT() of each kind */
    clef_media_kind_conf   kind[CLEF_MEDIA_KINDS];
    int                    newline_each;   /* each item's text ends in a
                                              newline of its own (Clef
                                              Omni), else one after all */
    int                    videos_with_sound;   /* CLEF_VIDEO_SOUND_* */
} clef_media_conf;

/* A kind's processor settings in mc (a pointer), by the kind's name. */
#define CLEF_MC_IMAGE(mc)  ((mc)->kind[CLEF_MEDIA_IMAGE].proc.image)
#define CLEF_MC_AUDIO(mc)  ((mc)->kind[CLEF_MEDIA_AUDIO].proc.audio)
#define CLEF_MC_VIDEO(mc)  ((mc)->kind[CLEF_MEDIA_VIDEO].proc.video)

/* Each kind's tokens, into tokens[CLEF_MEDIA_KINDS] (an encoder's
 * options: protocol/encode.h). */
void clef_media_conf_tokens(const clef_media_conf *mc,
    clef_media_tokens *tokens);

/* Accepts nothing; the processor's defaults. */
void clef_media_conf_default(clef_media_conf *mc);

typedef struct {
    clef_media_kind     kind;
    const char         *field;          /* the request's array: "images" */
    const char         *one;            /* "image" */
    const char         *many;           /* "images" */
    const char         *noun;           /* "Image", at a sentence's start */
    const char         *unsupported;    /* "images_unsupported" */
    const char         *too_many;       /* "too_many_images" */
    const char         *parts[3];       /* its part types in a state array
                                           (OpenRouter's, OpenAI's), NULL
                                           after the last */
    clef_media_limits   limits;         /* the defaults */
    const char         *directive;      /* "clef_max_images": the nginx
                                           directive that sets a location's
                                           limits.max_items (0 or more) */
    /* Reads the field's array (wire form, limits, base64, header) into n
     * inputs allocated in a, refusals naming the item; NULL: this server
     * does not read the kind yet. */
    int               (*read)(clef_arena *a, const clef_json *items,
                              const clef_media_limits *lim,
                              clef_media_input **out, clef_error *err);
    /* The ids an item adds to a record, from its header alone: a lower
     * bound (an image's pads exactly; a video's header does not say all
     * its decoder will); -1 when its processor refuses the header's size
     * (the engine then says why). */
    int64_t           (*header_ids)(const clef_media_input *in,
                                    const clef_media_conf *mc);
} clef_media_kind_info;

/* The row of kind; NULL for a value that is no kind (a plan that says so
 * is refused). */
const clef_media_kind_info *clef_media_kind_of(int kind);

void clef_media_limits_default(clef_media_kind kind, clef_media_limits *lim);

/* "text and JSON states", "text, JSON states and images", ...: what a
 * model that accepts these kinds takes, for refusals. */
void clef_media_accepted_words(unsigned accepts, char *out, size_t cap);

#endif
