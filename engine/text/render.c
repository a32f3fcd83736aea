/*
 * json.dumps(v, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
 * for the trees of json.h (floats: pyfloat.c).
 *
 * Keys are sorted by code point.  Python compares str by code point, and
 * for valid UTF-8 (all the parser hands out) byte order is code point
 * order, so memcmp with "shorter prefix first" is exact, NULs included.
 */
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "text/render.h"

#define RENDER_STACK_KEYS  32          /* objects up to this size sort on the stack */

/* What json.dumps writes for a byte: 0 keeps it, else the escape's letter
 * ('u' for \u00xx). */
static const char  render_escape[256] = {
    'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'b', 't', 'n', 'u', 'f', 'r', 'u', 'u',
    'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u',
    0,   0,   '"', 0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,
    0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,
    0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,
    0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   '\\', 0,  0,   0,
};


int
clef_render_string(clef_buf *out, const char *s, size_t len)
{
    static const char     hex[] = "0123456789abcdef";
    const unsigned char  *p = (const unsigned char *) s, *e = p + len, *run;
    char                  esc[6];
    char                  c;

    if (clef_buf_reserve(out, len + 2) != 0 || clef_buf_putc(out, '"') != 0) {
        return -1;
    }

    while (p < e) {
        run = p;
        while (p < e && render_escape[*p] == 0) {
            p++;
        }
        if (p > run && clef_buf_append(out, run, (size_t) (p - run)) != 0) {
            return -1;
        }
        if (p == e) {
            break;
        }

        c = render_escape[*p];
        esc[0] = '\\';
        if (c == 'u') {
            esc[1] = 'u';
            esc[2] = '0';
            esc[3] = '0';
            esc[4] = hex[*p >> 4];
            esc[5] = hex[*p & 0xf];
            if (clef_buf_append(out, esc, 6) != 0) {
                return -1;
            }
        } else {
            esc[1] = c;
            if (clef_buf_append(out, esc, 2) != 0) {
                return -1;
            }
        }
        p++;
    }

    return clef_buf_putc(out, '"');
}


static int
render_key_cmp(const void *x, const void *y)
{
    const clef_str  *a = *(const clef_str * const *) x;
    const clef_str  *b = *(const clef_str * const *) y;
    size_t           n = a->len < b->len ? a->len : b->len;
    int              r = n ? memcmp(a->s, b->s, n) : 0;

    if (r != 0) {
        return r;
    }
    if (a->len != b->len) {
        return a->len < b->len ? -1 : 1;
    }
    return a < b ? -1 : a > b;          /* equal keys (not from the parser): input order */
}


static int render_value(clef_buf *out, const clef_json *v);


static int
render_object(clef_buf *out, const clef_json *v)
{
    const clef_str  *stack[RENDER_STACK_KEYS], **order, *k;
    size_t           i, j, n = v->len;
    int              rc = 0;

    order = n <= RENDER_STACK_KEYS ? stack
                                   : clef_mem_alloc(n * sizeof(*order));
    if (order == NULL) {
        return -1;
    }
    for (i = 0; i < n; i++) {
        order[i] = &v->keys[i];
    }

    if (n <= RENDER_STACK_KEYS) {
        /* insertion sort: small objects are the common case */
        for (i = 1; i < n; i++) {
            k = order[i];
            for (j = i; j > 0 && render_key_cmp(&order[j - 1], &k) > 0; j--) {
                order[j] = order[j - 1];
            }
            order[j] = k;
        }
    } else {
        qsort(order, n, sizeof(*order), render_key_cmp);
    }

    rc = clef_buf_putc(out, '{');
    for (i = 0; rc == 0 && i < n; i++) {
        k = order[i];
        if (i > 0) {
            rc = clef_buf_putc(out, ',');
        }
        if (rc == 0) {
            rc = clef_render_string(out, k->s, k->len);
        }
        if (rc == 0) {
            rc = clef_buf_putc(out, ':');
        }
        if (rc == 0) {
            rc = render_value(out, v->items[k - v->keys]);
        }
    }
    if (rc == 0) {
        rc = clef_buf_putc(out, '}');
    }

    if (order != stack) {
        clef_mem_free(order);
    }
    return rc;
}


static int
render_value(clef_buf *out, const clef_json *v)
{
    size_t  i;

    switch (v->type) {
    case CLEF_JSON_NULL:
        return clef_buf_append(out, "null", 4);
    case CLEF_JSON_FALSE:
        return clef_buf_append(out, "false", 5);
    case CLEF_JSON_TRUE:
        return clef_buf_append(out, "true", 4);
    case CLEF_JSON_INT:
        return clef_buf_append(out, v->str, v->len);
    case CLEF_JSON_FLOAT:
        return clef_render_float(out, v->num);
    case CLEF_JSON_STRING:
        return clef_render_string(out, v->str, v->len);
    case CLEF_JSON_ARRAY:
        if (clef_buf_putc(out, '[') != 0) {
            return -1;
        }
        for (i = 0; i < v->len; i++) {
            if ((i > 0 && clef_buf_putc(out, ',') != 0)
                || render_value(out, v->items[i]) != 0)
            {
                return -1;
            }
        }
        return clef_buf_putc(out, ']');
    case CLEF_JSON_OBJECT:
        return render_object(out, v);
    }
    return -1;
}


int
clef_render(clef_buf *out, const clef_json *v)
{
    if (v->type == CLEF_JSON_STRING) {
        return clef_buf_append(out, v->str, v->len);   /* render() returns str as is */
    }
    return render_value(out, v);
}


int
clef_render_json(clef_buf *out, const clef_json *v)
{
    return render_value(out, v);
}
