/*
 * The memory plan of the CUDA backend, computed on the host: what one
 * rank's device holds for a model (its weights as cuda/weights.c uploads
 * them, every matrix in bf16), what its workspace takes for a batch (the
 * buffers cuda/backend.c carves, one allocation), and the fixed rest (the
 * cuBLASLt workspace).  Part of the client library, so that `nginx -t`
 * plans without CUDA; the backend sizes its workspace and checks its start
 * with the same functions (no second copy of a formula).
 *
 * Not planned yet: the media towers (rank 0, tp = 1), the metadata
 * buffers (a few bytes per token), cudaMalloc's rounding and the CUDA
 * context itself, which is outside what the backend allocates.
 */
#ifndef CLEF_DEVICE_PLAN_H
#define CLEF_DEVICE_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"

/* What cuBLASLt asks for on Hopper: one per rank (cuda/gemm.c) */
#define CLEF_DEVPLAN_GEMM_WS       ((int64_t) 32 << 20)
/* The alignment of every workspace buffer */
#define CLEF_DEVPLAN_ALIGN         256
/* The units the workspace's capacities grow by (cuda/backend.c) */
#define CLEF_DEVPLAN_UNIT_T        256
#define CLEF_DEVPLAN_UNIT_N        64
#define CLEF_DEVPLAN_UNIT_Q        64
#define CLEF_DEVPLAN_UNIT_NR       16
#define CLEF_DEVPLAN_UNIT_ITEMS    64
/* The planned batch's head rows: one option and one question per this
 * many tokens (a batch denser in options grows the workspace when it
 * comes, as any batch beyond the capacities does) */
#define CLEF_DEVPLAN_TOKENS_PER_OPTION  16
/* The most tokens a CUDA batch holds (cuda/plan.c) */
#define CLEF_DEVPLAN_MAX_TOKENS    (1 << 24)
/* The head's grouped attention (cuda/kernels.h: CLEF_K_GATTN_*) */
#define CLEF_DEVPLAN_GATTN_GQ      16
#define CLEF_DEVPLAN_GATTN_SPLIT   512

/* One rank's sizes: its share of heads and intermediate columns, the
 * stacked projections' rows and the workspace's strides. */
typedef struct {
    int  rank, tp;
    int  H, I, V, L, Hq, Hkv, hd, Hk, Hv, dk, dv, Kc, Cconv, rot, gated;
    int  W, F, heads;
    int  n_gdn, n_attn;
    int  any_moe, E, Ke, Im;
    int  q_rows, gdn_rows, attn_rows, proj_ld, mix_ld, act_ld;
} clef_devplan_rank;

/* The workspace's capacities: tokens, options, questions, records and
 * the head's grouped-attention work items. */
typedef struct {
    int  T, N, Q, NR, items;
} clef_devplan_caps;

/* The workspace's buffers, in the order they are carved. */
enum {
    CLEF_WS_HID = 0, CLEF_WS_XN, CLEF_WS_PROJ, CLEF_WS_MIX, CLEF_WS_ACT,
    CLEF_WS_R_LOGITS, CLEF_WS_R_WEIGHT, CLEF_WS_R_EXPERT, CLEF_WS_R_SLOT,
    CLEF_WS_R_ROW, CLEF_WS_R_COUNT, CLEF_WS_R_OFFSET, CLEF_WS_R_TILES,
    CLEF_WS_M_GU, CLEF_WS_M_ACT, CLEF_WS_M_OUT,
    CLEF_WS_X, CLEF_WS_M, CLEF_WS_MN, CLEF_WS_KV, CLEF_WS_QV, CLEF_WS_CTX,
    CLEF_WS_GLOB, CLEF_WS_LEX, CLEF_WS_QVP, CLEF_WS_GP, CLEF_WS_R,
    CLEF_WS_RN, CLEF_WS_QH, CLEF_WS_A, CLEF_WS_FF, CLEF_WS_FQ, CLEF_WS_RO,
    CLEF_WS_Z, CLEF_WS_HS, CLEF_WS_PART, CLEF_WS_LOGITS,
    CLEF_WS_COUNT
};

/* What a rank's device holds: bytes. */
typedef struct {
    int64_t  weights;         /* rank 0's: it holds the head as well */
    int64_t  workspace;       /* at batch_tokens */
    int64_t  fixed;           /* the cuBLASLt workspace */
    int64_t  total;
    int64_t  batch_tokens;
} clef_devplan;

/* Rank `rank` of tp's sizes (tp 0 or 1: the whole model). */
void    clef_devplan_rank_of(const clef_text_config *tc,
    const clef_head_config *hc, int tp, int rank, clef_devplan_rank *r);

/* The bytes of each workspace buffer at capacities c (0 for those the rank
 * does not have: routed-expert buffers without experts, the head's on a
 * rank > 0); returns the allocation: each buffer rounded up to
 * CLEF_DEVPLAN_ALIGN. */
size_t  clef_devplan_ws_sizes(const clef_devplan_rank *r,
    const clef_devplan_caps *c, size_t sz[CLEF_WS_COUNT]);

/* A capacity grown to hold need (cuda/backend.c): need rounded up to
 * unit, or a quarter more than before, whichever is larger. */
int     clef_devplan_grow(int cap, int need, int unit);

/* The capacities the backend's workspace has after its first batch of
 * these counts (clef_devplan_grow from 0): each rounded up to its unit. */
void    clef_devplan_caps_round(clef_devplan_caps *c);

/* The planned batch of tokens tokens in at most records records: records
 * of equal length, one option and one question per
 * CLEF_DEVPLAN_TOKENS_PER_OPTION tokens, the capacities rounded. */
void    clef_devplan_caps_for(int64_t tokens, int records,
    clef_devplan_caps *c);

/* The weights the rank uploads (cuda/weights.c): bf16 matrices, norms and
 * the embedding, fp32 A_log, dt_bias, the GDN norm and the router; on rank
 * 0 lm_head (unless tied; the option lexical means read its rows), the
 * final norm and the fp32 joint head. */
int64_t clef_devplan_weights(const clef_text_config *tc,
    const clef_head_config *hc, const clef_devplan_rank *r);

/* Rank 0's plan (it holds the most) at a batch of tokens tokens. */
void    clef_devplan_of(const clef_devplan_rank *r, int64_t weights,
    int64_t tokens, int records, clef_devplan *p);

/* The largest batch (a multiple of CLEF_DEVPLAN_UNIT_T, at most tokens)
 * whose plan fits budget; 0 when none does. */
int64_t clef_devplan_fit_tokens(const clef_devplan_rank *r, int64_t weights,
    int64_t tokens, int records, int64_t budget);

/* The plan in words: "20.9 GB on each GPU (weights 18.4 GB, workspace
 * 2.4 GB at max_batch_tokens=16384, cuBLASLt 33.6 MB)" (MB below a GB;
 * decimal units). */
const char *clef_devplan_describe(const clef_devplan *p, char *buf,
    size_t n);

/* bytes in words: "16.9 GB", "63.6 MB" below a GB (decimal units) */
const char *clef_devplan_size_text(int64_t bytes, char *buf, size_t n);

/* NULL when p fits budget; else buf, the refusal: "needs <describe> but
 * <against>" (against names the budget: "gpu_memory=16g (17.2 GB)"),
 * with "; max_batch_tokens=N fits" when a smaller batch does (the weights
 * fit with room for one). */
const char *clef_devplan_refusal(const clef_devplan_rank *r, int64_t weights,
    int records, const clef_devplan *p, int64_t budget, const char *against,
    char *buf, size_t n);

#endif
