/*
 * GGUF files that llama-gguf-split cut into parts, as llama.cpp names and
 * marks them (examples/gguf-split, llama_split_path):
 *
 *   PREFIX-00001-of-00003.gguf  every metadata key of the model, and
 *                               the first tensors (none with
 *                               --no-tensor-first-split)
 *   PREFIX-00002-of-00003.gguf  the next tensors, no other metadata
 *   ...
 *
 * every part carrying split.no (UINT16, from 0), split.count (UINT16) and
 * split.tensors.count (INT32, the tensors of all parts).  Reading them as
 * one model is the reader's (gguf.h); writing them is here, for the tests
 * and `clef gguf-split`.
 */
#ifndef CLEF_GGUF_SPLIT_H
#define CLEF_GGUF_SPLIT_H

#include <stddef.h>

#include "base/error.h"
#include "model/gguf.h"

#define CLEF_GGUF_SPLIT_NO       "split.no"
#define CLEF_GGUF_SPLIT_COUNT    "split.count"
#define CLEF_GGUF_SPLIT_TENSORS  "split.tensors.count"
#define CLEF_GGUF_SPLIT_MAX      65535      /* split.count is a UINT16 */

/* The path of part no (from 0) of count: "PREFIX-%05d-of-%05d.gguf".  -1
 * when it does not fit size. */
int clef_gguf_split_path(char *buf, size_t size, const char *prefix, int no,
    int count);

/*
 * Writes g's metadata and tensors (their bytes as stored) as parts of at
 * most max_tensors tensors each, as `llama-gguf-split --split
 * --split-max-tensors max_tensors [--no-tensor-first-split]` does: the
 * metadata in the first part, with no_tensor_first that part holding no
 * tensor.  g must be mapped (not headers only); a split model is written
 * whole, its split.* keys replaced.  *count, when not NULL, is set to the
 * parts written.
 */
int clef_gguf_split_write(const clef_gguf *g, const char *prefix,
    size_t max_tensors, int no_tensor_first, int *count, clef_error *err);

#endif
