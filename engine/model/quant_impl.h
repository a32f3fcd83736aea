/*
 * Helpers shared by the block types (quant_legacy.c, quant_k.c): fp16
 * fields read and written in place (blocks are not aligned), rounding.
 */
#ifndef CLEF_QUANT_IMPL_H
#define CLEF_QUANT_IMPL_H

#include <stdint.h>
#include <string.h>

#include "model/quant.h"
#include "model/tensor.h"

/* An fp16 field, widened exactly (numpy's astype(np.float32)). */
static inline float
q_rd_f16(const uint8_t *p)
{
    uint16_t  h;

    memcpy(&h, p, 2);
    return clef_f16_to_f32(h);
}

/* Little-endian u16 and u32 fields, read in place. */
static inline uint16_t
q_rd_u16(const uint8_t *p)
{
    uint16_t  v;

    memcpy(&v, p, 2);
    return v;
}

static inline uint32_t
q_rd_u32(const uint8_t *p)
{
    uint32_t  v;

    memcpy(&v, p, 4);
    return v;
}

/* Stores v as fp16 and returns the value stored, widened. */
static inline float
q_wr_f16(uint8_t *p, float v)
{
    uint16_t  h = clef_f32_to_f16(v);

    memcpy(p, &h, 2);
    return clef_f16_to_f32(h);
}

/* The nearest integer to v within [lo, hi] (ties away from zero); NaN
 * gives lo. */
static inline int
q_nearest(float v, int lo, int hi)
{
    if (!(v >= (float) lo)) {
        return lo;
    }
    if (v >= (float) hi) {
        return hi;
    }
    return v < 0 ? -(int) (0.5f - v) : (int) (v + 0.5f);
}

/* An integer form (quant.h) without minima, of scale d. */
static inline void
q_no_mins(clef_qk_int *f, float d)
{
    memset(f->mn, 0, sizeof(f->mn));
    f->d = d;
    f->dmin = 0;
    f->mins = 0;
}

/* 1 / d, or 0 when d is 0 (a block of zeros quantizes to zeros). */
static inline float
q_inv(float d)
{
    return d != 0 ? 1.0f / d : 0.0f;
}

#endif
