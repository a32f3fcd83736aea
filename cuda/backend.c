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
#include "tower.h"

/* the head's grouped attention as the memory plan counts it */
_Static_assert(CLEF_DEVPLAN_GATTN_GQ == CLEF_K_GATTN_GQ
               && CLEF_DEVPLAN_GATTN_SPLIT == CLEF_K_GATTN_SPLIT,
               "device_plan.h's grouped-attention sizes are kernels.h's");

/* ---- workspace ----------------------------------------------------------- */

typedef struct {
    char    *base;
    size_t   off;
} carver;

static void *
carve(carver *c, size_t bytes)
{
    void  *p = c->base ? c->base + c->off : NULL;

    c->off += (bytes + CLEF_DEVPLAN_ALIGN - 1) / CLEF_DEVPLAN_ALIGN
              * CLEF_DEVPLAN_ALIGN;
    return p;
}

/* Assigns every workspace pointer for the current capacities; with a NULL
 * base it only sizes.  The sizes are the memory plan's
 * (backend/device_plan.h), which `nginx -t` computes too. */
static size_t
ws_layout(clef_backend *b, char *base)
{
    cuda_ws            *w = &b->ws;
    carver              c = { base, 0 };
    clef_devplan_caps   caps;
    size_t              sz[CLEF_WS_COUNT];

    caps.T = w->cap_T;
    caps.N = w->cap_N;
    caps.Q = w->cap_Q;
    caps.NR = w->cap_NR;
    caps.items = w->cap_items;
    clef_devplan_ws_sizes(&b->plan, &caps, sz);

    w->hid = carve(&c, sz[CLEF_WS_HID]);
    w->xn = carve(&c, sz[CLEF_WS_XN]);
    w->proj = carve(&c, sz[CLEF_WS_PROJ]);
    w->mix = carve(&c, sz[CLEF_WS_MIX]);
    w->act = carve(&c, sz[CLEF_WS_ACT]);
    if (b->any_moe) {
        w->r_logits = carve(&c, sz[CLEF_WS_R_LOGITS]);
        w->r_weight = carve(&c, sz[CLEF_WS_R_WEIGHT]);
        w->r_expert = carve(&c, sz[CLEF_WS_R_EXPERT]);
        w->r_slot = carve(&c, sz[CLEF_WS_R_SLOT]);
        w->r_row = carve(&c, sz[CLEF_WS_R_ROW]);
        w->r_count = carve(&c, sz[CLEF_WS_R_COUNT]);
        w->r_offset = carve(&c, sz[CLEF_WS_R_OFFSET]);
        w->r_tiles = carve(&c, sz[CLEF_WS_R_TILES]);
        w->m_gu = carve(&c, sz[CLEF_WS_M_GU]);
        w->m_act = carve(&c, sz[CLEF_WS_M_ACT]);
        w->m_out = carve(&c, sz[CLEF_WS_M_OUT]);
    }
    if (b->rank > 0) {
        /* the head runs on rank 0 alone */
        return c.off;
    }
    w->X = carve(&c, sz[CLEF_WS_X]);
    w->M = carve(&c, sz[CLEF_WS_M]);
    w->Mn = carve(&c, sz[CLEF_WS_MN]);
    w->KV = carve(&c, sz[CLEF_WS_KV]);
    w->qv = carve(&c, sz[CLEF_WS_QV]);
    w->ctx = carve(&c, sz[CLEF_WS_CTX]);
    w->glob = carve(&c, sz[CLEF_WS_GLOB]);
    w->lex = carve(&c, sz[CLEF_WS_LEX]);
    w->QVP = carve(&c, sz[CLEF_WS_QVP]);
    w->GP = carve(&c, sz[CLEF_WS_GP]);
    w->R = carve(&c, sz[CLEF_WS_R]);
    w->Rn = carve(&c, sz[CLEF_WS_RN]);
    w->Qh = carve(&c, sz[CLEF_WS_QH]);
    w->A = carve(&c, sz[CLEF_WS_A]);
    w->FF = carve(&c, sz[CLEF_WS_FF]);
    w->Fq = carve(&c, sz[CLEF_WS_FQ]);
    w->Ro = carve(&c, sz[CLEF_WS_RO]);
    w->Z = carve(&c, sz[CLEF_WS_Z]);
    w->Hs = carve(&c, sz[CLEF_WS_HS]);
    w->part = carve(&c, sz[CLEF_WS_PART]);
    w->logits = carve(&c, sz[CLEF_WS_LOGITS]);
    return c.off;
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
        w->cap_T = clef_devplan_grow(w->cap_T, p->T, CLEF_DEVPLAN_UNIT_T);
        w->cap_N = clef_devplan_grow(w->cap_N, p->N, CLEF_DEVPLAN_UNIT_N);
        w->cap_Q = clef_devplan_grow(w->cap_Q, p->Q, CLEF_DEVPLAN_UNIT_Q);
        w->cap_NR = clef_devplan_grow(w->cap_NR, p->NR, CLEF_DEVPLAN_UNIT_NR);
        w->cap_items = clef_devplan_grow(w->cap_items, p->max_items,
                                         CLEF_DEVPLAN_UNIT_ITEMS);

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
            return clef_error_fail(err, CLEF_E_NO_MEMORY,
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

    if (b->rank == 0 && (size_t) p->N > b->hout_cap) {
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
    b->plain_norm = !tc->norm_plus_one;
    b->E = tc->num_experts;
    b->Ke = tc->num_experts_per_tok;
    b->Im = tc->moe_intermediate_size;
    b->renorm = tc->norm_topk_prob;
    b->any_moe = 0;
    b->W = hc->width;
    b->F = hc->feedforward;
    b->heads = hc->heads;
    b->n_route = hc->routing_layers;
    b->n_dec = hc->layers;

    if (b->L < 1 || b->L > CLEF_MAX_LAYERS) {
        return clef_error_fail(err, CLEF_E_MODEL,
            "cuda backend: %d layers", b->L);
    }
    for (l = 0; l < b->L; l++) {
        b->any_moe |= tc->layer[l].mlp == CLEF_MLP_MOE;
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
        return clef_error_fail(err, CLEF_E_MODEL,
            "cuda backend: unsupported sizes (hidden %d, intermediate %d, head width "
            "%d / %d heads): needs multiples of 8 and head dim <= 128",
            b->H, b->I, b->W, b->heads);
    }
    if (b->any_moe && (b->E < 1 || b->Ke < 1 || b->Ke > 32 || b->Ke > b->E
                       || b->Im <= 0 || b->Im % 8 || b->tp > 1))
    {
        return clef_error_fail(err, CLEF_E_MODEL,
            "cuda backend: unsupported routed experts (%d experts, %d per "
            "token, %d columns, tp=%d): needs at most 32 per token, columns "
            "in multiples of 8 and tp=1", b->E, b->Ke, b->Im, b->tp);
    }
    if (n_gdn && (b->Hk <= 0 || b->Hv <= 0 || b->Hv % b->Hk || b->Cconv % 8
                  || !clef_k_gdn_supported(b->dk, b->dv) || b->Kc < 1 || b->Kc > 16))
    {
        return clef_error_fail(err, CLEF_E_MODEL,
            "cuda backend: unsupported linear attention (%d k heads x %d, %d v heads "
            "x %d, conv %d)", b->Hk, b->dk, b->Hv, b->dv, b->Kc);
    }
    if (n_attn && (b->Hkv <= 0 || b->Hq <= 0 || b->Hq % b->Hkv
                   || !clef_k_attention_supported(b->hd) || b->rot % 2
                   || b->rot < 0 || b->rot > b->hd))
    {
        return clef_error_fail(err, CLEF_E_MODEL,
            "cuda backend: unsupported attention (%d heads, %d kv heads, head dim %d, "
            "rotary %d)", b->Hq, b->Hkv, b->hd, b->rot);
    }

    /* The rank's share (shard.h; the whole model at tp = 1): every size
     * below, the stacked projections' rows and the workspace strides, is
     * the rank's, and the kernels see a model with fewer heads and
     * intermediate columns.  The memory plan (backend/device_plan.h)
     * derives them, so that `nginx -t` plans with the same sizes. */
    clef_devplan_rank_of(tc, hc, b->tp, b->rank, &b->plan);
    if (b->tp > 1) {
        b->Hq = b->plan.Hq;
        b->Hkv = b->plan.Hkv;
        b->Hk = b->plan.Hk;
        b->Hv = b->plan.Hv;
        b->I = b->plan.I;
        b->Cconv = b->plan.Cconv;
        if (b->I % 8 || (n_gdn && b->Cconv % 8)) {
            return clef_error_fail(err, CLEF_E_MODEL,
                "cuda backend: tp=%d leaves %d intermediate columns and %d conv "
                "channels per rank; the kernels need multiples of 8", b->tp, b->I,
                n_gdn ? b->Cconv : 0);
        }
    }

    b->q_rows = b->plan.q_rows;
    b->gdn_rows = b->plan.gdn_rows;
    b->z_off = b->Cconv;
    b->b_off = b->Cconv + b->Hv * b->dv;
    b->a_off = b->b_off + b->Hv;
    b->attn_rows = b->plan.attn_rows;
    b->k_off = b->q_rows;
    b->v_off = b->q_rows + b->Hkv * b->hd;
    b->proj_ld = b->plan.proj_ld;
    b->mix_ld = b->plan.mix_ld;
    b->act_ld = b->plan.act_ld;
    return 0;
}

/* Frees one rank's resources (its stream waited for first). */
static void
rank_free(clef_backend *b)
{
    int  i;

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
    cuda_towers_close(b);           /* the media towers (tower.c) */
    cuda_weights_free(b);
    clef_gemm_destroy(b->gemm);
    if (b->stream != NULL) {
        cudaStreamDestroy(b->stream);
    }
    free(b);
}

static void
cuda_close(clef_backend *b)
{
    int  devs[CUDA_TP_MAX], n = 0, r, i;

    if (b == NULL) {
        return;
    }
    /* A faulted communicator first: a rank's stream may be waiting inside
     * a collective for a peer that will never come, and only the abort
     * lets it drain (the waits in rank_free would hang). */
    if (b->comm != NULL && b->comm->faulted) {
        b->comm->abort(b->comm);
    }
    for (r = 0; r < b->tp; r++) {
        if (b->ranks[r] != NULL && b->ranks[r]->stream != NULL) {
            cudaSetDevice(b->ranks[r]->device);
            cudaStreamSynchronize(b->ranks[r]->stream);
        }
    }
    if (b->comm != NULL) {
        b->comm->base.ops->destroy(&b->comm->base);
        b->comm = NULL;
    }
    for (r = b->tp - 1; r >= 0; r--) {
        clef_backend  *k = b->ranks[r];

        if (k == NULL && r > 0) {
            continue;
        }
        if (k == NULL) {
            k = b;
        }
        for (i = 0; i < n && devs[i] != k->device; i++) {
            /* seen */
        }
        if (i == n) {
            devs[n++] = k->device;
        }
        rank_free(k);
    }
    /* after a fault that poisoned a context, only a reset lets the next
     * open of that device work; it touches no other device */
    for (i = 0; i < n; i++) {
        if (cudaSetDevice(devs[i]) == cudaSuccess
            && cudaDeviceSynchronize() != cudaSuccess)
        {
            cudaDeviceReset();
        }
    }
}

/* Whether device dev can run this build; its kernels' shared-memory
 * limits raised (once per device: the attribute is per device). */
static int
check_device(int dev, struct cudaDeviceProp *prop, clef_error *err)
{
    cudaError_t  e;

    e = cudaSetDevice(dev);
    if (e == cudaSuccess) {
        e = cudaGetDeviceProperties(prop, dev);
    }
    if (e != cudaSuccess) {
        return clef_error_set(err, 503, "no_device", NULL, "no CUDA device: %s",
            cudaGetErrorString(e));
    }
    if (prop->major < 9) {
        return clef_error_set(err, 503, "no_device", NULL,
            "no CUDA device: %s (device %d) has compute capability %d.%d; this "
            "build needs 9.0", prop->name, dev, prop->major, prop->minor);
    }
    e = clef_k_setup();
    if (e != cudaSuccess) {
        return cuda_check(e, "kernel setup", err);
    }
    return 0;
}

/* Rank `rank` of tp on device dev: sizes of its shard and its stream; the
 * weights come once the communicator exists. */
static int
rank_new(const clef_model *m, const clef_backend_opts *o, int rank, int tp,
    int dev, clef_backend **out, clef_error *err)
{
    clef_backend  *b;
    cudaError_t    e;

    *out = NULL;
    b = calloc(1, sizeof(*b));
    if (b == NULL) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }
    b->device = dev;
    b->rank = rank;
    b->tp = tp;
    b->model = m;
    b->use_graphs = 1;
    clef_shard_of(clef_model_text_config(m), tp, rank, &b->shard);
    if (o != NULL && rank == 0) {
        b->progress = o->progress;
        b->progress_ctx = o->progress_ctx;
    }
    if (sizes(b, err) != 0) {
        free(b);
        return -1;
    }
    e = cudaSetDevice(dev);
    if (e == cudaSuccess) {
        e = cudaStreamCreateWithFlags(&b->stream, cudaStreamNonBlocking);
    }
    if (e != cudaSuccess) {
        b->stream = NULL;
        rank_free(b);
        return cuda_check(e, "stream", err);
    }
    *out = b;
    return 0;
}

static int
open_replica(const clef_model *m, const clef_backend_opts *o, const char *comm,
    clef_backend **out, clef_error *err)
{
    clef_backend          *b = NULL, *k;
    struct cudaDeviceProp  prop;
    int                    devs[CUDA_TP_MAX], tp, r, i, len;

    *out = NULL;
    /* the CUDA backend computes in bf16 (tensor cores): no fp32 path, no
     * int8 one */
    if (o != NULL && (o->precision == CLEF_PRECISION_FP32
                      || o->precision == CLEF_PRECISION_Q8))
    {
        return clef_error_fail(err, CLEF_E_MODEL,
            "the CUDA backend computes in bf16: precision=%s is for the CPU",
            clef_precision_name(o->precision));
    }
    if (cuda_tp_devices(o, devs, &tp, err) != 0) {
        return -1;
    }
    for (r = 0; r < tp; r++) {
        for (i = 0; i < r && devs[i] != devs[r]; i++) {
            /* a device checked already */
        }
        if (i == r && check_device(devs[r], &prop, err) != 0) {
            return -1;
        }
    }
    if (clef_shard_check(clef_model_text_config(m), tp, err) != 0) {
        return -1;
    }

    for (r = 0; r < tp; r++) {
        if (rank_new(m, o, r, tp, devs[r], &k, err) != 0) {
            cuda_close(b);
            return -1;
        }
        if (r == 0) {
            b = k;
        }
        b->ranks[r] = k;
    }

    if (check_device(devs[0], &prop, err) != 0
        || cuda_tp_comm(b, devs, comm, err) != 0)
    {
        cuda_close(b);
        return -1;
    }
    if (tp == 1 && b->comm == NULL) {
        snprintf(b->describe, sizeof(b->describe), "cuda backend: device %d "
                 "(%s, compute capability %d.%d, %.0f GiB); bf16 weights, "
                 "cuBLASLt GEMMs with one algorithm per shape", devs[0], prop.name,
                 prop.major, prop.minor,
                 (double) prop.totalGlobalMem / (1024.0 * 1024 * 1024));
    } else {
        len = snprintf(b->describe, sizeof(b->describe), "cuda backend: tp=%d over "
                       "%s, devices", tp, b->comm->describe);
        for (r = 0; r < tp && len > 0 && (size_t) len < sizeof(b->describe); r++) {
            len += snprintf(b->describe + len, sizeof(b->describe) - (size_t) len,
                            "%s%d", r ? "," : " ", devs[r]);
        }
        if (len > 0 && (size_t) len < sizeof(b->describe)) {
            snprintf(b->describe + len, sizeof(b->describe) - (size_t) len,
                     " (%s, compute capability %d.%d, %.0f GiB); bf16 weights "
                     "sharded Megatron style, one bf16 all-reduce after each "
                     "mixer and each MLP; cuBLASLt GEMMs with one algorithm per "
                     "shape", prop.name, prop.major, prop.minor,
                     (double) prop.totalGlobalMem / (1024.0 * 1024 * 1024));
        }
    }

    /* the weights and the workspace must fit before the upload starts */
    if (cuda_memory_check(b, o, err) != 0) {
        cuda_close(b);
        return -1;
    }
    for (r = 0; r < tp; r++) {
        k = b->ranks[r];
        if (cuda_check(cudaSetDevice(k->device), "cudaSetDevice", err) != 0
            || clef_gemm_create(&k->gemm, err) != 0
            || cuda_weights_upload(k, err) != 0)
        {
            cuda_close(b);
            return -1;
        }
    }
    /* the media towers (tower.c) on rank 0, which alone runs them */
    if (cuda_check(cudaSetDevice(b->device), "cudaSetDevice", err) != 0
        || cuda_towers_open(b, err) != 0)
    {
        cuda_close(b);
        return -1;
    }
    *out = b;
    return 0;
}

static int
cuda_open(const clef_model *m, const clef_backend_opts *o, clef_backend **out,
    clef_error *err)
{
    return open_replica(m, o, NULL, out, err);
}

int
clef_cuda_open_tp(const clef_model *m, const clef_backend_opts *o,
    const char *comm, clef_backend **out, clef_error *err)
{
    return open_replica(m, o, comm, out, err);
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
    clef_backend  *k;
    int            r, cur = b->device;

    /* The tower and its M-RoPE run on rank 0 only: under tensor
     * parallelism every rank would need the features in its own copy of
     * the embeddings, which is not built yet. */
    if (b->tp > 1 && clef_batch_has_media(batch, "cuda", err)) {
        return clef_error_set(err, 500, "media_unsupported", NULL,
                              "the cuda backend runs images at tp=1 only");
    }
    /* a kind no tower takes is refused before anything is launched */
    if (cuda_towers_check(batch, err) != 0
        || cuda_check(cudaSetDevice(b->device), "cudaSetDevice", err) != 0
        || cuda_plan_build(b, batch, p, err) != 0)
    {
        return -1;
    }
    /* Every rank's workspace first, so that nothing is in flight when one
     * cannot grow; then every rank's copy of the metadata, read from rank
     * 0's pinned staging buffer, which only the next forward's plan
     * rewrites, after every rank's stream has been waited for. */
    for (r = 0; r < b->tp; r++) {
        if (cuda_rank_device(b, r, &cur, err) != 0 || ensure_ws(b->ranks[r], p, err) != 0) {
            return -1;
        }
    }
    /* the media towers (tower.c): after the workspace, as their plans
     * read it */
    if (cuda_rank_device(b, 0, &cur, err) != 0
        || cuda_towers_prepare(b, batch, err) != 0)
    {
        return -1;
    }
    for (r = 0; r < b->tp; r++) {
        k = b->ranks[r];
        if (cuda_rank_device(b, r, &cur, err) != 0
            || cuda_check(cudaMemcpyAsync(k->dmeta, b->hmeta,
                                          p->total * sizeof(int32_t),
                                          cudaMemcpyHostToDevice, k->stream),
                          "metadata upload", err) != 0)
        {
            return -1;
        }
    }
    return cuda_rank_device(b, 0, &cur, err);
}

/* Waits for the forward's work: rank 0's stream alone at tp = 1 (as
 * before tensor parallelism), every rank's with the communicator polled
 * otherwise (tp.c). */
static int
wait_ranks(clef_backend *b, const char *what, clef_error *err)
{
    if (b->tp == 1 && b->comm == NULL) {
        return cuda_check(cudaStreamSynchronize(b->stream), what, err);
    }
    return cuda_tp_wait(b, err);
}

/* The tail of every run: waits for its work even after a failed enqueue
 * (rc != 0), as the staging buffers are reused.  The first error is the
 * one reported, unless the wait finds the device faulted (the engine then
 * reopens the replica); the profile marks of a failed run are dropped. */
static int
run_wait(clef_backend *b, int rc, const char *what, clef_error *err)
{
    clef_error  later;

    if (rc != 0) {
        memset(&later, 0, sizeof(later));
        if (wait_ranks(b, what, &later) != 0
            && later.code == CLEF_E_DEVICE_FAULT)
        {
            *err = later;
        }
        b->n_marks = 0;
        return -1;
    }
    if (wait_ranks(b, what, err) != 0) {
        b->n_marks = 0;
        return -1;
    }
    return 0;
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
    /* No graphs across ranks (graphs.c says why): tp > 1 launches
     * eagerly; so does a batch with media: the graph key does not hold
     * its items' shapes (tower.h). */
    if (b->use_graphs && !b->profile && b->tp == 1 && b->comm == NULL
        && !cuda_towers_active(b))
    {
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
    if (run_wait(b, rc, "forward", err) != 0) {
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
    rc = run_wait(b, rc, "hidden", err);
    b->n_marks = 0;
    return rc;
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

    /* the marks are recorded on rank 0's stream: its device's events */
    if (profile && b->ev[CUDA_MARKS_MAX - 1] == NULL
        && cudaSetDevice(b->device) == cudaSuccess)
    {
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

/* Summed over the replica's ranks: each has its own cuBLASLt plans. */
void
clef_cuda_gemm_stats(const clef_backend *b, long *fallbacks, long *heuristics)
{
    int  r;

    *fallbacks = 0;
    *heuristics = 0;
    for (r = 0; r < b->tp; r++) {
        *fallbacks += clef_gemm_fallbacks(b->ranks[r]->gemm);
        *heuristics += clef_gemm_heuristic_calls(b->ranks[r]->gemm);
    }
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

void
clef_cuda_memory(const clef_backend *b, int rank, int64_t *weights,
    int64_t *workspace)
{
    clef_backend  *k = b->ranks[rank];
    cuda_ws        saved = k->ws;

    *weights = (int64_t) k->allocs.bytes;
    /* sized only (a NULL base), then the pointers put back */
    *workspace = k->ws_mem != NULL ? (int64_t) ws_layout(k, NULL) : 0;
    k->ws = saved;
}

int
clef_cuda_tp(const clef_backend *b)
{
    return b->tp;
}

const char *
clef_cuda_comm_name(const clef_backend *b)
{
    return b->comm != NULL ? b->comm->base.ops->name : "none";
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
    cuda_describe,
    NULL,               /* seq_open: records run whole (backend.h) */
    NULL
};
