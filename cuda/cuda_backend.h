/*
 * Internals of the CUDA backend shared by its host files: the device
 * weights, the per-batch plan (metadata uploaded once per forward), the
 * workspace and the graph cache.
 */
#ifndef CLEF_CUDA_BACKEND_H
#define CLEF_CUDA_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "backend/device_plan.h"
#include "clef_cuda.h"
#include "comm_cuda.h"
#include "devmem.h"
#include "gemm.h"
#include "kernels.h"
#include "model/model.h"
#include "model/shard.h"

#define CUDA_GRAPHS      16          /* launch shapes kept as graphs */
#define CUDA_GRAPH_KEY   13          /* int32 counts of a launch shape (graphs.c) */
#define CUDA_MARKS_MAX   (4 * CLEF_MAX_LAYERS + 8)
#define CUDA_TP_MAX      CLEF_K_RANKS_MAX  /* ranks of one replica */
#define CUDA_TOWERS      2           /* rows of tower.c's table */

/* A decoder layer on the device as its parts (weights.c loads each with
 * a loader of its own): its norms, its mixer, its MLP by kind. */
typedef struct {
    clef_bf16   *input, *post;       /* [H], zero-centred */
} cuda_norms;

typedef struct {
    clef_bf16   *in;                 /* [gdn_rows][H]: qkv | z | b | a | 0 */
    clef_bf16   *conv_wt;            /* [K][C_conv] */
    float       *neg_a, *dt_bias;    /* [Hv]: -exp(A_log), dt_bias */
    float       *norm;               /* [dv] */
    clef_bf16   *out;                /* [H][Hv*dv] */
} cuda_gdn;

typedef struct {
    clef_bf16   *in;                 /* [attn_rows][H]: q(+gate) | k | v | 0 */
    clef_bf16   *q_norm, *k_norm;    /* [hd] */
    clef_bf16   *out;                /* [H][Hq*hd] */
} cuda_attn;

typedef struct {
    clef_bf16   *gate_up;            /* [2I][H]: gate rows, then up rows */
    clef_bf16   *down;               /* [H][I] */
} cuda_dense;

/* Clef Omni's routed experts (moe.cu): the router in fp32, every expert's
 * gate | up rows and its down_proj, one expert after the other, so that
 * one grouped GEMM launch runs them all. */
typedef struct {
    float      *router;              /* [E][H] */
    clef_bf16  *gate_up;             /* [E][2 Im][H]: gate rows, then up */
    clef_bf16  *down;                /* [E][H][Im] */
} cuda_moe;

typedef struct {
    clef_mlp_kind  kind;
    cuda_dense     dense;            /* CLEF_MLP_DENSE */
    cuda_moe       moe;              /* CLEF_MLP_MOE */
} cuda_mlp;

typedef struct {
    clef_mixer_kind  mixer;
    cuda_norms       norm;
    cuda_gdn         gdn;            /* mixer CLEF_MIXER_LINEAR */
    cuda_attn        attn;           /* mixer CLEF_MIXER_FULL */
    cuda_mlp         mlp;
} cuda_layer;

typedef struct {
    float  *in_w, *in_b;             /* [3W][W], [3W]: q | k | v */
    float  *out_w, *out_b;           /* [W][W], [W] */
} cuda_mha;

typedef struct {
    float     *qn_w, *qn_b, *mn_w, *mn_b, *fn_w, *fn_b;
    cuda_mha   att;
    float     *ff0_w, *ff0_b, *ff3_w, *ff3_b;
} cuda_route;

typedef struct {
    float     *n1_w, *n1_b, *n2_w, *n2_b, *n3_w, *n3_b;
    cuda_mha   sa, ca;
    float     *l1_w, *l1_b, *l2_w, *l2_b;
} cuda_dec;

typedef struct {
    float       *hn_w, *hn_b;        /* hidden_norm [H] */
    float       *mem_proj;           /* [W][H] */
    float       *qv_proj;            /* [2W][H]: option_question | question */
    float       *glob_proj, *ctx_proj, *lex_proj;  /* [W][H] */
    float       *type_emb;           /* [3][W] */
    cuda_route  *route;              /* [routing_layers] */
    float       *sum_w, *sum_b;
    cuda_dec    *dec;                /* [layers] */
    float       *field_w, *field_b, *opt_w, *opt_b;
    float       *rs0_w, *rs0_b, *rs3_w, *rs3_b;
    float        prior_scale, joint_scale, gate;
} cuda_head_w;

/* Sizes of one batch and where each metadata array starts (in int32s) in
 * the staging buffer.  The counts alone size every launch of a forward
 * (the offsets follow from them): they are the key of the graph cache;
 * the arrays are data the kernels read from the device copy. */
typedef struct {
    int     T, NR, Q, N;
    int     n_tiles, n_jobs, max_opts;
    int     og_groups, og_items, fm_groups, fm_items, fs_groups, fs_items;
    int     max_items;
    size_t  o_cu, o_tiles, o_jobs, o_oq, o_qrec, o_qtype, o_qoff;
    size_t  o_og_g, o_og_i, o_og_gi, o_fm_g, o_fm_i, o_fm_gi;
    size_t  o_fs_g, o_fs_i, o_fs_gi;
    size_t  o_pos, o_ids, total;
} cuda_plan;

/* Device workspace, carved from one allocation sized by capacities. */
typedef struct {
    int          cap_T, cap_N, cap_Q, cap_NR, cap_items;
    clef_bf16   *hid, *xn, *proj, *mix, *act;
    float       *X, *M, *Mn, *KV, *QVP, *GP;
    float       *qv, *ctx, *glob, *lex;  /* span means, each 256-byte aligned */
    float       *R, *Rn, *Qh, *A, *FF, *Fq, *Ro, *Z, *Hs, *part;
    float       *logits;
    /* the routed experts (models with them): T k grouped rows */
    float       *r_logits, *r_weight;          /* [T][E], [T][k] */
    int32_t     *r_expert, *r_slot, *r_row;    /* [T][k], [T][k], [T k] */
    int32_t     *r_count, *r_offset, *r_tiles; /* [E], [E + 1], [E + 1] */
    clef_bf16   *m_gu, *m_act, *m_out;         /* [T k][2 Im], [Im], [H] */
} cuda_ws;

/* A media tower of the backend (tower.h): its own state (vision.h,
 * audio.h; NULL: the model has none, or a rank > 0) and whether the
 * prepared batch has items for it. */
typedef struct {
    void            *state;
    int              active;
} cuda_tower_slot;

typedef struct {
    int              used;
    int32_t          key[CUDA_GRAPH_KEY];
    cudaGraphExec_t  exec;           /* NULL until the shape is seen twice */
    int              failed;         /* capture failed: always eager */
    uint64_t         stamp;
} cuda_graph;

/*
 * One rank of a replica.  At tp = 1 the replica is this one struct, as
 * before tensor parallelism.  At tp > 1 (tp.c) the handle the engine holds
 * is rank 0, which owns the other ranks (ranks[]), the communicator and
 * everything of the head; every rank owns its device, stream, cuBLASLt
 * handle, shard of the layers (sizes below are the rank's: its heads and
 * intermediate columns), a replicated embedding, a backbone-only
 * workspace and a copy of the batch metadata.
 */
struct clef_backend {
    int               device;
    int               rank, tp;          /* this rank of tp */
    clef_shard        shard;             /* what this rank holds */
    clef_backend     *ranks[CUDA_TP_MAX];  /* rank 0: every rank, itself first */
    cuda_comm        *comm;              /* rank 0, tp > 1 (or forced): the
                                            all-reduce of the row-parallel
                                            outputs; NULL: none */
    char              describe[512];
    void            (*progress)(void *ctx);    /* after each forward */
    void             *progress_ctx;
    cudaStream_t      stream;
    clef_gemm        *gemm;
    const clef_model *model;

    /* sizes */
    int     H, I, V, L, Hq, Hkv, hd, Hk, Hv, dk, dv, Kc, Cconv, rot, gated;
    int     W, F, heads, n_route, n_dec;
    int     q_rows, gdn_rows, attn_rows, proj_ld, mix_ld, act_ld;
    int     z_off, b_off, a_off, k_off, v_off;
    float   eps;
    int     plain_norm;              /* RMSNorms multiply by w (Clef Omni) */
    int     any_moe, E, Ke, Im, renorm;  /* routed experts: E of them, Ke
                                        per token, Im columns each */
    clef_devplan_rank  plan;         /* the rank's sizes as the memory plan
                                        has them (device_plan.h): the
                                        workspace is carved from them */

    /* weights */
    cuda_allocs allocs;
    clef_bf16  *embed, *lm_head, *final_norm;
    float      *inv_freq;
    cuda_layer  layers[CLEF_MAX_LAYERS];
    cuda_head_w head;
    cuda_tower_slot towers[CUDA_TOWERS];   /* tower.c's rows, in order */

    /* per forward (ranks > 0: the backbone's buffers and dmeta only) */
    void       *ws_mem;
    cuda_ws     ws;
    int32_t    *dmeta;               /* device copy of the metadata */
    size_t      dmeta_cap;           /* int32s */
    int32_t    *hmeta;               /* pinned staging */
    size_t      hmeta_cap;
    float      *hout;                /* pinned: the logits */
    size_t      hout_cap;            /* floats */

    /* graphs */
    cuda_graph  graphs[CUDA_GRAPHS];
    uint64_t    clock;
    int         use_graphs;
    long        replays, captures;

    /* profiling */
    int          profile;
    cudaEvent_t  ev[CUDA_MARKS_MAX];
    int          mark_type[CUDA_MARKS_MAX];
    int          n_marks;
    double       prof_ms[CLEF_CUDA_PROF_COUNT];
    int          prof_forwards;
};

/* weights.c */
int   cuda_weights_upload(clef_backend *b, clef_error *err);
void  cuda_weights_free(clef_backend *b);

/* memcheck.c: the memory plan of every rank against its device's free
 * memory, capped by o->gpu_memory; refuses (CLEF_E_NO_MEMORY) naming the
 * numbers.  Nothing is checked when o->batch_tokens is 0. */
int   cuda_memory_check(clef_backend *b, const clef_backend_opts *o,
    clef_error *err);

/* plan.c: validates the batch and fills b->hmeta. */
int   cuda_plan_build(clef_backend *b, const clef_batch *batch, cuda_plan *p,
    clef_error *err);

/* forward.c: enqueue the backbone (ids -> ws.xn, final-norm output) and the
 * head (ws.xn -> ws.logits) on b->stream. */
int   cuda_backbone(clef_backend *b, const cuda_plan *p, clef_error *err);
int   cuda_head(clef_backend *b, const cuda_plan *p, clef_error *err);
void  cuda_mark(clef_backend *b, int type);

/* tp.c: tensor parallelism.  cuda_tp_devices: the replica's devices from
 * the options (devices[0 .. n_devices), or tp consecutive ordinals from
 * `device`), checked to exist, one CUDA device per rank.  cuda_tp_comm:
 * the communicator a replica of these devices needs (comm: "nccl",
 * "same-device", or NULL for the default: none at tp = 1, NCCL over
 * distinct devices, same-device when every rank has one device).
 * cuda_all_reduce: the grouped in-place sum of every rank's hid over T
 * rows.  cuda_tp_wait: waits for every rank's stream, polling the
 * communicator, and aborts it on the first error so that no stream waits
 * forever for a faulted peer. */
int   cuda_tp_devices(const clef_backend_opts *o, int *devices, int *tp,
    clef_error *err);
int   cuda_tp_comm(clef_backend *b, const int *devices, const char *comm,
    clef_error *err);
int   cuda_all_reduce(clef_backend *b, int T, clef_error *err);
int   cuda_tp_wait(clef_backend *b, clef_error *err);

/* graphs.c: the entry for p's launch shape, a new one (evicting the least
 * recently used) with *fresh set when absent. */
cuda_graph *cuda_graph_lookup(clef_backend *b, const cuda_plan *p, int *fresh);
void        cuda_graphs_clear(clef_backend *b);

/* cudaSetDevice(b->ranks[r]->device) when *cur is another device. */
int   cuda_rank_device(clef_backend *b, int r, int *cur, clef_error *err);

/* Turns a failed CUDA call into a clef_error (returns 0 on success). */
int   cuda_check(cudaError_t e, const char *what, clef_error *err);

/* Returns -1 from the calling function when a CUDA call fails (err set). */
#define CK(call, what)  do {                                                  \
        if (cuda_check((call), (what), err) != 0) {                           \
            return -1;                                                        \
        }                                                                     \
    } while (0)

#endif
