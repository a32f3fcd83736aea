/*
 * What the configuration parsers (model_vision.c, model_omni.c) share: a
 * refusal naming the file, and an integer key checked against its bounds.
 */
#ifndef CLEF_MODEL_CONFIG_JSON_H
#define CLEF_MODEL_CONFIG_JSON_H

#include <jansson.h>

#include "base/error.h"

/* CLEF_E_MODEL "FILE: message"; returns -1. */
int clef_cfg_fail(clef_error *err, const char *file, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* o[key] into *out, an integer within [lo, hi]; dflt when absent (dflt
 * < 0: the key is required).  Refusals name the key as PREFIXkey. */
int clef_cfg_int(const json_t *o, const char *prefix, const char *key,
    int lo, int hi, int dflt, int *out, const char *file, clef_error *err);

#endif
