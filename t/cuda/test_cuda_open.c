/*
 * The CUDA backend as the engine finds it: clef_backend_find("cuda")
 * dlopen()s libclef_cuda.so and returns its clef_cuda_backend_ops.
 *
 * Without a usable device (CI: no driver at all) open() must fail cleanly:
 * -1, no backend, a 503 "no_device" error whose message is
 * "no CUDA device: <the runtime's reason>".  With a device it opens the
 * tiny checkpoint `clef mkmodel --shape tiny` writes, refuses a device
 * ordinal that does not exist, and closes; what it allocated for the
 * weights is the memory plan's figure (backend/device_plan.h), at tp = 1
 * and for each rank of tp = 2 on one device, and an open whose plan does
 * not fit gpu_memory is refused before a weight is uploaded, naming the
 * numbers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "backend/device_plan.h"
#include "clef_cuda.h"
#include "cuda_test.h"

/* Each rank's weights as allocated against the plan's. */
static void
check_plan(const clef_model *m, clef_backend *b, const char *what)
{
    clef_devplan_rank  r;
    int64_t            w, ws;
    int                k, tp = clef_cuda_tp(b);

    for (k = 0; k < tp; k++) {
        clef_devplan_rank_of(clef_model_text_config(m),
                             clef_model_head_config(m), tp, k, &r);
        clef_cuda_memory(b, k, &w, &ws);
        CHECK_INT(w, clef_devplan_weights(clef_model_text_config(m),
                                          clef_model_head_config(m), &r),
                  "%s, rank %d: the weights allocated are the plan's", what, k);
        CHECK_INT(ws, 0, "%s, rank %d: no workspace before a forward", what, k);
    }
}

/* tp = 2, both ranks on device 0 (test_cuda_tp.c's same-device path) */
static void
check_tp2(const clef_model *m)
{
    int                devs[2] = { 0, 0 };
    clef_backend_opts  o = { .tp = 2, .n_devices = 2, .devices = devs };
    clef_backend      *b = NULL;
    clef_error         err;

    memset(&err, 0, sizeof(err));
    CHECK(clef_cuda_open_tp(m, &o, "same-device", &b, &err) == 0 && b != NULL,
          "tp=2 on device 0 opens: %s", err.message);
    if (b != NULL) {
        check_plan(m, b, "tp=2");
        clef_cuda_backend_ops.close(b);
    }
}

/* gpu_memory below the plan: refused at open, with the plan's words. */
static void
check_cap(const clef_backend_ops *ops, const clef_model *m)
{
    clef_backend_opts  o = { .gpu_memory = 16 << 20, .batch_tokens = 16384,
                             .batch_records = 256 };
    clef_backend      *b = NULL;
    clef_error         err;
    const char        *want = "cuda backend: needs 116.6 MB on each GPU "
                              "(weights 39.4 MB, workspace 43.6 MB at "
                              "max_batch_tokens=16384, cuBLASLt 33.6 MB) but "
                              "gpu_memory= caps device 0 at 16.8 MB (";

    memset(&err, 0, sizeof(err));
    CHECK(ops->open(m, &o, &b, &err) != 0 && b == NULL,
          "gpu_memory=16m: the open fails");
    CHECK(strncmp(err.message, want, strlen(want)) == 0,
          "and says why: %s", err.message);
    o.gpu_memory = (int64_t) 1 << 30;
    memset(&err, 0, sizeof(err));
    CHECK(ops->open(m, &o, &b, &err) == 0 && b != NULL,
          "gpu_memory=1g: it opens: %s", err.message);
    if (b != NULL) {
        ops->close(b);
    }
}

static void
check_refusal(const clef_backend_ops *ops, const clef_model *m, int device,
    const char *why)
{
    clef_backend_opts  o = { .device = device };
    clef_backend      *b = (clef_backend *) &o;     /* must be reset to NULL */
    clef_error         err;
    int                rc;

    memset(&err, 0, sizeof(err));
    rc = ops->open(m, &o, &b, &err);
    CHECK(rc != 0 && b == NULL, "open(device %d) fails and returns no backend", device);
    CHECK(strncmp(err.message, "no CUDA device: ", 16) == 0,
          "message starts with 'no CUDA device: ' (%s)", err.message);
    if (why != NULL) {
        CHECK(strstr(err.message, why) != NULL, "message carries the reason '%s'", why);
    }
    CHECK_INT(err.status, 503, "status 503");
    CHECK_STR(err.type, "no_device", "type no_device");
}

int
main(void)
{
    const clef_backend_ops  *ops;
    clef_error               err;
    cudaError_t              e;
    int                      n = 0;

    memset(&err, 0, sizeof(err));
    ops = clef_backend_find("cuda", &err);
    CHECK(ops != NULL, "clef_backend_find(\"cuda\") loads libclef_cuda.so: %s",
          err.message);
    if (ops == NULL) {
        return check_done();
    }
    CHECK(ops == &clef_cuda_backend_ops, "the ops are the library's clef_cuda_backend_ops");
    CHECK_STR(ops->name, "cuda", "backend name");

    e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        printf("# no device here: %s\n",
               e != cudaSuccess ? cudaGetErrorString(e) : "none found");
        check_refusal(ops, NULL, 0, e != cudaSuccess ? cudaGetErrorString(e) : NULL);
        check_refusal(ops, NULL, 3, NULL);
    } else {
        char                dir[] = "/tmp/clef-cuda-open-XXXXXX", cmd[1024];
        clef_model         *m;
        clef_backend       *b = NULL;
        clef_backend_opts   o = { .threads = 0 };

        CHECK(mkdtemp(dir) != NULL, "temporary directory");
        snprintf(cmd, sizeof(cmd),
                 "build/clef mkmodel --shape tiny --tokenizer %s "
                 "--seed 1 --out %s > /dev/null", check_qwen3_tokenizer(), dir);
        CHECK(system(cmd) == 0, "clef mkmodel --shape tiny");
        m = clef_model_open(dir, 0, &err);
        CHECK(m != NULL, "tiny checkpoint opens: %s", err.message);
        if (m != NULL) {
            CHECK(ops->open(m, &o, &b, &err) == 0 && b != NULL,
                  "open on device 0: %s", err.message);
            if (b != NULL) {
                check_plan(m, b, "tp=1");
                ops->close(b);
            }
            check_tp2(m);
            check_cap(ops, m);
            check_refusal(ops, m, n, "ordinal");
            clef_model_close(m);
        }
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        CHECK(system(cmd) == 0, "cleanup");
    }
    return check_done();
}
