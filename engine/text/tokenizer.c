/*
 * A byte-level BPE tokenizer.json, loaded and applied the way HF's
 * tokenizers encodes one sequence without special-token post-processing:
 *
 *   1. added tokens whose normalized flag is off are cut out of the raw text;
 *   2. every remaining piece is normalized (NFC) on its own, then the added
 *      tokens with normalized on are cut out of it;
 *   3. the remaining pieces go through the Split pre-tokenizers in order,
 *      then ByteLevel (prefix space, its own GPT-2 regex when use_regex);
 *   4. each word goes through the BPE model.
 *
 * Text that is not valid UTF-8 is read with U+FFFD for each ill-formed
 * sequence (Python's errors="replace"): HF only ever sees valid strings.
 */
#include "text/tokenizer_impl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct clef_tokenizer {
    tk_bpe      bpe;
    int         nfc;                /* the normalizer is NFC */
    tk_regex   *splits;             /* Split pre-tokenizers, in order */
    size_t      n_splits;
    int         have_byte_level;
    int         add_prefix_space;
    tk_regex    byte_level_re;      /* code NULL unless use_regex */
    tk_trie     raw_trie;           /* added tokens, normalized: false */
    tk_trie     norm_trie;          /* added tokens, normalized: true */
    tk_strmap   added;              /* added token content -> id */
    int32_t     max_id;
    size_t      max_token_bytes;    /* clef_tokenizer_max_token_bytes() */
};

/*
 * A pre-tokenized word longer than this is cut into pieces of at most this
 * many bytes (at UTF-8 character boundaries) before BPE.  BPE over one word
 * costs O(n log n) with a large constant (about 2 MB/s here), so without a
 * cap one 13 MB run of letters held the engine for seconds before it could
 * even be refused.  No natural text has a 64 KiB word (runs of letters,
 * digits one by one, punctuation or whitespace); the reference would merge
 * across the cut, so ids inside such a word may differ from it.
 */
#define TK_MAX_WORD  65536

/* Words up to this long are cheap to encode (mostly cached): they are
 * always counted exactly; the length bound only spares longer ones. */
#define TK_CHEAP_WORD  1024

/* encoder callbacks return this to stop early (not an error) */
#define TK_STOP      1

/* The GPT-2 pattern of ByteLevel's use_regex. */
static const char  gpt2_pattern[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+"
    "|\\s+(?!\\S)|\\s+";

/* The longest vocab entry in raw bytes (a ByteLevel key has one character
 * per byte) or added token; a fused unk token covers any number of bytes. */
static size_t
max_token_bytes(const clef_tokenizer *tk)
{
    const tk_strmap  *m;
    size_t            i, j, n, max = 1;
    const char       *k;
    int               pass;

    if (tk->bpe.unk_id >= 0 && tk->bpe.fuse_unk) {
        return SIZE_MAX;
    }
    for (pass = 0; pass < 2; pass++) {
        m = pass == 0 ? &tk->bpe.vocab : &tk->added;
        for (i = 0; m->slots != NULL && i <= m->mask; i++) {
            if (m->slots[i].val < 0) {
                continue;
            }
            k = m->keys.data + m->slots[i].off;
            n = m->slots[i].len;
            if (pass == 0) {
                /* characters, not bytes: count the UTF-8 lead bytes */
                for (j = 0, n = 0; j < m->slots[i].len; j++) {
                    n += ((unsigned char) k[j] & 0xc0) != 0x80;
                }
            }
            if (n > max) {
                max = n;
            }
        }
    }
    return max;
}

int
tk_fail(clef_error *err, const char *type, const char *what,
    const char *fmt, ...)
{
    char     msg[400];
    va_list  ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return clef_error_set(err, 500, type, NULL, "%s: %s", what, msg);
}

int
tk_oom(clef_error *err)
{
    return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
}

static const char *
type_of(const clef_json *o)
{
    return tk_json_str(clef_json_get(o, "type"));
}

/* ---- normalizer ------------------------------------------------------ */

static int
load_normalizer(clef_tokenizer *tk, const clef_json *n, const char *what,
    clef_error *err)
{
    const char       *type;
    const clef_json  *seq;
    size_t            i;

    if (n == NULL || n->type == CLEF_JSON_NULL) {
        return 0;
    }
    type = type_of(n);
    if (type != NULL && strcmp(type, "NFC") == 0) {
        tk->nfc = 1;
        return 0;
    }
    if (type != NULL && strcmp(type, "Sequence") == 0) {
        seq = clef_json_get(n, "normalizers");
        if (!tk_json_is(seq, CLEF_JSON_ARRAY)) {
            return tk_fail(err, "tokenizer_invalid", what,
                           "normalizer Sequence has no normalizers array");
        }
        /* NFC is idempotent: any number of them is one NFC. */
        for (i = 0; i < seq->len; i++) {
            if (load_normalizer(tk, seq->items[i], what, err) != 0) {
                return -1;
            }
        }
        return 0;
    }
    return tk_fail(err, "tokenizer_unsupported", what,
                   "unsupported normalizer \"%s\" (only NFC, or a Sequence of NFC,"
                   " is supported)", type ? type : "?");
}

/* ---- pre-tokenizer --------------------------------------------------- */

static int
load_split(clef_tokenizer *tk, const clef_json *p, const char *what,
    clef_error *err)
{
    const clef_json  *pat, *s;
    const char       *beh;
    tk_regex         *re;
    int               literal;
    char              name[600];

    if (tk->have_byte_level) {
        return tk_fail(err, "tokenizer_unsupported", what,
                       "a Split pre_tokenizer after ByteLevel is not supported");
    }
    beh = tk_json_str(clef_json_get(p, "behavior"));
    if (beh == NULL || strcmp(beh, "Isolated") != 0) {
        return tk_fail(err, "tokenizer_unsupported", what,
                       "unsupported Split behavior \"%s\" (only Isolated is supported)",
                       beh != NULL ? beh : "?");
    }
    if (!tk_json_is(clef_json_get(p, "invert"), CLEF_JSON_FALSE)) {
        return tk_fail(err, "tokenizer_unsupported", what,
                       "a Split with invert other than false is not supported");
    }
    pat = clef_json_get(p, "pattern");
    literal = 0;
    s = clef_json_get(pat, "Regex");
    if (s == NULL) {
        s = clef_json_get(pat, "String");
        literal = 1;
    }
    if (!tk_json_is(s, CLEF_JSON_STRING)) {
        return tk_fail(err, "tokenizer_invalid", what,
                       "a Split pattern must be {\"Regex\": ...} or {\"String\": ...}");
    }
    re = realloc(tk->splits, (tk->n_splits + 1) * sizeof(*re));
    if (re == NULL) {
        return tk_oom(err);
    }
    tk->splits = re;
    snprintf(name, sizeof(name), "%s: Split pre_tokenizer", what);
    if (tk_regex_compile(&tk->splits[tk->n_splits], s->str, s->len, literal,
                         name, err) != 0)
    {
        return -1;
    }
    tk->n_splits++;
    return 0;
}

static int
load_byte_level(clef_tokenizer *tk, const clef_json *p, const char *what,
    clef_error *err)
{
    const clef_json  *v;

    if (tk->have_byte_level) {
        return tk_fail(err, "tokenizer_unsupported", what,
                       "more than one ByteLevel pre_tokenizer is not supported");
    }
    tk->have_byte_level = 1;
    v = clef_json_get(p, "add_prefix_space");
    tk->add_prefix_space = v == NULL || v->type == CLEF_JSON_TRUE;
    v = clef_json_get(p, "use_regex");
    if (v == NULL || v->type == CLEF_JSON_TRUE) {
        return tk_regex_compile(&tk->byte_level_re, gpt2_pattern,
                                sizeof(gpt2_pattern) - 1, 0, what, err);
    }
    return 0;
}

static int
load_pre_tokenizer(clef_tokenizer *tk, const clef_json *p, const char *what,
    clef_error *err)
{
    const char       *type;
    const clef_json  *seq;
    size_t            i;

    type = type_of(p);
    if (type != NULL && strcmp(type, "ByteLevel") == 0) {
        return load_byte_level(tk, p, what, err);
    }
    if (type != NULL && strcmp(type, "Split") == 0) {
        return load_split(tk, p, what, err);
    }
    if (type != NULL && strcmp(type, "Sequence") == 0) {
        seq = clef_json_get(p, "pretokenizers");
        if (!tk_json_is(seq, CLEF_JSON_ARRAY)) {
            return tk_fail(err, "tokenizer_invalid", what,
                           "pre_tokenizer Sequence has no pretokenizers array");
        }
        for (i = 0; i < seq->len; i++) {
            if (load_pre_tokenizer(tk, seq->items[i], what, err) != 0) {
                return -1;
            }
        }
        return 0;
    }
    return tk_fail(err, "tokenizer_unsupported", what,
                   "unsupported pre_tokenizer \"%s\" (only ByteLevel, and Split"
                   " before it, are supported)", type ? type : "null");
}

/* ---- added tokens ---------------------------------------------------- */

typedef struct {
    const char  *content;
    size_t       len;
    int          special, normalized, single_word, lstrip, rstrip;
} added_token;

typedef struct {
    int32_t  id;
    size_t   token;          /* index into the token list */
} id_token;

static int
same_token(const added_token *a, const added_token *b)
{
    return a->len == b->len && memcmp(a->content, b->content, a->len) == 0
           && a->special == b->special && a->normalized == b->normalized
           && a->single_word == b->single_word && a->lstrip == b->lstrip
           && a->rstrip == b->rstrip;
}

static int
flag(const clef_json *o, const char *key, int dflt)
{
    const clef_json  *v = clef_json_get(o, key);

    return v == NULL ? dflt : v->type == CLEF_JSON_TRUE;
}

/*
 * HF's AddedVocabulary, fed token by token as its deserializer does: the
 * id of a token is its earlier id, else its vocab id, else the next free id
 * after the vocab and the added tokens; the id stated in the file is not
 * used.  The matchers hold the special tokens, then the others, in the
 * order they first came; the flags of a match are those of its id.
 */
static int
load_added(clef_tokenizer *tk, const clef_json *list, const char *what,
    clef_error *err)
{
    added_token   *toks = NULL;
    size_t        *order = NULL, n_order = 0, n, i, r, n_r = 0;
    id_token      *rev = NULL;
    tk_strmap      special = { 0 };
    const clef_json *o, *c;
    int32_t        id, amax = -1;
    const size_t   vocab_len = tk->bpe.vocab_len;
    clef_buf       norm = { 0 };
    tk_nfc_scratch sc = { 0 };
    const added_token *t;
    uint8_t        fl;
    int            rc = -1;

    if (list == NULL || list->type == CLEF_JSON_NULL) {
        return 0;
    }
    if (list->type != CLEF_JSON_ARRAY) {
        return tk_fail(err, "tokenizer_invalid", what, "added_tokens is not an array");
    }
    n = list->len;
    toks = calloc(n + 1, sizeof(*toks));
    order = calloc(2 * n + 1, sizeof(*order));
    rev = calloc(n + 1, sizeof(*rev));
    if (toks == NULL || order == NULL || rev == NULL) {
        tk_oom(err);
        goto done;
    }
    for (i = 0; i < n; i++) {
        o = list->items[i];
        c = clef_json_get(o, "content");
        if (!tk_json_is(c, CLEF_JSON_STRING)) {
            tk_fail(err, "tokenizer_invalid", what,
                    "added_tokens[%zu] has no string content", i);
            goto done;
        }
        toks[i].content = c->str;
        toks[i].len = c->len;
        toks[i].special = flag(o, "special", 0);
        toks[i].normalized = flag(o, "normalized", !toks[i].special);
        toks[i].single_word = flag(o, "single_word", 0);
        toks[i].lstrip = flag(o, "lstrip", 0);
        toks[i].rstrip = flag(o, "rstrip", 0);
    }

    /* Specials first in the matcher order: mark them, then fill order. */
    for (i = 0; i < n; i++) {
        t = &toks[i];
        if (t->special && t->len > 0
            && tk_strmap_get(&special, t->content, t->len) < 0)
        {
            if (tk_strmap_put(&special, t->content, t->len, (int32_t) n_order) != 0) {
                tk_oom(err);
                goto done;
            }
            order[n_order++] = i;
        }
        if (t->len == 0) {
            continue;
        }
        for (r = 0; r < n_r; r++) {
            if (same_token(&toks[rev[r].token], t)) {
                break;
            }
        }
        if (r < n_r) {
            continue;
        }
        id = tk_strmap_get(&tk->added, t->content, t->len);
        if (id < 0) {
            id = tk_strmap_get(&tk->bpe.vocab, t->content, t->len);
        }
        if (id < 0) {
            if (amax < 0) {
                id = (int32_t) vocab_len;
            } else {
                id = ((size_t) amax >= vocab_len || vocab_len == 0)
                     ? amax + 1 : (int32_t) vocab_len;
            }
        }
        if (tk_strmap_put(&tk->added, t->content, t->len, id) != 0) {
            tk_oom(err);
            goto done;
        }
        amax = id > amax ? id : amax;
        for (r = 0; r < n_r && rev[r].id != id; r++) {
            /* void */
        }
        rev[r].id = id;
        rev[r].token = i;
        if (r == n_r) {
            n_r++;
        }
        if (tk_strmap_get(&special, t->content, t->len) < 0) {
            order[n + i] = i + 1;       /* a non-special one, in order */
        }
        if (id > tk->max_id) {
            tk->max_id = id;
        }
    }
    for (i = 0; i < n; i++) {
        if (order[n + i] != 0) {
            order[n_order++] = order[n + i] - 1;
        }
    }

    for (i = 0; i < n_order; i++) {
        t = &toks[order[i]];
        id = tk_strmap_get(&tk->added, t->content, t->len);
        for (r = 0; r < n_r && rev[r].id != id; r++) {
            /* void */
        }
        fl = 0;
        if (r < n_r) {
            fl = (toks[rev[r].token].single_word ? TK_ADDED_SINGLE_WORD : 0)
                 | (toks[rev[r].token].lstrip ? TK_ADDED_LSTRIP : 0)
                 | (toks[rev[r].token].rstrip ? TK_ADDED_RSTRIP : 0);
        }
        if (!t->normalized) {
            rc = tk_trie_add(&tk->raw_trie, t->content, t->len, id, fl);
        } else if (tk->nfc) {
            norm.len = 0;
            rc = tk_utf8_valid_prefix(t->content, t->len) == t->len
                 ? tk_nfc_append(t->content, t->len, &norm, &sc) : -1;
            if (rc == 0) {
                rc = tk_trie_add(&tk->norm_trie, norm.data, norm.len, id, fl);
            }
        } else {
            rc = tk_trie_add(&tk->norm_trie, t->content, t->len, id, fl);
        }
        if (rc != 0) {
            tk_oom(err);
            goto done;
        }
    }
    rc = 0;

done:
    free(toks);
    free(order);
    free(rev);
    tk_strmap_free(&special);
    clef_buf_free(&norm);
    tk_nfc_scratch_free(&sc);
    return rc;
}

/* ---- loading --------------------------------------------------------- */

/* A stream's bytes, to its end, in one allocation (NULL with errno). */
static char *
tk_read_file(FILE *f, size_t *len)
{
    char    *buf = NULL, *more;
    size_t   cap = 0, n = 0, got;

    for ( ;; ) {
        if (n == cap) {
            cap = cap ? cap * 2 : 1 << 20;
            more = realloc(buf, cap);
            if (more == NULL) {
                free(buf);
                errno = ENOMEM;
                return NULL;
            }
            buf = more;
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            break;
        }
    }
    if (ferror(f)) {
        free(buf);
        errno = EIO;
        return NULL;
    }
    *len = n;
    return buf;
}

/*
 * The text's arena: a tokenizer.json of 151k vocab entries and merges makes
 * some 25 MB of tree, freed in one go once the tokenizer is built from it.
 */
#define TK_ARENA_BLOCK  (4 << 20)

clef_tokenizer *
tk_from_text(const char *text, size_t len, const char *what, clef_error *err)
{
    clef_tokenizer   *tk = NULL;
    const clef_json  *root;
    clef_arena        arena;
    clef_error        jerr;

    clef_arena_init(&arena, TK_ARENA_BLOCK);
    root = clef_json_parse(&arena, text, len, &jerr);
    if (root == NULL) {
        if (jerr.status == 422) {
            /* "invalid JSON at byte N: why" */
            tk_fail(err, "tokenizer_invalid", what, "%s", jerr.message);
        } else {
            tk_oom(err);
        }
    } else if (root->type != CLEF_JSON_OBJECT) {
        tk_fail(err, "tokenizer_invalid", what, "the top level is not an object");
    } else {
        tk = tk_from_json(root, what, err);
    }
    clef_arena_free(&arena);
    return tk;
}

clef_tokenizer *
clef_tokenizer_load(const char *path, clef_error *err)
{
    clef_tokenizer  *tk;
    FILE            *f;
    struct stat      st;
    char            *text;
    size_t           len;
    char             file[4096], what[4200];

    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(file, sizeof(file), "%s/tokenizer.json", path);
    } else {
        snprintf(file, sizeof(file), "%s", path);
    }
    snprintf(what, sizeof(what), "tokenizer '%s'", file);
    f = fopen(file, "rb");
    if (f == NULL) {
        clef_error_set(err, 500, "tokenizer_missing", NULL,
                       "cannot open tokenizer '%s': %s", file, strerror(errno));
        return NULL;
    }
    /* read whole, then parsed from memory (the parser wants it so) */
    text = tk_read_file(f, &len);
    fclose(f);
    if (text == NULL) {
        clef_error_set(err, 500, "tokenizer_invalid", NULL,
                       "%s: cannot read it whole: %s", what, strerror(errno));
        return NULL;
    }
    tk = tk_from_text(text, len, what, err);
    free(text);
    return tk;
}

clef_tokenizer *
tk_from_json(const clef_json *root, const char *what, clef_error *err)
{
    clef_tokenizer   *tk;
    const clef_json  *model;

    tk = calloc(1, sizeof(*tk));
    if (tk == NULL) {
        tk_oom(err);
        return NULL;
    }
    tk->max_id = -1;
    model = clef_json_get(root, "model");
    if (!tk_json_is(model, CLEF_JSON_OBJECT)) {
        tk_fail(err, "tokenizer_invalid", what, "there is no model object");
        goto fail;
    }
    if (tk_bpe_load(&tk->bpe, model, what, err) != 0) {
        goto fail;
    }
    tk->max_id = tk->bpe.max_id;
    if (load_normalizer(tk, clef_json_get(root, "normalizer"), what, err)
        != 0)
    {
        goto fail;
    }
    if (load_pre_tokenizer(tk, clef_json_get(root, "pre_tokenizer"), what, err)
        != 0)
    {
        goto fail;
    }
    if (!tk->have_byte_level) {
        tk_fail(err, "tokenizer_unsupported", what,
                "the pre_tokenizer has no ByteLevel step: not a byte-level BPE");
        goto fail;
    }
    if (load_added(tk, clef_json_get(root, "added_tokens"), what, err) != 0) {
        goto fail;
    }
    tk->max_token_bytes = max_token_bytes(tk);
    return tk;

fail:
    clef_tokenizer_free(tk);
    return NULL;
}

void
clef_tokenizer_free(clef_tokenizer *tk)
{
    size_t  i;

    if (tk == NULL) {
        return;
    }
    tk_bpe_free(&tk->bpe);
    for (i = 0; i < tk->n_splits; i++) {
        tk_regex_free(&tk->splits[i]);
    }
    free(tk->splits);
    tk_regex_free(&tk->byte_level_re);
    tk_trie_free(&tk->raw_trie);
    tk_trie_free(&tk->norm_trie);
    tk_strmap_free(&tk->added);
    free(tk);
}

/* ---- encoding -------------------------------------------------------- */

typedef struct {
    const clef_tokenizer  *tk;
    tk_thread             *th;
    clef_ids              *out;
    size_t                 base;        /* out->n when this text began */
    size_t                 max_ids;     /* clef_tk_limit */
    size_t                 hopeless_ids;
    clef_buf               norm;        /* one NFC'd piece */
    clef_buf               word;        /* a piece with its prefix space */
    tk_nfc_scratch         nfc;
} encoder;

typedef struct {
    encoder  *e;
    size_t    level;                    /* the next Split to apply */
} split_level;

/* More ids than the caller allows for this text? */
static int
over(const encoder *e)
{
    return e->out->n - e->base > e->max_ids;
}

/* Where to cut a long word: at most TK_MAX_WORD bytes, on a character
 * boundary when there is one nearby. */
static size_t
word_cut(const char *s, size_t n)
{
    size_t  cut = TK_MAX_WORD;

    if (n <= cut) {
        return n;
    }
    while (cut > TK_MAX_WORD - 4 && ((unsigned char) s[cut] & 0xc0) == 0x80) {
        cut--;
    }
    return ((unsigned char) s[cut] & 0xc0) == 0x80 ? TK_MAX_WORD : cut;
}

static int
on_word(void *ctx, const char *s, size_t n)
{
    encoder  *e = ctx;
    size_t    cut, bound;

    if (n > TK_CHEAP_WORD && e->hopeless_ids != SIZE_MAX
        && e->tk->max_token_bytes != SIZE_MAX)
    {
        /* every id stands for max_token_bytes bytes at most */
        bound = (n + e->tk->max_token_bytes - 1) / e->tk->max_token_bytes;
        if (e->out->n - e->base + bound > e->hopeless_ids) {
            return TK_STOP;
        }
    }
    while (n > 0) {
        cut = word_cut(s, n);
        if (tk_bpe_word(&e->tk->bpe, s, cut, e->out) != 0) {
            return -1;
        }
        if (over(e)) {
            return TK_STOP;
        }
        s += cut;
        n -= cut;
    }
    return 0;
}

/* An added token matched in the text. */
static int
push_added(encoder *e, int32_t id)
{
    if (clef_ids_push(e->out, id) != 0) {
        return -1;
    }
    return over(e) ? TK_STOP : 0;
}

static int
byte_level(encoder *e, const char *s, size_t n)
{
    const clef_tokenizer  *tk = e->tk;

    if (tk->add_prefix_space && s[0] != ' ') {
        e->word.len = 0;
        if (clef_buf_putc(&e->word, ' ') != 0
            || clef_buf_append(&e->word, s, n) != 0)
        {
            return -1;
        }
        s = e->word.data;
        n = e->word.len;
    }
    if (tk->byte_level_re.code != NULL) {
        return tk_regex_split(&tk->byte_level_re, e->th, s, n, on_word, e);
    }
    return on_word(e, s, n);
}

static int
on_split_piece(void *ctx, const char *s, size_t n)
{
    split_level  *l = ctx, next;

    if (l->level == l->e->tk->n_splits) {
        return byte_level(l->e, s, n);
    }
    next.e = l->e;
    next.level = l->level + 1;
    return tk_regex_split(&l->e->tk->splits[l->level], l->e->th, s, n,
                          on_split_piece, &next);
}

static int
on_normalized(void *ctx, int32_t id, const char *s, size_t n)
{
    encoder      *e = ctx;
    split_level   l;

    if (id >= 0) {
        return push_added(e, id);
    }
    l.e = e;
    l.level = 0;
    return on_split_piece(&l, s, n);
}

static int
on_raw(void *ctx, int32_t id, const char *s, size_t n)
{
    encoder  *e = ctx;

    if (id >= 0) {
        return push_added(e, id);
    }
    if (e->tk->nfc) {
        e->norm.len = 0;
        if (tk_nfc_append(s, n, &e->norm, &e->nfc) != 0) {
            return -1;
        }
        s = e->norm.data;
        n = e->norm.len;
    }
    if (e->tk->norm_trie.n_patterns == 0) {
        return n > 0 ? on_normalized(e, -1, s, n) : 0;
    }
    return tk_added_split(&e->tk->norm_trie, e->th, s, n, on_normalized, e);
}

int
clef_tokenizer_encode(const clef_tokenizer *tk, const char *text, size_t len,
    clef_ids *out)
{
    clef_tk_limit  none = { SIZE_MAX, SIZE_MAX };

    return clef_tokenizer_encode_max(tk, text, len, &none, out) < 0 ? -1 : 0;
}

int
clef_tokenizer_encode_max(const clef_tokenizer *tk, const char *text,
    size_t len, const clef_tk_limit *limit, clef_ids *out)
{
    encoder   e;
    clef_buf  fixed = { 0 };
    int       rc;

    if (len == 0) {
        return 0;
    }
    memset(&e, 0, sizeof(e));
    e.tk = tk;
    e.out = out;
    e.base = out->n;
    e.max_ids = limit->max_ids;
    e.hopeless_ids = limit->hopeless_ids;
    e.th = tk_thread_get();
    if (e.th == NULL) {
        return -1;
    }
    if (tk_utf8_valid_prefix(text, len) != len) {
        if (tk_utf8_repair(text, len, &fixed) != 0) {
            clef_buf_free(&fixed);
            return -1;
        }
        text = fixed.data;
        len = fixed.len;
    }
    if (tk->raw_trie.n_patterns == 0) {
        rc = on_raw(&e, -1, text, len);
    } else {
        rc = tk_added_split(&tk->raw_trie, e.th, text, len, on_raw, &e);
    }
    clef_buf_free(&fixed);
    clef_buf_free(&e.norm);
    clef_buf_free(&e.word);
    tk_nfc_scratch_free(&e.nfc);
    return rc == 0 ? 0 : rc == TK_STOP ? 1 : -1;
}

size_t
clef_tokenizer_max_token_bytes(const clef_tokenizer *tk)
{
    return tk->max_token_bytes;
}

int32_t
clef_tokenizer_token_id(const clef_tokenizer *tk, const char *content)
{
    size_t   n = strlen(content);
    int32_t  id;

    id = tk_strmap_get(&tk->added, content, n);
    return id >= 0 ? id : tk_strmap_get(&tk->bpe.vocab, content, n);
}

size_t
clef_tokenizer_vocab_size(const clef_tokenizer *tk)
{
    return (size_t) (tk->max_id + 1);
}
