/*
 * Configuration keys (see config_json.h).
 */
#include "model/config_json.h"

#include <stdarg.h>
#include <stdio.h>


int
clef_cfg_fail(clef_error *err, const char *file, const char *fmt, ...)
{
    char     msg[400];
    va_list  ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return clef_error_fail(err, CLEF_E_MODEL, "%s: %s", file, msg);
}


int
clef_cfg_int(const json_t *o, const char *prefix, const char *key, int lo,
    int hi, int dflt, int *out, const char *file, clef_error *err)
{
    const json_t  *v = json_object_get(o, key);

    if (v == NULL && dflt >= 0) {
        *out = dflt;
        return 0;
    }
    if (v == NULL) {
        return clef_cfg_fail(err, file, "%s%s is missing", prefix, key);
    }
    if (!json_is_integer(v) || json_integer_value(v) < lo
        || json_integer_value(v) > hi)
    {
        return clef_cfg_fail(err, file, "%s%s must be an integer in [%d, %d]",
                             prefix, key, lo, hi);
    }
    *out = (int) json_integer_value(v);
    return 0;
}
