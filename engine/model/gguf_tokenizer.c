/*
 * tokenizer.json -> tokenizer.ggml.* (gguf_tokenizer.h).
 */
#include "model/gguf_tokenizer.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/path.h"
#include "text/tokenizer.h"

static json_t *
load(const char *dir, const char *name, clef_error *err)
{
    json_error_t   jerr;
    json_t        *root;
    char          *path = clef_path_join(dir, name);

    root = path != NULL ? json_load_file(path, 0, &jerr) : NULL;
    if (root == NULL) {
        clef_error_fail(err, CLEF_E_MODEL, "%s/%s: %s", dir, name,
                        path != NULL ? jerr.text : "out of memory");
    }
    free(path);
    return root;
}

/* An added token the converter marks as control: special, or shaped like
 * one ("<|...|>"). */
static int
looks_control(json_t *a)
{
    const char  *s = json_string_value(json_object_get(a, "content"));
    size_t       n = s != NULL ? strlen(s) : 0;

    return json_is_true(json_object_get(a, "special"))
           || (n >= 4 && strncmp(s, "<|", 2) == 0
               && strcmp(s + n - 2, "|>") == 0);
}

/* The id of a token named by tokenizer_config.json's key (a string, or an
 * object with "content"), -1 when it names none. */
static int64_t
config_token(json_t *config, const char *key, json_t *added)
{
    json_t      *v = json_object_get(config, key), *a;
    const char  *s = json_is_object(v)
                     ? json_string_value(json_object_get(v, "content"))
                     : json_string_value(v);
    size_t       i;

    json_array_foreach(added, i, a) {
        if (s != NULL && json_is_string(json_object_get(a, "content"))
            && strcmp(json_string_value(json_object_get(a, "content")), s)
               == 0)
        {
            return json_integer_value(json_object_get(a, "id"));
        }
    }
    return -1;
}

/* "a b" of a merge given as a string or a pair, into buf. */
static const char *
merge_text(json_t *m, char **buf, size_t *cap)
{
    const char  *a, *b;
    size_t       n;

    if (json_is_string(m)) {
        return json_string_value(m);
    }
    a = json_string_value(json_array_get(m, 0));
    b = json_string_value(json_array_get(m, 1));
    if (a == NULL || b == NULL) {
        return NULL;
    }
    n = strlen(a) + strlen(b) + 2;
    if (n > *cap) {
        free(*buf);
        *cap = 2 * n;
        *buf = malloc(*cap);
        if (*buf == NULL) {
            return NULL;
        }
    }
    snprintf(*buf, *cap, "%s %s", a, b);
    return *buf;
}

int
clef_gguf_put_tokenizer(clef_gguf_writer *w, const char *dir,
    int64_t vocab_size, const char *pre, clef_error *err)
{
    json_t         *tj, *tc, *vocab, *added, *merges, *v, *a;
    clef_gguf_str  *toks = NULL, *ms = NULL;
    int32_t        *types = NULL;
    char           *pads = NULL, *mbuf = NULL, **mcopy = NULL;
    const char     *key, *s;
    size_t          i, nm, mcap = 0;
    int64_t         id, eos, pad;
    int             rc = -1;

    tj = load(dir, "tokenizer.json", err);
    tc = tj != NULL ? load(dir, "tokenizer_config.json", err) : NULL;
    if (tc == NULL) {
        json_decref(tj);
        return -1;
    }
    vocab = json_object_get(json_object_get(tj, "model"), "vocab");
    merges = json_object_get(json_object_get(tj, "model"), "merges");
    added = json_object_get(tj, "added_tokens");
    nm = json_array_size(merges);

    toks = calloc((size_t) vocab_size + 1, sizeof(*toks));
    types = calloc((size_t) vocab_size + 1, sizeof(*types));
    pads = malloc((size_t) vocab_size * 24 + 1);
    ms = calloc(nm + 1, sizeof(*ms));
    mcopy = calloc(nm + 1, sizeof(*mcopy));
    if (toks == NULL || types == NULL || pads == NULL || ms == NULL
        || mcopy == NULL)
    {
        clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
        goto done;
    }

    /* the vocabulary, then the added tokens over it, then the gaps */
    json_object_foreach(vocab, key, v) {
        id = json_integer_value(v);
        if (id >= 0 && id < vocab_size) {
            toks[id].s = key;
            toks[id].len = strlen(key);
            types[id] = CLEF_TOKEN_NORMAL;
        }
    }
    json_array_foreach(added, i, a) {
        id = json_integer_value(json_object_get(a, "id"));
        s = json_string_value(json_object_get(a, "content"));
        if (id >= 0 && id < vocab_size && s != NULL) {
            toks[id].s = s;
            toks[id].len = strlen(s);
            types[id] = looks_control(a) ? CLEF_TOKEN_CONTROL
                                         : CLEF_TOKEN_USER_DEFINED;
        }
    }
    for (id = 0; id < vocab_size; id++) {
        if (toks[id].s == NULL) {
            toks[id].s = pads + id * 24;
            toks[id].len = (uint64_t) snprintf(pads + id * 24, 24,
                                               "[PAD%lld]", (long long) id);
            types[id] = CLEF_TOKEN_UNUSED;
        }
    }
    for (i = 0; i < nm; i++) {
        s = merge_text(json_array_get(merges, i), &mbuf, &mcap);
        mcopy[i] = s != NULL ? strdup(s) : NULL;
        if (mcopy[i] == NULL) {
            clef_error_fail(err, CLEF_E_MODEL, "%s/tokenizer.json: merge %zu"
                            " is not a string or a pair", dir, i);
            goto done;
        }
        ms[i].s = mcopy[i];
        ms[i].len = strlen(mcopy[i]);
    }

    eos = config_token(tc, "eos_token", added);
    pad = config_token(tc, "pad_token", added);
    s = json_string_value(json_object_get(tc, "chat_template"));
    if (clef_gguf_put_str(w, "tokenizer.ggml.model", "gpt2", 4, err) != 0
        || clef_gguf_put_str(w, "tokenizer.ggml.pre", pre, strlen(pre), err)
        || clef_gguf_put_arr_str(w, "tokenizer.ggml.tokens", toks,
                                 (uint64_t) vocab_size, err)
        || clef_gguf_put_arr(w, "tokenizer.ggml.token_type", CLEF_GGUF_INT32,
                             types, (uint64_t) vocab_size, err)
        || clef_gguf_put_arr_str(w, "tokenizer.ggml.merges", ms, nm, err)
        || (eos >= 0 && clef_gguf_put_uint(w, "tokenizer.ggml.eos_token_id",
                                           CLEF_GGUF_UINT32, (uint64_t) eos,
                                           err))
        || (pad >= 0 && clef_gguf_put_uint(w, "tokenizer.ggml.padding_token_id",
                                           CLEF_GGUF_UINT32, (uint64_t) pad,
                                           err))
        || clef_gguf_put_uint(w, "tokenizer.ggml.add_bos_token",
                              CLEF_GGUF_BOOL, 0, err)
        || clef_gguf_put_uint(w, "tokenizer.ggml.add_eos_token",
                              CLEF_GGUF_BOOL, 0, err)
        || (s != NULL && clef_gguf_put_str(w, "tokenizer.chat_template", s,
                                           strlen(s), err)))
    {
        goto done;
    }
    rc = 0;

done:
    for (i = 0; mcopy != NULL && i < nm; i++) {
        free(mcopy[i]);
    }
    free(mcopy);
    free(mbuf);
    free(ms);
    free(pads);
    free(types);
    free(toks);
    json_decref(tj);
    json_decref(tc);
    return rc;
}
