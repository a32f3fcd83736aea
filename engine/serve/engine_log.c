/*
 * The engine's and the keeper's log lines, formatted here and handed to
 * whoever started them (the nginx module writes them to its error log).
 */
#include <stdarg.h>
#include <stdio.h>

#include "serve/engine_conf.h"


void
clef_engine_log(const clef_engine_conf *conf, int level, const char *fmt, ...)
{
    char     buf[1024];
    va_list  ap;

    if (conf->log == NULL) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    conf->log(level, buf);
}
