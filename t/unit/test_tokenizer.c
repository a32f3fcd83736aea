/*
 * The byte-level BPE tokenizer against Hugging Face tokenizers: the ids of
 * every fixture text (t/reference/gen_tokenizer_fixtures.py), the Oniguruma
 * -> PCRE2 pattern translation, per-code-point character classes, NFC and
 * single_word's word characters, load errors, and concurrent encoding.
 *
 * Run from the repository root: the Qwen3 tokenizer is the repository's
 * copy in t/fixtures/tokenizer/qwen3.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <utf8proc.h>

#include "check.h"
#include "text/tokenizer.h"
#include "text/tokenizer_impl.h"

typedef struct {
    char      *text;
    size_t     len;
    int32_t   *ids;
    size_t     n_ids;
} tcase;

typedef struct {
    tcase   *v;
    size_t   n;
} tcases;

static void
path_join(char *out, size_t size, const char *a, const char *b)
{
    snprintf(out, size, "%s/%s", a, b);
}

/* Reads a JSON-lines file into an array of json_t objects. */
static json_t *
read_jsonl(const char *path)
{
    FILE          *f;
    char          *line = NULL;
    size_t         cap = 0;
    ssize_t        n;
    json_t        *arr, *o;
    json_error_t   jerr;

    f = fopen(path, "r");
    if (f == NULL) {
        return NULL;
    }
    arr = json_array();
    while ((n = getline(&line, &cap, f)) > 0) {
        o = json_loadb(line, (size_t) n, JSON_ALLOW_NUL, &jerr);
        if (o == NULL) {
            printf("# %s: %s\n", path, jerr.text);
            json_decref(arr);
            arr = NULL;
            break;
        }
        json_array_append_new(arr, o);
    }
    free(line);
    fclose(f);
    return arr;
}

static int
load_cases(const char *path, tcases *c)
{
    json_t  *arr, *o, *ids;
    size_t   i, k;

    arr = read_jsonl(path);
    if (arr == NULL) {
        return -1;
    }
    c->n = json_array_size(arr);
    c->v = calloc(c->n + 1, sizeof(tcase));
    json_array_foreach(arr, i, o) {
        c->v[i].len = json_string_length(json_object_get(o, "text"));
        c->v[i].text = malloc(c->v[i].len + 1);
        memcpy(c->v[i].text, json_string_value(json_object_get(o, "text")),
               c->v[i].len + 1);
        ids = json_object_get(o, "ids");
        c->v[i].n_ids = json_array_size(ids);
        c->v[i].ids = malloc((c->v[i].n_ids + 1) * sizeof(int32_t));
        for (k = 0; k < c->v[i].n_ids; k++) {
            c->v[i].ids[k] = (int32_t) json_integer_value(json_array_get(ids, k));
        }
    }
    json_decref(arr);
    return 0;
}

static void
free_cases(tcases *c)
{
    size_t  i;

    for (i = 0; i < c->n; i++) {
        free(c->v[i].text);
        free(c->v[i].ids);
    }
    free(c->v);
    c->v = NULL;
    c->n = 0;
}

static void
print_ids(const char *label, const int32_t *v, size_t n)
{
    size_t  i;

    printf("#   %s (%zu):", label, n);
    for (i = 0; i < n && i < 64; i++) {
        printf(" %d", v[i]);
    }
    printf("%s\n", n > 64 ? " ..." : "");
}

static int
same_ids(const clef_ids *got, const tcase *c)
{
    return got->n == c->n_ids
           && (c->n_ids == 0 || memcmp(got->v, c->ids, c->n_ids * sizeof(int32_t)) == 0);
}

/* Every case of one cases.jsonl: one TAP line, the first mismatch shown. */
static void
check_cases(const clef_tokenizer *tk, const char *name, const tcases *c)
{
    clef_ids  got = { 0 };
    size_t    i, bad = 0, first = 0;
    int       err = 0;

    for (i = 0; i < c->n; i++) {
        got.n = 0;
        if (clef_tokenizer_encode(tk, c->v[i].text, c->v[i].len, &got) != 0) {
            err = 1;
        }
        if (!same_ids(&got, &c->v[i])) {
            if (bad++ == 0) {
                first = i;
                printf("# first mismatch, case %zu: text \"", i);
                fwrite(c->v[i].text, 1, c->v[i].len > 300 ? 300 : c->v[i].len, stdout);
                printf("\"\n");
                print_ids("want", c->v[i].ids, c->v[i].n_ids);
                print_ids("got ", got.v, got.n);
            }
        }
    }
    CHECK(bad == 0 && !err && c->n > 0, "%s: %zu of %zu fixture cases give HF's ids",
          name, c->n - bad, c->n);
    if (bad) {
        printf("#   %zu mismatches, the first is case %zu\n", bad, first);
    }
    clef_ids_free(&got);
}

/* ---- concurrency ----------------------------------------------------- */

typedef struct {
    const clef_tokenizer  *tk;
    const tcases          *cases;
    size_t                 start;       /* each thread starts elsewhere */
    size_t                 bad;
} worker;

static void *
work(void *p)
{
    worker    *w = p;
    clef_ids   got = { 0 };
    size_t     i, k, round;

    for (round = 0; round < 2; round++) {
        for (k = 0; k < w->cases->n; k++) {
            i = (w->start + k * 7) % w->cases->n;
            got.n = 0;
            if (clef_tokenizer_encode(w->tk, w->cases->v[i].text, w->cases->v[i].len,
                                      &got) != 0
                || !same_ids(&got, &w->cases->v[i]))
            {
                w->bad++;
            }
        }
    }
    clef_ids_free(&got);
    return NULL;
}

static void
check_threads(const char *dir, const tcases *c)
{
    clef_tokenizer  *tk;
    clef_error       err;
    pthread_t        th[4];
    worker           w[4];
    size_t           i, bad = 0;
    int              started = 0;

    /* A fresh tokenizer: its word cache fills while the threads race. */
    tk = clef_tokenizer_load(dir, &err);
    if (tk == NULL) {
        CHECK(0, "threads: load %s: %s", dir, err.message);
        return;
    }
    for (i = 0; i < 4; i++) {
        w[i].tk = tk;
        w[i].cases = c;
        w[i].start = i * (c->n / 4);
        w[i].bad = 0;
        if (pthread_create(&th[i], NULL, work, &w[i]) == 0) {
            started++;
        }
    }
    for (i = 0; i < (size_t) started; i++) {
        pthread_join(th[i], NULL);
        bad += w[i].bad;
    }
    CHECK(started == 4 && bad == 0,
          "4 threads encoding %zu cases twice each concurrently: %zu mismatches",
          c->n, bad);
    clef_tokenizer_free(tk);
}

/* ---- regex translation ----------------------------------------------- */

typedef struct {
    json_t  *want;
    size_t   i;
    int      bad;
} piece_check;

static int
on_piece(void *ctx, const char *s, size_t n)
{
    piece_check  *pc = ctx;
    json_t       *w = json_array_get(pc->want, pc->i++);

    if (w == NULL || json_string_length(w) != n
        || memcmp(json_string_value(w), s, n) != 0)
    {
        pc->bad = 1;
    }
    return 0;
}

static void
check_regex(const char *path)
{
    json_t       *arr, *o;
    size_t        i, bad = 0;
    tk_regex      re;
    clef_error    err;
    tk_thread    *th = tk_thread_get();
    piece_check   pc;
    const char   *pat;

    arr = read_jsonl(path);
    if (arr == NULL || th == NULL) {
        CHECK(0, "regex fixture %s", path);
        json_decref(arr);
        return;
    }
    json_array_foreach(arr, i, o) {
        pat = json_string_value(json_object_get(o, "pattern"));
        if (tk_regex_compile(&re, pat, strlen(pat), 0, "test", &err) != 0) {
            if (bad++ == 0) {
                printf("# pattern \"%s\": %s\n", pat, err.message);
            }
            continue;
        }
        pc.want = json_object_get(o, "pieces");
        pc.i = 0;
        pc.bad = 0;
        if (tk_regex_split(&re, th, json_string_value(json_object_get(o, "text")),
                           json_string_length(json_object_get(o, "text")),
                           on_piece, &pc) != 0
            || pc.bad || pc.i != json_array_size(pc.want))
        {
            if (bad++ == 0) {
                printf("# pattern \"%s\" on \"%s\": other pieces\n", pat,
                       json_string_value(json_object_get(o, "text")));
            }
        }
        tk_regex_free(&re);
    }
    CHECK(bad == 0, "regex: %zu of %zu Split pieces as Oniguruma cuts them",
          json_array_size(arr) - bad, json_array_size(arr));
    json_decref(arr);
}

static int
count_piece(void *ctx, const char *s, size_t n)
{
    (void) s;
    (void) n;
    ++*(size_t *) ctx;
    return 0;
}

/* A backtracking pattern over a long subject outgrows PCRE2's default
 * 32 KiB JIT stack: the per-thread stack grows and the match completes. */
static void
check_regex_deep(void)
{
    tk_regex     re;
    clef_error   err;
    size_t       n = 300000, i, pieces = 0;
    char        *s = malloc(n);
    int          rc = -1;

    for (i = 0; i < n; i++) {
        s[i] = "abc"[i % 3];
    }
    if (tk_regex_compile(&re, "(?:a|bc)+", 9, 0, "test", &err) == 0) {
        rc = tk_regex_split(&re, tk_thread_get(), s, n, count_piece, &pieces);
        tk_regex_free(&re);
    }
    CHECK(rc == 0 && pieces == 1, "regex: a 300000-byte match of (?:a|bc)+ (%zu piece)",
          pieces);
    free(s);
}

static void
check_refused(void)
{
    static const char *const  pats[] = {
        "[\\w&&[^\\d]]+",       /* Oniguruma class intersection */
        "[a-c[x-z]]",           /* nested class */
        "[[:alpha:]]",          /* POSIX bracket */
        "[^\\W]",               /* negated escape inside a class */
        "\\O", "\\y", "\\Qa\\E", "(?~ab)", "\\pL",
        "(?s:a.b)",             /* Oniguruma's Ruby syntax has no (?s) */
        "\\u12",                /* \u needs four hex digits */
        "(unclosed",            /* PCRE2 compile error */
    };
    size_t      i, ok = 0;
    tk_regex    re;
    clef_error  err;

    for (i = 0; i < sizeof(pats) / sizeof(pats[0]); i++) {
        if (tk_regex_compile(&re, pats[i], strlen(pats[i]), 0, "test", &err) != 0) {
            ok++;
        } else {
            printf("# \"%s\" was accepted\n", pats[i]);
            tk_regex_free(&re);
        }
    }
    CHECK(ok == sizeof(pats) / sizeof(pats[0]),
          "regex: %zu constructs without a faithful PCRE2 form are refused", ok);
    tk_regex_compile(&re, "[[:alpha:]]", 11, 0, "tokenizer 'x'", &err);
    CHECK_STR(err.message, "tokenizer 'x': the regex \"[[:alpha:]]\" uses a POSIX"
              " bracket expression, which is not supported",
              "regex: the refusal names the pattern and the construct");
}

/* ---- per code point -------------------------------------------------- */

static size_t
put_utf8(uint32_t cp, char *b)
{
    if (cp < 0x80) {
        b[0] = (char) cp;
        return 1;
    }
    if (cp < 0x800) {
        b[0] = (char) (0xc0 | (cp >> 6));
        b[1] = (char) (0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        b[0] = (char) (0xe0 | (cp >> 12));
        b[1] = (char) (0x80 | ((cp >> 6) & 0x3f));
        b[2] = (char) (0x80 | (cp & 0x3f));
        return 3;
    }
    b[0] = (char) (0xf0 | (cp >> 18));
    b[1] = (char) (0x80 | ((cp >> 12) & 0x3f));
    b[2] = (char) (0x80 | ((cp >> 6) & 0x3f));
    b[3] = (char) (0x80 | (cp & 0x3f));
    return 4;
}

/* A bitmap over code points from a list of [first, last] ranges. */
static uint8_t *
range_bits(json_t *ranges)
{
    uint8_t  *bits = calloc(0x110000 / 8, 1);
    json_t   *r;
    size_t    i;
    long      c;

    json_array_foreach(ranges, i, r) {
        for (c = (long) json_integer_value(json_array_get(r, 0));
             c <= (long) json_integer_value(json_array_get(r, 1)); c++)
        {
            bits[c >> 3] |= (uint8_t) (1 << (c & 7));
        }
    }
    return bits;
}

static int
bit(const uint8_t *bits, uint32_t c)
{
    return (bits[c >> 3] >> (c & 7)) & 1;
}

/* The subject: every code point but the surrogates, in order; offs[c] is
 * where code point c starts. */
static char *
all_code_points(size_t *len, uint32_t **offs)
{
    char      *s = malloc(0x110000 * 4);
    uint32_t  *o = malloc(0x110001 * sizeof(uint32_t));
    size_t     n = 0;
    uint32_t   c;

    for (c = 0; c < 0x110000; c++) {
        o[c] = (uint32_t) n;
        if (c < 0xd800 || c > 0xdfff) {
            n += put_utf8(c, s + n);
        }
    }
    o[0x110000] = (uint32_t) n;
    *len = n;
    *offs = o;
    return s;
}

static uint32_t
cp_at(const uint32_t *offs, size_t off)
{
    size_t  lo = 0, hi = 0x110000, mid;

    while (hi - lo > 1) {
        mid = (lo + hi) / 2;
        if (offs[mid] <= off) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return (uint32_t) lo;
}

static void
check_classes(json_t *uni, const uint8_t *assigned, const char *subject,
    size_t len, const uint32_t *offs)
{
    json_t            *classes = json_object_get(uni, "classes"), *ranges;
    const char        *pat;
    uint8_t           *want, *got;
    tk_regex           re;
    clef_error         err;
    tk_thread         *th = tk_thread_get();
    pcre2_match_data  *md = pcre2_match_data_create(1, NULL);
    PCRE2_SIZE        *ov;
    size_t             pos, bad_pats = 0, n_pats = 0;
    uint32_t           c, first_bad;
    int                rc;

    json_object_foreach(classes, pat, ranges) {
        n_pats++;
        want = range_bits(ranges);
        got = calloc(0x110000 / 8, 1);
        if (tk_regex_compile(&re, pat, strlen(pat), 0, "test", &err) != 0) {
            printf("# %s: %s\n", pat, err.message);
            bad_pats++;
            free(want);
            free(got);
            continue;
        }
        for (pos = 0; pos < len; ) {
            rc = pcre2_match(re.code, (PCRE2_SPTR) subject, len, pos, PCRE2_NO_UTF_CHECK,
                             md, NULL);
            if (rc < 0) {
                break;
            }
            ov = pcre2_get_ovector_pointer(md);
            if (ov[1] == ov[0]) {
                pos = ov[1] + 1;
                while (pos < len && ((unsigned char) subject[pos] & 0xc0) == 0x80) {
                    pos++;
                }
                continue;
            }
            for (c = cp_at(offs, ov[0]); offs[c] < ov[1]; c++) {
                got[c >> 3] |= (uint8_t) (1 << (c & 7));
            }
            pos = ov[1];
        }
        first_bad = UINT32_MAX;
        for (c = 0; c < 0x110000; c++) {
            if (bit(assigned, c) && bit(want, c) != bit(got, c)) {
                first_bad = c;
                break;
            }
        }
        if (first_bad != UINT32_MAX) {
            printf("# %s: U+%04X %s by Oniguruma, %s by PCRE2\n", pat, first_bad,
                   bit(want, first_bad) ? "matched" : "not matched",
                   bit(got, first_bad) ? "matched" : "not matched");
            bad_pats++;
        }
        tk_regex_free(&re);
        free(want);
        free(got);
        (void) th;
    }
    pcre2_match_data_free(md);
    CHECK(bad_pats == 0 && n_pats > 0,
          "classes: %zu of %zu single-character patterns match the same code points"
          " (Unicode %s)", n_pats - bad_pats, n_pats,
          json_string_value(json_object_get(uni, "unicode_version")));
}

static void
check_word_chars(json_t *uni, const uint8_t *assigned)
{
    uint8_t    *want = range_bits(json_object_get(uni, "rust_word"));
    tk_thread  *th = tk_thread_get();
    uint32_t    c;
    size_t      bad = 0, n = 0, k;
    char        b[4];

    for (c = 0; c < 0x110000; c++) {
        if (!bit(assigned, c)) {
            continue;
        }
        n++;
        k = put_utf8(c, b);
        if (tk_is_word_char(th, b, k) != bit(want, c)) {
            if (bad++ == 0) {
                printf("# U+%04X: HF's single_word says %sword\n", c,
                       bit(want, c) ? "" : "not a ");
            }
        }
    }
    CHECK(bad == 0, "single_word: %zu of %zu code points are word characters as"
          " for HF", n - bad, n);
    free(want);
}

static void
check_nfc(json_t *uni)
{
    json_t          *nfc = json_object_get(uni, "nfc"), *p;
    clef_buf         out = { 0 };
    tk_nfc_scratch   sc = { 0 };
    size_t           i, bad = 0;
    const char      *in, *want;

    json_array_foreach(nfc, i, p) {
        in = json_string_value(json_array_get(p, 0));
        want = json_string_value(json_array_get(p, 1));
        out.len = 0;
        if (tk_nfc_append(in, strlen(in), &out, &sc) != 0
            || out.len != strlen(want) || memcmp(out.data, want, out.len) != 0)
        {
            if (bad++ < 5) {
                printf("# NFC of \"%s\": want \"%s\", got \"%.*s\"\n", in, want,
                       (int) out.len, out.data ? out.data : "");
            }
        }
    }
    CHECK(bad == 0, "NFC: %zu of %zu cases as HF's normalizer", json_array_size(nfc) - bad,
          json_array_size(nfc));
    clef_buf_free(&out);
    tk_nfc_scratch_free(&sc);
}

/* The chunked NFC with its quick check equals plain utf8proc NFC (both
 * sides of the one pair HF leaves apart excluded) on random mixtures of
 * the code points that decompose, compose, reorder or pass as they are. */
static void
check_nfc_chunks(void)
{
    static const uint32_t  pool[] = {
        'a', 'e', 'o', 'A', ' ', '1', 0x300, 0x301, 0x302, 0x323, 0x328, 0x344,
        0x345, 0xe9, 0xc5, 0x212b, 0x1100, 0x1101, 0x1161, 0x1162, 0x11a8, 0x11a9,
        0xac00, 0xac01, 0x915, 0x93c, 0x958, 0xb47, 0xb3e, 0xb57, 0x4e00, 0x9fa5,
        0xf900, 0x304b, 0x3099, 0x309a, 0xff21, 0xff8a, 0xff9f, 0x5d0, 0x5b7, 0x5b8,
        0x1f600, 0x200d, 0xfe0f, 0x1e9b, 0x1ec7, 0xf73, 0xfb2c,
    };
    const size_t     n_pool = sizeof(pool) / sizeof(pool[0]);
    clef_buf         out = { 0 };
    tk_nfc_scratch   sc = { 0 };
    uint64_t         rng = 0x9e3779b97f4a7c15ULL;
    size_t           i, k, len, bad = 0;
    char             s[1024];
    utf8proc_uint8_t *want;

    for (i = 0; i < 20000; i++) {
        len = 0;
        /* every 100th string is one long run of marks (pool[6..12]): those
         * are merge-sorted */
        for (k = i % 100 == 0 ? 200 : 1 + (i % 12); k > 0; k--) {
            rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
            len += put_utf8(i % 100 == 0 ? pool[6 + (rng >> 33) % 7]
                                         : pool[(rng >> 33) % n_pool], s + len);
        }
        s[len] = '\0';
        out.len = 0;
        want = utf8proc_NFC((const utf8proc_uint8_t *) s);
        if (want == NULL || tk_nfc_append(s, len, &out, &sc) != 0
            || out.len != strlen((char *) want) || memcmp(out.data, want, out.len) != 0)
        {
            bad++;
        }
        free(want);
    }
    CHECK(bad == 0, "NFC: chunks, quick check and ordering agree with utf8proc on 20000 random"
          " strings (%zu differ)", bad);
    clef_buf_free(&out);
    tk_nfc_scratch_free(&sc);
}

/* Every combining mark of the installed utf8proc (other than class 240,
 * U+0345 itself): reordered before U+0345 exactly when HF's tables know it. */
static void
check_hf_marks(json_t *uni)
{
    uint8_t                    *known = range_bits(json_object_get(uni, "hf_marks"));
    const utf8proc_property_t  *pr;
    clef_buf                    out = { 0 };
    tk_nfc_scratch              sc = { 0 };
    char                        in[16], want[16];
    size_t                      n, bad = 0, marks = 0;
    uint32_t                    c;
    int                         reordered;

    for (c = 0; c < 0x110000; c++) {
        pr = utf8proc_get_property((utf8proc_int32_t) c);
        if ((c >= 0xd800 && c <= 0xdfff) || pr->combining_class == 0
            || pr->combining_class == 240 || pr->decomp_seqindex != UINT16_MAX)
        {
            continue;
        }
        marks++;
        n = put_utf8(c, in + 3);
        memcpy(in, "$\xcd\x85", 3);
        want[0] = '$';
        memcpy(want + 1, in + 3, n);
        memcpy(want + 1 + n, "\xcd\x85", 2);
        out.len = 0;
        reordered = tk_nfc_append(in, n + 3, &out, &sc) == 0 && out.len == n + 3
                    && memcmp(out.data, want, n + 3) == 0;
        if (reordered != bit(known, c)) {
            if (bad++ == 0) {
                printf("# U+%04X: HF %s it after U+0345, we %s\n", c,
                       bit(known, c) ? "moves" : "leaves", reordered ? "move" : "leave");
            }
        }
    }
    CHECK(bad == 0 && marks > 0, "NFC: %zu of utf8proc %s's %zu combining marks are"
          " reordered as by HF", marks - bad, utf8proc_unicode_version(), marks);
    free(known);
    clef_buf_free(&out);
    tk_nfc_scratch_free(&sc);
}

static void
check_unicode(const char *path)
{
    json_t        *uni;
    json_error_t   jerr;
    uint8_t       *assigned;
    char          *subject;
    size_t         len;
    uint32_t      *offs;

    uni = json_load_file(path, 0, &jerr);
    if (uni == NULL) {
        CHECK(0, "unicode fixture %s: %s", path, jerr.text);
        return;
    }
    assigned = range_bits(json_object_get(uni, "assigned"));
    subject = all_code_points(&len, &offs);
    check_classes(uni, assigned, subject, len, offs);
    check_word_chars(uni, assigned);
    check_nfc(uni);
    check_hf_marks(uni);
    check_nfc_chunks();
    free(subject);
    free(offs);
    free(assigned);
    json_decref(uni);
}

/* ---- load errors, lookups, odd input --------------------------------- */

static void
write_file(const char *path, const char *text)
{
    FILE  *f = fopen(path, "w");

    if (f != NULL) {
        fputs(text, f);
        fclose(f);
    }
}

static void
check_load_errors(void)
{
    char             dir[] = "/tmp/clef-tokenizer-XXXXXX", path[256], want[600];
    clef_tokenizer  *tk;
    clef_error       err;
    static const char  good_model[] =
        "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"ab\":2},"
        "\"merges\":[\"a b\"]}";

    if (mkdtemp(dir) == NULL) {
        CHECK(0, "mkdtemp");
        return;
    }

    path_join(path, sizeof(path), dir, "missing.json");
    tk = clef_tokenizer_load(path, &err);
    snprintf(want, sizeof(want), "cannot open tokenizer '%s': No such file or directory",
             path);
    CHECK(tk == NULL, "a missing file is refused");
    CHECK_STR(err.message, want, "missing file: message");
    CHECK_STR(err.type, "tokenizer_missing", "missing file: type");
    CHECK_INT(err.status, 500, "missing file: status");

    tk = clef_tokenizer_load(dir, &err);
    snprintf(want, sizeof(want), "cannot open tokenizer '%s/tokenizer.json':"
             " No such file or directory", dir);
    CHECK(tk == NULL, "a directory without tokenizer.json is refused");
    CHECK_STR(err.message, want, "directory without tokenizer.json: message");

    path_join(path, sizeof(path), dir, "bad.json");
    write_file(path, "{\"model\": {\"vocab\": {\"a\": 0},\n  \"merges\": [,]}}");
    tk = clef_tokenizer_load(path, &err);
    snprintf(want, sizeof(want), "tokenizer '%s': invalid JSON at byte 43:"
             " expected a value", path);
    CHECK(tk == NULL, "invalid JSON is refused");
    CHECK_STR(err.message, want, "invalid JSON: message");
    CHECK_STR(err.type, "tokenizer_invalid", "invalid JSON: type");

    /* jansson let the last of two equal keys win; the parser refuses */
    path_join(path, sizeof(path), dir, "dup.json");
    write_file(path, "{\"model\":{\"vocab\":{\"a\":0,\"b\":1,\"a\":2}}}");
    tk = clef_tokenizer_load(path, &err);
    snprintf(want, sizeof(want), "tokenizer '%s': invalid JSON at byte 31:"
             " duplicate key \"a\" in object", path);
    CHECK_STR(tk == NULL ? err.message : "(loaded)", want,
              "a repeated vocab key is refused");
    CHECK_STR(err.type, "tokenizer_invalid", "repeated vocab key: type");
    unlink(path);

    path_join(path, sizeof(path), dir, "lower.json");
    snprintf(want, sizeof(want), "{%s,\"normalizer\":{\"type\":\"Sequence\","
             "\"normalizers\":[{\"type\":\"NFC\"},{\"type\":\"Lowercase\"}]},"
             "\"pre_tokenizer\":{\"type\":\"ByteLevel\"}}", good_model);
    write_file(path, want);
    tk = clef_tokenizer_load(path, &err);
    snprintf(want, sizeof(want), "tokenizer '%s': unsupported normalizer \"Lowercase\""
             " (only NFC, or a Sequence of NFC, is supported)", path);
    CHECK(tk == NULL, "an unsupported normalizer is refused");
    CHECK_STR(err.message, want, "unsupported normalizer: message");
    CHECK_STR(err.type, "tokenizer_unsupported", "unsupported normalizer: type");

    /* a NUL inside a name: not the name (jansson refused \u0000) */
    path_join(path, sizeof(path), dir, "nul.json");
    snprintf(want, sizeof(want), "{%s,\"normalizer\":{\"type\":\"NFC\\u0000x\"},"
             "\"pre_tokenizer\":{\"type\":\"ByteLevel\"}}", good_model);
    write_file(path, want);
    tk = clef_tokenizer_load(path, &err);
    snprintf(want, sizeof(want), "tokenizer '%s': unsupported normalizer \"?\""
             " (only NFC, or a Sequence of NFC, is supported)", path);
    CHECK_STR(tk == NULL ? err.message : "(loaded)", want,
              "a normalizer named NFC\\u0000x is refused");
    unlink(path);

    path_join(path, sizeof(path), dir, "split.json");
    snprintf(want, sizeof(want), "{%s,\"pre_tokenizer\":{\"type\":\"Sequence\","
             "\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":{\"Regex\":\"a\"},"
             "\"behavior\":\"Removed\",\"invert\":false},{\"type\":\"ByteLevel\"}]}}",
             good_model);
    write_file(path, want);
    tk = clef_tokenizer_load(path, &err);
    snprintf(want, sizeof(want), "tokenizer '%s': unsupported Split behavior"
             " \"Removed\" (only Isolated is supported)", path);
    CHECK_STR(tk == NULL ? err.message : "(loaded)", want,
              "an unsupported Split behavior is refused");

    path_join(path, sizeof(path), dir, "nobl.json");
    snprintf(want, sizeof(want), "{%s,\"pre_tokenizer\":null}", good_model);
    write_file(path, want);
    tk = clef_tokenizer_load(path, &err);
    snprintf(want, sizeof(want), "tokenizer '%s': unsupported pre_tokenizer \"null\""
             " (only ByteLevel, and Split before it, are supported)", path);
    CHECK_STR(tk == NULL ? err.message : "(loaded)", want,
              "a tokenizer without ByteLevel is refused");

    path_join(path, sizeof(path), dir, "merge.json");
    write_file(path, "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1},"
               "\"merges\":[\"a b\"]},\"pre_tokenizer\":{\"type\":\"ByteLevel\"}}");
    tk = clef_tokenizer_load(path, &err);
    snprintf(want, sizeof(want), "tokenizer '%s': model.merges[0] uses a token that"
             " is not in the vocab", path);
    CHECK_STR(tk == NULL ? err.message : "(loaded)", want,
              "a merge outside the vocab is refused");

    path_join(path, sizeof(path), dir, "tiny.json");
    snprintf(want, sizeof(want), "{%s,\"pre_tokenizer\":{\"type\":\"ByteLevel\","
             "\"add_prefix_space\":false}}", good_model);
    write_file(path, want);
    tk = clef_tokenizer_load(path, &err);
    CHECK(tk != NULL, "a minimal tokenizer.json loads");
    if (tk != NULL) {
        clef_ids  ids = { 0 };

        CHECK(clef_tokenizer_encode(tk, "abba", 4, &ids) == 0 && ids.n == 3
              && ids.v[0] == 2 && ids.v[1] == 1 && ids.v[2] == 0,
              "minimal tokenizer: \"abba\" is ab b a");
        CHECK_INT(clef_tokenizer_vocab_size(tk), 3, "minimal tokenizer: vocab size");
        clef_ids_free(&ids);
        clef_tokenizer_free(tk);
    }

    unlink(path);
    path_join(path, sizeof(path), dir, "merge.json");
    unlink(path);
    path_join(path, sizeof(path), dir, "nobl.json");
    unlink(path);
    path_join(path, sizeof(path), dir, "split.json");
    unlink(path);
    path_join(path, sizeof(path), dir, "lower.json");
    unlink(path);
    path_join(path, sizeof(path), dir, "bad.json");
    unlink(path);
    rmdir(dir);
}

/* ---- a GGUF vocabulary (clef_tokenizer_from_vocab) ------------------ */

static clef_tokenizer *
from_vocab(const char *pre, const char *const *tokens, const int32_t *types,
    size_t n, clef_error *err)
{
    static const char *const  merges[] = { "a b" };
    static const size_t       merge_len[] = { 3 };
    clef_tokenizer_vocab      v;
    size_t                    len[8], i;

    for (i = 0; i < n; i++) {
        len[i] = strlen(tokens[i]);
    }
    memset(&v, 0, sizeof(v));
    v.pre = pre;
    v.n_tokens = n;
    v.tokens = tokens;
    v.token_len = len;
    v.types = types;
    v.n_merges = 1;
    v.merges = merges;
    v.merge_len = merge_len;
    return clef_tokenizer_from_vocab(&v, "vocab", err);
}

static int
encodes_to(const clef_tokenizer *tk, const char *text, const int32_t *want,
    size_t n)
{
    clef_ids  ids = { 0 };
    int       same;

    same = clef_tokenizer_encode(tk, text, strlen(text), &ids) == 0
           && ids.n == n && memcmp(ids.v, want, n * sizeof(int32_t)) == 0;
    clef_ids_free(&ids);
    return same;
}

/*
 * The tokenizer.json text a GGUF vocabulary is written as: control tokens
 * are added tokens, unused ones left out (whatever their bytes), a token
 * repeated in the vocab keeps its last id, and a token that is not UTF-8
 * cannot be written.
 */
static void
check_from_vocab(void)
{
    clef_tokenizer  *tk;
    clef_error       err;
    static const char *const  toks[] = { "a", "b", "ab", "<|x|>", "\xff" };
    static const int32_t      types[] = {
        CLEF_TOKEN_NORMAL, CLEF_TOKEN_NORMAL, CLEF_TOKEN_NORMAL,
        CLEF_TOKEN_CONTROL, CLEF_TOKEN_UNUSED
    };
    static const char *const  dup[] = { "a", "b", "ab", "a" };
    static const char *const  bad[] = { "a", "\xc3", "ab" };
    static const int32_t      want1[] = { 3, 2 }, want2[] = { 3, 2 };

    tk = from_vocab("qwen2", toks, types, 5, &err);
    CHECK(tk != NULL, "vocab: loads: %s", tk != NULL ? "" : err.message);
    if (tk != NULL) {
        CHECK(encodes_to(tk, "<|x|>ab", want1, 2), "vocab: <|x|>ab is 3 2");
        CHECK_INT(clef_tokenizer_vocab_size(tk), 4, "vocab: its size");
        clef_tokenizer_free(tk);
    }

    tk = from_vocab("qwen35", dup, NULL, 4, &err);
    CHECK(tk != NULL, "vocab with a repeat: loads: %s",
          tk != NULL ? "" : err.message);
    if (tk != NULL) {
        CHECK_INT(clef_tokenizer_token_id(tk, "a"), 3,
                  "vocab with a repeat: the last id wins");
        CHECK(encodes_to(tk, "aab", want2, 2),
              "vocab with a repeat: aab is 3 2");
        CHECK_INT(clef_tokenizer_vocab_size(tk), 4,
                  "vocab with a repeat: size");
        clef_tokenizer_free(tk);
    }

    tk = from_vocab("qwen2", bad, NULL, 3, &err);
    CHECK_STR(tk == NULL ? err.message : "(loaded)",
              "vocab: token 1 is not valid UTF-8",
              "a token not UTF-8 is refused");
    CHECK_STR(err.type, "tokenizer_invalid", "a token not UTF-8: type");

    tk = from_vocab("llama-bpe", dup, NULL, 4, &err);
    CHECK_STR(tk == NULL ? err.message : "(loaded)",
              "vocab: the pre-tokenizer \"llama-bpe\" is not supported"
              " (\"qwen2\" and \"qwen35\" are)",
              "an unknown pre-tokenizer is refused");
}

static int
encodes_like(const clef_tokenizer *tk, const char *a, size_t an, const char *b)
{
    clef_ids  x = { 0 }, y = { 0 };
    int       same;

    same = clef_tokenizer_encode(tk, a, an, &x) == 0
           && clef_tokenizer_encode(tk, b, strlen(b), &y) == 0
           && x.n == y.n && (x.n == 0 || memcmp(x.v, y.v, x.n * sizeof(int32_t)) == 0);
    clef_ids_free(&x);
    clef_ids_free(&y);
    return same;
}

static void
check_qwen3_api(const clef_tokenizer *tk)
{
    clef_ids  ids = { 0 };

    CHECK_INT(clef_tokenizer_vocab_size(tk), 151669, "qwen3: vocab size");
    CHECK_INT(clef_tokenizer_token_id(tk, "<|im_end|>"), 151645, "qwen3: <|im_end|>");
    CHECK_INT(clef_tokenizer_token_id(tk, "<|endoftext|>"), 151643,
              "qwen3: <|endoftext|>");
    CHECK_INT(clef_tokenizer_token_id(tk, "<think>"), 151667, "qwen3: <think>");
    CHECK_INT(clef_tokenizer_token_id(tk, "</think>"), 151668, "qwen3: </think>");
    CHECK_INT(clef_tokenizer_token_id(tk, "hello"), 14990, "qwen3: hello");
    CHECK_INT(clef_tokenizer_token_id(tk, "\xc4\xa0world"), 1879, "qwen3: \\u0120world");
    CHECK_INT(clef_tokenizer_token_id(tk, "\xc4\x8a"), 198, "qwen3: \\u010a (newline)");
    CHECK_INT(clef_tokenizer_token_id(tk, "<|im_en"), -1, "qwen3: <|im_en is absent");
    CHECK_INT(clef_tokenizer_token_id(tk, ""), -1, "qwen3: the empty string is absent");

    clef_ids_push(&ids, 7);
    CHECK(clef_tokenizer_encode(tk, "<|im_end|>", 10, &ids) == 0 && ids.n == 2
          && ids.v[0] == 7 && ids.v[1] == 151645, "qwen3: encode appends to out");
    ids.n = 0;
    CHECK(clef_tokenizer_encode(tk, "", 0, &ids) == 0 && ids.n == 0,
          "qwen3: the empty text has no ids");
    clef_ids_free(&ids);

    /* Ill-formed UTF-8 reads as U+FFFD per maximal subpart. */
    CHECK(encodes_like(tk, "a\xff" "b", 3, "a\xef\xbf\xbd" "b"), "qwen3: a stray byte");
    CHECK(encodes_like(tk, "\xe2\x82", 2, "\xef\xbf\xbd"), "qwen3: a truncated sequence");
    CHECK(encodes_like(tk, "x\xf0\x9f\x98 y", 6, "x\xef\xbf\xbd y"),
          "qwen3: a truncated 4-byte sequence");
    CHECK(encodes_like(tk, "\xed\xa0\x80", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"),
          "qwen3: an encoded surrogate");
    CHECK(encodes_like(tk, "\xc0\xaf<|im_end|>", 12,
                       "\xef\xbf\xbd\xef\xbf\xbd<|im_end|>"), "qwen3: an overlong form");
}

static void
check_tokenizer(const char *name, const char *dir, const char *cases_path,
    int threads, size_t vocab_size)
{
    clef_tokenizer  *tk;
    clef_error       err;
    tcases           c = { 0 };

    tk = clef_tokenizer_load(dir, &err);
    if (tk == NULL) {
        CHECK(0, "%s: load %s: %s", name, dir, err.message);
        return;
    }
    if (load_cases(cases_path, &c) != 0) {
        CHECK(0, "%s: cannot read %s", name, cases_path);
        clef_tokenizer_free(tk);
        return;
    }
    check_cases(tk, name, &c);
    /* Again: now every short word comes from the cache. */
    check_cases(tk, name, &c);
    if (vocab_size) {
        CHECK_INT(clef_tokenizer_vocab_size(tk), vocab_size, "%s: vocab size", name);
    }
    if (strcmp(name, "qwen3") == 0) {
        check_qwen3_api(tk);
    }
    if (threads) {
        check_threads(dir, &c);
    }
    free_cases(&c);
    clef_tokenizer_free(tk);
}

int
main(void)
{
    char  dir[400], cases[512], path[512];

    snprintf(dir, sizeof(dir), "%s", check_qwen3_tokenizer());
    snprintf(cases, sizeof(cases), "%s/tokenizer/qwen3/cases.jsonl", check_fixtures());
    check_tokenizer("qwen3", dir, cases, 1, 0);

    snprintf(dir, sizeof(dir), "%s/tokenizer/trained", check_fixtures());
    snprintf(cases, sizeof(cases), "%s/cases.jsonl", dir);
    check_tokenizer("trained", dir, cases, 1, 2069);
    {
        clef_tokenizer  *tk;
        clef_error       err;

        snprintf(path, sizeof(path), "%s/tokenizer.json", dir);
        tk = clef_tokenizer_load(path, &err);
        CHECK(tk != NULL, "trained: loads from the file path too");
        if (tk != NULL) {
            CHECK_INT(clef_tokenizer_token_id(tk, "<mask>"), 2059, "trained: <mask>");
            CHECK_INT(clef_tokenizer_token_id(tk, "caf\xc3\xa9"), 2063, "trained: caf\\u00e9");
            CHECK_INT(clef_tokenizer_token_id(tk, "\xc4\xa0the"), 948, "trained: \\u0120the");
            clef_tokenizer_free(tk);
        }
    }

    snprintf(dir, sizeof(dir), "%s/tokenizer/edge", check_fixtures());
    snprintf(cases, sizeof(cases), "%s/cases.jsonl", dir);
    check_tokenizer("edge", dir, cases, 0, 2052);
    {
        clef_tokenizer  *tk;
        clef_error       err;

        tk = clef_tokenizer_load(dir, &err);
        if (tk != NULL) {
            /* HF assigns ids itself; the file states others */
            CHECK_INT(clef_tokenizer_token_id(tk, "<s>"), 2049, "edge: <s> gets HF's id");
            CHECK_INT(clef_tokenizer_token_id(tk, "</s>"), 2051, "edge: </s> gets HF's id");
            CHECK_INT(clef_tokenizer_token_id(tk, "hello"), 2050,
                      "edge: hello gets HF's id");
            CHECK_INT(clef_tokenizer_token_id(tk, "\xc3\xbc"), 185,
                      "edge: an added token in the vocab keeps its vocab id");
            clef_tokenizer_free(tk);
        }
    }

    snprintf(path, sizeof(path), "%s/tokenizer/regex.jsonl", check_fixtures());
    check_regex(path);
    check_regex_deep();
    check_refused();
    snprintf(path, sizeof(path), "%s/tokenizer/unicode.json", check_fixtures());
    check_unicode(path);
    check_load_errors();
    check_from_vocab();
    return check_done();
}
