/*
 * The strict JSON parser: every refusal with its exact status, type, loc and
 * message (the table at the top of engine/json.c), the accepted edge cases,
 * the tree it builds, and get / truthy / type_name.
 */
#include <stdint.h>

#include "base/buf.h"
#include "base/hash.h"
#include "check.h"
#include "text/json.h"

typedef struct {
    const char  *text;
    size_t       len;       /* 0: strlen(text) */
    size_t       off;
    const char  *reason;
} refusal;

#define R(text, off, reason)   { text, sizeof(text) - 1, off, reason }

static const refusal  refusals[] = {
    /* malformed */
    R("", 0, "unexpected end of input, expected a value"),
    R(" \t\r\n", 4, "unexpected end of input, expected a value"),
    R("[1,]", 3, "expected a value"),
    R("[1 2]", 3, "expected ',' or ']'"),
    R("[1", 2, "unexpected end of input, expected ',' or ']'"),
    R("[", 1, "unexpected end of input, expected a value"),
    R("{\"a\":1 \"b\":2}", 7, "expected ',' or '}'"),
    R("{\"a\":1", 6, "unexpected end of input, expected ',' or '}'"),
    R("{1:2}", 1, "expected a string key or '}'"),
    R("{", 1, "unexpected end of input, expected a string key or '}'"),
    R("{'a':1}", 1, "expected a string key or '}'"),
    R("{\"a\":1,}", 7, "expected a string key"),
    R("{\"a\" 1}", 5, "expected ':'"),
    R("{\"a\"", 4, "unexpected end of input, expected ':'"),
    R("{\"a\":}", 5, "expected a value"),
    R("-", 1, "unexpected end of input, expected a digit"),
    R("-a", 1, "expected a digit"),
    R("1.", 2, "unexpected end of input, expected a digit"),
    R("1.e5", 2, "expected a digit"),
    R("1e", 2, "unexpected end of input, expected a digit"),
    R("1e+", 3, "unexpected end of input, expected a digit"),
    R("[1ex]", 3, "expected a digit"),
    R("01", 0, "leading zeros are not allowed in numbers"),
    R("-012", 1, "leading zeros are not allowed in numbers"),
    R("[00]", 1, "leading zeros are not allowed in numbers"),
    R(".5", 0, "expected a value"),
    R("+1", 0, "expected a value"),
    R("tru", 0, "expected 'true'"),
    R("[falsy]", 1, "expected 'false'"),
    R("nul", 0, "expected 'null'"),
    R("nan", 0, "expected 'null'"),
    R("True", 0, "expected a value"),
    R("'a'", 0, "expected a value"),
    R("[1] x", 4, "trailing data after the JSON value"),
    R("1 2", 2, "trailing data after the JSON value"),
    R("{}{}", 2, "trailing data after the JSON value"),
    R("\"a\"\"b\"", 3, "trailing data after the JSON value"),
    R("1\x00", 1, "trailing data after the JSON value"),
    R("[1]\x0c", 3, "trailing data after the JSON value"),
    /* NaN and infinities */
    R("NaN", 0, "NaN is not allowed"),
    R("[Infinity]", 1, "Infinity is not allowed"),
    R("-Infinity", 0, "-Infinity is not allowed"),
    R("{\"a\":-Infinity}", 5, "-Infinity is not allowed"),
    R("Inf", 0, "expected a value"),
    R("1e400", 0, "number out of range (overflows to infinity)"),
    R("[0,-1e400]", 3, "number out of range (overflows to infinity)"),
    R("1.8e308", 0, "number out of range (overflows to infinity)"),
    /* strings */
    R("\"abc", 0, "unterminated string"),
    R("[\"abc", 1, "unterminated string"),
    R("\"\\", 0, "unterminated string"),
    R("\"\\u12", 0, "unterminated string"),
    R("\"\\ud83d", 0, "unterminated string"),
    R("\"\\ud83d\\", 0, "unterminated string"),
    R("\"\\ud83d\\ude0", 0, "unterminated string"),
    R("\"a\nb\"", 2, "unescaped control character 0x0a in string"),
    R("\"\t\"", 1, "unescaped control character 0x09 in string"),
    R("[\"\x01\"]", 2, "unescaped control character 0x01 in string"),
    R("\"\x1f\"", 1, "unescaped control character 0x1f in string"),
    R("\"a\\u0041\x00\"", 8, "unescaped control character 0x00 in string"),
    R("\"\\x\"", 1, "invalid escape '\\x' in string"),
    R("\"ab\\'\"", 3, "invalid escape '\\'' in string"),
    R("\"\\ \"", 1, "invalid escape '\\' followed by byte 0x20"),
    R("\"\\\x01\"", 1, "invalid escape '\\' followed by byte 0x01"),
    R("\"\\\xc3\xa9\"", 1, "invalid escape '\\' followed by byte 0xc3"),
    R("\"\\U0041\"", 1, "invalid escape '\\U' in string"),
    R("\"\\u12\"", 1, "invalid \\u escape: expected 4 hex digits"),
    R("\"\\u12G4\"", 1, "invalid \\u escape: expected 4 hex digits"),
    R("\"\\ud83d\\uzzzz\"", 7, "invalid \\u escape: expected 4 hex digits"),
    /* lone surrogates */
    R("\"\\ud800\"", 1, "lone high surrogate \\ud800"),
    R("\"\\uDBFF\"", 1, "lone high surrogate \\udbff"),
    R("\"x\\udc00\"", 2, "lone low surrogate \\udc00"),
    R("\"\\uDFFF\"", 1, "lone low surrogate \\udfff"),
    R("\"\\ud83d\\u0041\"", 1, "lone high surrogate \\ud83d"),
    R("\"\\uD83Dx\"", 1, "lone high surrogate \\ud83d"),
    R("\"\\ud83d\\n\"", 1, "lone high surrogate \\ud83d"),
    R("\"\\ude00\\ud83d\"", 1, "lone low surrogate \\ude00"),
    R("\"\\ud83d\\ud83d\\ude00\"", 1, "lone high surrogate \\ud83d"),
    R("{\"\\ud800\":1}", 2, "lone high surrogate \\ud800"),
    /* UTF-8 */
    R("\"\xff\"", 1, "invalid UTF-8: unexpected byte 0xff"),
    R("\"\x80\"", 1, "invalid UTF-8: unexpected byte 0x80"),
    R("\"a\xbf\"", 2, "invalid UTF-8: unexpected byte 0xbf"),
    R("\"\xf8\x88\x80\x80\x80\"", 1, "invalid UTF-8: unexpected byte 0xf8"),
    R("\"\xc3\"", 1, "invalid UTF-8: truncated sequence"),
    R("\"\xc3", 1, "invalid UTF-8: truncated sequence"),
    R("\"\xe2\x82\"", 1, "invalid UTF-8: truncated sequence"),
    R("\"\xf0\x9f\x98", 1, "invalid UTF-8: truncated sequence"),
    R("\"\xe2\x82\xc3\xa9\"", 1, "invalid UTF-8: truncated sequence"),
    R("\"\xc0\xaf\"", 1, "invalid UTF-8: overlong encoding of U+002F"),
    R("\"\xc1\xbf\"", 1, "invalid UTF-8: overlong encoding of U+007F"),
    R("\"\xe0\x80\xaf\"", 1, "invalid UTF-8: overlong encoding of U+002F"),
    R("\"\xe0\x9f\xbf\"", 1, "invalid UTF-8: overlong encoding of U+07FF"),
    R("\"\xf0\x82\x82\xac\"", 1, "invalid UTF-8: overlong encoding of U+20AC"),
    R("\"\xf0\x8f\xbf\xbf\"", 1, "invalid UTF-8: overlong encoding of U+FFFF"),
    R("\"\xed\xa0\x80\"", 1, "invalid UTF-8: encoded surrogate U+D800"),
    R("\"\xed\xbf\xbf\"", 1, "invalid UTF-8: encoded surrogate U+DFFF"),
    R("\"\xed\xa0\xbd\xed\xb8\x80\"", 1, "invalid UTF-8: encoded surrogate U+D83D"),
    R("\"\xf4\x90\x80\x80\"", 1, "invalid UTF-8: U+110000 is above U+10FFFF"),
    R("\"\xf7\xbf\xbf\xbf\"", 1, "invalid UTF-8: U+1FFFFF is above U+10FFFF"),
    R("[1] \xff", 4, "invalid UTF-8: unexpected byte 0xff"),
    R("[1,,\xff", 4, "invalid UTF-8: unexpected byte 0xff"),   /* checked first */
    R("\xc3\xa9", 0, "expected a value"),
    R("\xef\xbb\xbf{}", 0, "byte order mark (U+FEFF) is not allowed"),
    R("{} \xef\xbb\xbf", 3, "trailing data after the JSON value"),
    /* duplicate keys */
    R("{\"a\":1,\"a\":2}", 7, "duplicate key \"a\" in object"),
    R("{\"a\":1,\"\\u0061\":2}", 7, "duplicate key \"a\" in object"),
    R("{\"\":1,\"b\":[],\"\":2}", 13, "duplicate key \"\" in object"),
    R("{\"a\\u0000\":1,\"a\":2,\"a\\u0000\":3}", 19,
      "duplicate key \"a\\u0000\" in object"),
    R("{\"\\ud83d\\ude00\":1,\"\xf0\x9f\x98\x80\":2}", 18,
      "duplicate key \"\xf0\x9f\x98\x80\" in object"),
    R("{\"x\":{\"b\":1,\"b\":2},\"x\":3}", 12, "duplicate key \"b\" in object"),
    R("{\"x\":1,\"y\":2,\"y\":3,\"x\":4}", 13, "duplicate key \"y\" in object"),
    R("{\"q\\n\\\"\":1,\"q\\n\\\"\":2}", 11, "duplicate key \"q\\n\\\"\" in object"),
    R("[{\"a\":1},{\"a\":1,\"a\":1}]", 16, "duplicate key \"a\" in object"),
};


static void
check_refusal(const char *text, size_t len, size_t off, const char *reason,
    const char *what)
{
    clef_arena   arena;
    clef_error   err;
    clef_json   *v;
    char         msg[600], loc[64];

    clef_arena_init(&arena, 0);
    clef_error_clear(&err);
    v = clef_json_parse(&arena, text, len, &err);

    snprintf(msg, sizeof(msg), "invalid JSON at byte %zu: %s", off, reason);
    snprintf(loc, sizeof(loc), "[\"body\",%zu]", off);

    CHECK(v == NULL, "%s: refused", what);
    CHECK_INT(err.status, 422, "%s: status", what);
    CHECK_STR(err.type, "json_invalid", "%s: type", what);
    CHECK_STR(err.loc, loc, "%s: loc", what);
    CHECK_STR(err.message, msg, "%s: message", what);
    clef_arena_free(&arena);
}


static void
check_refusals(void)
{
    size_t  i;
    char    what[64];

    for (i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
        snprintf(what, sizeof(what), "refusal %zu", i);
        check_refusal(refusals[i].text, refusals[i].len, refusals[i].off,
                      refusals[i].reason, what);
    }
}


/* Nested containers: depth of them, opened by open[], closed by close[]. */
static void
nest(clef_buf *b, int depth, const char *open, const char *inner, const char *close)
{
    int  i;

    b->len = 0;
    for (i = 0; i < depth; i++) {
        clef_buf_printf(b, "%s", open);
    }
    clef_buf_printf(b, "%s", inner);
    for (i = 0; i < depth; i++) {
        clef_buf_printf(b, "%s", close);
    }
}


static void
check_limits(void)
{
    clef_buf          b = { 0 };
    clef_arena        arena;
    clef_error        err;
    const clef_json  *v;
    int               i, d;

    /* 64 containers accepted, 65 refused */
    nest(&b, 64, "[", "1", "]");
    clef_arena_init(&arena, 0);
    v = clef_json_parse(&arena, b.data, b.len, &err);
    for (d = 0; v != NULL && v->type == CLEF_JSON_ARRAY; d++) {
        v = v->len == 1 ? v->items[0] : NULL;
    }
    CHECK(v != NULL && v->type == CLEF_JSON_INT && d == 64, "64 nested arrays accepted");
    clef_arena_free(&arena);

    nest(&b, 65, "[", "1", "]");
    check_refusal(b.data, b.len, 64, "nesting deeper than 64 arrays and objects",
                  "65 nested arrays");
    nest(&b, 65, "[", "", "]");
    check_refusal(b.data, b.len, 64, "nesting deeper than 64 arrays and objects",
                  "65 nested empty arrays");

    nest(&b, 64, "{\"a\":", "{}", "}");
    check_refusal(b.data, b.len, 320, "nesting deeper than 64 arrays and objects",
                  "65 nested objects");
    nest(&b, 63, "{\"a\":[", "{}", "]}");
    clef_arena_init(&arena, 0);
    CHECK(clef_json_parse(&arena, b.data, b.len, &err) == NULL,
          "126 + 1 mixed containers refused");
    clef_arena_free(&arena);
    nest(&b, 32, "{\"a\":[", "0", "]}");
    clef_arena_init(&arena, 0);
    CHECK(clef_json_parse(&arena, b.data, b.len, &err) != NULL,
          "64 mixed containers accepted");
    clef_arena_free(&arena);

    /* 4300 digits accepted, 4301 refused, the sign not counted */
    for (i = 4299; i <= 4301; i++) {
        b.len = 0;
        clef_buf_putc(&b, '-');
        clef_buf_putc(&b, '7');
        for (d = 1; d < i; d++) {
            clef_buf_putc(&b, (char) ('0' + d % 10));
        }
        clef_arena_init(&arena, 0);
        v = clef_json_parse(&arena, b.data + 1, b.len - 1, &err);
        if (i <= 4300) {
            CHECK(v != NULL && v->type == CLEF_JSON_INT && v->len == (size_t) i
                  && memcmp(v->str, b.data + 1, i) == 0 && v->str[i] == '\0',
                  "%d-digit integer kept exactly", i);
            v = clef_json_parse(&arena, b.data, b.len, &err);
            CHECK(v != NULL && v->len == (size_t) i + 1 && v->str[0] == '-',
                  "-%d-digit integer kept exactly", i);
        } else {
            clef_arena_free(&arena);
            check_refusal(b.data + 1, b.len - 1, 0,
                          "integer has 4301 digits, more than 4300", "4301 digits");
            check_refusal(b.data, b.len, 0,
                          "integer has 4301 digits, more than 4300", "-4301 digits");
            clef_arena_init(&arena, 0);
        }
        clef_arena_free(&arena);
    }

    /* floats have no digit limit */
    b.len = 0;
    clef_buf_printf(&b, "0.");
    for (d = 0; d < 5000; d++) {
        clef_buf_putc(&b, '3');
    }
    clef_arena_init(&arena, 0);
    v = clef_json_parse(&arena, b.data, b.len, &err);
    CHECK(v != NULL && v->type == CLEF_JSON_FLOAT && v->num == 1.0 / 3.0,
          "a float of 5000 digits reads as the nearest double");
    clef_arena_free(&arena);

    clef_buf_free(&b);
}


static void
check_duplicates_big(void)
{
    clef_buf          b = { 0 };
    clef_arena        arena;
    clef_error        err;
    const clef_json  *v;
    size_t            off = 0;
    int               i, ok;

    /* 1000 distinct keys (the hash set), then two repeats */
    clef_buf_putc(&b, '{');
    for (i = 0; i < 1000; i++) {
        clef_buf_printf(&b, "%s\"k%d\":%d", i ? "," : "", (i * 7919) % 1000, i);
    }
    clef_buf_putc(&b, '}');

    clef_arena_init(&arena, 0);
    v = clef_json_parse(&arena, b.data, b.len, &err);
    ok = v != NULL && v->type == CLEF_JSON_OBJECT && v->len == 1000;
    for (i = 0; ok && i < 1000; i++) {
        char  key[16];
        snprintf(key, sizeof(key), "k%d", (i * 7919) % 1000);
        ok = strcmp(v->keys[i].s, key) == 0 && v->items[i]->type == CLEF_JSON_INT
             && atoi(v->items[i]->str) == i;
    }
    CHECK(ok, "1000 distinct keys accepted, in input order");
    CHECK(clef_json_get(v, "k919") != NULL
          && strcmp(clef_json_get(v, "k919")->str, "1") == 0, "get in a big object");
    clef_arena_free(&arena);

    b.len--;                                  /* drop '}' */
    clef_buf_printf(&b, ",\"x\":0,");
    off = b.len;
    clef_buf_printf(&b, "\"k700\":1,\"k3\":2,\"x\":3}");
    check_refusal(b.data, b.len, off, "duplicate key \"k700\" in object",
                  "first repeat in a big object");

    clef_buf_free(&b);
}


/*
 * 40 keys that all land in one slot of the parser's hash set (its 128
 * slots, the hash of base/hash.h): the set runs out of probes and the keys
 * are sorted, with the same answers.
 */
static void
check_duplicates_colliding(void)
{
    clef_buf          b = { 0 };
    clef_arena        arena;
    clef_error        err;
    const clef_json  *v;
    char              keys[40][16], reason[64];
    size_t            off, n = 0;
    unsigned          i;
    int               k, hi;

    for (i = 0; n < 40; i++) {
        snprintf(keys[n], sizeof(keys[n]), "c%u", i);
        if ((clef_hash(keys[n], strlen(keys[n])) & 127) == 5) {
            n++;
        }
    }
    clef_buf_putc(&b, '{');
    for (k = 0; k < 40; k++) {
        clef_buf_printf(&b, "%s\"%s\":%d", k ? "," : "", keys[k], k);
    }
    clef_buf_putc(&b, '}');

    clef_arena_init(&arena, 0);
    v = clef_json_parse(&arena, b.data, b.len, &err);
    CHECK(v != NULL && v->len == 40 && strcmp(v->keys[39].s, keys[39]) == 0,
          "40 distinct colliding keys accepted");
    clef_arena_free(&arena);

    /* two repeats, the one that sorts last first in the text: it is named */
    hi = strcmp(keys[2], keys[30]) > 0 ? 2 : 30;
    b.len--;
    off = b.len + 1;
    clef_buf_printf(&b, ",\"%s\":0,\"%s\":1}", keys[hi], keys[32 - hi]);
    snprintf(reason, sizeof(reason), "duplicate key \"%s\" in object",
             keys[hi]);
    check_refusal(b.data, b.len, off, reason, "first repeat of colliding keys");
    clef_buf_free(&b);
}


static void
check_long_key(void)
{
    clef_buf  b = { 0 }, k = { 0 };
    char      reason[256];
    int       i;

    /* 63 x, then a 2-byte character across the 64-byte cut */
    for (i = 0; i < 63; i++) {
        clef_buf_putc(&k, 'x');
    }
    clef_buf_printf(&k, "\xc3\xa9yyyy");
    clef_buf_printf(&b, "{\"%s\":1,\"%s\":2}", k.data, k.data);
    snprintf(reason, sizeof(reason), "duplicate key \"%.*s\"... in object", 63, k.data);
    check_refusal(b.data, b.len, k.len + 6, reason, "long key cut at a character");

    b.len = 0;
    k.len = 64;
    k.data[64] = '\0';
    for (i = 0; i < 64; i++) {
        k.data[i] = 'z';
    }
    clef_buf_printf(&b, "{\"%s\":1,\"%s\":2}", k.data, k.data);
    snprintf(reason, sizeof(reason), "duplicate key \"%s\" in object", k.data);
    check_refusal(b.data, b.len, 64 + 6, reason, "64-byte key shown whole");

    clef_buf_free(&b);
    clef_buf_free(&k);
}


static const clef_json *
parse(clef_arena *a, const char *text, size_t len)
{
    clef_error  err;
    clef_json  *v = clef_json_parse(a, text, len, &err);

    if (v == NULL) {
        printf("# refused '%s': %s\n", text, err.message);
    }
    return v;
}

#define PARSE(a, text)  parse(a, text, sizeof(text) - 1)


static void
check_accepted(void)
{
    clef_arena        a;
    const clef_json  *v, *w;
    uint64_t          bits;

    clef_arena_init(&a, 0);

    v = PARSE(&a, "\"a\\u0000b\"");
    CHECK(v && v->type == CLEF_JSON_STRING && v->len == 3
          && memcmp(v->str, "a\0b", 4) == 0, "NUL in a string kept, NUL-terminated");

    v = PARSE(&a, "{\"\\u0000\":1,\"a\\u0000b\":2,\"a\":3}");
    CHECK(v && v->len == 3 && v->keys[0].len == 1 && v->keys[0].s[0] == '\0'
          && v->keys[1].len == 3 && memcmp(v->keys[1].s, "a\0b", 3) == 0
          && v->keys[2].len == 1, "NUL in keys kept; such keys are distinct");

    v = PARSE(&a, "[\"\\ud83d\\ude00\",\"\\uD83D\\uDE00\",\"\\udbff\\udfff\",\"\\ud800\\udc00\"]");
    CHECK(v && v->len == 4 && strcmp(v->items[0]->str, "\xf0\x9f\x98\x80") == 0
          && strcmp(v->items[1]->str, "\xf0\x9f\x98\x80") == 0
          && strcmp(v->items[2]->str, "\xf4\x8f\xbf\xbf") == 0
          && strcmp(v->items[3]->str, "\xf0\x90\x80\x80") == 0,
          "surrogate pairs decode to 4-byte UTF-8");

    v = PARSE(&a, "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u0041\\u00e9\\u20ac\\u007f\"");
    CHECK(v && strcmp(v->str, "\"\\/\b\f\n\r\tA\xc3\xa9\xe2\x82\xac\x7f") == 0,
          "every escape decodes");

    v = PARSE(&a, "\"\x7f \xc2\x80 \xdf\xbf \xe0\xa0\x80 \xef\xbb\xbf \xef\xbf\xbf "
                  "\xf0\x90\x80\x80 \xf4\x8f\xbf\xbf \xe2\x80\xa8\"");
    CHECK(v && v->type == CLEF_JSON_STRING && v->len == 33,
          "raw UTF-8 at every length boundary, BOM and U+2028 inside a string");

    v = PARSE(&a, " \t\r\n{ \"b\" : 1 , \"a\" :\t[ ] , \"c\":{ } } \n");
    CHECK(v && v->type == CLEF_JSON_OBJECT && v->len == 3
          && strcmp(v->keys[0].s, "b") == 0 && strcmp(v->keys[1].s, "a") == 0
          && strcmp(v->keys[2].s, "c") == 0 && v->items[1]->type == CLEF_JSON_ARRAY
          && v->items[1]->len == 0 && v->items[2]->type == CLEF_JSON_OBJECT
          && v->items[2]->len == 0, "members kept in input order, whitespace skipped");

    v = PARSE(&a, "[3,1,2]");
    CHECK(v && v->len == 3 && strcmp(v->items[0]->str, "3") == 0
          && strcmp(v->items[2]->str, "2") == 0, "array order kept");

    v = PARSE(&a, "[-0,0,-1,1.0,-0.0,1E2,1e-400,-1e-400,12345678901234567890123]");
    CHECK(v && v->len == 9, "numbers parse");
    if (v && v->len == 9) {
        CHECK(v->items[0]->type == CLEF_JSON_INT && strcmp(v->items[0]->str, "0") == 0
              && v->items[0]->len == 1, "-0 is the int 0");
        CHECK(v->items[1]->type == CLEF_JSON_INT && strcmp(v->items[1]->str, "0") == 0, "0");
        CHECK(v->items[2]->type == CLEF_JSON_INT && strcmp(v->items[2]->str, "-1") == 0
              && v->items[2]->len == 2, "-1");
        CHECK(v->items[3]->type == CLEF_JSON_FLOAT && v->items[3]->num == 1.0,
              "1.0 stays a float");
        memcpy(&bits, &v->items[4]->num, sizeof(bits));
        CHECK(v->items[4]->type == CLEF_JSON_FLOAT && bits == 0x8000000000000000ULL,
              "-0.0 is negative zero");
        CHECK(v->items[5]->type == CLEF_JSON_FLOAT && v->items[5]->num == 100.0,
              "1E2 is the float 100.0");
        memcpy(&bits, &v->items[6]->num, sizeof(bits));
        CHECK(v->items[6]->type == CLEF_JSON_FLOAT && bits == 0, "1e-400 underflows to 0.0");
        memcpy(&bits, &v->items[7]->num, sizeof(bits));
        CHECK(bits == 0x8000000000000000ULL, "-1e-400 underflows to -0.0");
        CHECK(v->items[8]->type == CLEF_JSON_INT
              && strcmp(v->items[8]->str, "12345678901234567890123") == 0, "big int exact");
    }

    v = PARSE(&a, "1.7976931348623157e308");
    CHECK(v && v->num == 1.7976931348623157e308, "DBL_MAX accepted");
    v = PARSE(&a, "9007199254740993.0");
    CHECK(v && v->num == 9007199254740992.0, "halfway rounds to even");
    v = PARSE(&a, "true");
    CHECK(v && v->type == CLEF_JSON_TRUE, "true");
    v = PARSE(&a, "false");
    CHECK(v && v->type == CLEF_JSON_FALSE, "false");
    v = PARSE(&a, " null ");
    CHECK(v && v->type == CLEF_JSON_NULL, "null");
    v = PARSE(&a, "\"\"");
    CHECK(v && v->type == CLEF_JSON_STRING && v->len == 0 && v->str[0] == '\0', "empty string");

    /* text that is not NUL-terminated: the parser stays within len */
    v = parse(&a, "12345", 2);
    CHECK(v && v->type == CLEF_JSON_INT && strcmp(v->str, "12") == 0, "int bounded by len");
    v = parse(&a, "1.5e3x", 5);
    CHECK(v && v->type == CLEF_JSON_FLOAT && v->num == 1.5e3, "float bounded by len");
    v = parse(&a, "\"ab\"c", 4);
    CHECK(v && strcmp(v->str, "ab") == 0, "string bounded by len");
    v = parse(&a, "truex", 4);
    CHECK(v && v->type == CLEF_JSON_TRUE, "literal bounded by len");

    /* get */
    v = PARSE(&a, "{\"model\":\"m\",\"state\":null,\"q\":{\"a\":1}}");
    w = clef_json_get(v, "state");
    CHECK(w && w->type == CLEF_JSON_NULL, "get finds a null member");
    CHECK(clef_json_get(v, "missing") == NULL, "get: absent key");
    CHECK(clef_json_get(v, "a") == NULL, "get does not descend");
    CHECK(clef_json_get(clef_json_get(v, "q"), "a") != NULL, "get on a nested object");
    CHECK(clef_json_get(clef_json_get(v, "model"), "x") == NULL, "get on a string: NULL");
    CHECK(clef_json_get(NULL, "x") == NULL, "get on NULL: NULL");
    v = PARSE(&a, "{\"a\\u0000b\":1}");
    CHECK(clef_json_get(v, "a") == NULL, "get compares whole keys");

    clef_arena_free(&a);
}


static void
check_truthy_types(void)
{
    static const struct { const char *text; int truthy; const char *type; } cases[] = {
        { "null", 0, "null" }, { "false", 0, "bool" }, { "true", 1, "bool" },
        { "0", 0, "int" }, { "-0", 0, "int" }, { "1", 1, "int" }, { "-1", 1, "int" },
        { "0.0", 0, "float" }, { "-0.0", 0, "float" }, { "0e5", 0, "float" },
        { "1e-400", 0, "float" }, { "0.5", 1, "float" }, { "\"\"", 0, "string" },
        { "\"0\"", 1, "string" }, { "\"\\u0000\"", 1, "string" }, { "[]", 0, "list" },
        { "[0]", 1, "list" }, { "{}", 0, "dict" }, { "{\"a\":0}", 1, "dict" },
        { "100", 1, "int" }, { "10", 1, "int" },
    };
    clef_arena        a;
    const clef_json  *v;
    size_t            i;

    clef_arena_init(&a, 0);
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        v = parse(&a, cases[i].text, strlen(cases[i].text));
        CHECK_INT(clef_json_truthy(v), cases[i].truthy, "truthy(%s)", cases[i].text);
        CHECK_STR(clef_json_type_name(v), cases[i].type, "type_name(%s)", cases[i].text);
    }
    clef_arena_free(&a);
}


int
main(void)
{
    (void) check_fixtures;               /* check.h helpers this test needs not */
    check_refusals();
    check_limits();
    check_duplicates_big();
    check_duplicates_colliding();
    check_long_key();
    check_accepted();
    check_truthy_types();
    return check_done();
}
