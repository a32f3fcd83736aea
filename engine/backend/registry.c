/*
 * The backends' names and capabilities (registry.h).
 */
#include "backend/registry.h"

#include <ctype.h>
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

/* The CUDA backend runs its towers on rank 0 alone, so it encodes media
 * at tp=1 only (cuda/backend.c refuses a batch with media at tp > 1); the
 * CPU backend's ranks are threads over one memory and encode at any tp. */
static const clef_backend_entry  registry[] = {
    /* The CPU's default is exact (fp32) on a release and on a GGUF file
     * of float matrices, and the integer products (q8) on a
     * block-quantized file whose types q8 keeps at about their size:
     * measured on the same Q4_K_M file, fp32 runs at 0.65-0.82x
     * llama-server and q8 well above it, and a block-quantized file is
     * already an approximation of the model, which q8 stays within 5e-2
     * of and no further from than llama.cpp does (docs/design/
     * precision.md, "The default").  A file of grid or 1-2 bit types
     * (IQ2, IQ1, ...), which q8 expands several times, stays at fp32
     * over its own pages.  precision= overrides either way. */
    { "cpu", "fp32 on the CPU cores, a thread pool", 0, 1,
      CLEF_PRECISION_FP32, CLEF_PRECISION_Q8,
      CLEF_PRECISION_BIT(CLEF_PRECISION_FP32)
      | CLEF_PRECISION_BIT(CLEF_PRECISION_BF16)
      | CLEF_PRECISION_BIT(CLEF_PRECISION_Q8),
      ENCODERS, ENCODERS },
    { "cuda", "bf16 on NVIDIA GPUs (libclef_cuda.so, cuBLASLt)", 1, 1,
      CLEF_PRECISION_BF16, CLEF_PRECISION_BF16,
      CLEF_PRECISION_BIT(CLEF_PRECISION_BF16),
      ENCODERS, 0 },
    { NULL, NULL, 0, 0, CLEF_PRECISION_DEFAULT, CLEF_PRECISION_DEFAULT, 0, 0,
      0 }
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

/* "a", "a and b", "a, b and c": the names of the backends whose
 * precisions have bit (bit != 0), or of the precisions in set. */
static size_t
and_list(char *out, size_t size, unsigned bit, unsigned set)
{
    const clef_backend_entry  *e;
    const char                *item[8];
    size_t                     n = 0, i, w = 0;
    int                        p;

    for (e = registry; bit != 0 && e->name != NULL && n < 8; e++) {
        if (e->precisions & bit) {
            item[n++] = e->name;
        }
    }
    for (p = 0; bit == 0 && p < 32 && n < 8; p++) {
        if (set & CLEF_PRECISION_BIT(p)) {
            item[n++] = clef_precision_name((clef_precision) p);
        }
    }
    for (i = 0; i < n && w < size; i++) {
        w += (size_t) snprintf(out + w, size - w, "%s%s",
                               i == 0 ? "" : i == n - 1 ? " and " : ", ",
                               item[i]);
    }
    return w < size ? w : size;
}

const char *
clef_backend_precision_refusal(const char *name, size_t len,
    clef_precision p, char *why, size_t size)
{
    const clef_backend_entry  *e = clef_backend_lookup(name, len);
    char                       upper[16];
    size_t                     w, i;

    if (e == NULL || p == CLEF_PRECISION_DEFAULT
        || (e->precisions & CLEF_PRECISION_BIT(p)))
    {
        return NULL;
    }
    for (i = 0; e->name[i] != '\0' && i < sizeof(upper) - 1; i++) {
        upper[i] = (char) toupper((unsigned char) e->name[i]);
    }
    upper[i] = '\0';
    w = (size_t) snprintf(why, size, "precision=%s is for backend=",
                          clef_precision_name(p));
    w = w < size ? w : size;
    w += and_list(why + w, size - w, CLEF_PRECISION_BIT(p), 0);
    if (w < size) {
        snprintf(why + w, size - w, "; the %s backend computes in ", upper);
        w += strlen(why + w);
        and_list(why + w, size - w, 0, e->precisions);
    }
    return why;
}

clef_precision
clef_backend_precision(const char *name, size_t len, clef_precision p,
    clef_weights_kind kind)
{
    const clef_backend_entry  *e = clef_backend_lookup(name, len);

    if (e == NULL || p != CLEF_PRECISION_DEFAULT) {
        return e != NULL ? p : CLEF_PRECISION_DEFAULT;
    }
    return kind == CLEF_WEIGHTS_BLOCKS ? e->precision_blocks : e->precision;
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
