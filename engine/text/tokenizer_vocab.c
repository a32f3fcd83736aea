/*
 * A GGUF vocabulary (tokenizer.h, clef_tokenizer_from_vocab) turned back
 * into the tokenizer.json llama.cpp's converter read it from, and loaded
 * through the one tokenizer.json path: the same ids and spans, by
 * construction, wherever the vocabulary carries what the tokenizer.json
 * held.
 */
#include "text/tokenizer_impl.h"

#include <string.h>

/* The pre-tokenizers GGUF names, as their tokenizer.json spells them
 * (llama.cpp's llama-vocab.cpp quotes each "original regex from
 * tokenizer.json" beside its own translation). */
static const struct {
    const char  *name;
    const char  *regex;
} pres[] = {
    { "qwen2",
      "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}|"
      " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" },
    { "qwen35",
      "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|"
      "\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)"
      "|\\s+" },
};

static json_t *
pre_tokenizer(const char *regex)
{
    return json_pack("{s:s, s:[{s:s, s:{s:s}, s:s, s:b}, {s:s, s:b, s:b, s:b}]}",
                     "type", "Sequence", "pretokenizers",
                     "type", "Split", "pattern", "Regex", regex,
                     "behavior", "Isolated", "invert", 0,
                     "type", "ByteLevel", "add_prefix_space", 0,
                     "trim_offsets", 0, "use_regex", 0);
}

static int
build(const clef_tokenizer_vocab *v, json_t *vocab, json_t *merges,
    json_t *added, json_t *model)
{
    json_t   *t;
    size_t    i;
    int32_t   type;

    for (i = 0; i < v->n_tokens; i++) {
        type = v->types != NULL ? v->types[i] : CLEF_TOKEN_NORMAL;
        if (type == CLEF_TOKEN_UNUSED) {
            continue;
        }
        if (type == CLEF_TOKEN_CONTROL || type == CLEF_TOKEN_USER_DEFINED) {
            t = json_pack("{s:I, s:s%, s:b, s:b, s:b, s:b, s:b}",
                          "id", (json_int_t) i, "content", v->tokens[i],
                          v->token_len[i], "special",
                          type == CLEF_TOKEN_CONTROL, "normalized", 0,
                          "lstrip", 0, "rstrip", 0, "single_word", 0);
            if (t == NULL || json_array_append_new(added, t) != 0) {
                return -1;
            }
            continue;
        }
        if (type == CLEF_TOKEN_UNKNOWN
            && json_object_set_new(model, "unk_token",
                                   json_stringn(v->tokens[i], v->token_len[i]))
               != 0)
        {
            return -1;
        }
        if (json_object_setn_new_nocheck(vocab, v->tokens[i], v->token_len[i],
                                         json_integer((json_int_t) i)) != 0)
        {
            return -1;
        }
    }
    for (i = 0; i < v->n_merges; i++) {
        if (json_array_append_new(merges, json_stringn(v->merges[i],
                                                       v->merge_len[i])) != 0)
        {
            return -1;
        }
    }
    return 0;
}

clef_tokenizer *
clef_tokenizer_from_vocab(const clef_tokenizer_vocab *v, const char *what,
    clef_error *err)
{
    clef_tokenizer  *tk = NULL;
    json_t          *root, *model, *vocab, *merges, *added, *pre;
    size_t           i;

    for (i = 0; i < sizeof(pres) / sizeof(pres[0]); i++) {
        if (v->pre != NULL && strcmp(v->pre, pres[i].name) == 0) {
            break;
        }
    }
    if (i == sizeof(pres) / sizeof(pres[0])) {
        tk_fail(err, "tokenizer_unsupported", what, "the pre-tokenizer \"%s\""
                " is not supported (\"qwen2\" and \"qwen35\" are)",
                v->pre != NULL ? v->pre : "(none)");
        return NULL;
    }
    vocab = json_object();
    merges = json_array();
    added = json_array();
    pre = pre_tokenizer(pres[i].regex);
    model = json_pack("{s:s, s:o, s:o, s:b, s:b, s:b}", "type", "BPE",
                      "vocab", vocab, "merges", merges, "fuse_unk", 0,
                      "byte_fallback", 0, "ignore_merges", 0);
    root = json_pack("{s:o, s:{s:s}, s:o, s:o}", "model", model,
                     "normalizer", "type", "NFC", "pre_tokenizer", pre,
                     "added_tokens", added);
    if (root == NULL || build(v, vocab, merges, added, model) != 0) {
        tk_oom(err);
    } else {
        tk = tk_from_json(root, what, err);
    }
    json_decref(root);
    return tk;
}
