/*
 * The Unicode the tokenizer needs: UTF-8 checks and repair, the White_Space
 * property, NFC (libutf8proc) and GPT-2's byte -> character map.
 */
#include "text/tokenizer_impl.h"

#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "base/grow.h"
#include "base/mem.h"

/* Length of the well-formed sequence at s[0..n), or 0 when ill-formed;
 * *bad then tells how many bytes its maximal subpart spans (>= 1). */
static size_t
utf8_seq(const unsigned char *s, size_t n, size_t *bad)
{
    unsigned  b = s[0], lo = 0x80, hi = 0xbf;
    size_t    need, i;

    if (b < 0x80) {
        return 1;
    }
    if (b >= 0xc2 && b <= 0xdf) {
        need = 1;
    } else if (b >= 0xe0 && b <= 0xef) {
        need = 2;
        if (b == 0xe0) {
            lo = 0xa0;
        } else if (b == 0xed) {
            hi = 0x9f;              /* no surrogates */
        }
    } else if (b >= 0xf0 && b <= 0xf4) {
        need = 3;
        if (b == 0xf0) {
            lo = 0x90;
        } else if (b == 0xf4) {
            hi = 0x8f;              /* nothing above U+10FFFF */
        }
    } else {
        *bad = 1;
        return 0;
    }
    for (i = 1; i <= need; i++) {
        if (i >= n || s[i] < lo || s[i] > hi) {
            *bad = i;
            return 0;
        }
        lo = 0x80;
        hi = 0xbf;
    }
    return need + 1;
}

size_t
tk_utf8_valid_prefix(const char *s, size_t n)
{
    const unsigned char  *p = (const unsigned char *) s;
    size_t                i = 0, k, bad;

    while (i < n) {
        if (p[i] < 0x80) {
            i++;
            continue;
        }
        k = utf8_seq(p + i, n - i, &bad);
        if (k == 0) {
            break;
        }
        i += k;
    }
    return i;
}

int
tk_utf8_repair(const char *s, size_t n, clef_buf *out)
{
    const unsigned char  *p = (const unsigned char *) s;
    size_t                i = 0, k, bad;

    while (i < n) {
        k = utf8_seq(p + i, n - i, &bad);
        if (k > 0) {
            if (clef_buf_append(out, s + i, k) != 0) {
                return -1;
            }
            i += k;
        } else {
            if (clef_buf_append(out, "\xef\xbf\xbd", 3) != 0) {
                return -1;
            }
            i += bad;
        }
    }
    return 0;
}

uint32_t
tk_utf8_decode(const char *s, size_t n, size_t *len)
{
    const unsigned char  *p = (const unsigned char *) s;

    if (p[0] < 0x80 || n < 2) {
        *len = 1;
        return p[0];
    }
    if (p[0] < 0xe0) {
        *len = 2;
        return ((uint32_t) (p[0] & 0x1f) << 6) | (p[1] & 0x3f);
    }
    if (p[0] < 0xf0 || n < 4) {
        *len = 3;
        return ((uint32_t) (p[0] & 0x0f) << 12) | ((uint32_t) (p[1] & 0x3f) << 6)
               | (p[2] & 0x3f);
    }
    *len = 4;
    return ((uint32_t) (p[0] & 0x07) << 18) | ((uint32_t) (p[1] & 0x3f) << 12)
           | ((uint32_t) (p[2] & 0x3f) << 6) | (p[3] & 0x3f);
}

size_t
tk_utf8_last(const char *s, size_t n)
{
    size_t  i = n - 1;

    while (i > 0 && ((unsigned char) s[i] & 0xc0) == 0x80) {
        i--;
    }
    return i;
}

int
tk_is_white_space(uint32_t cp)
{
    /* PropList.txt White_Space, unchanged since Unicode 6.3. */
    if (cp <= 0x20) {
        return cp == 0x20 || (cp >= 0x09 && cp <= 0x0d);
    }
    if (cp < 0x85) {
        return 0;
    }
    return cp == 0x85 || cp == 0xa0 || cp == 0x1680
           || (cp >= 0x2000 && cp <= 0x200a)
           || cp == 0x2028 || cp == 0x2029 || cp == 0x202f || cp == 0x205f
           || cp == 0x3000;
}

/*
 * HF's normalizer (the unicode-normalization-alignments crate) has the
 * Unicode 9.0 tables.  Two differences from utf8proc's newer ones show:
 *  - the combining marks that got a combining class after 9.0 (below, up
 *    to Unicode 15.0, utf8proc 2.8's version) are starters for HF: nothing
 *    is reordered across them and nothing before them composes with what
 *    follows;
 *  - the one canonical composition added since, DIVES AKURU VOWEL SIGN O
 *    (Unicode 13: U+11935 U+11930 -> U+11938), is not made.
 * Both are reproduced; t/fixtures/tokenizer/unicode.json probes every mark.
 */
static const uint32_t  marks_after_9[][2] = {
    { 0x07fd, 0x07fd }, { 0x0898, 0x089f }, { 0x08ca, 0x08d3 },
    { 0x09fe, 0x09fe }, { 0x0c3c, 0x0c3c }, { 0x0d3b, 0x0d3c },
    { 0x0eba, 0x0eba }, { 0x1715, 0x1715 }, { 0x1abf, 0x1ace },
    { 0x1df6, 0x1dfa }, { 0xa82c, 0xa82c }, { 0x10d24, 0x10d27 },
    { 0x10eab, 0x10eac }, { 0x10efd, 0x10eff }, { 0x10f46, 0x10f50 },
    { 0x10f82, 0x10f85 }, { 0x11070, 0x11070 }, { 0x1133b, 0x1133b },
    { 0x1145e, 0x1145e }, { 0x11839, 0x1183a }, { 0x1193d, 0x1193e },
    { 0x11943, 0x11943 }, { 0x119e0, 0x119e0 }, { 0x11a34, 0x11a34 },
    { 0x11a47, 0x11a47 }, { 0x11a99, 0x11a99 }, { 0x11d42, 0x11d42 },
    { 0x11d44, 0x11d45 }, { 0x11d97, 0x11d97 }, { 0x11f41, 0x11f42 },
    { 0x16ff0, 0x16ff1 }, { 0x1e08f, 0x1e08f }, { 0x1e130, 0x1e136 },
    { 0x1e2ae, 0x1e2ae }, { 0x1e2ec, 0x1e2ef }, { 0x1e4ec, 0x1e4ef },
};

static int
mark_after_9(int32_t cp)
{
    size_t  lo = 0, hi = sizeof(marks_after_9) / sizeof(marks_after_9[0]), mid;

    if (cp < 0x07fd) {
        return 0;
    }
    while (lo < hi) {
        mid = (lo + hi) / 2;
        if ((uint32_t) cp < marks_after_9[mid][0]) {
            hi = mid;
        } else if ((uint32_t) cp > marks_after_9[mid][1]) {
            lo = mid + 1;
        } else {
            return 1;
        }
    }
    return 0;
}

/* The canonical combining class as HF's Unicode 9.0 tables have it. */
static unsigned
ccc(int32_t cp)
{
    unsigned  c = (unsigned) utf8proc_get_property(cp)->combining_class;

    return c != 0 && mark_after_9(cp) ? 0 : c;
}

/* Stable sort of a run of non-starters by combining class: insertion for
 * short runs, bottom-up merges (through tmp) for long ones. */
static void
order_run(int32_t *v, size_t n, int32_t *tmp)
{
    size_t    i, j, w, lo, mid, hi, a, b, k;
    int32_t   x, *src = v, *dst = tmp, *t;

    if (n <= 32) {
        for (i = 1; i < n; i++) {
            x = v[i];
            for (j = i; j > 0 && ccc(v[j - 1]) > ccc(x); j--) {
                v[j] = v[j - 1];
            }
            v[j] = x;
        }
        return;
    }
    for (w = 1; w < n; w *= 2) {
        for (lo = 0; lo < n; lo += 2 * w) {
            mid = lo + w < n ? lo + w : n;
            hi = lo + 2 * w < n ? lo + 2 * w : n;
            for (a = lo, b = mid, k = lo; k < hi; k++) {
                if (a < mid && (b >= hi || ccc(src[a]) <= ccc(src[b]))) {
                    dst[k] = src[a++];
                } else {
                    dst[k] = src[b++];
                }
            }
        }
        t = src;
        src = dst;
        dst = t;
    }
    if (src != v) {
        memcpy(v, src, n * sizeof(*v));
    }
}

/*
 * NFC of one chunk that starts with a starter and holds no other ASCII:
 * utf8proc decomposes each character and composes, but the canonical
 * ordering is ours, since utf8proc's swaps take quadratic time on a long
 * run of alternating combining marks.
 */
static int
nfc_chunk(const char *s, size_t n, clef_buf *out, tk_nfc_scratch *sc)
{
    const utf8proc_option_t  opt = UTF8PROC_STABLE | UTF8PROC_COMPOSE;
    utf8proc_ssize_t         r;
    size_t                   i, j, w, len, m = 0, run;
    int                      boundclass = 0;
    uint32_t                 cp;

    for (i = 0; i < n; i += len) {
        cp = tk_utf8_decode(s + i, n - i, &len);
        /* a canonical decomposition is at most 4 code points long */
        if (clef_grow((void **) &sc->v, &sc->cap, m + 8, sizeof(*sc->v)) != 0) {
            return -1;
        }
        r = utf8proc_decompose_char((utf8proc_int32_t) cp, sc->v + m, 8, opt,
                                    &boundclass);
        if (r < 0 || r > 8) {
            return -1;
        }
        m += (size_t) r;
    }
    for (i = 0; i < m; i += run ? run : 1) {
        for (run = 0; i + run < m && ccc(sc->v[i + run]) != 0; run++) {
            /* void */
        }
        if (run > 1) {
            if (run > 32 && clef_grow((void **) &sc->tmp, &sc->tmp_cap, run,
                                     sizeof(*sc->tmp)) != 0) {
                return -1;
            }
            order_run(sc->v + i, run, sc->tmp);
        }
    }
    /* Composes each stretch between HF's extra starters on its own. */
    for (i = 0, w = 0; i < m; i = j) {
        for (j = i + 1; j < m && !mark_after_9(sc->v[j]); j++) {
            /* void */
        }
        r = utf8proc_normalize_utf32(sc->v + i, (utf8proc_ssize_t) (j - i), opt);
        if (r < 0) {
            return -1;
        }
        memmove(sc->v + w, sc->v + i, (size_t) r * sizeof(*sc->v));
        w += (size_t) r;
    }
    /* Writes UTF-8 over the code points (4 bytes each suffice); without
     * UTF8PROC_COMPOSE it composes nothing more. */
    r = utf8proc_reencode(sc->v, (utf8proc_ssize_t) w, UTF8PROC_STABLE);
    if (r < 0) {
        return -1;
    }
    return clef_buf_append(out, sc->v, (size_t) r);
}

/* U+11935 U+11930, which HF does not compose (see ccc() above): U+11930 is
 * a starter, so cutting the chunk before it keeps the pair apart and
 * changes nothing else. */
static const char  dives_akuru_pair[] = "\xf0\x91\xa4\xb5\xf0\x91\xa4\xb0";

/*
 * 1 when NFC leaves the run s[0..n) (valid UTF-8) as it is, whatever
 * starter precedes it: every code point is a starter without a canonical
 * decomposition that never composes with what precedes it (utf8proc marks
 * such second halves with comb_index >= 0x8000; Hangul V and T jamo compose
 * by rule).  CJK and most other scripts pass; the rest goes to utf8proc.
 */
static int
nfc_stable(const char *s, size_t n)
{
    const utf8proc_property_t  *pr;
    size_t                      i, len;
    uint32_t                    cp;

    for (i = 0; i < n; i += len) {
        cp = tk_utf8_decode(s + i, n - i, &len);
        if ((cp >= 0x1161 && cp <= 0x1175) || (cp >= 0x11a8 && cp <= 0x11c2)) {
            return 0;
        }
        pr = utf8proc_get_property((utf8proc_int32_t) cp);
        if (pr->combining_class != 0
            || (pr->decomp_seqindex != UINT16_MAX && pr->decomp_type == 0)
            || (pr->comb_index != UINT16_MAX && pr->comb_index >= 0x8000))
        {
            return 0;
        }
    }
    return 1;
}

int
tk_nfc_append(const char *s, size_t n, clef_buf *out, tk_nfc_scratch *sc)
{
    const unsigned char  *p = (const unsigned char *) s;
    const char           *q;
    size_t                i = 0, j, a, k, cut;

    /*
     * An ASCII character is a starter that never composes with what
     * precedes it, so NFC works chunk by chunk, each chunk starting at an
     * ASCII character: ASCII runs are copied and only the non-ASCII runs,
     * with the ASCII character before them, go through utf8proc.
     */
    while (i < n) {
        for (j = i; j < n && p[j] < 0x80; j++) {
            /* void */
        }
        if (j == n) {
            return clef_buf_append(out, s + i, n - i);
        }
        a = j > i ? j - 1 : j;
        if (a > i && clef_buf_append(out, s + i, a - i) != 0) {
            return -1;
        }
        for (k = j; k < n && p[k] >= 0x80; k++) {
            /* void */
        }
        if (nfc_stable(s + j, k - j)) {
            if (clef_buf_append(out, s + a, k - a) != 0) {
                return -1;
            }
            i = k;
            continue;
        }
        while ((q = memmem(s + a, k - a, dives_akuru_pair, 8)) != NULL) {
            cut = (size_t) (q - s) + 4;
            if (nfc_chunk(s + a, cut - a, out, sc) != 0) {
                return -1;
            }
            a = cut;
        }
        if (nfc_chunk(s + a, k - a, out, sc) != 0) {
            return -1;
        }
        i = k;
    }
    return 0;
}

void
tk_nfc_scratch_free(tk_nfc_scratch *sc)
{
    clef_mem_free(sc->v);
    clef_mem_free(sc->tmp);
    memset(sc, 0, sizeof(*sc));
}

size_t
tk_byte_char(unsigned b, char out[4])
{
    uint32_t  cp;

    /* GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for
     * themselves, the others take U+0100.. in byte order. */
    if ((b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae) {
        cp = b;
    } else if (b <= 0x20) {
        cp = 0x100 + b;
    } else if (b <= 0xa0) {
        cp = 0x100 + 0x21 + (b - 0x7f);
    } else {
        cp = 0x100 + 0x21 + 0x22;           /* 0xad */
    }
    if (cp < 0x80) {
        out[0] = (char) cp;
        return 1;
    }
    out[0] = (char) (0xc0 | (cp >> 6));
    out[1] = (char) (0x80 | (cp & 0x3f));
    return 2;
}
