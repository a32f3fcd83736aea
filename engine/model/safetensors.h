/*
 * One .safetensors file, mmapped read-only.  The header is parsed and every
 * tensor's dtype, shape and byte range checked against the file size; the
 * data is never copied.
 */
#ifndef CLEF_SAFETENSORS_H
#define CLEF_SAFETENSORS_H

#include "base/error.h"
#include "model/tensor.h"

typedef struct clef_safetensors clef_safetensors;

/* Refuses (err filled) a missing or truncated file, a malformed header, an
 * unknown dtype, or a tensor whose bytes do not match dtype x shape or lie
 * outside the file.  With headers_only the data is not mapped (data == NULL):
 * what `nginx -t` uses to validate a model without touching the weights. */
clef_safetensors *clef_safetensors_open(const char *path, int headers_only,
    clef_error *err);
int                clef_safetensors_count(const clef_safetensors *f);
const clef_tensor *clef_safetensors_at(const clef_safetensors *f, int i);
const clef_tensor *clef_safetensors_find(const clef_safetensors *f, const char *name);
const char        *clef_safetensors_path(const clef_safetensors *f);
void               clef_safetensors_close(clef_safetensors *f);

#endif
