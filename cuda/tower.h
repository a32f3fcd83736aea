/*
 * The media towers of the CUDA backend on one frame, as the CPU backend's
 * encoders (engine/cpu/backend_cpu.c): a tower is a row of tower.c's
 * table that names the media kinds it embeds and five hooks; the backend
 * opens, prepares, embeds and closes every row in the table's order, and
 * a batch holding a kind no row takes is refused before anything runs
 * (400 <kind>_unsupported, media/kinds.h's words), as the CPU refuses it.
 *
 * A tower runs on rank 0 only (a batch with media is refused at tp > 1,
 * backend.c), right after the token embedding, on the backend's stream;
 * its rows replace the embeddings of its items' pad tokens.  A batch with
 * a tower's items runs eagerly, never as a CUDA graph: its launch shapes
 * depend on the items, which the graph key does not hold.
 */
#ifndef CLEF_CUDA_TOWER_H
#define CLEF_CUDA_TOWER_H

#include <stdint.h>

#include "backend/backend.h"
#include "devmem.h"
#include "kernels.h"

/* A tower's output over a prepared batch: rows [rows][width] in bf16,
 * before the last bias (fp32 [width]), and the token each row replaces
 * (device, [rows]). */
typedef struct {
    const clef_bf16  *feat;
    const float      *bias;
    const int32_t    *dst;
    int64_t           rows;
    int               width;
} cuda_tower_out;

typedef struct {
    const char  *name;              /* "vision": its errors' words */
    unsigned     kinds;             /* CLEF_MEDIA_BIT() of each kind */

    /* Its weights on the device; *state NULL for a model without it (a
     * batch with its kinds is then refused by name). */
    int        (*open)(clef_backend *b, void **state, clef_error *err);
    /* Called for a batch holding at least one item of its kinds: validates
     * them, lays them out, uploads their inputs and metadata. */
    int        (*prepare)(clef_backend *b, void *state,
                          const clef_batch *batch, clef_error *err);
    /* Enqueues the tower over the prepared batch and says where its rows
     * are; the frame adds them over their tokens' embeddings. */
    int        (*embed)(clef_backend *b, void *state, cuda_tower_out *out,
                        clef_error *err);
    void       (*close)(void *state);

    /* NULL where the tower has none.  rope: the backbone's rope arguments
     * for a batch with its items (M-RoPE positions).  layer: after decoder
     * layer l, more of its rows added over its tokens (DeepStack). */
    void       (*rope)(const void *state, clef_k_rope_args *r);
    int        (*layer)(clef_backend *b, void *state, int l, clef_error *err);
} cuda_tower_ops;

extern const cuda_tower_ops  cuda_vision_tower;   /* vision.c */
extern const cuda_tower_ops  cuda_audio_tower;    /* audio.c */

/* Whether the tower takes items of kind. */
int   cuda_tower_takes(const cuda_tower_ops *ops, clef_media_kind kind);

/* tower.c: the frame.  open and close on rank 0 (close does nothing on a
 * rank without towers); check refuses a kind no tower takes; prepare
 * readies every tower for the batch (after the backbone's workspace);
 * active: whether any tower has items in the prepared batch; embed after
 * the token embedding; rope when filling the rope arguments; layer after
 * decoder layer l (on rank 0's device, *cur the current one). */
int   cuda_towers_open(clef_backend *b, clef_error *err);
void  cuda_towers_close(clef_backend *b);
int   cuda_towers_check(const clef_batch *batch, clef_error *err);
int   cuda_towers_prepare(clef_backend *b, const clef_batch *batch,
    clef_error *err);
int   cuda_towers_active(const clef_backend *b);
int   cuda_towers_embed(clef_backend *b, clef_error *err);
void  cuda_towers_rope(const clef_backend *b, clef_k_rope_args *r);
int   cuda_towers_layer(clef_backend *b, int l, int *cur, clef_error *err);

/* The GEMM every tower runs: bf16, row-major X [rows][k] by W [n][k] into
 * D [rows][n], no bias, beta 0; inside a hook with b, s and err. */
#define TGEMM(rows, n, k, Wt, Xp, Dp)                                         \
    do {                                                                      \
        if (clef_gemm_run(b->gemm, s, CLEF_GEMM_BF16, (rows), (n), (k), (Wt), \
                          (k), (Xp), (k), (Dp), (n), 0.0f, NULL, err) != 0)   \
        {                                                                     \
            return -1;                                                        \
        }                                                                     \
    } while (0)

#endif
