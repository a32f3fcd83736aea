/*
 * Inside the GGUF reader (gguf.h): the state of an open file, shared by
 * gguf.c (one file) and gguf_split.c (the other parts of a split model,
 * whose tensors join the first part's).
 */
#ifndef CLEF_GGUF_IMPL_H
#define CLEF_GGUF_IMPL_H

#include "base/arena.h"
#include "model/gguf.h"

struct clef_gguf {
    char                     *path;
    uint32_t                  version;
    uint32_t                  alignment;
    uint64_t                  size;
    uint64_t                  data_off;
    clef_gguf_value          *kv;
    const clef_gguf_value   **kv_sorted;
    size_t                    n_kv;
    clef_gguf_tensor         *t;
    const clef_gguf_tensor  **t_sorted;
    size_t                    n_t;
    void                     *map;
    size_t                    map_len;
    clef_arena                arena;
    clef_gguf               **parts;     /* a split model's parts after the
                                            first, whose tensors t holds
                                            too (names and data theirs) */
    size_t                    n_parts;
};

/* Orders t_sorted by name (bsearch of clef_gguf_tensor_find). */
int clef_gguf_cmp_tensor(const void *a, const void *b);

/* Opens the other parts when g is the first part of a split model (its
 * split.count above 1), checks them and adds their tensors to g's; a
 * file that is no part is left as it is.  flags: clef_gguf_open's. */
int clef_gguf_split_join(clef_gguf *g, int flags, clef_error *err);

#endif
