/*
 * Clef Omni's audio tower on the CUDA backend: the CPU tower's steps
 * (engine/cpu/model/audio.c, chunks and windows from
 * backend/audio_layout.h) with bf16 GEMM inputs and activations and an
 * fp32 residual stream, run on rank 0's stream right after the token
 * embedding (and the vision tower) of a batch with audio clips; its rows
 * replace the audio-pad tokens' embeddings.  Audio positions count on as
 * text's (protocol/mrope.c), so the backbone's rope needs nothing from it.
 *
 *   features (fp32, each chunk zero-padded to its record's width)
 *   -> conv1 + bias + GELU -> [im2col -> GEMM -> bias + GELU] x 2
 *   -> the kept steps flattened -> conv_out GEMM -> + positions (fp32 x)
 *   layers x [ LayerNorm -> qkv GEMM + bias -> attention per window
 *              -> out GEMM -> x += . + bias
 *              LayerNorm -> fc1 GEMM -> bias + GELU -> fc2 GEMM
 *              -> x += . + bias ]
 *   ln_post -> proj1 GEMM -> bias + GELU -> proj2 GEMM
 *   -> + bias over the audio-pad tokens' embeddings
 *
 * It is a row of the towers' table (tower.h, cuda_audio_tower), after
 * the vision tower's: audio clips; open and close with the backend,
 * prepare (validates, lays the batch's clips out and uploads their
 * features and metadata), embed.  Batches with clips run eagerly, never
 * as a CUDA graph (their shapes depend on the clips).
 */
#ifndef CLEF_CUDA_AUDIO_H
#define CLEF_CUDA_AUDIO_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "devmem.h"
#include "kernels.h"

typedef struct {
    float      *n1_w, *n1_b, *n2_w, *n2_b;        /* [D] LayerNorms */
    clef_bf16  *qkv, *out, *fc1, *fc2;            /* [3D][D] (q, k, v),
                                                     [D][D] [I][D] [D][I] */
    float      *qkv_b, *out_b, *fc1_b, *fc2_b;
} cuda_alayer;

/* The per-batch metadata: byte offsets into one staging buffer (pinned)
 * and its device copy, each 256-byte aligned. */
typedef struct {
    int      nc;             /* chunks */
    int      w0;             /* the widest chunk's frames (padded) */
    int64_t  P;              /* rows: the clips' tokens */
    int64_t  n_tiles;        /* attention tiles */
    size_t   o_feat;         /* f32 [nc][mels][w0]: each chunk's frames,
                                zeros after */
    size_t   o_cw;           /* int32 [nc]: each chunk's padded width */
    size_t   o_rowmeta;      /* int32 [P][2]: each row's chunk and step */
    size_t   o_tiles;        /* int32 [n_tiles][3] */
    size_t   o_dst;          /* int32 [P]: the token each row replaces */
    size_t   bytes;
} cuda_aplan;

typedef struct cuda_audio {
    /* sizes */
    int          D, I, C, F, O, heads, hd, layers, mels;

    /* weights (audio_weights.c) */
    cuda_allocs  allocs;
    float       *conv1_w, *conv1_b, *conv2_b, *conv3_b;   /* [C][9], [C] */
    clef_bf16   *conv2, *conv3;                           /* [C][9 C] */
    clef_bf16   *conv_out;                                /* [D][C F] */
    cuda_alayer *L;                                       /* [layers] */
    float       *post_w, *post_b, *proj1_b, *proj2_b;
    clef_bf16   *proj1, *proj2;                           /* [D][D] [O][D] */
    float       *pos;                                     /* [13][D] */
    clef_audio_tower_config  cfg;

    /* the current batch (audio.c): its plan, staging and workspace */
    cuda_aplan   plan;
    int64_t     *chunk_row;          /* host: each chunk's first row,
                                        [nc + 1] */
    cuda_stage   stage;
    clef_bf16   *act1, *act2, *act3, *cols;   /* the convolutions' */
    clef_bf16   *flat;               /* [P][C F] */
    float       *x;                  /* [P][D] residual stream */
    clef_bf16   *xn, *qkv, *o, *y;   /* [P][D] [P][3D] [P][D] [P][D] */
    clef_bf16   *mlp;                /* [P][max(I, D)] */
    clef_bf16   *feat;               /* [P][O] */
} cuda_audio;

/* audio_weights.c: the tower's weights on the device, bf16 matrices, fp32
 * norms, biases, first convolution and positions; *out NULL for a model
 * without an audio tower.  The size checks name what the kernels cannot
 * run. */
int   cuda_audio_weights_upload(const clef_model *m, const clef_text_config *tc,
    cuda_audio **out, clef_error *err);
void  cuda_audio_weights_free(cuda_audio *a);

#endif
