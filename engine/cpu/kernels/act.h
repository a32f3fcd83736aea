/*
 * The activation loops of the CPU ops, eight lanes at a time (vec.h's
 * clef_exp8() and friends) with the scalar functions on the tail.  Every
 * element gets the bits the scalar expression in the comment gives it,
 * wherever it falls in the row: the tests compare them exactly.
 */
#ifndef CLEF_CPU_ACT_H
#define CLEF_CPU_ACT_H

/* g[i] = clef_silu(g[i]) * u[i] (SwiGLU) */
void  clef_cpu_silu_mul(float *g, const float *u, int n);

/* o[i] = o[i] * clef_sigmoid(g[i]) (the attention's output gate) */
void  clef_cpu_sigmoid_mul(float *o, const float *g, int n);

/* y[i] = (w[i] * (x[i] * r)) * clef_silu(z[i]) (the gated RMSNorm) */
void  clef_cpu_scale_gate_silu(const float *x, const float *z, float *y,
    int n, const float *w, float r);

/* The chunked delta rule's decay of one row s of its masks (gdn.c), for
 * r < n: e = clef_exp(gs - gam[r]), kk[r] = kk[r] * (bs * e),
 * qk[r] = qk[r] * e. */
void  clef_cpu_decay_row(float *kk, float *qk, const float *gam, float gs,
    float bs, int n);

/* s[i] = clef_exp(s[i] - m) for i < n, and returns clef_vec_sum(s, n) of
 * the new values, summed in that function's order (a softmax row). */
float clef_cpu_exp_sum(float *s, int n, float m);

#endif
