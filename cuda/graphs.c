/*
 * The CUDA-graph cache: one instantiated graph per launch shape.
 *
 * A shape is the set of counts that size the launches of a forward: tokens,
 * records, questions, options, attention tiles, span jobs, the groups and
 * work items of the head's three attentions and the widest question.  The
 * metadata offsets follow from them.  Everything else a kernel reads
 * (cu_seqlens, positions, tiles, spans, ids) lives in the device metadata
 * buffer, rewritten by one copy before every forward or replay, so two
 * batches of one shape share a graph whatever their lengths and spans.
 *
 * What production sees (chosen for the first GPU runs, see issue 10): a
 * packed batch almost never repeats the token total of an earlier one, so
 * production traffic runs eagerly; a replay happens only when a shape
 * repeats (a client sending one template, a benchmark repeating a batch).
 * cuda_bench therefore reports eager and graph latency side by side and
 * names the eager one as production's.  Capturing per shape bucket (token
 * count rounded up, records padded) would make replays the rule, but every
 * launcher would then take its counts from device memory and every GEMM
 * would run padded rows; that is worth doing only if the eager/graph gap
 * measured on the device is a real part of the 10 ms target.
 *
 * Tensor parallelism (tp > 1, or a communicator forced at tp = 1) runs
 * eagerly, without graphs: a forward then spans several devices and
 * streams, and its collectives sit between launches on every rank.  A
 * graph would have to be captured per rank, each capture open on its own
 * device while one thread enqueues the grouped NCCL calls of all of them
 * (or the same-device sum with its cross-stream events), then replayed
 * rank by rank; that is possible (NCCL supports capture) but only pays if
 * launch gaps matter, and production traffic runs eagerly anyway (above).
 *
 * A shape is captured the second time it is seen (a lone batch is not worth
 * a capture) and replayed from the third; the least recently used of
 * CUDA_GRAPHS entries makes room for a new shape.
 */
#include <string.h>

#include "cuda_backend.h"

static void
graph_key(const cuda_plan *p, int32_t *k)
{
    k[0] = p->T;
    k[1] = p->NR;
    k[2] = p->Q;
    k[3] = p->N;
    k[4] = p->n_tiles;
    k[5] = p->n_jobs;
    k[6] = p->max_opts;
    k[7] = p->og_groups;
    k[8] = p->og_items;
    k[9] = p->fm_groups;
    k[10] = p->fm_items;
    k[11] = p->fs_groups;
    k[12] = p->fs_items;
}

static void
graph_drop(cuda_graph *g)
{
    if (g->exec != NULL) {
        cudaGraphExecDestroy(g->exec);
    }
    memset(g, 0, sizeof(*g));
}

void
cuda_graphs_clear(clef_backend *b)
{
    int  i;

    for (i = 0; i < CUDA_GRAPHS; i++) {
        graph_drop(&b->graphs[i]);
    }
}

cuda_graph *
cuda_graph_lookup(clef_backend *b, const cuda_plan *p, int *fresh)
{
    int32_t      key[CUDA_GRAPH_KEY];
    cuda_graph  *g, *lru = &b->graphs[0];
    int          i;

    graph_key(p, key);
    *fresh = 0;
    for (i = 0; i < CUDA_GRAPHS; i++) {
        g = &b->graphs[i];
        if (g->used && memcmp(g->key, key, sizeof(key)) == 0) {
            g->stamp = ++b->clock;
            return g;
        }
        if (!g->used || (lru->used && g->stamp < lru->stamp)) {
            lru = g;
        }
    }
    graph_drop(lru);
    memcpy(lru->key, key, sizeof(key));
    lru->used = 1;
    lru->stamp = ++b->clock;
    *fresh = 1;
    return lru;
}
