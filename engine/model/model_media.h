/*
 * What a model takes of each media kind (media/kinds.h's clef_media_conf),
 * read from its configuration: images, their tokens and processor when it
 * has a vision tower (model.h's clef_vision_config); videos too when its
 * config names a video pad token (video_token_id), with the video
 * processor's configuration.  The worker's checks
 * (through clef_model_inspect) and the engine's encoder
 * (protocol/encode_media.h) read the same answer.  A model that takes
 * another kind says so here.
 */
#ifndef CLEF_MODEL_MEDIA_H
#define CLEF_MODEL_MEDIA_H

#include "media/kinds.h"
#include "model/model.h"

void clef_model_media_conf(const clef_model *m, clef_media_conf *mc);

#endif
