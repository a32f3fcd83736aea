/*
 * Kernels of the joint schema head (docs/spec/encoder-and-head.md §5), all
 * fp32: LayerNorm, span means, exact-erf GELU, the small attentions of the
 * routing and decoder layers, field assembly and option scores.  The
 * head's matrix products are cuBLASLt calls made by cuda/forward.c; the
 * per-question softmax is the host's (engine/protocol/answer.c), from the logits.
 */
#include "common.cuh"

static __device__ __forceinline__ float
gelu_erf(float x)
{
    return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
}

/* ---- LayerNorm ------------------------------------------------------------ */

template <typename T>
static __device__ __forceinline__ float
ldf(const T *p)
{
    return (float) *p;
}

template <>
__device__ __forceinline__ float
ldf<bf16>(const bf16 *p)
{
    return bf(*p);
}

template <typename T>
static __global__ void __launch_bounds__(256)
layernorm_kernel(const T *x, int ldx, float *y, int ldy, const float *w,
    const float *b, int n, float eps)
{
    __shared__ float  red[32];
    const T          *xr = x + (int64_t) blockIdx.x * ldx;
    float            *yr = y + (int64_t) blockIdx.x * ldy;
    float             s = 0.0f, mean, var = 0.0f, rstd;

    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        s += ldf(xr + i);
    }
    mean = block_sum(s, red) / (float) n;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float  d = ldf(xr + i) - mean;

        var += d * d;
    }
    rstd = rsqrtf(block_sum(var, red) / (float) n + eps);
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        yr[i] = (ldf(xr + i) - mean) * rstd * w[i] + b[i];
    }
}

extern "C" cudaError_t
clef_k_layernorm(const void *x, int x_bf16, int ldx, float *y, int ldy,
    const float *w, const float *b, int rows, int n, float eps, cudaStream_t s)
{
    if (rows <= 0) {
        return cudaSuccess;
    }
    if (x_bf16) {
        layernorm_kernel<bf16><<<rows, 256, 0, s>>>((const bf16 *) x, ldx, y,
            ldy, w, b, n, eps);
    } else {
        layernorm_kernel<float><<<rows, 256, 0, s>>>((const float *) x, ldx, y,
            ldy, w, b, n, eps);
    }
    return cudaGetLastError();
}

/* ---- span means ----------------------------------------------------------- */

static __global__ void __launch_bounds__(256)
span_mean_kernel(const int32_t *jobs, const float *x, const int32_t *ids,
    const bf16 *emb, float *out, int H)
{
    const int32_t  *job = jobs + 3 * blockIdx.x;
    int             s = job[0], e = job[1], kind = job[2];
    float          *dst = out + (int64_t) blockIdx.x * H;
    float           cnt = (float) (e - s);

    for (int c = threadIdx.x; c < H; c += blockDim.x) {
        float  acc = 0.0f;

        if (kind == 0) {
            for (int i = s; i < e; i++) {
                acc += x[(int64_t) i * H + c];
            }
        } else {
            for (int i = s; i < e; i++) {
                acc += bf(emb[(int64_t) ids[i] * H + c]);
            }
        }
        dst[c] = acc / cnt;      /* 0/0 = NaN for an empty span, like torch */
    }
}

extern "C" cudaError_t
clef_k_span_mean(const int32_t *jobs, int n_jobs, const float *x,
    const int32_t *ids, const clef_bf16 *emb, float *out, int H, cudaStream_t s)
{
    if (n_jobs > 0) {
        span_mean_kernel<<<n_jobs, 256, 0, s>>>(jobs, x, ids, (const bf16 *) emb,
            out, H);
    }
    return cudaGetLastError();
}

/* ---- row-wise elementwise -------------------------------------------------- */

static __global__ void
add_rows_kernel(float *y, int ldy, const float *src, int lds, const int32_t *idx,
    int rows, int n)
{
    int64_t  i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;
    int64_t  r = i / n;
    int      c = (int) (i % n);

    if (r < rows) {
        y[r * ldy + c] += src[(int64_t) idx[r] * lds + c];
    }
}

extern "C" cudaError_t
clef_k_add_rows(float *y, int ldy, const float *src, int lds, const int32_t *idx,
    int rows, int n, cudaStream_t s)
{
    int64_t  total = (int64_t) rows * n;

    if (total > 0) {
        add_rows_kernel<<<cdiv(total, 256), 256, 0, s>>>(y, ldy, src, lds, idx,
            rows, n);
    }
    return cudaGetLastError();
}

static __global__ void
bias_act_kernel(float *x, int ldx, const float *b, int rows, int n, int gelu)
{
    int64_t  i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;
    int64_t  r = i / n;
    int      c = (int) (i % n);

    if (r < rows) {
        float  v = x[r * ldx + c] + b[c];

        x[r * ldx + c] = gelu ? gelu_erf(v) : v;
    }
}

extern "C" cudaError_t
clef_k_bias_gelu(float *x, int ldx, const float *b, int rows, int n,
    cudaStream_t s)
{
    int64_t  total = (int64_t) rows * n;

    if (total > 0) {
        bias_act_kernel<<<cdiv(total, 256), 256, 0, s>>>(x, ldx, b, rows, n, 1);
    }
    return cudaGetLastError();
}

extern "C" cudaError_t
clef_k_bias_add(float *x, int ldx, const float *b, int rows, int n,
    cudaStream_t s)
{
    int64_t  total = (int64_t) rows * n;

    if (total > 0) {
        bias_act_kernel<<<cdiv(total, 256), 256, 0, s>>>(x, ldx, b, rows, n, 0);
    }
    return cudaGetLastError();
}

/* ---- grouped attention (MultiheadAttention without mask) ------------------ */

#define GA_THREADS  128
#define GA_KT       32          /* keys per shared-memory tile */
#define GA_SUB      8           /* threads per query */
#define GA_MAXD     128

/* Block (item, head): the group's <= 16 queries against one split of its
 * key range.  Thread (qi = tid / 8, sub = tid % 8) owns query qi, keys
 * sub + 8m of each tile and dims sub + 8k of the output.  Partial results
 * (unnormalised o, running max m, sum l) go to part for the combine. */
static __global__ void __launch_bounds__(GA_THREADS)
group_attn_kernel(clef_k_gattn_args a)
{
    extern __shared__ float  gsm[];
    const int   d = a.d, ldq = d + 1;
    float      *Qs = gsm;                       /* GQ x (d + 1) */
    float      *Ks = Qs + CLEF_K_GATTN_GQ * ldq;  /* KT x (d + 1) */
    float      *Vs = Ks + GA_KT * ldq;          /* KT x (d + 1) */
    float      *Ps = Vs + GA_KT * ldq;          /* GQ x (KT + 1) */

    const int   item = blockIdx.x, h = blockIdx.y;
    const int   grp = a.items[2 * item], split = a.items[2 * item + 1];
    const int32_t *gr = a.groups + 4 * grp;
    const int   qb = gr[0], qc = gr[1];
    const int   ks = gr[2] + split * CLEF_K_GATTN_SPLIT;
    const int   ke = min(gr[3], ks + CLEF_K_GATTN_SPLIT);
    const int   tid = threadIdx.x, qi = tid / GA_SUB, sub = tid % GA_SUB;
    const float scale = rsqrtf((float) d);
    float       o[GA_MAXD / GA_SUB];
    float       m = -INFINITY, l = 0.0f;
    float      *dst;

#pragma unroll
    for (int k = 0; k < GA_MAXD / GA_SUB; k++) {
        o[k] = 0.0f;
    }
    for (int i = tid; i < CLEF_K_GATTN_GQ * d; i += GA_THREADS) {
        int  r = i / d, c = i % d;

        Qs[r * ldq + c] = r < qc
            ? a.q[(int64_t) (qb + r) * a.ldq + (int64_t) h * d + c] * scale : 0.0f;
    }

    for (int k0 = ks; k0 < ke; k0 += GA_KT) {
        float  sc[GA_KT / GA_SUB], mx = -INFINITY, base, corr, ps = 0.0f;

        __syncthreads();
        for (int i = tid; i < GA_KT * d; i += GA_THREADS) {
            int   r = i / d, c = i % d;
            bool  ok = k0 + r < ke;

            Ks[r * ldq + c] = ok ? a.k[(int64_t) (k0 + r) * a.ldk + (int64_t) h * d + c] : 0.0f;
            Vs[r * ldq + c] = ok ? a.v[(int64_t) (k0 + r) * a.ldv + (int64_t) h * d + c] : 0.0f;
        }
        __syncthreads();

#pragma unroll
        for (int j = 0; j < GA_KT / GA_SUB; j++) {
            int    key = sub + GA_SUB * j;
            float  acc = 0.0f;

            for (int c = 0; c < d; c++) {
                acc += Qs[qi * ldq + c] * Ks[key * ldq + c];
            }
            sc[j] = k0 + key < ke ? acc : -INFINITY;
            mx = fmaxf(mx, sc[j]);
        }
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 4));
        mx = fmaxf(m, mx);
        base = mx == -INFINITY ? 0.0f : mx;
        corr = expf(m - base);
        m = mx;
#pragma unroll
        for (int j = 0; j < GA_KT / GA_SUB; j++) {
            float  p = expf(sc[j] - base);

            Ps[qi * (GA_KT + 1) + sub + GA_SUB * j] = p;
            ps += p;
        }
        ps += __shfl_xor_sync(0xffffffffu, ps, 1);
        ps += __shfl_xor_sync(0xffffffffu, ps, 2);
        ps += __shfl_xor_sync(0xffffffffu, ps, 4);
        l = l * corr + ps;
        __syncwarp();

#pragma unroll
        for (int k = 0; k < GA_MAXD / GA_SUB; k++) {
            int    c = sub + GA_SUB * k;
            float  acc = 0.0f;

            if (c < d) {
                for (int key = 0; key < GA_KT; key++) {
                    acc += Ps[qi * (GA_KT + 1) + key] * Vs[key * ldq + c];
                }
            }
            o[k] = o[k] * corr + acc;
        }
    }

    dst = a.part + (((int64_t) item * a.heads + h) * CLEF_K_GATTN_GQ + qi) * (d + 2);
#pragma unroll
    for (int k = 0; k < GA_MAXD / GA_SUB; k++) {
        int  c = sub + GA_SUB * k;

        if (c < d) {
            dst[c] = o[k];
        }
    }
    if (sub == 0) {
        dst[d] = m;
        dst[d + 1] = l;
    }
}

/* Block (group, head): merges the splits of each query. */
static __global__ void
group_attn_combine(clef_k_gattn_args a)
{
    const int       grp = blockIdx.x, h = blockIdx.y, d = a.d;
    const int32_t  *gr = a.groups + 4 * grp;
    const int       qb = gr[0], qc = gr[1];
    const int       i0 = a.group_items[grp], i1 = a.group_items[grp + 1];

    for (int i = threadIdx.x; i < qc * d; i += blockDim.x) {
        int     qi = i / d, c = i % d;
        float   mx = -INFINITY, l = 0.0f, acc = 0.0f;

        for (int it = i0; it < i1; it++) {
            const float  *p = a.part + (((int64_t) it * a.heads + h) * CLEF_K_GATTN_GQ + qi) * (d + 2);

            mx = fmaxf(mx, p[d]);
        }
        for (int it = i0; it < i1; it++) {
            const float  *p = a.part + (((int64_t) it * a.heads + h) * CLEF_K_GATTN_GQ + qi) * (d + 2);
            float         w = p[d] == -INFINITY ? 0.0f : expf(p[d] - mx);

            l += w * p[d + 1];
            acc += w * p[c];
        }
        a.o[(int64_t) (qb + qi) * a.ldo + (int64_t) h * d + c] = l > 0.0f ? acc / l : 0.0f;
    }
}

extern "C" cudaError_t
clef_k_group_attention(const clef_k_gattn_args *a, cudaStream_t s)
{
    size_t       bytes;
    cudaError_t  e;

    if (a->d < 1 || a->d > GA_MAXD) {
        return cudaErrorInvalidValue;
    }
    if (a->n_items <= 0 || a->n_groups <= 0) {
        return cudaSuccess;
    }
    /* at most 43 KB for d = 128: under the default 48 KB limit */
    bytes = ((size_t) (CLEF_K_GATTN_GQ + 2 * GA_KT) * (a->d + 1)
             + (size_t) CLEF_K_GATTN_GQ * (GA_KT + 1)) * sizeof(float);
    group_attn_kernel<<<dim3(a->n_items, a->heads), GA_THREADS, bytes, s>>>(*a);
    e = cudaGetLastError();
    if (e != cudaSuccess) {
        return e;
    }
    group_attn_combine<<<dim3(a->n_groups, a->heads), 256, 0, s>>>(*a);
    return cudaGetLastError();
}

/* ---- fields ------------------------------------------------------------------ */

static __global__ void __launch_bounds__(256)
fields_kernel(clef_k_fields_args a)
{
    extern __shared__ float  fsm[];
    __shared__ float         red[32];
    const int   q = blockIdx.x, W = a.W;
    const int   ob = a.q_opt_off[q], no = a.q_opt_off[q + 1] - ob;
    const int   warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const float *Bq = a.B + (int64_t) q * a.ldb;
    const float *Gr = a.G + (int64_t) a.q_rec[q] * a.ldgp;
    const float *te = a.type_emb + (int64_t) a.q_type[q] * W;
    float       *S = fsm, *lg = fsm + W;
    float        mx = -INFINITY, sum = 0.0f, mean, var = 0.0f, rstd, sc;

    sc = rsqrtf((float) W);
    for (int o = warp; o < no; o += blockDim.x >> 5) {
        const float  *R = a.R + (int64_t) (ob + o) * a.ldr;
        float         acc = 0.0f;

        for (int c = lane; c < W; c += 32) {
            acc += R[c] * Bq[c];
        }
        acc = warp_sum(acc);
        if (lane == 0) {
            lg[o] = acc * sc;
        }
    }
    __syncthreads();
    for (int o = threadIdx.x; o < no; o += blockDim.x) {
        mx = fmaxf(mx, lg[o]);
    }
    mx = block_max(mx, red);
    for (int o = threadIdx.x; o < no; o += blockDim.x) {
        sum += expf(lg[o] - mx);
    }
    sum = block_sum(sum, red);

    for (int c = threadIdx.x; c < W; c += blockDim.x) {
        float  acc = 0.0f;

        for (int o = 0; o < no; o++) {
            acc += expf(lg[o] - mx) / sum * a.R[(int64_t) (ob + o) * a.ldr + c];
        }
        S[c] = acc;
    }
    __syncthreads();

    sum = 0.0f;
    for (int c = threadIdx.x; c < W; c += blockDim.x) {
        sum += S[c];
    }
    mean = block_sum(sum, red) / (float) W;
    for (int c = threadIdx.x; c < W; c += blockDim.x) {
        float  dd = S[c] - mean;

        var += dd * dd;
    }
    rstd = rsqrtf(block_sum(var, red) / (float) W + a.eps);
    for (int c = threadIdx.x; c < W; c += blockDim.x) {
        float  sn = (S[c] - mean) * rstd * a.sum_w[c] + a.sum_b[c];

        a.F[(int64_t) q * a.ldf + c] = Bq[c] + sn + Gr[c] + te[c];
    }
}

/* Dynamic shared memory the fields kernel may use, set by
 * clef_k_setup_head(); the default limit until then. */
static int  fields_smem_max = 48 * 1024 - 32 * (int) sizeof(float);

extern "C" cudaError_t
clef_k_fields(const clef_k_fields_args *a, cudaStream_t s)
{
    size_t  bytes;

    if (a->Q <= 0) {
        return cudaSuccess;
    }
    bytes = (size_t) (a->W + a->max_opts) * sizeof(float);
    if (bytes > (size_t) fields_smem_max) {
        return cudaErrorInvalidValue;   /* a head or a question too wide */
    }
    fields_kernel<<<a->Q, 256, bytes, s>>>(*a);
    return cudaGetLastError();
}

/* The fields kernel keeps a row of W floats and one logit per option in
 * shared memory, beside its static reduction array.  W and the options of
 * a question are known only per model and per batch, so it may use all
 * the opt-in room the static array leaves (W = 1024 with 255 options
 * needs 5 KB; the launcher refuses what does not fit). */
extern "C" cudaError_t
clef_k_setup_head(void)
{
    return smem_allow(fields_kernel, -1, &fields_smem_max);
}

/* ---- scorer input and scores ---------------------------------------------- */

static __global__ void
scorer_input_kernel(const float *F, int ldf, const float *Ro, int ldro,
    const int32_t *o_q, float *Z, int N, int W)
{
    int64_t  i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;
    int64_t  o = i / W;
    int      c = (int) (i % W);
    float    f, r;
    float   *z;

    if (o >= N) {
        return;
    }
    f = F[(int64_t) o_q[o] * ldf + c];
    r = Ro[o * ldro + c];
    z = Z + o * 4 * (int64_t) W;
    z[c] = f;
    z[W + c] = r;
    z[2 * W + c] = f * r;
    z[3 * W + c] = fabsf(f - r);
}

extern "C" cudaError_t
clef_k_scorer_input(const float *F, int ldf, const float *Ro, int ldro,
    const int32_t *o_q, float *Z, int N, int W, cudaStream_t s)
{
    int64_t  total = (int64_t) N * W;

    if (total > 0) {
        scorer_input_kernel<<<cdiv(total, 256), 256, 0, s>>>(F, ldf, Ro, ldro,
            o_q, Z, N, W);
    }
    return cudaGetLastError();
}

static __global__ void __launch_bounds__(256)
scores_kernel(clef_k_score_args a)
{
    __shared__ float  red[32];
    const int         o = blockIdx.x, q = a.o_q[o], r = a.q_rec[q];
    const float      *qv = a.qv + (int64_t) q * a.H, *g = a.g + (int64_t) r * a.H;
    const float      *lex = a.lex + (int64_t) o * a.H;
    const float      *F = a.F + (int64_t) q * a.W, *Ro = a.Ro + (int64_t) o * a.W;
    const float      *Hs = a.Hs + (int64_t) o * a.W;
    float             dl = 0.0f, nl = 0.0f, na = 0.0f, df = 0.0f, nf = 0.0f;
    float             nr = 0.0f, rs = 0.0f, prior, cosv;

    for (int c = threadIdx.x; c < a.H; c += blockDim.x) {
        float  x = lex[c], y = qv[c] + g[c];

        dl += x * y;
        nl += x * x;
        na += y * y;
    }
    for (int c = threadIdx.x; c < a.W; c += blockDim.x) {
        df += F[c] * Ro[c];
        nf += F[c] * F[c];
        nr += Ro[c] * Ro[c];
        rs += Hs[c] * a.w3[c];
    }
    dl = block_sum(dl, red);
    nl = block_sum(nl, red);
    na = block_sum(na, red);
    df = block_sum(df, red);
    nf = block_sum(nf, red);
    nr = block_sum(nr, red);
    rs = block_sum(rs, red);
    if (threadIdx.x == 0) {
        prior = a.prior_scale * dl
            / (fmaxf(sqrtf(nl), 1e-12f) * fmaxf(sqrtf(na), 1e-12f));
        cosv = df / (fmaxf(sqrtf(nf), 1e-8f) * fmaxf(sqrtf(nr), 1e-8f));
        a.logits[o] = prior + a.gate * (a.joint_scale * cosv + rs + a.b3[0]);
    }
}

extern "C" cudaError_t
clef_k_scores(const clef_k_score_args *a, cudaStream_t s)
{
    if (a->N > 0) {
        scores_kernel<<<a->N, 256, 0, s>>>(*a);
    }
    return cudaGetLastError();
}
