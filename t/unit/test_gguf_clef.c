/*
 * Clef GGUF files made by llama.cpp's converter and llama-quantize
 * (t/fixtures/gguf, t/reference/gen_gguf_fixtures.py) against the
 * checkpoint they were made from (`clef mkmodel` makes it again here):
 *   - every tensor of every file: its bytes and our dequantization against
 *     the hashes gguf-py gave (t/fixtures/gguf/manifest.json);
 *   - F32, F16 and BF16 files: the configuration equal to the release's,
 *     and every tensor of the release (backbone, head, vision tower from
 *     the mmproj file) read back through the mapping equal to the
 *     release's values as the converter stores them, bit for bit (A_log's
 *     -exp within an ulp: torch's exp is not the C library's);
 *   - the quantized files: the same tensors within their types' error;
 *   - the tokenizer from tokenizer.ggml.*: ids and spans identical to the
 *     tokenizer.json path on every encoder fixture and tokenizer text;
 *   - refusals: a plain Qwen3.5 GGUF, an mmproj given as the model, the
 *     first part of a split GGUF renamed, a vocabulary-only GGUF, a
 *     missing tensor, a wrong shape;
 *   - `clef mkmodel --gguf TYPE` from the same seed against the manifest
 *     (gguf-py's dump of llama.cpp's files): the F32, F16 and BF16 files
 *     and the mmproj byte for byte as the converter wrote them; the
 *     quantized ones with every tensor of llama-quantize's type and shape
 *     (their blocks are our quantizers', not its), the tensors it keeps in
 *     F32 byte for byte; each file opens as a Clef model.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "check.h"
#include "gguf_manifest.h"
#include "shell.h"
#include "model/gguf.h"
#include "model/gguf_clef.h"
#include "model/gguf_write.h"
#include "model/model.h"
#include "model/quant.h"
#include "protocol/encode.h"
#include "protocol/request.h"
#include "text/tokenizer.h"

static char  dir[256];
static char  fix[512];

static const char *
gguf_path(const char *name)
{
    static char  path[4][600];
    static int   k;

    k = (k + 1) % 4;
    snprintf(path[k], sizeof(path[k]), "%s/gg1.%s.gguf", fix, name);
    return path[k];
}

/* ---- every tensor's bytes and dequantization vs gguf-py ------------- */

static void
test_manifest(json_t *man)
{
    const char  *file;
    json_t      *ts;
    char         path[700];

    json_object_foreach(man, file, ts) {
        snprintf(path, sizeof(path), "%s/%s", fix, file);
        manifest_check_file(path, file, ts);
    }
}

/* ---- clef mkmodel --gguf ---------------------------------------------- */

/* Another shape (tiny: the whole Qwen3 vocabulary, head_dim 32, mrope
 * sections past its rotary pairs, as its release has them): its F32 GGUF
 * holds the release's bf16 values exactly, so clef decide's raw logits on
 * it are the release's, bit for bit; BF16 too. */
static void
test_mkmodel_decide(void)
{
    static const char  *req = "{\"model\": \"m\", \"state\": \"Help! My"
        " payouts have been failing for 3 days.\", \"questions\":"
        " {\"is_urgent\": {\"type\": \"noul\"}, \"tone\": {\"type\":"
        " \"noul\", \"instructions\": \"Is the tone calm?\"}}}";
    FILE               *f;
    char                path[600];
    const char         *types[] = { "f32", "bf16" };
    int                 k;

    snprintf(path, sizeof(path), "%s/req.json", dir);
    f = fopen(path, "w");
    if (f == NULL) {
        CHECK(0, "write %s", path);
        return;
    }
    fprintf(f, "%s\n", req);
    fclose(f);
    CHECK_INT(sh("build/clef mkmodel --shape tiny --tokenizer '%s' --seed 3"
                 " --out '%s/tiny' >/dev/null && build/clef decide '%s/tiny'"
                 " --raw <'%s' >'%s/tiny.out'", check_qwen3_tokenizer(), dir,
                 dir, path, dir), 0, "the tiny release answers");
    for (k = 0; k < 2; k++) {
        CHECK_INT(sh("build/clef mkmodel --shape tiny --tokenizer '%s' --seed 3"
                     " --gguf %s --out '%s/tiny.gguf' >/dev/null"
                     " && build/clef decide '%s/tiny.gguf' --raw <'%s'"
                     " >'%s/gguf.out' && cmp -s '%s/tiny.out' '%s/gguf.out'"
                     " && grep -q '\"logits\"' '%s/gguf.out'",
                     check_qwen3_tokenizer(), types[k], dir, dir, path, dir,
                     dir, dir, dir), 0,
                  "mkmodel --shape tiny --gguf %s: clef decide's raw logits"
                  " those of the release, bit for bit", types[k]);
    }
}

/* --sparse: the same file, but every matrix all zero bytes (a hole), the
 * tensors a reader computes from written as without it. */
static void
test_mkmodel_sparse(void)
{
    const clef_gguf_tensor  *t, *u;
    clef_gguf               *g, *full;
    clef_error               err;
    char                     out[600], ref[600];
    size_t                   i, zero = 0, same = 0, j;
    int                      ok = 1;

    snprintf(out, sizeof(out), "%s/sparse.gguf", dir);
    snprintf(ref, sizeof(ref), "%s/mk.q4_k_m.gguf", dir);
    CHECK_INT(sh("build/clef mkmodel --config '%s/models/gg1.json' --tokenizer"
                 " '%s/tokenizer/qwen3-trim' --seed 20 --gguf q4_k_m --sparse"
                 " --out '%s' >/dev/null", check_fixtures(), check_fixtures(),
                 out), 0, "mkmodel --gguf q4_k_m --sparse");
    g = clef_gguf_open(out, 0, &err);
    full = clef_gguf_open(ref, 0, &err);
    if (g == NULL || full == NULL) {
        CHECK(0, "the sparse file and the full one open");
        clef_gguf_close(g);
        clef_gguf_close(full);
        return;
    }
    for (i = 0; i < clef_gguf_tensor_count(g); i++) {
        t = clef_gguf_tensor_at(g, i);
        u = clef_gguf_tensor_find(full, t->name);
        ok &= u != NULL && u->dtype == t->dtype && u->nbytes == t->nbytes;
        if (!ok) {
            break;
        }
        if (memcmp(t->data, u->data, t->nbytes) == 0) {
            same++;
            continue;
        }
        for (j = 0; j < t->nbytes && ((const uint8_t *) t->data)[j] == 0; j++) {
        }
        zero += j == t->nbytes;
        ok &= j == t->nbytes;
    }
    CHECK(ok && zero > 0 && zero + same == clef_gguf_tensor_count(g)
          && clef_gguf_tensor_count(g) == clef_gguf_tensor_count(full),
          "--sparse: %zu matrices all zero, the other %zu tensors as without"
          " it", zero, same);
    clef_gguf_close(g);
    clef_gguf_close(full);
}

/* iq4_xs and q3_k_m (--sparse only: no quantizer here): every tensor of
 * the type and shape llama-quantize chose in its files of gg1
 * (t/fixtures/gguf/types), and without --sparse a refusal. */
static void
test_mkmodel_small_types(void)
{
    static const char *const  kinds[] = { "iq4_xs", "q3_k_m" };
    const clef_gguf_tensor   *t, *u;
    clef_gguf                *g, *ref;
    clef_error                err;
    char                      out[600], path[600];
    size_t                    i, k, same;
    int                       d;

    for (k = 0; k < 2; k++) {
        snprintf(out, sizeof(out), "%s/mk.%s.gguf", dir, kinds[k]);
        snprintf(path, sizeof(path), "%s/gguf/types/gg1.%s.gguf",
                 check_fixtures(), kinds[k]);
        CHECK(sh("build/clef mkmodel --config '%s/models/gg1.json' --tokenizer"
                 " '%s/tokenizer/qwen3-trim' --seed 20 --gguf %s --out '%s'"
                 " 2>/dev/null", check_fixtures(), check_fixtures(), kinds[k],
                 out) != 0,
              "mkmodel --gguf %s without --sparse: refused (no quantizer)",
              kinds[k]);
        CHECK_INT(sh("build/clef mkmodel --config '%s/models/gg1.json'"
                     " --tokenizer '%s/tokenizer/qwen3-trim' --seed 20 --gguf %s"
                     " --sparse --out '%s' >/dev/null", check_fixtures(),
                     check_fixtures(), kinds[k], out), 0,
                  "mkmodel --gguf %s --sparse", kinds[k]);
        g = clef_gguf_open(out, CLEF_GGUF_HEADERS_ONLY, &err);
        ref = clef_gguf_open(path, CLEF_GGUF_HEADERS_ONLY, &err);
        same = 0;
        for (i = 0; g != NULL && ref != NULL && i < clef_gguf_tensor_count(g);
             i++)
        {
            t = clef_gguf_tensor_at(g, i);
            u = clef_gguf_tensor_find(ref, t->name);
            if (u == NULL || u->type != t->type || u->ndim != t->ndim) {
                continue;
            }
            for (d = 0; d < t->ndim && u->ne[d] == t->ne[d]; d++) {
            }
            same += d == t->ndim;
        }
        CHECK(g != NULL && ref != NULL && same == clef_gguf_tensor_count(g)
              && same == clef_gguf_tensor_count(ref),
              "mkmodel --gguf %s: all %zu tensors of llama-quantize's types"
              " and shapes", kinds[k], same);
        clef_gguf_close(g);
        clef_gguf_close(ref);
    }
}

static void
test_mkmodel_gguf(json_t *man)
{
    static const char *const  types[] = {
        "f32", "f16", "bf16", "q8_0", "q6_k", "q5_k_m", "q4_k_m"
    };
    const clef_gguf_tensor   *t;
    clef_gguf_clef           *m;
    clef_gguf                *g;
    clef_error                err;
    json_t                   *ts, *e;
    const char               *name, *file;
    char                      out[600], mm[600], h[20];
    size_t                    i, k, n_bad, n_same;
    int                       ok, floats, pass;

    snprintf(mm, sizeof(mm), "%s/mk.mmproj.gguf", dir);
    for (k = 0; k < sizeof(types) / sizeof(types[0]); k++) {
        snprintf(out, sizeof(out), "%s/mk.%s.gguf", dir, types[k]);
        floats = types[k][0] == 'f' || types[k][0] == 'b';
        CHECK_INT(sh("build/clef mkmodel --config '%s/models/gg1.json'"
                     " --tokenizer '%s/tokenizer/qwen3-trim' --seed 20 --gguf"
                     " %s --out '%s' %s%s%s >/dev/null", check_fixtures(),
                     check_fixtures(), types[k], out,
                     k == 1 ? "--mmproj '" : "", k == 1 ? mm : "",
                     k == 1 ? "'" : ""), 0,
                  "mkmodel --gguf %s", types[k]);
        for (pass = 0; pass < (k == 1 ? 2 : 1); pass++) {
            file = pass ? mm : out;
            snprintf(h, sizeof(h), "gg1.%s.gguf", pass ? "mmproj" : types[k]);
            ts = json_object_get(man, h);
            g = clef_gguf_open(file, 0, &err);
            if (g == NULL || ts == NULL) {
                CHECK(0, "%s opens: %s", file, g ? "" : err.message);
                clef_gguf_close(g);
                continue;
            }
            n_bad = n_same = 0;
            json_array_foreach(ts, i, e) {
                name = json_string_value(json_object_get(e, "name"));
                t = clef_gguf_tensor_find(g, name);
                ok = manifest_shape_ok(t, e);
                if (ok) {
                    snprintf(h, sizeof(h), "%016llx",
                             (unsigned long long) fnv(t->data, t->nbytes));
                    if (strcmp(h, json_string_value(json_object_get(e,
                                      "raw_fnv"))) == 0)
                    {
                        n_same++;
                    } else if (floats || t->dtype == CLEF_DTYPE_F32) {
                        ok = 0;
                    }
                }
                if (!ok) {
                    printf("#   mkmodel --gguf %s: %s differs\n", types[k],
                           name);
                    n_bad++;
                }
            }
            CHECK(n_bad == 0
                  && clef_gguf_tensor_count(g) == json_array_size(ts),
                  "mkmodel --gguf %s%s: the %zu tensors of llama.cpp's file,"
                  " types and shapes; %zu of them byte for byte", types[k],
                  pass ? " (mmproj)" : "", json_array_size(ts), n_same);
            clef_gguf_close(g);
        }
        m = clef_gguf_clef_open(out, k == 1 ? mm : NULL, 0, &err);
        CHECK(m != NULL, "mkmodel --gguf %s opens as a Clef model: %s",
              types[k], m ? "" : err.message);
        clef_gguf_clef_close(m);
    }
    test_mkmodel_sparse();
    test_mkmodel_small_types();
    test_mkmodel_decide();
    CHECK_INT(sh("build/clef mkmodel --config '%s/models/gg1.json' --tokenizer"
                 " '%s/tokenizer/qwen3-trim' --seed 20 --gguf q3_k --out"
                 " '%s/x.gguf' 2>/dev/null", check_fixtures(), check_fixtures(),
                 dir), 2, "mkmodel --gguf with an unknown type: usage error");
}

/* ---- configuration --------------------------------------------------- */

static int
same_text(const clef_text_config *a, const clef_text_config *b)
{
    int  l, ok;

    ok = a->vocab_size == b->vocab_size && a->hidden_size == b->hidden_size
         && a->intermediate_size == b->intermediate_size
         && a->num_hidden_layers == b->num_hidden_layers
         && a->num_attention_heads == b->num_attention_heads
         && a->num_key_value_heads == b->num_key_value_heads
         && a->head_dim == b->head_dim
         && a->linear_num_key_heads == b->linear_num_key_heads
         && a->linear_num_value_heads == b->linear_num_value_heads
         && a->linear_key_head_dim == b->linear_key_head_dim
         && a->linear_value_head_dim == b->linear_value_head_dim
         && a->linear_conv_kernel_dim == b->linear_conv_kernel_dim
         && a->attn_output_gate == b->attn_output_gate
         && (float) a->rms_norm_eps == (float) b->rms_norm_eps
         && a->rope_theta == b->rope_theta
         && a->partial_rotary_factor == b->partial_rotary_factor
         && memcmp(a->mrope_section, b->mrope_section, sizeof(a->mrope_section)) == 0
         && a->mrope_interleaved == b->mrope_interleaved
         && a->tie_word_embeddings == b->tie_word_embeddings;
    for (l = 0; ok && l < a->num_hidden_layers; l++) {
        ok = a->layer_full[l] == b->layer_full[l]
             && a->layer[l].mixer == b->layer[l].mixer
             && strcmp(a->layer[l].prefix, b->layer[l].prefix) == 0;
    }
    return ok;
}

static int
same_vision(const clef_vision_config *a, const clef_vision_config *b)
{
    int  i, ok;

    ok = a != NULL && b != NULL && a->depth == b->depth
         && a->hidden_size == b->hidden_size
         && a->intermediate_size == b->intermediate_size
         && a->num_heads == b->num_heads && a->in_channels == b->in_channels
         && a->patch_size == b->patch_size
         && a->temporal_patch_size == b->temporal_patch_size
         && a->spatial_merge_size == b->spatial_merge_size
         && a->num_position_embeddings == b->num_position_embeddings
         && a->out_hidden_size == b->out_hidden_size
         && a->rope_theta == b->rope_theta
         && a->image_token_id == b->image_token_id
         && a->vision_start_token_id == b->vision_start_token_id
         && a->vision_end_token_id == b->vision_end_token_id
         && a->processor.min_pixels == b->processor.min_pixels
         && a->processor.max_pixels == b->processor.max_pixels;
    for (i = 0; ok && i < 3; i++) {
        ok = (float) a->processor.mean[i] == (float) b->processor.mean[i]
             && (float) a->processor.std[i] == (float) b->processor.std[i];
    }
    return ok;
}

/* ---- tensors --------------------------------------------------------- */

/* What the converter stores for a release value r (in f32), by the
 * role's flags (roles.h). */
static float
stored(unsigned flags, float r)
{
    if (flags & CLEF_GGUF_PLUS_ONE) {
        return 1.0f + r;
    }
    if (flags & CLEF_GGUF_NEG_EXP) {
        return -expf(r);
    }
    if (flags & CLEF_GGUF_SIGMOID) {
        return (float) (1.0 / (1.0 + exp(-(double) r)));
    }
    if (flags & CLEF_GGUF_SCALES) {
        return (float) exp(fmin((double) r, log(100.0)));
    }
    return r;
}

/* Roles whose release values come back through a logarithm. */
#define LOG_BASED  (CLEF_GGUF_NEG_EXP | CLEF_GGUF_SCALES)

/* ... and in the file's type (F32, F16, BF16). */
static float
in_type(uint32_t type, float v)
{
    uint16_t  h;

    if (type == CLEF_GGML_F16) {
        h = clef_f32_to_f16(v);
        return clef_f16_to_f32(h);
    }
    if (type == CLEF_GGML_BF16) {
        h = clef_f32_to_bf16(v);
        return clef_bf16_to_f32(h);
    }
    return v;
}

static int32_t
ulps(float a, float b)
{
    int32_t  x, y;

    memcpy(&x, &a, 4);
    memcpy(&y, &b, 4);
    return x > y ? x - y : y - x;
}

/*
 * Every tensor of the release through the mapping, its view's values (the
 * release's, the converter's changes undone) taken back to the form the
 * converter stores and compared with the release's in that form.  tol < 0:
 * exact (the values that come back through a logarithm: A_log, the head's
 * scales and gate, within 4 ulps); else the largest |got - want| over the
 * tensor's largest magnitude.
 */
static void
test_tensors(const clef_model *rel, const char *name, double tol)
{
    const clef_gguf_clef_tensor  *t;
    const clef_tensor            *rt;
    clef_gguf_clef               *m;
    clef_error                    err;
    float                        *got, *want, amax, e, worst = 0;
    int64_t                       n, i;
    size_t                        k, n_rel = 0, n_bad = 0, n_vals = 0, n_ulp = 0;
    int                           j, exact = tol < 0;
    unsigned                      flags;

    m = clef_gguf_clef_open(gguf_path(name), gguf_path("mmproj"), 0, &err);
    if (m == NULL) {
        CHECK(0, "gg1.%s.gguf opens as a Clef model: %s", name, err.message);
        return;
    }
    CHECK(same_text(clef_gguf_clef_text_config(m), clef_model_text_config(rel))
          && memcmp(clef_gguf_clef_head_config(m), clef_model_head_config(rel),
                    sizeof(clef_head_config)) == 0
          && same_vision(clef_gguf_clef_vision_config(m),
                         clef_model_vision_config(rel)),
          "gg1.%s.gguf: the text, head and vision configurations are the"
          " release's", name);

    for (k = 0; k < clef_gguf_clef_count(m); k++) {
        t = clef_gguf_clef_at(m, k);
        rt = t->head ? clef_model_head_tensor(rel, t->name)
                     : clef_model_tensor(rel, t->name);
        flags = clef_role_of(t->role)->gguf_flags;
        if (rt == NULL || !clef_tensor_has_shape(rt, t->t.ndim, t->t.shape)) {
            printf("#   %s: not in the release, or another shape\n", t->name);
            n_bad++;
            continue;
        }
        n_rel++;
        n = rt->numel;
        got = malloc((size_t) n * sizeof(float) + 4);
        want = malloc((size_t) n * sizeof(float) + 4);
        {
            clef_tensor_to_f32(&t->t, got);
            clef_tensor_to_f32(rt, want);
            amax = 0;
            for (i = 0; i < n; i++) {
                got[i] = stored(flags, got[i]);
                want[i] = stored(flags, want[i]);
                if (exact) {
                    want[i] = in_type(t->part[0]->type, want[i]);
                }
                amax = fabsf(want[i]) > amax ? fabsf(want[i]) : amax;
            }
            for (i = 0, j = 0; i < n; i++) {
                if (exact && (flags & LOG_BASED)) {
                    n_ulp += got[i] != want[i];
                    j += ulps(got[i], want[i]) > 4;
                } else if (exact) {
                    j += memcmp(&got[i], &want[i], 4) != 0;
                } else {
                    e = fabsf(got[i] - want[i]) / (amax > 0 ? amax : 1);
                    worst = e > worst ? e : worst;
                    j += !(e <= tol);
                }
            }
            if (j != 0) {
                printf("#   %s: %d of %lld values differ\n", t->name, j,
                       (long long) n);
                n_bad++;
            }
            n_vals += (size_t) n;
        }
        free(got);
        free(want);
    }
    if (exact) {
        CHECK(n_bad == 0 && n_rel > 100, "gg1.%s.gguf + mmproj: all %zu tensors"
              " of the release (%zu values) as the converter stores them, bit"
              " for bit (%zu values through a logarithm within 4 ulps)", name,
              n_rel, n_vals, n_ulp);
    } else {
        CHECK(n_bad == 0 && n_rel > 100, "gg1.%s.gguf + mmproj: all %zu tensors"
              " of the release (%zu values) within %.3g of their largest value"
              " (worst %.3g)", name, n_rel, n_vals, tol, (double) worst);
    }
    clef_gguf_clef_close(m);
}

/* ---- the tokenizer --------------------------------------------------- */

static int
same_record(const clef_record *a, const clef_record *b)
{
    int  q;

    if (a->ids.n != b->ids.n || memcmp(a->ids.v, b->ids.v,
                                       a->ids.n * sizeof(int32_t)) != 0
        || a->n_questions != b->n_questions || a->n_options != b->n_options
        || a->state_tokens != b->state_tokens || a->state_kept != b->state_kept)
    {
        return 0;
    }
    for (q = 0; q < a->n_questions; q++) {
        if (memcmp(&a->question_spans[q], &b->question_spans[q],
                   sizeof(clef_span)) != 0)
        {
            return 0;
        }
    }
    for (q = 0; q < a->n_options; q++) {
        if (memcmp(&a->option_spans[q], &b->option_spans[q],
                   sizeof(clef_span)) != 0)
        {
            return 0;
        }
    }
    return 1;
}

static void
test_tokenizer(void)
{
    clef_tokenizer   *tj, *tg;
    clef_gguf_clef   *m;
    clef_error        err, e1, e2;
    clef_encode_opts  opts;
    clef_request      req;
    clef_record       r1, r2;
    clef_ids          i1 = { 0 }, i2 = { 0 };
    json_t           *c;
    json_error_t      jerr;
    FILE             *f;
    char              path[600], *line = NULL;
    size_t            cap = 0, n_cases = 0, n_bad = 0, n_ids = 0;
    ssize_t           len;
    const char       *body, *text;
    int               rc1, rc2, pass;

    snprintf(path, sizeof(path), "%s/tokenizer/qwen3-trim", check_fixtures());
    tj = clef_tokenizer_load(path, &err);
    m = clef_gguf_clef_open(gguf_path("bf16"), NULL, CLEF_GGUF_HEADERS_ONLY, &err);
    tg = m != NULL ? clef_gguf_clef_tokenizer(m, &err) : NULL;
    CHECK(tj != NULL && tg != NULL, "the tokenizer from the GGUF's"
          " tokenizer.ggml.* (headers only) loads: %s", tg ? "" : err.message);
    if (tj == NULL || tg == NULL) {
        goto done;
    }
    CHECK_INT(clef_tokenizer_vocab_size(tg), clef_tokenizer_vocab_size(tj),
              "its vocabulary size is the tokenizer.json's");

    /* every encoder fixture, both ways */
    snprintf(path, sizeof(path), "%s/encode/cases.jsonl", check_fixtures());
    f = fopen(path, "r");
    while (f != NULL && (len = getline(&line, &cap, f)) > 0) {
        c = json_loadb(line, (size_t) len, 0, &jerr);
        body = json_string_value(json_object_get(c, "body"));
        if (body == NULL
            || clef_request_parse(&req, body, strlen(body), NULL, &err) != 0)
        {
            json_decref(c);
            continue;
        }
        clef_encode_opts_default(&opts);
        opts.max_length = (int) json_integer_value(json_object_get(c, "max_length"));
        opts.truncate = strcmp(json_string_value(json_object_get(c, "truncate")),
                               "state") == 0 ? CLEF_TRUNCATE_STATE
                                             : CLEF_TRUNCATE_REJECT;
        clef_error_clear(&e1);
        clef_error_clear(&e2);
        rc1 = clef_encode(tj, &req, &opts, &r1, &e1);
        rc2 = clef_encode(tg, &req, &opts, &r2, &e2);
        n_cases++;
        if (rc1 != rc2 || (rc1 == 0 && !same_record(&r1, &r2))
            || (rc1 != 0 && strcmp(e1.message, e2.message) != 0))
        {
            printf("#   %s differs\n",
                   json_string_value(json_object_get(c, "name")));
            n_bad++;
        }
        if (rc1 == 0) {
            n_ids += r1.ids.n;
            clef_record_free(&r1);
        }
        if (rc2 == 0) {
            clef_record_free(&r2);
        }
        clef_request_free(&req);
        json_decref(c);
    }
    if (f != NULL) {
        fclose(f);
    }
    CHECK(n_bad == 0 && n_cases > 100, "all %zu encoder fixtures: ids and spans"
          " (%zu ids) identical through the GGUF's tokenizer and the"
          " tokenizer.json's", n_cases, n_ids);

    /* every tokenizer fixture text */
    n_cases = n_bad = 0;
    for (pass = 0; pass < 2; pass++) {
        snprintf(path, sizeof(path), "%s/tokenizer/%s/cases.jsonl",
                 check_fixtures(), pass == 0 ? "qwen3" : "edge");
        f = fopen(path, "r");
        while (f != NULL && (len = getline(&line, &cap, f)) > 0) {
            c = json_loadb(line, (size_t) len, JSON_ALLOW_NUL, &jerr);
            text = json_string_value(json_object_get(c, "text"));
            if (text != NULL) {
                i1.n = i2.n = 0;
                clef_tokenizer_encode(tj, text, json_string_length(
                                          json_object_get(c, "text")), &i1);
                clef_tokenizer_encode(tg, text, json_string_length(
                                          json_object_get(c, "text")), &i2);
                n_cases++;
                n_bad += i1.n != i2.n
                         || (i1.n > 0 && memcmp(i1.v, i2.v,
                                                i1.n * sizeof(int32_t)) != 0);
            }
            json_decref(c);
        }
        if (f != NULL) {
            fclose(f);
        }
    }
    CHECK(n_bad == 0 && n_cases > 100, "all %zu tokenizer fixture texts: the"
          " same ids (%zu differ)", n_cases, n_bad);

done:
    free(line);
    clef_ids_free(&i1);
    clef_ids_free(&i2);
    clef_tokenizer_free(tj);
    clef_tokenizer_free(tg);
    clef_gguf_clef_close(m);
}

/* ---- refusals -------------------------------------------------------- */

/* A copy of the bf16 fixture with general.architecture arch (NULL: kept),
 * without tensor drop ("*": without any), with tensor swap's two dims swapped, and with
 * llama-gguf-split's keys of part 1 of split parts when split > 1 (the
 * tensors all kept: the keys alone make it a part). */
static int
copy_fixture(const char *out, const char *arch, const char *drop,
    const char *swap, int split, clef_error *err)
{
    const clef_gguf_tensor  *t;
    const clef_gguf_value   *v;
    clef_gguf_writer        *w = clef_gguf_writer_new();
    clef_gguf               *g = clef_gguf_open(gguf_path("bf16"), 0, err);
    int64_t                  ne[4];
    size_t                   i;
    int                      rc = g == NULL;

    for (i = 0; rc == 0 && i < clef_gguf_kv_count(g); i++) {
        v = clef_gguf_kv_at(g, i);
        if (arch != NULL && strcmp(v->key, "general.architecture") == 0) {
            rc = clef_gguf_put_str(w, v->key, arch, strlen(arch), err);
        } else {
            rc = clef_gguf_put_value(w, v->key, v, err);
        }
    }
    if (rc == 0 && split > 1) {
        rc = clef_gguf_put_uint(w, "split.no", CLEF_GGUF_UINT16, 0, err)
             || clef_gguf_put_uint(w, "split.count", CLEF_GGUF_UINT16,
                                   (uint64_t) split, err)
             || clef_gguf_put_int(w, "split.tensors.count", CLEF_GGUF_INT32,
                                  (int64_t) clef_gguf_tensor_count(g), err);
    }
    for (i = 0; rc == 0 && i < clef_gguf_tensor_count(g); i++) {
        t = clef_gguf_tensor_at(g, i);
        if (drop != NULL
            && (strcmp(drop, "*") == 0 || strcmp(t->name, drop) == 0))
        {
            continue;
        }
        memcpy(ne, t->ne, sizeof(ne));
        if (swap != NULL && strcmp(t->name, swap) == 0) {
            ne[0] = t->ne[1];
            ne[1] = t->ne[0];
        }
        rc = clef_gguf_add_tensor(w, t->name, t->type, t->ndim, ne, t->data, err);
    }
    if (rc == 0) {
        rc = clef_gguf_writer_write(w, out, err);
    }
    clef_gguf_writer_free(w);
    clef_gguf_close(g);
    return rc;
}

static void
test_refusals(void)
{
    clef_gguf_clef  *m;
    clef_error       err;
    char             path[300];

    snprintf(path, sizeof(path), "%s/bad.gguf", dir);
    copy_fixture(path, "qwen35", NULL, NULL, 0, &err);
    m = clef_gguf_clef_open(path, NULL, CLEF_GGUF_HEADERS_ONLY, &err);
    CHECK(m == NULL && strcmp(err.type, "not_a_decision_model") == 0
          && err.status == 501 && err.code == CLEF_E_MODEL
          && strstr(err.message, "is a plain Qwen3.5 GGUF") != NULL
          && strstr(err.message, "convert the Clef release") != NULL,
          "a plain qwen35 GGUF is refused as not a decision model, saying what"
          " to do: %s", err.message);
    clef_gguf_clef_close(m);
    CHECK(sh("build/clef decide '%s' </dev/null >/dev/null 2>'%s/why'", path,
             dir) != 0
          && sh("grep -q 'is a plain Qwen3.5 GGUF.*no joint schema head.*"
                "convert the Clef release with a current llama.cpp' '%s/why'",
                dir) == 0,
          "clef decide refuses it with the same message");

    m = clef_gguf_clef_open(gguf_path("mmproj"), NULL, 0, &err);
    CHECK(m == NULL && strcmp(err.type, "not_a_decision_model") == 0
          && strstr(err.message, "is a vision projector (mmproj) file") != NULL,
          "an mmproj file given as the model: %s", err.message);
    clef_gguf_clef_close(m);

    m = clef_gguf_clef_open(gguf_path("bf16"), gguf_path("bf16"), 0, &err);
    CHECK(m == NULL && strstr(err.message, "is not a vision projector") != NULL,
          "a model given as the mmproj: %s", err.message);
    clef_gguf_clef_close(m);

    copy_fixture(path, NULL, "blk.0.ffn_up.weight", NULL, 0, &err);
    m = clef_gguf_clef_open(path, NULL, 0, &err);
    CHECK(m == NULL && strstr(err.message, "has no tensor 'blk.0.ffn_up.weight'"
                              " (the release's model.language_model.layers.0"
                              ".mlp.up_proj.weight)") != NULL,
          "a missing tensor is named: %s", err.message);
    clef_gguf_clef_close(m);

    copy_fixture(path, NULL, NULL, "dec.blk.1.ffn_down.weight", 0,
                 &err);
    m = clef_gguf_clef_open(path, NULL, 0, &err);
    CHECK(m == NULL && strstr(err.message, "tensor 'dec.blk.1.ffn_down.weight'"
                              " is [64, 32], the configuration implies [32, 64]"
                              " (the release's layers.0.linear2.weight)") != NULL,
          "a tensor of the wrong shape is named: %s", err.message);
    clef_gguf_clef_close(m);

    /* the first part of a split model (t/unit/test_gguf_split.c) under
     * another name: its other parts cannot be found */
    copy_fixture(path, NULL, NULL, NULL, 3, &err);
    m = clef_gguf_clef_open(path, NULL, CLEF_GGUF_HEADERS_ONLY, &err);
    CHECK(m == NULL && err.code == CLEF_E_MODEL
          && strstr(err.message, "is the first of 3 parts of a GGUF split by"
                    " llama-gguf-split, but not named as one"
                    " (PREFIX-00001-of-00003.gguf)") != NULL,
          "a first part renamed is refused as one, saying why: %s",
          err.message);
    clef_gguf_clef_close(m);
    CHECK(sh("build/clef decide '%s' </dev/null >/dev/null 2>'%s/why'", path,
             dir) != 0
          && sh("grep -q 'is the first of 3 parts of a GGUF split' '%s/why'",
                dir) == 0,
          "clef decide refuses it with the same message");

    /* and a vocabulary-only one: it was refused for lacking token_embd */
    copy_fixture(path, NULL, "*", NULL, 0, &err);
    m = clef_gguf_clef_open(path, NULL, CLEF_GGUF_HEADERS_ONLY, &err);
    CHECK(m == NULL && err.code == CLEF_E_MODEL
          && strstr(err.message, "holds no tensors (a vocabulary-only GGUF,"
                    " as convert_hf_to_gguf.py --vocab-only writes): give the"
                    " model's GGUF") != NULL,
          "a GGUF without tensors is refused as vocabulary-only: %s",
          err.message);
    clef_gguf_clef_close(m);
    unlink(path);

    m = clef_gguf_clef_open(gguf_path("q4_k_m"), NULL, CLEF_GGUF_HEADERS_ONLY,
                            &err);
    CHECK(m != NULL && clef_gguf_clef_vision_config(m) == NULL
          && clef_gguf_clef_at(m, 0)->t.data == NULL,
          "headers only and without an mmproj: no tower, no data");
    clef_gguf_clef_close(m);
}

int
main(void)
{
    clef_model  *rel;
    clef_error   err;
    json_t      *man;
    json_error_t jerr;
    char         path[700];

    snprintf(fix, sizeof(fix), "%s/gguf", check_fixtures());
    snprintf(dir, sizeof(dir), "/tmp/clef-test-gguf-clef-%ld", (long) getpid());
    CHECK_INT(sh("build/clef mkmodel --config '%s/models/gg1.json' --tokenizer"
                 " '%s/tokenizer/qwen3-trim' --seed 20 --out '%s' >/dev/null",
                 check_fixtures(), check_fixtures(), dir), 0,
              "mkmodel makes the checkpoint the fixtures were converted from");
    rel = clef_model_open(dir, 0, &err);
    CHECK(rel != NULL, "it opens: %s", rel ? "" : err.message);

    snprintf(path, sizeof(path), "%s/manifest.json", fix);
    man = json_load_file(path, 0, &jerr);
    CHECK(man != NULL, "the manifest loads");
    if (man != NULL) {
        test_manifest(man);
        test_mkmodel_gguf(man);
        json_decref(man);
    }
    if (rel != NULL) {
        test_tensors(rel, "f32", -1);
        test_tensors(rel, "f16", -1);
        test_tensors(rel, "bf16", -1);
        test_tensors(rel, "q8_0", 0.01);
        test_tensors(rel, "q6_k", 0.03);
        test_tensors(rel, "q5_k_m", 0.07);
        test_tensors(rel, "q4_k_m", 0.15);
        clef_model_close(rel);
    }
    test_tokenizer();
    test_refusals();
    sh("rm -rf '%s'", dir);
    return check_done();
}
