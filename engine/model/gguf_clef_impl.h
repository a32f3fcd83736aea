/*
 * Inside a Clef GGUF (gguf_clef.h): the state its two files share, the
 * configuration and kind checks (gguf_clef.c) and the canonical tensor
 * views (gguf_clef_tensors.c).
 */
#ifndef CLEF_GGUF_CLEF_IMPL_H
#define CLEF_GGUF_CLEF_IMPL_H

#include "model/gguf_clef.h"

struct clef_gguf_clef {
    clef_family               family;
    const char               *arch;      /* the metadata keys' prefix */
    clef_gguf                *g;
    clef_gguf                *mm;        /* the mmproj file, or NULL */
    const clef_gguf          *vis;       /* where the tower is: g, mm, NULL */
    clef_text_config          text;
    clef_head_config          head;
    clef_vision_config        vision;
    clef_audio_tower_config   audio;     /* Clef Omni's, from the mmproj */
    clef_omni_config          omni;
    clef_gguf_clef_tensor   **t;         /* each allocated with its runs,
                                            spans and computed values */
    size_t                    n_t;
    size_t                    cap_t;
};

/* Finds every canonical tensor of m's configs in its files and makes its
 * view (gguf_clef_tensors.c). */
int clef_gguf_clef_build_tensors(clef_gguf_clef *m, clef_error *err);

/* Clef Omni's keys (gguf_clef_omni.c): the text stack, the token ids and
 * time scale, the audio tower from the mmproj (audio->present 0 when it
 * has none). */
int clef_gguf_clef_omni_text(const clef_gguf *g, clef_text_config *c,
    clef_error *err);
int clef_gguf_clef_omni_ids(const clef_gguf *g, clef_omni_config *o,
    clef_error *err);
int clef_gguf_clef_omni_audio(const clef_gguf *g, const clef_gguf *vis,
    const clef_text_config *tc, clef_audio_tower_config *a, clef_error *err);

/* Helpers of gguf_clef.c: a required key, a tensor of ndim dims, a
 * token's id by its string in tokenizer.ggml.tokens. */
int clef_gguf_clef_need_int(const clef_gguf *g, const char *key, int lo,
    int hi, int *out, clef_error *err);
int clef_gguf_clef_need_float(const clef_gguf *g, const char *key,
    double *out, clef_error *err);
const clef_gguf_tensor *clef_gguf_clef_need_tensor(const clef_gguf *g,
    const char *name, int ndim, clef_error *err);
int clef_gguf_clef_token_id(const clef_gguf *g, const char *tok, int *out,
    clef_error *err);

/* A model error naming g's file. */
int clef_gguf_clef_fail(const clef_gguf *g, clef_error *err,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
