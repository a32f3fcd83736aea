/*
 * The backends' names and capabilities (registry.h).
 */
#include "backend/registry.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "media/media.h"

/* the encoders each backend has, the kinds of its towers' tables:
 * engine/cpu/towers.c's and cuda/tower.c's (images and videos on the
 * vision tower, audio clips on Clef Omni's audio tower) */
#define ENCODERS  (CLEF_MEDIA_BIT(CLEF_MEDIA_IMAGE) \
                   | CLEF_MEDIA_BIT(CLEF_MEDIA_VIDEO) \
                   | CLEF_MEDIA_BIT(CLEF_MEDIA_AUDIO))

static const clef_backend_entry  registry[] = {
    { "cpu", "fp32 on the CPU cores, a thread pool", 0, 1,
      CLEF_PRECISION_FP32, ENCODERS },
    { "cuda", "bf16 on NVIDIA GPUs (libclef_cuda.so, cuBLASLt)", 1, 1,
      CLEF_PRECISION_BF16, ENCODERS },
    { NULL, NULL, 0, 0, CLEF_PRECISION_DEFAULT, 0 }
};

const clef_backend_entry *
clef_backend_registry(void)
{
    return registry;
}

const clef_backend_entry *
clef_backend_lookup(const char *name, size_t len)
{
    const clef_backend_entry  *e;

    for (e = registry; e->name != NULL; e++) {
        if (strlen(e->name) == len && memcmp(e->name, name, len) == 0) {
            return e;
        }
    }
    return NULL;
}

static pthread_once_t  names_once = PTHREAD_ONCE_INIT;
static char            names[128];

static void
names_make(void)
{
    const clef_backend_entry  *e;
    size_t                     n = 0;

    for (e = registry; e->name != NULL && n < sizeof(names); e++) {
        n += (size_t) snprintf(names + n, sizeof(names) - n, "%s%s",
                               n ? ", " : "", e->name);
    }
}

const char *
clef_backend_names(void)
{
    pthread_once(&names_once, names_make);
    return names;
}
