/*
 * The quantized products' tile (qdot.h, qdot_kernel.h), written once over
 * a few vector operations that each instruction set's file defines before
 * including this one (qdot_avx512.c, qdot_avxvnni.c, qdot_avx2.c):
 *
 *   QD_FN(name)      the file's prefix for the functions below
 *   QD_TARGET        the target attribute
 *   QD_LANES         int32 / float lanes of a vector: 16 or 8
 *   QD_MR, QD_MR6    activation rows of a tile (Q6_K's and I8's: they
 *                    keep two integer sums per element), QD_NV vectors of
 *                    weight rows; QD_HALF 1 to also make tiles of QD_NV / 2
 *   QD_MRQ6          optional: Q6_K's rows where they differ from QD_MR6
 *   QD_DOT16, QD_WIDEN, QD_MADD16, QD_SC16, QD_BLEND16
 *                    optional, together: the K types' steps summed in
 *                    16-bit lanes (open16 below, q6k16)
 *   VI, VF           the integer and the float vector
 *   QD_DOT(acc, u, p)     acc + the sums of 4 products of the unsigned
 *                         bytes of u with the 4 signed bytes at p, per
 *                         lane, exact
 *   QD_DOT_Q8(acc, w, p)  the same for signed bytes w (Q8_0's codes), the
 *                         result less 128 times the 4 bytes' sum when
 *                         QD_Q8_SHIFT is 7 (it adds 128 to w), else exact
 *   vi_* / vf_*      loads, logic, shifts, conversions (below);
 *                    vi_lut16(p) the 16 bytes at p in every 16-byte lane,
 *                    vi_shuffle8(t, i) the bytes of t that i's low nibbles
 *                    name (vpshufb: i's bytes are 0 .. 15 here)
 *
 * Every path computes, lane by lane, the integers and the float operations
 * qdot.h writes down, in that order: the integer dot products are exact
 * sums, so how an instruction groups them does not matter, and the float
 * steps are the same IEEE operations, fused where fma is written.
 */

#define QD_INLINE  static inline __attribute__((always_inline))

#ifndef QD_MRQ6
#define QD_MRQ6  QD_MR6
#endif
#if (!defined(QD_DOT16) && QD_MRQ6 > QD_MR6) || QD_MRQ6 > QD_MR
#error "q6k keeps its second sums in QD_MR6 rows, q6k16 its sums in QD_MR"
#endif

#if QD_LANES == 16
#define QD_HALF_STEP(v)  0
#else
#define QD_HALF_STEP(v)  (ho[v] * 32)   /* rows 8-15 of a step */
#endif

/* I[m][v] += the dot of w with 4 codes of each activation row at a. */
#define QD_DOTS(I, v, w, a, mr)                                              \
    do {                                                                     \
        int  m_;                                                             \
        _Pragma("GCC unroll 12")                                             \
        for (m_ = 0; m_ < (mr); m_++) {                                      \
            (I)[m_][v] = QD_DOT((I)[m_][v], (w), (a) + m_ * 32);             \
        }                                                                    \
    } while (0)

#define QD_ZERO(I, mr, nv)                                                   \
    do {                                                                     \
        int  m_, v_;                                                         \
        _Pragma("GCC unroll 12")                                             \
        for (m_ = 0; m_ < (mr); m_++) {                                      \
            _Pragma("GCC unroll 2")                                          \
            for (v_ = 0; v_ < (nv); v_++) {                                  \
                (I)[m_][v_] = vi_zero();                                     \
            }                                                                \
        }                                                                    \
    } while (0)

/*
 * The float step of one 32-value block: for each row m and vector v,
 * t = (float) (I - (S << shift)) * ws; F = fma(t, da, F), then with a
 * minimum (mins > 0: + wm * dsa, mins < 0: - wm * dsa, fused).  shift < 0:
 * no offset.
 */
QD_TARGET QD_INLINE void
QD_FN(finish)(VF (*F)[2], VI (*I)[2], const VF *ws, const VF *wm, int mins,
    int shift, const clef_qdot_ameta *am, int mr, int nv)
{
    VF   da, dsa, tt;
    VI   o, x;
    int  m, v;

    _Pragma("GCC unroll 12")
    for (m = 0; m < mr; m++) {
        da = vf_bcast(&am[m].d);
        dsa = mins != 0 ? vf_bcast(&am[m].dsa) : da;
        o = shift >= 0 ? vi_slli32(vi_bcast(&am[m].s), shift) : vi_zero();
        _Pragma("GCC unroll 2")
        for (v = 0; v < nv; v++) {
            x = shift >= 0 ? vi_sub(I[m][v], o) : I[m][v];
            tt = vf_mul(vf_cvt(x), ws[v]);
            F[m][v] = vf_fma(tt, da, F[m][v]);
            if (mins > 0) {
                F[m][v] = vf_fma(wm[v], dsa, F[m][v]);
            } else if (mins < 0) {
                F[m][v] = vf_fnma(wm[v], dsa, F[m][v]);
            }
        }
    }
}

/* ---- the 32-value types ------------------------------------------------ */

/* Q8_0: eight steps of signed codes. */
QD_TARGET QD_INLINE void
QD_FN(q8_0)(VF (*F)[2], VI (*I)[2], const uint8_t **blk, const int *ho,
    const int8_t *a, const clef_qdot_ameta *am, int mr, int nv)
{
    VF   ws[2], wm[2];
    VI   w;
    int  j, v;

    QD_ZERO(I, mr, nv);
    _Pragma("GCC unroll 8")
    for (j = 0; j < 8; j++) {
        _Pragma("GCC unroll 2")
        for (v = 0; v < nv; v++) {
            w = vi_load(blk[v] + 32 + QD_STEP * j + QD_HALF_STEP(v));
            {
                int  m_;

                _Pragma("GCC unroll 12")
                for (m_ = 0; m_ < mr; m_++) {
                    I[m_][v] = QD_DOT_Q8(I[m_][v], w, a + m_ * 32 + 4 * j);
                }
            }
        }
    }
    for (v = 0; v < nv; v++) {
        ws[v] = vf_f16(blk[v] + ho[v] * 16);
        wm[v] = ws[v];
    }
    QD_FN(finish)(F, I, ws, wm, 0, QD_Q8_SHIFT, am, mr, nv);
}

/*
 * Q4_0, Q4_1, Q5_0, Q5_1: four chunks, low nibbles values 4c + i, high
 * nibbles 16 + 4c + i; the fifth bits (hb, when at >= 0) of value 4j + i
 * in bit j.  Codes are offset by `shift` (Q4_0 8 = 1 << 3, Q5_0 16) or
 * carry a minimum m (mins).
 */
QD_TARGET QD_INLINE void
QD_FN(legacy)(VF (*F)[2], VI (*I)[2], const uint8_t **blk, const int *ho,
    const int8_t *a, const clef_qdot_ameta *am, int mr, int nv, int qs,
    int mo, int hbo, int shift)
{
    const VI  lo4 = vi_set8(0x0f), b4 = vi_set8(0x10);
    VF        ws[2], wm[2];
    VI        x, w, hb[2];
    int       c, v;

    QD_ZERO(I, mr, nv);
    for (v = 0; v < nv; v++) {
        hb[v] = hbo >= 0 ? vi_load(blk[v] + hbo + QD_HALF_STEP(v)) : vi_zero();
    }
    _Pragma("GCC unroll 4")
    for (c = 0; c < 4; c++) {
        _Pragma("GCC unroll 2")
        for (v = 0; v < nv; v++) {
            x = vi_load(blk[v] + qs + QD_STEP * c + QD_HALF_STEP(v));
            w = vi_and(x, lo4);
            if (hbo >= 0) {
                /* value 4c + i: bit c to bit 4 */
                w = vi_or(w, vi_and(vi_slli16(hb[v], 4 - c), b4));
            }
            QD_DOTS(I, v, w, a + 4 * c, mr);
            w = vi_and(vi_srli16(x, 4), lo4);
            if (hbo >= 0) {
                /* value 16 + 4c + i: bit c + 4 to bit 4 */
                w = vi_or(w, vi_and(vi_srli16(hb[v], c), b4));
            }
            QD_DOTS(I, v, w, a + 16 + 4 * c, mr);
        }
    }
    for (v = 0; v < nv; v++) {
        ws[v] = vf_f16(blk[v] + ho[v] * 16);
        wm[v] = mo >= 0 ? vf_f16(blk[v] + mo + ho[v] * 16) : ws[v];
    }
    QD_FN(finish)(F, I, ws, wm, mo >= 0 ? 1 : 0, shift, am, mr, nv);
}

/*
 * NL4's four chunks of 4-bit indices at q (low nibbles values 4c + i, high
 * nibbles 16 + 4c + i) into the 16 int8 values of a codebook (lut), looked
 * up in registers (vpshufb) and multiplied as Q8_0's signed codes, into I.
 */
QD_TARGET QD_INLINE void
QD_FN(nl4_dots)(VI (*I)[2], const uint8_t **q, const int *ho, const int8_t *a,
    int mr, int nv, VI lut)
{
    const VI  lo4 = vi_set8(0x0f);
    VI        x, w;
    int       c, v, m_;

    QD_ZERO(I, mr, nv);
    _Pragma("GCC unroll 4")
    for (c = 0; c < 4; c++) {
        _Pragma("GCC unroll 2")
        for (v = 0; v < nv; v++) {
            x = vi_load(q[v] + QD_STEP * c + QD_HALF_STEP(v));
            w = vi_shuffle8(lut, vi_and(x, lo4));
            _Pragma("GCC unroll 12")
            for (m_ = 0; m_ < mr; m_++) {
                I[m_][v] = QD_DOT_Q8(I[m_][v], w, a + m_ * 32 + 4 * c);
            }
            w = vi_shuffle8(lut, vi_and(vi_srli16(x, 4), lo4));
            _Pragma("GCC unroll 12")
            for (m_ = 0; m_ < mr; m_++) {
                I[m_][v] = QD_DOT_Q8(I[m_][v], w, a + m_ * 32 + 16 + 4 * c);
            }
        }
    }
}

/* NL4 (IQ4_NL's blocks): the indices, the block's scale an f32. */
QD_TARGET QD_INLINE void
QD_FN(nl4)(VF (*F)[2], VI (*I)[2], const uint8_t **blk, const int *ho,
    const int8_t *a, const clef_qdot_ameta *am, int mr, int nv, VI lut)
{
    const uint8_t  *q[2];
    VF              ws[2];
    int             v;

    for (v = 0; v < nv; v++) {
        q[v] = blk[v] + NL4_QS;
    }
    QD_FN(nl4_dots)(I, q, ho, a, mr, nv, lut);
    for (v = 0; v < nv; v++) {
        ws[v] = vf_load((const float *) (const void *) (blk[v] + ho[v] * 32));
    }
    QD_FN(finish)(F, I, ws, ws, 0, QD_Q8_SHIFT, am, mr, nv);
}

/*
 * X4 (IQ4_XS's 256-value blocks as stored: 0.54 bytes a value against
 * NL4's 0.625): per 32 values s, NL4's indices, and the scale d * (sc -
 * 32) formed here from the fp16 d and the int8 sc - 32.  The product is
 * exact in f32 (11 bits times 6), the very number NL4 kept per 32 values,
 * so the same float steps on the same numbers: the same bits.
 */
QD_TARGET QD_INLINE void
QD_FN(x4)(VF (*F)[2], VI (*I)[2], const uint8_t **blk, const int *ho,
    const int8_t *aq, const clef_qdot_ameta *am, int64_t ab, int mr, int nv,
    VI lut)
{
    const uint8_t  *q[2];
    VF              d[2], ws[2];
    int             s, v;

    for (v = 0; v < nv; v++) {
        d[v] = vf_f16(blk[v] + ho[v] * 16);
    }
    /* not unrolled: s moves addresses only, and one sub-block's code
     * stays in the loop buffer as NL4's block does */
    _Pragma("GCC unroll 1")
    for (s = 0; s < 8; s++) {
        for (v = 0; v < nv; v++) {
            q[v] = blk[v] + X4_QS + QD_STEP * 4 * s;
        }
        QD_FN(nl4_dots)(I, q, ho, aq + s * ab * 32, mr, nv, lut);
        for (v = 0; v < nv; v++) {
            ws[v] = vf_mul(d[v], vf_cvt(vi_s8(blk[v] + X4_SC + 16 * s
                                              + ho[v] * 8)));
        }
        QD_FN(finish)(F, I, ws, ws, 0, QD_Q8_SHIFT, am + s * ab, mr, nv);
    }
}

/* ---- the K types -------------------------------------------------------- */

/* A sum computed here, in this order: the adds being exact, GCC would
 * otherwise regroup a chain of them into a tree over all its terms, which
 * then outnumber the registers and go to the stack. */
QD_TARGET QD_INLINE VI
QD_FN(chain)(VI x)
{
    __asm__ ("" : "+v" (x));
    return x;
}

/*
 * A K type's steps summed in groups: where the file defines QD_DOT16
 * (acc16 + the 16-bit pair sums of a step, no widening) and
 * QD_WIDEN(acc, h) (acc + h's pairs widened to 32 bits), a group's steps
 * add up in 16-bit lanes and widen once, which spares AVX2 a vpmaddwd per
 * step (its multiplier is the tile's bottleneck); elsewhere each step
 * goes straight into the 32-bit sum (open16 hands the sum itself on).
 * The same integers either way while a group's sum fits in 16 bits: the
 * group sizes (QD_G16_*) are chosen for it.
 */
QD_TARGET QD_INLINE VI
QD_FN(open16)(VI i)
{
#ifdef QD_DOT16
    (void) i;
    return vi_zero();
#else
    return i;
#endif
}

QD_TARGET QD_INLINE VI
QD_FN(close16)(VI i, VI h)
{
#ifdef QD_DOT16
    return QD_WIDEN(i, h);
#else
    (void) i;
    return h;
#endif
}

QD_TARGET QD_INLINE VI
QD_FN(dot16)(VI h, VI u, const int8_t *p)
{
#ifdef QD_DOT16
    return QD_FN(chain)(QD_DOT16(h, u, p));
#else
    return QD_DOT(h, u, p);
#endif
}

/* H[m][v] += the dot of w with 4 codes of each activation row at a, in
 * the group's lanes; a group opened from I and closed into it. */
#define QD_DOTS16(H, v, w, a, mr)                                            \
    do {                                                                     \
        int  m_;                                                             \
        _Pragma("GCC unroll 12")                                             \
        for (m_ = 0; m_ < (mr); m_++) {                                      \
            (H)[m_][v] = QD_FN(dot16)((H)[m_][v], (w), (a) + m_ * 32);       \
        }                                                                    \
    } while (0)

#define QD_GROUP(op, mr, nv)                                                 \
    do {                                                                     \
        int  m_, v_;                                                         \
        _Pragma("GCC unroll 12")                                             \
        for (m_ = 0; m_ < (mr); m_++) {                                      \
            _Pragma("GCC unroll 2")                                          \
            for (v_ = 0; v_ < (nv); v_++) {                                  \
                op;                                                          \
            }                                                                \
        }                                                                    \
    } while (0)
/* Steps per group: a step's 16-bit pair sums are at most 2 x 127 times
 * the largest code (Q4_K 15, Q5_K 31, Q6_K 63): 8 x 3810 = 30480, 4 x
 * 7874 = 31496 and 2 x 16002 = 32004, all under 32768. */
#define QD_G16_Q4K  8
#define QD_G16_Q5K  4
#define QD_G16_Q6K  2

#define QD_OPEN(I, H, mr, nv)                                                \
    QD_GROUP((H)[m_][v_] = QD_FN(open16)((I)[m_][v_]), mr, nv)
#define QD_CLOSE(I, H, mr, nv)                                               \
    QD_GROUP((I)[m_][v_] = QD_FN(close16)((I)[m_][v_], (H)[m_][v_]), mr, nv)

/* Fifth bit of step c (values 4c + i) at bit 4. */
QD_TARGET QD_INLINE VI
QD_FN(bit5)(VI hb, int c)
{
    const VI  b4 = vi_set8(0x10);

    if (c < 4) {
        return vi_and(vi_slli16(hb, 4 - c), b4);
    }
    return c == 4 ? vi_and(hb, b4) : vi_and(vi_srli16(hb, c - 4), b4);
}

/*
 * Q4_K and Q5_K (fifth bits when q5), one 256-value block: per sub-block
 * s, codes from the low (even s) or high (odd s) nibbles of pair s / 2's
 * chunks, ws = d * sc[s] and wm = dmin * mn[s] (exact: an fp16 value
 * times a 6-bit integer), x = ws q - wm.  Steps summed in groups of g16
 * (QD_DOT16).
 */
QD_TARGET QD_INLINE void
QD_FN(k45)(VF (*F)[2], VI (*I)[2], const uint8_t **blk, const int *ho,
    const int8_t *aq, const clef_qdot_ameta *am, int64_t ab, int mr, int nv,
    int q5, int g16)
{
    const VI               lo4 = vi_set8(0x0f);
    const int8_t          *a;
    const clef_qdot_ameta *ms;
    VF                     d[2], dmin[2], ws[2], wm[2];
    VI                     x, w, hb[2], H[QD_MR][2];
    int                    s, c, v;

    for (v = 0; v < nv; v++) {
        d[v] = vf_f16(blk[v] + ho[v] * 16);
        dmin[v] = vf_f16(blk[v] + 32 + ho[v] * 16);
    }
    _Pragma("GCC unroll 8")
    for (s = 0; s < 8; s++) {
        a = aq + s * ab * 32;
        ms = am + s * ab;
        QD_ZERO(I, mr, nv);
        for (v = 0; v < nv; v++) {
            hb[v] = q5 ? vi_load(blk[v] + QK_QH + QD_STEP * s + QD_HALF_STEP(v))
                       : vi_zero();
        }
        _Pragma("GCC unroll 8")
        for (c = 0; c < 8; c++) {
            if (c % g16 == 0) {
                QD_OPEN(I, H, mr, nv);
            }
            _Pragma("GCC unroll 2")
            for (v = 0; v < nv; v++) {
                x = vi_load(blk[v] + QK_QS + QD_STEP * (8 * (s / 2) + c)
                            + QD_HALF_STEP(v));
                w = (s & 1) ? vi_and(vi_srli16(x, 4), lo4) : vi_and(x, lo4);
                if (q5) {
                    w = vi_or(w, QD_FN(bit5)(hb[v], c));
                }
                QD_DOTS16(H, v, w, a + 4 * c, mr);
            }
            if (c % g16 == g16 - 1) {
                QD_CLOSE(I, H, mr, nv);
            }
        }
        for (v = 0; v < nv; v++) {
            ws[v] = vf_mul(d[v], vf_u8(blk[v] + QK_SC + 16 * s + ho[v] * 8));
            wm[v] = vf_mul(dmin[v], vf_u8(blk[v] + QK_MN + 16 * s + ho[v] * 8));
        }
        QD_FN(finish)(F, I, ws, wm, -1, -1, ms, mr, nv);
    }
}

/* Q6_K's 2-bit high part of sub-block j of a half, at bits 4-5. */
QD_TARGET QD_INLINE VI
QD_FN(hi2)(VI y, int j)
{
    const VI  b45 = vi_set8(0x30);

    switch (j) {
    case 0:
        return vi_and(vi_slli16(y, 4), b45);
    case 1:
        return vi_and(vi_slli16(y, 2), b45);
    case 2:
        return vi_and(y, b45);
    default:
        return vi_and(vi_srli16(y, 2), b45);
    }
}

/* Q6_K's codes of sub-block 4h + j at step c of a block b (hs: the
 * rows' half of the step). */
QD_TARGET QD_INLINE VI
QD_FN(q6w)(const uint8_t *b, int hs, int h, int j, int c)
{
    const VI  lo4 = vi_set8(0x0f);
    VI        x, y, w;

    x = vi_load(b + Q6_QL + QD_STEP * (16 * h + 8 * (j & 1) + c) + hs);
    y = vi_load(b + Q6_QH + QD_STEP * (8 * h + c) + hs);
    w = j < 2 ? vi_and(x, lo4) : vi_and(vi_srli16(x, 4), lo4);
    return vi_or(w, QD_FN(hi2)(y, j));
}

/*
 * Q6_K, one 256-value block: per sub-block s = 4h + j, codes 0..63 from
 * the low nibbles (j < 2) or high nibbles of quarter j & 1 of half h and
 * the 2-bit parts; the two 16-value halves summed apart (I, J), each less
 * 32 times its activation sum and times its int8 scale, then added: one
 * integer per block, times d.
 */
QD_TARGET QD_INLINE void
QD_FN(q6k)(VF (*F)[2], VI (*I)[2], VI (*J)[2], const uint8_t **blk,
    const int *ho, const int8_t *aq, const clef_qdot_ameta *am, int64_t ab,
    int mr, int nv)
{
    const int8_t          *a;
    const clef_qdot_ameta *ms;
    VF                     d[2], da, tt;
    VI                     w, sc0[2], sc1[2], o0, o1, t;
    int                    s, h, j, c, v, m;

    for (v = 0; v < nv; v++) {
        d[v] = vf_f16(blk[v] + ho[v] * 16);
    }
    _Pragma("GCC unroll 8")
    for (s = 0; s < 8; s++) {
        h = s / 4;
        j = s % 4;
        a = aq + s * ab * 32;
        ms = am + s * ab;
        QD_ZERO(I, mr, nv);
        QD_ZERO(J, mr, nv);
        _Pragma("GCC unroll 8")
        for (c = 0; c < 8; c++) {
            _Pragma("GCC unroll 2")
            for (v = 0; v < nv; v++) {
                w = QD_FN(q6w)(blk[v], QD_HALF_STEP(v), h, j, c);
                if (c < 4) {
                    QD_DOTS(I, v, w, a + 4 * c, mr);
                } else {
                    QD_DOTS(J, v, w, a + 4 * c, mr);
                }
            }
        }
        for (v = 0; v < nv; v++) {
            sc0[v] = vi_s8(blk[v] + Q6_SC + 16 * (2 * s) + ho[v] * 8);
            sc1[v] = vi_s8(blk[v] + Q6_SC + 16 * (2 * s + 1) + ho[v] * 8);
        }
        _Pragma("GCC unroll 12")
        for (m = 0; m < mr; m++) {
            da = vf_bcast(&ms[m].d);
            o0 = vi_bcast(&ms[m].s0);
            o1 = vi_slli32(vi_sub(vi_bcast(&ms[m].s), o0), 5);
            o0 = vi_slli32(o0, 5);
            _Pragma("GCC unroll 2")
            for (v = 0; v < nv; v++) {
                t = vi_add(vi_mullo(vi_sub(I[m][v], o0), sc0[v]),
                           vi_mullo(vi_sub(J[m][v], o1), sc1[v]));
                tt = vf_mul(vf_cvt(t), d[v]);
                F[m][v] = vf_fma(tt, da, F[m][v]);
            }
        }
    }
}

#ifdef QD_DOT16
/*
 * Q6_K where steps add up in 16-bit groups (QD_DOT16), the same integer
 * per sub-block as q6k's, in other terms: sc0 times half 0's products
 * plus sc1 times half 1's, each group widened by one vpmaddwd against its
 * half's scale in both 16-bit halves of its lane (no 32-bit multiply),
 * less 32 (sc0 s0 + sc1 s1), one more vpmaddwd of the two scales (times
 * 32: at most 4096, 16 bits) against the activation's two half sums (at
 * most 2032).  Exact: at most 128 x 4 x 16002 a half.
 */
QD_TARGET QD_INLINE void
QD_FN(q6k16)(VF (*F)[2], VI (*T)[2], const uint8_t **blk, const int *ho,
    const int8_t *aq, const clef_qdot_ameta *am, int64_t ab, int mr, int nv)
{
    const int8_t          *a;
    const clef_qdot_ameta *ms;
    VF                     d[2], da, tt;
    VI                     w, sc[2][2], scx[2], sp, t, H[QD_MR][2];
    int32_t                s01;
    int                    s, h, j, c, v, m;

    for (v = 0; v < nv; v++) {
        d[v] = vf_f16(blk[v] + ho[v] * 16);
    }
    _Pragma("GCC unroll 8")
    for (s = 0; s < 8; s++) {
        h = s / 4;
        j = s % 4;
        a = aq + s * ab * 32;
        ms = am + s * ab;
        for (v = 0; v < nv; v++) {
            sc[v][0] = QD_SC16(blk[v] + Q6_SC + 16 * (2 * s) + ho[v] * 8);
            sc[v][1] = QD_SC16(blk[v] + Q6_SC + 16 * (2 * s + 1) + ho[v] * 8);
        }
        QD_ZERO(T, mr, nv);
        _Pragma("GCC unroll 8")
        for (c = 0; c < 8; c++) {
            if (c % QD_G16_Q6K == 0) {
                QD_ZERO(H, mr, nv);
            }
            _Pragma("GCC unroll 2")
            for (v = 0; v < nv; v++) {
                w = QD_FN(q6w)(blk[v], QD_HALF_STEP(v), h, j, c);
                QD_DOTS16(H, v, w, a + 4 * c, mr);
            }
            if (c % QD_G16_Q6K == QD_G16_Q6K - 1) {
                QD_GROUP(T[m_][v_] = QD_FN(chain)(vi_add(T[m_][v_],
                             QD_MADD16(H[m_][v_], sc[v_][c / 4]))),
                         mr, nv);
            }
        }
        for (v = 0; v < nv; v++) {
            scx[v] = vi_slli16(QD_BLEND16(sc[v][0], sc[v][1]), 5);
        }
        _Pragma("GCC unroll 12")
        for (m = 0; m < mr; m++) {
            da = vf_bcast(&ms[m].d);
            s01 = (int32_t) ((uint32_t) (uint16_t) ms[m].s0
                             | (uint32_t) (ms[m].s - ms[m].s0) << 16);
            sp = vi_bcast(&s01);
            _Pragma("GCC unroll 2")
            for (v = 0; v < nv; v++) {
                t = vi_sub(T[m][v], QD_MADD16(scx[v], sp));
                tt = vf_mul(vf_cvt(t), d[v]);
                F[m][v] = vf_fma(tt, da, F[m][v]);
            }
        }
    }
}
#endif

/*
 * I8 and I8M (mins), one 256-value integer form: per 32 values s, the two
 * 16-value halves' sums of the int8 codes times the activation's (I, J;
 * less 128 times the half's activation sum where QD_DOT_Q8 adds 128),
 * each times its int8 scale and added: one integer, times d (f32), then
 * fused with da; with minima, mn0 s0 + mn1 (s - s0) times dmin off.
 */
QD_TARGET QD_INLINE void
QD_FN(i8)(VF (*F)[2], VI (*I)[2], VI (*J)[2], const uint8_t **blk,
    const int *ho, const int8_t *aq, const clef_qdot_ameta *am, int64_t ab,
    int mr, int nv, int mins)
{
    const int8_t          *a;
    const clef_qdot_ameta *ms;
    VF                     d[2], dmin[2], da, tt;
    VI                     w, sc0[2], sc1[2], mn0[2], mn1[2], s0, s1, x0, x1;
    VI                     t;
    int                    s, c, v, m;

    for (v = 0; v < nv; v++) {
        d[v] = vf_load((const float *) (const void *) (blk[v] + I8_D
                                                       + ho[v] * 32));
        dmin[v] = vf_load((const float *) (const void *) (blk[v] + I8_DMIN
                                                          + ho[v] * 32));
    }
    _Pragma("GCC unroll 8")
    for (s = 0; s < 8; s++) {
        a = aq + s * ab * 32;
        ms = am + s * ab;
        QD_ZERO(I, mr, nv);
        QD_ZERO(J, mr, nv);
        _Pragma("GCC unroll 8")
        for (c = 0; c < 8; c++) {
            _Pragma("GCC unroll 2")
            for (v = 0; v < nv; v++) {
                w = vi_load(blk[v] + I8_QS + QD_STEP * (8 * s + c)
                            + QD_HALF_STEP(v));
                {
                    int  m_;

                    _Pragma("GCC unroll 12")
                    for (m_ = 0; m_ < mr; m_++) {
                        if (c < 4) {
                            I[m_][v] = QD_DOT_Q8(I[m_][v], w,
                                                 a + m_ * 32 + 4 * c);
                        } else {
                            J[m_][v] = QD_DOT_Q8(J[m_][v], w,
                                                 a + m_ * 32 + 4 * c);
                        }
                    }
                }
            }
        }
        for (v = 0; v < nv; v++) {
            sc0[v] = vi_s8(blk[v] + I8_SC + 16 * (2 * s) + ho[v] * 8);
            sc1[v] = vi_s8(blk[v] + I8_SC + 16 * (2 * s + 1) + ho[v] * 8);
            mn0[v] = mins ? vi_s8(blk[v] + I8_MN + 16 * (2 * s) + ho[v] * 8)
                          : vi_zero();
            mn1[v] = mins ? vi_s8(blk[v] + I8_MN + 16 * (2 * s + 1)
                                  + ho[v] * 8)
                          : vi_zero();
        }
        _Pragma("GCC unroll 12")
        for (m = 0; m < mr; m++) {
            da = vf_bcast(&ms[m].d);
            s0 = vi_bcast(&ms[m].s0);
            s1 = vi_sub(vi_bcast(&ms[m].s), s0);
            _Pragma("GCC unroll 2")
            for (v = 0; v < nv; v++) {
                x0 = I[m][v];
                x1 = J[m][v];
                if (QD_Q8_SHIFT >= 0) {
                    x0 = vi_sub(x0, vi_slli32(s0, QD_Q8_SHIFT >= 0
                                                  ? QD_Q8_SHIFT : 0));
                    x1 = vi_sub(x1, vi_slli32(s1, QD_Q8_SHIFT >= 0
                                                  ? QD_Q8_SHIFT : 0));
                }
                t = vi_add(vi_mullo(x0, sc0[v]), vi_mullo(x1, sc1[v]));
                tt = vf_mul(vf_cvt(t), d[v]);
                F[m][v] = vf_fma(tt, da, F[m][v]);
                if (mins) {
                    t = vi_add(vi_mullo(mn0[v], s0), vi_mullo(mn1[v], s1));
                    tt = vf_mul(vf_cvt(t), dmin[v]);
                    F[m][v] = vf_fnma(tt, da, F[m][v]);
                }
            }
        }
    }
}

/*
 * Q3_K and Q2_K (q3 0) as stored, one 256-value block: per sub-block s =
 * 4h + j, the 2-bit codes at bits 2j of half h's steps, Q3_K's third bits
 * at bit 2 (codes q + 4, 0 .. 7); the two 16-value halves summed apart (I,
 * J).  Q3_K: each half less 4 times its activation sum, times its int8
 * scale, added, times d, fused with da: the integers and the float steps
 * of the Q6_K block Q3_K was rewritten as (whose halves were less 32 times
 * the sum, of the codes q + 32), so the same bits.  Q2_K: each half times
 * its 4-bit scale, added, times d, fused with da, then mn0 s0 + mn1 (s -
 * s0) times dmin taken off: the steps of the I8M form it was read as.
 */
QD_TARGET QD_INLINE void
QD_FN(q23)(VF (*F)[2], VI (*I)[2], VI (*J)[2], const uint8_t **blk,
    const int *ho, const int8_t *aq, const clef_qdot_ameta *am, int64_t ab,
    int mr, int nv, int q3)
{
    const VI               lo2 = vi_set8(0x03), lo4 = vi_set8(0x0f);
    const VI               b2 = vi_set8(0x04);
    const int8_t          *a;
    const clef_qdot_ameta *ms;
    VF                     d[2], dmin[2], da, tt;
    VI                     x, w, hb[2], sc0[2], sc1[2], mn0[2], mn1[2];
    VI                     s0, s1, x0, x1, t;
    int                    s, h, j, c, v, m, qs = q3 ? Q3_QS : Q2_QS;

    for (v = 0; v < nv; v++) {
        d[v] = vf_f16(blk[v] + ho[v] * 16);
        dmin[v] = q3 ? d[v] : vf_f16(blk[v] + Q2_DMIN + ho[v] * 16);
    }
    _Pragma("GCC unroll 8")
    for (s = 0; s < 8; s++) {
        h = s / 4;
        j = s % 4;
        a = aq + s * ab * 32;
        ms = am + s * ab;
        QD_ZERO(I, mr, nv);
        QD_ZERO(J, mr, nv);
        for (v = 0; v < nv; v++) {
            hb[v] = q3 ? vi_load(blk[v] + Q3_QH + QD_STEP * s + QD_HALF_STEP(v))
                       : vi_zero();
        }
        _Pragma("GCC unroll 8")
        for (c = 0; c < 8; c++) {
            _Pragma("GCC unroll 2")
            for (v = 0; v < nv; v++) {
                x = vi_load(blk[v] + qs + QD_STEP * (8 * h + c)
                            + QD_HALF_STEP(v));
                w = vi_and(vi_srli16(x, 2 * j), lo2);
                if (q3) {
                    /* the third bit of value 4c + i: bit c to bit 2 */
                    x = c < 2 ? vi_slli16(hb[v], 2 - c)
                              : vi_srli16(hb[v], c - 2);
                    w = vi_or(w, vi_and(x, b2));
                }
                if (c < 4) {
                    QD_DOTS(I, v, w, a + 4 * c, mr);
                } else {
                    QD_DOTS(J, v, w, a + 4 * c, mr);
                }
            }
        }
        for (v = 0; v < nv; v++) {
            if (q3) {
                sc0[v] = vi_s8(blk[v] + Q3_SC + 16 * (2 * s) + ho[v] * 8);
                sc1[v] = vi_s8(blk[v] + Q3_SC + 16 * (2 * s + 1) + ho[v] * 8);
                mn0[v] = mn1[v] = vi_zero();
                continue;
            }
            x = vi_u8(blk[v] + Q2_SC + 16 * (2 * s) + ho[v] * 8);
            sc0[v] = vi_and(x, lo4);
            mn0[v] = vi_srli32(x, 4);
            x = vi_u8(blk[v] + Q2_SC + 16 * (2 * s + 1) + ho[v] * 8);
            sc1[v] = vi_and(x, lo4);
            mn1[v] = vi_srli32(x, 4);
        }
        _Pragma("GCC unroll 12")
        for (m = 0; m < mr; m++) {
            da = vf_bcast(&ms[m].d);
            s0 = vi_bcast(&ms[m].s0);
            s1 = vi_sub(vi_bcast(&ms[m].s), s0);
            _Pragma("GCC unroll 2")
            for (v = 0; v < nv; v++) {
                x0 = q3 ? vi_sub(I[m][v], vi_slli32(s0, 2)) : I[m][v];
                x1 = q3 ? vi_sub(J[m][v], vi_slli32(s1, 2)) : J[m][v];
                t = vi_add(vi_mullo(x0, sc0[v]), vi_mullo(x1, sc1[v]));
                tt = vf_mul(vf_cvt(t), d[v]);
                F[m][v] = vf_fma(tt, da, F[m][v]);
                if (!q3) {
                    t = vi_add(vi_mullo(mn0[v], s0), vi_mullo(mn1[v], s1));
                    tt = vf_mul(vf_cvt(t), dmin[v]);
                    F[m][v] = vf_fnma(tt, da, F[m][v]);
                }
            }
        }
    }
}

/* ---- the tile ------------------------------------------------------------ */

QD_TARGET QD_INLINE void
QD_FN(run)(const clef_qdot_tile *t, qd_type type, int mr, int nv)
{
    VF                     F[QD_MR][2];
    VI                     I[QD_MR][2], J[QD_MR6][2], lut;
    const uint8_t         *vp[2], *blk[2];
    const int8_t          *a;
    const clef_qdot_ameta *ms;
    int                    ho[2], m, v, g;
    int64_t                b, ab = t->ab;
    size_t                 bb = (size_t) qd_block_bytes[type];

    for (v = 0; v < nv; v++) {
#if QD_LANES == 16
        vp[v] = t->w + (size_t) v * t->ps;
        ho[v] = 0;
        (void) g;
#else
        g = t->h0 + v;
        vp[v] = t->w + (size_t) (g >> 1) * t->ps;
        ho[v] = g & 1;
#endif
    }
    _Pragma("GCC unroll 12")
    for (m = 0; m < mr; m++) {
        _Pragma("GCC unroll 2")
        for (v = 0; v < nv; v++) {
            F[m][v] = t->load ? vf_load(t->y + m * t->ldy + v * QD_LANES)
                              : vf_zero();
        }
    }

    lut = type == QT_NL4 || type == QT_X4 ? vi_lut16(clef_iq4nl_values)
          : type == QT_MX4 ? vi_lut16(clef_mxfp4_values) : vi_zero();
    for (b = 0; b < t->nb; b++) {
        for (v = 0; v < nv; v++) {
            blk[v] = vp[v] + (size_t) b * bb;
        }
        switch (type) {
        case QT_NL4:
        case QT_MX4:
            QD_FN(nl4)(F, I, blk, ho, t->aq + b * ab * 32, t->am + b * ab, mr,
                       nv, lut);
            break;
        case QT_Q8_0:
            QD_FN(q8_0)(F, I, blk, ho, t->aq + b * ab * 32, t->am + b * ab, mr,
                        nv);
            break;
        case QT_Q4_0:
            QD_FN(legacy)(F, I, blk, ho, t->aq + b * ab * 32, t->am + b * ab, mr,
                          nv, 32, -1, -1, 3);
            break;
        case QT_Q4_1:
            QD_FN(legacy)(F, I, blk, ho, t->aq + b * ab * 32, t->am + b * ab, mr,
                          nv, 64, 32, -1, -1);
            break;
        case QT_Q5_0:
            QD_FN(legacy)(F, I, blk, ho, t->aq + b * ab * 32, t->am + b * ab, mr,
                          nv, 96, -1, 32, 4);
            break;
        case QT_Q5_1:
            QD_FN(legacy)(F, I, blk, ho, t->aq + b * ab * 32, t->am + b * ab, mr,
                          nv, 128, 32, 64, -1);
            break;
        case QT_Q4_K:
        case QT_Q5_K:
            a = t->aq + b * 8 * ab * 32;
            ms = t->am + b * 8 * ab;
            QD_FN(k45)(F, I, blk, ho, a, ms, ab, mr, nv, type == QT_Q5_K,
                       type == QT_Q5_K ? QD_G16_Q5K : QD_G16_Q4K);
            break;
        case QT_X4:
            a = t->aq + b * 8 * ab * 32;
            ms = t->am + b * 8 * ab;
            QD_FN(x4)(F, I, blk, ho, a, ms, ab, mr, nv, lut);
            break;
        case QT_Q3_K:
        case QT_Q2_K:
            a = t->aq + b * 8 * ab * 32;
            ms = t->am + b * 8 * ab;
            QD_FN(q23)(F, I, J, blk, ho, a, ms, ab, mr, nv, type == QT_Q3_K);
            break;
        case QT_I8:
        case QT_I8M:
            a = t->aq + b * 8 * ab * 32;
            ms = t->am + b * 8 * ab;
            QD_FN(i8)(F, I, J, blk, ho, a, ms, ab, mr, nv, type == QT_I8M);
            break;
        default:
            a = t->aq + b * 8 * ab * 32;
            ms = t->am + b * 8 * ab;
#ifdef QD_DOT16
            QD_FN(q6k16)(F, I, blk, ho, a, ms, ab, mr, nv);
#else
            QD_FN(q6k)(F, I, J, blk, ho, a, ms, ab, mr, nv);
#endif
            break;
        }
    }

    _Pragma("GCC unroll 12")
    for (m = 0; m < mr; m++) {
        _Pragma("GCC unroll 2")
        for (v = 0; v < nv; v++) {
            vf_store(t->y + m * t->ldy + v * QD_LANES, F[m][v]);
        }
    }
}

/* One entry point per type and width, each with its constants. */
#define QD_ENTRY(name, type, mr, nv)                                         \
    QD_TARGET static void                                                    \
    QD_FN(name)(const clef_qdot_tile *t)                                     \
    {                                                                        \
        QD_FN(run)(t, type, mr, nv);                                         \
    }

QD_ENTRY(t_q8_0, QT_Q8_0, QD_MR, QD_NV)
QD_ENTRY(t_q4_0, QT_Q4_0, QD_MR, QD_NV)
QD_ENTRY(t_q4_1, QT_Q4_1, QD_MR, QD_NV)
QD_ENTRY(t_q5_0, QT_Q5_0, QD_MR, QD_NV)
QD_ENTRY(t_q5_1, QT_Q5_1, QD_MR, QD_NV)
QD_ENTRY(t_q4_k, QT_Q4_K, QD_MR, QD_NV)
QD_ENTRY(t_q5_k, QT_Q5_K, QD_MR, QD_NV)
QD_ENTRY(t_q6_k, QT_Q6_K, QD_MRQ6, QD_NV)
QD_ENTRY(t_i8, QT_I8, QD_MR6, QD_NV)
QD_ENTRY(t_i8m, QT_I8M, QD_MR6, QD_NV)
QD_ENTRY(t_nl4, QT_NL4, QD_MR, QD_NV)
QD_ENTRY(t_x4, QT_X4, QD_MR, QD_NV)
QD_ENTRY(t_q3_k, QT_Q3_K, QD_MR6, QD_NV)
QD_ENTRY(t_q2_k, QT_Q2_K, QD_MR6, QD_NV)
QD_ENTRY(t_mx4, QT_MX4, QD_MR, QD_NV)
#if QD_HALF
QD_ENTRY(h_q8_0, QT_Q8_0, QD_MR, QD_NV / 2)
QD_ENTRY(h_q4_0, QT_Q4_0, QD_MR, QD_NV / 2)
QD_ENTRY(h_q4_1, QT_Q4_1, QD_MR, QD_NV / 2)
QD_ENTRY(h_q5_0, QT_Q5_0, QD_MR, QD_NV / 2)
QD_ENTRY(h_q5_1, QT_Q5_1, QD_MR, QD_NV / 2)
QD_ENTRY(h_q4_k, QT_Q4_K, QD_MR, QD_NV / 2)
QD_ENTRY(h_q5_k, QT_Q5_K, QD_MR, QD_NV / 2)
QD_ENTRY(h_q6_k, QT_Q6_K, QD_MRQ6, QD_NV / 2)
QD_ENTRY(h_i8, QT_I8, QD_MR6, QD_NV / 2)
QD_ENTRY(h_i8m, QT_I8M, QD_MR6, QD_NV / 2)
QD_ENTRY(h_nl4, QT_NL4, QD_MR, QD_NV / 2)
QD_ENTRY(h_x4, QT_X4, QD_MR, QD_NV / 2)
QD_ENTRY(h_q3_k, QT_Q3_K, QD_MR6, QD_NV / 2)
QD_ENTRY(h_q2_k, QT_Q2_K, QD_MR6, QD_NV / 2)
QD_ENTRY(h_mx4, QT_MX4, QD_MR, QD_NV / 2)
#define QD_HALVES                                                            \
    { QD_FN(h_q8_0), QD_FN(h_q4_0), QD_FN(h_q4_1), QD_FN(h_q5_0),            \
      QD_FN(h_q5_1), QD_FN(h_q4_k), QD_FN(h_q5_k), QD_FN(h_q6_k),            \
      QD_FN(h_i8), QD_FN(h_i8m), QD_FN(h_nl4), QD_FN(h_x4),                  \
      QD_FN(h_q3_k), QD_FN(h_q2_k), QD_FN(h_mx4) }
#else
#define QD_HALVES  { NULL }
#endif

#define QD_TILES                                                             \
    { QD_FN(t_q8_0), QD_FN(t_q4_0), QD_FN(t_q4_1), QD_FN(t_q5_0),            \
      QD_FN(t_q5_1), QD_FN(t_q4_k), QD_FN(t_q5_k), QD_FN(t_q6_k),            \
      QD_FN(t_i8), QD_FN(t_i8m), QD_FN(t_nl4), QD_FN(t_x4),                  \
      QD_FN(t_q3_k), QD_FN(t_q2_k), QD_FN(t_mx4) }

#define QD_MRS                                                               \
    { QD_MR, QD_MR, QD_MR, QD_MR, QD_MR, QD_MR, QD_MR, QD_MRQ6, QD_MR6,      \
      QD_MR6, QD_MR, QD_MR, QD_MR6, QD_MR6, QD_MR }
