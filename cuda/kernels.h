/*
 * Launchers of the CUDA backend's kernels (the .cu files beside it), callable from C.
 *
 * Activations are row-major; "ld" is a row stride in elements.  bf16 data
 * is passed as clef_bf16 (its 16 bits) so that C code never needs
 * cuda_bf16.h.  Every launcher only enqueues work on the stream and returns
 * cudaGetLastError(): nothing here synchronises with the host.
 *
 * Sequences are packed: token t of the batch belongs to record r when
 * cu[r] <= t < cu[r + 1]; pos[t] = t - cu[r] is its position in the record.
 */
#ifndef CLEF_CUDA_KERNELS_H
#define CLEF_CUDA_KERNELS_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef uint16_t  clef_bf16;

/* Raises the dynamic shared-memory limit of the kernels that use more than
 * 48 KB, each to what its largest launch needs (the fields kernel: to what
 * its static array leaves of the opt-in limit).  Once per device (it
 * applies to the current one), before any launch and outside graph
 * capture.  cudaErrorInvalidValue: a kernel cannot fit on this device. */
cudaError_t clef_k_setup(void);
cudaError_t clef_k_setup_gdn(void);
cudaError_t clef_k_setup_attention(void);
cudaError_t clef_k_setup_head(void);

/* ---- backbone (kernels.cu) ------------------------------------------- */

/* out[t] = table[ids[t]], rows of H (H % 8 == 0). */
cudaError_t clef_k_embed(const int32_t *ids, const clef_bf16 *table,
    clef_bf16 *out, int T, int H, cudaStream_t s);

/* Zero-centred RMSNorm: y = x / sqrt(mean(x^2) + eps) * (1 + w), fp32 math. */
cudaError_t clef_k_rmsnorm(const clef_bf16 *x, const clef_bf16 *w,
    clef_bf16 *y, int T, int H, float eps, cudaStream_t s);

/* The same with the multiplier w itself when plain (Clef Omni's norms,
 * clef_text_config.norm_plus_one 0), 1 + w otherwise. */
cudaError_t clef_k_rmsnorm_form(const clef_bf16 *x, const clef_bf16 *w,
    int plain, clef_bf16 *y, int T, int H, float eps, cudaStream_t s);

/* u[t, c] = silu(sum_i wt[i][c] * x[t - K + 1 + i, c]) over the record of t
 * only (zeros before its first token); wt is the conv weight transposed to
 * [K][C].  C % 8 == 0, ldx % 8 == 0. */
cudaError_t clef_k_conv_silu(const clef_bf16 *x, int ldx, const clef_bf16 *wt,
    int K, const int32_t *pos, clef_bf16 *u, int T, int C, cudaStream_t s);

/* Gated RMSNorm of every (token, v-head) row of o, in place:
 * o = bf16(bf16(o / rms(o)) * w) * silu(z).  z row t starts at z + t * ldz. */
cudaError_t clef_k_gated_norm(clef_bf16 *o, const clef_bf16 *z, int ldz,
    const float *w, int T, int Hv, int dv, float eps, cudaStream_t s);

/* q/k of a full-attention layer from its projection row [q|gate per head,
 * or q only | k | v]: RMSNorm1p per head, then NeoX RoPE on the first
 * `rot` dims at position pos[t].  q -> [T][Hq*hd], k -> [T][Hkv*hd]. */
typedef struct {
    const clef_bf16  *proj;
    int               ldp;
    int               q_hstride;      /* 2*hd when gated, hd otherwise */
    int               k_off;          /* column of k head 0 in proj */
    const clef_bf16  *q_norm;
    const clef_bf16  *k_norm;
    const int32_t    *pos;
    /* M-RoPE (a batch with images): NULL for text, else [3][T] positions;
     * rotary pair j then turns by mpos[clef_mrope_axis(msec, j)][t] */
    const int32_t    *mpos;
    int               msec[3];
    const float      *inv_freq;       /* [rot / 2] */
    int               rot;
    int               plain_norm;     /* 1: the norms multiply by w (Clef
                                         Omni), 0: by 1 + w */
    clef_bf16        *q;
    clef_bf16        *k;
    int               T, Hq, Hkv, hd;
    float             eps;
} clef_k_rope_args;

cudaError_t clef_k_qk_norm_rope(const clef_k_rope_args *a, cudaStream_t s);

/* out[t, i] = bf16(bf16(silu(gu[t, i])) * gu[t, I + i]).  I % 8 == 0. */
cudaError_t clef_k_swiglu(const clef_bf16 *gu, int ld, clef_bf16 *out, int T,
    int I, cudaStream_t s);

/* dst[i] = float(src[i]) for n elements. */
cudaError_t clef_k_bf16_to_f32(const clef_bf16 *src, float *dst, int64_t n,
    cudaStream_t s);

/* ---- all-reduce of ranks that share one device (comm_same.c) ----------- */

#define CLEF_K_RANKS_MAX  16

typedef struct {
    void  *buf[CLEF_K_RANKS_MAX];
} clef_k_rank_bufs;

/* Every buffer b->buf[0 .. n_ranks) (n elements, bf16 or fp32, all on the
 * current device) becomes their element-wise sum, taken in fp32 in rank
 * order and rounded once: identical bits in every buffer.  The caller
 * orders the other ranks' streams around s. */
cudaError_t clef_k_sum_ranks(const clef_k_rank_bufs *b, int n_ranks, int64_t n,
    int is_bf16, cudaStream_t s);

/* ---- gated delta rule (gdn.cu) --------------------------------------- */

typedef struct {
    const clef_bf16  *u;              /* conv output [T][ldu]: q | k | v */
    int               ldu;
    const clef_bf16  *ba;             /* projection rows holding b and a */
    int               ldba;
    int               b_off, a_off;   /* columns of b and a, v-head 0 */
    const float      *neg_a;          /* -exp(A_log), [Hv] */
    const float      *dt_bias;        /* [Hv] */
    const int32_t    *cu;             /* [n_records + 1] */
    int               n_records;
    clef_bf16        *o;              /* [T][Hv*dv] */
    int               Hk, Hv, dk, dv;
} clef_k_gdn_args;

/* Chunked (C = 64) gated delta rule with L2-normalised q, k, fp32 state
 * per (record, v-head), TF32 tensor cores.  dk <= 128. */
cudaError_t clef_k_gdn(const clef_k_gdn_args *a, cudaStream_t s);
int         clef_k_gdn_supported(int dk, int dv);

/* ---- causal varlen attention (attention.cu) -------------------------- */

typedef struct {
    const clef_bf16  *q;  int ldq;  int q_hs;   /* head h at q + h*q_hs */
    const clef_bf16  *k;  int ldk;  int k_hs;
    const clef_bf16  *v;  int ldv;  int v_hs;
    const clef_bf16  *gate; int ldg; int g_hs; /* NULL: no output gate */
    clef_bf16        *out; int ldo; int o_hs;
    const int32_t    *tiles;          /* [n_tiles][3]: start, len, qbase */
    int               n_tiles;
    int               Hq, Hkv, hd;
} clef_k_attn_args;

/* o = softmax(q k^T / sqrt(hd), causal within the record) v, GQA, then
 * o * sigmoid(gate).  Tiles are 64 query rows of one record. */
cudaError_t clef_k_attention(const clef_k_attn_args *a, cudaStream_t s);
int         clef_k_attention_supported(int hd);
#define CLEF_K_ATTN_TILE  64

/* The same without the causal mask and without the gate (a.gate must be
 * NULL), GQA or not: every query of a tile's record sees all its keys.
 * The vision tower's attention inside each image (tiles of one image). */
cudaError_t clef_k_attention_bidir(const clef_k_attn_args *a, cudaStream_t s);

/* ---- vision tower (vision_kernels.cu) -------------------------------- */

/* y = bf16((x - mean) / sqrt(var + eps) * w + b) per row of n fp32 values
 * (biased variance, fp32 moments, two passes). */
cudaError_t clef_k_vlayernorm(const float *x, const float *w, const float *b,
    clef_bf16 *y, int rows, int n, float eps, cudaStream_t s);

/* The patch rows [P][row] (row = 3 temporal ps^2) in bf16, as
 * clef_image_patch_row() makes them: patch p of temporal group k = img[p]
 * (an image, or a video's frame pair) at (row, col) rc[p] reads, in
 * temporal slot t, its ps x ps pixels of frame min(t, imeta[4k + 2] - 1)
 * from rgb + imeta[4k] (imeta[4k + 1] bytes a frame, imeta[4k + 3]
 * pixels wide) as (px - mean[c]) / std[c]
 * (inorm [k][6]: mean, std); a patch with src[p] >= 0 instead copies row
 * src[p] of staged (items given as pixel values). */
typedef struct {
    const uint8_t    *rgb;
    const int64_t    *imeta;
    const float      *inorm;
    const int32_t    *img, *rc, *src;
    const clef_bf16  *staged;
    clef_bf16        *rows;
    int               P, ps, temporal;
} clef_k_patch_args;

cudaError_t clef_k_vpatchify(const clef_k_patch_args *a, cudaStream_t s);

/* x[p] = (bf16 y[p] + bias) + sum_k pw[p][k] pos[tap[p][k]] over rows of H:
 * the patch embedding's bias and the resampled position table.  meta
 * [P][4] taps (rows of pos [.][H]), pw [P][4] weights. */
cudaError_t clef_k_vpos_embed(const clef_bf16 *y, const float *bias,
    const float *pos, const int32_t *tap, const float *pw, float *x, int P,
    int H, cudaStream_t s);

/* In place on qkv [P][3H] (a GEMM's output without its bias): + bias, then
 * the 2D rotary on the q and k heads (pairs (i, i + hd/2); pair i < hd/4
 * turns by the patch's row, the others by its column: rc [P][2], cos/sin
 * [positions][hd/4]), each result rounded to bf16. */
cudaError_t clef_k_vqkv_rotary(clef_bf16 *qkv, const float *bias,
    const int32_t *rc, const float *cos, const float *sin, int P, int heads,
    int hd, cudaStream_t s);

/* y = bf16(gelu(y + b)) in place on rows of n (ld n): tanh_form 1 is
 * gelu_pytorch_tanh, 0 the exact erf form. */
cudaError_t clef_k_vbias_gelu(clef_bf16 *y, const float *b, int rows, int n,
    int tanh_form, cudaStream_t s);

/* x += bf16 y + b, rows of n (x fp32, the residual stream). */
cudaError_t clef_k_vresidual(float *x, const clef_bf16 *y, const float *b,
    int rows, int n, cudaStream_t s);

/* hid[dst[j]] = bf16(f[j] + b) for every merged row j with dst[j] >= 0
 * (rows of n): the tower's features over their pad tokens. */
cudaError_t clef_k_vscatter(const clef_bf16 *f, const float *b,
    const int32_t *dst, clef_bf16 *hid, int rows, int n, cudaStream_t s);

/* hid[dst[j]] = bf16(hid[dst[j]] + bf16(f[j] + b)) likewise: a DeepStack
 * level's features added after a decoder layer (Clef Omni). */
cudaError_t clef_k_vscatter_add(const clef_bf16 *f, const float *b,
    const int32_t *dst, clef_bf16 *hid, int rows, int n, cudaStream_t s);

/* ---- audio tower (audio_kernels.cu), Clef Omni ----------------------- */

/* The first convolution over nc chunks (feat [nc][mels][w0] fp32, chunk
 * ch's frames valid up to cw[ch], zeros after): out [nc][mels'][w0'][C]
 * = bf16(gelu_erf(w . window + b)), ' = halved rounded up (stride 2,
 * padding 1); time steps past the chunk's own halved width are 0.
 * w [C][9] fp32. */
cudaError_t clef_k_aconv1(const float *feat, const int32_t *cw,
    const float *w, const float *b, clef_bf16 *out, int nc, int mels, int w0,
    int C, cudaStream_t s);

/* The im2col rows of a 3 x 3 stride-2 padding-1 convolution over x
 * [nc][h][w][C]: cols [nc][h'][w'][9 C] (c * 9 + kh * 3 + kw, the weight's
 * order), zero outside x and past chunk ch's valid width, cw[ch] halved
 * `level` times. */
cudaError_t clef_k_aim2col(const clef_bf16 *x, const int32_t *cw, int level,
    int nc, int h, int w, int C, clef_bf16 *cols, cudaStream_t s);

/* flat [P][C F]: row r = (chunk rowmeta[2r], step rowmeta[2r + 1]) of
 * act3 [.][F][w3][C] (which holds chunks c0 onwards), flattened (channel,
 * mel) as the reference's conv_out reads it. */
cudaError_t clef_k_aflatten(const clef_bf16 *act3, const int32_t *rowmeta,
    int P, int c0, int F, int w3, int C, clef_bf16 *flat, cudaStream_t s);

/* x [P][n] fp32 = y + pos[rowmeta[2r + 1]] (pos [steps][n] fp32): the
 * sinusoidal positions, restarting in every chunk. */
cudaError_t clef_k_apos(const clef_bf16 *y, const float *pos,
    const int32_t *rowmeta, float *x, int P, int n, cudaStream_t s);

/* y = bf16(y + b) in place on rows of n. */
cudaError_t clef_k_abias(clef_bf16 *y, const float *b, int rows, int n,
    cudaStream_t s);

/* ---- routed experts (moe.cu), Clef Omni ------------------------------ */

/* logits[t][e] = <xn[t], w[e]> in fp32 (w: the router, fp32 [E][H]). */
cudaError_t clef_k_moe_router(const clef_bf16 *xn, const float *w,
    float *logits, int T, int E, int H, cudaStream_t s);

/* The routing of T tokens from their logits ([T][E]): softmax in fp32,
 * the k largest (the lower index first on a tie), renormalised when
 * renorm, as expert / weight [T][k] in increasing expert order; then the
 * grouping: count [E], expert e's grouped rows [offset[e], offset[e+1])
 * (tokens in order), its GEMM row tiles [tile_off[e], tile_off[e+1]),
 * slot [T][k] the grouped row of each choice and row_token [T k] the
 * token of each grouped row.  k <= 32. */
typedef struct {
    const float  *logits;
    int           T, E, k, renorm;
    int32_t      *expert;
    float        *weight;
    int32_t      *count, *offset, *tile_off, *slot, *row_token;
} clef_k_moe_args;

cudaError_t clef_k_moe_route(const clef_k_moe_args *a, cudaStream_t s);

/* The most row tiles a grouped GEMM over T k rows of E experts can have:
 * the grid's height. */
int         clef_k_moe_max_tiles(int T, int k, int E);

/* One launch for every expert: D[r] = X[src(r)] . W_e^T (bf16 out, fp32
 * accumulation) for expert e's grouped rows r, W = [E][N][K]; src(r) =
 * row_token[r], or r when row_token is NULL.  K % 8 == 0, ldx % 8 == 0. */
typedef struct {
    const clef_bf16  *X;
    int               ldx;
    const int32_t    *row_token;
    const clef_bf16  *W;
    int               N, K;
    clef_bf16        *D;
    int               ldd;
    const int32_t    *offset, *tile_off;
    int               E, max_tiles;
} clef_k_moe_gemm_args;

cudaError_t clef_k_moe_gemm(const clef_k_moe_gemm_args *a, cudaStream_t s);

/* hid[t] = bf16(hid[t] + sum_i weight[t][i] out[slot[t][i]]) in fp32, the
 * experts in increasing index (out: grouped rows, ldo apart). */
cudaError_t clef_k_moe_combine(const clef_bf16 *out, int ldo,
    const int32_t *slot, const float *weight, int T, int k, clef_bf16 *hid,
    int H, cudaStream_t s);

/* ---- joint schema head (head_kernels.cu), fp32 ----------------------- */

/* LayerNorm (biased variance) of rows of n columns.  x is float, or bf16
 * when x_bf16 != 0. */
cudaError_t clef_k_layernorm(const void *x, int x_bf16, int ldx, float *y,
    int ldy, const float *w, const float *b, int rows, int n, float eps,
    cudaStream_t s);

/* Span means.  Job j = (start, end, kind) writes row j of out [jobs][H]:
 * kind 0 averages rows of x [.][H], kind 1 averages lm_head rows
 * emb[ids[i]] (bf16).  An empty span gives NaN, as torch's mean does. */
cudaError_t clef_k_span_mean(const int32_t *jobs, int n_jobs, const float *x,
    const int32_t *ids, const clef_bf16 *emb, float *out, int H,
    cudaStream_t s);

/* y[i, :] += src[idx[i], :], rows of n columns. */
cudaError_t clef_k_add_rows(float *y, int ldy, const float *src, int lds,
    const int32_t *idx, int rows, int n, cudaStream_t s);

/* x = gelu_erf(x + b) in place, rows of n columns. */
cudaError_t clef_k_bias_gelu(float *x, int ldx, const float *b, int rows,
    int n, cudaStream_t s);

/* x += b per row (the epilogue fallback). */
cudaError_t clef_k_bias_add(float *x, int ldx, const float *b, int rows,
    int n, cudaStream_t s);

/* Multi-head attention of query groups over key ranges, no mask.
 * groups [n_groups][4] = (q_begin, q_count <= CLEF_K_GATTN_GQ, k_begin, k_end),
 * items [n_items][2] = (group, split): split s covers keys
 * [k_begin + s*CLEF_K_GATTN_SPLIT, ...).  group_items[g] = first item of g,
 * whose items are consecutive.  part holds n_items * heads * GQ * (d + 2)
 * floats. */
#define CLEF_K_GATTN_GQ     16
#define CLEF_K_GATTN_SPLIT  512
typedef struct {
    const float    *q;  int ldq;
    const float    *k;  int ldk;
    const float    *v;  int ldv;
    float          *o;  int ldo;
    const int32_t  *groups;
    int             n_groups;
    const int32_t  *items;
    int             n_items;
    const int32_t  *group_items;
    float          *part;
    int             heads, d;
} clef_k_gattn_args;

cudaError_t clef_k_group_attention(const clef_k_gattn_args *a, cudaStream_t s);

/* Field assembly, one block per question q (options ob..oe-1 of R):
 *   w = softmax_o(R_o . B_q / sqrt(W)),  S = sum_o w_o R_o
 *   F_q = B_q + LN(S; sw, sb) + G[q_rec[q]] + type_emb[q_type[q]]      */
typedef struct {
    const float    *R;      int ldr;
    const float    *B;      int ldb;
    const float    *G;      int ldgp;
    const float    *type_emb;
    const float    *sum_w, *sum_b;
    const int32_t  *q_opt_off;       /* [Q + 1] */
    const int32_t  *q_rec;
    const int32_t  *q_type;
    float          *F;      int ldf;
    int             Q, W;
    int             max_opts;        /* most options of any question */
    float           eps;
} clef_k_fields_args;

/* cudaErrorInvalidValue when W + max_opts floats exceed the shared memory
 * clef_k_setup_head() obtained. */
cudaError_t clef_k_fields(const clef_k_fields_args *a, cudaStream_t s);

/* Z[o] = [F[q(o)], Ro[o], F*Ro, |F - Ro|]  ([N][4W]). */
cudaError_t clef_k_scorer_input(const float *F, int ldf, const float *Ro,
    int ldro, const int32_t *o_q, float *Z, int N, int W, cudaStream_t s);

/* Final option logits, one block per option o of question q, record r:
 *   prior = ps * <normalize(lex_o), normalize(qv_q + g_r)>
 *   cos   = cosine(F_q, Ro_o)  (eps 1e-8 per norm)
 *   res   = Hs_o . w3 + b3
 *   logit = prior + sg * (js * cos + res)                                */
typedef struct {
    const float    *qv;   const float *g;   const float *lex;  int H;
    const float    *F;    const float *Ro;  const float *Hs;   int W;
    const float    *w3;   const float *b3;
    const int32_t  *o_q;  const int32_t *q_rec;
    float           prior_scale, joint_scale, gate;
    float          *logits;
    int             N;
} clef_k_score_args;

cudaError_t clef_k_scores(const clef_k_score_args *a, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
