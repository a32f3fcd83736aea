/*
 * Inside a Clef GGUF (gguf_clef.h): the state its two files share, the
 * configuration and kind checks (gguf_clef.c) and the canonical tensor
 * views (gguf_clef_tensors.c).
 */
#ifndef CLEF_GGUF_CLEF_IMPL_H
#define CLEF_GGUF_CLEF_IMPL_H

#include "model/gguf_clef.h"

struct clef_gguf_clef {
    clef_gguf                *g;
    clef_gguf                *mm;        /* the mmproj file, or NULL */
    const clef_gguf          *vis;       /* where the tower is: g, mm, NULL */
    clef_text_config          text;
    clef_head_config          head;
    clef_vision_config        vision;
    clef_gguf_clef_tensor   **t;         /* each allocated with its runs,
                                            spans and computed values */
    size_t                    n_t;
    size_t                    cap_t;
};

/* Finds every canonical tensor of m's configs in its files and makes its
 * view (gguf_clef_tensors.c). */
int clef_gguf_clef_build_tensors(clef_gguf_clef *m, clef_error *err);

/* A model error naming g's file. */
int clef_gguf_clef_fail(const clef_gguf *g, clef_error *err,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
