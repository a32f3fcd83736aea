/*
 * The renderer against Python: every fixture of t/fixtures/render (written by
 * t/reference/gen_render_fixtures.py) byte for byte, plus the escaping and
 * sorting rules on hand-made values.
 */
#include <jansson.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "text/json.h"
#include "text/render.h"

typedef struct {
    size_t  count;
    size_t  bad;
} tally;


/* Prints a byte string readably for a diagnostic line. */
static void
show(const char *label, const char *s, size_t n)
{
    size_t  i;

    printf("#   %-5s '", label);
    for (i = 0; i < n && i < 2000; i++) {
        unsigned char c = (unsigned char) s[i];
        if (c < 0x20 || c == 0x7f) {
            printf("<%02x>", c);
        } else {
            putchar(c);
        }
    }
    printf("'%s\n", n > 2000 ? " (cut)" : "");
}


static json_t *
read_line(const char *line, size_t n)
{
    json_error_t  jerr;
    json_t       *row = json_loadb(line, n, JSON_ALLOW_NUL, &jerr);

    if (row == NULL) {
        printf("# fixture line unreadable: %s\n", jerr.text);
    }
    return row;
}


static FILE *
open_fixture(const char *name)
{
    char   path[1024];
    FILE  *f;

    snprintf(path, sizeof(path), "%s/render/%s", check_fixtures(), name);
    f = fopen(path, "r");
    CHECK(f != NULL, "fixture %s opens", path);
    return f;
}


static void
check_docs(void)
{
    FILE        *f = open_fixture("docs.jsonl");
    char        *line = NULL;
    size_t       cap = 0, in_len, want_len;
    ssize_t      n;
    tally        t = { 0, 0 };
    json_t      *row;
    const char  *in, *want, *name;
    clef_arena   arena;
    clef_error   err;
    clef_buf     out = { 0 };
    clef_json   *v;

    if (f == NULL) {
        return;
    }

    while ((n = getline(&line, &cap, f)) > 0) {
        row = read_line(line, (size_t) n);
        if (row == NULL) {
            t.bad++;
            continue;
        }
        name = json_string_value(json_object_get(row, "name"));
        in = json_string_value(json_object_get(row, "in"));
        in_len = json_string_length(json_object_get(row, "in"));
        want = json_string_value(json_object_get(row, "out"));
        want_len = json_string_length(json_object_get(row, "out"));
        t.count++;

        clef_arena_init(&arena, 0);
        clef_error_clear(&err);
        out.len = 0;
        v = clef_json_parse(&arena, in, in_len, &err);
        if (v == NULL || clef_render(&out, v) != 0
            || out.len != want_len || memcmp(out.data, want, want_len) != 0)
        {
            if (t.bad++ == 0) {
                printf("# first mismatch: %s\n", name ? name : "?");
                show("input", in, in_len);
                if (v == NULL) {
                    printf("#   refused: %s\n", err.message);
                } else {
                    show("got", out.data, out.len);
                }
                show("want", want, want_len);
            }
        }
        clef_arena_free(&arena);
        json_decref(row);
    }

    free(line);
    clef_buf_free(&out);
    fclose(f);

    CHECK(t.count >= 300, "docs fixture has %zu documents", t.count);
    CHECK_INT(t.bad, 0, "render(json.loads(text)) byte-identical for %zu documents",
              t.count);
}


static void
check_floats(void)
{
    FILE        *f = open_fixture("floats.jsonl");
    char        *line = NULL, text[64];
    size_t       cap = 0, reread_bad = 0;
    ssize_t      n;
    tally        t = { 0, 0 };
    json_t      *row;
    const char  *want;
    uint64_t     bits, back;
    double       d;
    clef_arena   arena;
    clef_error   err;
    clef_buf     out = { 0 };
    clef_json   *v;

    if (f == NULL) {
        return;
    }

    while ((n = getline(&line, &cap, f)) > 0) {
        row = read_line(line, (size_t) n);
        if (row == NULL) {
            t.bad++;
            continue;
        }
        bits = strtoull(json_string_value(json_object_get(row, "bits")), NULL, 16);
        want = json_string_value(json_object_get(row, "repr"));
        memcpy(&d, &bits, sizeof(d));
        t.count++;

        out.len = 0;
        if (clef_render_float(&out, d) != 0 || strcmp(out.data, want) != 0) {
            if (t.bad++ == 0) {
                printf("# first mismatch: bits %016" PRIx64 "\n", bits);
                printf("#   got  '%s'\n#   want '%s'\n", out.data ? out.data : "", want);
            }
        }

        /* and the parser reads repr back to the same double, as a float */
        snprintf(text, sizeof(text), "%s", want);
        clef_arena_init(&arena, 0);
        v = clef_json_parse(&arena, text, strlen(text), &err);
        if (v != NULL && v->type == CLEF_JSON_FLOAT) {
            memcpy(&back, &v->num, sizeof(back));
        }
        if (v == NULL || v->type != CLEF_JSON_FLOAT || back != bits) {
            if (reread_bad++ == 0) {
                printf("# first bad re-read: '%s'\n", text);
            }
        }
        clef_arena_free(&arena);
        json_decref(row);
    }

    free(line);
    clef_buf_free(&out);
    fclose(f);

    CHECK(t.count >= 2000, "floats fixture has %zu doubles", t.count);
    CHECK_INT(t.bad, 0, "clef_render_float == repr for %zu doubles", t.count);
    CHECK_INT(reread_bad, 0, "parsing repr gives back the same bits");
}


/* Parses text and renders it (json: 1 for clef_render_json). */
static void
check_render(const char *text, size_t len, int json, const char *want, size_t want_len,
    const char *what)
{
    clef_arena   arena;
    clef_error   err;
    clef_buf     out = { 0 };
    clef_json   *v;
    int          ok;

    clef_arena_init(&arena, 0);
    v = clef_json_parse(&arena, text, len, &err);
    ok = v != NULL
         && (json ? clef_render_json(&out, v) : clef_render(&out, v)) == 0
         && out.len == want_len && memcmp(out.data, want, want_len) == 0;
    CHECK(ok, "%s", what);
    if (!ok) {
        show("input", text, len);
        if (v == NULL) {
            printf("#   refused: %s\n", err.message);
        } else {
            show("got", out.data, out.len);
        }
        show("want", want, want_len);
    }
    clef_buf_free(&out);
    clef_arena_free(&arena);
}

#define RENDER(text, want, what) \
    check_render(text, sizeof(text) - 1, 0, want, sizeof(want) - 1, what)
#define RENDER_JSON(text, want, what) \
    check_render(text, sizeof(text) - 1, 1, want, sizeof(want) - 1, what)


static void
check_escapes(void)
{
    clef_buf  out = { 0 };
    char      all[128], want[1024], *w = want;
    int       c;

    /* every ASCII byte: only '"', '\\' and < 0x20 are escaped */
    for (c = 0; c < 128; c++) {
        all[c] = (char) c;
    }
    *w++ = '"';
    for (c = 0; c < 128; c++) {
        switch (c) {
        case '"':  w += sprintf(w, "\\\""); break;
        case '\\': w += sprintf(w, "\\\\"); break;
        case '\b': w += sprintf(w, "\\b"); break;
        case '\f': w += sprintf(w, "\\f"); break;
        case '\n': w += sprintf(w, "\\n"); break;
        case '\r': w += sprintf(w, "\\r"); break;
        case '\t': w += sprintf(w, "\\t"); break;
        default:
            if (c < 0x20) {
                w += sprintf(w, "\\u%04x", c);
            } else {
                *w++ = (char) c;
            }
        }
    }
    *w++ = '"';
    CHECK(clef_render_string(&out, all, 128) == 0
          && out.len == (size_t) (w - want) && memcmp(out.data, want, out.len) == 0,
          "clef_render_string escapes exactly '\"', '\\\\' and bytes < 0x20");
    out.len = 0;
    CHECK(clef_render_string(&out, "\x1f\x1b", 2) == 0
          && strcmp(out.data, "\"\\u001f\\u001b\"") == 0, "\\u00xx in lowercase hex");
    out.len = 0;
    CHECK(clef_render_string(&out, "\xe2\x80\xa8\xc3\xa9\xf0\x9f\x98\x80\x7f", 10) == 0
          && strcmp(out.data, "\"\xe2\x80\xa8\xc3\xa9\xf0\x9f\x98\x80\x7f\"") == 0,
          "U+2028, non-ASCII and DEL written raw");
    clef_buf_free(&out);
}


static void
check_float_layout(void)
{
    static const struct { double d; const char *want; } cases[] = {
        { 1e5, "100000.0" }, { 1e-7, "1e-07" }, { 1e16, "1e+16" },
        { -0.0, "-0.0" }, { 0.0, "0.0" }, { 0.1, "0.1" }, { 1e-4, "0.0001" },
        { 1e-5, "1e-05" }, { 9999999999999998.0, "9999999999999998.0" },
        { 1e22, "1e+22" }, { 1e23, "1e+23" }, { 123456789012345680.0, "1.2345678901234568e+17" },
        { 5e-324, "5e-324" }, { 1.7976931348623157e308, "1.7976931348623157e+308" },
        { 2.5e-7, "2.5e-07" }, { 1.5, "1.5" }, { -2.0, "-2.0" }, { 1e100, "1e+100" },
        { 123.456, "123.456" }, { 0.3, "0.3" }, { 2.0 / 3.0, "0.6666666666666666" },
        { 7.120236347223045e-307, "7.120236347223045e-307" },
    };
    clef_buf  out = { 0 };
    size_t    i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        out.len = 0;
        CHECK(clef_render_float(&out, cases[i].d) == 0, "render_float %s", cases[i].want);
        CHECK_STR(out.data, cases[i].want, "repr is %s", cases[i].want);
    }
    out.len = 0;
    clef_render_float(&out, NAN);
    clef_render_float(&out, INFINITY);
    clef_render_float(&out, -INFINITY);
    CHECK_STR(out.data, "NaNInfinity-Infinity", "non-finite as json.dumps writes them");
    clef_buf_free(&out);
}


static void
check_values(void)
{
    clef_buf   in = { 0 }, want = { 0 };
    int        i;

    RENDER("\"a\\u0000b\\n\"", "a\0b\n", "a top-level string is not quoted, NUL kept");
    RENDER_JSON("\"a\\u0000b\\n\"", "\"a\\u0000b\\n\"", "clef_render_json quotes it");
    RENDER("\"\"", "", "empty top-level string renders empty");
    RENDER_JSON("[\"x\"]", "[\"x\"]", "nested strings are quoted either way");
    RENDER("[\"x\",{\"k\":\"v\"}]", "[\"x\",{\"k\":\"v\"}]", "nested strings quoted");
    RENDER("{\"b\":1,\"a\":{\"d\":[],\"c\":{}}}", "{\"a\":{\"c\":{},\"d\":[]},\"b\":1}",
           "keys sorted at every level");
    RENDER("{\"a\":1,\"a\\u0000\":2,\"\\u0000\":3,\"\":4}",
           "{\"\":4,\"\\u0000\":3,\"a\":1,\"a\\u0000\":2}",
           "NUL sorts first, a prefix before its extensions");
    RENDER("{\"\\uffff\":1,\"\\ud83d\\ude00\":2,\"\\u00e9\":3}",
           "{\"\xc3\xa9\":3,\"\xef\xbf\xbf\":1,\"\xf0\x9f\x98\x80\":2}",
           "sorted by code point (astral after U+FFFF)");
    RENDER("[-0,-0.0,1,1.0,1E5,1e+05,100000,123456789012345678901234567890]",
           "[0,-0.0,1,1.0,100000.0,100000.0,100000,123456789012345678901234567890]",
           "ints exact, floats as repr");
    RENDER(" [ true ,false,null ] ", "[true,false,null]", "literals, whitespace dropped");

    /* an object too big to sort on the stack: keys given in reverse */
    clef_buf_putc(&in, '{');
    clef_buf_putc(&want, '{');
    for (i = 0; i < 200; i++) {
        clef_buf_printf(&in, "%s\"k%03d\":%d", i ? "," : "", 199 - i, 199 - i);
        clef_buf_printf(&want, "%s\"k%03d\":%d", i ? "," : "", i, i);
    }
    clef_buf_putc(&in, '}');
    clef_buf_putc(&want, '}');
    check_render(in.data, in.len, 0, want.data, want.len, "200 keys sorted");
    clef_buf_free(&in);
    clef_buf_free(&want);
}


/* build/clef render: the line protocol the fixture scripts use. */
static void
check_cli(void)
{
    static const char  input[] =
        "{\"b\":1,\"a\":\"x\\n\"}\n\"top\"\n[1,]\n\n1e5\r\n\"tab\\t\"";
    static const char  want_plain[] =
        "{\"a\":\"x\\n\",\"b\":1}\ntop\n"
        "{\"error\": {\"status\": 422, \"type\": \"json_invalid\", \"message\": "
        "\"invalid JSON at byte 3: expected a value\"}}\n"
        "{\"error\": {\"status\": 422, \"type\": \"json_invalid\", \"message\": "
        "\"invalid JSON at byte 0: unexpected end of input, expected a value\"}}\n"
        "100000.0\ntab\t\n";
    static const char  want_json[] =
        "{\"a\":\"x\\n\",\"b\":1}\n\"top\"\n"
        "{\"error\": {\"status\": 422, \"type\": \"json_invalid\", \"message\": "
        "\"invalid JSON at byte 3: expected a value\"}}\n"
        "{\"error\": {\"status\": 422, \"type\": \"json_invalid\", \"message\": "
        "\"invalid JSON at byte 0: unexpected end of input, expected a value\"}}\n"
        "100000.0\n\"tab\\t\"\n";
    const char  *bin = getenv("CLEF_BIN") ? getenv("CLEF_BIN") : "build/clef";
    char         cmd[1200], path[] = "/tmp/test_render_XXXXXX", got[4096];
    FILE        *f, *p;
    size_t       n;
    int          fd, i, status;

    if (access(bin, X_OK) != 0) {
        printf("# %s not built: CLI checks left out\n", bin);
        return;
    }
    fd = mkstemp(path);
    if (fd < 0 || (f = fdopen(fd, "w")) == NULL) {
        CHECK(0, "temporary input file");
        return;
    }
    fwrite(input, 1, sizeof(input) - 1, f);
    fclose(f);

    for (i = 0; i < 2; i++) {
        snprintf(cmd, sizeof(cmd), "%s render%s < %s", bin, i ? " --json" : "", path);
        p = popen(cmd, "r");
        n = p ? fread(got, 1, sizeof(got) - 1, p) : 0;
        got[n] = '\0';
        status = p ? pclose(p) : -1;
        CHECK_INT(status, 0, "clef render%s exits 0", i ? " --json" : "");
        if (i == 0) {
            CHECK_STR(got, want_plain, "clef render: render() per line, errors as JSON");
        } else {
            CHECK_STR(got, want_json, "clef render --json quotes top-level strings");
        }
    }
    unlink(path);

    snprintf(cmd, sizeof(cmd), "%s render --bogus </dev/null 2>/dev/null", bin);
    status = system(cmd);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 2, "bad usage exits 2");
    snprintf(cmd, sizeof(cmd), "%s render --help >/dev/null", bin);
    CHECK_INT(system(cmd), 0, "--help exits 0");
}


int
main(void)
{
    check_docs();
    check_floats();
    check_escapes();
    check_float_layout();
    check_values();
    check_cli();
    return check_done();
}
