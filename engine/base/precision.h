/*
 * How a backend's linear layers multiply (docs/design/precision.md):
 * compute precision, chosen per model, and independent of how the weights
 * are stored (model/dtype.h: a bf16 or a block-quantized weight is
 * multiplied at either precision).  The one enum the module's directive,
 * the engine, the backends and the CPU kernels share.
 */
#ifndef CLEF_PRECISION_H
#define CLEF_PRECISION_H

#include <stddef.h>

typedef enum {
    CLEF_PRECISION_DEFAULT = 0,  /* the backend's own: fp32 on the CPU
                                    (exact), bf16 on CUDA; a backend
                                    resolves it when it opens */
    CLEF_PRECISION_FP32,         /* fp32 activations and sums: within 1e-5
                                    of the fp32 reference */
    CLEF_PRECISION_BF16,         /* bf16 activations into the linear layers,
                                    fp32 sums: within 2e-2, same argmax */
    CLEF_PRECISION_Q8            /* the CPU's fast mode for block-quantized
                                    weights (GGUF Q8_0, Q4_K, ...):
                                    activations quantized to int8 blocks,
                                    integer dot products against the
                                    weights' blocks (cpu/kernels/qdot.h);
                                    float weights keep the fp32 products.
                                    Within 5e-2 of the reference on the
                                    dequantized weights */
} clef_precision;

/* "default", "fp32", "bf16", "q8". */
const char *clef_precision_name(clef_precision p);

/* "fp32", "bf16" or "q8" in name[0..len) into *p; -1 for anything
 * else. */
int         clef_precision_parse(const char *name, size_t len,
    clef_precision *p);

#endif
