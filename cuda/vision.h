/*
 * The vision tower on the CUDA backend (issue 11 item 5): the CPU tower's
 * steps (engine/cpu/model/vision.c, docs/spec/backbone.md §5.2) with bf16
 * GEMM inputs and an fp32 residual stream, run on the backend's stream
 * right after the token embedding of a batch with images; its merged
 * features replace the image-pad tokens' embeddings, and the backbone's
 * full-attention rope turns by the batch's M-RoPE positions (§5.3).
 *
 * It is a row of the towers' table (tower.h, cuda_vision_tower): images
 * and videos; open and close with the backend, prepare after the batch
 * plan (validates, builds and uploads the per-patch metadata), embed
 * after the embedding gather, and two hooks of its own: rope (the
 * batch's M-RoPE positions, when filling the rope arguments) and layer
 * (DeepStack, after each decoder layer).  A batch without images or
 * videos never reaches it and runs exactly as before.
 *
 * The tower runs on rank 0 and a batch with images is refused at tp > 1
 * (backend.c, prepare).  The plan for tensor parallelism is not to shard
 * it: every rank would hold all of its weights and run it whole on the
 * same images, because its cost is small beside the backbone's and its
 * output must be replicated anyway (each rank's backbone reads every
 * token's embedding); what is missing is a tower per rank and its
 * features scattered into every rank's embeddings.
 */
#ifndef CLEF_CUDA_VISION_H
#define CLEF_CUDA_VISION_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "devmem.h"
#include "kernels.h"

/* A DeepStack merger (Clef Omni): LayerNorm over each merged row's 4H,
 * fc1, exact GELU, fc2. */
typedef struct {
    float      *n_w, *n_b;                        /* [M] */
    clef_bf16  *m1, *m2;                          /* [M][M], [out][M] */
    float      *m1_b, *m2_b;
} cuda_vmerger;

#define CUDA_VISION_DEEPSTACK_MAX  8

typedef struct {
    float      *n1_w, *n1_b, *n2_w, *n2_b;        /* [H] LayerNorms */
    clef_bf16  *qkv, *proj, *fc1, *fc2;           /* [3H][H] [H][H] [I][H] [H][I] */
    float      *qkv_b, *proj_b, *fc1_b, *fc2_b;
} cuda_vblock;

/* The per-batch metadata, byte offsets into one staging buffer (pinned)
 * and its device copy, each 256-byte aligned; sizes in elements. */
typedef struct {
    int64_t  P;              /* patches of the batch's items */
    int64_t  R;              /* merged rows: P / merge^2 */
    int64_t  n_tiles;        /* attention tiles */
    int64_t  T;              /* tokens of the batch */
    int      n_pos;          /* rows of the rotary tables */
    int      n_img;          /* temporal groups: an image is one, a video
                                one per frame pair */
    int64_t  P1;             /* patches of items given as pixel values */
    int64_t  rgb_bytes;      /* RGB bytes of the other items */
    size_t   o_rgb;          /* uint8: each item's RGB frames */
    size_t   o_imeta;        /* int64 [n_img][4]: the RGB offset of the
                                group's first frame, the bytes of a
                                frame, the frames there from it (>= 1),
                                the pixel width */
    size_t   o_inorm;        /* f32 [n_img][6]: mean, std */
    size_t   o_img, o_src;   /* int32 [P]: group; staged row or -1 */
    size_t   o_rows;         /* bf16 [P1][row]: rows given as pixel values */
    size_t   o_tap, o_pw;    /* int32 / f32 [P][4]: position-table taps */
    size_t   o_rc;           /* int32 [P][2]: (row, col) of each patch */
    size_t   o_cos, o_sin;   /* f32 [n_pos][hd / 4] */
    size_t   o_tiles;        /* int32 [n_tiles][3] */
    size_t   o_dst;          /* int32 [R]: the token each merged row replaces */
    size_t   o_mpos;         /* int32 [3][T]: M-RoPE positions */
    size_t   bytes;
} cuda_vplan;

typedef struct cuda_vision {
    /* sizes */
    int          H, I, heads, hd, depth, side, row, merge, unit, M, out;
    int          ps, temporal;       /* patch size, temporal slots */
    double       theta;
    int          msec[3];            /* the backbone's M-RoPE sections */

    /* weights (vision_weights.c) */
    cuda_allocs  allocs;
    clef_bf16   *patch_w;            /* [H][row] */
    float       *patch_b;            /* [H] */
    float       *pos;                /* [side^2][H] */
    cuda_vblock *blocks;             /* [depth] */
    float       *mn_w, *mn_b;        /* merger LayerNorm [H] */
    clef_bf16   *m1, *m2;            /* [M][M], [out][M] */
    float       *m1_b, *m2_b;
    int          n_ds;               /* DeepStack mergers (Clef Omni) */
    int          ds_block[CUDA_VISION_DEEPSTACK_MAX];  /* the block each reads */
    cuda_vmerger ds[CUDA_VISION_DEEPSTACK_MAX];

    /* the current batch (vision.c): its plan, staging and workspace */
    cuda_vplan   plan;
    cuda_stage   stage;
    clef_bf16   *rows;               /* [P][row] patch rows */
    float       *x;                  /* [P][H] residual stream */
    clef_bf16   *xn, *qkv, *o, *y;   /* [P][H] [P][3H] [P][H] [P][H] */
    clef_bf16   *mlp;                /* [P][max(I, H)]: fc1, merger fc1 */
    clef_bf16   *feat;               /* [R][out] */
    clef_bf16   *ds_feat;            /* [n_ds][R][out]: DeepStack levels */
} cuda_vision;

/* vision_weights.c: the tower's weights on the device, bf16 matrices and
 * fp32 norms, biases and position table; *out NULL for a model without a
 * tower.  The size checks name what the kernels cannot run. */
int   cuda_vision_weights_upload(const clef_model *m, const clef_text_config *tc,
    cuda_vision **out, clef_error *err);
void  cuda_vision_weights_free(cuda_vision *v);

#endif
