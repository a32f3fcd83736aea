/*
 * What a model takes of each media kind (see model_media.h).
 */
#include "model/model_media.h"


void
clef_model_media_conf(const clef_model *m, clef_media_conf *mc)
{
    const clef_vision_config  *vc = clef_model_vision_config(m);

    clef_media_conf_default(mc);
    if (vc != NULL) {
        mc->accepts |= CLEF_MEDIA_BIT(CLEF_MEDIA_IMAGE);
        mc->tokens[CLEF_MEDIA_IMAGE].start = vc->vision_start_token_id;
        mc->tokens[CLEF_MEDIA_IMAGE].pad = vc->image_token_id;
        mc->tokens[CLEF_MEDIA_IMAGE].end = vc->vision_end_token_id;
        mc->processor = vc->processor;
        mc->video = vc->video;
    }
    /* videos: the same tower, frame pairs, when the config names their
     * pad token */
    if (vc != NULL && vc->video_token_id > 0) {
        mc->accepts |= CLEF_MEDIA_BIT(CLEF_MEDIA_VIDEO);
        mc->tokens[CLEF_MEDIA_VIDEO].start = vc->vision_start_token_id;
        mc->tokens[CLEF_MEDIA_VIDEO].pad = vc->video_token_id;
        mc->tokens[CLEF_MEDIA_VIDEO].end = vc->vision_end_token_id;
    }
}
