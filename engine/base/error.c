#include "base/error.h"

#include <stdio.h>
#include <string.h>

int
clef_error_set(clef_error *err, int status, const char *type, const char *loc,
    const char *fmt, ...)
{
    va_list  ap;

    if (err == NULL) {
        return -1;
    }

    err->status = status;
    snprintf(err->type, sizeof(err->type), "%s", type ? type : "");
    snprintf(err->loc, sizeof(err->loc), "%s", loc ? loc : "");

    va_start(ap, fmt);
    vsnprintf(err->message, sizeof(err->message), fmt, ap);
    va_end(ap);

    return -1;
}

void
clef_error_clear(clef_error *err)
{
    if (err != NULL) {
        memset(err, 0, sizeof(*err));
    }
}
