/*
 * Clef Omni from GGUF (`clef mkmodel --gguf TYPE --mmproj FILE` on an Omni
 * config, model/gguf_clef.h's clef-omni files):
 *
 *   - omni1 (t/fixtures/models/omni1.json, seed 21, the checkpoint of
 *     t/fixtures/e2e/omni1.jsonl) as F32 GGUF + mmproj against its release
 *     directory: the configs (text, vision with its DeepStack blocks,
 *     audio, Omni's ids) equal, every tensor of the release (thinker,
 *     every expert, tower, DeepStack mergers, audio tower, head) read back
 *     bit for bit, each expert a view of its slab of the layer's 3-D
 *     tensor (no copy); and `clef decide --raw` on every request of
 *     omni1.jsonl (text and images) prints the release's bytes; omni2
 *     (hidden and expert widths of 256: Q4_K and Q6_K blocks in the
 *     experts) likewise on the text requests;
 *   - Q8_0 and Q4_K_M files of omni1 and omni2, made again here and
 *     checked against the sha256 the reference ran on
 *     (t/fixtures/gguf/e2e-omni/manifest.json, t/reference/
 *     gen_omni_gguf_reference.py: transformers 5.10.2 and Cloudflare's
 *     Clef Omni model in fp32 on the files' dequantized weights): every
 *     request's probabilities within 1e-5 at precision fp32 with the
 *     reference's input_tokens and choice, within 5e-2 at precision q8
 *     (both maxima printed), q8 deterministic (--batch 16 and -t 1 print
 *     the same bytes);
 *   - omni2 in every other type (F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q6_K,
 *     Q5_K_M): text requests answered at fp32 and q8, within the type's
 *     error of the release's answers (F16, BF16: its own);
 *   - media from the F32 GGUF: every request of the end-to-end fixtures
 *     that carries media (images, 1-4 clips in every container, silent
 *     videos: e2e/omni1_audio.jsonl; videos with sound: vision/
 *     omni_avideos.jsonl), sent as a client sends it, prints the
 *     release's bytes: what the GGUF path gives the media (processor,
 *     feature extractor, Omni's ids and position_id_per_seconds) is what
 *     the release's files give them;
 *   - refusals: a plain qwen3vlmoe GGUF, a file without an expert tensor;
 *     a headers-only open maps nothing, through the model layer too.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "jsonl.h"
#include "shell.h"
#include "model/gguf.h"
#include "model/gguf_clef.h"
#include "model/gguf_write.h"
#include "model/model.h"
#include "model/roles.h"
#include "vision_cases.h"
#include "e2e_cases.h"

#define FP32_TOL  1e-5
#define Q8_TOL    5e-2

static char  root[1024];
static char  tmp[1024];

static const struct {
    const char  *name;
    int          seed;
    int          shards;
} ckpts[] = {
    { "omni1", 21, 2 },
    { "omni2", 22, 1 },
};

static int
mkmodel(const char *name, int seed, const char *out, const char *type,
    const char *mmproj)
{
    if (type == NULL) {
        return sh("'%s/build/clef' mkmodel --config '%s/%s/models/%s.json'"
                  " --tokenizer '%s/%s/tokenizer/qwen3-omni' --seed %d"
                  " --shards %d --out '%s' >/dev/null", root, root,
                  check_fixtures(), name, root, check_fixtures(), seed,
                  strcmp(name, "omni1") == 0 ? 2 : 1, out);
    }
    return sh("'%s/build/clef' mkmodel --config '%s/%s/models/%s.json'"
              " --tokenizer '%s/%s/tokenizer/qwen3-omni' --seed %d --gguf %s"
              " --out '%s' --mmproj '%s' >/dev/null", root, root,
              check_fixtures(), name, root, check_fixtures(), seed, type, out,
              mmproj);
}

/* ---- tensors ---------------------------------------------------------- */

typedef struct {
    const clef_model  *rel, *gg;
    int                head;
    size_t             n, bad, experts, views, scalars;
    const char        *prev_data;
    size_t             prev_bytes;
} cmp_ctx;

static int
cmp_tensor(const clef_tensor_spec *s, void *arg)
{
    cmp_ctx            *x = arg;
    const clef_tensor  *a, *b;
    float              *fa, *fb;
    int                 ok;

    a = x->head ? clef_model_head_tensor(x->rel, s->name)
                : clef_model_tensor(x->rel, s->name);
    b = x->head ? clef_model_head_tensor(x->gg, s->name)
                : clef_model_tensor(x->gg, s->name);
    ok = a != NULL && b != NULL && a->numel == b->numel
         && a->ndim == b->ndim
         && memcmp(a->shape, b->shape, sizeof(a->shape[0]) * a->ndim) == 0;
    if (ok) {
        fa = malloc(sizeof(float) * (size_t) a->numel + 4);
        fb = malloc(sizeof(float) * (size_t) a->numel + 4);
        clef_tensor_to_f32(a, fa);
        clef_tensor_to_f32(b, fb);
        ok = memcmp(fa, fb, sizeof(float) * (size_t) a->numel) == 0;
        if (!ok && a->numel == 1 && clef_role_of(s->role)->gguf_flags
                                    & CLEF_GGUF_SCALES)
        {
            /* stored as exp() or sigmoid() of it: back within an ulp or
             * two (gguf_clef.h) */
            ok = fabsf(fa[0] - fb[0]) <= 4e-7f * fabsf(fa[0]);
            x->scalars += ok;
        }
        free(fa);
        free(fb);
    }
    if (ok && s->expert >= 0) {
        /* expert e's slab follows expert e - 1's in the 3-D tensor */
        x->experts++;
        x->views += s->expert > 0 && b->nbytes == x->prev_bytes
                    && (const char *) b->data == x->prev_data + x->prev_bytes;
        x->prev_data = b->data;
        x->prev_bytes = b->nbytes;
    }
    if (!ok) {
        printf("#   %s differs\n", s->name);
        x->bad++;
    }
    x->n++;
    return 0;
}

static void
test_tensors(const char *what, const clef_model *rel, const clef_model *gg)
{
    const clef_text_config  *tc = clef_model_text_config(rel);
    const clef_text_config  *gc = clef_model_text_config(gg);
    const clef_vision_config  *rv = clef_model_vision_config(rel);
    const clef_vision_config  *gv = clef_model_vision_config(gg);
    const clef_audio_tower_config  *ra = clef_model_audio_config(rel);
    const clef_audio_tower_config  *ga = clef_model_audio_config(gg);
    cmp_ctx                  x;
    int                      l, same = 1;

    same &= clef_model_family(gg) == CLEF_FAMILY_OMNI;
    same &= tc->vocab_size == gc->vocab_size
            && tc->hidden_size == gc->hidden_size
            && tc->intermediate_size == gc->intermediate_size
            && tc->num_hidden_layers == gc->num_hidden_layers
            && tc->num_attention_heads == gc->num_attention_heads
            && tc->num_key_value_heads == gc->num_key_value_heads
            && tc->head_dim == gc->head_dim
            /* an f32 key, as llama.cpp writes it; the forward's float */
            && (float) tc->rms_norm_eps == (float) gc->rms_norm_eps
            && tc->rope_theta == gc->rope_theta
            && tc->partial_rotary_factor == gc->partial_rotary_factor
            && memcmp(tc->mrope_section, gc->mrope_section,
                      sizeof(tc->mrope_section)) == 0
            && tc->tie_word_embeddings == gc->tie_word_embeddings
            && tc->norm_plus_one == gc->norm_plus_one
            && tc->attn_output_gate == gc->attn_output_gate
            && tc->num_experts == gc->num_experts
            && tc->num_experts_per_tok == gc->num_experts_per_tok
            && tc->moe_intermediate_size == gc->moe_intermediate_size
            && tc->norm_topk_prob == gc->norm_topk_prob;
    for (l = 0; l < tc->num_hidden_layers; l++) {
        same &= tc->layer_full[l] == gc->layer_full[l]
                && tc->layer_moe[l] == gc->layer_moe[l];
    }
    CHECK(same, "%s: the text config of the release (%d experts, top %d,"
          " dense and routed layers alike)", what, gc->num_experts,
          gc->num_experts_per_tok);
    CHECK(rv != NULL && gv != NULL && rv->depth == gv->depth
          && rv->n_deepstack == gv->n_deepstack
          && memcmp(rv->deepstack, gv->deepstack, sizeof(rv->deepstack)) == 0
          && rv->image_token_id == gv->image_token_id
          && rv->video_token_id == gv->video_token_id
          && rv->out_hidden_size == gv->out_hidden_size
          && memcmp(rv->processor.mean, gv->processor.mean,
                    sizeof(rv->processor.mean)) == 0,
          "%s: the tower's config, its %d DeepStack blocks", what,
          gv != NULL ? gv->n_deepstack : -1);
    CHECK(ra != NULL && ga != NULL && memcmp(ra, ga, sizeof(*ra)) == 0
          && memcmp(clef_model_omni_config(rel), clef_model_omni_config(gg),
                    sizeof(clef_omni_config)) == 0,
          "%s: the audio tower's config and Omni's ids from the mmproj and"
          " the vocabulary", what);

    memset(&x, 0, sizeof(x));
    x.rel = rel;
    x.gg = gg;
    clef_text_tensors(tc, cmp_tensor, &x);
    clef_vision_tensors(rv, cmp_tensor, &x);
    clef_audio_tensors(ra, cmp_tensor, &x);
    x.head = 1;
    clef_head_tensors(clef_model_head_config(rel), cmp_tensor, &x);
    CHECK(x.bad == 0 && x.n > 100, "%s: all %zu tensors of the release read"
          " back bit for bit (%zu of the head's scalars within an ulp)",
          what, x.n, x.scalars);
    CHECK(x.experts > 0 && x.views == x.experts - x.experts / tc->num_experts,
          "%s: the %zu experts' matrices are views of their layers' 3-D"
          " tensors, slab after slab", what, x.experts);
}

/* ---- answers ---------------------------------------------------------- */

/* `clef decide --raw` on the cases (a run per max_length and truncation):
 * responses in case order, the output bytes returned. */
static char *
decide(const char *model, const char *mmproj, json_t *cases,
    const char *extra, json_t *responses)
{
    char         in[1200], out[1200], flags[80], *text = NULL, *p;
    size_t       i, j, n, have = 0, idx[256], len;
    json_t      *c, *d, *lines;
    FILE        *f;
    int          ok = 1, ml;
    const char  *tr;

    snprintf(in, sizeof(in), "%s/in.jsonl", tmp);
    snprintf(out, sizeof(out), "%s/out.jsonl", tmp);
    json_array_clear(responses);
    json_array_foreach(cases, i, c) {
        json_array_append_new(responses, json_null());
    }
    json_array_foreach(cases, i, c) {
        if (!json_is_null(json_array_get(responses, i))) {
            continue;
        }
        ml = (int) json_integer_value(json_object_get(c, "max_length"));
        tr = json_string_value(json_object_get(c, "truncate"));
        f = fopen(in, "w");
        for (j = i, n = 0; f != NULL && j < json_array_size(cases) && n < 256;
             j++)
        {
            d = json_array_get(cases, j);
            if (json_integer_value(json_object_get(d, "max_length")) == ml
                && strcmp(json_string_value(json_object_get(d, "truncate")),
                          tr) == 0)
            {
                fprintf(f, "%s\n", json_string_value(json_object_get(d,
                                                                  "body")));
                json_array_set_new(responses, j, json_true());
                idx[n++] = j;
            }
        }
        if (f != NULL) {
            fclose(f);
        }
        snprintf(flags, sizeof(flags), "--max-length %d%s", ml,
                 strcmp(tr, "state") == 0 ? " --truncate-state" : "");
        ok &= sh("'%s/build/clef' decide '%s' %s%s%s --raw %s %s < '%s'"
                 " > '%s'", root, model, mmproj ? "--mmproj '" : "",
                 mmproj ? mmproj : "", mmproj ? "'" : "", flags, extra, in,
                 out) == 0;
        lines = read_jsonl(out);
        ok &= json_array_size(lines) == n;
        for (j = 0; j < n; j++) {
            json_array_set(responses, idx[j], json_array_get(lines, j));
        }
        json_decref(lines);
        f = fopen(out, "rb");
        while (f != NULL && !feof(f)) {
            p = realloc(text, have + 65536 + 1);
            if (p == NULL) {
                break;
            }
            text = p;
            len = fread(text + have, 1, 65536, f);
            have += len;
            text[have] = '\0';
            if (len == 0) {
                break;
            }
        }
        if (f != NULL) {
            fclose(f);
        }
    }
    CHECK(ok, "clef decide %s %s: a response per request", model, extra);
    return text;
}

/* The largest |probability - reference| over the cases; *argmax: the
 * cases whose choice differs, *tokens: whose input_tokens differ. */
static double
worst(json_t *cases, json_t *responses, size_t *nq, size_t *argmax,
    size_t *tokens)
{
    json_t  *c, *q, *r, *a, *p, *w;
    size_t   i, j, k, best_r, best_w;
    double   d, m = 0.0;

    *nq = *argmax = *tokens = 0;
    json_array_foreach(cases, i, c) {
        r = json_array_get(responses, i);
        if (json_integer_value(json_object_get(json_object_get(r, "usage"),
                                               "input_tokens"))
            != json_integer_value(json_object_get(c, "input_tokens")))
        {
            (*tokens)++;
        }
        json_array_foreach(json_object_get(c, "questions"), j, q) {
            a = json_object_get(json_object_get(json_object_get(r, "answers"),
                                json_string_value(json_object_get(q, "id"))),
                                "raw");
            p = json_object_get(a, "probabilities");
            w = json_object_get(q, "probabilities");
            if (json_array_size(p) != json_array_size(w) || p == NULL) {
                return 1.0;
            }
            best_r = best_w = 0;
            for (k = 0; k < json_array_size(p); k++) {
                d = fabs(json_number_value(json_array_get(p, k))
                         - json_number_value(json_array_get(w, k)));
                m = d > m ? d : m;
                if (json_number_value(json_array_get(p, k))
                    > json_number_value(json_array_get(p, best_r)))
                {
                    best_r = k;
                }
                if (json_number_value(json_array_get(w, k))
                    > json_number_value(json_array_get(w, best_w)))
                {
                    best_w = k;
                }
            }
            *argmax += best_r != best_w;
            (*nq)++;
        }
    }
    return m;
}

static void
test_reference(const char *key, json_t *mv, double *max_fp32, double *max_q8)
{
    const char  *cfg = json_string_value(json_object_get(mv, "config"));
    const char  *type = json_string_value(json_object_get(mv, "type"));
    char         name[64], model[1200], mmproj[1200], ref[1200];
    char        *q8, *again;
    json_t      *cases, *resp, *other;
    double       d;
    size_t       nq, am, tk;

    snprintf(name, sizeof(name), "%.*s",
             (int) (strrchr(cfg, '.') - strrchr(cfg, '/') - 1),
             strrchr(cfg, '/') + 1);
    snprintf(model, sizeof(model), "%s/%s.gguf", tmp, key);
    snprintf(mmproj, sizeof(mmproj), "%s/%s.mmproj.gguf", tmp, key);
    CHECK_INT(mkmodel(name, (int) json_integer_value(json_object_get(mv,
                      "seed")), model, type, mmproj), 0,
              "%s: mkmodel --gguf %s", key, type);
    CHECK_INT(sh("echo '%s  %s' | sha256sum --quiet -c - && echo '%s  %s'"
                 " | sha256sum --quiet -c -",
                 json_string_value(json_object_get(mv, "gguf_sha256")), model,
                 json_string_value(json_object_get(mv, "mmproj_sha256")),
                 mmproj), 0,
              "%s: the files the reference ran on, byte for byte", key);

    snprintf(ref, sizeof(ref), "%s/gguf/e2e-omni/%s.jsonl", check_fixtures(),
             key);
    cases = read_jsonl(ref);
    CHECK_INT(json_array_size(cases),
              json_integer_value(json_object_get(mv, "cases")),
              "%s: %zu reference cases", key, json_array_size(cases));
    resp = json_array();
    free(decide(model, mmproj, cases, "--precision fp32", resp));
    d = worst(cases, resp, &nq, &am, &tk);
    *max_fp32 = d > *max_fp32 ? d : *max_fp32;
    printf("# %s fp32: max |probability - reference| %.3g over %zu"
           " questions\n", key, d, nq);
    CHECK(d <= FP32_TOL && am == 0 && tk == 0 && nq > 20,
          "%s --precision fp32: within %g of the reference on the"
          " dequantized weights (%.3g), its input_tokens and choices", key,
          FP32_TOL, d);

    q8 = decide(model, mmproj, cases, "--precision q8", resp);
    d = worst(cases, resp, &nq, &am, &tk);
    *max_q8 = d > *max_q8 ? d : *max_q8;
    printf("# %s q8: max |probability - reference| %.3g over %zu questions,"
           " %zu other choices\n", key, d, nq, am);
    CHECK(d <= Q8_TOL && tk == 0, "%s --precision q8: within %g of the"
          " reference (%.3g)", key, Q8_TOL, d);
    other = json_array();
    again = decide(model, mmproj, cases, "--precision q8 --batch 16 -t 1",
                   other);
    CHECK(q8 != NULL && again != NULL && strcmp(q8, again) == 0,
          "%s --precision q8: the same bytes with --batch 16 -t 1", key);
    free(again);
    free(q8);
    json_decref(other);
    json_decref(resp);
    json_decref(cases);
    sh("rm -f '%s' '%s'", model, mmproj);
}

/* ---- media from the F32 GGUF ------------------------------------------- */

/* The media requests of the fixture file t/fixtures/REL (those with
 * images, audio or videos) appended to cases as decide() takes them. */
static void
media_cases(const char *rel, json_t *cases)
{
    json_t  *all = e2e_cases(rel), *c, *body, *d;
    char    *text;
    size_t   i;

    json_array_foreach(all, i, c) {
        body = json_object_get(c, "body");
        if (json_object_get(body, "images") == NULL
            && json_object_get(body, "audio") == NULL
            && json_object_get(body, "videos") == NULL)
        {
            continue;
        }
        text = body_of(c);
        d = json_pack("{s:s, s:i, s:s}", "body", text, "max_length", 64000,
                      "truncate", "reject");
        json_array_append_new(cases, d);
        free(text);
    }
    json_decref(all);
}


static void
test_media(const char *rel, const char *gg, const char *mm)
{
    json_t  *cases = json_array(), *ra = json_array(), *rb = json_array();
    char    *a, *b;
    size_t   n;

    media_cases("e2e/omni1_audio.jsonl", cases);
    n = json_array_size(cases);
    media_cases("vision/omni_avideos.jsonl", cases);
    CHECK(n >= 25 && json_array_size(cases) >= n + 10, "%zu requests with "
          "clips and silent videos, %zu with videos with sound", n,
          json_array_size(cases) - n);
    a = decide(rel, NULL, cases, "-t 2", ra);
    b = decide(gg, mm, cases, "-t 2", rb);
    CHECK(a != NULL && b != NULL && strcmp(a, b) == 0
          && strstr(a, "\"error\"") == NULL,
          "omni1 f32: clef decide --raw --mmproj on %zu media requests prints "
          "the release's bytes, every one answered",
          json_array_size(cases));
    free(a);
    free(b);
    json_decref(cases);
    json_decref(ra);
    json_decref(rb);
}


/* ---- release against F32 GGUF ----------------------------------------- */

static void
test_f32(int k, json_t *cases)
{
    char         rel[1200], gg[1200], mm[1200], what[64];
    char        *a, *b;
    clef_model  *mr, *mg;
    clef_error   err;
    json_t      *ra = json_array(), *rb = json_array(), *text;
    size_t       i;
    json_t      *c;

    snprintf(what, sizeof(what), "%s f32", ckpts[k].name);
    snprintf(rel, sizeof(rel), "%s/%s", tmp, ckpts[k].name);
    snprintf(gg, sizeof(gg), "%s/%s.f32.gguf", tmp, ckpts[k].name);
    snprintf(mm, sizeof(mm), "%s/%s.mmproj.f32.gguf", tmp, ckpts[k].name);
    CHECK_INT(mkmodel(ckpts[k].name, ckpts[k].seed, rel, NULL, NULL), 0,
              "%s: the release", ckpts[k].name);
    CHECK_INT(mkmodel(ckpts[k].name, ckpts[k].seed, gg, "f32", mm), 0,
              "%s: mkmodel --gguf f32 --mmproj", ckpts[k].name);
    mr = clef_model_open(rel, 0, &err);
    CHECK(mr != NULL, "%s: the release opens: %s", what,
          mr ? "" : err.message);
    mg = clef_model_open_files(gg, mm, 0, &err);
    CHECK(mg != NULL, "%s: the GGUF opens with its mmproj: %s", what,
          mg ? "" : err.message);
    if (mr != NULL && mg != NULL) {
        test_tensors(what, mr, mg);
    }
    clef_model_close(mr);
    clef_model_close(mg);

    /* omni2 on the text requests only (its tower is omni1's at depth 3) */
    text = json_array();
    json_array_foreach(cases, i, c) {
        if (k == 0 || strstr(json_string_value(json_object_get(c, "body")),
                             "\"images\"") == NULL)
        {
            json_array_append(text, c);
        }
    }
    a = decide(rel, NULL, text, "-t 2", ra);
    b = decide(gg, mm, text, "-t 2", rb);
    CHECK(a != NULL && b != NULL && strcmp(a, b) == 0 && strlen(a) > 1000,
          "%s: clef decide --raw on %zu requests prints the release's bytes",
          what, json_array_size(text));
    free(a);
    free(b);
    json_decref(text);
    json_decref(ra);
    json_decref(rb);
    if (k == 0) {
        test_media(rel, gg, mm);
    }
    sh("rm -rf '%s' '%s' '%s'", rel, gg, mm);
}

/* ---- every other type ------------------------------------------------- */

/* The largest |probability| difference between two runs' responses. */
static double
apart(json_t *a, json_t *b, size_t *n)
{
    json_t      *ra, *qa, *pb;
    const char  *id;
    size_t       i, k;
    double       d, m = 0.0;

    *n = 0;
    json_array_foreach(a, i, ra) {
        json_object_foreach(json_object_get(ra, "answers"), id, qa) {
            pb = json_object_get(json_object_get(json_object_get(
                     json_object_get(json_array_get(b, i), "answers"), id),
                     "raw"), "probabilities");
            qa = json_object_get(json_object_get(qa, "raw"), "probabilities");
            if (qa == NULL || json_array_size(qa) != json_array_size(pb)) {
                return 1.0;
            }
            for (k = 0; k < json_array_size(qa); k++) {
                d = fabs(json_number_value(json_array_get(qa, k))
                         - json_number_value(json_array_get(pb, k)));
                m = d > m ? d : m;
            }
            (*n)++;
        }
    }
    return m;
}

/* omni2 in the types without a reference run: every text request answered
 * at fp32 and q8, within the type's quantization error of the release's
 * answers (bf16 weights; measured at most 0.041, Q4_0) and q8 within its
 * bound of fp32 on the same file; F16 and BF16 as the release. */
static void
test_types(json_t *cases)
{
    static const char  *types[] = { "f16", "bf16", "q4_0", "q4_1", "q5_0",
                                    "q5_1", "q6_k", "q5_k_m" };
    char                rel[1200], gg[1200], mm[1200];
    json_t             *text = json_array(), *r0 = json_array(), *c;
    json_t             *rf = json_array(), *rq = json_array();
    double              df, dq, dfq;
    size_t              i, k, n, nq;

    json_array_foreach(cases, i, c) {
        if (json_array_size(text) < 6
            && strstr(json_string_value(json_object_get(c, "body")),
                      "\"images\"") == NULL)
        {
            json_array_append(text, c);
        }
    }
    snprintf(rel, sizeof(rel), "%s/omni2.types", tmp);
    snprintf(gg, sizeof(gg), "%s/omni2.type.gguf", tmp);
    snprintf(mm, sizeof(mm), "%s/omni2.type.mmproj.gguf", tmp);
    CHECK_INT(mkmodel("omni2", 22, rel, NULL, NULL), 0, "omni2: the release");
    free(decide(rel, NULL, text, "", r0));
    for (k = 0; k < sizeof(types) / sizeof(types[0]); k++) {
        CHECK_INT(mkmodel("omni2", 22, gg, types[k], mm), 0,
                  "omni2: mkmodel --gguf %s", types[k]);
        free(decide(gg, mm, text, "--precision fp32", rf));
        free(decide(gg, mm, text, "--precision q8", rq));
        df = apart(r0, rf, &n);
        dq = apart(r0, rq, &nq);
        dfq = apart(rf, rq, &nq);
        printf("# omni2 %s: max |probability - the release's| fp32 %.3g,"
               " q8 %.3g (q8 - fp32 %.3g) over %zu questions\n", types[k],
               df, dq, dfq, n);
        CHECK(n >= 6 && nq == n && df <= (k < 2 ? 1e-6 : 0.1)
              && dq <= (k < 2 ? 1e-6 : 0.1) && dfq <= Q8_TOL,
              "omni2 %s: every request answered at fp32 and q8, within the"
              " type's error of the release's answers (%.3g, %.3g)",
              types[k], df, dq);
    }
    sh("rm -rf '%s' '%s' '%s'", rel, gg, mm);
    json_decref(text);
    json_decref(r0);
    json_decref(rf);
    json_decref(rq);
}

/* ---- refusals --------------------------------------------------------- */

/* A copy of src with general.architecture arch (NULL: kept), without
 * tensor drop. */
static int
copy_gguf(const char *src, const char *out, const char *arch,
    const char *drop, clef_error *err)
{
    const clef_gguf_tensor  *t;
    const clef_gguf_value   *v;
    clef_gguf_writer        *w = clef_gguf_writer_new();
    clef_gguf               *g = clef_gguf_open(src, 0, err);
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
    for (i = 0; rc == 0 && i < clef_gguf_tensor_count(g); i++) {
        t = clef_gguf_tensor_at(g, i);
        if (drop == NULL || strcmp(t->name, drop) != 0) {
            rc = clef_gguf_add_tensor(w, t->name, t->type, t->ndim, t->ne,
                                      t->data, err);
        }
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
    char             gg[1200], mm[1200], bad[1200], wt[32] = "";
    clef_gguf_clef  *m;
    clef_model      *mdl;
    clef_error       err;

    snprintf(gg, sizeof(gg), "%s/r.gguf", tmp);
    snprintf(mm, sizeof(mm), "%s/r.mmproj.gguf", tmp);
    snprintf(bad, sizeof(bad), "%s/bad.gguf", tmp);
    CHECK_INT(mkmodel("omni1", 21, gg, "q8_0", mm), 0, "omni1 q8_0");

    m = clef_gguf_clef_open(gg, mm, CLEF_GGUF_HEADERS_ONLY, &err);
    CHECK(m != NULL && clef_gguf_clef_family(m) == CLEF_FAMILY_OMNI
          && clef_gguf_clef_audio_config(m) != NULL
          && clef_gguf_clef_at(m, 0)->t.data == NULL,
          "headers only: Clef Omni with its audio tower, no data: %s",
          m ? "" : err.message);
    clef_gguf_clef_close(m);

    /* nginx -t's open: headers only, through the model layer */
    mdl = clef_model_open_files(gg, mm, CLEF_MODEL_HEADERS_ONLY, &err);
    if (mdl != NULL) {
        clef_model_weights(mdl, wt, sizeof(wt));
    }
    CHECK(mdl != NULL && clef_model_family(mdl) == CLEF_FAMILY_OMNI
          && strcmp(wt, "Q8_0") == 0
          && clef_model_audio_config(mdl) != NULL
          && clef_model_vision_config(mdl)->n_deepstack == 3,
          "a headers-only model open (nginx -t): Clef Omni, weights %s,"
          " vision and audio towers: %s", wt, mdl ? "" : err.message);
    clef_model_close(mdl);

    copy_gguf(gg, bad, "qwen3vlmoe", NULL, &err);
    m = clef_gguf_clef_open(bad, NULL, 0, &err);
    CHECK(m == NULL && strcmp(err.type, "not_a_decision_model") == 0
          && err.status == 501
          && strstr(err.message, "plain Qwen3-Omni / Qwen3-VL-MoE") != NULL,
          "a plain qwen3vlmoe GGUF is refused as not a decision model: %s",
          err.message);
    clef_gguf_clef_close(m);

    copy_gguf(gg, bad, NULL, "blk.1.ffn_up_exps.weight", &err);
    m = clef_gguf_clef_open(bad, NULL, 0, &err);
    CHECK(m == NULL && strstr(err.message, "has no tensor"
                              " 'blk.1.ffn_up_exps.weight' (the release's"
                              " model.language_model.layers.1.mlp.experts.0"
                              ".up_proj.weight)") != NULL,
          "a missing expert tensor is named: %s", err.message);
    clef_gguf_clef_close(m);
    sh("rm -f '%s' '%s' '%s'", gg, mm, bad);
}

int
main(void)
{
    json_t       *man, *mv, *cases;
    json_error_t  jerr;
    const char   *key;
    char          path[1200];
    double        max_fp32 = 0.0, max_q8 = 0.0;
    size_t        k;

    if (getcwd(root, sizeof(root)) == NULL) {
        CHECK(0, "getcwd");
        return check_done();
    }
    use_build_decoder();
    snprintf(tmp, sizeof(tmp), "/tmp/clef-gguf-omni-XXXXXX");
    if (mkdtemp(tmp) == NULL) {
        CHECK(0, "mkdtemp");
        return check_done();
    }
    snprintf(path, sizeof(path), "%s/e2e/omni1.jsonl", check_fixtures());
    cases = read_jsonl(path);
    CHECK(json_array_size(cases) > 30, "omni1.jsonl: %zu requests",
          json_array_size(cases));
    for (k = 0; k < sizeof(ckpts) / sizeof(ckpts[0]); k++) {
        test_f32((int) k, cases);
    }
    test_types(cases);
    json_decref(cases);

    snprintf(path, sizeof(path), "%s/gguf/e2e-omni/manifest.json",
             check_fixtures());
    man = json_load_file(path, 0, &jerr);
    CHECK(man != NULL && json_object_size(json_object_get(man, "models")) == 4,
          "read %s: omni1 and omni2, Q8_0 and Q4_K_M", path);
    json_object_foreach(json_object_get(man, "models"), key, mv) {
        test_reference(key, mv, &max_fp32, &max_q8);
    }
    json_decref(man);
    printf("# Omni GGUF: max |probability - reference| fp32 %.3g, q8 %.3g\n",
           max_fp32, max_q8);
    test_refusals();
    sh("rm -rf '%s'", tmp);
    return check_done();
}
