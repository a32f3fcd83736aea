#include "model/model_inspect.h"

#include <string.h>

#include "model/model.h"
#include "model/model_media.h"
#include "model/shard.h"
#include "protocol/plan.h"
#include "text/tokenizer.h"


int
clef_model_inspect(const char *path, int tp, clef_model_info *info,
    clef_error *err)
{
    clef_model                *m;
    const clef_text_config    *tc;

    memset(info, 0, sizeof(*info));
    m = clef_model_open(path, CLEF_MODEL_HEADERS_ONLY, err);
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
    clef_model_close(m);
    return 0;
}
