#include "model/model_inspect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "model/model_media.h"
#include "model/shard.h"
#include "protocol/plan.h"
#include "text/tokenizer.h"


static int
by_bytes(const void *a, const void *b)
{
    const clef_weight_type  *x = a, *y = b;

    return x->bytes != y->bytes ? (x->bytes < y->bytes ? 1 : -1)
                                : (int) x->dtype - (int) y->dtype;
}

/* The model's types, one census: what its default precision depends on,
 * and the largest of them first, as many as info keeps (a file mixes a
 * handful: llama-quantize's _M files two or three). */
static void
inspect_types(const clef_model *m, clef_model_info *info)
{
    clef_weight_type  all[CLEF_DTYPE_COUNT];
    int               n, keep;

    n = clef_model_weight_types(m, all, CLEF_DTYPE_COUNT);
    info->kind = clef_weight_types_kind(all, n, &info->bytes,
                                        &info->q8_bytes);
    qsort(all, (size_t) n, sizeof(all[0]), by_bytes);
    keep = (int) (sizeof(info->types) / sizeof(info->types[0]));
    info->n_types = n < keep ? n : keep;
    memcpy(info->types, all, (size_t) info->n_types * sizeof(all[0]));
}

int
clef_model_inspect(const char *path, const char *mmproj, int tp,
    clef_model_info *info, clef_error *err)
{
    clef_model                *m;
    const clef_text_config    *tc;

    memset(info, 0, sizeof(*info));
    m = clef_model_open_files(path, mmproj, CLEF_MODEL_HEADERS_ONLY, err);
    if (m == NULL) {
        return CLEF_INSPECT_OPEN;
    }
    tc = clef_model_text_config(m);
    if (tp > 1 && clef_shard_check(tc, tp, err) != 0) {
        clef_model_close(m);
        return CLEF_INSPECT_TP;
    }
    info->layers = tc->num_hidden_layers;
    info->hidden_size = tc->hidden_size;
    info->max_token_bytes =
        clef_tokenizer_max_token_bytes(clef_model_tokenizer(m));
    clef_model_media_conf(m, &info->media);
    info->max_length = clef_model_default_max_length(m);
    if (info->max_length == 0) {
        info->max_length = CLEF_DEFAULT_MAX_LENGTH;
    }
    info->omni = clef_model_family(m) == CLEF_FAMILY_OMNI;
    snprintf(info->container, sizeof(info->container), "%s",
             clef_model_container(m));
    clef_model_weights(m, info->weights, sizeof(info->weights));
    inspect_types(m, info);
    clef_devplan_rank_of(tc, clef_model_head_config(m), tp, 0, &info->gpu_rank);
    info->gpu_weights = clef_devplan_weights(tc, clef_model_head_config(m),
                                             &info->gpu_rank);
    clef_model_close(m);
    return 0;
}
