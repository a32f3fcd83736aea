/*
 * A Clef GGUF file as a container (container.h): llama.cpp's converter
 * output, quantized or not, with the vision tower from its mmproj file
 * when one is given (or from the model's own file when it carries one).
 * Configs, tokenizer and the canonical tensors are gguf_clef.h's; this
 * file hands them to the model.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/container.h"
#include "model/gguf_clef.h"

typedef struct {
    clef_gguf_clef  *m;
    char            *path;
} gguf_container;

/* A GGUF by its magic, whatever its name. */
static int
gguf_probe(const char *path)
{
    char  magic[4];
    int   fd, ok;

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return 0;
    }
    ok = read(fd, magic, 4) == 4 && memcmp(magic, "GGUF", 4) == 0;
    close(fd);
    return ok;
}

static void
gguf_close(void *c)
{
    gguf_container  *g = c;

    if (g != NULL) {
        clef_gguf_clef_close(g->m);
        free(g->path);
        free(g);
    }
}

static void *
gguf_open(const char *path, const char *mmproj, int flags, clef_error *err)
{
    gguf_container  *g = calloc(1, sizeof(*g));

    if (g == NULL || (g->path = strdup(path)) == NULL) {
        free(g);
        clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
        return NULL;
    }
    g->m = clef_gguf_clef_open(path, mmproj,
                               flags & CLEF_MODEL_HEADERS_ONLY
                               ? CLEF_GGUF_HEADERS_ONLY : 0, err);
    if (g->m == NULL) {
        gguf_close(g);
        return NULL;
    }
    return g;
}

static int
gguf_configs(void *c, clef_model_configs *cfg, clef_error *err)
{
    gguf_container                 *g = c;
    const clef_vision_config       *v = clef_gguf_clef_vision_config(g->m);
    const clef_audio_tower_config  *a = clef_gguf_clef_audio_config(g->m);
    const clef_omni_config         *o = clef_gguf_clef_omni_config(g->m);

    cfg->family = clef_gguf_clef_family(g->m);
    cfg->text = *clef_gguf_clef_text_config(g->m);
    cfg->head = *clef_gguf_clef_head_config(g->m);
    memset(&cfg->vision, 0, sizeof(cfg->vision));
    memset(&cfg->audio, 0, sizeof(cfg->audio));
    memset(&cfg->omni, 0, sizeof(cfg->omni));
    if (v != NULL) {
        cfg->vision = *v;
    }
    if (a != NULL) {
        cfg->audio = *a;
    }
    if (o != NULL) {
        cfg->omni = *o;
    }
    return 0;
}

static const char *
gguf_where(void *c, clef_source s)
{
    return ((gguf_container *) c)->path;
}

static int
gguf_tensors(void *c, const clef_model_configs *cfg, clef_source s,
    clef_tensor_table *tt, clef_error *err)
{
    gguf_container               *g = c;
    const clef_gguf_clef_tensor  *e;
    const clef_gguf              *file;
    size_t                        i;
    int                           head = s == CLEF_SOURCE_HEAD;

    for (i = 0; i < clef_gguf_clef_count(g->m); i++) {
        e = clef_gguf_clef_at(g->m, i);
        if (e->head != head) {
            continue;
        }
        file = clef_role_of(e->role)->gguf_flags & CLEF_GGUF_MMPROJ
               ? clef_gguf_clef_vision_file(g->m) : clef_gguf_clef_file(g->m);
        if (clef_tensor_table_add(tt, e->name, head, &e->t,
                                  clef_gguf_path(file), err) != 0)
        {
            return -1;
        }
    }
    return 0;
}

static clef_tokenizer *
gguf_tokenizer(void *c, const clef_model_configs *cfg, clef_error *err)
{
    gguf_container  *g = c;
    clef_tokenizer  *tok = clef_gguf_clef_tokenizer(g->m, err);
    size_t           n;

    if (tok == NULL) {
        return NULL;
    }
    n = clef_tokenizer_vocab_size(tok);
    if (n > (size_t) cfg->text.vocab_size) {
        clef_error_fail(err, CLEF_E_MODEL, "%s: %zu token ids do not fit the"
                        " %d rows of token_embd.weight", g->path, n,
                        cfg->text.vocab_size);
        clef_tokenizer_free(tok);
        return NULL;
    }
    return tok;
}

/* llama.cpp's names of general.file_type (enum llama_ftype), for the
 * mixes llama-quantize makes. */
static const struct {
    int          id;
    const char  *name;
} ftypes[] = {
    { 0, "F32" }, { 1, "F16" }, { 2, "Q4_0" }, { 3, "Q4_1" }, { 7, "Q8_0" },
    { 8, "Q5_0" }, { 9, "Q5_1" }, { 10, "Q2_K" }, { 11, "Q3_K_S" },
    { 12, "Q3_K_M" }, { 13, "Q3_K_L" }, { 14, "Q4_K_S" }, { 15, "Q4_K_M" },
    { 16, "Q5_K_S" }, { 17, "Q5_K_M" }, { 18, "Q6_K" }, { 19, "IQ2_XXS" },
    { 20, "IQ2_XS" }, { 21, "Q2_K_S" }, { 22, "IQ3_XS" }, { 23, "IQ3_XXS" },
    { 24, "IQ1_S" }, { 25, "IQ4_NL" }, { 26, "IQ3_S" }, { 27, "IQ3_M" },
    { 28, "IQ2_S" }, { 29, "IQ2_M" }, { 30, "IQ4_XS" }, { 31, "IQ1_M" },
    { 32, "BF16" }, { 36, "TQ1_0" }, { 37, "TQ2_0" }, { 38, "MXFP4_MOE" },
    { 39, "NVFP4" },
};

static void
gguf_weights(void *c, char *buf, size_t size)
{
    gguf_container  *g = c;
    clef_error       err;
    int64_t          ft;
    size_t           i;

    if (clef_gguf_get_int(clef_gguf_clef_file(g->m), "general.file_type", 0,
                          1024, &ft, &err) == 0)
    {
        for (i = 0; i < sizeof(ftypes) / sizeof(ftypes[0]); i++) {
            if (ftypes[i].id == ft) {
                snprintf(buf, size, "%s", ftypes[i].name);
                return;
            }
        }
    }
    buf[0] = '\0';              /* the matrices' types say it */
}

const clef_container_kind  clef_container_gguf = {
    "GGUF file",
    gguf_probe,
    gguf_open,
    gguf_configs,
    gguf_tensors,
    gguf_where,
    gguf_tokenizer,
    gguf_weights,
    gguf_close,
};
