/*
 * The vision tower's configuration (see model_vision.h).  Keys follow
 * transformers' Qwen3_5VisionConfig; every size must be stated, as for the
 * text stack.
 */
#include "model/model_vision.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/config_json.h"

#define MAX_DIM  (1 << 20)

int
clef_vision_config_parse(const json_t *root, const char *file,
    clef_vision_config *v, clef_error *err)
{
    const json_t  *vc = json_object_get(root, "vision_config"), *x, *y, *rp;
    const char    *p = "vision_config.";
    size_t         i;
    int            side;

    memset(v, 0, sizeof(*v));
    clef_processor_config_default(&v->processor);
    clef_video_config_default(&v->video);
    if (vc == NULL || json_is_null(vc)) {
        return 0;
    }
    if (!json_is_object(vc)) {
        return clef_cfg_fail(err, file, "vision_config is not an object");
    }
    if (clef_cfg_int(vc, p, "depth", 1, 256, -1, &v->depth, file, err) != 0
        || clef_cfg_int(vc, p, "hidden_size", 1, MAX_DIM, -1, &v->hidden_size,
               file, err) != 0
        || clef_cfg_int(vc, p, "intermediate_size", 1, MAX_DIM, -1,
               &v->intermediate_size, file, err) != 0
        || clef_cfg_int(vc, p, "num_heads", 1, 1024, -1, &v->num_heads, file,
               err) != 0
        || clef_cfg_int(vc, p, "in_channels", 3, 3, -1, &v->in_channels, file,
               err) != 0
        || clef_cfg_int(vc, p, "patch_size", 1, 64, -1, &v->patch_size, file,
               err) != 0
        || clef_cfg_int(vc, p, "temporal_patch_size", 1, 8, -1,
               &v->temporal_patch_size, file, err) != 0
        || clef_cfg_int(vc, p, "spatial_merge_size", 1, 8, -1,
               &v->spatial_merge_size, file, err) != 0
        || clef_cfg_int(vc, p, "num_position_embeddings", 1, 1 << 20, -1,
               &v->num_position_embeddings, file, err) != 0
        || clef_cfg_int(vc, p, "out_hidden_size", 1, MAX_DIM, -1,
               &v->out_hidden_size, file, err) != 0)
    {
        return -1;
    }
    if (v->hidden_size % v->num_heads != 0
        || (v->hidden_size / v->num_heads) % 4 != 0)
    {
        return clef_cfg_fail(err, file, "vision_config: hidden_size %d over "
                   "%d heads is no head size the 2D rotary can split (a "
                   "multiple of 4)", v->hidden_size, v->num_heads);
    }
    side = (int) lround(sqrt((double) v->num_position_embeddings));
    if (side * side != v->num_position_embeddings) {
        return clef_cfg_fail(err, file,
                   "vision_config.num_position_embeddings %d is not a square",
                   v->num_position_embeddings);
    }
    x = json_object_get(vc, "hidden_act");
    if (x != NULL && (!json_is_string(x)
                      || strcmp(json_string_value(x), "gelu_pytorch_tanh") != 0))
    {
        return clef_cfg_fail(err, file, "vision_config.hidden_act: only "
                   "\"gelu_pytorch_tanh\" is supported");
    }
    /* DeepStack (Clef Omni): the tower blocks whose output each merger of
     * merger_list reads, added after decoder layers 0, 1, ... */
    x = json_object_get(vc, "deepstack_visual_indexes");
    if (x != NULL && !json_is_array(x)) {
        return clef_cfg_fail(err, file,
                   "vision_config.deepstack_visual_indexes is not a list");
    }
    if (json_array_size(x) > sizeof(v->deepstack) / sizeof(v->deepstack[0]))
    {
        return clef_cfg_fail(err, file,
                   "vision_config.deepstack_visual_indexes has %zu entries, "
                   "at most %zu are supported", json_array_size(x),
                   sizeof(v->deepstack) / sizeof(v->deepstack[0]));
    }
    for (i = 0; i < json_array_size(x); i++) {
        y = json_array_get(x, i);
        if (!json_is_integer(y) || json_integer_value(y) < 0
            || json_integer_value(y) >= v->depth)
        {
            return clef_cfg_fail(err, file,
                       "vision_config.deepstack_visual_indexes[%zu] is not a "
                       "block of the %d", i, v->depth);
        }
        v->deepstack[v->n_deepstack++] = (int) json_integer_value(y);
    }
    /* transformers' default axial rotary: theta 10000 */
    v->rope_theta = 10000.0;
    rp = json_object_get(vc, "rope_parameters");
    x = rp != NULL ? json_object_get(rp, "rope_theta") : NULL;
    if (x != NULL) {
        if (!json_is_number(x)) {
            return clef_cfg_fail(err, file,
                       "vision_config.rope_parameters.rope_theta is not a "
                       "number");
        }
        v->rope_theta = json_number_value(x);
    }

    if (clef_cfg_int(root, "", "image_token_id", 0, 1 << 28, -1,
            &v->image_token_id, file, err) != 0
        || clef_cfg_int(root, "", "vision_start_token_id", 0, 1 << 28, -1,
               &v->vision_start_token_id, file, err) != 0
        || clef_cfg_int(root, "", "vision_end_token_id", 0, 1 << 28, -1,
               &v->vision_end_token_id, file, err) != 0)
    {
        return -1;
    }
    /* a config without it takes no videos */
    if (json_object_get(root, "video_token_id") != NULL
        && clef_cfg_int(root, "", "video_token_id", 1, 1 << 28, -1,
               &v->video_token_id, file, err) != 0)
    {
        return -1;
    }
    v->present = 1;
    return 0;
}


static int
pnum(const json_t *o, const char *key, double *out, const char *file,
    clef_error *err)
{
    const json_t  *x = json_object_get(o, key);

    if (x == NULL) {
        return 0;
    }
    if (!json_is_number(x)) {
        return clef_cfg_fail(err, file, "%s is not a number", key);
    }
    *out = json_number_value(x);
    return 0;
}


static int
ptriple(const json_t *o, const char *key, double *out, const char *file,
    clef_error *err)
{
    const json_t  *x = json_object_get(o, key);
    size_t         i;

    if (x == NULL) {
        return 0;
    }
    if (json_is_number(x)) {
        out[0] = out[1] = out[2] = json_number_value(x);
        return 0;
    }
    if (!json_is_array(x) || json_array_size(x) != 3) {
        return clef_cfg_fail(err, file, "%s is not a list of 3 numbers", key);
    }
    for (i = 0; i < 3; i++) {
        if (!json_is_number(json_array_get(x, i))) {
            return clef_cfg_fail(err, file, "%s is not a list of 3 numbers",
                       key);
        }
        out[i] = json_number_value(json_array_get(x, i));
    }
    return 0;
}


int
clef_processor_config_parse(const json_t *root, const char *file,
    const clef_vision_config *v, clef_processor_config *pc, clef_error *err)
{
    const json_t  *size, *x;
    double         d;

    clef_processor_config_default(pc);
    if (root != NULL) {
        x = json_object_get(root, "image_processor_type");
        if (x != NULL && (!json_is_string(x)
                          || strncmp(json_string_value(x),
                                     "Qwen2VLImageProcessor", 21) != 0))
        {
            return clef_cfg_fail(err, file, "image_processor_type: only "
                       "Qwen2VLImageProcessor(Fast) is supported");
        }
        size = json_object_get(root, "size");
        if (size != NULL) {
            d = (double) pc->min_pixels;
            if (pnum(size, "shortest_edge", &d, file, err) != 0) {
                return -1;
            }
            pc->min_pixels = (int64_t) d;
            d = (double) pc->max_pixels;
            if (pnum(size, "longest_edge", &d, file, err) != 0) {
                return -1;
            }
            pc->max_pixels = (int64_t) d;
        }
        d = pc->patch_size;
        if (pnum(root, "patch_size", &d, file, err) != 0) {
            return -1;
        }
        pc->patch_size = (int) d;
        d = pc->temporal_patch_size;
        if (pnum(root, "temporal_patch_size", &d, file, err) != 0) {
            return -1;
        }
        pc->temporal_patch_size = (int) d;
        d = pc->merge_size;
        if (pnum(root, "merge_size", &d, file, err) != 0) {
            return -1;
        }
        pc->merge_size = (int) d;
        if (pnum(root, "rescale_factor", &pc->rescale_factor, file, err) != 0
            || ptriple(root, "image_mean", pc->mean, file, err) != 0
            || ptriple(root, "image_std", pc->std, file, err) != 0)
        {
            return -1;
        }
    }
    if (pc->min_pixels < 1 || pc->max_pixels < pc->min_pixels
        || pc->rescale_factor <= 0)
    {
        return clef_cfg_fail(err, file, "size or rescale_factor out of range");
    }
    if (v != NULL && v->present
        && (pc->patch_size != v->patch_size
            || pc->temporal_patch_size != v->temporal_patch_size
            || pc->merge_size != v->spatial_merge_size))
    {
        return clef_cfg_fail(err, file, "patch_size %d, temporal_patch_size "
                   "%d, merge_size %d differ from the vision tower's %d, %d, "
                   "%d", pc->patch_size, pc->temporal_patch_size,
                   pc->merge_size, v->patch_size, v->temporal_patch_size,
                   v->spatial_merge_size);
    }
    return 0;
}


/* A bool of a video processor config: absent keeps *out; null is false
 * (transformers' None for cap_pixels_per_frame). */
static int
pbool(const json_t *o, const char *key, int *out, const char *file,
    clef_error *err)
{
    const json_t  *x = json_object_get(o, key);

    if (x == NULL) {
        return 0;
    }
    if (!json_is_boolean(x) && !json_is_null(x)) {
        return clef_cfg_fail(err, file, "%s is not a boolean", key);
    }
    *out = json_is_true(x);
    return 0;
}


int
clef_video_processor_config_parse(const json_t *root, const char *file,
    const clef_vision_config *v, clef_video_config *vc, clef_error *err)
{
    const json_t  *size, *x;
    double         d;
    int            sample = 1;

    clef_video_config_default(vc);
    if (root != NULL) {
        x = json_object_get(root, "video_processor_type");
        if (x != NULL && (!json_is_string(x)
                          || strcmp(json_string_value(x),
                                    "Qwen3VLVideoProcessor") != 0))
        {
            return clef_cfg_fail(err, file, "video_processor_type: only "
                       "Qwen3VLVideoProcessor is supported");
        }
        size = json_object_get(root, "size");
        if (size != NULL) {
            d = (double) vc->min_pixels;
            if (pnum(size, "shortest_edge", &d, file, err) != 0) {
                return -1;
            }
            vc->min_pixels = (int64_t) d;
            d = (double) vc->max_pixels;
            if (pnum(size, "longest_edge", &d, file, err) != 0) {
                return -1;
            }
            vc->max_pixels = (int64_t) d;
        }
#define INT_KEY(key, field)                                                 \
        d = (double) vc->field;                                             \
        if (pnum(root, key, &d, file, err) != 0) {                          \
            return -1;                                                      \
        }                                                                   \
        vc->field = (int) d
        INT_KEY("patch_size", patch_size);
        INT_KEY("temporal_patch_size", temporal_patch_size);
        INT_KEY("merge_size", merge_size);
        INT_KEY("min_frames", min_frames);
        INT_KEY("max_frames", max_frames);
#undef INT_KEY
        d = (double) vc->max_video_tokens;
        if (pnum(root, "max_video_tokens", &d, file, err) != 0
            || pnum(root, "fps", &vc->fps, file, err) != 0
            || pnum(root, "rescale_factor", &vc->rescale_factor, file, err)
               != 0
            || ptriple(root, "image_mean", vc->mean, file, err) != 0
            || ptriple(root, "image_std", vc->std, file, err) != 0
            || pbool(root, "cap_pixels_per_frame", &vc->cap_pixels_per_frame,
                     file, err) != 0
            || pbool(root, "do_sample_frames", &sample, file, err) != 0)
        {
            return -1;
        }
        vc->max_video_tokens = (int64_t) d;
    }
    if (!sample) {
        return clef_cfg_fail(err, file, "do_sample_frames: only sampled "
                   "frames (true) are supported");
    }
    if (vc->min_pixels < 1 || vc->max_pixels < vc->min_pixels
        || vc->max_pixels > INT64_C(1) << 32 || vc->rescale_factor <= 0
        || !(vc->fps > 0 && vc->fps <= 1000) || vc->min_frames < 1
        || vc->max_frames < vc->min_frames || vc->max_frames > 4096
        || vc->max_video_tokens < 1)
    {
        return clef_cfg_fail(err, file, "size, fps, min_frames, max_frames, "
                   "max_video_tokens or rescale_factor out of range");
    }
    if (v != NULL && v->present
        && (vc->patch_size != v->patch_size
            || vc->temporal_patch_size != v->temporal_patch_size
            || vc->merge_size != v->spatial_merge_size))
    {
        return clef_cfg_fail(err, file, "patch_size %d, temporal_patch_size "
                   "%d, merge_size %d differ from the vision tower's %d, %d, "
                   "%d", vc->patch_size, vc->temporal_patch_size,
                   vc->merge_size, v->patch_size, v->temporal_patch_size,
                   v->spatial_merge_size);
    }
    return 0;
}
