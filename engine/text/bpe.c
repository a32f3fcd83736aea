/*
 * The BPE model of a byte-level tokenizer.json: every byte of a word starts
 * as the symbol of its ByteLevel character, then the adjacent pair with the
 * lowest merge rank (the leftmost among equals) is merged until no pair has
 * a rank, exactly the order of HF's Word::merge_all.  No dropout, no byte
 * fallback.  Results are kept in the shared word cache.
 */
#include "text/tokenizer_impl.h"

#include <stdlib.h>
#include <string.h>

#define NO_PAIR      UINT64_MAX
#define SHORT_WORD   32     /* up to this many symbols: scan, else a heap */

static size_t
pair_slot(const tk_bpe *b, uint64_t key)
{
    return (size_t) ((key * 0x9e3779b97f4a7c15ULL) >> 32) & b->pair_mask;
}

static inline uint64_t
pair_get(const tk_bpe *b, int32_t left, int32_t right)
{
    uint64_t  key = ((uint64_t) (uint32_t) left << 32) | (uint32_t) right;
    size_t    j;

    for (j = pair_slot(b, key); b->pairs[j].key != NO_PAIR;
         j = (j + 1) & b->pair_mask)
    {
        if (b->pairs[j].key == key) {
            return b->pairs[j].val;
        }
    }
    return NO_PAIR;
}

static void
pair_put(tk_bpe *b, int32_t left, int32_t right, uint32_t rank, int32_t id)
{
    uint64_t  key = ((uint64_t) (uint32_t) left << 32) | (uint32_t) right;
    size_t    j;

    for (j = pair_slot(b, key); b->pairs[j].key != NO_PAIR;
         j = (j + 1) & b->pair_mask)
    {
        if (b->pairs[j].key == key) {
            break;              /* a repeated merge: the last rank wins */
        }
    }
    b->pairs[j].key = key;
    b->pairs[j].val = ((uint64_t) rank << 32) | (uint32_t) id;
}

/* A merge as two strings: "a b" (exactly one space) or ["a", "b"]. */
static int
merge_parts(const clef_json *m, const char **a, size_t *an, const char **c,
    size_t *cn)
{
    const char  *s, *sp;
    size_t       n;

    if (m->type == CLEF_JSON_STRING) {
        s = m->str;
        n = m->len;
        sp = memchr(s, ' ', n);
        if (sp == NULL || memchr(sp + 1, ' ', n - (size_t) (sp - s) - 1) != NULL) {
            return -1;
        }
        *a = s;
        *an = (size_t) (sp - s);
        *c = sp + 1;
        *cn = n - *an - 1;
        return 0;
    }
    if (m->type == CLEF_JSON_ARRAY && m->len == 2
        && m->items[0]->type == CLEF_JSON_STRING
        && m->items[1]->type == CLEF_JSON_STRING)
    {
        *a = m->items[0]->str;
        *an = m->items[0]->len;
        *c = m->items[1]->str;
        *cn = m->items[1]->len;
        return 0;
    }
    return -1;
}

/* 0 or 0.0 (jansson's json_number_value(v) == 0) */
static int
is_zero(const clef_json *v)
{
    return (v->type == CLEF_JSON_INT && v->len == 1 && v->str[0] == '0')
           || (v->type == CLEF_JSON_FLOAT && v->num == 0);
}

static int
load_options(tk_bpe *b, const clef_json *model, const char *what,
    clef_error *err)
{
    const clef_json  *v;
    const char       *key, *type;
    static const char *const  affixes[] = {
        "continuing_subword_prefix", "end_of_word_suffix"
    };
    size_t            i;

    v = clef_json_get(model, "type");
    type = tk_json_str(v);
    if (v != NULL && (type == NULL || strcmp(type, "BPE") != 0)) {
        return tk_fail(err, "tokenizer_unsupported", what,
                       "unsupported model type \"%s\" (only BPE is supported)",
                       type != NULL ? type : "?");
    }
    v = clef_json_get(model, "dropout");
    if (v != NULL && v->type != CLEF_JSON_NULL && !is_zero(v)) {
        return tk_fail(err, "tokenizer_unsupported", what,
                       "BPE dropout is not supported");
    }
    v = clef_json_get(model, "byte_fallback");
    if (tk_json_is(v, CLEF_JSON_TRUE)) {
        return tk_fail(err, "tokenizer_unsupported", what,
                       "BPE byte_fallback is not supported");
    }
    for (i = 0; i < 2; i++) {
        key = affixes[i];
        v = clef_json_get(model, key);
        if (v != NULL && v->type != CLEF_JSON_NULL
            && !(v->type == CLEF_JSON_STRING && v->len == 0))
        {
            return tk_fail(err, "tokenizer_unsupported", what,
                           "BPE %s is not supported", key);
        }
    }
    b->fuse_unk = tk_json_is(clef_json_get(model, "fuse_unk"), CLEF_JSON_TRUE);
    b->ignore_merges = tk_json_is(clef_json_get(model, "ignore_merges"),
                                  CLEF_JSON_TRUE);
    b->unk_id = -1;
    v = clef_json_get(model, "unk_token");
    if (tk_json_is(v, CLEF_JSON_STRING)) {
        b->unk_id = tk_strmap_get(&b->vocab, v->str, v->len);
        if (b->unk_id < 0) {
            return tk_fail(err, "tokenizer_invalid", what,
                           "the BPE unk_token \"%s\" is not in the vocab",
                           v->str);
        }
    } else if (v != NULL && v->type != CLEF_JSON_NULL) {
        return tk_fail(err, "tokenizer_invalid", what,
                       "the BPE unk_token must be a string or null");
    }
    return 0;
}

static int
load_merges(tk_bpe *b, const clef_json *merges, const char *what,
    clef_error *err)
{
    size_t       n = merges != NULL ? merges->len : 0, cap, i, an, cn;
    const char  *a, *c;
    int32_t      ia, ic, im;
    clef_buf     cat = { 0 };

    for (cap = 64; cap < 2 * n; cap *= 2) {
        /* void */
    }
    b->pairs = malloc(cap * sizeof(*b->pairs));
    if (b->pairs == NULL) {
        return tk_oom(err);
    }
    memset(b->pairs, 0xff, cap * sizeof(*b->pairs));
    b->pair_mask = cap - 1;

    for (i = 0; i < n; i++) {
        if (merge_parts(merges->items[i], &a, &an, &c, &cn) != 0) {
            clef_buf_free(&cat);
            return tk_fail(err, "tokenizer_invalid", what,
                           "model.merges[%zu] is neither \"a b\" nor [\"a\", \"b\"]", i);
        }
        ia = tk_strmap_get(&b->vocab, a, an);
        ic = tk_strmap_get(&b->vocab, c, cn);
        cat.len = 0;
        if (clef_buf_append(&cat, a, an) != 0 || clef_buf_append(&cat, c, cn) != 0) {
            clef_buf_free(&cat);
            return tk_oom(err);
        }
        im = tk_strmap_get(&b->vocab, cat.data, cat.len);
        if (ia < 0 || ic < 0 || im < 0) {
            clef_buf_free(&cat);
            return tk_fail(err, "tokenizer_invalid", what,
                           "model.merges[%zu] uses a token that is not in the vocab", i);
        }
        pair_put(b, ia, ic, (uint32_t) i, im);
    }
    clef_buf_free(&cat);
    return 0;
}

/* An id of model.vocab: an integer from 0 to INT32_MAX (the parser gives
 * its decimal text, any size), else -1. */
static int32_t
vocab_id(const clef_json *v)
{
    int64_t  id = 0;
    size_t   i;

    /* "-0" arrives as "0": a sign means below zero */
    if (v->type != CLEF_JSON_INT || v->str[0] == '-') {
        return -1;
    }
    for (i = 0; i < v->len; i++) {
        id = id * 10 + (v->str[i] - '0');
        if (id > INT32_MAX) {
            return -1;
        }
    }
    return (int32_t) id;
}

int
tk_bpe_load(tk_bpe *b, const clef_json *model, const char *what,
    clef_error *err)
{
    const clef_json  *vocab, *merges;
    const clef_str   *key;
    size_t            i, n;
    int32_t           id;
    char              bc[4];

    memset(b, 0, sizeof(*b));
    b->max_id = -1;
    vocab = clef_json_get(model, "vocab");
    merges = clef_json_get(model, "merges");
    if (!tk_json_is(vocab, CLEF_JSON_OBJECT)) {
        return tk_fail(err, "tokenizer_invalid", what, "model.vocab is not an object");
    }
    if (merges != NULL && merges->type != CLEF_JSON_ARRAY) {
        return tk_fail(err, "tokenizer_invalid", what, "model.merges is not an array");
    }
    for (i = 0; i < vocab->len; i++) {
        key = &vocab->keys[i];
        id = vocab_id(vocab->items[i]);
        if (id < 0) {
            return tk_fail(err, "tokenizer_invalid", what,
                           "model.vocab[\"%s\"] is not a valid id", key->s);
        }
        if (tk_strmap_put(&b->vocab, key->s, key->len, id) != 0) {
            return tk_oom(err);
        }
        if (id > b->max_id) {
            b->max_id = id;
        }
    }
    b->vocab_len = b->vocab.used;
    for (i = 0; i < 256; i++) {
        n = tk_byte_char((unsigned) i, bc);
        b->byte_id[i] = tk_strmap_get(&b->vocab, bc, n);
    }
    if (load_options(b, model, what, err) != 0) {
        return -1;
    }
    if (load_merges(b, merges, what, err) != 0) {
        return -1;
    }
    if (tk_cache_init(&b->cache) != 0) {
        return tk_oom(err);
    }
    return 0;
}

void
tk_bpe_free(tk_bpe *b)
{
    tk_strmap_free(&b->vocab);
    free(b->pairs);
    tk_cache_free(&b->cache);
    memset(b, 0, sizeof(*b));
}

/* Merges a short word by scanning the ranks of its adjacent pairs. */
static size_t
merge_scan(const tk_bpe *b, int32_t *sym, size_t m)
{
    uint64_t  pv[SHORT_WORD], best;
    size_t    i, bi;

    for (i = 0; i + 1 < m; i++) {
        pv[i] = pair_get(b, sym[i], sym[i + 1]);
    }
    while (m > 1) {
        best = NO_PAIR;
        bi = 0;
        for (i = 0; i + 1 < m; i++) {
            if (pv[i] < best) {         /* strict: the leftmost wins */
                best = pv[i];
                bi = i;
            }
        }
        if (best == NO_PAIR) {
            break;
        }
        sym[bi] = (int32_t) (uint32_t) best;
        m--;
        for (i = bi + 1; i < m; i++) {
            sym[i] = sym[i + 1];
        }
        for (i = bi; i + 1 < m; i++) {
            pv[i] = pv[i + 1];
        }
        if (bi > 0) {
            pv[bi - 1] = pair_get(b, sym[bi - 1], sym[bi]);
        }
        if (bi + 1 < m) {
            pv[bi] = pair_get(b, sym[bi], sym[bi + 1]);
        }
    }
    return m;
}

typedef struct {
    uint32_t  rank;
    uint32_t  pos;
} heap_item;

static int
heap_less(heap_item x, heap_item y)
{
    return x.rank < y.rank || (x.rank == y.rank && x.pos < y.pos);
}

static void
heap_push(heap_item *h, size_t *n, heap_item it)
{
    size_t  i = (*n)++, p;

    while (i > 0) {
        p = (i - 1) / 2;
        if (!heap_less(it, h[p])) {
            break;
        }
        h[i] = h[p];
        i = p;
    }
    h[i] = it;
}

static heap_item
heap_pop(heap_item *h, size_t *n)
{
    heap_item  top = h[0], last = h[--(*n)];
    size_t     i = 0, c;

    for ( ;; ) {
        c = 2 * i + 1;
        if (c >= *n) {
            break;
        }
        if (c + 1 < *n && heap_less(h[c + 1], h[c])) {
            c++;
        }
        if (!heap_less(h[c], last)) {
            break;
        }
        h[i] = h[c];
        i = c;
    }
    if (*n > 0) {
        h[i] = last;
    }
    return top;
}

/*
 * Merges a long word in O(m log m): a heap of (rank, position) over a
 * linked list of symbols, as HF does.  An entry is stale when its symbol
 * died or its pair changed: the current pair's rank then differs.
 */
static size_t
merge_heap(const tk_bpe *b, int32_t *sym, size_t m, int32_t *next,
    int32_t *prev, heap_item *heap)
{
    size_t     nh = 0, i, k;
    uint64_t   v;
    heap_item  top, it;
    int32_t    j;

    for (i = 0; i < m; i++) {
        next[i] = i + 1 < m ? (int32_t) (i + 1) : -1;
        prev[i] = (int32_t) i - 1;
    }
    for (i = 0; i + 1 < m; i++) {
        v = pair_get(b, sym[i], sym[i + 1]);
        if (v != NO_PAIR) {
            it.rank = (uint32_t) (v >> 32);
            it.pos = (uint32_t) i;
            heap_push(heap, &nh, it);
        }
    }
    while (nh > 0) {
        top = heap_pop(heap, &nh);
        i = top.pos;
        if (sym[i] < 0 || next[i] < 0) {
            continue;
        }
        j = next[i];
        v = pair_get(b, sym[i], sym[j]);
        if (v == NO_PAIR || (uint32_t) (v >> 32) != top.rank) {
            continue;
        }
        sym[i] = (int32_t) (uint32_t) v;
        sym[j] = -1;
        next[i] = next[j];
        if (next[j] >= 0) {
            prev[next[j]] = (int32_t) i;
        }
        if (prev[i] >= 0) {
            v = pair_get(b, sym[prev[i]], sym[i]);
            if (v != NO_PAIR) {
                it.rank = (uint32_t) (v >> 32);
                it.pos = (uint32_t) prev[i];
                heap_push(heap, &nh, it);
            }
        }
        if (next[i] >= 0) {
            v = pair_get(b, sym[i], sym[next[i]]);
            if (v != NO_PAIR) {
                it.rank = (uint32_t) (v >> 32);
                it.pos = (uint32_t) i;
                heap_push(heap, &nh, it);
            }
        }
    }
    /* Symbol 0 never dies: a merge keeps the left position. */
    for (k = 0, j = 0; j >= 0; j = next[j]) {
        sym[k++] = sym[j];
    }
    return k;
}

static int
bpe_vocab_word(const tk_bpe *b, const char *w, size_t n, clef_ids *out,
    int *found)
{
    clef_buf  s = { 0 };
    char      bc[4];
    size_t    i, k;
    int32_t   id;

    *found = 0;
    for (i = 0; i < n; i++) {
        k = tk_byte_char((unsigned char) w[i], bc);
        if (clef_buf_append(&s, bc, k) != 0) {
            clef_buf_free(&s);
            return -1;
        }
    }
    id = tk_strmap_get(&b->vocab, s.data, s.len);
    clef_buf_free(&s);
    if (id >= 0) {
        *found = 1;
        return clef_ids_push(out, id);
    }
    return 0;
}

int
tk_bpe_word(const tk_bpe *b, const char *w, size_t n, clef_ids *out)
{
    int32_t     stack_sym[SHORT_WORD], *sym, *scratch = NULL, id;
    size_t      i, m;
    uint64_t    h = 0;
    int         rc, unk = 0, found;

    if (n == 0) {
        return 0;
    }
    if (b->ignore_merges) {
        if (bpe_vocab_word(b, w, n, out, &found) != 0) {
            return -1;
        }
        if (found) {
            return 0;
        }
    }
    if (n == 1 && b->byte_id[(unsigned char) w[0]] >= 0) {
        return clef_ids_push(out, b->byte_id[(unsigned char) w[0]]);
    }
    if (n <= TK_CACHE_MAX_WORD) {
        h = clef_hash(w, n);
        rc = tk_cache_get(&b->cache, h, w, n, out);
        if (rc != 0) {
            return rc > 0 ? 0 : -1;
        }
    }

    if (n <= SHORT_WORD) {
        sym = stack_sym;
    } else {
        /* sym, next, prev, then a heap of at most 2n entries (each merge
         * pops one and pushes two at most) of 2 int32 each */
        scratch = malloc(n * 7 * sizeof(int32_t));
        if (scratch == NULL) {
            return -1;
        }
        sym = scratch;
    }

    /* Initial symbols; bytes without a vocab entry become unk_token (one
     * per run with fuse_unk) or vanish, as in HF's merge_word. */
    for (i = 0, m = 0; i < n; i++) {
        id = b->byte_id[(unsigned char) w[i]];
        if (id >= 0) {
            if (unk) {
                sym[m++] = b->unk_id;
                unk = 0;
            }
            sym[m++] = id;
        } else if (b->unk_id >= 0) {
            if (unk && !b->fuse_unk) {
                sym[m++] = b->unk_id;
            }
            unk = 1;
        }
    }
    if (unk) {
        sym[m++] = b->unk_id;
    }

    if (m <= SHORT_WORD) {
        m = merge_scan(b, sym, m);
    } else {
        m = merge_heap(b, sym, m, scratch + n, scratch + 2 * n,
                       (heap_item *) (void *) (scratch + 3 * n));
    }

    rc = clef_ids_append(out, sym, m);
    if (rc == 0 && n <= TK_CACHE_MAX_WORD) {
        tk_cache_put(&b->cache, h, w, n, sym, m);
    }
    free(scratch);
    return rc;
}
