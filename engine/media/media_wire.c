/*
 * A media item's wire form (see media_wire.h).
 */
#include "media/media_wire.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "media/base64.h"


/* Writes at most max bytes of s into dst for a message: printable ASCII
 * kept, anything else as '?', "..." when cut. */
static void
quote(char *dst, size_t cap, const char *s, size_t len, size_t max)
{
    size_t  i, n = 0;

    if (max > cap - 4) {
        max = cap - 4;
    }
    for (i = 0; i < len && n < max; i++) {
        dst[n++] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
    }
    if (i < len) {
        memcpy(dst + n, "...", 3);
        n += 3;
    }
    dst[n] = '\0';
}


void
clef_media_wire_loc(const clef_media_wire *w, size_t i, const char *key,
    char *loc, size_t cap)
{
    if (key != NULL) {
        snprintf(loc, cap, "[\"body\",\"%s\",%zu,\"%s\"]", w->field, i,
                 key);
    } else {
        snprintf(loc, cap, "[\"body\",\"%s\",%zu]", w->field, i);
    }
}


/* The row of the content type t[0..n) (case-insensitive, as RFC 2045
 * types are), or NULL. */
static const clef_media_type *
type_of(const clef_media_wire *w, const char *t, size_t n)
{
    size_t  i;

    for (i = 0; i < w->n_types; i++) {
        if (strlen(w->types[i].name) == n
            && strncasecmp(w->types[i].name, t, n) == 0)
        {
            return &w->types[i];
        }
    }
    return NULL;
}


static int
unsupported_type(const clef_media_wire *w, clef_error *err, const char *loc,
    size_t i, const char *t, size_t n)
{
    char  shown[80], type[64];

    quote(shown, sizeof(shown), t, n, 64);
    snprintf(type, sizeof(type), "%s_type_unsupported", w->one);
    return clef_error_set(err, 400, type, loc,
        "%s %zu has type '%s': only %s are accepted.", w->noun, i, shown,
        w->accepted);
}


/*
 * A data URL, "data:<type>[;<param>]*;base64,<data>" (RFC 2397): the type
 * and the base64 text.
 */
static int
parse_data_url(const clef_media_wire *w, const clef_json *v, size_t i,
    const char *loc, const clef_media_type **type, const char **b64,
    size_t *b64_len, clef_error *err)
{
    const char  *s = v->str, *end = v->str + v->len, *comma, *semi, *p;
    char         shown[80], name[64];

    snprintf(name, sizeof(name), "%s_data_url_invalid", w->one);
    if ((v->len >= 7 && strncasecmp(s, "http://", 7) == 0)
        || (v->len >= 8 && strncasecmp(s, "https://", 8) == 0))
    {
        snprintf(name, sizeof(name), "%s_url_unsupported", w->one);
        return clef_error_set(err, 400, name, loc,
            "%s %zu is a remote URL: %s are not fetched; send the %s itself "
            "as a data URL (data:%s;base64,...).", w->noun, i, w->many,
            w->one, w->example);
    }
    if (v->len < 5 || strncasecmp(s, "data:", 5) != 0) {
        quote(shown, sizeof(shown), s, v->len, 32);
        return clef_error_set(err, 400, name, loc,
            "%s %zu is not a data URL: expected data:%s;base64,..., got "
            "'%s'.", w->noun, i, w->choices, shown);
    }

    comma = memchr(s, ',', v->len);
    if (comma == NULL) {
        return clef_error_set(err, 400, name, loc,
            "%s %zu is a data URL without the ',' before its data.", w->noun,
            i);
    }

    /* the type runs to the first ';' (or the comma) */
    p = s + 5;
    semi = memchr(p, ';', (size_t) (comma - p));
    *type = type_of(w, p, (size_t) ((semi ? semi : comma) - p));
    if (*type == NULL) {
        return unsupported_type(w, err, loc, i, p,
                                (size_t) ((semi ? semi : comma) - p));
    }

    /* the last parameter must be base64 */
    if (comma - s < 12 || strncasecmp(comma - 7, ";base64", 7) != 0) {
        return clef_error_set(err, 400, name, loc,
            "%s %zu is a data URL that is not base64-encoded: expected "
            "data:%s;base64,...", w->noun, i, (*type)->name);
    }

    *b64 = comma + 1;
    *b64_len = (size_t) (end - *b64);
    return 0;
}


static int
parse_object(const clef_media_wire *w, const clef_json *v, size_t i,
    const char *loc, const clef_media_type **type, const char **b64,
    size_t *b64_len, clef_error *err)
{
    const clef_json  *ct, *data;
    char              floc[96];

    ct = clef_json_get(v, "content_type");
    data = clef_json_get(v, "base64");
    if (ct == NULL || data == NULL) {
        clef_media_wire_loc(w, i, ct == NULL ? "content_type" : "base64",
                            floc, sizeof(floc));
        return clef_error_set(err, 422, "missing", floc, "Field required");
    }
    if (ct->type != CLEF_JSON_STRING || data->type != CLEF_JSON_STRING) {
        clef_media_wire_loc(w, i, ct->type != CLEF_JSON_STRING
                                  ? "content_type" : "base64",
                            floc, sizeof(floc));
        return clef_error_set(err, 422, "string_type", floc,
                              "Input should be a valid string");
    }

    *type = type_of(w, ct->str, ct->len);
    if (*type == NULL) {
        return unsupported_type(w, err, loc, i, ct->str, ct->len);
    }
    *b64 = data->str;
    *b64_len = data->len;
    return 0;
}


int
clef_media_wire_read(clef_arena *a, const clef_json *v, size_t i,
    const clef_media_wire *w, size_t max_base64,
    const clef_media_type **type, uint8_t **bytes, size_t *len,
    clef_error *err)
{
    const char  *b64 = NULL, *why;
    size_t       b64_len = 0, bad;
    int64_t      n;
    char         loc[64], name[64];

    clef_media_wire_loc(w, i, NULL, loc, sizeof(loc));
    if (v->type == CLEF_JSON_STRING) {
        if (parse_data_url(w, v, i, loc, type, &b64, &b64_len, err) != 0) {
            return -1;
        }
    } else if (v->type == CLEF_JSON_OBJECT) {
        if (parse_object(w, v, i, loc, type, &b64, &b64_len, err) != 0) {
            return -1;
        }
    } else {
        snprintf(name, sizeof(name), "%s_type", w->one);
        return clef_error_set(err, 422, name, loc,
            "Input should be a data URL string or an object with "
            "\"content_type\" and \"base64\"");
    }

    if (b64_len > max_base64) {
        snprintf(name, sizeof(name), "%s_too_large", w->one);
        return clef_error_set(err, 413, name, loc,
            "%s %zu is %zu bytes of base64; the limit is %zu bytes per %s.",
            w->noun, i, b64_len, max_base64, w->one);
    }

    *bytes = clef_arena_alloc(a, clef_base64_max_decoded(b64_len));
    if (*bytes == NULL) {
        return clef_error_set(err, 500, "internal_error", "", "Out of memory.");
    }
    n = clef_base64_decode(b64, b64_len, *bytes, &bad, &why);
    if (n < 0) {
        snprintf(name, sizeof(name), "%s_base64_invalid", w->one);
        return clef_error_set(err, 400, name, loc,
            "%s %zu is not valid base64: %s at offset %zu of its data.",
            w->noun, i, why, bad);
    }
    if (n == 0) {
        snprintf(name, sizeof(name), "%s_invalid", w->one);
        return clef_error_set(err, 400, name, loc, "%s %zu is empty.",
                              w->noun, i);
    }
    *len = (size_t) n;
    return 0;
}
