/*
 * A JSON value tree that keeps what Python's json.loads keeps, so that the
 * renderer can reproduce json.dumps byte for byte:
 *   - integers of any size as their exact decimal text ("-0" becomes "0"),
 *   - floats as IEEE doubles (json.loads calls float()),
 *   - the int/float distinction of the input text ("1.0" stays a float),
 *   - object members in input order (questions are answered in that order).
 *
 * Why not jansson for this: jansson stores integers as long long and cannot
 * hold the arbitrary-size integers Python accepts, and it has no hook to keep
 * the number text.  The parser is strict RFC 8259 plus the request limits.
 *
 * The parser refuses (error status 422, type "json_invalid", message saying
 * where and why):
 *   - malformed JSON and trailing garbage,
 *   - invalid UTF-8 anywhere in the text, and lone surrogate escapes
 *     (\ud800 without its pair),
 *   - nesting deeper than CLEF_JSON_MAX_DEPTH (arrays + objects),
 *   - duplicate keys in one object,
 *   - numbers Python cannot represent: NaN/Infinity literals, floats that
 *     overflow to infinity (1e400), integers of more than 4300 digits
 *     (Python's int max_str_digits).
 * All memory comes from the caller's arena.
 */
#ifndef CLEF_JSON_H
#define CLEF_JSON_H

#include <stddef.h>

#include "base/arena.h"
#include "base/error.h"

#define CLEF_JSON_MAX_DEPTH  64

typedef enum {
    CLEF_JSON_NULL = 0,
    CLEF_JSON_FALSE,
    CLEF_JSON_TRUE,
    CLEF_JSON_INT,
    CLEF_JSON_FLOAT,
    CLEF_JSON_STRING,
    CLEF_JSON_ARRAY,
    CLEF_JSON_OBJECT
} clef_json_type;

typedef struct clef_json clef_json;

typedef struct {
    const char  *s;     /* UTF-8, NUL-terminated, may contain NUL (use len) */
    size_t       len;
} clef_str;

struct clef_json {
    clef_json_type  type;
    size_t          len;     /* STRING and INT: bytes in str; ARRAY, OBJECT: members */
    const char     *str;     /* STRING: decoded UTF-8; INT: canonical decimal text */
    double          num;     /* FLOAT */
    clef_json     **items;   /* ARRAY, OBJECT: values, input order */
    clef_str       *keys;    /* OBJECT: keys, input order */
};

/* Returns NULL and fills err on refusal. */
clef_json *clef_json_parse(clef_arena *a, const char *text, size_t len, clef_error *err);

/* Object lookup by key (first match); NULL when absent or v is no object. */
const clef_json *clef_json_get(const clef_json *v, const char *key);

/* Python truthiness: null/false/0/0.0/""/[]/{} are false. */
int clef_json_truthy(const clef_json *v);

/* The name pydantic uses for a type in messages: "null", "bool", "int", ... */
const char *clef_json_type_name(const clef_json *v);

#endif
