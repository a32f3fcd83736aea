/*
 * The backends' names and capabilities (registry.h).
 */
#include "backend/registry.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "media/media.h"

/* the encoders each backend has: engine/cpu/backend_cpu.c's cpu_encoders,
 * cuda/backend.c's cuda_encoders (images and videos on the vision tower,
 * audio clips on Clef Omni's audio tower) */
#define ENCODERS  (CLEF_MEDIA_BIT(CLEF_MEDIA_IMAGE) \
                   | CLEF_MEDIA_BIT(CLEF_MEDIA_VIDEO) \
                   | CLEF_MEDIA_BIT(CLEF_MEDIA_AUDIO))

/* The CUDA backend runs its towers on rank 0 alone, so it encodes media
 * at tp=1 only (cuda/backend.c refuses a batch with media at tp > 1); the
 * CPU backend's ranks are threads over one memory and encode at any tp. */
static const clef_backend_entry  registry[] = {
    { "cpu", "fp32 on the CPU cores, a thread pool", 0, 1,
      CLEF_PRECISION_FP32, ENCODERS, ENCODERS },
    { "cuda", "bf16 on NVIDIA GPUs (libclef_cuda.so, cuBLASLt)", 1, 1,
      CLEF_PRECISION_BF16, ENCODERS, 0 },
    { NULL, NULL, 0, 0, CLEF_PRECISION_DEFAULT, 0, 0 }
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

unsigned
clef_backend_media(const char *name, size_t len, int tp)
{
    const clef_backend_entry  *e = clef_backend_lookup(name, len);

    return e == NULL ? 0 : tp > 1 ? e->media_tp : e->media;
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
