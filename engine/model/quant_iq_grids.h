/*
 * The constants of the i-quants (quant_iq.c) and of the 16-value
 * codebooks (IQ4_NL, IQ4_XS, MXFP4, NVFP4): the lattice rows each grid
 * index names, element j of a row in byte j (ggml's layout, so that a row
 * is one load), the 128 sign patterns of 7 stored bits (the eighth the
 * parity), the codebooks' values.  Generated from gguf-py's tables by
 * t/reference/gen_iq_grids.py, which checks them against ggml's too.
 */
#ifndef CLEF_QUANT_IQ_GRIDS_H
#define CLEF_QUANT_IQ_GRIDS_H

#include <stdint.h>

extern const uint64_t  clef_iq2xxs_grid[256];  /* bytes 8, 25, 43 */
extern const uint64_t  clef_iq2xs_grid[512];
extern const uint64_t  clef_iq2s_grid[1024];
extern const uint32_t  clef_iq3xxs_grid[256];  /* bytes 4 to 62 */
extern const uint32_t  clef_iq3s_grid[512];    /* bytes 1 to 15 */
extern const uint64_t  clef_iq1s_grid[2048];   /* int8 -1, 0, 1 */
extern const uint8_t   clef_iq2_ksigns[128];   /* bit j set: element j < 0 */
extern const int8_t    clef_iq4nl_values[16];
extern const int8_t    clef_mxfp4_values[16];  /* e2m1, doubled */

#endif
