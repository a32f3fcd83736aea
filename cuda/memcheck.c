/*
 * The start's memory check: the memory plan (backend/device_plan.h) of
 * every rank against what its device has free, capped by gpu_memory=,
 * before a weight is uploaded, so that a model that cannot fit is refused
 * with its numbers (weights, workspace, free) rather than failing a
 * cudaMalloc half way through the upload.  `nginx -t` checks the same
 * plan against gpu_memory= alone.
 */
#include <stdio.h>
#include <string.h>

#include "cuda_backend.h"

int
cuda_memory_check(clef_backend *b, const clef_backend_opts *o, clef_error *err)
{
    const clef_model  *m = b->model;
    clef_devplan       plan, one;
    clef_backend      *k;
    int64_t            budget, w;
    size_t             free_b, total_b;
    char               against[160], why[400], cap[32], fr[32];
    int                r, s, records;

    if (o == NULL || o->batch_tokens <= 0) {
        return 0;
    }
    records = o->batch_records > 0 ? o->batch_records : 1;
    for (r = 0; r < b->tp; r++) {
        k = b->ranks[r];
        /* the ranks a device holds (same-device tensor parallelism: all
         * of them) share its memory; rank 0's plan is counted first */
        if (cuda_check(cudaSetDevice(k->device), "cudaSetDevice", err) != 0
            || cuda_check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo",
                          err) != 0)
        {
            return -1;
        }
        for (s = 0; s < r && b->ranks[s]->device != k->device; s++) {
            /* an earlier rank on this device counted it already */
        }
        if (s < r) {
            continue;
        }
        memset(&plan, 0, sizeof(plan));
        for (s = r; s < b->tp; s++) {
            if (b->ranks[s]->device != k->device) {
                continue;
            }
            w = clef_devplan_weights(clef_model_text_config(m),
                                     clef_model_head_config(m),
                                     &b->ranks[s]->plan);
            clef_devplan_of(&b->ranks[s]->plan, w, o->batch_tokens, records,
                            &one);
            plan.weights += one.weights;
            plan.workspace += one.workspace;
            plan.fixed += one.fixed;
            plan.total += one.total;
            plan.batch_tokens = one.batch_tokens;
        }
        budget = (int64_t) free_b;
        if (o->gpu_memory > 0 && o->gpu_memory < budget) {
            budget = o->gpu_memory;
            snprintf(against, sizeof(against), "gpu_memory= caps device %d at "
                     "%s (%s free)", k->device,
                     clef_devplan_size_text(budget, cap, sizeof(cap)),
                     clef_devplan_size_text((int64_t) free_b, fr, sizeof(fr)));
        } else {
            snprintf(against, sizeof(against), "device %d has %s free",
                     k->device,
                     clef_devplan_size_text((int64_t) free_b, fr, sizeof(fr)));
        }
        /* the batch that would fit is rank k's workspace beside every
         * rank's weights: exact at one rank a device, a hint otherwise */
        if (clef_devplan_refusal(&k->plan, plan.weights, records, &plan,
                                 budget, against, why, sizeof(why)) != NULL)
        {
            return clef_error_fail(err, CLEF_E_NO_MEMORY, "cuda backend: %s",
                                   why);
        }
    }
    return cuda_check(cudaSetDevice(b->device), "cudaSetDevice", err);
}
