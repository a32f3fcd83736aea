/*
 * The CUDA backend's memory plan (backend/device_plan.h) on the host: the
 * weights a rank uploads for mkmodel checkpoints (tiny, and the real
 * shapes of Clef-flash and Clef 27B, sparse) against byte counts worked
 * out here from their configs, the workspace at a 4096-token batch the
 * same way, and the refusals against simulated budgets, word for word.
 * What the backend allocates on a device is this plan (cuda/backend.c
 * carves the workspace from clef_devplan_ws_sizes); that the two agree on
 * a GPU is t/cuda's to check.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "shell.h"
#include "backend/device_plan.h"
#include "model/model_inspect.h"

static char  dir[256];

/* A dense Clef backbone and head as its config says them. */
typedef struct {
    int64_t  V, H, I, L, full_every, Hq, Hkv, hd, Hk, Hv, dk, dv, Kc, rot;
    int64_t  W, F, route, dec, heads;
} shape;

static int64_t
r8(int64_t v)
{
    return (v + 7) / 8 * 8;
}

/* The fp32 joint head: every tensor of the reference JointSchemaHead but
 * its three scalars. */
static int64_t
head_bytes(const shape *s)
{
    int64_t  H = s->H, W = s->W, F = s->F, f;

    f = 2 * H + 6 * W * H + 3 * W + 2 * W
        + s->route * (4 * W * W + 2 * F * W + 11 * W + F)
        + s->dec * (8 * W * W + 2 * F * W + 15 * W + F)
        + 4 * W + 4 * W * W + W + W + 1;
    return 4 * f;
}

/* Rank `rank` of tp: the embedding and RoPE's frequencies everywhere,
 * each layer's share, lm_head, the final norm and the head on rank 0. */
static int64_t
weights_of(const shape *s, int tp, int rank)
{
    int64_t  H = s->H, I = s->I / tp, Hq = s->Hq / tp, Hkv = s->Hkv / tp;
    int64_t  Hk = s->Hk / tp, Hv = s->Hv / tp, Cconv, b, l;

    Cconv = 2 * Hk * s->dk + Hv * s->dv;
    b = s->V * H * 2 + s->rot / 2 * 4;
    for (l = 0; l < s->L; l++) {
        b += 2 * H * 2 + 3 * I * H * 2;
        if ((l + 1) % s->full_every == 0) {
            b += r8(2 * Hq * s->hd + 2 * Hkv * s->hd) * H * 2
                 + H * Hq * s->hd * 2 + 2 * s->hd * 2;
        } else {
            b += r8(Cconv + Hv * s->dv + 2 * Hv) * H * 2 + H * Hv * s->dv * 2
                 + s->dv * 4 + Cconv * s->Kc * 2 + 2 * Hv * 4;
        }
    }
    if (rank == 0) {
        b += H * 2 + s->V * H * 2 + head_bytes(s);
    }
    return b;
}

/* Rank 0's workspace at T tokens (a multiple of 1024, at most 65536) in
 * 256 records: T / 16 options and as many questions, one work item per
 * record (at most 16 options a record, at most 256 tokens), every buffer
 * a multiple of 256 bytes already. */
static int64_t
workspace_at(const shape *s, int64_t T)
{
    int64_t  N = T / 16, Q = T / 16, NR = 256, items = 256;
    int64_t  H = s->H, W = s->W, F = s->F, I = s->I, Cconv, proj, mix, act;
    int64_t  gdn_rows, attn_rows;

    /* the widest stacked projection: gate | up, the GDN inputs, or
     * q (gated: twice) | k | v */
    Cconv = 2 * s->Hk * s->dk + s->Hv * s->dv;
    gdn_rows = r8(Cconv + s->Hv * s->dv + 2 * s->Hv);
    attn_rows = r8(2 * s->Hq * s->hd + 2 * s->Hkv * s->hd);
    proj = 2 * I > gdn_rows ? 2 * I : gdn_rows;
    proj = attn_rows > proj ? attn_rows : proj;
    mix = Cconv > (s->Hq + s->Hkv) * s->hd ? Cconv : (s->Hq + s->Hkv) * s->hd;
    act = I;
    return T * H * 2 * 2 + T * proj * 2 + T * mix * 2 + T * act * 2
           + T * H * 4 + T * W * 4 * 2 + T * 2 * W * 4
           + Q * H * 4 + N * H * 4 + NR * H * 4 + N * H * 4
           + Q * 2 * W * 4 + NR * W * 4 + N * W * 4
           + N * W * 4 + N * 3 * W * 4 + N * W * 4 + N * F * 4
           + Q * W * 4 + N * W * 4 + N * 4 * W * 4 + N * W * 4
           + items * 16 * s->heads * (W / s->heads + 2) * 4 + N * 4;
}

/* tiny's vocabulary is its tokenizer's (t/fixtures/tokenizer/qwen3:
 * 151,643 entries and 26 added tokens) */
static const shape  tiny = {
    151669, 64, 128, 4, 4, 4, 2, 32, 2, 4, 16, 16, 4, 8, 32, 64, 2, 2, 4
};
static const shape  flash = {
    248320, 4096, 12288, 32, 4, 16, 4, 256, 16, 32, 128, 128, 4, 64,
    1024, 4096, 2, 4, 16
};
static const shape  clef27 = {
    248320, 5120, 17408, 64, 4, 24, 4, 256, 16, 48, 128, 128, 4, 64,
    1024, 4096, 2, 4, 16
};

static int
inspect(const char *name, int tp, clef_model_info *info)
{
    clef_error  err;
    char        path[400];

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if (clef_model_inspect(path, NULL, tp, info, &err) != 0) {
        printf("# %s: %s\n", name, err.message);
        return -1;
    }
    return 0;
}

static void
test_shape(const char *name, const shape *s, int tp)
{
    clef_model_info  info;
    clef_devplan     p;

    if (inspect(name, tp, &info) != 0) {
        CHECK(0, "%s opens", name);
        return;
    }
    CHECK_INT(info.gpu_weights, weights_of(s, tp, 0),
              "%s at tp=%d: rank 0's weights, bytes", name, tp);
    if (tp == 1) {
        clef_devplan_of(&info.gpu_rank, info.gpu_weights, 4096, 256, &p);
        CHECK_INT(p.workspace, workspace_at(s, 4096),
                  "%s: the workspace at 4096 tokens, bytes", name);
        CHECK_INT(p.total, p.weights + p.workspace + (32 << 20),
                  "%s: the total adds the cuBLASLt workspace", name);
    }
}

/* The refusals, word for word, against budgets around the plan. */
static void
test_refusals(void)
{
    clef_model_info  info;
    clef_devplan     p, big;
    char             buf[400];
    int64_t          fit;

    if (inspect("flash", 1, &info) != 0) {
        CHECK(0, "flash opens");
        return;
    }
    clef_devplan_of(&info.gpu_rank, info.gpu_weights, 16384, 256, &p);
    CHECK_INT(p.workspace, workspace_at(&flash, 16384),
              "Clef-flash: the workspace at 16384 tokens, bytes");
    CHECK_STR(clef_devplan_describe(&p, buf, sizeof(buf)),
              "20.9 GB on each GPU (weights 18.4 GB, workspace 2.4 GB at "
              "max_batch_tokens=16384, cuBLASLt 33.6 MB)",
              "Clef-flash's plan in words");
    CHECK(clef_devplan_refusal(&info.gpu_rank, p.weights, 256, &p, p.total,
                               "x", buf, sizeof(buf)) == NULL,
          "a budget of exactly the plan fits");
    CHECK_STR(clef_devplan_refusal(&info.gpu_rank, p.weights, 256, &p,
                                   (int64_t) 16 << 30,
                                   "gpu_memory=16g (17.2 GB)", buf, sizeof(buf)),
              "needs 20.9 GB on each GPU (weights 18.4 GB, workspace 2.4 GB "
              "at max_batch_tokens=16384, cuBLASLt 33.6 MB) but "
              "gpu_memory=16g (17.2 GB)",
              "weights over the budget: no batch fits, none is named");
    CHECK(clef_devplan_refusal(&info.gpu_rank, p.weights, 256, &p,
                               (int64_t) 20 << 30, "gpu_memory=20g", buf,
                               sizeof(buf)) == NULL,
          "20g (21.5 GB) holds it");
    fit = clef_devplan_fit_tokens(&info.gpu_rank, p.weights, 16384, 256,
                                  (int64_t) 19 << 30);
    CHECK_INT(fit, 13056, "19g holds max_batch_tokens=13056");
    CHECK_STR(clef_devplan_refusal(&info.gpu_rank, p.weights, 256, &p,
                                   (int64_t) 19 << 30,
                                   "gpu_memory=19g (20.4 GB)", buf, sizeof(buf)),
              "needs 20.9 GB on each GPU (weights 18.4 GB, workspace 2.4 GB "
              "at max_batch_tokens=16384, cuBLASLt 33.6 MB) but "
              "gpu_memory=19g (20.4 GB); "
              "max_batch_tokens=13056 fits", "the workspace alone over: the "
              "batch that fits is named");
    clef_devplan_of(&info.gpu_rank, p.weights, fit, 256, &p);
    CHECK(p.total <= (int64_t) 19 << 30, "13056 tokens fit 19g");
    clef_devplan_of(&info.gpu_rank, p.weights, fit + 256, 256, &p);
    CHECK(p.total > (int64_t) 19 << 30, "13056 + 256 do not");

    /* no batch holds more than 1 << 24 tokens (cuda/plan.c) */
    clef_devplan_of(&info.gpu_rank, info.gpu_weights, (int64_t) 1 << 40, 256,
                    &big);
    clef_devplan_of(&info.gpu_rank, info.gpu_weights, 1 << 24, 256, &p);
    CHECK(big.workspace == p.workspace
          && big.batch_tokens == (int64_t) 1 << 40,
          "max_batch_tokens past 1 << 24 plans a batch of 1 << 24");
}

int
main(void)
{
    clef_model_info  info;
    clef_devplan     p;
    static const char *real[3][2] = {
        { "flash", "clef-flash" }, { "clef27", "clef" }, { "omni", "omni" }
    };
    int              k;

    snprintf(dir, sizeof(dir), "/tmp/clef-test-device-plan-%ld", (long) getpid());
    CHECK_INT(sh("build/clef mkmodel --shape tiny --tokenizer '%s' --seed 1"
                 " --sparse --out '%s/tiny' >/dev/null", check_qwen3_tokenizer(),
                 dir), 0, "mkmodel --shape tiny");
    for (k = 0; k < 3; k++) {
        CHECK_INT(sh("build/clef mkmodel --shape %s --tokenizer '%s%s' --seed 1"
                     " --sparse --out '%s/%s' >/dev/null", real[k][1],
                     k == 2 ? check_fixtures() : check_qwen3_tokenizer(),
                     k == 2 ? "/tokenizer/qwen3-omni" : "", dir, real[k][0]), 0,
                  "mkmodel --shape %s --sparse", real[k][1]);
    }
    test_shape("tiny", &tiny, 1);
    test_shape("tiny", &tiny, 2);
    test_shape("flash", &flash, 1);
    test_shape("flash", &flash, 2);
    test_shape("flash", &flash, 4);
    test_shape("clef27", &clef27, 1);
    test_refusals();

    /* clef decide: a size as nginx writes one, for a backend with devices */
    CHECK_INT(sh("build/clef decide '%s/tiny' --gpu-memory 16g </dev/null"
                 " 2>'%s/why'; test $? = 2 && grep -qx 'clef decide:"
                 " --gpu-memory applies to a backend with devices (cuda), not"
                 " to --backend cpu' '%s/why'", dir, dir, dir), 0,
              "clef decide refuses --gpu-memory on the CPU");
    CHECK_INT(sh("build/clef decide '%s/tiny' --backend cuda --gpu-memory 16q"
                 " </dev/null 2>'%s/why'; test $? = 2 && grep -qx 'clef decide:"
                 " bad value .16q. for --gpu-memory' '%s/why'", dir, dir, dir),
              0, "and a size it cannot read");

    /* the figures cuda/NOTES.md gives ("The memory plan") */
    for (k = 0; k < 3; k++) {
        char  buf[200];

        if (inspect(real[k][0], 1, &info) == 0) {
            clef_devplan_of(&info.gpu_rank, info.gpu_weights, 4096, 256, &p);
            printf("# %s at 4096 tokens: %lld + %lld + %lld = %lld bytes: %s\n",
                   real[k][1], (long long) p.weights, (long long) p.workspace,
                   (long long) p.fixed, (long long) p.total,
                   clef_devplan_describe(&p, buf, sizeof(buf)));
        }
    }
    sh("rm -rf '%s'", dir);
    return check_done();
}
