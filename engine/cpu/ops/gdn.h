/*
 * The Gated DeltaNet core (spec §3.1 steps 4-7), fp32 throughout.
 *
 * Per value head j (using query/key head j / (Hv/Hk)) the state S (dk x dv,
 * zero at each record's start) follows the gated delta rule
 *     S~ = e^{g_t} S,  d = beta_t (v_t - S~^T k_t),  S = S~ + k_t d^T,
 *     o_t = S^T q_t.
 * clef_cpu_gdn_recurrent_head() runs it token by token.
 * clef_cpu_gdn_chunk_head() computes the same thing 64 tokens at a time in
 * the WY/UT form (spec §3.1 "Chunked prefill"): inside a chunk, with
 * gamma the cumulative sum of g and Gamma_sr = e^{gamma_s - gamma_r},
 *     A  = strict_lower(diag(beta) K K^T * Gamma)
 *     U  = (I + A)^-1 diag(beta) V,   W = (I + A)^-1 diag(beta e^gamma) K
 *     V' = U - W S
 *     O  = (Q * e^gamma) S + (Q K^T * Gamma, lower incl. diagonal) V'
 *     S  = e^{gamma_n} S + (K * e^{gamma_n - gamma})^T V'
 * which is exact algebra, not an approximation: the unit lower-triangular
 * solve is the product of the chunk's (I - beta k k^T) factors.  The small
 * matrix products run on the calling thread (clef_cpu_gemm()).  Chunks start
 * at the record's first token, so a record computes the same whatever is
 * packed around it.
 */
#ifndef CLEF_CPU_GDN_H
#define CLEF_CPU_GDN_H

#include <stddef.h>
#include <stdint.h>

#include "cpu/parallel/pool.h"

#define CLEF_GDN_CHUNK  64

/* In place, per token: every q and k head L2-normalised as
 * x * rsqrt(sum(x^2) + 1e-6), then q scaled by dk^-1/2; and per value head
 * beta = sigmoid(b), g = -exp(A_log) * softplus(a + dt_bias).
 * qk: q heads at offset 0, k heads at hk * dk, row stride ldqk.
 * ba: b at offset 0 and a at offset hv, row stride ldba.
 * beta, g: [tokens][hv]. */
void clef_cpu_gdn_prepare(clef_cpu_pool *pool, float *qk, int64_t ldqk,
    int64_t tokens, int hk, int dk, const float *ba, int64_t ldba, int hv,
    const float *A_log, const float *dt_bias, float *beta, float *g);

/* Floats of scratch one head needs (per worker). */
size_t clef_cpu_gdn_scratch_floats(int dk, int dv);

/* One value head over one record of T tokens.  q, k: rows of dk at stride
 * ldqk; v, o: rows of dv at strides ldv, ldo; g, beta: one float per token
 * at stride ldgb.  state NULL: S starts at zero (in scratch); else S is
 * state (dk x dv), read and left as the tokens leave it, so that a record
 * run in parts starting at multiples of CLEF_GDN_CHUNK computes the bits
 * of the record run whole (chunked prefill). */
void clef_cpu_gdn_chunk_head(int64_t T, int dk, int dv, const float *q,
    const float *k, int64_t ldqk, const float *v, int64_t ldv, const float *g,
    const float *beta, int64_t ldgb, float *o, int64_t ldo, float *scratch,
    float *state);

void clef_cpu_gdn_recurrent_head(int64_t T, int dk, int dv, const float *q,
    const float *k, int64_t ldqk, const float *v, int64_t ldv, const float *g,
    const float *beta, int64_t ldgb, float *o, int64_t ldo, float *scratch,
    float *state);

typedef struct {
    const float  *q, *k;        /* head h at + h * dk */
    int64_t       ldqk;
    const float  *v;            /* head j at + j * dv */
    int64_t       ldv;
    const float  *g, *beta;     /* [tokens][hv] */
    float        *o;            /* head j at + j * dv */
    int64_t       ldo;
    int           hk, hv, dk, dv;
    int           recurrent;    /* 1: token by token (tests) */
} clef_gdn_args;

/* Every (record, value head) of a packed batch, in parallel; scratch holds
 * clef_cpu_gdn_scratch_floats() floats per pool worker. */
void clef_cpu_gdn(clef_cpu_pool *pool, const clef_gdn_args *a,
    const int32_t *cu_seqlens, int n_records, float *scratch);

/* The same where records carry their states from and to their other parts
 * (chunked prefill): state[r], when not NULL, is record r's (hv heads of
 * dk x dv, head j at + j dk dv), zero before its first part; NULL entries
 * (or state NULL) start from zero. */
void clef_cpu_gdn_states(clef_cpu_pool *pool, const clef_gdn_args *a,
    const int32_t *cu_seqlens, int n_records, float *const *state,
    float *scratch);

#endif
