/*
 * Quantized weights into the kernels' panels (qdot_kernel.h has the
 * layout): each GGUF block's codes moved, never changed, four bytes at a
 * time where the file's order already gives four consecutive values; the
 * fifth bits of Q5_0/Q5_1 regrouped, a K type's 6-bit scales given a
 * byte each.  Rows past a group's last, up to its last panel's 16, stay
 * zero: their scales are 0, so they add 0 to the lanes no one reads.
 */
#include "cpu/kernels/qdot_kernel.h"

#include <stdlib.h>
#include <string.h>

#include "model/quant.h"

#define PANEL  CLEF_QDOT_PANEL

const int  qd_block_values[QT_COUNT] = {
    32, 32, 32, 32, 32, CLEF_QK_K, CLEF_QK_K, CLEF_QK_K, CLEF_QK_K, CLEF_QK_K,
    32, CLEF_QK_K, CLEF_QK_K, CLEF_QK_K, 32
};

const int  qd_block_bytes[QT_COUNT] = {
    QB_Q8_0, QB_Q4_0, QB_Q4_1, QB_Q5_0, QB_Q5_1, QB_Q4_K, QB_Q5_K, QB_Q6_K,
    QB_I8, QB_I8, QB_NL4, QB_X4, QB_Q3_K, QB_Q2_K, QB_NL4
};

int
qd_type_of(uint32_t ggml)
{
    const qd_source  *src = qd_source_of(ggml);

    return src != NULL ? src->qt : -1;
}

int
clef_qdot_type_ok(uint32_t type, int64_t cols)
{
    const qd_source  *src = qd_source_of(type);

    /* whole blocks of the file's type, whose size the kernels' divides */
    return src != NULL && cols > 0 && cols % src->values == 0;
}

size_t
clef_qdot_group_bytes(uint32_t type, int64_t rows, int64_t cols)
{
    int  t = qd_type_of(type);

    if (t < 0 || rows <= 0 || cols <= 0) {
        return 0;
    }
    return (size_t) ((rows + PANEL - 1) / PANEL)
           * (size_t) (cols / qd_block_values[t]) * (size_t) qd_block_bytes[t];
}

int
clef_qdot_mat_add(clef_qdot_mat *q, uint32_t type, int64_t row0, int64_t rows)
{
    clef_qdot_group  *g;
    size_t            bytes, alloc;

    if (!clef_qdot_type_ok(type, q->cols) || rows <= 0
        || q->ngroups == CLEF_QDOT_GROUPS_MAX)
    {
        return -1;
    }
    bytes = clef_qdot_group_bytes(type, rows, q->cols);
    alloc = (bytes + 63) / 64 * 64;
    g = &q->groups[q->ngroups];
    g->data = aligned_alloc(64, alloc);
    if (g->data == NULL) {
        return -1;
    }
    memset(g->data, 0, alloc);
    g->type = type;
    g->row0 = row0;
    g->rows = rows;
    g->panel_bytes = bytes / (size_t) ((rows + PANEL - 1) / PANEL);
    q->ngroups++;
    q->bytes += alloc;
    return 0;
}

int
clef_qdot_mat_init(clef_qdot_mat *q, int64_t cols, const uint32_t *types,
    const int64_t *rows, int n)
{
    int64_t  row = 0;
    int      i;

    memset(q, 0, sizeof(*q));
    q->cols = cols;
    if (n < 1 || n > CLEF_QDOT_GROUPS_MAX) {
        return -1;
    }
    for (i = 0; i < n; i++) {
        if (clef_qdot_mat_add(q, types[i], row, rows[i]) != 0) {
            clef_qdot_mat_free(q);
            return -1;
        }
        row += rows[i];
    }
    q->rows = row;
    return 0;
}

void
clef_qdot_mat_free(clef_qdot_mat *q)
{
    int  i;

    for (i = 0; i < q->ngroups; i++) {
        free(q->groups[i].data);
    }
    memset(q, 0, sizeof(*q));
}

/* ---- one row's blocks into its slot of a panel -------------------------- */

/* 16-bit field l of an array of 16 (row l of the panel). */
static void
put16(uint8_t *arr, int l, const uint8_t *src)
{
    memcpy(arr + 2 * l, src, 2);
}

/* 4 bytes of row l of step (or chunk) j from src. */
static void
put4(uint8_t *steps, int j, int l, const uint8_t *src)
{
    memcpy(steps + QD_STEP * j + 4 * l, src, 4);
}

/* The fifth bits of values 0..31 (bit v of qh) as a fifth-bit vector's
 * row l: bit j of byte i is value 4j + i's. */
static void
put_bits5(uint8_t *vec, int l, uint32_t qh)
{
    int  i, j;

    for (i = 0; i < 4; i++) {
        vec[4 * l + i] = 0;
        for (j = 0; j < 8; j++) {
            vec[4 * l + i] |= (uint8_t) (((qh >> (4 * j + i)) & 1) << j);
        }
    }
}

/* The 8 bit planes of 32 bytes (Q5_K's qh, Q3_K's hmask): plane s, bit s
 * of each byte v as bit v, into the step s of row l at vec. */
static void
put_planes(uint8_t *vec, int l, const uint8_t *src)
{
    uint32_t  bits;
    int       s, v;

    for (s = 0; s < 8; s++) {
        bits = 0;
        for (v = 0; v < 32; v++) {
            bits |= (uint32_t) ((src[v] >> s) & 1) << v;
        }
        put_bits5(vec + QD_STEP * s, l, bits);
    }
}

static void
legacy_block(int t, const uint8_t *b, uint8_t *o, int l)
{
    uint32_t  qh;
    int       j;

    put16(o, l, b);                                  /* d */
    switch (t) {
    case QT_Q8_0:
        for (j = 0; j < 8; j++) {
            put4(o + 32, j, l, b + 2 + 4 * j);
        }
        return;
    case QT_Q4_0:
        for (j = 0; j < 4; j++) {
            put4(o + 32, j, l, b + 2 + 4 * j);
        }
        return;
    case QT_Q4_1:
        put16(o + 32, l, b + 2);                     /* m */
        for (j = 0; j < 4; j++) {
            put4(o + 64, j, l, b + 4 + 4 * j);
        }
        return;
    case QT_Q5_0:
        memcpy(&qh, b + 2, 4);
        put_bits5(o + 32, l, qh);
        for (j = 0; j < 4; j++) {
            put4(o + 96, j, l, b + 6 + 4 * j);
        }
        return;
    default:                                         /* Q5_1 */
        put16(o + 32, l, b + 2);
        memcpy(&qh, b + 4, 4);
        put_bits5(o + 64, l, qh);
        for (j = 0; j < 4; j++) {
            put4(o + 128, j, l, b + 8 + 4 * j);
        }
        return;
    }
}

/* Q4_K / Q5_K: d, dmin, the 6-bit scales and minima a byte each, the
 * file's nibble bytes in order (pair p's 32 bytes are its chunks 0..7),
 * Q5_K's fifth bits (bit s of qh[v] is sub-block s's value v) regrouped
 * per sub-block. */
static void
k45_block(int q5, const uint8_t *b, uint8_t *o, int l)
{
    const uint8_t  *sc = b + 4, *qh = b + 16, *qs = q5 ? b + 48 : b + 16;
    int             j;

    put16(o, l, b);
    put16(o + 32, l, b + 2);
    for (j = 0; j < 4; j++) {
        o[QK_SC + 16 * j + l] = sc[j] & 0x3f;
        o[QK_MN + 16 * j + l] = sc[4 + j] & 0x3f;
        o[QK_SC + 16 * (j + 4) + l] = (uint8_t) ((sc[8 + j] & 0x0f)
                                                 | ((sc[j] >> 2) & 0x30));
        o[QK_MN + 16 * (j + 4) + l] = (uint8_t) ((sc[8 + j] >> 4)
                                                 | ((sc[4 + j] >> 2) & 0x30));
    }
    for (j = 0; j < 32; j++) {
        put4(o + QK_QS, j, l, qs + 4 * j);
    }
    if (!q5) {
        return;
    }
    put_planes(o + QK_QH, l, qh);
}

/* Q6_K: ql's 128 bytes are the chunks of (half, quarter) in order, qh's
 * 64 the 2-bit steps of each half, then the 16 int8 scales, d last. */
static void
q6k_block(const uint8_t *b, uint8_t *o, int l)
{
    int  j;

    put16(o, l, b + 208);
    for (j = 0; j < 16; j++) {
        o[Q6_SC + 16 * j + l] = b[192 + j];
    }
    for (j = 0; j < 32; j++) {
        put4(o + Q6_QL, j, l, b + 4 * j);
    }
    for (j = 0; j < 16; j++) {
        put4(o + Q6_QH, j, l, b + 128 + 4 * j);
    }
}

/* An integer form (model/quant.h): d and dmin as f32, the scales and
 * minima a byte each, the codes in steps. */
static void
i8_block(const clef_qk_int *f, uint8_t *o, int l)
{
    int  j;

    memcpy(o + I8_D + 4 * l, &f->d, 4);
    memcpy(o + I8_DMIN + 4 * l, &f->dmin, 4);
    for (j = 0; j < 16; j++) {
        o[I8_SC + 16 * j + l] = (uint8_t) f->sc[j];
        o[I8_MN + 16 * j + l] = (uint8_t) f->mn[j];
    }
    for (j = 0; j < CLEF_QK_K / 4; j++) {
        put4(o + I8_QS, j, l, (const uint8_t *) f->q + 4 * j);
    }
}

/* NL4: the f32 scale, then the 16 bytes of indices as Q4_0's chunks. */
static void
nl4_block(const uint8_t *b, uint8_t *o, int l)
{
    int  j;

    memcpy(o + 4 * l, b, 4);
    for (j = 0; j < 4; j++) {
        put4(o + NL4_QS, j, l, b + 4 + 4 * j);
    }
}

/* X4: IQ4_XS's fp16 d, its 6-bit scales less 32 a byte each (sc's low
 * nibble in byte s / 2 of scales_l, its high two bits at 2s of
 * scales_h), the 32-value runs' indices as NL4's chunks. */
static void
x4_block(const uint8_t *b, uint8_t *o, int l)
{
    uint16_t  sh;
    int       s, j;

    put16(o, l, b);
    memcpy(&sh, b + 2, 2);
    for (s = 0; s < 8; s++) {
        o[X4_SC + 16 * s + l] = (uint8_t) ((((b[4 + s / 2] >> (4 * (s % 2)))
                                             & 0x0f)
                                            | (((sh >> (2 * s)) & 3) << 4))
                                           - 32);
        for (j = 0; j < 4; j++) {
            put4(o + X4_QS, 4 * s + j, l, b + 8 + 16 * s + 4 * j);
        }
    }
}

/* Q3_K (model/quant_k_low.c's layout): d, the 6-bit scales less 32 a byte
 * each, qs's 64 bytes as the 2-bit steps in order (half h's step c is
 * bytes 32h + 4c ..), hmask's third bits (bit s of byte v: sub-block s's
 * value v) regrouped per sub-block. */
static void
q3k_block(const uint8_t *b, uint8_t *o, int l)
{
    const uint8_t  *sb = b + 96;
    int             k, j;

    put16(o, l, b + 108);
    for (k = 0; k < 16; k++) {
        o[Q3_SC + 16 * k + l] = (uint8_t) ((((sb[k % 8] >> (4 * (k / 8))) & 0x0f)
                                            | (((sb[8 + k % 4] >> (2 * (k / 4)))
                                                & 3) << 4))
                                           - 32);
    }
    for (j = 0; j < 16; j++) {
        put4(o + Q3_QS, j, l, b + 32 + 4 * j);
    }
    put_planes(o + Q3_QH, l, b);
}

/* Q2_K: d, dmin, the 16 scale bytes as stored, qs as Q3_K's. */
static void
q2k_block(const uint8_t *b, uint8_t *o, int l)
{
    int  j;

    put16(o, l, b + 80);
    put16(o + Q2_DMIN, l, b + 82);
    for (j = 0; j < 16; j++) {
        o[Q2_SC + 16 * j + l] = b[j];
        put4(o + Q2_QS, j, l, b + 16 + 4 * j);
    }
}

/* One row's nb blocks (at rb, of the GGUF type ggml) into lane l of a
 * panel. */
static void
pack_row(uint32_t ggml, int64_t nb, const uint8_t *rb, uint8_t *panel, int l)
{
    const qd_source  *src = qd_source_of(ggml);
    const uint8_t    *b;
    uint8_t          *o;
    int64_t           k, per;
    int               t = src->qt;
    union {
        uint8_t       block[256];
        clef_qk_int   form;
    }                 conv;

    for (k = 0; k < nb; k++) {
        o = panel + (size_t) k * (size_t) qd_block_bytes[t];
        per = src->values / qd_block_values[t];
        b = rb + (size_t) (k / per) * (size_t) src->bytes;
        if (src->convert != NULL) {
            src->convert(b, (int) (k % per), conv.block);
            b = conv.block;
        }
        if (t == QT_I8 || t == QT_I8M) {
            i8_block(&conv.form, o, l);
        } else if (t == QT_NL4 || t == QT_MX4) {
            nl4_block(b, o, l);
        } else if (t == QT_X4) {
            x4_block(b, o, l);
        } else if (t == QT_Q3_K) {
            q3k_block(b, o, l);
        } else if (t == QT_Q2_K) {
            q2k_block(b, o, l);
        } else if (t <= QT_Q5_1) {
            legacy_block(t, b, o, l);
        } else if (t == QT_Q6_K) {
            q6k_block(b, o, l);
        } else {
            k45_block(t == QT_Q5_K, b, o, l);
        }
    }
}

void
clef_qdot_pack_rows(clef_qdot_mat *q, int64_t row, int64_t n, const void *src,
    size_t row_bytes)
{
    const clef_qdot_group  *g = q->groups;
    int64_t                 r, in;
    int                     t;

    while (g < q->groups + q->ngroups - 1
           && (row < g->row0 || row >= g->row0 + g->rows))
    {
        g++;
    }
    t = qd_type_of(g->type);
    for (r = 0; r < n; r++) {
        in = row + r - g->row0;
        pack_row(g->type, q->cols / qd_block_values[t],
                 (const uint8_t *) src + (size_t) r * row_bytes,
                 g->data + (size_t) (in / PANEL) * g->panel_bytes,
                 (int) (in % PANEL));
    }
}

int
clef_qdot_mat_add_src(clef_qdot_mat *q, uint32_t type, int64_t row0,
    int64_t rows, const void *src, size_t stride)
{
    clef_qdot_group  *g;
    size_t            bytes;

    if (!clef_qdot_type_ok(type, q->cols) || rows <= 0 || src == NULL
        || q->ngroups == CLEF_QDOT_GROUPS_MAX)
    {
        return -1;
    }
    bytes = clef_qdot_group_bytes(type, rows, q->cols);
    g = &q->groups[q->ngroups];
    g->data = NULL;
    g->src = src;
    g->src_stride = stride;
    g->type = type;
    g->row0 = row0;
    g->rows = rows;
    g->panel_bytes = bytes / (size_t) ((rows + PANEL - 1) / PANEL);
    q->ngroups++;
    return 0;
}

void
clef_qdot_pack_panels(const clef_qdot_group *g, int64_t cols, int64_t r0,
    int64_t n, uint8_t *out)
{
    int64_t  r;
    int      t = qd_type_of(g->type);

    memset(out, 0, (size_t) ((n + PANEL - 1) / PANEL) * g->panel_bytes);
    for (r = 0; r < n; r++) {
        pack_row(g->type, cols / qd_block_values[t],
                 g->src + (size_t) (r0 + r) * g->src_stride,
                 out + (size_t) (r / PANEL) * g->panel_bytes,
                 (int) (r % PANEL));
    }
}
