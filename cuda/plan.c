/*
 * From a clef_batch to the int32 metadata the kernels read: record
 * boundaries, token positions, attention tiles, span jobs, the option /
 * question / record relations of the head and the work lists of its
 * grouped attentions.  Built on the host in pinned memory and uploaded with
 * one copy per forward.
 */
#include <stdlib.h>
#include <string.h>

#include "cuda_backend.h"

#define MAX_TOKENS  CLEF_DEVPLAN_MAX_TOKENS     /* the memory plan's */

typedef struct {
    int32_t  start, len, qbase;
} tile;

static int
tile_cmp(const void *a, const void *b)
{
    const tile  *x = a, *y = b;

    /* Most work first: a tile's cost grows with its offset in the record. */
    if (x->qbase != y->qbase) {
        return y->qbase - x->qbase;
    }
    return x->start - y->start;
}

static int
grow_host(clef_backend *b, size_t ints, clef_error *err)
{
    cudaError_t  e;
    size_t       cap;

    if (ints <= b->hmeta_cap) {
        return 0;
    }
    cap = ints + ints / 4 + 1024;
    if (b->hmeta != NULL) {
        cudaFreeHost(b->hmeta);
        b->hmeta = NULL;
        b->hmeta_cap = 0;
    }
    /* portable: every rank's device copies its metadata from it (tp.c) */
    e = cudaHostAlloc((void **) &b->hmeta, cap * sizeof(int32_t), cudaHostAllocPortable);
    if (e != cudaSuccess) {
        b->hmeta = NULL;
        return clef_error_fail(err, CLEF_E_INTERNAL, "pinned staging: %s",
            cudaGetErrorString(e));
    }
    b->hmeta_cap = cap;
    return 0;
}

static int
bad(clef_error *err, int r, const char *what)
{
    return clef_error_fail(err, CLEF_E_INTERNAL,
        "cuda backend: record %d of the batch: %s", r, what);
}

/* Work list of one grouped attention: queries [q0, q1) of each record in
 * groups of CLEF_K_GATTN_GQ, keys [k0, k1), split by CLEF_K_GATTN_SPLIT. */
typedef struct {
    int32_t  *g, *it, *gi;
    int       ng, ni;
} gwork;

static void
gwork_add(gwork *w, int q0, int q1, int k0, int k1)
{
    int  q, s, splits = (k1 - k0 + CLEF_K_GATTN_SPLIT - 1) / CLEF_K_GATTN_SPLIT;

    if (splits < 1) {
        splits = 1;
    }
    for (q = q0; q < q1; q += CLEF_K_GATTN_GQ) {
        int32_t  *g = w->g + 4 * w->ng;

        g[0] = q;
        g[1] = q1 - q < CLEF_K_GATTN_GQ ? q1 - q : CLEF_K_GATTN_GQ;
        g[2] = k0;
        g[3] = k1;
        w->gi[w->ng] = w->ni;
        for (s = 0; s < splits; s++) {
            w->it[2 * w->ni] = w->ng;
            w->it[2 * w->ni + 1] = s;
            w->ni++;
        }
        w->ng++;
    }
    w->gi[w->ng] = w->ni;
}

static int
groups_for(int n)
{
    return (n + CLEF_K_GATTN_GQ - 1) / CLEF_K_GATTN_GQ;
}

static int
splits_for(int n)
{
    int  s = (n + CLEF_K_GATTN_SPLIT - 1) / CLEF_K_GATTN_SPLIT;

    return s < 1 ? 1 : s;
}

/* Validates the batch's records and sets p's counts. */
static int
plan_count(clef_backend *b, const clef_batch *batch, cuda_plan *p,
    clef_error *err)
{
    const int  NR = batch->n_records;
    int64_t    T = 0;
    int        r, q, o, i, Q = 0, N = 0, nt = 0, maxo = 0;
    int        og_g = 0, og_i = 0, fm_g = 0, fm_i = 0, fs_g = 0, fs_i = 0;

    for (r = 0; r < NR; r++) {
        const clef_record  *rec = batch->records[r];
        int                 len = (int) rec->ids.n;

        if (rec->ids.n < 1 || rec->ids.n > MAX_TOKENS) {
            return bad(err, r, "token count out of range");
        }
        if (batch->cu_seqlens[r] != T || batch->cu_seqlens[r + 1] != T + len) {
            return bad(err, r, "cu_seqlens does not match the records");
        }
        if (rec->n_questions < 1 || rec->option_offset[0] != 0
            || rec->option_offset[rec->n_questions] != rec->n_options)
        {
            return bad(err, r, "no questions, or option offsets inconsistent");
        }
        for (q = 0; q < rec->n_questions; q++) {
            int  no = rec->option_offset[q + 1] - rec->option_offset[q];

            if (no < 1 || (unsigned) rec->question_types[q] > 2
                || rec->question_spans[q].start < 0
                || rec->question_spans[q].start > rec->question_spans[q].end
                || rec->question_spans[q].end > len)
            {
                return bad(err, r, "question without options, bad type or span");
            }
            maxo = no > maxo ? no : maxo;
        }
        for (o = 0; o < rec->n_options; o++) {
            if (rec->option_spans[o].start < 0
                || rec->option_spans[o].start > rec->option_spans[o].end
                || rec->option_spans[o].end > len)
            {
                return bad(err, r, "option span out of range");
            }
        }
        for (i = 0; i < len; i++) {
            if (rec->ids.v[i] < 0 || rec->ids.v[i] >= b->V) {
                return bad(err, r, "token id out of the vocabulary");
            }
        }
        T += len;
        if (T > MAX_TOKENS) {
            return clef_error_fail(err, CLEF_E_INTERNAL,
                "cuda backend: a batch holds at most %d tokens", MAX_TOKENS);
        }
        Q += rec->n_questions;
        N += rec->n_options;
        nt += (len + CLEF_K_ATTN_TILE - 1) / CLEF_K_ATTN_TILE;
        og_g += groups_for(rec->n_options);
        og_i += groups_for(rec->n_options) * splits_for(len);
        fm_g += groups_for(rec->n_questions);
        fm_i += groups_for(rec->n_questions) * splits_for(len);
        fs_g += groups_for(rec->n_questions);
        fs_i += groups_for(rec->n_questions) * splits_for(rec->n_questions);
    }

    p->T = (int) T;
    p->NR = NR;
    p->Q = Q;
    p->N = N;
    p->n_tiles = nt;
    p->n_jobs = Q + N + NR + N;
    p->max_opts = maxo;
    p->og_groups = og_g;
    p->og_items = og_i;
    p->fm_groups = fm_g;
    p->fm_items = fm_i;
    p->fs_groups = fs_g;
    p->fs_items = fs_i;
    p->max_items = og_i > fm_i ? og_i : fm_i;
    p->max_items = fs_i > p->max_items ? fs_i : p->max_items;
    return 0;
}

/* Where each array starts in the staging buffer, from p's counts. */
static void
plan_offsets(cuda_plan *p)
{
    const size_t  T = (size_t) p->T, NR = (size_t) p->NR, Q = (size_t) p->Q;
    const size_t  N = (size_t) p->N;

    p->o_cu = 0;
    p->o_tiles = p->o_cu + NR + 1;
    p->o_jobs = p->o_tiles + 3 * (size_t) p->n_tiles;
    p->o_oq = p->o_jobs + 3 * (size_t) p->n_jobs;
    p->o_qrec = p->o_oq + N;
    p->o_qtype = p->o_qrec + Q;
    p->o_qoff = p->o_qtype + Q;
    p->o_og_g = p->o_qoff + Q + 1;
    p->o_og_i = p->o_og_g + 4 * (size_t) p->og_groups;
    p->o_og_gi = p->o_og_i + 2 * (size_t) p->og_items;
    p->o_fm_g = p->o_og_gi + (size_t) p->og_groups + 1;
    p->o_fm_i = p->o_fm_g + 4 * (size_t) p->fm_groups;
    p->o_fm_gi = p->o_fm_i + 2 * (size_t) p->fm_items;
    p->o_fs_g = p->o_fm_gi + (size_t) p->fm_groups + 1;
    p->o_fs_i = p->o_fs_g + 4 * (size_t) p->fs_groups;
    p->o_fs_gi = p->o_fs_i + 2 * (size_t) p->fs_items;
    p->o_pos = p->o_fs_gi + (size_t) p->fs_groups + 1;
    p->o_ids = p->o_pos + T;
    p->total = p->o_ids + T;
}

/* Record r's rows of the staging buffer m: its tokens' positions and ids,
 * its attention tiles from ti on, its questions' and options' span jobs
 * and relations (qg: its first question, og0: its first option), and its
 * three grouped attentions' work. */
static void
plan_fill_record(const clef_batch *batch, const cuda_plan *p, int32_t *m,
    int r, int *ti, int qg, int og0, gwork *og, gwork *fm, gwork *fs)
{
    const clef_record  *rec = batch->records[r];
    const int           Q = p->Q, N = p->N, NR = p->NR;
    int                 s = batch->cu_seqlens[r], len = (int) rec->ids.n;
    int32_t            *pos = m + p->o_pos, *jobs = m + p->o_jobs;
    int32_t            *oq = m + p->o_oq, *qrec = m + p->o_qrec;
    int32_t            *qtype = m + p->o_qtype, *qoff = m + p->o_qoff;
    int32_t            *ids = m + p->o_ids;
    int32_t            *jq = jobs, *jc = jobs + 3 * Q, *jg = jobs + 3 * (Q + N);
    int32_t            *jl = jobs + 3 * (Q + N + NR);
    tile               *tiles = (tile *) (m + p->o_tiles);
    int                 i, q, o;

    m[p->o_cu + r] = s;
    for (i = 0; i < len; i++) {
        pos[s + i] = i;
        ids[s + i] = rec->ids.v[i];
    }
    for (i = 0; i < len; i += CLEF_K_ATTN_TILE) {
        tiles[*ti].start = s;
        tiles[*ti].len = len;
        tiles[*ti].qbase = i;
        (*ti)++;
    }
    for (q = 0; q < rec->n_questions; q++) {
        jq[3 * (qg + q)] = s + rec->question_spans[q].start;
        jq[3 * (qg + q) + 1] = s + rec->question_spans[q].end;
        jq[3 * (qg + q) + 2] = 0;
        qrec[qg + q] = r;
        qtype[qg + q] = (int32_t) rec->question_types[q];
        qoff[qg + q] = og0 + rec->option_offset[q];
        for (o = rec->option_offset[q]; o < rec->option_offset[q + 1]; o++) {
            oq[og0 + o] = qg + q;
        }
    }
    for (o = 0; o < rec->n_options; o++) {
        jc[3 * (og0 + o)] = s + rec->option_spans[o].start;
        jc[3 * (og0 + o) + 1] = s + rec->option_spans[o].end;
        jc[3 * (og0 + o) + 2] = 0;
        jl[3 * (og0 + o)] = s + rec->option_spans[o].start;
        jl[3 * (og0 + o) + 1] = s + rec->option_spans[o].end;
        jl[3 * (og0 + o) + 2] = 1;
    }
    jg[3 * r] = s + len - 1;
    jg[3 * r + 1] = s + len;
    jg[3 * r + 2] = 0;

    gwork_add(og, og0, og0 + rec->n_options, s, s + len);
    gwork_add(fm, qg, qg + rec->n_questions, s, s + len);
    gwork_add(fs, qg, qg + rec->n_questions, qg, qg + rec->n_questions);
}

int
cuda_plan_build(clef_backend *b, const clef_batch *batch, cuda_plan *p,
    clef_error *err)
{
    const int  NR = batch->n_records;
    int        r, ti = 0, qg = 0, og0 = 0;
    int32_t   *m;
    gwork      og, fm, fs;

    memset(p, 0, sizeof(*p));
    if (NR < 1 || NR > 65535) {
        return clef_error_fail(err, CLEF_E_INTERNAL,
            "cuda backend: a batch holds 1 to 65535 records, not %d", NR);
    }
    if (plan_count(b, batch, p, err) != 0) {
        return -1;
    }
    plan_offsets(p);
    if (grow_host(b, p->total, err) != 0) {
        return -1;
    }
    m = b->hmeta;

    og.g = m + p->o_og_g;  og.it = m + p->o_og_i;  og.gi = m + p->o_og_gi;
    fm.g = m + p->o_fm_g;  fm.it = m + p->o_fm_i;  fm.gi = m + p->o_fm_gi;
    fs.g = m + p->o_fs_g;  fs.it = m + p->o_fs_i;  fs.gi = m + p->o_fs_gi;
    og.ng = og.ni = fm.ng = fm.ni = fs.ng = fs.ni = 0;
    og.gi[0] = fm.gi[0] = fs.gi[0] = 0;

    for (r = 0; r < NR; r++) {
        plan_fill_record(batch, p, m, r, &ti, qg, og0, &og, &fm, &fs);
        qg += batch->records[r]->n_questions;
        og0 += batch->records[r]->n_options;
    }
    m[p->o_cu + NR] = (int32_t) p->T;
    m[p->o_qoff + p->Q] = p->N;
    /* three int32 per tile */
    qsort(m + p->o_tiles, (size_t) p->n_tiles, sizeof(tile), tile_cmp);
    return 0;
}
