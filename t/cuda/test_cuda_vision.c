/*
 * The CUDA vision tower (cuda/vision*.c, cuda/vision_kernels.cu, the
 * bidirectional instance of cuda/attention.cu) and images through the
 * CUDA backend, against the CPU backend, which is exact against
 * transformers (t/unit/test_vision_e2e.c).
 *
 * Kernels, on random bf16-valued inputs, against the CPU tower's own ops
 * (engine/cpu/ops/vision_ops.c) or plain loops; outputs poisoned with NaN:
 *   vpatchify    patch rows from a video's RGB frames (an odd count: its
 *                last pair the last frame twice) and from an image's
 *                staged pixel values: clef_image_patch_row()'s in bf16,
 *                bit for bit
 *   vlayernorm   rows of 1152 (Clef) and 64 (test towers), bf16 out: 1e-2
 *   vpos         bias + resampled position table, fp32: 1e-5
 *   vrotary      qkv bias + 2D rotary, heads 16 x 72 and 4 x 16: 1e-2
 *   vattention   per image, 1, 2 and 4 images of 256 / 100+36 /
 *                196+64+16+260 patches, at 16 x 72 and 4 x 16: 2e-2; the
 *                tile order and the batch do not change a bit (an image
 *                alone = the same image among others)
 *   velementwise gelu (tanh, erf) 1e-2, residual 1e-6, scatter exact
 * Model level, on checkpoints `clef mkmodel` writes (v1: the CPU
 * end-to-end test's, t/fixtures/models/v1.json, head dim 16; vision72:
 * t/cuda/models/vision72.json, Clef's tower sizes at depth 2, head dim 72)
 * and the requests of t/fixtures/vision (all 32 on v1, 4 on vision72):
 *   tower_v1, tower_vision72, and video_v1 (v1 with the requests of
 *   t/fixtures/vision/videos.jsonl: frame pairs as temporal groups, an
 *   odd frame count, videos beside images; their frames random, then,
 *   where build/clef-decoder is built, those up to 700 tokens decoded)
 *   - merged features within FEAT_TOL of the CPU tower's (max error over
 *     max |ref|, per request);
 *   - option probabilities within PROB_TOL (2e-2, the backend's bf16
 *     contract) of the CPU backend's, the same argmax on every question
 *     the CPU decides by more than DECIDED_MARGIN;
 *   - every request packed between two text-only records: each record's
 *     logits bit-identical to the record alone;
 *   - a text-only batch gives the same bits before and after batches with
 *     images (no M-RoPE or tower state leaks), and a batch with images run
 *     three times gives the same bits and captures no CUDA graph.
 *
 *   test_cuda_vision [--list] [NAME...]
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

#include "backend/vision_layout.h"
#include "clef_cuda.h"
#include "cpu/model/vision.h"
#include "cpu/ops/vision_ops.h"
#include "cpu/parallel/pool.h"
#include "cuda_test.h"
#include "kernels.h"
#include "model/model.h"
#include "model/model_media.h"
#include "protocol/encode_media.h"
#include "protocol/plan.h"
#include "protocol/request.h"
#include "vision_cases.h"

/* bf16 GEMM inputs and outputs through two blocks and the merger against
 * the fp32 CPU tower: each rounding is 2^-9 relative; a few dozen of them
 * in sequence, on random weights, stay well inside 5 %. */
#define FEAT_TOL  5e-2

static clef_cpu_pool  *pool;

static float *
fvec(size_t n)
{
    return calloc(n + 1, sizeof(float));
}

/* ---- kernels --------------------------------------------------------------- */

static void
test_vlayernorm(void)
{
    static const int  shapes[][2] = { { 37, 1152 }, { 5, 64 } };
    int               s, rows, n, i;
    float            *x, *w, *b, *want, *got;
    void             *x_d, *w_d, *b_d, *y_d;

    for (s = 0; s < 2; s++) {
        rows = shapes[s][0];
        n = shapes[s][1];
        x = fvec((size_t) rows * n);
        w = fvec((size_t) n);
        b = fvec((size_t) n);
        want = fvec((size_t) rows * n);
        for (i = 0; i < rows * n; i++) {
            /* an offset mean, as residual streams have */
            x[i] = rnd_bf(2.0f) + 3.0f;
        }
        fill_bf(w, (size_t) n, 1.5f);
        fill_bf(b, (size_t) n, 0.5f);
        clef_cpu_layernorm(pool, x, n, want, n, rows, n, w, b, 1e-6f);
        x_d = up_f32(x, (size_t) rows * n);
        w_d = up_f32(w, (size_t) n);
        b_d = up_f32(b, (size_t) n);
        y_d = dev_poison((size_t) rows * n, 2);
        die_cuda(clef_k_vlayernorm(x_d, w_d, b_d, y_d, rows, n, 1e-6f, 0), "vlayernorm");
        got = down_bf(y_d, (size_t) rows * n);
        CHECK_REL(got, n, want, n, rows, n, 1e-2, "LayerNorm, %d rows of %d: the "
                  "CPU tower's", rows, n);
        free(x);
        free(w);
        free(b);
        free(want);
        free(got);
        cudaFree(x_d);
        cudaFree(w_d);
        cudaFree(b_d);
        cudaFree(y_d);
    }
}

/* A video and an image as the plan lays them out (cuda/vision.c): a video
 * of three RGB frames (6 x 4 patches, two frame pairs, the second its
 * last frame twice) and an image given as pixel values (4 x 4), rows
 * staged. */
static void
test_vpatchify(void)
{
    const int          ps = 16, tp = 2, row = 3 * tp * ps * ps;
    clef_media_item    im[2];
    clef_k_patch_args  a;
    int64_t            imeta[12], P, np[2], n, frame, first;
    float              inorm[18], *want, *got, *f;
    uint16_t          *staged;
    int32_t           *img, *rc, *src;
    void              *rgb_d, *im_d, *in_d, *img_d, *rc_d, *src_d, *st_d, *rows_d;
    int                k, c, i, ok, t, grp;
    int64_t            p, g;

    memset(im, 0, sizeof(im));
    for (k = 0; k < 2; k++) {
        im[k].kind = k == 0 ? CLEF_MEDIA_VIDEO : CLEF_MEDIA_IMAGE;
        im[k].grid_t = k == 0 ? 2 : 1;
        im[k].frames = k == 0 ? 3 : 1;
        im[k].grid_h = k == 0 ? 6 : 4;
        im[k].grid_w = 4;
        im[k].patch = ps;
        im[k].temporal = tp;
        im[k].merge = 2;
        for (c = 0; c < 3; c++) {
            im[k].mean[c] = 120.0f + 3.5f * (float) c;
            im[k].std[c] = 66.0f + 1.25f * (float) c;
        }
        np[k] = (int64_t) im[k].grid_h * im[k].grid_w;
    }
    frame = np[0] * ps * ps * 3;
    n = frame * im[0].frames;
    im[0].bytes = malloc((size_t) n);
    for (i = 0; i < n; i++) {
        im[0].bytes[i] = (uint8_t) (rnd_u64() >> 56);
    }
    im[1].values = fvec((size_t) np[1] * row);
    fill_bf(im[1].values, (size_t) np[1] * row, 2.0f);
    /* a value bf16 cannot hold exactly, to see the rounding */
    im[1].values[5] = 0.1f;

    P = np[0] * im[0].grid_t + np[1];
    want = fvec((size_t) P * row);
    f = fvec((size_t) row);
    staged = malloc(sizeof(uint16_t) * (size_t) np[1] * row);
    img = malloc(sizeof(int32_t) * (size_t) P);
    rc = malloc(sizeof(int32_t) * 2 * (size_t) P);
    src = malloc(sizeof(int32_t) * (size_t) P);
    for (k = 0, g = 0, grp = 0; k < 2; k++) {
        for (t = 0; t < im[k].grid_t; t++, grp++) {
            first = (int64_t) t * tp < im[k].frames ? (int64_t) t * tp
                                                    : im[k].frames - 1;
            imeta[4 * grp] = first * frame;
            imeta[4 * grp + 1] = frame;
            imeta[4 * grp + 2] = im[k].frames - first;
            imeta[4 * grp + 3] = (int64_t) im[k].grid_w * ps;
            for (c = 0; c < 3; c++) {
                inorm[6 * grp + c] = im[k].mean[c];
                inorm[6 * grp + 3 + c] = im[k].std[c];
            }
            for (p = 0; p < np[k]; p++, g++) {
                clef_image_patch_row(&im[k], t * np[k] + p, f);
                for (i = 0; i < row; i++) {
                    want[g * row + i] = clef_bf16_to_f32(clef_f32_to_bf16(f[i]));
                    if (k == 1) {
                        staged[p * row + i] = clef_f32_to_bf16(f[i]);
                    }
                }
                img[g] = grp;
                src[g] = k == 1 ? (int32_t) p : -1;
                clef_vision_patch_rc(&im[k], p, &rc[2 * g], &rc[2 * g + 1]);
            }
        }
    }
    die_cuda(cudaMalloc(&rgb_d, (size_t) n), "cudaMalloc");
    die_cuda(cudaMemcpy(rgb_d, im[0].bytes, (size_t) n, cudaMemcpyHostToDevice), "rgb");
    die_cuda(cudaMalloc(&im_d, sizeof(imeta)), "cudaMalloc");
    die_cuda(cudaMemcpy(im_d, imeta, sizeof(imeta), cudaMemcpyHostToDevice), "imeta");
    in_d = up_f32(inorm, 18);
    img_d = up_i32(img, (size_t) P);
    rc_d = up_i32(rc, 2 * (size_t) P);
    src_d = up_i32(src, (size_t) P);
    die_cuda(cudaMalloc(&st_d, sizeof(uint16_t) * (size_t) np[1] * row), "cudaMalloc");
    die_cuda(cudaMemcpy(st_d, staged, sizeof(uint16_t) * (size_t) np[1] * row,
                        cudaMemcpyHostToDevice), "staged");
    rows_d = dev_poison((size_t) P * row, 2);
    a.rgb = rgb_d;
    a.imeta = im_d;
    a.inorm = in_d;
    a.img = img_d;
    a.rc = rc_d;
    a.src = src_d;
    a.staged = st_d;
    a.rows = rows_d;
    a.P = (int) P;
    a.ps = ps;
    a.temporal = tp;
    die_cuda(clef_k_vpatchify(&a, 0), "vpatchify");
    got = down_bf(rows_d, (size_t) P * row);
    ok = memcmp(got, want, sizeof(float) * (size_t) P * row) == 0;
    CHECK(ok, "patch rows of a video's two frame pairs (3 RGB frames of 6 x 4 "
          "patches: the last frame twice) and of an image's pixel values "
          "(4 x 4): clef_image_patch_row's, rounded to bf16, bit for bit");
    free(im[0].bytes);
    free(im[1].values);
    free(want);
    free(f);
    free(got);
    free(staged);
    free(img);
    free(rc);
    free(src);
    cudaFree(rgb_d);
    cudaFree(im_d);
    cudaFree(in_d);
    cudaFree(img_d);
    cudaFree(rc_d);
    cudaFree(src_d);
    cudaFree(st_d);
    cudaFree(rows_d);
}

static void
test_vpos(void)
{
    const int  P = 60, H = 64, side = 8, gh = 6, gw = 10;
    float     *y = fvec((size_t) P * H), *bias = fvec(H), *pos = fvec(side * side * H);
    float     *want = fvec((size_t) P * H), *got, pw[4 * 60];
    int32_t    tap[4 * 60];
    void      *y_d, *b_d, *pos_d, *tap_d, *pw_d, *x_d;
    double     acc;
    int        p, i, k;

    fill_bf(y, (size_t) P * H, 1.0f);
    fill_bf(bias, H, 0.5f);
    fill_bf(pos, (size_t) side * side * H, 1.0f);
    for (p = 0; p < P; p++) {
        clef_vision_pos_taps(p / gw, p % gw, gh, gw, side, tap + 4 * p, pw + 4 * p);
        for (i = 0; i < H; i++) {
            acc = 0;
            for (k = 0; k < 4; k++) {
                acc += (double) pw[4 * p + k] * pos[(size_t) tap[4 * p + k] * H + i];
            }
            want[p * H + i] = (float) ((double) y[p * H + i] + bias[i] + acc);
        }
    }
    y_d = up_bf(y, (size_t) P * H);
    b_d = up_f32(bias, H);
    pos_d = up_f32(pos, (size_t) side * side * H);
    tap_d = up_i32(tap, 4 * (size_t) P);
    pw_d = up_f32(pw, 4 * (size_t) P);
    x_d = dev_poison((size_t) P * H, 4);
    die_cuda(clef_k_vpos_embed(y_d, b_d, pos_d, tap_d, pw_d, x_d, P, H, 0), "vpos");
    got = down_f32(x_d, (size_t) P * H);
    CHECK_REL(got, H, want, H, P, H, 1e-5, "patch bias + resampled position "
              "table, %d patches of a %d x %d grid", P, gh, gw);
    free(y);
    free(bias);
    free(pos);
    free(want);
    free(got);
    cudaFree(y_d);
    cudaFree(b_d);
    cudaFree(pos_d);
    cudaFree(tap_d);
    cudaFree(pw_d);
    cudaFree(x_d);
}

static void
test_vrotary(void)
{
    static const int  shapes[][2] = { { 16, 72 }, { 4, 16 } };
    const int         P = 50, npos = 40;
    int               s, heads, hd, H, half, q, p, i, r, c;
    float            *qkv, *bias, *want, *cs, *sn, *tc, *ts, *got;
    int32_t           rc[2 * 50];
    void             *qkv_d, *b_d, *rc_d, *c_d, *s_d;

    for (s = 0; s < 2; s++) {
        heads = shapes[s][0];
        hd = shapes[s][1];
        H = heads * hd;
        half = hd / 2;
        q = hd / 4;
        qkv = fvec((size_t) P * 3 * H);
        bias = fvec((size_t) 3 * H);
        want = fvec((size_t) P * 3 * H);
        tc = fvec((size_t) npos * q);
        ts = fvec((size_t) npos * q);
        cs = fvec((size_t) P * half);
        sn = fvec((size_t) P * half);
        fill_bf(qkv, (size_t) P * 3 * H, 2.0f);
        fill_bf(bias, (size_t) 3 * H, 0.5f);
        clef_vision_rotary_table(hd, 10000.0, npos, tc, ts);
        for (p = 0; p < P; p++) {
            r = (int) (rnd_u64() % npos);
            c = (int) (rnd_u64() % npos);
            rc[2 * p] = r;
            rc[2 * p + 1] = c;
            for (i = 0; i < q; i++) {
                cs[p * half + i] = tc[r * q + i];
                sn[p * half + i] = ts[r * q + i];
                cs[p * half + q + i] = tc[c * q + i];
                sn[p * half + q + i] = ts[c * q + i];
            }
            /* the bias, q and k rounded to bf16 as the GPU stores them */
            for (i = 0; i < 3 * H; i++) {
                want[p * 3 * H + i] = qkv[p * 3 * H + i] + bias[i];
                if (i < 2 * H) {
                    want[p * 3 * H + i] = clef_bf16_to_f32(clef_f32_to_bf16(
                        want[p * 3 * H + i]));
                }
            }
        }
        clef_cpu_vision_rotary(pool, want, 3 * H, P, heads, hd, H, cs, sn);
        qkv_d = up_bf(qkv, (size_t) P * 3 * H);
        b_d = up_f32(bias, (size_t) 3 * H);
        rc_d = up_i32(rc, 2 * (size_t) P);
        c_d = up_f32(tc, (size_t) npos * q);
        s_d = up_f32(ts, (size_t) npos * q);
        die_cuda(clef_k_vqkv_rotary(qkv_d, b_d, rc_d, c_d, s_d, P, heads, hd, 0),
                 "vrotary");
        got = down_bf(qkv_d, (size_t) P * 3 * H);
        CHECK_REL(got, 3 * H, want, 3 * H, P, 3 * H, 1e-2, "qkv bias + 2D rotary, "
                  "%d heads x %d, %d patches: the CPU tower's", heads, hd, P);
        free(qkv);
        free(bias);
        free(want);
        free(tc);
        free(ts);
        free(cs);
        free(sn);
        free(got);
        cudaFree(qkv_d);
        cudaFree(b_d);
        cudaFree(rc_d);
        cudaFree(c_d);
        cudaFree(s_d);
    }
}

/* Bidirectional attention over images of the given patch counts. */
static void
attention_case(int heads, int hd, const int *lens, int n)
{
    const int         H = heads * hd;
    int64_t           cu[5], P, nt;
    int32_t          *tiles, *rev;
    float            *qkv, *want, *got, *got2, *alone, *scratch;
    size_t            per;
    int64_t           blocks[5];
    clef_k_attn_args  a;
    void             *qkv_d, *o_d, *t_d;
    int               k, i, last, longest;

    cu[0] = 0;
    for (k = 0; k < n; k++) {
        cu[k + 1] = cu[k] + lens[k];
    }
    P = cu[n];
    qkv = fvec((size_t) P * 3 * H);
    want = fvec((size_t) P * H);
    fill_bf(qkv, (size_t) P * 3 * H, 1.5f);
    for (k = 0, longest = 0; k < n; k++) {
        longest = lens[k] > longest ? lens[k] : longest;
    }
    per = clef_cpu_vision_attention_scratch(longest, hd);
    scratch = fvec(per * (size_t) clef_cpu_pool_size(pool));
    clef_cpu_vision_attention(pool, qkv, 3 * H, want, H, cu, n, heads, hd,
                              1.0f / sqrtf((float) hd), scratch, per, blocks);

    nt = clef_vision_attn_tiles(cu, n, CLEF_K_ATTN_TILE, NULL);
    tiles = malloc(sizeof(int32_t) * 3 * (size_t) nt);
    rev = malloc(sizeof(int32_t) * 3 * (size_t) nt);
    clef_vision_attn_tiles(cu, n, CLEF_K_ATTN_TILE, tiles);
    for (i = 0; i < nt; i++) {
        memcpy(rev + 3 * i, tiles + 3 * (nt - 1 - i), sizeof(int32_t) * 3);
    }
    qkv_d = up_bf(qkv, (size_t) P * 3 * H);
    o_d = dev_poison((size_t) P * H, 2);
    t_d = up_i32(tiles, 3 * (size_t) nt);
    memset(&a, 0, sizeof(a));
    a.q = qkv_d;
    a.ldq = 3 * H;
    a.q_hs = hd;
    a.k = (const clef_bf16 *) qkv_d + H;
    a.ldk = 3 * H;
    a.k_hs = hd;
    a.v = (const clef_bf16 *) qkv_d + 2 * H;
    a.ldv = 3 * H;
    a.v_hs = hd;
    a.out = o_d;
    a.ldo = H;
    a.o_hs = hd;
    a.tiles = t_d;
    a.n_tiles = (int) nt;
    a.Hq = heads;
    a.Hkv = heads;
    a.hd = hd;
    die_cuda(clef_k_attention_bidir(&a, 0), "attention");
    got = down_bf(o_d, (size_t) P * H);
    CHECK_REL(got, H, want, H, (size_t) P, (size_t) H, 2e-2, "attention per image, "
              "%d heads x %d, %d image(s) of %lld patches in all: the CPU tower's",
              heads, hd, n, (long long) P);

    /* tiles in the reverse order: the same bits */
    cudaFree(t_d);
    t_d = up_i32(rev, 3 * (size_t) nt);
    a.tiles = t_d;
    die_cuda(cudaMemset(o_d, 0xff, (size_t) P * H * 2), "poison");
    die_cuda(clef_k_attention_bidir(&a, 0), "attention");
    got2 = down_bf(o_d, (size_t) P * H);
    CHECK(memcmp(got, got2, sizeof(float) * (size_t) (P * H)) == 0,
          "tiles in another order: the same bits");

    /* the last image alone (its rows at offset 0 of the tensor) */
    last = n - 1;
    {
        int64_t  cu1[2] = { 0, lens[last] };
        int32_t  t1[3 * 64];
        int64_t  n1 = clef_vision_attn_tiles(cu1, 1, CLEF_K_ATTN_TILE, t1);

        cudaFree(t_d);
        t_d = up_i32(t1, 3 * (size_t) n1);
        a.q = (const clef_bf16 *) qkv_d + cu[last] * 3 * H;
        a.k = (const clef_bf16 *) a.q + H;
        a.v = (const clef_bf16 *) a.q + 2 * H;
        a.tiles = t_d;
        a.n_tiles = (int) n1;
        die_cuda(cudaMemset(o_d, 0xff, (size_t) P * H * 2), "poison");
        die_cuda(clef_k_attention_bidir(&a, 0), "attention");
        alone = down_bf(o_d, (size_t) lens[last] * H);
        CHECK(memcmp(alone, got + cu[last] * H,
                     sizeof(float) * (size_t) lens[last] * H) == 0,
              "image %d alone: the bits it has among the others", last);
        free(alone);
    }

    free(qkv);
    free(want);
    free(got);
    free(got2);
    free(scratch);
    free(tiles);
    free(rev);
    cudaFree(qkv_d);
    cudaFree(o_d);
    cudaFree(t_d);
}

static void
test_vattention(void)
{
    static const int  one[] = { 256 }, two[] = { 100, 36 };
    static const int  four[] = { 196, 64, 16, 260 };

    attention_case(16, 72, one, 1);
    attention_case(16, 72, two, 2);
    attention_case(16, 72, four, 4);
    attention_case(4, 16, one, 1);
    attention_case(4, 16, four, 4);
}

static void
test_velementwise(void)
{
    const int  rows = 33, n = 96, nh = 64;
    float     *y = fvec((size_t) rows * n), *b = fvec(n), *want = fvec((size_t) rows * n);
    float     *x = fvec((size_t) rows * n), *got, *hid;
    int32_t    dst[33];
    void      *y_d, *b_d, *x_d, *d_d, *h_d;
    int        form, i, j, ok;

    for (form = 0; form < 2; form++) {
        fill_bf(y, (size_t) rows * n, 3.0f);
        fill_bf(b, n, 1.0f);
        memcpy(want, y, sizeof(float) * (size_t) rows * n);
        clef_cpu_bias_gelu(pool, want, n, rows, n, b, form);
        y_d = up_bf(y, (size_t) rows * n);
        b_d = up_f32(b, n);
        die_cuda(clef_k_vbias_gelu(y_d, b_d, rows, n, form, 0), "gelu");
        got = down_bf(y_d, (size_t) rows * n);
        CHECK_REL(got, n, want, n, rows, n, 1e-2, "bias + gelu (%s form): the "
                  "CPU tower's", form ? "tanh" : "erf");
        free(got);
        cudaFree(y_d);
        cudaFree(b_d);
    }

    fill_bf(y, (size_t) rows * n, 1.0f);
    fill_bf(x, (size_t) rows * n, 4.0f);
    fill_bf(b, n, 1.0f);
    for (i = 0; i < rows * n; i++) {
        want[i] = x[i] + (y[i] + b[i % n]);
    }
    x_d = up_f32(x, (size_t) rows * n);
    y_d = up_bf(y, (size_t) rows * n);
    b_d = up_f32(b, n);
    die_cuda(clef_k_vresidual(x_d, y_d, b_d, rows, n, 0), "residual");
    got = down_f32(x_d, (size_t) rows * n);
    CHECK_REL(got, n, want, n, rows, n, 1e-6, "residual x += y + bias");
    free(got);
    cudaFree(x_d);
    cudaFree(y_d);
    cudaFree(b_d);

    /* scatter: rows 0..32 of [33][64] features onto tokens 2 j + 1 of 70,
     * every third row unplaced (-1) */
    fill_bf(y, (size_t) rows * nh, 1.0f);
    fill_bf(b, nh, 1.0f);
    hid = fvec((size_t) 70 * nh);
    fill_bf(hid, (size_t) 70 * nh, 8.0f);
    for (j = 0; j < rows; j++) {
        dst[j] = j % 3 == 2 ? -1 : 2 * j + 1;
    }
    y_d = up_bf(y, (size_t) rows * nh);
    b_d = up_f32(b, nh);
    d_d = up_i32(dst, rows);
    h_d = up_bf(hid, (size_t) 70 * nh);
    die_cuda(clef_k_vscatter(y_d, b_d, d_d, h_d, rows, nh, 0), "scatter");
    got = down_bf(h_d, (size_t) 70 * nh);
    ok = 1;
    for (j = 0; j < rows; j++) {
        for (i = 0; i < nh; i++) {
            if (dst[j] >= 0) {
                ok &= got[dst[j] * nh + i] == clef_bf16_to_f32(clef_f32_to_bf16(
                          y[j * nh + i] + b[i]));
            }
        }
    }
    for (j = 0; j < 70; j++) {
        if (j % 2 == 0 || (j - 1) / 2 >= rows || ((j - 1) / 2) % 3 == 2) {
            ok &= memcmp(got + j * nh, hid + j * nh, sizeof(float) * nh) == 0;
        }
    }
    CHECK(ok, "scatter: each placed row bf16(feature + bias) on its token, every "
          "other token untouched");
    free(got);
    free(hid);
    cudaFree(y_d);
    cudaFree(b_d);
    cudaFree(d_d);
    cudaFree(h_d);
    free(y);
    free(b);
    free(want);
    free(x);
}

/* ---- model level ----------------------------------------------------------- */


static int
encode_text(const clef_model *m, clef_record *rec)
{
    static const char  t[] = "{\"model\":\"m\",\"state\":\"no image here\","
                             "\"questions\":{\"q\":{\"type\":\"noul\"}}}";
    clef_request       req;
    clef_encode_opts   eo;
    clef_error         err;
    int                rc;

    clef_encode_opts_default(&eo);
    memset(&err, 0, sizeof(err));
    rc = clef_request_parse(&req, t, strlen(t), NULL, &err);
    if (rc == 0) {
        rc = clef_encode(clef_model_tokenizer(m), &req, &eo, rec, &err);
        clef_request_free(&req);
    }
    return rc;
}


/* The CPU and CUDA towers' merged features of one record's images. */
static double
features_error(clef_cpu_vision *cv, clef_backend *gb, const clef_record *rec,
    int out, int *ok)
{
    const clef_record       *r1[1] = { rec };
    const clef_media_item  **ims = calloc((size_t) rec->n_media + 1,
                                          sizeof(*ims));
    clef_batch               batch;
    clef_error               err;
    int32_t                  cu[2];
    int64_t                  rows = 0;
    float                   *fc, *fg;
    double                   e = INFINITY;
    int                      k;

    for (k = 0; k < rec->n_media; k++) {
        ims[k] = &rec->media[k];
        rows += rec->media[k].tokens;
    }
    fc = fvec((size_t) rows * out);
    fg = fvec((size_t) rows * out);
    memset(&err, 0, sizeof(err));
    clef_batch_init(&batch, r1, 1, cu);
    *ok = clef_batch_set_media(&batch, &err) == 0
          && clef_cpu_vision_forward(cv, ims, rec->n_media, fc, &err) == 0
          && clef_cuda_vision_features(gb, &batch, fg, &err) == 0;
    clef_batch_free_media(&batch);
    if (*ok) {
        e = max_rel(fg, (size_t) out, fc, (size_t) out, (size_t) rows, (size_t) out);
    } else {
        printf("#   features: %s\n", err.message);
    }
    free(ims);
    free(fc);
    free(fg);
    return e;
}

/* A request's videos (and images) as synthetic items: the request read as
 * a worker reads it (its clips' headers probed, no codec), then each item
 * random RGB frames of a small grid in place of the decode process's (a
 * build without FFmpeg, as on the GPU machine, has none: what is checked
 * here is the tower over frame pairs, not decoding), encoded with their
 * "<t seconds>" texts, pads and M-RoPE groups.  A video of grid_t pairs
 * has 2 grid_t - 1 frames: its last pair is its last frame twice. */
static int
synth_case(const clef_model *m, json_t *c, clef_record *rec)
{
    const clef_vision_config  *vc = clef_model_vision_config(m);
    clef_media_item           *it;
    clef_media_conf            mc;
    clef_encode_opts           eo;
    clef_request               req;
    clef_error                 err;
    clef_plan                  plan;
    clef_buf                   blob = { NULL, 0, 0 };
    char                      *body = body_of(c);
    int64_t                    n, i;
    int                        k, j, rc, f;

    memset(&err, 0, sizeof(err));
    memset(rec, 0, sizeof(*rec));
    clef_encode_opts_default(&eo);
    rc = clef_request_parse(&req, body, strlen(body), NULL, &err);
    free(body);
    if (rc != 0) {
        return -1;
    }
    rc = clef_request_check_media(&req, CLEF_MEDIA_BIT(CLEF_MEDIA_IMAGE)
                                  | CLEF_MEDIA_BIT(CLEF_MEDIA_VIDEO), &err);
    if (rc == 0) {
        rc = clef_plan_build(&req, &blob, &err) == 0
             && clef_plan_view(&plan, blob.data, blob.len, &err) == 0 ? 0 : -1;
    }
    clef_request_free(&req);
    if (rc != 0) {
        printf("#   %s\n", err.message);
        clef_buf_free(&blob);
        return -1;
    }
    clef_model_media_conf(m, &mc);
    clef_media_conf_tokens(&mc, eo.tokens);
    eo.media = calloc((size_t) plan.n_media + 1, sizeof(clef_media_item));
    eo.n_media = plan.n_media;
    for (k = 0; k < plan.n_media; k++) {
        it = &eo.media[k];
        it->kind = plan.media[k].kind;
        it->patch = vc->patch_size;
        it->temporal = vc->temporal_patch_size;
        it->merge = vc->spatial_merge_size;
        it->grid_t = it->kind == CLEF_MEDIA_VIDEO ? 2 + k % 2 : 1;
        it->frames = it->kind == CLEF_MEDIA_VIDEO
                     ? it->grid_t * it->temporal - 1 : 1;
        it->grid_h = it->merge * (2 + k % 3);
        it->grid_w = it->merge * (3 + k % 2);
        it->tokens = (int64_t) it->grid_t * it->grid_h * it->grid_w
                     / (it->merge * it->merge);
        for (f = 0; f < 3; f++) {
            it->mean[f] = 127.5f;
            it->std[f] = 127.5f;
        }
        n = (int64_t) it->frames * it->grid_h * it->grid_w * it->patch
            * it->patch * 3;
        it->bytes = malloc((size_t) n);
        for (i = 0; it->bytes != NULL && i < n; i++) {
            it->bytes[i] = (uint8_t) (rnd_u64() >> 56);
        }
        if (it->kind == CLEF_MEDIA_VIDEO) {
            it->timestamps = malloc(sizeof(double) * (size_t) it->grid_t);
            for (j = 0; it->timestamps != NULL && j < it->grid_t; j++) {
                it->timestamps[j] = 0.25 + 1.0 * j;
            }
        }
    }
    rc = clef_encode_plan(clef_model_tokenizer(m), &plan, &eo, rec, &err);
    if (rc != 0) {
        printf("#   %s\n", err.message);
    }
    clef_encode_media_release(&eo);
    clef_plan_free(&plan);
    clef_buf_free(&blob);
    return rc;
}

/* The requests of t/fixtures/vision/FILE on a checkpoint: at most
 * max_cases of them, each of at most max_tokens tokens (the device
 * check's time); synth: their media as synth_case() makes them. */
static void
test_model(const char *name, const char *config, int seed, const char *file,
    int max_cases, size_t max_tokens, int synth)
{
    const clef_backend_ops  *cpu;
    clef_backend            *cb = NULL, *gb = NULL;
    clef_backend_opts        bo;
    clef_cpu_vision         *cv = NULL;
    clef_model              *m = NULL;
    clef_error               err;
    clef_record              recs[40], text[2];
    const clef_record       *ptrs[42];
    json_t                  *cases = json_array(), *c;
    char                     dir[] = "/tmp/clef-cuda-vision-XXXXXX", cmd[2048];
    static char              line[1 << 20];
    FILE                    *f;
    float                   *alone[40], *packed, lc[256], lg[256], tl[2][16], tl2[16];
    float                    again[256], pc[256], pg[256];
    double                   worst_f = 0, worst_p = 0, e, d;
    long                     rep0, cap0, rep1, cap1;
    int                      n = 0, i, k, q, o, ok, same, all_same, off, total;
    int                      decided = 0, kept = 0, out, nq;

    memset(&err, 0, sizeof(err));
    if (mkdtemp(dir) == NULL) {
        CHECK(0, "%s: temporary directory", name);
        return;
    }
    snprintf(cmd, sizeof(cmd), "build/clef mkmodel --config '%s' --tokenizer '%s' "
             "--seed %d --out '%s/m' > /dev/null", config, check_qwen3_tokenizer(),
             seed, dir);
    CHECK_INT(system(cmd), 0, "%s: mkmodel", name);
    snprintf(cmd, sizeof(cmd), "%s/m", dir);
    m = clef_model_open(cmd, 0, &err);
    cpu = clef_backend_find("cpu", &err);
    memset(&bo, 0, sizeof(bo));
    ok = m != NULL && cpu != NULL && cpu->open(m, &bo, &cb, &err) == 0
         && clef_cuda_backend_ops.open(m, &bo, &gb, &err) == 0
         && clef_cpu_vision_open(m, pool, &cv, &err) == 0 && cv != NULL;
    CHECK(ok, "%s opens on the CPU and the CUDA backend, with a tower (%s)", name,
          ok ? "" : err.message);
    if (!ok) {
        goto done;
    }
    out = clef_model_vision_config(m)->out_hidden_size;

    snprintf(line, sizeof(line), "%s/vision/%s", check_fixtures(), file);
    f = fopen(line, "r");
    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        json_array_append_new(cases, json_loads(line, 0, NULL));
    }
    if (f != NULL) {
        fclose(f);
    }
    CHECK(json_array_size(cases) >= 4, "%zu requests of %s", json_array_size(cases),
          file);

    /* a text-only batch before any image */
    ok = encode_text(m, &text[0]) == 0 && encode_text(m, &text[1]) == 0
         && text[0].n_options <= 16;
    CHECK(ok, "%s: two text-only records", name);
    if (!ok) {
        goto done;
    }
    ok = forward(&clef_cuda_backend_ops, gb, (const clef_record *const []) { &text[0] },
                 1, tl[0]) == 0
         && forward(&clef_cuda_backend_ops, gb, (const clef_record *const []) { &text[1] },
                    1, tl[1]) == 0;
    CHECK(ok, "%s: text-only records on CUDA", name);

    json_array_foreach(cases, i, c) {
        const char   *cname = json_string_value(json_object_get(c, "name"));
        clef_record  *rec = &recs[n];

        if (n >= max_cases || n >= 40) {
            break;
        }
        if (json_array_size(json_object_get(c, "input_ids")) > max_tokens) {
            continue;
        }
        if ((synth ? synth_case(m, c, rec) : encode_case(m, c, rec)) != 0) {
            CHECK(0, "%s: encoded", cname);
            continue;
        }
        e = features_error(cv, gb, rec, out, &ok);
        worst_f = e > worst_f ? e : worst_f;
        CHECK(ok && e <= FEAT_TOL, "%s %s (%d items): merged features within %g "
              "of the CPU tower's (%.3g)", name, cname, rec->n_media, FEAT_TOL, e);

        ok = rec->n_options <= 256
             && forward(cpu, cb, (const clef_record *const []) { rec }, 1, lc) == 0
             && forward(&clef_cuda_backend_ops, gb,
                        (const clef_record *const []) { rec }, 1, lg) == 0;
        d = ok ? 0 : 1;
        all_same = 1;
        if (ok) {
            clef_answer_softmax(rec, lc, pc);
            clef_answer_softmax(rec, lg, pg);
        }
        for (q = 0; ok && q < rec->n_questions; q++) {
            off = rec->option_offset[q];
            nq = rec->option_offset[q + 1] - off;
            for (o = 0; o < nq; o++) {
                e = fabs((double) pc[off + o] - pg[off + o]);
                d = e > d || e != e ? e : d;
            }
            if (decided_question(pc + off, pg + off, nq, &same)) {
                decided++;
                kept += same;
                all_same &= same;
            }
        }
        worst_p = d > worst_p ? d : worst_p;
        CHECK(ok && d <= PROB_TOL && all_same, "%s %s: probabilities within %g of "
              "the CPU backend's (%.3g), its argmax where decided", name, cname,
              PROB_TOL, d);
        alone[n] = fvec((size_t) rec->n_options);
        memcpy(alone[n], lg, sizeof(float) * (size_t) rec->n_options);
        n++;
    }
    printf("# %s: %d requests: features max error %.3g, probabilities max |dp| "
           "%.3g, %d of %d decided questions keep their argmax\n", name, n,
           worst_f, worst_p, kept, decided);

    /* every request packed between the two text-only records */
    total = text[0].n_options + text[1].n_options;
    ptrs[0] = &text[0];
    for (k = 0; k < n; k++) {
        ptrs[k + 1] = &recs[k];
        total += recs[k].n_options;
    }
    ptrs[n + 1] = &text[1];
    packed = fvec((size_t) total);
    ok = n + 2 <= 63 && forward(&clef_cuda_backend_ops, gb, ptrs, n + 2, packed) == 0;
    same = ok && memcmp(packed, tl[0], sizeof(float) * (size_t) text[0].n_options) == 0;
    off = text[0].n_options;
    for (k = 0; ok && k < n; k++) {
        same &= memcmp(packed + off, alone[k],
                       sizeof(float) * (size_t) recs[k].n_options) == 0;
        off += recs[k].n_options;
    }
    same &= ok && memcmp(packed + off, tl[1],
                         sizeof(float) * (size_t) text[1].n_options) == 0;
    CHECK(same, "%s: %d records with media packed between two without: every "
          "logit bit-identical to the record alone", name, n);
    free(packed);

    /* no state left behind; batches with images never become graphs */
    ok = n > 0;
    clef_cuda_graph_stats(gb, &rep0, &cap0);
    for (k = 0; ok && k < 3; k++) {
        ok = forward(&clef_cuda_backend_ops, gb,
                     (const clef_record *const []) { &recs[n - 1] }, 1, again) == 0
             && memcmp(again, alone[n - 1],
                       sizeof(float) * (size_t) recs[n - 1].n_options) == 0;
    }
    clef_cuda_graph_stats(gb, &rep1, &cap1);
    CHECK(ok && rep1 == rep0 && cap1 == cap0, "%s: a batch with media three "
          "times: the same bits, eager (%ld replays, %ld captures)", name,
          rep1 - rep0, cap1 - cap0);
    ok = forward(&clef_cuda_backend_ops, gb, (const clef_record *const []) { &text[0] },
                 1, tl2) == 0
         && memcmp(tl2, tl[0], sizeof(float) * (size_t) text[0].n_options) == 0;
    CHECK(ok, "%s: a text-only record after batches with media: its first bits",
          name);
    /* an item of a kind this backend has no encoder for (an audio clip,
     * which nothing prepares yet: a record's first item relabelled):
     * refused before anything is launched, and the next forward as
     * before */
    if (n > 0) {
        clef_batch  batch;
        clef_error  err;
        int32_t     cu[2];
        int         kind;

        memset(&err, 0, sizeof(err));
        kind = recs[0].media[0].kind;
        recs[0].media[0].kind = CLEF_MEDIA_AUDIO;
        clef_batch_init(&batch, (const clef_record *const []) { &recs[0] }, 1,
                        cu);
        ok = clef_batch_set_media(&batch, &err) == 0
             && clef_cuda_backend_ops.forward(gb, &batch, again, &err) == -1
             && err.status == 400
             && strcmp(err.type, "audio_unsupported") == 0
             && strcmp(err.message, "The cuda backend has no encoder for "
                       "audio clips.") == 0;
        clef_batch_free_media(&batch);
        recs[0].media[0].kind = kind;
        CHECK(ok, "%s: an audio item: 400 audio_unsupported (%s)", name,
              err.message);
        ok = forward(&clef_cuda_backend_ops, gb,
                     (const clef_record *const []) { &recs[0] }, 1, again) == 0
             && memcmp(again, alone[0],
                       sizeof(float) * (size_t) recs[0].n_options) == 0;
        CHECK(ok, "%s: the first record after the refusal: its bits", name);
    }
    {
        long  fallbacks, heur;

        clef_cuda_gemm_stats(gb, &fallbacks, &heur);
        CHECK_INT(fallbacks, 0, "%s: no GEMM shape needed a row-dependent "
                  "algorithm (%ld heuristic queries)", name, heur);
    }

    for (k = 0; k < n; k++) {
        clef_record_free(&recs[k]);
        free(alone[k]);
    }
    clef_record_free(&text[0]);
    clef_record_free(&text[1]);

done:
    if (cv != NULL) {
        clef_cpu_vision_close(cv);
    }
    json_decref(cases);
    cuda_test_close(cpu, cb, gb, m, dir);
}

static void
test_tower_v1(void)
{
    char  cfg[1024];

    /* the seed t/unit/test_vision_e2e.c makes v1 with */
    snprintf(cfg, sizeof(cfg), "%s/models/v1.json", check_fixtures());
    test_model("v1", cfg, 11, "cases.jsonl", 40, 1 << 20, 0);
}

static void
test_video_v1(void)
{
    char  cfg[1024];

    /* the requests with videos (and images) of t/unit/test_video_e2e.c
     * (each clip's header probed, every frame random), up to 40 records
     * packed in one batch; decoded as the engine decodes them where the
     * decode process is built (not on the GPU machine: FFMPEG=no), those
     * of at most 700 tokens */
    snprintf(cfg, sizeof(cfg), "%s/models/v1.json", check_fixtures());
    test_model("video_v1", cfg, 11, "videos.jsonl", 40, 1 << 20, 1);
    if (access("build/clef-decoder", X_OK) != 0) {
        printf("# video_v1: decoded clips skipped: build/clef-decoder is not "
               "built (FFMPEG=no)\n");
        return;
    }
    use_build_decoder();
    test_model("video_v1_decoded", cfg, 11, "videos.jsonl", 40, 700, 0);
}

static void
test_tower_vision72(void)
{
    /* one request each of 1, 2, 3 and 4 images (cases v00..v03) */
    test_model("vision72", "t/cuda/models/vision72.json", 7, "cases.jsonl", 4,
               1 << 20, 0);
}

/* ---- driver ---------------------------------------------------------------- */

static const cuda_subtest  subtests[] = {
    { "vpatchify", test_vpatchify },
    { "vlayernorm", test_vlayernorm },
    { "vpos", test_vpos },
    { "vrotary", test_vrotary },
    { "vattention", test_vattention },
    { "velementwise", test_velementwise },
    { "tower_v1", test_tower_v1 },
    { "tower_vision72", test_tower_vision72 },
    { "video_v1", test_video_v1 },
};

#define N_SUBTESTS  (sizeof(subtests) / sizeof(subtests[0]))

int
main(int argc, char **argv)
{
    return cuda_test_main(argc, argv, subtests, N_SUBTESTS, &pool);
}
