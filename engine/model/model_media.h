/*
 * What a model takes of each media kind (media/kinds.h's clef_media_conf),
 * read from its configuration: images, their tokens and processor when it
 * has a vision tower (model.h's clef_vision_config); videos too when its
 * config names a video pad token (video_token_id), with the video
 * processor's configuration; audio clips when it has Clef Omni's audio
 * tower.  The worker's checks
 * (through clef_model_inspect) and the engine's encoder
 * (protocol/encode_media.h) read the same answer.  A model that takes
 * another kind says so here.
 */
#ifndef CLEF_MODEL_MEDIA_H
#define CLEF_MODEL_MEDIA_H

#include "media/kinds.h"
#include "model/model.h"

void clef_model_media_conf(const clef_model *m, clef_media_conf *mc);

/* What is left of mc's kinds on the backend named backend: the kinds it
 * has an encoder for (backend/registry.h; a model with an audio tower
 * takes audio only where its backend can encode it).  The worker, the
 * engine and clef decide all apply it. */
void clef_media_conf_backend(clef_media_conf *mc, const char *backend);

#endif
