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

#include "buf.h"
#include "error.h"

typedef struct clef_tokenizer clef_tokenizer;

/* path: a tokenizer.json file, or a directory holding one. */
clef_tokenizer *clef_tokenizer_load(const char *path, clef_error *err);
void clef_tokenizer_free(clef_tokenizer *tk);

/* Appends the ids of text[0..len) to out.  Returns 0, -1 on allocation failure. */
int clef_tokenizer_encode(const clef_tokenizer *tk, const char *text, size_t len,
    clef_ids *out);

/* Id of a token given by its content ("<|im_end|>", or a vocab entry in its
 * byte-level form); -1 when absent. */
int32_t clef_tokenizer_token_id(const clef_tokenizer *tk, const char *content);

/* Number of ids: vocab plus added tokens (max id + 1). */
size_t clef_tokenizer_vocab_size(const clef_tokenizer *tk);

#endif
