/*
 * Byte-level BPE tokenizer loaded from a Hugging Face tokenizer.json
 * (Qwen2Tokenizer family).  encode() equals
 *   tokenizer(text, add_special_tokens=False).input_ids
 * of HF `tokenizers`: added tokens (special or not) are matched anywhere in
 * the text with their lstrip/rstrip/normalized flags, the rest goes through
 * the normalizer (NFC), the Split pre-tokenizer regex (PCRE2, JIT), the
 * ByteLevel mapping and BPE merges by rank.
 *
 * A loaded tokenizer is immutable; encode() may be called from many threads
 * at once.
 */
#ifndef CLEF_TOKENIZER_H
#define CLEF_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/error.h"

typedef struct clef_tokenizer clef_tokenizer;

/* path: a tokenizer.json file, or a directory holding one. */
clef_tokenizer *clef_tokenizer_load(const char *path, clef_error *err);

/*
 * A vocabulary as GGUF's tokenizer.ggml.* keys hold it (llama.cpp's "gpt2"
 * model, written by its converter from a tokenizer.json): the tokens by id
 * (byte-level strings; added tokens as their content), their types, the
 * merges "a b" by rank, and the pre-tokenizer's name.  It is turned back
 * into the tokenizer.json it came from and loaded as that: the normal (and
 * byte) tokens are the BPE vocabulary, control and user-defined tokens the
 * added tokens (matched in the raw text, no strip flags), unused ones
 * ([PAD] rows past the vocabulary) left out; the pre-tokenizer's name
 * stands for NFC, its Split regex (the one in llama.cpp's table for that
 * name, as written in the tokenizer.json) and ByteLevel without a prefix
 * space.  Known names: "qwen2" (Qwen2/Qwen3), "qwen35" (Qwen3.5).
 */
enum {
    CLEF_TOKEN_NORMAL = 1,
    CLEF_TOKEN_UNKNOWN = 2,
    CLEF_TOKEN_CONTROL = 3,
    CLEF_TOKEN_USER_DEFINED = 4,
    CLEF_TOKEN_UNUSED = 5,
    CLEF_TOKEN_BYTE = 6
};

typedef struct {
    const char          *pre;
    size_t               n_tokens;
    const char *const   *tokens;
    const size_t        *token_len;
    const int32_t       *types;         /* NULL: all normal */
    size_t               n_merges;
    const char *const   *merges;
    const size_t        *merge_len;
} clef_tokenizer_vocab;

/* what names the source in messages. */
clef_tokenizer *clef_tokenizer_from_vocab(const clef_tokenizer_vocab *v,
    const char *what, clef_error *err);
void clef_tokenizer_free(clef_tokenizer *tk);

/* Appends the ids of text[0..len) to out.  Returns 0, -1 on allocation failure. */
int clef_tokenizer_encode(const clef_tokenizer *tk, const char *text, size_t len,
    clef_ids *out);

/* Like clef_tokenizer_encode(), with the work bounded:
 *   - stops as soon as more than max_ids ids have been appended for text;
 *     the ids appended are then exactly the first ids of the whole text
 *     (at least max_ids + 1 of them, as a truncating caller needs);
 *   - stops before the BPE of a long word (over 1 KiB, where BPE gets
 *     expensive) whose length alone proves that the text has more than
 *     hopeless_ids ids (clef_tokenizer_max_token_bytes);
 *     out then holds fewer ids than it would, and only the answer "more
 *     than hopeless_ids" counts.  SIZE_MAX: never.
 * Returns 0 when the whole text was encoded, 1 when it stopped, -1 on
 * allocation failure. */
typedef struct {
    size_t  max_ids;
    size_t  hopeless_ids;
} clef_tk_limit;

int clef_tokenizer_encode_max(const clef_tokenizer *tk, const char *text,
    size_t len, const clef_tk_limit *limit, clef_ids *out);

/* Most bytes of normalized text one id can stand for (the longest vocab
 * entry or added token), so a text of n normalized bytes has at least
 * n / this many ids; SIZE_MAX when nothing bounds it (a fused unk). */
size_t clef_tokenizer_max_token_bytes(const clef_tokenizer *tk);

/* Id of a token given by its content ("<|im_end|>", or a vocab entry in its
 * byte-level form); -1 when absent. */
int32_t clef_tokenizer_token_id(const clef_tokenizer *tk, const char *content);

/* Number of ids: vocab plus added tokens (max id + 1). */
size_t clef_tokenizer_vocab_size(const clef_tokenizer *tk);

#endif
