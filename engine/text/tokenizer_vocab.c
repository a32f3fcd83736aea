/*
 * A GGUF vocabulary (tokenizer.h, clef_tokenizer_from_vocab) turned back
 * into the tokenizer.json llama.cpp's converter read it from, and loaded
 * through the one tokenizer.json path: the same ids and spans, by
 * construction, wherever the vocabulary carries what the tokenizer.json
 * held.  The file's text is written and parsed as a file's would be: one
 * loader and one set of checks, for about what building a jansson tree of
 * it cost (nginx -t on a GGUF of Qwen3's 151k tokens takes the same time).
 */
#include "text/tokenizer_impl.h"

#include <stdint.h>
#include <string.h>

#include "text/render.h"

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

/* The vocab object: the tokens that are neither added nor unused, each
 * once with its last id (a repeated token's last id wins, as when the
 * vocab was a map filled in id order). */
static int
put_vocab(clef_buf *b, const clef_tokenizer_vocab *v, tk_strmap *last)
{
    size_t   i;
    int32_t  type;
    int      first = 1;

    for (i = 0; i < v->n_tokens; i++) {
        type = v->types != NULL ? v->types[i] : CLEF_TOKEN_NORMAL;
        if (type == CLEF_TOKEN_UNUSED || type == CLEF_TOKEN_CONTROL
            || type == CLEF_TOKEN_USER_DEFINED)
        {
            continue;
        }
        /* past INT32_MAX: written, for the loader to refuse the id */
        if (i <= INT32_MAX
            && tk_strmap_get(last, v->tokens[i], v->token_len[i])
               != (int32_t) i)
        {
            continue;
        }
        if ((!first && clef_buf_putc(b, ',') != 0)
            || clef_render_string(b, v->tokens[i], v->token_len[i]) != 0
            || clef_buf_printf(b, ":%zu", i) != 0)
        {
            return -1;
        }
        first = 0;
    }
    return 0;
}

static int
put_added(clef_buf *b, const clef_tokenizer_vocab *v)
{
    size_t   i;
    int32_t  type;
    int      first = 1;

    for (i = 0; i < v->n_tokens; i++) {
        type = v->types != NULL ? v->types[i] : CLEF_TOKEN_NORMAL;
        if (type != CLEF_TOKEN_CONTROL && type != CLEF_TOKEN_USER_DEFINED) {
            continue;
        }
        if (clef_buf_printf(b, "%s{\"id\":%zu,\"content\":", first ? "" : ",",
                            i) != 0
            || clef_render_string(b, v->tokens[i], v->token_len[i]) != 0
            || clef_buf_printf(b, ",\"special\":%s,\"normalized\":false,"
                               "\"lstrip\":false,\"rstrip\":false,"
                               "\"single_word\":false}",
                               type == CLEF_TOKEN_CONTROL ? "true" : "false")
               != 0)
        {
            return -1;
        }
        first = 0;
    }
    return 0;
}

/*
 * The tokenizer.json text.  The tokens go in as they are: a string that
 * is not UTF-8 could not be written, so it is refused here, by its index
 * (1: err is set).
 */
static int
write_json(clef_buf *b, const clef_tokenizer_vocab *v, const char *regex,
    const char *what, clef_error *err)
{
    tk_strmap  last = { 0 };
    size_t     i, unk = SIZE_MAX;
    int32_t    type;
    int        rc = -1;

    for (i = 0; i < v->n_tokens; i++) {
        type = v->types != NULL ? v->types[i] : CLEF_TOKEN_NORMAL;
        if (type == CLEF_TOKEN_UNUSED) {
            continue;
        }
        if (tk_utf8_valid_prefix(v->tokens[i], v->token_len[i])
            != v->token_len[i])
        {
            tk_fail(err, "tokenizer_invalid", what,
                    "token %zu is not valid UTF-8", i);
            rc = 1;
            goto done;
        }
        if (type == CLEF_TOKEN_CONTROL || type == CLEF_TOKEN_USER_DEFINED) {
            continue;
        }
        if (type == CLEF_TOKEN_UNKNOWN) {
            unk = i;
        }
        if (i <= INT32_MAX
            && tk_strmap_put(&last, v->tokens[i], v->token_len[i],
                             (int32_t) i) != 0)
        {
            goto done;
        }
    }
    for (i = 0; i < v->n_merges; i++) {
        if (tk_utf8_valid_prefix(v->merges[i], v->merge_len[i])
            != v->merge_len[i])
        {
            tk_fail(err, "tokenizer_invalid", what,
                    "merge %zu is not valid UTF-8", i);
            rc = 1;
            goto done;
        }
    }

    if (clef_buf_printf(b, "{\"model\":{\"type\":\"BPE\",\"vocab\":{") != 0
        || put_vocab(b, v, &last) != 0
        || clef_buf_printf(b, "},\"merges\":[") != 0)
    {
        goto done;
    }
    for (i = 0; i < v->n_merges; i++) {
        if ((i > 0 && clef_buf_putc(b, ',') != 0)
            || clef_render_string(b, v->merges[i], v->merge_len[i]) != 0)
        {
            goto done;
        }
    }
    if (clef_buf_printf(b, "],\"fuse_unk\":false,\"byte_fallback\":false,"
                        "\"ignore_merges\":false") != 0
        || (unk != SIZE_MAX
            && (clef_buf_printf(b, ",\"unk_token\":") != 0
                || clef_render_string(b, v->tokens[unk], v->token_len[unk])
                   != 0))
        || clef_buf_printf(b, "},\"normalizer\":{\"type\":\"NFC\"},"
                           "\"pre_tokenizer\":{\"type\":\"Sequence\","
                           "\"pretokenizers\":[{\"type\":\"Split\","
                           "\"pattern\":{\"Regex\":") != 0
        || clef_render_string(b, regex, strlen(regex)) != 0
        || clef_buf_printf(b, "},\"behavior\":\"Isolated\",\"invert\":false},"
                           "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,"
                           "\"trim_offsets\":false,\"use_regex\":false}]},"
                           "\"added_tokens\":[") != 0
        || put_added(b, v) != 0
        || clef_buf_printf(b, "]}") != 0)
    {
        goto done;
    }
    rc = 0;

done:
    tk_strmap_free(&last);
    return rc;
}

clef_tokenizer *
clef_tokenizer_from_vocab(const clef_tokenizer_vocab *v, const char *what,
    clef_error *err)
{
    clef_tokenizer  *tk = NULL;
    clef_buf         text = { 0 };
    size_t           i;
    int              rc;

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
    rc = write_json(&text, v, pres[i].regex, what, err);
    if (rc < 0) {
        tk_oom(err);
    } else if (rc == 0) {
        tk = tk_from_text(text.data, text.len, what, err);
    }
    clef_buf_free(&text);
    return tk;
}
