/*
 * A media item's wire form, whatever its kind (docs/spec/protocol.md
 * §2, Cloudflare's form): a data URL, "data:<type>;base64,<data>", or an
 * object {"content_type": "<type>", "base64": "<data>"}.  The image kind
 * (image_input.h) and the video kind (video_input.h) read their items with
 * it, each with its own words and content types, then check the bytes
 * their own way.
 *
 *  status type                    loc                          when
 *  422    <one>_type              ["body",FIELD,I]             neither a string nor an object
 *  422    missing / string_type   ["body",FIELD,I,KEY]         object without content_type / base64
 *  400    <one>_url_unsupported   ["body",FIELD,I]             http:// or https:// (nothing is fetched)
 *  400    <one>_data_url_invalid  ["body",FIELD,I]             not data:<type>;base64,<data>
 *  400    <one>_type_unsupported  ["body",FIELD,I]             a type the kind does not take
 *  413    <one>_too_large         ["body",FIELD,I]             more base64 than the kind's limit
 *  400    <one>_base64_invalid    ["body",FIELD,I]             bad base64 (offset named)
 *  400    <one>_invalid           ["body",FIELD,I]             no bytes at all
 */
#ifndef CLEF_MEDIA_WIRE_H
#define CLEF_MEDIA_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/error.h"
#include "text/json.h"

typedef struct {
    const char  *name;          /* a content type, lower case */
    int          format;        /* the kind's own format enum, never 0 */
} clef_media_type;

typedef struct {
    const char             *one;        /* "image": error types, words */
    const char             *many;       /* "images" */
    const char             *noun;       /* "Image" */
    const char             *field;      /* "images" */
    const char             *example;    /* "image/png" */
    const char             *choices;    /* "image/png|jpeg|webp" */
    const char             *accepted;   /* "image/png, image/jpeg and
                                           image/webp" */
    const clef_media_type  *types;
    size_t                  n_types;
} clef_media_wire;

/* loc of item i of w's field, or of its key when key is not NULL. */
void clef_media_wire_loc(const clef_media_wire *w, size_t i,
    const char *key, char *loc, size_t cap);

/*
 * Reads item i (v) of w's field: its declared type (*type, a row of
 * w->types), and its bytes, base64-decoded into a (*bytes, *len > 0).
 * Returns 0, or -1 with err filled as the table above says.
 */
int clef_media_wire_read(clef_arena *a, const clef_json *v, size_t i,
    const clef_media_wire *w, size_t max_base64,
    const clef_media_type **type, uint8_t **bytes, size_t *len,
    clef_error *err);

#endif
