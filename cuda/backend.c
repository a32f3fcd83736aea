/*
 * The CUDA backend's clef_backend_ops: device checks, sizes, workspace,
 * one forward = one metadata upload + the launch sequence (or the replay of
 * its CUDA graph, graphs.c) + one copy of the logits back.  Probabilities
 * are the host's: the answer builder (engine/protocol/answer.c) takes the softmax of
 * these logits, the one place that turns logits into an answer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_backend.h"
#include "vision.h"

static int
round_up(int v, int unit)
{
    return (v + unit - 1) / unit * unit;
}

static int
imax(int a, int b)
{
    return a > b ? a : b;
}

/* ---- workspace ----------------------------------------------------------- */

typedef struct {
    char    *base;
    size_t   off;
} carver;

static void *
carve(carver *c, size_t bytes)
{
    void  *p = c->base ? c->base + c->off : NULL;

    c->off += (bytes + 255) / 256 * 256;
    return p;
}

/* Assigns every workspace pointer for the current capacities; with a NULL
 * base it only sizes. */
static size_t
ws_layout(clef_backend *b, char *base)
{
    cuda_ws  *w = &b->ws;
    carver    c = { base, 0 };
    size_t    T = (size_t) w->cap_T, N = (size_t) w->cap_N, Q = (size_t) w->cap_Q;
    size_t    NR = (size_t) w->cap_NR, NQ = N > Q ? N : Q;
    size_t    H = (size_t) b->H, W = (size_t) b->W, F = (size_t) b->F;
    size_t    d = (size_t) (b->W / b->heads);

    w->hid = carve(&c, T * H * 2);
    w->xn = carve(&c, T * H * 2);
    w->proj = carve(&c, T * (size_t) b->proj_ld * 2);
    w->mix = carve(&c, T * (size_t) b->mix_ld * 2);
    w->act = carve(&c, T * (size_t) b->act_ld * 2);
    w->X = carve(&c, T * H * 4);
    w->M = carve(&c, T * W * 4);
    w->Mn = carve(&c, T * W * 4);
    w->KV = carve(&c, T * 2 * W * 4);
    w->qv = carve(&c, Q * H * 4);
    w->ctx = carve(&c, N * H * 4);
    w->glob = carve(&c, NR * H * 4);
    w->lex = carve(&c, N * H * 4);
    w->QVP = carve(&c, Q * 2 * W * 4);
    w->GP = carve(&c, NR * W * 4);
    w->R = carve(&c, N * W * 4);
    w->Rn = carve(&c, NQ * W * 4);
    w->Qh = carve(&c, NQ * 3 * W * 4);
    w->A = carve(&c, NQ * W * 4);
    w->FF = carve(&c, NQ * F * 4);
    w->Fq = carve(&c, Q * W * 4);
    w->Ro = carve(&c, N * W * 4);
    w->Z = carve(&c, N * 4 * W * 4);
    w->Hs = carve(&c, N * W * 4);
    w->part = carve(&c, (size_t) w->cap_items * (size_t) b->heads * CLEF_K_GATTN_GQ
                        * (d + 2) * 4);
    w->logits = carve(&c, N * 4);
    return c.off;
}

static int
grow_cap(int cap, int need, int unit)
{
    if (need <= cap) {
        return cap;
    }
    return imax(round_up(need, unit), cap + cap / 4);
}

static int
ensure_ws(clef_backend *b, const cuda_plan *p, clef_error *err)
{
    cuda_ws      *w = &b->ws;
    size_t        bytes;
    cudaError_t   e;

    if (b->ws_mem == NULL || p->T > w->cap_T || p->N > w->cap_N || p->Q > w->cap_Q
        || p->NR > w->cap_NR || p->max_items > w->cap_items)
    {
        w->cap_T = grow_cap(w->cap_T, p->T, 256);
        w->cap_N = grow_cap(w->cap_N, p->N, 64);
        w->cap_Q = grow_cap(w->cap_Q, p->Q, 64);
        w->cap_NR = grow_cap(w->cap_NR, p->NR, 16);
        w->cap_items = grow_cap(w->cap_items, p->max_items, 64);

        cuda_graphs_clear(b);
        if (b->ws_mem != NULL) {
            cudaFree(b->ws_mem);
            b->ws_mem = NULL;
        }
        bytes = ws_layout(b, NULL);
        e = cudaMalloc(&b->ws_mem, bytes);
        if (e != cudaSuccess) {
            b->ws_mem = NULL;
            w->cap_T = w->cap_N = w->cap_Q = w->cap_NR = w->cap_items = 0;
            return clef_error_set(err, 500, "cuda", NULL,
                "workspace of %zu bytes for %d tokens: %s", bytes, p->T,
                cudaGetErrorString(e));
        }
        ws_layout(b, b->ws_mem);
    }

    if (p->total > b->dmeta_cap) {
        size_t  cap = p->total + p->total / 4 + 1024;

        cuda_graphs_clear(b);
        if (b->dmeta != NULL) {
            cudaFree(b->dmeta);
            b->dmeta = NULL;
            b->dmeta_cap = 0;
        }
        e = cudaMalloc((void **) &b->dmeta, cap * sizeof(int32_t));
        if (e != cudaSuccess) {
            b->dmeta = NULL;
            return cuda_check(e, "metadata buffer", err);
        }
        b->dmeta_cap = cap;
    }

    if ((size_t) p->N > b->hout_cap) {
        size_t  cap = (size_t) p->N + 256;

        if (b->hout != NULL) {
            cudaFreeHost(b->hout);
            b->hout = NULL;
            b->hout_cap = 0;
        }
        e = cudaHostAlloc((void **) &b->hout, cap * sizeof(float), cudaHostAllocDefault);
        if (e != cudaSuccess) {
            b->hout = NULL;
            return cuda_check(e, "pinned output buffer", err);
        }
        b->hout_cap = cap;
    }
    return 0;
}

/* ---- open / close ----------------------------------------------------------- */

static int
sizes(clef_backend *b, clef_error *err)
{
    const clef_text_config  *tc = clef_model_text_config(b->model);
    const clef_head_config  *hc = clef_model_head_config(b->model);
    int                      l, n_gdn = 0, n_attn = 0;

    b->H = tc->hidden_size;
    b->I = tc->intermediate_size;
    b->V = tc->vocab_size;
    b->L = tc->num_hidden_layers;
    b->Hq = tc->num_attention_heads;
    b->Hkv = tc->num_key_value_heads;
    b->hd = tc->head_dim;
    b->Hk = tc->linear_num_key_heads;
    b->Hv = tc->linear_num_value_heads;
    b->dk = tc->linear_key_head_dim;
    b->dv = tc->linear_value_head_dim;
    b->Kc = tc->linear_conv_kernel_dim;
    b->gated = tc->attn_output_gate;
    b->eps = (float) tc->rms_norm_eps;
    b->rot = (int) (b->hd * tc->partial_rotary_factor);
    b->W = hc->width;
    b->F = hc->feedforward;
    b->heads = hc->heads;
    b->n_route = hc->routing_layers;
    b->n_dec = hc->layers;

    if (b->L < 1 || b->L > CLEF_MAX_LAYERS) {
        return clef_error_set(err, 500, "model", NULL,
            "cuda backend: %d layers", b->L);
    }
    for (l = 0; l < b->L; l++) {
        if (tc->layer_full[l]) {
            n_attn++;
        } else {
            n_gdn++;
        }
    }
    b->Cconv = 2 * b->Hk * b->dk + b->Hv * b->dv;

    if (b->H <= 0 || b->H % 8 || b->I <= 0 || b->I % 8 || b->V <= 0
        || hc->hidden_size != b->H || b->W <= 0 || b->F <= 0 || b->heads <= 0
        || b->W % b->heads || b->W / b->heads > 128 || b->n_route < 0 || b->n_dec < 0)
    {
        return clef_error_set(err, 500, "model", NULL,
            "cuda backend: unsupported sizes (hidden %d, intermediate %d, head width "
            "%d / %d heads): needs multiples of 8 and head dim <= 128",
            b->H, b->I, b->W, b->heads);
    }
    if (n_gdn && (b->Hk <= 0 || b->Hv <= 0 || b->Hv % b->Hk || b->Cconv % 8
                  || !clef_k_gdn_supported(b->dk, b->dv) || b->Kc < 1 || b->Kc > 16))
    {
        return clef_error_set(err, 500, "model", NULL,
            "cuda backend: unsupported linear attention (%d k heads x %d, %d v heads "
            "x %d, conv %d)", b->Hk, b->dk, b->Hv, b->dv, b->Kc);
    }
    if (n_attn && (b->Hkv <= 0 || b->Hq <= 0 || b->Hq % b->Hkv
                   || !clef_k_attention_supported(b->hd) || b->rot % 2
                   || b->rot < 0 || b->rot > b->hd))
    {
        return clef_error_set(err, 500, "model", NULL,
            "cuda backend: unsupported attention (%d heads, %d kv heads, head dim %d, "
            "rotary %d)", b->Hq, b->Hkv, b->hd, b->rot);
    }

    b->q_rows = b->Hq * b->hd * (b->gated ? 2 : 1);
    b->gdn_rows = round_up(b->Cconv + b->Hv * b->dv + 2 * b->Hv, 8);
    b->z_off = b->Cconv;
    b->b_off = b->Cconv + b->Hv * b->dv;
    b->a_off = b->b_off + b->Hv;
    b->attn_rows = round_up(b->q_rows + 2 * b->Hkv * b->hd, 8);
    b->k_off = b->q_rows;
    b->v_off = b->q_rows + b->Hkv * b->hd;
    b->proj_ld = imax(2 * b->I, imax(n_gdn ? b->gdn_rows : 0, n_attn ? b->attn_rows : 0));
    b->mix_ld = imax(8, imax(n_gdn ? b->Cconv : 0,
                             n_attn ? (b->Hq + b->Hkv) * b->hd : 0));
    b->act_ld = imax(b->I, imax(n_gdn ? b->Hv * b->dv : 0, n_attn ? b->Hq * b->hd : 0));
    return 0;
}

static void
cuda_close(clef_backend *b)
{
    int  i;

    if (b == NULL) {
        return;
    }
    cudaSetDevice(b->device);
    if (b->stream != NULL) {
        cudaStreamSynchronize(b->stream);
    }
    cuda_graphs_clear(b);
    for (i = 0; i < CUDA_MARKS_MAX; i++) {
        if (b->ev[i] != NULL) {
            cudaEventDestroy(b->ev[i]);
        }
    }
    if (b->ws_mem != NULL) {
        cudaFree(b->ws_mem);
    }
    if (b->dmeta != NULL) {
        cudaFree(b->dmeta);
    }
    if (b->hmeta != NULL) {
        cudaFreeHost(b->hmeta);
    }
    if (b->hout != NULL) {
        cudaFreeHost(b->hout);
    }
    cuda_vision_close(b);           /* images (vision.c) */
    cuda_weights_free(b);
    clef_gemm_destroy(b->gemm);
    if (b->stream != NULL) {
        cudaStreamDestroy(b->stream);
    }
    /* after a fault that poisoned the context, only a reset lets the next
     * open of this device work; it touches no other device */
    if (cudaDeviceSynchronize() != cudaSuccess) {
        cudaDeviceReset();
    }
    free(b);
}

static int
cuda_open(const clef_model *m, const clef_backend_opts *o, clef_backend **out,
    clef_error *err)
{
    clef_backend          *b;
    struct cudaDeviceProp  prop;
    cudaError_t            e;
    int                    n = 0, dev = o != NULL ? o->device : 0;

    *out = NULL;
    /* the CUDA backend computes in bf16 (tensor cores) and has no fp32 path */
    if (o != NULL && o->precision == CLEF_PRECISION_FP32) {
        return clef_error_set(err, 500, "backend", NULL,
            "the CUDA backend computes in bf16: precision=fp32 is for the CPU");
    }
    e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        return clef_error_set(err, 503, "no_device", NULL, "no CUDA device: %s",
            e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    }
    if (dev < 0 || dev >= n) {
        return clef_error_set(err, 503, "no_device", NULL,
            "no CUDA device: ordinal %d asked for, %d present", dev, n);
    }
    e = cudaSetDevice(dev);
    if (e == cudaSuccess) {
        e = cudaGetDeviceProperties(&prop, dev);
    }
    if (e != cudaSuccess) {
        return clef_error_set(err, 503, "no_device", NULL, "no CUDA device: %s",
            cudaGetErrorString(e));
    }
    if (prop.major < 9) {
        return clef_error_set(err, 503, "no_device", NULL,
            "no CUDA device: %s has compute capability %d.%d; this build needs 9.0",
            prop.name, prop.major, prop.minor);
    }

    e = clef_k_setup();
    if (e != cudaSuccess) {
        return cuda_check(e, "kernel setup", err);
    }

    b = calloc(1, sizeof(*b));
    if (b == NULL) {
        return clef_error_set(err, 500, "internal", NULL, "out of memory");
    }
    b->device = dev;
    b->model = m;
    b->use_graphs = 1;
    if (o != NULL) {
        b->progress = o->progress;
        b->progress_ctx = o->progress_ctx;
    }
    snprintf(b->describe, sizeof(b->describe), "cuda backend: device %d "
             "(%s, compute capability %d.%d, %.0f GiB); bf16 weights, "
             "cuBLASLt GEMMs with one algorithm per shape", dev, prop.name,
             prop.major, prop.minor,
             (double) prop.totalGlobalMem / (1024.0 * 1024 * 1024));
    if (sizes(b, err) != 0) {
        free(b);
        return -1;
    }
    e = cudaStreamCreateWithFlags(&b->stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        b->stream = NULL;
        cuda_close(b);
        return cuda_check(e, "stream", err);
    }
    if (clef_gemm_create(&b->gemm, err) != 0 || cuda_weights_upload(b, err) != 0
        || cuda_vision_open(b, err) != 0)   /* images (vision.c) */
    {
        cuda_close(b);
        return -1;
    }
    *out = b;
    return 0;
}

/* ---- forward ------------------------------------------------------------- */

static int
enqueue(clef_backend *b, const cuda_plan *p, clef_error *err)
{
    if (cuda_backbone(b, p, err) != 0 || cuda_head(b, p, err) != 0) {
        return -1;
    }
    cuda_mark(b, CLEF_CUDA_PROF_HEAD);
    return 0;
}

static int
capture(clef_backend *b, const cuda_plan *p, cuda_graph *g, clef_error *err)
{
    cudaGraph_t  graph = NULL;
    cudaError_t  e;
    int          rc;

    e = cudaStreamBeginCapture(b->stream, cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) {
        return cuda_check(e, "graph capture", err);
    }
    rc = enqueue(b, p, err);
    e = cudaStreamEndCapture(b->stream, &graph);
    if (rc != 0) {
        if (graph != NULL) {
            cudaGraphDestroy(graph);
        }
        return -1;
    }
    if (e != cudaSuccess) {
        return cuda_check(e, "graph capture", err);
    }
    e = cudaGraphInstantiate(&g->exec, graph, 0);
    cudaGraphDestroy(graph);
    if (e != cudaSuccess) {
        g->exec = NULL;
        return cuda_check(e, "graph instantiation", err);
    }
    b->captures++;
    return 0;
}

static int
prepare(clef_backend *b, const clef_batch *batch, cuda_plan *p, clef_error *err)
{
    if (cuda_check(cudaSetDevice(b->device), "cudaSetDevice", err) != 0
        || cuda_plan_build(b, batch, p, err) != 0 || ensure_ws(b, p, err) != 0
        || cuda_vision_prepare(b, batch, err) != 0)   /* images (vision.c) */
    {
        return -1;
    }
    return cuda_check(cudaMemcpyAsync(b->dmeta, b->hmeta, p->total * sizeof(int32_t),
                                      cudaMemcpyHostToDevice, b->stream),
                      "metadata upload", err);
}

static void
profile_collect(clef_backend *b)
{
    int    i;
    float  ms;

    for (i = 1; i < b->n_marks; i++) {
        if (b->mark_type[i] >= 0
            && cudaEventElapsedTime(&ms, b->ev[i - 1], b->ev[i]) == cudaSuccess)
        {
            b->prof_ms[b->mark_type[i]] += ms;
        }
    }
    if (b->n_marks > 0) {
        b->prof_forwards++;
    }
    b->n_marks = 0;
}

static int
cuda_forward(clef_backend *b, const clef_batch *batch, float *logits,
    clef_error *err)
{
    cuda_plan    p;
    cuda_graph  *g = NULL;
    int          fresh = 0, rc;

    if (prepare(b, batch, &p, err) != 0) {
        return -1;
    }

    b->n_marks = 0;
    /* a batch with images runs eagerly: the graph key does not hold its
     * images' grids (vision.c) */
    if (b->use_graphs && !b->profile && !cuda_vision_active(b)) {
        g = cuda_graph_lookup(b, &p, &fresh);
    }
    if (g != NULL && g->exec != NULL) {
        rc = cuda_check(cudaGraphLaunch(g->exec, b->stream), "graph launch", err);
        b->replays++;
    } else if (g != NULL && !fresh && !g->failed) {
        if (capture(b, &p, g, err) == 0) {
            rc = cuda_check(cudaGraphLaunch(g->exec, b->stream), "graph launch", err);
        } else {
            /* Not capturable (a launch refused inside the capture, say):
             * this shape runs eagerly, which reports a real error itself. */
            g->failed = 1;
            (void) cudaGetLastError();
            clef_error_clear(err);
            rc = enqueue(b, &p, err);
        }
    } else {
        rc = enqueue(b, &p, err);
    }
    if (rc == 0) {
        rc = cuda_check(cudaMemcpyAsync(b->hout, b->ws.logits, (size_t) p.N * sizeof(float),
                                        cudaMemcpyDeviceToHost, b->stream), "logits", err);
    }
    /* Wait even after a failed enqueue: the staging buffers are reused. */
    if (cuda_check(cudaStreamSynchronize(b->stream), "forward", err) != 0 || rc != 0) {
        b->n_marks = 0;
        return -1;
    }
    if (b->profile) {
        profile_collect(b);
    }
    memcpy(logits, b->hout, (size_t) p.N * sizeof(float));
    /* a whole forward takes milliseconds on the device: one step of
     * progress for the watchdog after it is enough */
    if (b->progress != NULL) {
        b->progress(b->progress_ctx);
    }
    return 0;
}

static int
cuda_hidden(clef_backend *b, const clef_batch *batch, float *hidden,
    clef_error *err)
{
    cuda_plan  p;
    int        rc;

    if (prepare(b, batch, &p, err) != 0) {
        return -1;
    }
    b->n_marks = 0;
    rc = cuda_backbone(b, &p, err);
    if (rc == 0) {
        rc = cuda_check(clef_k_bf16_to_f32(b->ws.xn, b->ws.X, (int64_t) p.T * b->H,
                                           b->stream), "hidden", err);
    }
    if (rc == 0) {
        rc = cuda_check(cudaMemcpyAsync(hidden, b->ws.X,
                                        (size_t) p.T * b->H * sizeof(float),
                                        cudaMemcpyDeviceToHost, b->stream), "hidden", err);
    }
    if (cuda_check(cudaStreamSynchronize(b->stream), "hidden", err) != 0 || rc != 0) {
        b->n_marks = 0;
        return -1;
    }
    b->n_marks = 0;
    return 0;
}

/* ---- extras ------------------------------------------------------------------ */

void
clef_cuda_set_graphs(clef_backend *b, int graphs)
{
    b->use_graphs = graphs != 0;
    if (!b->use_graphs) {
        cuda_graphs_clear(b);
    }
}

void
clef_cuda_set_profile(clef_backend *b, int profile)
{
    int  i;

    if (profile && b->ev[CUDA_MARKS_MAX - 1] == NULL) {
        for (i = 0; i < CUDA_MARKS_MAX; i++) {
            if (b->ev[i] == NULL && cudaEventCreate(&b->ev[i]) != cudaSuccess) {
                b->ev[i] = NULL;
                return;         /* profiling stays off */
            }
        }
    }
    b->profile = profile != 0;
}

void
clef_cuda_graph_stats(const clef_backend *b, long *replays, long *captures)
{
    *replays = b->replays;
    *captures = b->captures;
}

void
clef_cuda_gemm_stats(const clef_backend *b, long *fallbacks, long *heuristics)
{
    *fallbacks = clef_gemm_fallbacks(b->gemm);
    *heuristics = clef_gemm_heuristic_calls(b->gemm);
}

int
clef_cuda_profile_read(clef_backend *b, double ms[CLEF_CUDA_PROF_COUNT],
    int *forwards, clef_error *err)
{
    if (cuda_check(cudaStreamSynchronize(b->stream), "profile", err) != 0) {
        return -1;
    }
    memcpy(ms, b->prof_ms, sizeof(b->prof_ms));
    *forwards = b->prof_forwards;
    return 0;
}

void
clef_cuda_profile_reset(clef_backend *b)
{
    memset(b->prof_ms, 0, sizeof(b->prof_ms));
    b->prof_forwards = 0;
}

static const char *
cuda_describe(const clef_backend *b)
{
    return b->describe;
}

const clef_backend_ops  clef_cuda_backend_ops = {
    "cuda",
    cuda_open,
    cuda_forward,
    cuda_hidden,
    cuda_close,
    cuda_describe
};
