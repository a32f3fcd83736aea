/*
 * The Qwen3.5 text backbone on the CPU (spec §3): embedding, the
 * decoder layers (Gated DeltaNet or gated attention, each followed by the
 * SwiGLU MLP, with zero-centred RMSNorms and an fp32 residual stream), and
 * the final norm, over a packed batch of records.  Everything is fp32 but
 * the weight matrices, kept in bf16 (weights.h), and, at bf16 precision,
 * the activations entering a linear layer, rounded to bf16 (gemm.h).
 * Positions restart at 0 in every record and nothing crosses a record
 * boundary, so a record's
 * hidden states do not depend on what it is packed with, to the last bit:
 * the matrix products compute every row alike (gemm.h), and the ops that
 * work on a record's tokens together (conv, delta-rule chunks, attention
 * blocks, RoPE) count their blocks from the record's first token.
 *
 * Activation memory is allocated per forward and is proportional to the
 * tokens in the batch (attention is blockwise, the MLP runs in tiles of
 * rows).  One forward at a time per backbone.
 */
#ifndef CLEF_CPU_BACKBONE_H
#define CLEF_CPU_BACKBONE_H

#include <stdint.h>

#include "backend/backend.h"
#include "base/comm.h"
#include "base/error.h"
#include "cpu/kernels/gemm.h"
#include "cpu/model/seq.h"
#include "cpu/parallel/pool.h"
#include "model/model.h"
#include "model/shard.h"

typedef struct clef_cpu_backbone clef_cpu_backbone;

/* Lays out the weights (weights.h) for products at precision prec; the
 * pool is borrowed, not owned.  clef_cpu_backbone_open() is fp32. */
int  clef_cpu_backbone_open_prec(const clef_model *m, clef_cpu_pool *pool,
    clef_precision prec, clef_cpu_backbone **out, clef_error *err);
int  clef_cpu_backbone_open(const clef_model *m, clef_cpu_pool *pool,
    clef_cpu_backbone **out, clef_error *err);

/* Tensor parallelism: rank shard->rank of shard->size keeps only its heads
 * and columns (shard.h) and computes its segments of the row-parallel
 * products (o_proj, out_proj, down); the ranks gather every segment
 * through comm (borrowed) and each adds them to the residual stream in the
 * order of the unsharded backbone (rowpar.h), after each mixer and each
 * MLP.  Every rank runs the same forward on the same batch and ends with
 * the same hidden states, those of tp = 1 to the bit when tp divides the
 * model's segment count.  shard NULL or of size 1: the unsharded backbone
 * of clef_cpu_backbone_open_prec(), to the bit. */
int  clef_cpu_backbone_open_shard(const clef_model *m, clef_cpu_pool *pool,
    clef_precision prec, const clef_shard *shard, clef_comm *comm,
    clef_cpu_backbone **out, clef_error *err);

/* ids: the batch's tokens, packed; record r is [cu[r], cu[r+1]).
 * hidden: [cu[n_records]][hidden_size], the final-norm output; NULL: none
 * (a rank whose hidden states another rank hands on). */
/* fn(ctx) runs after every layer of a forward: the engine's watchdog
 * counts it as progress, so a long forward is not taken for a hung one. */
void clef_cpu_backbone_set_progress(clef_cpu_backbone *b,
    void (*fn)(void *ctx), void *ctx);

int  clef_cpu_backbone_forward(clef_cpu_backbone *b, const int32_t *ids,
    const int32_t *cu_seqlens, int n_records, float *hidden, clef_error *err);

/* Media (backend.h): the rows of features (hidden_size floats each)
 * replace the embeddings of the spans' tokens, and positions ([3][T],
 * NULL: text) are the M-RoPE positions of every token, record-relative.
 * DeepStack (Clef Omni): after decoder layer d < n_deepstack, the rows of
 * deepstack + d level_stride are added to the hidden states of the
 * visual spans' tokens (images and videos), at the rows those spans
 * name. */
typedef struct {
    const int32_t          *positions;
    const clef_media_span  *spans;
    int                     n_spans;
    const float            *features;
    int                     n_deepstack;
    const float            *deepstack;
    int64_t                 level_stride;
    const clef_media_span  *visual;
    int                     n_visual;
} clef_cpu_media;

int  clef_cpu_backbone_forward_media(clef_cpu_backbone *b, const int32_t *ids,
    const int32_t *cu_seqlens, int n_records, const clef_cpu_media *media,
    float *hidden, clef_error *err);

/*
 * Chunked prefill (backend.h's clef_batch_part): record r of a batch may be
 * tokens [parts[r].offset, + its length) of a longer record whose state
 * between its parts is parts[r].seq, opened by this backbone (one per
 * rank: each keeps its shard's).  The parts of a record run in order,
 * each at a multiple of CLEF_PART_ALIGN; the hidden states of its tokens
 * are to the bit those of the record run whole.  media's positions and
 * spans are the parts' (backend.h).  A forward that fails leaves the seqs
 * of its parts unusable (later forwards refuse them).
 */
typedef struct {
    clef_cpu_seq  *seq;         /* NULL: the record whole */
    int64_t        offset;
} clef_cpu_part;

int  clef_cpu_backbone_seq_open(const clef_cpu_backbone *b, int64_t tokens,
    clef_cpu_seq **out, clef_error *err);

/* parts NULL: clef_cpu_backbone_forward_media(). */
int  clef_cpu_backbone_forward_parts(clef_cpu_backbone *b, const int32_t *ids,
    const int32_t *cu_seqlens, int n_records, const clef_cpu_media *media,
    const clef_cpu_part *parts, float *hidden, clef_error *err);

void clef_cpu_backbone_close(clef_cpu_backbone *b);

/* For tests: every later forward fails with an error when it reaches
 * layer `layer` (-1: never), as a rank that runs out of memory would. */
void clef_cpu_backbone_fail_at(clef_cpu_backbone *b, int layer);

int  clef_cpu_backbone_hidden_size(const clef_cpu_backbone *b);

/* Bytes the weights take in memory (the embedding stays in the file). */
size_t clef_cpu_backbone_weight_bytes(const clef_cpu_backbone *b);

/* One line naming the products' path: kernel or library, and at bf16
 * precision why no native path runs when none does. */
const char *clef_cpu_backbone_gemm_describe(const clef_cpu_backbone *b);

/* Where the time goes: seconds spent in each op since the last reset,
 * summed over layers and forwards (clef bench --profile). */
typedef enum {
    CLEF_PROF_EMBED = 0,
    CLEF_PROF_NORM,          /* input, post-attention and final RMSNorms */
    CLEF_PROF_GDN_IN,        /* in_proj_qkv/z/b/a GEMM */
    CLEF_PROF_GDN_CONV,      /* causal conv + SiLU */
    CLEF_PROF_GDN_PREP,      /* L2 norms, beta, g */
    CLEF_PROF_GDN_CORE,      /* chunked delta rule */
    CLEF_PROF_GDN_NORM,      /* gated RMSNorm */
    CLEF_PROF_GDN_OUT,       /* out_proj GEMM */
    CLEF_PROF_ATTN_IN,       /* q/k/v projection GEMM */
    CLEF_PROF_ATTN_PREP,     /* q/k norms + RoPE */
    CLEF_PROF_ATTN_CORE,     /* softmax attention */
    CLEF_PROF_ATTN_GATE,     /* sigmoid output gate */
    CLEF_PROF_ATTN_OUT,      /* o_proj GEMM */
    CLEF_PROF_MLP_UP,        /* gate/up GEMM */
    CLEF_PROF_MLP_ACT,       /* silu(gate) * up */
    CLEF_PROF_MLP_DOWN,      /* down GEMM */
    CLEF_PROF_ALLREDUCE,     /* tensor parallel: exchanging the segment
                                partials (all_gather), waiting for the
                                other ranks included */
    CLEF_PROF_COUNT
} clef_cpu_prof_op;

const char *clef_cpu_prof_name(int op);
void        clef_cpu_backbone_profile(const clef_cpu_backbone *b,
    double seconds[CLEF_PROF_COUNT]);
void        clef_cpu_backbone_profile_reset(clef_cpu_backbone *b);

#endif
