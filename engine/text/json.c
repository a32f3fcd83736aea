/*
 * The strict JSON parser of json.h.
 *
 * Every refusal is status 422, type "json_invalid", loc ["body",N] and the
 * message "invalid JSON at byte N: REASON", N a byte offset from 0.  The
 * reasons, exactly (hh: two lowercase hex digits of a byte; HHHH: a code
 * point in uppercase hex, 4 digits or more; hhhh: the \u escape's value in
 * lowercase; D: a decimal count):
 *
 *   REASON                                        N, the offset of
 *   --------------------------------------------  ---------------------------
 *   invalid UTF-8: unexpected byte 0xhh            that byte (0x80-0xbf where
 *                                                  a character starts, 0xf8-ff)
 *   invalid UTF-8: truncated sequence              the sequence's first byte
 *   invalid UTF-8: overlong encoding of U+HHHH     the sequence's first byte
 *   invalid UTF-8: encoded surrogate U+HHHH        the sequence's first byte
 *   invalid UTF-8: U+HHHH is above U+10FFFF        the sequence's first byte
 *   byte order mark (U+FEFF) is not allowed        0
 *   expected WHAT                                  the byte found instead
 *   unexpected end of input, expected WHAT         the end (the text length)
 *       WHAT: a value | ',' or ']' | ',' or '}' | a string key or '}' |
 *             a string key | ':' | a digit
 *   expected 'true' | 'false' | 'null'             a misspelt literal's start
 *   trailing data after the JSON value             the first byte after it
 *   nesting deeper than 64 arrays and objects      the '[' or '{' opening the
 *                                                  65th level
 *   unterminated string                            its opening '"' (the text
 *                                                  ends inside the string)
 *   unescaped control character 0xhh in string     that byte (< 0x20)
 *   invalid escape '\C' in string                  the '\' (C printable ASCII)
 *   invalid escape '\' followed by byte 0xhh       the '\' (any other byte)
 *   invalid \u escape: expected 4 hex digits       that escape's '\'
 *   lone high surrogate \uhhhh                     the '\' (no \u escape of a
 *                                                  low surrogate right after)
 *   lone low surrogate \uhhhh                      the '\'
 *   duplicate key "KEY" in object                  the repeat's opening '"'
 *       KEY as a JSON string literal (render.h escaping); a key of more than
 *       64 bytes is cut at a character boundary: "PREFIX"...
 *   leading zeros are not allowed in numbers       the leading '0'
 *   NaN is not allowed                             the 'N'
 *   Infinity is not allowed                        the 'I'
 *   -Infinity is not allowed                       the '-'
 *   number out of range (overflows to infinity)    the number's first byte
 *   integer has D digits, more than 4300           the number's first byte
 *                                                  (the sign is not a digit)
 * Running out of memory is status 500, type "internal_error", message
 * "out of memory while parsing JSON", no loc.
 *
 * The whole text is checked to be UTF-8 before it is parsed (Python decodes
 * the body before json.loads sees it), so a UTF-8 error is reported wherever
 * it is; then errors come in text order, except that a duplicate key is
 * found when its object closes.
 *
 * Cost: linear.  Strings without escapes are copied in one go.  The keys
 * of an object of up to 16 members are compared pairwise; those of a bigger
 * one go into a hash set (a tokenizer.json's vocab has 151k).  The hash is
 * not keyed, so a body may be crafted to make its keys collide: the set
 * gives up after JSON_PROBES_PER_KEY probes a key on average, far beyond
 * what chance gives, and the keys are sorted instead (O(n log n)).
 * The members of an open container wait on a scratch stack (malloc'd, freed
 * on return) until their count is known; the tree itself is in the arena.
 */
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "base/hash.h"
#include "base/mem.h"
#include "text/json.h"
#include "text/render.h"

#define JSON_MAX_INT_DIGITS   4300
#define JSON_PAIRWISE_KEYS    16       /* above this, hash to find repeats */
#define JSON_PROBES_PER_KEY   8        /* the hash set's budget, on average */
#define JSON_KEY_SHOWN        64

typedef struct {
    clef_str  key;
    size_t    off;                     /* offset of the key's opening '"' */
} json_key;

typedef struct {
    clef_arena           *arena;
    clef_error           *err;
    const unsigned char  *start;
    const unsigned char  *p;
    const unsigned char  *end;

    clef_json           **vals;        /* members of the open containers */
    size_t                nvals;
    size_t                capvals;
    json_key             *keys;        /* keys of the open objects */
    size_t                nkeys;
    size_t                capkeys;
    char                 *sbuf;        /* a string with escapes, decoded */
    size_t                capsbuf;
} json_parser;

/* 1 for bytes that end the fast scan of a string: '"', '\\', < 0x20 */
static const unsigned char  json_string_stop[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
};

static pthread_once_t  json_locale_once = PTHREAD_ONCE_INIT;
static locale_t        json_c_locale;


static void
json_locale_init(void)
{
    json_c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t) 0);
}


static int
json_fail(json_parser *ps, size_t off, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
json_fail(json_parser *ps, size_t off, const char *fmt, ...)
{
    char     reason[400], loc[64];
    va_list  ap;

    va_start(ap, fmt);
    vsnprintf(reason, sizeof(reason), fmt, ap);
    va_end(ap);

    snprintf(loc, sizeof(loc), "[\"body\",%zu]", off);
    return clef_error_set(ps->err, 422, "json_invalid", loc,
                          "invalid JSON at byte %zu: %s", off, reason);
}


static int
json_oom(json_parser *ps)
{
    return clef_error_fail(ps->err, CLEF_E_INTERNAL,
                           "out of memory while parsing JSON");
}


static size_t
json_off(const json_parser *ps, const unsigned char *q)
{
    return (size_t) (q - ps->start);
}


/* "expected X" here, or "unexpected end of input, expected X" at the end */
static int
json_expected(json_parser *ps, const char *what)
{
    if (ps->p >= ps->end) {
        return json_fail(ps, json_off(ps, ps->end),
                         "unexpected end of input, expected %s", what);
    }
    return json_fail(ps, json_off(ps, ps->p), "expected %s", what);
}


/* ---- UTF-8 ------------------------------------------------------------ */

static int
json_check_utf8(json_parser *ps)
{
    const unsigned char  *s = ps->start, *e = ps->end, *q;
    uint64_t              w;
    uint32_t              cp, min;
    unsigned              c, n, i;

    while (s < e) {
        /* ASCII eight bytes at a time */
        while (e - s >= 8) {
            memcpy(&w, s, 8);
            if (w & 0x8080808080808080ULL) {
                break;
            }
            s += 8;
        }
        if (s >= e) {
            break;
        }
        c = *s;
        if (c < 0x80) {
            s++;
            continue;
        }

        q = s;
        if (c >= 0xc0 && c <= 0xdf) {
            n = 2; cp = c & 0x1f; min = 0x80;
        } else if (c >= 0xe0 && c <= 0xef) {
            n = 3; cp = c & 0x0f; min = 0x800;
        } else if (c >= 0xf0 && c <= 0xf7) {
            n = 4; cp = c & 0x07; min = 0x10000;
        } else {
            return json_fail(ps, json_off(ps, q),
                             "invalid UTF-8: unexpected byte 0x%02x", c);
        }

        for (i = 1; i < n; i++) {
            if (q + i >= e || (q[i] & 0xc0) != 0x80) {
                return json_fail(ps, json_off(ps, q),
                                 "invalid UTF-8: truncated sequence");
            }
            cp = (cp << 6) | (q[i] & 0x3f);
        }

        if (cp < min) {
            return json_fail(ps, json_off(ps, q),
                             "invalid UTF-8: overlong encoding of U+%04X", cp);
        }
        if (cp >= 0xd800 && cp <= 0xdfff) {
            return json_fail(ps, json_off(ps, q),
                             "invalid UTF-8: encoded surrogate U+%04X", cp);
        }
        if (cp > 0x10ffff) {
            return json_fail(ps, json_off(ps, q),
                             "invalid UTF-8: U+%04X is above U+10FFFF", cp);
        }
        s = q + n;
    }

    return 0;
}


/* ---- scratch stacks ---------------------------------------------------- */

static int
json_push_val(json_parser *ps, clef_json *v)
{
    if (ps->nvals == ps->capvals
        && clef_grow((void **) &ps->vals, &ps->capvals, ps->nvals + 1,
                     sizeof(clef_json *)) != 0)
    {
        return json_oom(ps);
    }
    ps->vals[ps->nvals++] = v;
    return 0;
}


static clef_json *
json_node(json_parser *ps, clef_json_type type)
{
    clef_json  *v;

    v = clef_arena_alloc(ps->arena, sizeof(clef_json));
    if (v == NULL) {
        json_oom(ps);
        return NULL;
    }
    *v = (clef_json) { .type = type };
    return v;
}


static void
json_skip_ws(json_parser *ps)
{
    const unsigned char  *p = ps->p, *e = ps->end;

    while (p < e && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) {
        p++;
    }
    ps->p = p;
}


/* ---- strings ----------------------------------------------------------- */

/* Four hex digits at p: 0, -1 for a non-hex byte, -2 for the end first. */
static int
json_hex4(const unsigned char *p, const unsigned char *e, unsigned *out)
{
    unsigned  i, c, v = 0;

    for (i = 0; i < 4; i++) {
        if (p + i >= e) {
            return -2;
        }
        c = p[i];
        if (c >= '0' && c <= '9') {
            c -= '0';
        } else if (c >= 'a' && c <= 'f') {
            c -= 'a' - 10;
        } else if (c >= 'A' && c <= 'F') {
            c -= 'A' - 10;
        } else {
            return -1;
        }
        v = (v << 4) | c;
    }
    *out = v;
    return 0;
}


static int
json_sbuf_put(json_parser *ps, size_t *len, const void *src, size_t n)
{
    if (*len + n + 1 > ps->capsbuf
        && clef_grow((void **) &ps->sbuf, &ps->capsbuf, *len + n + 1, 1) != 0)
    {
        return json_oom(ps);
    }
    memcpy(ps->sbuf + *len, src, n);
    *len += n;
    return 0;
}


/* One \u escape (or pair) at p (the '\'); appends its UTF-8 to sbuf. */
static int
json_unicode_escape(json_parser *ps, const unsigned char **pp,
    const unsigned char *quote, size_t *len)
{
    const unsigned char  *p = *pp, *e = ps->end, *q;
    unsigned char         u8[4];
    unsigned              cp, lo;
    size_t                n;
    int                   rc;

    /* the end of the text inside an escape leaves the string open */
    rc = json_hex4(p + 2, e, &cp);
    if (rc != 0) {
        return rc == -2
            ? json_fail(ps, json_off(ps, quote), "unterminated string")
            : json_fail(ps, json_off(ps, p),
                        "invalid \\u escape: expected 4 hex digits");
    }

    if (cp >= 0xdc00 && cp <= 0xdfff) {
        return json_fail(ps, json_off(ps, p), "lone low surrogate \\u%04x", cp);
    }

    if (cp >= 0xd800 && cp <= 0xdbff) {
        q = p + 6;
        if (q >= e || (*q == '\\' && q + 1 >= e)) {
            return json_fail(ps, json_off(ps, quote), "unterminated string");
        }
        if (q[0] == '\\' && q[1] == 'u') {
            rc = json_hex4(q + 2, e, &lo);
            if (rc != 0) {
                return rc == -2
                    ? json_fail(ps, json_off(ps, quote), "unterminated string")
                    : json_fail(ps, json_off(ps, q),
                                "invalid \\u escape: expected 4 hex digits");
            }
            if (lo >= 0xdc00 && lo <= 0xdfff) {
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                p = q;
                goto encode;
            }
        }
        return json_fail(ps, json_off(ps, p), "lone high surrogate \\u%04x", cp);
    }

encode:

    if (cp < 0x80) {
        u8[0] = (unsigned char) cp;
        n = 1;
    } else if (cp < 0x800) {
        u8[0] = (unsigned char) (0xc0 | (cp >> 6));
        u8[1] = (unsigned char) (0x80 | (cp & 0x3f));
        n = 2;
    } else if (cp < 0x10000) {
        u8[0] = (unsigned char) (0xe0 | (cp >> 12));
        u8[1] = (unsigned char) (0x80 | ((cp >> 6) & 0x3f));
        u8[2] = (unsigned char) (0x80 | (cp & 0x3f));
        n = 3;
    } else {
        u8[0] = (unsigned char) (0xf0 | (cp >> 18));
        u8[1] = (unsigned char) (0x80 | ((cp >> 12) & 0x3f));
        u8[2] = (unsigned char) (0x80 | ((cp >> 6) & 0x3f));
        u8[3] = (unsigned char) (0x80 | (cp & 0x3f));
        n = 4;
    }

    *pp = p + 6;
    return json_sbuf_put(ps, len, u8, n);
}


/*
 * The string whose opening '"' is at ps->p; the decoded bytes go to the
 * arena (NUL-terminated, NULs inside kept).  The text is valid UTF-8 here.
 */
static int
json_string(json_parser *ps, clef_str *out)
{
    const unsigned char  *quote = ps->p, *p = ps->p + 1, *e = ps->end, *run;
    size_t                len;
    char                  c;
    unsigned              b;

    while (p < e && !json_string_stop[*p]) {
        p++;
    }
    if (p < e && *p == '"') {
        out->len = (size_t) (p - quote - 1);
        out->s = clef_arena_strndup(ps->arena, (const char *) quote + 1, out->len);
        if (out->s == NULL) {
            return json_oom(ps);
        }
        ps->p = p + 1;
        return 0;
    }

    /* an escape or an error: decode into sbuf */
    len = 0;
    if (json_sbuf_put(ps, &len, quote + 1, (size_t) (p - quote - 1)) != 0) {
        return -1;
    }

    for ( ;; ) {
        if (p >= e) {
            return json_fail(ps, json_off(ps, quote), "unterminated string");
        }
        b = *p;
        if (b == '"') {
            break;
        }
        if (b < 0x20) {
            return json_fail(ps, json_off(ps, p),
                             "unescaped control character 0x%02x in string", b);
        }

        if (b == '\\') {
            if (p + 1 >= e) {
                return json_fail(ps, json_off(ps, quote), "unterminated string");
            }
            switch (p[1]) {
            case '"':  c = '"';  break;
            case '\\': c = '\\'; break;
            case '/':  c = '/';  break;
            case 'b':  c = '\b'; break;
            case 'f':  c = '\f'; break;
            case 'n':  c = '\n'; break;
            case 'r':  c = '\r'; break;
            case 't':  c = '\t'; break;
            case 'u':
                if (json_unicode_escape(ps, &p, quote, &len) != 0) {
                    return -1;
                }
                continue;
            default:
                if (p[1] > 0x20 && p[1] < 0x7f) {
                    return json_fail(ps, json_off(ps, p),
                                     "invalid escape '\\%c' in string", p[1]);
                }
                return json_fail(ps, json_off(ps, p),
                                 "invalid escape '\\' followed by byte 0x%02x",
                                 p[1]);
            }
            if (json_sbuf_put(ps, &len, &c, 1) != 0) {
                return -1;
            }
            p += 2;
            continue;
        }

        run = p;
        while (p < e && !json_string_stop[*p]) {
            p++;
        }
        if (json_sbuf_put(ps, &len, run, (size_t) (p - run)) != 0) {
            return -1;
        }
    }

    out->len = len;
    out->s = clef_arena_strndup(ps->arena, ps->sbuf, len);
    if (out->s == NULL) {
        return json_oom(ps);
    }
    ps->p = p + 1;
    return 0;
}


/* ---- numbers ----------------------------------------------------------- */

static int
json_is_digit(const json_parser *ps, const unsigned char *p)
{
    return p < ps->end && *p >= '0' && *p <= '9';
}


static int
json_number(json_parser *ps, clef_json **out)
{
    const unsigned char  *s = ps->p, *p = ps->p, *digits;
    size_t                n, ndigits;
    char                  small[128], *text;
    clef_json            *v;
    double                d;
    int                   is_float = 0;

    if (*p == '-') {
        p++;
        if (ps->end - p >= 8 && memcmp(p, "Infinity", 8) == 0) {
            return json_fail(ps, json_off(ps, s), "-Infinity is not allowed");
        }
    }
    digits = p;
    if (!json_is_digit(ps, p)) {
        ps->p = p;
        return json_expected(ps, "a digit");
    }
    if (*p == '0') {
        p++;
        if (json_is_digit(ps, p)) {
            return json_fail(ps, json_off(ps, p - 1),
                             "leading zeros are not allowed in numbers");
        }
    } else {
        while (json_is_digit(ps, p)) {
            p++;
        }
    }
    ndigits = (size_t) (p - digits);

    if (p < ps->end && *p == '.') {
        is_float = 1;
        p++;
        if (!json_is_digit(ps, p)) {
            ps->p = p;
            return json_expected(ps, "a digit");
        }
        while (json_is_digit(ps, p)) {
            p++;
        }
    }
    if (p < ps->end && (*p == 'e' || *p == 'E')) {
        is_float = 1;
        p++;
        if (p < ps->end && (*p == '+' || *p == '-')) {
            p++;
        }
        if (!json_is_digit(ps, p)) {
            ps->p = p;
            return json_expected(ps, "a digit");
        }
        while (json_is_digit(ps, p)) {
            p++;
        }
    }
    n = (size_t) (p - s);

    if (!is_float) {
        if (ndigits > JSON_MAX_INT_DIGITS) {
            return json_fail(ps, json_off(ps, s),
                             "integer has %zu digits, more than %d",
                             ndigits, JSON_MAX_INT_DIGITS);
        }
        v = json_node(ps, CLEF_JSON_INT);
        if (v == NULL) {
            return -1;
        }
        if (n == 2 && s[0] == '-' && s[1] == '0') {
            s++;                                    /* Python: int("-0") == 0 */
            n = 1;
        }
        v->str = clef_arena_strndup(ps->arena, (const char *) s, n);
        if (v->str == NULL) {
            return json_oom(ps);
        }
        v->len = n;
        ps->p = p;
        *out = v;
        return 0;
    }

    /* strtod wants a terminated string; the C locale reads '.' */
    text = n < sizeof(small) ? small : clef_mem_alloc(n + 1);
    if (text == NULL) {
        return json_oom(ps);
    }
    memcpy(text, s, n);
    text[n] = '\0';
    pthread_once(&json_locale_once, json_locale_init);
    d = json_c_locale != (locale_t) 0 ? strtod_l(text, NULL, json_c_locale)
                                      : strtod(text, NULL);
    if (text != small) {
        clef_mem_free(text);
    }

    if (isinf(d)) {
        return json_fail(ps, json_off(ps, s),
                         "number out of range (overflows to infinity)");
    }
    v = json_node(ps, CLEF_JSON_FLOAT);
    if (v == NULL) {
        return -1;
    }
    v->num = d;
    ps->p = p;
    *out = v;
    return 0;
}


/* ---- containers -------------------------------------------------------- */

static int
json_key_cmp(const clef_str *a, const clef_str *b)
{
    size_t  n = a->len < b->len ? a->len : b->len;
    int     r = n ? memcmp(a->s, b->s, n) : 0;

    if (r != 0) {
        return r;
    }
    return a->len < b->len ? -1 : a->len > b->len;
}


static int
json_key_sort_cmp(const void *x, const void *y)
{
    const json_key  *a = *(const json_key * const *) x;
    const json_key  *b = *(const json_key * const *) y;
    int              r = json_key_cmp(&a->key, &b->key);

    if (r != 0) {
        return r;
    }
    return a < b ? -1 : a > b;
}


static int
json_duplicate(json_parser *ps, const json_key *dup)
{
    clef_buf  shown = { 0 };
    size_t    n;
    int       cut;

    n = dup->key.len;
    cut = n > JSON_KEY_SHOWN;
    if (cut) {
        n = JSON_KEY_SHOWN;
        while (n > 0 && ((unsigned char) dup->key.s[n] & 0xc0) == 0x80) {
            n--;
        }
    }
    if (clef_render_string(&shown, dup->key.s, n) != 0) {
        clef_buf_free(&shown);
        return json_oom(ps);
    }
    json_fail(ps, dup->off, "duplicate key %s%s in object",
              shown.data, cut ? "..." : "");
    clef_buf_free(&shown);
    return -1;
}


/*
 * The keys in text order into an open-addressing set: the first key found
 * already there is the repeat first in the text, as the sort finds it.
 * Returns 0 (no repeat), -1 (refused, or out of memory), or 1 when the
 * keys collide beyond the budget and must be sorted.
 */
static int
json_check_keys_hashed(json_parser *ps, const json_key *k, size_t n)
{
    uint32_t  *set;
    size_t     cap, mask, budget, i, j;
    int        rc = 0;

    if (n > UINT32_MAX / 4) {
        return 1;
    }
    for (cap = 64; cap < 2 * n; cap *= 2) {
        /* void */
    }
    set = clef_mem_calloc(cap * sizeof(uint32_t));      /* 0: empty */
    if (set == NULL) {
        return json_oom(ps);
    }
    mask = cap - 1;
    budget = JSON_PROBES_PER_KEY * n;

    for (i = 0; i < n && rc == 0; i++) {
        j = clef_hash(k[i].key.s, k[i].key.len) & mask;
        for ( /* void */ ; set[j] != 0; j = (j + 1) & mask) {
            if (budget-- == 0) {
                rc = 1;
                break;
            }
            if (json_key_cmp(&k[set[j] - 1].key, &k[i].key) == 0) {
                rc = json_duplicate(ps, &k[i]);
                break;
            }
        }
        if (rc == 0) {
            set[j] = (uint32_t) (i + 1);
        }
    }

    clef_mem_free(set);
    return rc;
}


/* Refuses the object when a key repeats; names the repeat first in the text. */
static int
json_check_keys(json_parser *ps, const json_key *k, size_t n)
{
    const json_key   *first = NULL, **order;
    size_t            i, j;
    int               rc;

    if (n <= JSON_PAIRWISE_KEYS) {
        for (j = 1; j < n; j++) {
            for (i = 0; i < j; i++) {
                if (json_key_cmp(&k[i].key, &k[j].key) == 0) {
                    return json_duplicate(ps, &k[j]);
                }
            }
        }
        return 0;
    }

    rc = json_check_keys_hashed(ps, k, n);
    if (rc != 1) {
        return rc;
    }

    order = clef_mem_alloc(n * sizeof(*order));
    if (order == NULL) {
        return json_oom(ps);
    }
    for (i = 0; i < n; i++) {
        order[i] = &k[i];
    }
    /* equal keys end up side by side, in text order */
    qsort(order, n, sizeof(*order), json_key_sort_cmp);
    for (i = 1; i < n; i++) {
        if (json_key_cmp(&order[i - 1]->key, &order[i]->key) == 0
            && (i < 2 || json_key_cmp(&order[i - 2]->key, &order[i]->key) != 0)
            && (first == NULL || order[i] < first))
        {
            first = order[i];
        }
    }
    clef_mem_free(order);

    return first != NULL ? json_duplicate(ps, first) : 0;
}


static int json_value(json_parser *ps, int depth, clef_json **out);


/* Moves the top n scratch values into v->items. */
static int
json_take_items(json_parser *ps, clef_json *v, size_t base)
{
    size_t  n = ps->nvals - base;

    v->len = n;
    if (n == 0) {
        return 0;
    }
    v->items = clef_arena_alloc(ps->arena, n * sizeof(clef_json *));
    if (v->items == NULL) {
        return json_oom(ps);
    }
    memcpy(v->items, ps->vals + base, n * sizeof(clef_json *));
    ps->nvals = base;
    return 0;
}


static int
json_array(json_parser *ps, int depth, clef_json **out)
{
    clef_json  *v, *item;
    size_t      base = ps->nvals;

    v = json_node(ps, CLEF_JSON_ARRAY);
    if (v == NULL) {
        return -1;
    }
    ps->p++;
    json_skip_ws(ps);

    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
        *out = v;
        return 0;
    }

    for ( ;; ) {
        if (json_value(ps, depth, &item) != 0 || json_push_val(ps, item) != 0) {
            return -1;
        }
        json_skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            json_skip_ws(ps);
            continue;
        }
        if (ps->p < ps->end && *ps->p == ']') {
            ps->p++;
            break;
        }
        return json_expected(ps, "',' or ']'");
    }

    if (json_take_items(ps, v, base) != 0) {
        return -1;
    }
    *out = v;
    return 0;
}


static int
json_object(json_parser *ps, int depth, clef_json **out)
{
    clef_json  *v, *item;
    json_key   *k;
    size_t      base = ps->nvals, kbase = ps->nkeys, i, n;

    v = json_node(ps, CLEF_JSON_OBJECT);
    if (v == NULL) {
        return -1;
    }
    ps->p++;
    json_skip_ws(ps);

    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
        *out = v;
        return 0;
    }

    for ( ;; ) {
        if (ps->p >= ps->end || *ps->p != '"') {
            return json_expected(ps, ps->nkeys == kbase ? "a string key or '}'"
                                                       : "a string key");
        }
        if (ps->nkeys == ps->capkeys
            && clef_grow((void **) &ps->keys, &ps->capkeys, ps->nkeys + 1,
                         sizeof(json_key)) != 0)
        {
            return json_oom(ps);
        }
        k = &ps->keys[ps->nkeys];
        k->off = json_off(ps, ps->p);
        if (json_string(ps, &k->key) != 0) {
            return -1;
        }
        ps->nkeys++;

        json_skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != ':') {
            return json_expected(ps, "':'");
        }
        ps->p++;
        json_skip_ws(ps);

        if (json_value(ps, depth, &item) != 0 || json_push_val(ps, item) != 0) {
            return -1;
        }
        json_skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            json_skip_ws(ps);
            continue;
        }
        if (ps->p < ps->end && *ps->p == '}') {
            ps->p++;
            break;
        }
        return json_expected(ps, "',' or '}'");
    }

    n = ps->nkeys - kbase;
    if (json_check_keys(ps, ps->keys + kbase, n) != 0) {
        return -1;
    }
    v->keys = clef_arena_alloc(ps->arena, n * sizeof(clef_str));
    if (v->keys == NULL) {
        return json_oom(ps);
    }
    for (i = 0; i < n; i++) {
        v->keys[i] = ps->keys[kbase + i].key;
    }
    ps->nkeys = kbase;

    if (json_take_items(ps, v, base) != 0) {
        return -1;
    }
    *out = v;
    return 0;
}


static int
json_literal(json_parser *ps, const char *word, size_t n, clef_json_type type,
    clef_json **out)
{
    char  what[16];

    if ((size_t) (ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0) {
        snprintf(what, sizeof(what), "'%s'", word);
        return json_fail(ps, json_off(ps, ps->p), "expected %s", what);
    }
    *out = json_node(ps, type);
    if (*out == NULL) {
        return -1;
    }
    ps->p += n;
    return 0;
}


/* A value at ps->p (whitespace already skipped); depth: open containers. */
static int
json_value(json_parser *ps, int depth, clef_json **out)
{
    clef_json  *v;
    clef_str    s;

    if (ps->p >= ps->end) {
        return json_expected(ps, "a value");
    }

    switch (*ps->p) {
    case '{':
    case '[':
        if (depth >= CLEF_JSON_MAX_DEPTH) {
            return json_fail(ps, json_off(ps, ps->p),
                             "nesting deeper than %d arrays and objects",
                             CLEF_JSON_MAX_DEPTH);
        }
        return *ps->p == '{' ? json_object(ps, depth + 1, out)
                             : json_array(ps, depth + 1, out);
    case '"':
        if (json_string(ps, &s) != 0) {
            return -1;
        }
        v = json_node(ps, CLEF_JSON_STRING);
        if (v == NULL) {
            return -1;
        }
        v->str = s.s;
        v->len = s.len;
        *out = v;
        return 0;
    case 't':
        return json_literal(ps, "true", 4, CLEF_JSON_TRUE, out);
    case 'f':
        return json_literal(ps, "false", 5, CLEF_JSON_FALSE, out);
    case 'n':
        return json_literal(ps, "null", 4, CLEF_JSON_NULL, out);
    case 'N':
        if (ps->end - ps->p >= 3 && memcmp(ps->p, "NaN", 3) == 0) {
            return json_fail(ps, json_off(ps, ps->p), "NaN is not allowed");
        }
        break;
    case 'I':
        if (ps->end - ps->p >= 8 && memcmp(ps->p, "Infinity", 8) == 0) {
            return json_fail(ps, json_off(ps, ps->p), "Infinity is not allowed");
        }
        break;
    case '-':
    case '0': case '1': case '2': case '3': case '4':
    case '5': case '6': case '7': case '8': case '9':
        return json_number(ps, out);
    default:
        break;
    }

    return json_expected(ps, "a value");
}


clef_json *
clef_json_parse(clef_arena *a, const char *text, size_t len, clef_error *err)
{
    json_parser  ps;
    clef_json   *root = NULL;
    int          rc;

    memset(&ps, 0, sizeof(ps));
    ps.arena = a;
    ps.err = err;
    ps.start = (const unsigned char *) (text != NULL ? text : "");
    ps.p = ps.start;
    ps.end = ps.start + (text != NULL ? len : 0);

    rc = json_check_utf8(&ps);
    if (rc == 0 && ps.end - ps.start >= 3 && memcmp(ps.start, "\xef\xbb\xbf", 3) == 0) {
        rc = json_fail(&ps, 0, "byte order mark (U+FEFF) is not allowed");
    }
    if (rc == 0) {
        json_skip_ws(&ps);
        rc = json_value(&ps, 0, &root);
    }
    if (rc == 0) {
        json_skip_ws(&ps);
        if (ps.p < ps.end) {
            rc = json_fail(&ps, json_off(&ps, ps.p),
                           "trailing data after the JSON value");
        }
    }

    clef_mem_free(ps.vals);
    clef_mem_free(ps.keys);
    clef_mem_free(ps.sbuf);
    return rc == 0 ? root : NULL;
}


const clef_json *
clef_json_get(const clef_json *v, const char *key)
{
    size_t  i, n;

    if (v == NULL || v->type != CLEF_JSON_OBJECT || key == NULL) {
        return NULL;
    }
    n = strlen(key);
    for (i = 0; i < v->len; i++) {
        if (v->keys[i].len == n && memcmp(v->keys[i].s, key, n) == 0) {
            return v->items[i];
        }
    }
    return NULL;
}


int
clef_json_truthy(const clef_json *v)
{
    if (v == NULL) {
        return 0;
    }
    switch (v->type) {
    case CLEF_JSON_NULL:
    case CLEF_JSON_FALSE:
        return 0;
    case CLEF_JSON_TRUE:
        return 1;
    case CLEF_JSON_INT:
        return !(v->len == 1 && v->str[0] == '0');
    case CLEF_JSON_FLOAT:
        return v->num != 0.0;                   /* NaN is true in Python too */
    case CLEF_JSON_STRING:
    case CLEF_JSON_ARRAY:
    case CLEF_JSON_OBJECT:
        return v->len != 0;
    }
    return 0;
}


const char *
clef_json_type_name(const clef_json *v)
{
    if (v == NULL) {
        return "null";
    }
    switch (v->type) {
    case CLEF_JSON_NULL:   return "null";
    case CLEF_JSON_FALSE:
    case CLEF_JSON_TRUE:   return "bool";
    case CLEF_JSON_INT:    return "int";
    case CLEF_JSON_FLOAT:  return "float";
    case CLEF_JSON_STRING: return "string";
    case CLEF_JSON_ARRAY:  return "list";
    case CLEF_JSON_OBJECT: return "dict";
    }
    return "null";
}
