/*
 * Internals of the byte-level BPE tokenizer (tokenizer.h), shared by its
 * files:
 *   tokenizer.c          loading tokenizer.json, the encode pipeline
 *   tokenizer_vocab.c    the tokenizer.json a GGUF vocabulary stands for
 *   tokenizer_map.c      the string -> id map
 *   tokenizer_added.c    added tokens: leftmost-longest matching + flags
 *   tokenizer_unicode.c  UTF-8 checks, White_Space / word characters, NFC
 *   tokenizer_regex.c    Oniguruma -> PCRE2 pattern translation, splitting
 *   bpe.c                the BPE model: vocab, merges by rank
 *   bpe_cache.c          the word cache shared by concurrent encoders
 * Nothing here is part of libclef's contract.
 */
#ifndef CLEF_TOKENIZER_IMPL_H
#define CLEF_TOKENIZER_IMPL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifndef PCRE2_CODE_UNIT_WIDTH
#define PCRE2_CODE_UNIT_WIDTH 8
#endif
#include <pcre2.h>

#include "base/buf.h"
#include "base/error.h"
#include "base/hash.h"
#include "text/json.h"
#include "text/tokenizer.h"


/* ---- tokenizer.c ----------------------------------------------------- */

/* A 500 error of the given type, its message "what: fmt...", what naming
 * the file. */
int tk_fail(clef_error *err, const char *type, const char *what,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* The 500 "out_of_memory" error for a failed allocation. */
int tk_oom(clef_error *err);

/* A tokenizer from the text of a tokenizer.json, parsed by text/json.h
 * into an arena freed before the return; what names its source in
 * messages.  tokenizer_vocab.c writes one for GGUF's vocabularies. */
clef_tokenizer *tk_from_text(const char *text, size_t len, const char *what,
    clef_error *err);

/* The same from the parsed tree, an object (root is not kept). */
clef_tokenizer *tk_from_json(const clef_json *root, const char *what,
    clef_error *err);

/* The tree's values are read as jansson's accessors did: an absent member
 * (NULL) has no type, and JSON null is a value of its own. */
static inline int
tk_json_is(const clef_json *v, clef_json_type type)
{
    return v != NULL && v->type == type;
}

/* The string of v as a C string, for names compared with strcmp(); NULL
 * for no string, or one with a NUL inside ("NFC\u0000x" is not "NFC";
 * jansson refused any \u0000). */
static inline const char *
tk_json_str(const clef_json *v)
{
    return tk_json_is(v, CLEF_JSON_STRING) && memchr(v->str, 0, v->len) == NULL
           ? v->str : NULL;
}


/* ---- tokenizer_map.c ------------------------------------------------- */

typedef struct {
    uint32_t  off;       /* key bytes at keys.data + off */
    uint32_t  len;
    uint32_t  hash;
    int32_t   val;       /* -1: empty slot */
} tk_strmap_slot;

/* Open addressing, keys copied into one buffer.  A put of an existing key
 * replaces its value (the last one wins, as in a Rust HashMap collect). */
typedef struct {
    tk_strmap_slot  *slots;
    size_t           mask;
    size_t           used;
    clef_buf         keys;
} tk_strmap;

int     tk_strmap_put(tk_strmap *m, const char *k, size_t n, int32_t val);
int32_t tk_strmap_get(const tk_strmap *m, const char *k, size_t n);
void    tk_strmap_free(tk_strmap *m);


/* ---- tokenizer_unicode.c --------------------------------------------- */

/* Length of the valid UTF-8 prefix of s[0..n). */
size_t tk_utf8_valid_prefix(const char *s, size_t n);

/* Appends s with every ill-formed sequence replaced by U+FFFD (one per
 * maximal subpart, as Python's errors="replace" does). */
int tk_utf8_repair(const char *s, size_t n, clef_buf *out);

/* Decodes the code point at s[0..n) (valid UTF-8, n > 0); sets *len. */
uint32_t tk_utf8_decode(const char *s, size_t n, size_t *len);

/* Start of the last code point of s[0..n), n > 0. */
size_t tk_utf8_last(const char *s, size_t n);

/* Unicode White_Space: Rust's char::is_whitespace and regex \s. */
int tk_is_white_space(uint32_t cp);

/* Appends the NFC form of s[0..n) (valid UTF-8).  scratch is reused
 * between calls.  Returns 0, -1 on allocation failure. */
typedef struct {
    int32_t  *v;            /* code points */
    size_t    cap;
    int32_t  *tmp;          /* for sorting long runs of combining marks */
    size_t    tmp_cap;
} tk_nfc_scratch;

int  tk_nfc_append(const char *s, size_t n, clef_buf *out, tk_nfc_scratch *sc);
void tk_nfc_scratch_free(tk_nfc_scratch *sc);

/* The code point GPT-2's ByteLevel maps byte b onto, as UTF-8 (1-2 bytes). */
size_t tk_byte_char(unsigned b, char out[4]);


/* ---- tokenizer_regex.c ----------------------------------------------- */

/* Per-thread PCRE2 state: match data and a JIT stack that grows on demand. */
typedef struct {
    pcre2_match_data     *md;
    pcre2_match_context  *mc;
    pcre2_jit_stack      *js;
    size_t                js_size;
} tk_thread;

tk_thread *tk_thread_get(void);

/* A compiled split pattern. */
typedef struct {
    pcre2_code  *code;
    int          jit;           /* JIT-compiled: use pcre2_jit_match */
} tk_regex;

/* Compiles an Oniguruma (Ruby syntax) pattern, as HF's tokenizers would,
 * into PCRE2 with the same meaning; literal: the pattern is a plain string
 * (Split {"String": ...}).  what names the pattern in error messages. */
int  tk_regex_compile(tk_regex *re, const char *pat, size_t n, int literal,
    const char *what, clef_error *err);
void tk_regex_free(tk_regex *re);

/* Iterates the matches of re over s[0..n) like the onig crate's find_iter
 * (an empty match right after the previous match is skipped) and calls
 * piece() on every non-empty match and every non-empty gap between them,
 * in order: the Isolated split behaviour.  Returns piece()'s first non-zero
 * value, -1 on a match error, else 0. */
typedef int (*tk_piece_fn)(void *ctx, const char *s, size_t n);

int tk_regex_split(const tk_regex *re, tk_thread *th, const char *s, size_t n,
    tk_piece_fn piece, void *ctx);

/* 1 when the code point at s[0..n) (valid UTF-8, n > 0) is a word
 * character of Rust's regex \w, which HF's single_word test uses; 0 when
 * not, -1 on error. */
int tk_is_word_char(tk_thread *th, const char *s, size_t n);


/* ---- tokenizer_added.c ----------------------------------------------- */

typedef struct {
    int32_t   first_child;
    int32_t   next_sibling;
    int32_t   pattern;        /* index into tk_trie.ids, -1: none */
    uint8_t   byte;
} tk_trie_node;

/* The patterns of one of HF's two added-token automata (raw text, and
 * normalized text), matched leftmost-longest without overlaps. */
typedef struct {
    tk_trie_node  *nodes;
    size_t         n_nodes;
    size_t         cap_nodes;
    int32_t        root[256];       /* child of the root per first byte */
    int32_t       *ids;             /* per pattern: token id */
    uint8_t       *flags;           /* per pattern: TK_ADDED_* of that id */
    size_t         n_patterns;
    int            first_byte;      /* the only first byte, or -1 */
} tk_trie;

enum {
    TK_ADDED_SINGLE_WORD = 1,
    TK_ADDED_LSTRIP      = 2,
    TK_ADDED_RSTRIP      = 4
};

int  tk_trie_add(tk_trie *t, const char *s, size_t n, int32_t id, uint8_t flags);
void tk_trie_free(tk_trie *t);

/* HF AddedVocabulary::find_matches: cuts s[0..n) into added tokens
 * (seg(ctx, id, s+a, b-a) with id >= 0) and the text between them (id -1),
 * applying single_word, lstrip and rstrip.  Empty text pieces are not
 * reported. */
typedef int (*tk_seg_fn)(void *ctx, int32_t id, const char *s, size_t n);

int tk_added_split(const tk_trie *t, tk_thread *th, const char *s, size_t n,
    tk_seg_fn seg, void *ctx);


/* ---- bpe_cache.c ----------------------------------------------------- */

#define TK_CACHE_SHARDS     64
#define TK_CACHE_SLOTS      1024        /* per shard, a power of two */
#define TK_CACHE_MAX_WORD   128         /* longer words are not cached */

typedef struct {
    uint64_t   hash;
    uint32_t  *entry;     /* [klen, nids, ids..., key bytes...]; NULL: empty */
} tk_cache_slot;

typedef struct {
    pthread_mutex_t  lock;
    size_t           used;
    tk_cache_slot    slots[TK_CACHE_SLOTS];
} tk_cache_shard;

typedef struct {
    tk_cache_shard  *shards;        /* TK_CACHE_SHARDS */
} tk_cache;

int  tk_cache_init(tk_cache *c);
void tk_cache_free(tk_cache *c);
/* The cache is internally locked: a const tokenizer may fill it.
 * Appends the cached ids of word to out: 1 on a hit, 0 on a miss, -1 on
 * allocation failure. */
int  tk_cache_get(const tk_cache *c, uint64_t hash, const char *word, size_t n,
    clef_ids *out);
/* Best effort: a failed allocation only means the word is not cached. */
void tk_cache_put(const tk_cache *c, uint64_t hash, const char *word, size_t n,
    const int32_t *ids, size_t nids);


/* ---- bpe.c ----------------------------------------------------------- */

typedef struct {
    uint64_t  key;              /* left << 32 | right; UINT64_MAX: empty */
    uint64_t  val;              /* rank << 32 | merged id */
} tk_pair;

typedef struct {
    tk_strmap   vocab;          /* byte-level token string -> id */
    size_t      vocab_len;      /* entries, HF's get_vocab_size() */
    int32_t     max_id;
    int32_t     byte_id[256];   /* id of each byte's ByteLevel char, -1 */
    tk_pair    *pairs;          /* merges, open addressing */
    size_t      pair_mask;
    int32_t     unk_id;         /* -1: no unk_token */
    int         fuse_unk;
    int         ignore_merges;
    tk_cache    cache;
} tk_bpe;

/* model is an object; what names the file in messages. */
int  tk_bpe_load(tk_bpe *b, const clef_json *model, const char *what,
    clef_error *err);
void tk_bpe_free(tk_bpe *b);

/* Appends the ids of one pre-tokenized word (raw bytes, before the
 * ByteLevel mapping). */
int  tk_bpe_word(const tk_bpe *b, const char *w, size_t n, clef_ids *out);

#endif
