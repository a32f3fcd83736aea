/*
 * The joint schema head in fp32 on the CPU, one record at a time
 * (docs/spec/encoder-and-head.md §5).  Weights are converted to f32 once at
 * open; lm_head stays in the mapped file and only the rows the options name
 * are gathered.  Everything a record needs is sized by its tokens and
 * options, and the wide intermediates (LayerNorm'd hidden rows, the option
 * features, the feed-forward activations) are taken in blocks of rows.
 */
#include "cpu/model/head_weights.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROW_BLOCK  64     /* hidden rows or options per block */

typedef struct {
    const clef_cpu_head  *h;
    const float          *hidden;      /* [L][H] */
    const clef_record    *rec;
    size_t                L;
    int                   Q;
    int                   N;
    int                  *owner;       /* [N]: q(o) */

    float                *M;           /* [L][W] memory_projection(X) */
    float                *g;           /* [H] X[L-1] */
    float                *qv;          /* [Q][H] question span means */
    float                *anchor;      /* [Q][H] normalize(qv + g) */
    float                *R;           /* [N][W] option queries, routed */
    float                *prior;       /* [N] */
    float                *fields;      /* [Q][W] */

    /* scratch */
    float                *rows;        /* [ROW_BLOCK][H] LayerNorm'd rows */
    float                *row;         /* [H] */
    float                *ctx;         /* [ROW_BLOCK][H] */
    float                *lex;         /* [ROW_BLOCK][H] */
    float                *wts;         /* [N] routing weights */
    double               *acc;         /* [H] */
    float                *t1;          /* [max(N,Q)][W] */
    float                *t2;          /* [max(N,Q)][W] */
    float                *ff;          /* [ROW_BLOCK][max(F, 4W)] */
    float                *ffo;         /* [ROW_BLOCK][W] */
    float                *gemm;        /* the GEMM's packing */
} head_run;

static void
run_free(head_run *r)
{
    free(r->owner);
    free(r->M);
    free(r->g);
    free(r->qv);
    free(r->anchor);
    free(r->R);
    free(r->prior);
    free(r->fields);
    free(r->rows);
    free(r->row);
    free(r->ctx);
    free(r->lex);
    free(r->wts);
    free(r->acc);
    free(r->t1);
    free(r->t2);
    free(r->ff);
    free(r->ffo);
    free(r->gemm);
}

static int
run_alloc(head_run *r)
{
    size_t  H = (size_t) r->h->cfg.hidden_size, W = (size_t) r->h->cfg.width;
    size_t  F = (size_t) r->h->cfg.feedforward;
    size_t  Q = (size_t) r->Q, N = (size_t) r->N;
    size_t  NQ = N > Q ? N : Q, FW = F > 4 * W ? F : 4 * W;

    r->owner = malloc(N * sizeof(int));
    r->M = malloc(r->L * W * sizeof(float));
    r->g = malloc(H * sizeof(float));
    r->qv = malloc(Q * H * sizeof(float));
    r->anchor = malloc(Q * H * sizeof(float));
    r->R = malloc(N * W * sizeof(float));
    r->prior = malloc(N * sizeof(float));
    r->fields = malloc(Q * W * sizeof(float));
    r->rows = malloc(ROW_BLOCK * H * sizeof(float));
    r->row = malloc(H * sizeof(float));
    r->ctx = malloc(ROW_BLOCK * H * sizeof(float));
    r->lex = malloc(ROW_BLOCK * H * sizeof(float));
    r->wts = malloc(N * sizeof(float));
    r->acc = malloc(H * sizeof(double));
    r->t1 = malloc(NQ * W * sizeof(float));
    r->t2 = malloc(NQ * W * sizeof(float));
    r->ff = malloc(ROW_BLOCK * FW * sizeof(float));
    r->ffo = malloc(ROW_BLOCK * W * sizeof(float));
    r->gemm = malloc(CLEF_GEMM_SCRATCH_FLOATS * sizeof(float));

    return (r->owner && r->M && r->g && r->qv && r->anchor && r->R && r->prior
            && r->fields && r->rows && r->row && r->ctx && r->lex && r->wts
            && r->acc && r->t1 && r->t2
            && r->ff && r->ffo && r->gemm) ? 0 : -1;
}

static int
check_record(const clef_cpu_head *h, const clef_record *rec, clef_error *err)
{
    int        q, o;
    size_t     i, L = rec->ids.n;
    int64_t    V = h->lm_head->shape[0];
    clef_span  s;

    if (L == 0 || rec->n_questions <= 0 || rec->option_offset[0] != 0
        || rec->option_offset[rec->n_questions] != rec->n_options)
    {
        return clef_error_fail(err, CLEF_E_INTERNAL,
            "the head got a record without tokens or questions");
    }
    for (i = 0; i < L; i++) {
        if (rec->ids.v[i] < 0 || rec->ids.v[i] >= V) {
            return clef_error_fail(err, CLEF_E_INTERNAL,
                                   "token id %d at %zu is outside lm_head's "
                                   "%lld rows", (int) rec->ids.v[i], i,
                                   (long long) V);
        }
    }
    for (q = 0; q < rec->n_questions; q++) {
        s = rec->question_spans[q];
        if (rec->question_types[q] < CLEF_QTYPE_NOUL
            || rec->question_types[q] > CLEF_QTYPE_SCORE
            || rec->option_offset[q + 1] <= rec->option_offset[q]
            || s.start < 0 || s.end < s.start || (size_t) s.end > L)
        {
            return clef_error_fail(err, CLEF_E_INTERNAL,
                                   "question %d of the record is malformed", q);
        }
        if (s.start == s.end) {
            /* the reference takes the mean of nothing (NaN) */
            return clef_error_set(err, 400, "empty_span", NULL,
                                  "question %d has no instruction tokens", q);
        }
        for (o = rec->option_offset[q]; o < rec->option_offset[q + 1]; o++) {
            s = rec->option_spans[o];
            if (s.start < 0 || s.end <= s.start || (size_t) s.end > L) {
                return clef_error_fail(err, CLEF_E_INTERNAL,
                    "option %d of the record is malformed", o);
            }
        }
    }
    return 0;
}

/* out[H] = mean over the span of LayerNorm(hidden rows) */
static void
span_mean_x(head_run *r, clef_span s, float *out)
{
    int     H = r->h->cfg.hidden_size, i;
    int32_t t;

    memset(r->acc, 0, (size_t) H * sizeof(double));
    for (t = s.start; t < s.end; t++) {
        clef_head_ln_rows(&r->h->hidden_norm, r->hidden + (size_t) t * H,
                          r->rows, 1);
        for (i = 0; i < H; i++) {
            r->acc[i] += r->rows[i];
        }
    }
    for (i = 0; i < H; i++) {
        out[i] = (float) (r->acc[i] / (s.end - s.start));
    }
}

/* out[H] = mean over the span of the raw lm_head rows of its token ids */
static void
span_mean_lex(head_run *r, clef_span s, float *row, float *out)
{
    int     H = r->h->cfg.hidden_size, i;
    int32_t t;

    memset(r->acc, 0, (size_t) H * sizeof(double));
    for (t = s.start; t < s.end; t++) {
        clef_tensor_rows_to_f32(r->h->lm_head, r->rec->ids.v[t], 1, row);
        for (i = 0; i < H; i++) {
            r->acc[i] += row[i];
        }
    }
    for (i = 0; i < H; i++) {
        out[i] = (float) (r->acc[i] / (s.end - s.start));
    }
}

/* v / max(||v||, eps) in place (F.normalize) */
static void
normalize(float *v, int n, double eps)
{
    double  ss = 0.0, nrm;
    int     i;

    for (i = 0; i < n; i++) {
        ss += (double) v[i] * v[i];
    }
    nrm = sqrt(ss);
    nrm = nrm > eps ? nrm : eps;
    for (i = 0; i < n; i++) {
        v[i] = (float) (v[i] / nrm);
    }
}

static double
dot(const float *a, const float *b, int n)
{
    double  s = 0.0;
    int     i;

    for (i = 0; i < n; i++) {
        s += (double) a[i] * b[i];
    }
    return s;
}

static void
add_rows(float *y, const float *x, size_t n)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        y[i] += x[i];
    }
}

/* y[rows] += down(gelu(up(x[rows]))), ROW_BLOCK rows at a time */
static void
feedforward_add(head_run *r, const clef_head_linear *up,
    const clef_head_linear *down, const float *x, float *y, size_t rows)
{
    size_t  r0, n, W = (size_t) down->out;

    for (r0 = 0; r0 < rows; r0 += ROW_BLOCK) {
        n = rows - r0 < ROW_BLOCK ? rows - r0 : ROW_BLOCK;
        clef_head_linear_rows(up, x + r0 * W, r->ff, n, r->gemm);
        clef_head_gelu(r->ff, n * (size_t) up->out);
        clef_head_linear_rows(down, r->ff, r->ffo, n, r->gemm);
        add_rows(y + r0 * W, r->ffo, n * W);
    }
}

/* Steps 1-3: memory, global vector, span means, priors, option queries. */
static void
encode_inputs(head_run *r)
{
    const clef_cpu_head  *h = r->h;
    int                   H = h->cfg.hidden_size, W = h->cfg.width, q, o, o0, n, i;
    size_t                r0, nr;
    float                *oq, *ctx = r->ctx, *lex = r->lex, *tmp = r->t2;

    for (r0 = 0; r0 < r->L; r0 += ROW_BLOCK) {
        nr = r->L - r0 < ROW_BLOCK ? r->L - r0 : ROW_BLOCK;
        clef_head_ln_rows(&h->hidden_norm, r->hidden + r0 * H, r->rows, nr);
        clef_head_linear_rows(&h->memory_projection, r->rows, r->M + r0 * W, nr,
                              r->gemm);
    }
    clef_head_ln_rows(&h->hidden_norm, r->hidden + (r->L - 1) * H, r->g, 1);

    for (q = 0; q < r->Q; q++) {
        span_mean_x(r, r->rec->question_spans[q], r->qv + (size_t) q * H);
        for (i = 0; i < H; i++) {
            r->anchor[(size_t) q * H + i] = r->qv[(size_t) q * H + i] + r->g[i];
        }
        normalize(r->anchor + (size_t) q * H, H, 1e-12);
        for (o = r->rec->option_offset[q]; o < r->rec->option_offset[q + 1]; o++) {
            r->owner[o] = q;
        }
    }

    /* option_question_projection(qv), one row per question, kept in fields
     * until the fields are built */
    oq = r->fields;
    clef_head_linear_rows(&h->option_question_projection, r->qv, oq,
                          (size_t) r->Q, r->gemm);

    for (o0 = 0; o0 < r->N; o0 += ROW_BLOCK) {
        n = r->N - o0 < ROW_BLOCK ? r->N - o0 : ROW_BLOCK;

        for (o = 0; o < n; o++) {
            clef_span  s = r->rec->option_spans[o0 + o];
            float     *lo = lex + (size_t) o * H;

            span_mean_x(r, s, ctx + (size_t) o * H);
            span_mean_lex(r, s, r->row, lo);

            /* prior = scale * <normalize(lex), normalize(qv + g)> */
            memcpy(r->row, lo, (size_t) H * sizeof(float));
            normalize(r->row, H, 1e-12);
            r->prior[o0 + o] = h->prior_scale
                * (float) dot(r->row, r->anchor + (size_t) r->owner[o0 + o] * H, H);
        }

        clef_head_linear_rows(&h->option_context_projection, ctx,
                              r->R + (size_t) o0 * W, (size_t) n, r->gemm);
        clef_head_linear_rows(&h->option_lexical_projection, lex, tmp, (size_t) n,
                              r->gemm);
        for (o = 0; o < n; o++) {
            float        *ro = r->R + (size_t) (o0 + o) * W;
            const float  *qo = oq + (size_t) r->owner[o0 + o] * W;

            for (i = 0; i < W; i++) {
                ro[i] = (ro[i] + tmp[(size_t) o * W + i]) + qo[i];
            }
        }
    }
}

/* Step 4: the evidence routing layers over the options. */
static int
route(head_run *r, clef_error *err)
{
    const clef_cpu_head  *h = r->h;
    size_t                N = (size_t) r->N, W = (size_t) h->cfg.width;
    int                   i;

    for (i = 0; i < h->cfg.routing_layers; i++) {
        const routing_layer  *l = &h->routing[i];

        clef_head_ln_rows(&l->query_norm, r->R, r->t1, N);
        if (clef_head_attn_forward(&l->attention, r->t1, N, r->M, r->L,
                                  &l->memory_norm, r->t2, err) != 0)
        {
            return -1;
        }
        add_rows(r->R, r->t2, N * W);
        clef_head_ln_rows(&l->feedforward_norm, r->R, r->t1, N);
        feedforward_add(r, &l->up, &l->down, r->t1, r->R, N);
    }
    return 0;
}

/* Steps 5-6: fields from questions, option summaries, the global vector and
 * the type, then the decoder layers and field_norm. */
static int
decide_fields(head_run *r, clef_error *err)
{
    const clef_cpu_head  *h = r->h;
    int                   W = h->cfg.width, q, o, o0, o1, i;
    size_t                Q = (size_t) r->Q;
    float                 sq = sqrtf((float) W), m, sum, w;
    float                *B = r->t1, *S = r->t2, *G = r->ffo, *Fq = r->fields;
    clef_head_linear_rows(&h->question_projection, r->qv, B, Q, r->gemm);
    clef_head_linear_rows(&h->global_projection, r->g, G, 1, r->gemm);

    for (q = 0; q < r->Q; q++) {
        const float  *bq = B + (size_t) q * W;
        float        *sq_row = S + (size_t) q * W;
        float        *sc = r->wts;

        o0 = r->rec->option_offset[q];
        o1 = r->rec->option_offset[q + 1];

        /* softmax over the question's own options of R.B/sqrt(W), with the
         * routed, not yet option_norm'd R */
        m = -INFINITY;
        for (o = o0; o < o1; o++) {
            sc[o - o0] = (float) dot(r->R + (size_t) o * W, bq, W) / sq;
            m = sc[o - o0] > m ? sc[o - o0] : m;
        }
        sum = 0.0f;
        for (o = o0; o < o1; o++) {
            sc[o - o0] = expf(sc[o - o0] - m);
            sum += sc[o - o0];
        }
        memset(sq_row, 0, (size_t) W * sizeof(float));
        for (o = o0; o < o1; o++) {
            w = sc[o - o0] / sum;
            for (i = 0; i < W; i++) {
                sq_row[i] += w * r->R[(size_t) o * W + i];
            }
        }
    }
    clef_head_ln_rows(&h->option_summary_norm, S, S, Q);

    for (q = 0; q < r->Q; q++) {
        const float  *te = h->type_embedding
                           + (size_t) r->rec->question_types[q] * W;

        for (i = 0; i < W; i++) {
            Fq[(size_t) q * W + i] = ((B[(size_t) q * W + i] + S[(size_t) q * W + i])
                                      + G[i]) + te[i];
        }
    }

    for (i = 0; i < h->cfg.layers; i++) {
        const decoder_layer  *l = &h->decoder[i];

        clef_head_ln_rows(&l->norm1, Fq, r->t1, Q);
        if (clef_head_attn_forward(&l->self_attn, r->t1, Q, r->t1, Q, NULL,
                                  r->t2, err) != 0)
        {
            return -1;
        }
        add_rows(Fq, r->t2, Q * W);

        /* the memory is the raw memory_projection output here */
        clef_head_ln_rows(&l->norm2, Fq, r->t1, Q);
        if (clef_head_attn_forward(&l->cross_attn, r->t1, Q, r->M, r->L, NULL,
                                  r->t2, err) != 0)
        {
            return -1;
        }
        add_rows(Fq, r->t2, Q * W);

        clef_head_ln_rows(&l->norm3, Fq, r->t1, Q);
        feedforward_add(r, &l->up, &l->down, r->t1, Fq, Q);
    }
    clef_head_ln_rows(&h->field_norm, Fq, Fq, Q);
    return 0;
}

/* Step 7: prior + sigmoid(gate) * (joint_scale * cos + residual). */
static void
score(head_run *r, float *logits)
{
    const clef_cpu_head  *h = r->h;
    int                   W = h->cfg.width, o, o0, n, i;
    float                *Ro = r->t1, *feat = r->ff, *hid = r->ffo;
    float                 res[ROW_BLOCK];
    double                nf, nr, c;

    clef_head_ln_rows(&h->option_norm, r->R, Ro, (size_t) r->N);

    for (o0 = 0; o0 < r->N; o0 += ROW_BLOCK) {
        n = r->N - o0 < ROW_BLOCK ? r->N - o0 : ROW_BLOCK;

        for (o = 0; o < n; o++) {
            const float  *f = r->fields + (size_t) r->owner[o0 + o] * W;
            const float  *p = Ro + (size_t) (o0 + o) * W;
            float        *x = feat + (size_t) o * 4 * W;

            for (i = 0; i < W; i++) {
                x[i] = f[i];
                x[W + i] = p[i];
                x[2 * W + i] = f[i] * p[i];
                x[3 * W + i] = fabsf(f[i] - p[i]);
            }
        }
        clef_head_linear_rows(&h->scorer_up, feat, hid, (size_t) n, r->gemm);
        clef_head_gelu(hid, (size_t) n * W);
        clef_head_linear_rows(&h->scorer_down, hid, res, (size_t) n, r->gemm);

        for (o = 0; o < n; o++) {
            const float  *f = r->fields + (size_t) r->owner[o0 + o] * W;
            const float  *p = Ro + (size_t) (o0 + o) * W;

            /* cosine_similarity: eps 1e-8 on each norm (torch >= 2) */
            nf = sqrt(dot(f, f, W));
            nr = sqrt(dot(p, p, W));
            c = dot(f, p, W) / ((nf > 1e-8 ? nf : 1e-8) * (nr > 1e-8 ? nr : 1e-8));

            logits[o0 + o] = r->prior[o0 + o]
                + h->gate * (h->joint_scale * (float) c + res[o]);
        }
    }
}

int
clef_cpu_head_forward(clef_cpu_head *h, const float *hidden,
    const clef_record *rec, float *logits, clef_error *err)
{
    head_run  r;
    int       rc;

    if (check_record(h, rec, err) != 0) {
        return -1;
    }

    memset(&r, 0, sizeof(r));
    r.h = h;
    r.hidden = hidden;
    r.rec = rec;
    r.L = rec->ids.n;
    r.Q = rec->n_questions;
    r.N = rec->n_options;

    if (run_alloc(&r) != 0) {
        run_free(&r);
        return clef_error_fail(err, CLEF_E_NO_MEMORY,
            "out of memory in the head (%zu tokens, %d options)",
            r.L, r.N);
    }

    encode_inputs(&r);
    rc = route(&r, err);
    if (rc == 0) {
        rc = decide_fields(&r, err);
    }
    if (rc == 0) {
        score(&r, logits);
    }
    run_free(&r);
    return rc;
}
