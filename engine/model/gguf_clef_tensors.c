/*
 * A Clef GGUF's tensors as the release's (gguf_clef.h): for every tensor
 * the configs imply (the role table's inventory, roles.h), the file's
 * tensor(s) under the role's GGUF name, their shapes checked, and the view
 * the role's CLEF_GGUF_* flags call for: the file's bytes in place (a
 * matrix), with runs of rows or spans of columns where the converter split
 * or reordered it, or values computed once at open (the small tensors).
 */
#include "model/gguf_clef_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_config.h"

#define fail  clef_gguf_clef_fail

/* What a canonical tensor is made of, before its entry exists. */
typedef struct {
    const clef_gguf_tensor  *part[3];
    int                      n_parts;
    int                      compute;   /* values computed at open */
    int                      v_rows;    /* value heads' rows reordered */
    int                      v_cols;    /* ... their columns */
    int64_t                  v_from;    /* rows before the value heads */
    int64_t                  v_unit;    /* rows (columns) per value head */
    int                      n_runs, n_spans;
} layout;

/* ---- the file's tensors ------------------------------------------------ */

/* Dims without the trailing ones: GGML counts a tensor's dimensions up to
 * its last one above 1 (llama-quantize writes residual_scorer.3.weight
 * [1, W] as ne [W]), the converter as torch does. */
static int
dims(int ndim, const int64_t *ne)
{
    while (ndim > 1 && ne[ndim - 1] == 1) {
        ndim--;
    }
    return ndim;
}

/* Finds a part of canonical tensor s in g and checks its GGML shape
 * (ndim dims in ne). */
static int
find_part(const clef_gguf *g, const clef_tensor_spec *s, const char *gname,
    int ndim, const int64_t *ne, layout *lo, clef_error *err)
{
    const clef_gguf_tensor  *t = clef_gguf_tensor_find(g, gname);
    char                     got[80], want[80];
    int64_t                  rev[5];
    int                      j, nd;

    if (t == NULL) {
        return fail(g, err, "has no tensor '%s' (the release's %s)", gname,
                    s->name);
    }
    nd = dims(ndim, ne);
    if (dims(t->ndim, t->ne) != nd
        || memcmp(t->ne, ne, (size_t) nd * sizeof(*ne)) != 0)
    {
        for (j = 0; j < t->ndim; j++) {
            rev[j] = t->ne[t->ndim - 1 - j];
        }
        clef_shape_format(got, sizeof(got), t->ndim, rev);
        for (j = 0; j < ndim; j++) {
            rev[j] = ne[ndim - 1 - j];
        }
        clef_shape_format(want, sizeof(want), ndim, rev);
        return fail(g, err, "tensor '%s' is %s, the configuration implies %s"
                    " (the release's %s)", gname, got, want, s->name);
    }
    lo->part[lo->n_parts++] = t;
    return 0;
}

/* The GGML dims of a canonical shape: reversed. */
static int
ggml_dims(const clef_tensor_spec *s, int64_t *ne)
{
    int  j;

    for (j = 0; j < s->ndim; j++) {
        ne[j] = s->shape[s->ndim - 1 - j];
    }
    return s->ndim;
}

/* The parts of s: the role's GGUF name(s) in the file its flags say. */
static int
find_parts(clef_gguf_clef *m, const clef_tensor_spec *s, layout *lo,
    clef_error *err)
{
    unsigned           f = clef_role_gguf_flags(&m->text, s->role);
    const clef_gguf   *g = f & CLEF_GGUF_MMPROJ ? m->vis : m->g;
    char               gname[CLEF_GGUF_MAX_NAME + 16], *q;
    int64_t            ne[5], three = 3;
    int                i, nd, block = s->layer;

    if (f & CLEF_GGUF_AFTER_ROUTING) {
        block += m->head.routing_layers;
    }
    if (clef_role_of(s->role)->part == CLEF_PART_DEEPSTACK) {
        /* named by the tower block it reads, as the converter does */
        block = m->vision.deepstack[s->layer];
    }
    if (f & CLEF_GGUF_SCALES) {
        return find_part(g, s, CLEF_GGUF_SCALES_TENSOR, 1, &three, lo, err);
    }
    if (clef_role_gguf_name_in(&m->text, s->role, block, gname,
                               sizeof(gname)) == NULL)
    {
        return fail(g, err, "no GGUF name for %s", s->name);
    }
    nd = ggml_dims(s, ne);
    if (f & CLEF_GGUF_EXPERTS) {
        /* every expert's [rows][cols] of the layer in one [E][rows][cols]:
         * GGML [cols, rows, E] */
        ne[2] = m->text.num_experts;
        return find_part(g, s, gname, 3, ne, lo, err);
    }
    if (f & CLEF_GGUF_BIAS3) {
        /* [C] as [C, 1, 1]: GGML [1, 1, C] */
        ne[2] = ne[0];
        ne[0] = ne[1] = 1;
        return find_part(g, s, gname, 3, ne, lo, err);
    }
    if (f & CLEF_GGUF_SPLIT_QKV) {
        /* [3 W] or [3 W][W] as three tensors "_q", "_k", "_v" of [W][W] */
        q = strstr(gname, "_q.");
        ne[nd - 1] /= 3;
        for (i = 0; q != NULL && i < 3; i++) {
            q[1] = "qkv"[i];
            if (find_part(g, s, gname, nd, ne, lo, err) != 0) {
                return -1;
            }
        }
        return q != NULL ? 0 : fail(g, err, "no GGUF name for %s", s->name);
    }
    if (f & CLEF_GGUF_SPLIT_T) {
        /* [H, C, T, P, P] -> T Conv2d tensors of GGML dims [P, P, C, H] */
        ne[0] = s->shape[4];
        ne[1] = s->shape[3];
        ne[2] = s->shape[1];
        ne[3] = s->shape[0];
        if (find_part(g, s, gname, 4, ne, lo, err) != 0) {
            return -1;
        }
        strcat(gname, ".1");
        return find_part(g, s, gname, 4, ne, lo, err);
    }
    if (f & CLEF_GGUF_SQUEEZE) {
        ne[1] = ne[2];              /* [C, 1, K] was squeezed to [C, K] */
        nd = 2;
    }
    return find_part(g, s, gname, nd, ne, lo, err);
}

/* ---- what view ------------------------------------------------------- */

static void
plan_layout(const clef_gguf_clef *m, const clef_tensor_spec *s, layout *lo)
{
    const clef_text_config  *c = &m->text;
    unsigned                 f = clef_role_gguf_flags(c, s->role);
    int64_t                  rows = s->ndim >= 1 ? s->shape[0] : 1;
    int64_t                  hv = c->linear_num_value_heads;
    int                      reorder;

    reorder = c->linear_num_key_heads != c->linear_num_value_heads;
    lo->v_rows = reorder && (f & CLEF_GGUF_V_ROWS);
    lo->v_cols = reorder && (f & CLEF_GGUF_V_COLS);
    /* the value heads are the last rows: hv of dv each (in_proj_qkv after
     * its q and k rows, in_proj_z, conv1d's channels), or one each */
    lo->v_unit = rows == hv ? 1 : c->linear_value_head_dim;
    lo->v_from = lo->v_rows ? rows - hv * lo->v_unit : 0;
    if (lo->v_cols) {
        lo->v_unit = c->linear_value_head_dim;
    }
    lo->compute = s->ndim <= 1
                  || (f & (CLEF_GGUF_PLUS_ONE | CLEF_GGUF_NEG_EXP
                           | CLEF_GGUF_SCALES | CLEF_GGUF_SQUEEZE
                           | CLEF_GGUF_SPLIT_T));
    lo->n_runs = 0;
    lo->n_spans = 0;
    if (!lo->compute && lo->n_parts > 1) {
        lo->n_runs = lo->n_parts;
    } else if (!lo->compute && lo->v_rows) {
        lo->n_runs = 1 + (int) hv;
    }
    if (!lo->compute && lo->v_cols) {
        lo->n_spans = (int) hv;
    }
}

/* The file's (tiled) position of the value head at grouped position h,
 * the release's: h = group * per + j -> j * hk + group. */
static int64_t
tiled(const clef_text_config *c, int64_t h)
{
    int64_t  per = c->linear_num_value_heads / c->linear_num_key_heads;

    return (h % per) * c->linear_num_key_heads + h / per;
}

/* ---- views on the file ------------------------------------------------- */

static size_t
row_stride(const clef_gguf_tensor *p)
{
    return (size_t) clef_dtype_bytes(p->dtype, p->ne[0]);
}

static void
view_runs(const clef_gguf_clef *m, clef_gguf_clef_tensor *e, const layout *lo,
    clef_tensor_run *runs)
{
    const clef_gguf_tensor  *p = lo->part[0];
    int64_t                  h, rows = e->t.shape[0];
    int                      i;

    if (lo->n_parts > 1) {
        /* q, k, v: a third of the rows each, each in its own type */
        for (i = 0; i < lo->n_parts; i++) {
            p = lo->part[i];
            runs[i].row = i * (rows / lo->n_parts);
            runs[i].n = rows / lo->n_parts;
            runs[i].dtype = p->dtype;
            runs[i].data = p->data;
            runs[i].stride = row_stride(p);
        }
        return;
    }
    /* the rows before the value heads, then each value head's */
    runs[0].row = 0;
    runs[0].n = lo->v_from;
    for (h = 0; h < m->text.linear_num_value_heads; h++) {
        runs[1 + h].row = lo->v_from + h * lo->v_unit;
        runs[1 + h].n = lo->v_unit;
        runs[1 + h].data = (const char *) p->data
                           + (size_t) (lo->v_from + tiled(&m->text, h)
                                                    * lo->v_unit)
                             * row_stride(p);
    }
    for (i = 0; i <= m->text.linear_num_value_heads; i++) {
        runs[i].dtype = p->dtype;
        runs[i].stride = row_stride(p);
        if (i == 0) {
            runs[i].data = p->data;
        }
    }
    if (lo->v_from == 0) {
        /* no rows before them: drop the empty run */
        memmove(runs, runs + 1, sizeof(*runs) * (size_t) (lo->n_runs - 1));
        e->t.n_runs--;
    }
}

static void
view_spans(const clef_gguf_clef *m, const layout *lo, clef_tensor_span *sp)
{
    int64_t  h;

    for (h = 0; h < m->text.linear_num_value_heads; h++) {
        sp[h].col = h * lo->v_unit;
        sp[h].n = lo->v_unit;
        sp[h].from = tiled(&m->text, h) * lo->v_unit;
    }
}

/* ---- values computed at open ------------------------------------------- */

static void
part_to_f32(const clef_gguf_tensor *p, float *dst)
{
    clef_dtype_cols_to_f32(p->dtype, p->data, 0, p->numel, dst);
}

/* The release's value of a stored one, for the converter's transforms of
 * values (roles.h): w = x - 1 in f32 (1 + w is what every reader computes
 * back); the others through double. */
static float
undo(unsigned flags, float x)
{
    if (flags & CLEF_GGUF_PLUS_ONE) {
        return x - 1.0f;
    }
    if (flags & CLEF_GGUF_NEG_EXP) {
        return (float) log(-(double) x);
    }
    if (flags & CLEF_GGUF_SIGMOID) {
        return (float) log((double) x / (1.0 - (double) x));
    }
    if (flags & CLEF_GGUF_SCALES) {
        return (float) log((double) x);
    }
    return x;
}

static int
compute(const clef_gguf_clef *m, clef_gguf_clef_tensor *e, const layout *lo,
    float *dst, clef_error *err)
{
    unsigned               f = clef_role_gguf_flags(&m->text, e->role);
    const clef_gguf_tensor *p = lo->part[0];
    int64_t                n = e->t.numel, rows, cols, h, o, plane, hc;
    int64_t                k, i;
    float                 *tmp;
    int                    j;

    tmp = malloc(sizeof(float) * (size_t) (p->numel > n ? p->numel : n) + 4);
    if (tmp == NULL) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }
    if (f & CLEF_GGUF_SCALES) {
        part_to_f32(p, tmp);
        dst[0] = tmp[e->role - CLEF_ROLE_H_PRIOR_SCALE];
    } else if (f & CLEF_GGUF_SPLIT_T) {
        /* [H, C, T, P, P] from T parts of [H, C, P, P] */
        plane = e->t.shape[3] * e->t.shape[4];
        hc = e->t.shape[0] * e->t.shape[1];
        for (j = 0; j < lo->n_parts; j++) {
            part_to_f32(lo->part[j], tmp);
            for (o = 0; o < hc; o++) {
                memcpy(dst + (o * lo->n_parts + j) * plane, tmp + o * plane,
                       (size_t) plane * sizeof(float));
            }
        }
    } else {
        /* the parts one after another (a bias split in q, k, v) */
        for (o = 0, j = 0; j < lo->n_parts; j++) {
            part_to_f32(lo->part[j], dst + o);
            o += lo->part[j]->numel;
        }
        if (lo->v_rows) {
            rows = e->t.shape[0];
            cols = n / rows;
            memcpy(tmp, dst, sizeof(float) * (size_t) n);
            for (h = 0; h < m->text.linear_num_value_heads; h++) {
                k = lo->v_from + h * lo->v_unit;
                memcpy(dst + k * cols,
                       tmp + (lo->v_from + tiled(&m->text, h) * lo->v_unit)
                             * cols,
                       sizeof(float) * (size_t) (lo->v_unit * cols));
            }
        }
    }
    for (i = 0; i < n; i++) {
        dst[i] = undo(f, dst[i]);
    }
    free(tmp);
    return 0;
}

/* ---- the entries --------------------------------------------------------- */

typedef struct {
    clef_gguf_clef  *m;
    clef_error      *err;
    int              head;
} build_ctx;

static int
add_entry(build_ctx *b, clef_gguf_clef_tensor *e)
{
    clef_gguf_clef   *m = b->m;
    void            **p;

    if (m->n_t == m->cap_t) {
        m->cap_t = m->cap_t ? 2 * m->cap_t : 256;
        p = realloc(m->t, m->cap_t * sizeof(*m->t));
        if (p == NULL) {
            free(e);
            return clef_error_fail(b->err, CLEF_E_NO_MEMORY, "out of memory");
        }
        m->t = (clef_gguf_clef_tensor **) p;
    }
    m->t[m->n_t++] = e;
    return 0;
}

static int
on_tensor(const clef_tensor_spec *s, void *ctx)
{
    build_ctx               *b = ctx;
    clef_gguf_clef          *m = b->m;
    clef_gguf_clef_tensor   *e;
    layout                   lo;
    size_t                   extra;
    char                    *at;
    int                      j, mapped;

    memset(&lo, 0, sizeof(lo));
    if (find_parts(m, s, &lo, b->err) != 0) {
        return -1;
    }
    plan_layout(m, s, &lo);
    mapped = lo.part[0]->data != NULL;

    extra = sizeof(clef_tensor_run) * (size_t) lo.n_runs
            + sizeof(clef_tensor_span) * (size_t) lo.n_spans;
    if (lo.compute) {
        for (j = 0, extra = sizeof(float); j < s->ndim; j++) {
            extra *= (size_t) s->shape[j];
        }
    }
    e = calloc(1, sizeof(*e) + (mapped ? extra : 0));
    if (e == NULL) {
        return clef_error_fail(b->err, CLEF_E_NO_MEMORY, "out of memory");
    }
    snprintf(e->name, sizeof(e->name), "%s", s->name);
    e->head = b->head;
    e->role = s->role;
    e->layer = s->layer;
    memcpy(e->part, lo.part, sizeof(lo.part));
    e->n_parts = lo.n_parts;
    e->t.name = e->name;
    e->t.ndim = s->ndim;
    e->t.numel = 1;
    for (j = 0; j < s->ndim; j++) {
        e->t.shape[j] = s->shape[j];
        e->t.numel *= s->shape[j];
    }
    e->t.dtype = lo.compute ? CLEF_DTYPE_F32 : lo.part[0]->dtype;
    at = (char *) (e + 1);

    if (!mapped) {
        return add_entry(b, e);             /* headers only: no values */
    }
    if (lo.compute) {
        e->t.data = at;
        if (compute(m, e, &lo, (float *) at, b->err) != 0) {
            free(e);
            return -1;
        }
        return add_entry(b, e);             /* nbytes 0: never released */
    }
    e->t.data = lo.part[0]->data;
    if (s->expert >= 0) {
        /* expert e's slab of the layer's 3-D tensor: a view in place */
        e->t.nbytes = (size_t) (s->shape[0] * row_stride(lo.part[0]));
        e->t.data = (const char *) lo.part[0]->data
                    + (size_t) s->expert * e->t.nbytes;
        return add_entry(b, e);
    }
    if (lo.n_runs == 0 && lo.n_spans == 0) {
        e->t.nbytes = (size_t) lo.part[0]->nbytes;
        return add_entry(b, e);
    }
    e->t.n_runs = lo.n_runs;
    e->t.runs = (clef_tensor_run *) at;
    if (lo.n_runs > 0) {
        view_runs(m, e, &lo, (clef_tensor_run *) at);
    }
    at += sizeof(clef_tensor_run) * (size_t) lo.n_runs;
    e->t.n_spans = lo.n_spans;
    e->t.spans = (clef_tensor_span *) at;
    if (lo.n_spans > 0) {
        view_spans(m, &lo, (clef_tensor_span *) at);
    }
    return add_entry(b, e);
}

int
clef_gguf_clef_build_tensors(clef_gguf_clef *m, clef_error *err)
{
    build_ctx  b;

    b.m = m;
    b.err = err;
    b.head = 0;
    if (clef_text_tensors(&m->text, on_tensor, &b) != 0
        || (m->vis != NULL
            && clef_vision_tensors(&m->vision, on_tensor, &b) != 0)
        || (m->audio.present
            && clef_audio_tensors(&m->audio, on_tensor, &b) != 0))
    {
        return -1;
    }
    b.head = 1;
    return clef_head_tensors(&m->head, on_tensor, &b);
}
