/*
 * What a model takes of each media kind (see model_media.h).
 */
#include "model/model_media.h"

#include <string.h>

#include "backend/registry.h"


/* What Clef Omni's reference does differently (its joint_schema_model.py
 * encoder): each media item's token run followed by its own "\n", images
 * opened with PIL (no EXIF orientation) and sized within its IMAGE_SIZE,
 * shortest_edge 65536 and longest_edge 1048576 pixels; videos decoded
 * with PyAV at 2 frames a second and processed by Qwen2VLVideoProcessor
 * with the patches and normalisation of preprocessor_config.json (the
 * timed sampling of media/video_sample.h), in one span whose frame pairs
 * are position_id_per_seconds apart.  A record whose every video has
 * sound hears them: each video's track joins the record's audio clips
 * (protocol/encode_media.c, media/media.h). */
static void
omni_media_conf(const clef_model *m, clef_media_conf *mc)
{
    const clef_omni_config  *oc = clef_model_omni_config(m);
    int                      c;

    CLEF_MC_VIDEO(mc).patch_size = CLEF_MC_IMAGE(mc).patch_size;
    CLEF_MC_VIDEO(mc).temporal_patch_size =
        CLEF_MC_IMAGE(mc).temporal_patch_size;
    CLEF_MC_VIDEO(mc).merge_size = CLEF_MC_IMAGE(mc).merge_size;
    CLEF_MC_VIDEO(mc).rescale_factor = CLEF_MC_IMAGE(mc).rescale_factor;
    for (c = 0; c < 3; c++) {
        CLEF_MC_VIDEO(mc).mean[c] = CLEF_MC_IMAGE(mc).mean[c];
        CLEF_MC_VIDEO(mc).std[c] = CLEF_MC_IMAGE(mc).std[c];
    }
    clef_video_config_omni(&CLEF_MC_VIDEO(mc), oc != NULL
                           ? oc->position_id_per_seconds
                           : CLEF_OMNI_POSITIONS_PER_SECOND);
    mc->videos_with_sound = CLEF_VIDEO_SOUND_HEARD;
    mc->newline_each = 1;
    CLEF_MC_IMAGE(mc).exif_orientation = 0;
    CLEF_MC_IMAGE(mc).min_pixels = 65536;
    CLEF_MC_IMAGE(mc).max_pixels = 1048576;
}

void
clef_model_media_conf(const clef_model *m, clef_media_conf *mc)
{
    const clef_vision_config       *vc = clef_model_vision_config(m);
    const clef_audio_tower_config  *ac;
    const clef_omni_config         *oc;

    clef_media_conf_default(mc);
    if (vc != NULL) {
        mc->accepts |= CLEF_MEDIA_BIT(CLEF_MEDIA_IMAGE);
        mc->kind[CLEF_MEDIA_IMAGE].tokens.start = vc->vision_start_token_id;
        mc->kind[CLEF_MEDIA_IMAGE].tokens.pad = vc->image_token_id;
        mc->kind[CLEF_MEDIA_IMAGE].tokens.end = vc->vision_end_token_id;
        CLEF_MC_IMAGE(mc) = vc->processor;
        CLEF_MC_VIDEO(mc) = vc->video;
    }
    /* videos: the same tower, frame pairs, when the config names their
     * pad token */
    if (vc != NULL && vc->video_token_id > 0) {
        mc->accepts |= CLEF_MEDIA_BIT(CLEF_MEDIA_VIDEO);
        mc->kind[CLEF_MEDIA_VIDEO].tokens.start = vc->vision_start_token_id;
        mc->kind[CLEF_MEDIA_VIDEO].tokens.pad = vc->video_token_id;
        mc->kind[CLEF_MEDIA_VIDEO].tokens.end = vc->vision_end_token_id;
    }
    if (clef_model_family(m) == CLEF_FAMILY_OMNI) {
        omni_media_conf(m, mc);
    }
    /* audio clips (Clef Omni's audio tower): <|audio_start|>, one
     * <|audio_pad|> per row of the tower, <|audio_end|>; served only on a
     * backend with an audio encoder (clef_media_conf_backend) */
    ac = clef_model_audio_config(m);
    oc = clef_model_omni_config(m);
    if (ac != NULL && oc != NULL) {
        mc->accepts |= CLEF_MEDIA_BIT(CLEF_MEDIA_AUDIO);
        CLEF_MC_AUDIO(mc) = ac->features;
        mc->kind[CLEF_MEDIA_AUDIO].tokens.start = oc->audio_start_token_id;
        mc->kind[CLEF_MEDIA_AUDIO].tokens.pad = oc->audio_token_id;
        mc->kind[CLEF_MEDIA_AUDIO].tokens.end = oc->audio_end_token_id;
    }
}


void
clef_media_conf_backend(clef_media_conf *mc, const char *backend)
{
    mc->accepts &= clef_backend_media(backend, strlen(backend), 1);
}
