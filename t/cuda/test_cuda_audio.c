/*
 * Clef Omni's audio tower on the CUDA backend (cuda/audio*.c,
 * cuda/audio_kernels.cu), against the CPU tower (engine/cpu/model/audio.c),
 * which is exact against transformers 5.10.2 (t/unit/test_audio_tower.c).
 *
 *   akernels    on random bf16-valued inputs, chunks of three paddings:
 *               aconv1 against the CPU's first convolution + bias + GELU
 *               (1e-2, bf16 out), aim2col exactly (a copy) over each
 *               chunk's own width; aflatten and apos exactly
 *   audio_omni1 the checkpoint of the CPU test (t/fixtures/models/
 *               omni1.json) and the records of t/fixtures/audio, fed the
 *               reference's log-mel features:
 *               - the tower's rows within FEAT_TOL (max error over max
 *                 |ref|) of the CPU tower's, per record;
 *               - probabilities within PROB_TOL (2e-2, the backend's bf16
 *                 contract) of the CPU backend's and the reference's, the
 *                 same argmax on every question decided by more than
 *                 DECIDED_MARGIN;
 *               - every record packed into one forward: each record's
 *                 logits alone, bit for bit; a batch with clips three
 *                 times: the same bits, no CUDA graph captured
 *
 *   test_cuda_audio [--list] [NAME...]
 *
 * Without a device: "1..0 # SKIP no CUDA device: <reason>".
 */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/audio_layout.h"
#include "clef_cuda.h"
#include "cpu/model/audio.h"
#include "cpu/ops/audio_ops.h"
#include "cpu/ops/vision_ops.h"
#include "cpu/parallel/pool.h"
#include "cuda_test.h"
#include "kernels.h"
#include "model/model.h"
#include "vision_cases.h"
#include "audio_cases.h"

/* bf16 GEMM inputs and outputs through three convolutions, two layers
 * and two projections against the fp32 CPU tower, on random weights */
#define FEAT_TOL   5e-2
#define MAX_RECS   32
#define MAX_CLIPS  4

static clef_cpu_pool  *pool;

/* ---- kernels --------------------------------------------------------------- */

static void
test_akernels(void)
{
    enum { NC = 3, MELS = 20, W0 = 100, C = 16 };
    static const int32_t  cw[NC] = { 100, 73, 9 };
    static const int      frames[NC] = { 100, 50, 9 };
    const int    h1 = CLEF_AUDIO_HALF(MELS), w1 = CLEF_AUDIO_HALF(W0);
    const int    h2 = CLEF_AUDIO_HALF(h1), w2 = CLEF_AUDIO_HALF(w1);
    float       *feat, *w, *b, *want, *got, *cols, *x, *wcols;
    void        *feat_d, *w_d, *b_d, *cw_d, *out_d, *cols_d;
    double       e = 0, d;
    int          ch, i, t, ok;
    size_t       n1 = (size_t) h1 * w1 * C, nc2 = (size_t) h2 * w2 * 9 * C;

    feat = calloc((size_t) NC * MELS * W0, sizeof(float));
    w = malloc(sizeof(float) * C * 9);
    b = malloc(sizeof(float) * C);
    want = calloc(n1 * NC, sizeof(float));
    /* each chunk's frames, zeros after (as audio.c stages them) */
    for (ch = 0; ch < NC; ch++) {
        for (i = 0; i < MELS; i++) {
            for (t = 0; t < frames[ch]; t++) {
                feat[((size_t) ch * MELS + i) * W0 + t] = rnd_bf(2.0f);
            }
        }
    }
    fill_bf(w, C * 9, 0.5f);
    fill_bf(b, C, 0.2f);
    for (ch = 0; ch < NC; ch++) {
        /* the CPU's: the chunk over its own width, bias and GELU */
        clef_cpu_audio_conv1(pool, feat + (size_t) ch * MELS * W0, W0, 0,
                             frames[ch], MELS, cw[ch], w, C,
                             want + n1 * ch);
        /* its rows are [h1][half(cw)][C]: spread to the widest's layout */
        {
            int     wc = CLEF_AUDIO_HALF(cw[ch]), r, c;
            float  *tmp = malloc(sizeof(float) * (size_t) h1 * wc * C);

            memcpy(tmp, want + n1 * ch, sizeof(float) * (size_t) h1 * wc * C);
            clef_cpu_bias_gelu(pool, tmp, C, (int64_t) h1 * wc, C, b, 0);
            for (r = 0; r < h1; r++) {
                for (t = 0; t < w1; t++) {
                    for (c = 0; c < C; c++) {
                        want[n1 * ch + ((size_t) r * w1 + t) * C + c]
                            = t < wc ? tmp[((size_t) r * wc + t) * C + c] : 0;
                    }
                }
            }
            free(tmp);
        }
    }
    feat_d = up_f32(feat, (size_t) NC * MELS * W0);
    w_d = up_f32(w, C * 9);
    b_d = up_f32(b, C);
    cw_d = up_i32(cw, NC);
    out_d = dev_poison(n1 * NC, 2);
    die_cuda(clef_k_aconv1(feat_d, cw_d, w_d, b_d, out_d, NC, MELS, W0, C, 0),
             "aconv1");
    got = down_bf(out_d, n1 * NC);
    e = max_rel(got, n1 * NC, want, n1 * NC, 1, n1 * NC);
    CHECK(e <= 1e-2, "aconv1: 3 chunks padded to 100, 73 and 9 frames: "
          "within 1e-2 of the CPU's (%.3g)", e);

    /* im2col of the device's own conv1 output, level 1: the CPU's over
     * each chunk's valid width (a copy: exact) */
    x = got;
    cols_d = dev_poison(nc2 * NC, 2);
    die_cuda(clef_k_aim2col(out_d, cw_d, 1, NC, h1, w1, C, cols_d, 0),
             "aim2col");
    cols = down_bf(cols_d, nc2 * NC);
    ok = 1;
    for (ch = 0; ch < NC; ch++) {
        int     wv = CLEF_AUDIO_HALF(cw[ch]), r, c, wo = CLEF_AUDIO_HALF(wv);
        float  *xs = malloc(sizeof(float) * (size_t) h1 * wv * C);

        for (r = 0; r < h1; r++) {
            for (t = 0; t < wv; t++) {
                for (c = 0; c < C; c++) {
                    xs[((size_t) r * wv + t) * C + c]
                        = x[n1 * ch + ((size_t) r * w1 + t) * C + c];
                }
            }
        }
        wcols = malloc(sizeof(float) * (size_t) h2 * wo * 9 * C + 4);
        clef_cpu_audio_im2col(pool, xs, h1, wv, C, wcols);
        for (r = 0; r < h2; r++) {
            for (t = 0; t < w2; t++) {
                for (i = 0; i < 9 * C; i++) {
                    /* past the chunk's output width: rows no later
                     * stage reads */
                    if (t < wo) {
                        d = cols[nc2 * ch + ((size_t) r * w2 + t) * 9 * C + i];
                        ok &= d == wcols[((size_t) r * wo + t) * 9 * C + i];
                    }
                }
            }
        }
        free(xs);
        free(wcols);
    }
    CHECK(ok, "aim2col: each chunk's columns over its own width exactly");

    /* flatten and positions: rows of chunks 1 and 2 of act [nc][F][w][C] */
    {
        enum { F = 4, W3 = 13, P = 9, D = 24 };
        float    *act = malloc(sizeof(float) * NC * F * W3 * C);
        float    *pos = malloc(sizeof(float) * 13 * D);
        float    *y = malloc(sizeof(float) * P * D), *fl, *xs2;
        int32_t   rm[2 * P];
        void     *act_d, *rm_d, *fl_d, *pos_d, *y_d, *xx_d;
        int       r, c, f;

        fill_bf(act, NC * F * W3 * C, 1.0f);
        fill_bf(y, P * D, 1.0f);
        clef_audio_positions(D, 13, pos);
        for (r = 0; r < P; r++) {
            rm[2 * r] = r < 4 ? 1 : 2;
            rm[2 * r + 1] = r < 4 ? r : r - 4;
        }
        act_d = up_bf(act + F * W3 * C, (size_t) (NC - 1) * F * W3 * C);
        rm_d = up_i32(rm, 2 * P);
        fl_d = dev_poison((size_t) P * C * F, 2);
        die_cuda(clef_k_aflatten(act_d, rm_d, P, 1, F, W3, C, fl_d, 0),
                 "aflatten");
        fl = down_bf(fl_d, (size_t) P * C * F);
        ok = 1;
        for (r = 0; r < P; r++) {
            for (c = 0; c < C; c++) {
                for (f = 0; f < F; f++) {
                    ok &= fl[(size_t) r * C * F + c * F + f]
                          == act[(((size_t) rm[2 * r] * F + f) * W3
                                  + rm[2 * r + 1]) * C + c];
                }
            }
        }
        CHECK(ok, "aflatten: (channel, mel) rows of the kept steps exactly");
        pos_d = up_f32(pos, 13 * D);
        y_d = up_bf(y, P * D);
        xx_d = dev_poison((size_t) P * D, 4);
        die_cuda(clef_k_apos(y_d, pos_d, rm_d, xx_d, P, D, 0), "apos");
        xs2 = down_f32(xx_d, (size_t) P * D);
        ok = 1;
        for (r = 0; r < P; r++) {
            for (i = 0; i < D; i++) {
                ok &= xs2[r * D + i]
                      == y[r * D + i] + pos[rm[2 * r + 1] * D + i];
            }
        }
        CHECK(ok, "apos: + the step's sinusoid, exactly");
        cudaFree(act_d);
        cudaFree(rm_d);
        cudaFree(fl_d);
        cudaFree(pos_d);
        cudaFree(y_d);
        cudaFree(xx_d);
        free(act);
        free(pos);
        free(y);
        free(fl);
        free(xs2);
    }
    cudaFree(feat_d);
    cudaFree(w_d);
    cudaFree(b_d);
    cudaFree(cw_d);
    cudaFree(out_d);
    cudaFree(cols_d);
    free(feat);
    free(w);
    free(b);
    free(want);
    free(got);
    free(cols);
}

/* ---- the tower and the forward --------------------------------------------- */

static int
run_batch(const clef_backend_ops *ops, clef_backend *be,
    const clef_record *const *recs, int n, float *lg)
{
    return forward(ops, be, recs, n, lg);
}

static void
test_audio_omni1(void)
{
    const clef_backend_ops  *cpu;
    clef_backend            *cb = NULL, *gb = NULL;
    clef_backend_opts        bo;
    clef_cpu_audio          *tower = NULL;
    clef_model              *m = NULL;
    clef_error               err;
    clef_record              recs[MAX_RECS];
    const clef_record       *ptrs[MAX_RECS];
    json_t                  *cases = json_array(), *c;
    char                     dir[] = "/tmp/clef-cuda-audio-XXXXXX";
    char                     path[2048], *line = NULL;
    size_t                   cap = 0;
    FILE                    *f;
    float                   *lc[MAX_RECS], *lg[MAX_RECS], *packed, pc[512];
    float                    pg[512], *fc, *fg;
    double                   worst_feat = 0, worst_cpu = 0, worst_ref = 0, d;
    long                     replays, captures, caps0;
    int                      n = 0, i, k, o, q, ok, off, total = 0, same = 1;
    int                      decided = 0, kept = 0, kq, hidden;

    memset(&err, 0, sizeof(err));
    if (mkdtemp(dir) == NULL) {
        CHECK(0, "temporary directory");
        return;
    }
    CHECK_INT(sh("build/clef mkmodel --config %s/models/omni1.json "
                 "--tokenizer %s/tokenizer/qwen3-omni --seed 21 --shards 2 "
                 "--out %s/m > /dev/null", check_fixtures(), check_fixtures(),
                 dir), 0, "mkmodel omni1");
    snprintf(path, sizeof(path), "%s/m", dir);
    m = clef_model_open(path, 0, &err);
    cpu = clef_backend_find("cpu", &err);
    memset(&bo, 0, sizeof(bo));
    ok = m != NULL && cpu != NULL && cpu->open(m, &bo, &cb, &err) == 0
         && clef_cuda_backend_ops.open(m, &bo, &gb, &err) == 0
         && clef_cpu_audio_open(m, pool, &tower, &err) == 0 && tower != NULL;
    CHECK(ok, "omni1 opens on the CPU and the CUDA backend, with its audio "
          "tower (%s)", ok ? "" : err.message);
    if (!ok) {
        goto done;
    }
    hidden = clef_model_text_config(m)->hidden_size;

    snprintf(path, sizeof(path), "%s/audio/omni1.jsonl", check_fixtures());
    f = fopen(path, "r");
    while (f != NULL && getline(&line, &cap, f) > 0) {
        json_array_append_new(cases, json_loads(line, 0, NULL));
    }
    if (f != NULL) {
        fclose(f);
    }
    free(line);

    json_array_foreach(cases, i, c) {
        const char             *name = json_string_value(json_object_get(c,
                                                                     "name"));
        const clef_media_item  *items[MAX_CLIPS];
        clef_media_item         clips[MAX_CLIPS];
        clef_batch              batch;
        int32_t                 cu[2];
        int64_t                 T = 0;
        int                     nc, first, qo = 0;

        if (n >= MAX_RECS) {
            break;
        }
        nc = clip_items(c, clips);
        if (nc < 1 || nc > MAX_CLIPS
            || encode_case_audio(m, c, clips, nc, &recs[n]) != 0)
        {
            CHECK(0, "%s: encoded", name);
            continue;
        }
        first = recs[n].n_media - nc;
        for (k = 0; k < nc; k++) {
            items[k] = &recs[n].media[first + k];
            T += items[k]->tokens;
        }

        /* the towers alone */
        fc = malloc(sizeof(float) * (size_t) (T * hidden + 1));
        fg = malloc(sizeof(float) * (size_t) (T * hidden + 1));
        clef_batch_init(&batch, (const clef_record *const []) { &recs[n] },
                        1, cu);
        {
            int32_t  g[MAX_CLIPS] = { 0 };

            ok = clef_cpu_audio_forward(tower, items, g, nc, fc, &err) == 0
                 && clef_batch_set_media(&batch, &err) == 0
                 && clef_cuda_audio_features(gb, &batch, fg, &err) == 0;
        }
        clef_batch_free_media(&batch);
        d = ok ? max_rel(fg, hidden, fc, hidden, (size_t) T, hidden) : 1;
        worst_feat = d > worst_feat ? d : worst_feat;
        CHECK(ok && d <= FEAT_TOL, "%s: %d clips, %lld rows within %g of the "
              "CPU tower's (%.3g)", name, nc, (long long) T, FEAT_TOL, d);
        free(fc);
        free(fg);

        /* the forward */
        lc[n] = malloc(sizeof(float) * (size_t) recs[n].n_options);
        lg[n] = malloc(sizeof(float) * (size_t) recs[n].n_options);
        ok = run_batch(cpu, cb, (const clef_record *const []) { &recs[n] }, 1,
                       lc[n]) == 0
             && run_batch(&clef_cuda_backend_ops, gb,
                          (const clef_record *const []) { &recs[n] }, 1,
                          lg[n]) == 0;
        CHECK(ok, "%s: runs on both backends", name);
        if (!ok) {
            clef_record_free(&recs[n]);
            free(lc[n]);
            free(lg[n]);
            continue;
        }
        clef_answer_softmax(&recs[n], lc[n], pc);
        clef_answer_softmax(&recs[n], lg[n], pg);
        d = max_abs_diff(pc, pg, recs[n].n_options);
        worst_cpu = d > worst_cpu ? d : worst_cpu;
        kq = 1;
        for (q = 0; q < recs[n].n_questions; q++) {
            json_t  *rq = json_array_get(json_object_get(c, "probabilities"),
                                         (size_t) q);
            int      no = recs[n].option_offset[q + 1]
                          - recs[n].option_offset[q];
            float    pr[64];
            int      s = 1;

            for (o = 0; o < no && o < 64; o++) {
                pr[o] = (float) json_number_value(json_array_get(rq,
                                                                 (size_t) o));
                d = fabs(pr[o] - pg[qo + o]);
                worst_ref = d > worst_ref ? d : worst_ref;
            }
            if (decided_question(pr, pg + qo, no, &s)) {
                decided++;
                kept += s;
                kq &= s;
            }
            qo += no;
        }
        CHECK(max_abs_diff(pc, pg, recs[n].n_options) <= PROB_TOL && kq,
              "%s: probabilities within %g of the CPU backend's, the "
              "reference's argmax where it decides", name, PROB_TOL);
        ptrs[n] = &recs[n];
        total += recs[n].n_options;
        n++;
    }
    CHECK(n >= 12, "%d records with audio clips", n);
    printf("# audio: features max error / max |cpu| %.3g; probabilities "
           "max |cuda - cpu| %.3g, max |cuda - reference| %.3g; argmax kept "
           "on %d of %d decided questions\n", worst_feat, worst_cpu,
           worst_ref, kept, decided);

    /* packed: each record's logits alone, bit for bit */
    packed = malloc(sizeof(float) * (size_t) (total + 1));
    ok = n > 0 && run_batch(&clef_cuda_backend_ops, gb, ptrs, n, packed) == 0;
    for (k = 0, off = 0; ok && k < n; k++) {
        same &= memcmp(packed + off, lg[k],
                       sizeof(float) * (size_t) recs[k].n_options) == 0;
        off += recs[k].n_options;
    }
    CHECK(ok && same, "%d records with clips packed into one forward: each "
          "record's logits alone, bit for bit", n);

    /* the same batch three times: the same bits, and no graph */
    clef_cuda_graph_stats(gb, &replays, &caps0);
    for (k = 0, same = ok; k < 3 && ok; k++) {
        ok = run_batch(&clef_cuda_backend_ops, gb, ptrs, 1, pg) == 0;
        same &= ok && memcmp(pg, lg[0], sizeof(float)
                                        * (size_t) recs[0].n_options) == 0;
    }
    clef_cuda_graph_stats(gb, &replays, &captures);
    CHECK(same && captures == caps0, "a batch with clips three times: the "
          "same bits, no CUDA graph captured");
    free(packed);
    for (k = 0; k < n; k++) {
        clef_record_free(&recs[k]);
        free(lc[k]);
        free(lg[k]);
    }

done:
    json_decref(cases);
    clef_cpu_audio_close(tower);
    cuda_test_close(cpu, cb, gb, m, dir);
}

static const cuda_subtest  subtests[] = {
    { "akernels", test_akernels },
    { "audio_omni1", test_audio_omni1 },
};
#define N_SUBTESTS  (sizeof(subtests) / sizeof(subtests[0]))

int
main(int argc, char **argv)
{
    return cuda_test_main(argc, argv, subtests, N_SUBTESTS, &pool);
}
