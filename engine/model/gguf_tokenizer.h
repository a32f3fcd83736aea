/*
 * A tokenizer.json written as GGUF's tokenizer.ggml.* keys, as llama.cpp's
 * converter writes a byte-level BPE tokenizer (the inverse of
 * clef_tokenizer_from_vocab, text/tokenizer.h):
 *
 *   tokenizer.ggml.model        "gpt2"
 *   tokenizer.ggml.pre          the pre-tokenizer's name ("qwen2")
 *   tokenizer.ggml.tokens       every id below vocab_size: its token (the
 *                               vocabulary's byte-level string, an added
 *                               token's content), "[PAD<id>]" where no
 *                               token has the id
 *   tokenizer.ggml.token_type   1 normal, 3 control (a special added token,
 *                               or one that looks like "<|...|>"), 4 user
 *                               defined (another added token), 5 unused
 *   tokenizer.ggml.merges       "a b" in rank order
 *   tokenizer.ggml.eos_token_id, padding_token_id: tokenizer_config.json's
 *                               eos_token and pad_token, when they are
 *                               tokens
 *   tokenizer.ggml.add_bos_token, add_eos_token: false
 *   tokenizer.chat_template     tokenizer_config.json's, when it has one
 *
 * dir holds tokenizer.json and tokenizer_config.json.
 */
#ifndef CLEF_GGUF_TOKENIZER_H
#define CLEF_GGUF_TOKENIZER_H

#include "base/error.h"
#include "model/gguf_write.h"

int clef_gguf_put_tokenizer(clef_gguf_writer *w, const char *dir,
    int64_t vocab_size, const char *pre, clef_error *err);

#endif
