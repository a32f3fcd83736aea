#include "base/precision.h"

#include <string.h>

const char *
clef_precision_name(clef_precision p)
{
    switch (p) {
    case CLEF_PRECISION_FP32:
        return "fp32";
    case CLEF_PRECISION_BF16:
        return "bf16";
    case CLEF_PRECISION_Q8:
        return "q8";
    default:
        return "default";
    }
}

int
clef_precision_parse(const char *name, size_t len, clef_precision *p)
{
    if (len == 4 && memcmp(name, "fp32", 4) == 0) {
        *p = CLEF_PRECISION_FP32;
        return 0;
    }
    if (len == 4 && memcmp(name, "bf16", 4) == 0) {
        *p = CLEF_PRECISION_BF16;
        return 0;
    }
    if (len == 2 && memcmp(name, "q8", 2) == 0) {
        *p = CLEF_PRECISION_Q8;
        return 0;
    }
    return -1;
}
