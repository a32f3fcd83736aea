/*
 * Clef Omni on the CUDA backend: the routed experts' kernels (cuda/moe.cu)
 * against the CPU's (engine/cpu/ops/moe.c) and plain loops, and the tiny
 * Omni checkpoint of the CPU end-to-end fixtures (t/fixtures/models/
 * omni1.json: MoE and dense layers, plain RMSNorms, DeepStack mergers)
 * against the CPU backend, which is exact against transformers 5.10.2 and
 * Cloudflare's Omni reference (t/unit/test_decide_e2e.c).
 *
 *   moe_route   softmax, top k and renormalised weights of 300 tokens over
 *               8 experts (k 2) and 777 over 128 (k 8): the CPU's experts,
 *               its weights within 1e-6, its grouping (offsets, slots, each
 *               grouped row's token) exactly; the row tiles they need
 *   moe_gemm    the grouped GEMM over those groups, gathered and not,
 *               against a double loop: 1e-2 of max |ref| (bf16 output);
 *               rows past the groups untouched; the combine within 1e-2
 *   omni_e2e    every request of t/fixtures/e2e/omni1.jsonl (text and
 *               images): probabilities within PROB_TOL (2e-2, the
 *               backend's bf16 contract) of the CPU backend's and of the
 *               reference's, the same argmax on every question decided by
 *               more than DECIDED_MARGIN; all of them packed into one
 *               forward give each record's logits alone, bit for bit
 *
 *   test_cuda_omni [--list] [NAME...]
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

#include "clef_cuda.h"
#include "cpu/ops/moe.h"
#include "cpu/parallel/pool.h"
#include "cuda_test.h"
#include "kernels.h"
#include "model/model.h"
#include "protocol/encode_media.h"
#include "protocol/request.h"
#include "vision_cases.h"

#define MAX_CASES  48        /* vision_cases.h forward(): at most 63 */

static clef_cpu_pool  *pool;

/* ---- routing ------------------------------------------------------------- */

typedef struct {
    int       T, E, k;
    void     *logits_d, *expert_d, *weight_d, *count_d, *offset_d, *tiles_d;
    void     *slot_d, *row_d;
    clef_cpu_moe_routing  cpu;
} routed;

/* T tokens' random logits routed on both sides. */
static int
route_both(routed *r, int T, int E, int k)
{
    float            *z = malloc(sizeof(float) * (size_t) T * E);
    clef_k_moe_args   a;
    int               i;

    memset(r, 0, sizeof(*r));
    r->T = T;
    r->E = E;
    r->k = k;
    for (i = 0; i < T * E; i++) {
        z[i] = rnd_bf(4.0f);
    }
    /* a tie: the lower index goes first on both sides */
    z[1] = z[0];
    r->logits_d = up_f32(z, (size_t) T * E);
    r->expert_d = dev_poison((size_t) T * k, 4);
    r->weight_d = dev_poison((size_t) T * k, 4);
    r->count_d = dev_poison((size_t) E, 4);
    r->offset_d = dev_poison((size_t) E + 1, 4);
    r->tiles_d = dev_poison((size_t) E + 1, 4);
    r->slot_d = dev_poison((size_t) T * k, 4);
    r->row_d = dev_poison((size_t) T * k, 4);
    a.logits = r->logits_d;
    a.T = T;
    a.E = E;
    a.k = k;
    a.renorm = 1;
    a.expert = r->expert_d;
    a.weight = r->weight_d;
    a.count = r->count_d;
    a.offset = r->offset_d;
    a.tile_off = r->tiles_d;
    a.slot = r->slot_d;
    a.row_token = r->row_d;
    die_cuda(clef_k_moe_route(&a, 0), "route");
    if (clef_cpu_moe_route_alloc(&r->cpu, T, E, k) != 0) {
        free(z);
        return -1;
    }
    clef_cpu_moe_route(pool, z, E, T, 1, &r->cpu);
    free(z);
    return 0;
}

static void
routed_free(routed *r)
{
    cudaFree(r->logits_d);
    cudaFree(r->expert_d);
    cudaFree(r->weight_d);
    cudaFree(r->count_d);
    cudaFree(r->offset_d);
    cudaFree(r->tiles_d);
    cudaFree(r->slot_d);
    cudaFree(r->row_d);
    clef_cpu_moe_route_free(&r->cpu);
}

static int32_t *
down_i32(const void *d, size_t n)
{
    int32_t  *h = malloc(n * 4 + 4);

    die_cuda(cudaDeviceSynchronize(), "kernel");
    die_cuda(cudaMemcpy(h, d, n * 4, cudaMemcpyDeviceToHost), "download");
    return h;
}

static void
route_case(int T, int E, int k)
{
    routed    r;
    int32_t  *ex, *off, *tiles, *slot, *row;
    float    *w;
    double    dw = 0;
    int       i, e, same_ex = 1, same_grp = 1, want_tiles = 0;

    if (route_both(&r, T, E, k) != 0) {
        CHECK(0, "route %d tokens", T);
        return;
    }
    ex = down_i32(r.expert_d, (size_t) T * k);
    w = down_f32(r.weight_d, (size_t) T * k);
    off = down_i32(r.offset_d, (size_t) E + 1);
    tiles = down_i32(r.tiles_d, (size_t) E + 1);
    slot = down_i32(r.slot_d, (size_t) T * k);
    row = down_i32(r.row_d, (size_t) T * k);
    for (i = 0; i < T * k; i++) {
        same_ex &= ex[i] == r.cpu.expert[i];
        dw = fmax(dw, fabs((double) w[i] - r.cpu.weight[i]));
        dw = w[i] == w[i] ? dw : INFINITY;
        same_grp &= slot[i] == r.cpu.slot[i] && row[i] == r.cpu.row_token[i];
    }
    for (e = 0; e <= E; e++) {
        same_grp &= off[e] == r.cpu.offset[e];
    }
    for (e = 0; e < E; e++) {
        same_grp &= tiles[e] == want_tiles;
        want_tiles += (r.cpu.offset[e + 1] - r.cpu.offset[e] + 63) / 64;
    }
    CHECK(same_ex, "%d tokens, %d experts, top %d: the CPU's experts", T, E, k);
    CHECK(dw <= 1e-6, "their weights within 1e-6 (max %.3g)", dw);
    CHECK(same_grp && tiles[E] == want_tiles,
          "the CPU's grouping (offsets, slots, rows) and %d row tiles", want_tiles);
    CHECK(want_tiles <= clef_k_moe_max_tiles(T, k, E),
          "within the grid's %d tiles", clef_k_moe_max_tiles(T, k, E));
    free(ex);
    free(w);
    free(off);
    free(tiles);
    free(slot);
    free(row);
    routed_free(&r);
}

static void
test_moe_route(void)
{
    route_case(300, 8, 2);
    route_case(777, 128, 8);
}

/* ---- grouped GEMM and combine ------------------------------------------- */

static void
gemm_case(int T, int E, int k, int N, int K)
{
    routed                r;
    clef_k_moe_gemm_args  g;
    float                *x, *w, *got, *ref, *mid, *hid, *hid_ref;
    void                 *x_d, *w_d, *d_d, *mid_d, *hid_d;
    int                   P = T * k, p, n, i, t, e, intact = 1;
    double                acc;

    if (route_both(&r, T, E, k) != 0) {
        CHECK(0, "route %d tokens", T);
        return;
    }
    x = malloc(sizeof(float) * (size_t) T * K);
    w = malloc(sizeof(float) * (size_t) E * N * K);
    ref = malloc(sizeof(float) * (size_t) P * N);
    fill_bf(x, (size_t) T * K, 1.0f);
    fill_bf(w, (size_t) E * N * K, 0.1f);
    x_d = up_bf(x, (size_t) T * K);
    w_d = up_bf(w, (size_t) E * N * K);
    d_d = dev_poison((size_t) (P + 64) * N, 2);

    /* gathered: grouped row p reads token row_token[p] */
    g.X = x_d;
    g.ldx = K;
    g.row_token = r.row_d;
    g.W = w_d;
    g.N = N;
    g.K = K;
    g.D = d_d;
    g.ldd = N;
    g.offset = r.offset_d;
    g.tile_off = r.tiles_d;
    g.E = E;
    g.max_tiles = clef_k_moe_max_tiles(T, k, E);
    die_cuda(clef_k_moe_gemm(&g, 0), "grouped gemm");
    got = down_bf(d_d, (size_t) (P + 64) * N);
    for (e = 0; e < E; e++) {
        for (p = r.cpu.offset[e]; p < r.cpu.offset[e + 1]; p++) {
            t = r.cpu.row_token[p];
            for (n = 0; n < N; n++) {
                acc = 0;
                for (i = 0; i < K; i++) {
                    acc += (double) x[(size_t) t * K + i]
                           * w[((size_t) e * N + n) * K + i];
                }
                ref[(size_t) p * N + n] = (float) acc;
            }
        }
    }
    for (i = P * N; i < (P + 64) * N; i++) {
        intact &= got[i] != got[i];
    }
    CHECK_REL(got, (size_t) N, ref, (size_t) N, (size_t) P, (size_t) N, 1e-2,
              "%d tokens x top %d of %d experts, [%d][%d]: gathered grouped GEMM",
              T, k, E, N, K);
    CHECK(intact, "no row past the groups written");

    /* not gathered: the grouped rows themselves (the down projection's
     * input), then each token's weighted sum added to its hidden row */
    mid = malloc(sizeof(float) * (size_t) P * K);
    fill_bf(mid, (size_t) P * K, 1.0f);
    mid_d = up_bf(mid, (size_t) P * K);
    g.X = mid_d;
    g.row_token = NULL;
    die_cuda(clef_k_moe_gemm(&g, 0), "grouped gemm");
    free(got);
    got = down_bf(d_d, (size_t) P * N);
    for (e = 0; e < E; e++) {
        for (p = r.cpu.offset[e]; p < r.cpu.offset[e + 1]; p++) {
            for (n = 0; n < N; n++) {
                acc = 0;
                for (i = 0; i < K; i++) {
                    acc += (double) mid[(size_t) p * K + i]
                           * w[((size_t) e * N + n) * K + i];
                }
                ref[(size_t) p * N + n] = (float) acc;
            }
        }
    }
    CHECK_REL(got, (size_t) N, ref, (size_t) N, (size_t) P, (size_t) N, 1e-2,
              "the same over grouped rows");

    hid = malloc(sizeof(float) * (size_t) T * N);
    hid_ref = malloc(sizeof(float) * (size_t) T * N);
    fill_bf(hid, (size_t) T * N, 1.0f);
    memcpy(hid_ref, hid, sizeof(float) * (size_t) T * N);
    hid_d = up_bf(hid, (size_t) T * N);
    die_cuda(clef_k_moe_combine(d_d, N, r.slot_d, r.weight_d, T, k, hid_d, N, 0),
             "combine");
    free(hid);
    hid = down_bf(hid_d, (size_t) T * N);
    clef_cpu_moe_combine(pool, &r.cpu, T, got, N, hid_ref, N);
    CHECK_REL(hid, (size_t) N, hid_ref, (size_t) N, (size_t) T, (size_t) N, 1e-2,
              "the weighted sums added to the hidden rows");

    cudaFree(x_d);
    cudaFree(w_d);
    cudaFree(d_d);
    cudaFree(mid_d);
    cudaFree(hid_d);
    free(x);
    free(w);
    free(got);
    free(ref);
    free(mid);
    free(hid);
    free(hid_ref);
    routed_free(&r);
}

static void
test_moe_gemm(void)
{
    gemm_case(300, 8, 2, 96, 64);       /* omni1: gate | up of 48 over 64 */
    gemm_case(129, 8, 2, 64, 48);       /* its down: a K tail of 16 */
    gemm_case(200, 128, 8, 136, 200);   /* column and K tails, sparse groups */
}

/* ---- the tiny Omni checkpoint -------------------------------------------- */

/* A request of omni1.jsonl with the record limit and truncation it was
 * computed with. */
static int
encode_fixture(const clef_model *m, json_t *c, clef_record *rec)
{
    const char        *body = json_string_value(json_object_get(c, "body"));
    const char        *tr = json_string_value(json_object_get(c, "truncate"));
    clef_encode_opts   eo;

    clef_encode_opts_default(&eo);
    eo.max_length = (int) json_integer_value(json_object_get(c, "max_length"));
    eo.truncate = tr != NULL && strcmp(tr, "state") == 0 ? CLEF_TRUNCATE_STATE
                                                         : CLEF_TRUNCATE_REJECT;
    return encode_body(m, body, &eo, rec);
}

static void
test_omni_e2e(void)
{
    const clef_backend_ops  *cpu;
    clef_backend            *cb = NULL, *gb = NULL;
    clef_backend_opts        bo;
    clef_model              *m = NULL;
    clef_error               err;
    clef_record              recs[MAX_CASES];
    const clef_record       *ptrs[MAX_CASES];
    json_t                  *cases = json_array(), *c, *qs;
    char                     dir[] = "/tmp/clef-cuda-omni-XXXXXX", path[2048];
    char                     line[1 << 17];
    FILE                    *f;
    float                   *lc[MAX_CASES], *lg[MAX_CASES], *packed;
    float                    pc[512], pg[512];
    double                   worst_cpu = 0, worst_ref = 0, d;
    int                      n = 0, i, q, o, ok, off, total = 0, same = 1;
    int                      decided = 0, kept = 0, kq, nimg = 0;

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
         && clef_cuda_backend_ops.open(m, &bo, &gb, &err) == 0;
    CHECK(ok, "omni1 opens on the CPU and the CUDA backend (%s)",
          ok ? "" : err.message);
    if (!ok) {
        goto done;
    }

    snprintf(path, sizeof(path), "%s/e2e/omni1.jsonl", check_fixtures());
    f = fopen(path, "r");
    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        json_array_append_new(cases, json_loads(line, 0, NULL));
    }
    if (f != NULL) {
        fclose(f);
    }
    CHECK(json_array_size(cases) >= 30, "%zu fixture requests",
          json_array_size(cases));

    json_array_foreach(cases, i, c) {
        const char  *cname = json_string_value(json_object_get(c, "name"));

        if (n >= MAX_CASES) {
            break;
        }
        if (encode_fixture(m, c, &recs[n]) != 0) {
            CHECK(0, "%s: encoded", cname);
            continue;
        }
        nimg += recs[n].n_media > 0;
        lc[n] = calloc((size_t) recs[n].n_options + 1, sizeof(float));
        lg[n] = calloc((size_t) recs[n].n_options + 1, sizeof(float));
        ptrs[n] = &recs[n];
        ok = forward(cpu, cb, &ptrs[n], 1, lc[n]) == 0
             && forward(&clef_cuda_backend_ops, gb, &ptrs[n], 1, lg[n]) == 0;
        CHECK(ok, "%s: forward on both backends", cname);
        if (!ok || recs[n].n_options > 512) {
            n++;
            continue;
        }
        clef_answer_softmax(&recs[n], lc[n], pc);
        clef_answer_softmax(&recs[n], lg[n], pg);
        d = max_abs_diff(pc, pg, recs[n].n_options);
        worst_cpu = d > worst_cpu || d != d ? d : worst_cpu;
        CHECK(d <= PROB_TOL, "%s: probabilities within %g of the CPU's "
              "(max %.3g)", cname, PROB_TOL, d);
        /* the reference's, question by question (options in the
         * encoder's order) */
        qs = json_object_get(c, "questions");
        d = 0;
        for (q = 0; q < recs[n].n_questions && q < (int) json_array_size(qs);
             q++)
        {
            json_t  *rp = json_object_get(json_array_get(qs, (size_t) q),
                                          "probabilities");
            int      o0 = recs[n].option_offset[q];
            float    ref[64];

            kq = recs[n].option_offset[q + 1] - o0;
            for (o = 0; o < kq && o < 64; o++) {
                ref[o] = (float) json_number_value(json_array_get(rp, (size_t) o));
                d = fmax(d, fabs((double) ref[o] - pg[o0 + o]));
                d = pg[o0 + o] == pg[o0 + o] ? d : INFINITY;
            }
            if (kq <= 64 && decided_question(ref, pg + o0, kq, &ok)) {
                decided++;
                kept += ok;
            }
        }
        worst_ref = d > worst_ref ? d : worst_ref;
        CHECK(d <= PROB_TOL, "%s: within %g of the reference's (max %.3g)",
              cname, PROB_TOL, d);
        total += recs[n].n_options;
        n++;
    }
    CHECK(nimg >= 4, "%d requests with images among them", nimg);
    CHECK_INT(kept, decided, "the reference's argmax on %d decided questions",
              decided);
    printf("# probabilities: max |cuda - cpu| %.3g, max |cuda - reference| "
           "%.3g\n", worst_cpu, worst_ref);

    /* every record in one forward: the logits of each alone (the experts'
     * groups then mix tokens of every record) */
    packed = calloc((size_t) total + 1, sizeof(float));
    ok = forward(&clef_cuda_backend_ops, gb, ptrs, n, packed) == 0;
    CHECK(ok, "%d records packed into one forward", n);
    for (i = 0, off = 0; ok && i < n; i++) {
        for (o = 0; o < recs[i].n_options; o++) {
            same &= memcmp(&packed[off + o], &lg[i][o], sizeof(float)) == 0;
        }
        off += recs[i].n_options;
    }
    CHECK(ok && same, "packed, each record's logits bit-identical to alone");
    free(packed);
    for (i = 0; i < n; i++) {
        free(lc[i]);
        free(lg[i]);
        clef_record_free(&recs[i]);
    }

done:
    json_decref(cases);
    cuda_test_close(cpu, cb, gb, m, dir);
}

static const cuda_subtest  subtests[] = {
    { "moe_route", test_moe_route },
    { "moe_gemm", test_moe_gemm },
    { "omni_e2e", test_omni_e2e },
};

#define N_SUBTESTS  (sizeof(subtests) / sizeof(subtests[0]))

int
main(int argc, char **argv)
{
    return cuda_test_main(argc, argv, subtests, N_SUBTESTS, &pool);
}
