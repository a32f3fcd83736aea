/*
 * clef_json_parse on arbitrary bytes; when it accepts, the round trip
 *     t1 = render(parse(x)),  t2 = render(parse(t1))
 * must parse and give t1 == t2 (json.dumps is a fixed point of itself).
 * Every float must come back from its repr as the same double.  A refusal
 * must be a complete error.
 */
#include <stdint.h>

#include "fuzz_common.h"

static void
render_or_fail(clef_buf *out, const clef_json *v)
{
    if (clef_render_json(out, v) != 0 || out->data == NULL) {
        fuzz_fail("render failed");
    }
}

/* strtod(repr(d)) == d, bit for bit, for every float in the tree */
static void
check_floats(const clef_json *v)
{
    clef_buf  b = { 0 };
    double    back;
    size_t    i;

    if (v->type == CLEF_JSON_FLOAT) {
        if (clef_render_float(&b, v->num) != 0 || b.data == NULL) {
            fuzz_fail("render_float failed");
        }
        back = strtod(b.data, NULL);
        if (memcmp(&back, &v->num, sizeof(double)) != 0) {
            fuzz_fail("repr %s of %.17g does not round-trip", b.data, v->num);
        }
        clef_buf_free(&b);
    }
    if (v->type == CLEF_JSON_ARRAY || v->type == CLEF_JSON_OBJECT) {
        for (i = 0; i < v->len; i++) {
            check_floats(v->items[i]);
        }
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    clef_arena        a;
    clef_error        err;
    const clef_json  *v, *w;
    clef_buf          t1 = { 0 }, t2 = { 0 }, plain = { 0 };

    clef_arena_init(&a, 4096);
    v = clef_json_parse(&a, (const char *) data, size, &err);
    if (v == NULL) {
        fuzz_check_error(&err);
        clef_arena_free(&a);
        return 0;
    }

    check_floats(v);
    render_or_fail(&t1, v);
    /* render() differs from render_json() only on a top-level string */
    if (clef_render(&plain, v) != 0) {
        fuzz_fail("render failed");
    }
    if (v->type != CLEF_JSON_STRING
        && (plain.len != t1.len || memcmp(plain.data, t1.data, t1.len) != 0))
    {
        fuzz_fail("render and render_json differ");
    }

    w = clef_json_parse(&a, t1.data, t1.len, &err);
    if (w == NULL) {
        fuzz_fail("render output refused (%s): %.*s", err.message,
                  (int) (t1.len > 2000 ? 2000 : t1.len), t1.data);
    }
    render_or_fail(&t2, w);
    if (t1.len != t2.len || memcmp(t1.data, t2.data, t1.len) != 0) {
        fuzz_fail("round trip differs:\n  %.*s\n  %.*s",
                  (int) (t1.len > 1000 ? 1000 : t1.len), t1.data,
                  (int) (t2.len > 1000 ? 1000 : t2.len), t2.data);
    }

    clef_buf_free(&t1);
    clef_buf_free(&t2);
    clef_buf_free(&plain);
    clef_arena_free(&a);
    return 0;
}
