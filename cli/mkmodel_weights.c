/*
 * Random weights that are the same bytes on every machine, streamed into
 * safetensors files through a bounded buffer (a 9B shard is never held in
 * memory).
 *
 * Each tensor draws from its own splitmix64 stream, seeded by the run's seed
 * and the tensor's name, so its values do not depend on the shard layout.
 * A value is center + amp * (2u - 1) with u a 24-bit fraction, computed in
 * double where the product is exact (so a fused multiply-add changes
 * nothing) and rounded once to float: integer arithmetic and correctly
 * rounded operations only (no libm), so the bytes cannot differ between
 * machines.
 */
#include "mkmodel.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/splitmix64.h"

#define CHUNK  (1 << 20)                   /* elements per write */

/* ln 16: A_log = log(A) with A in [1, 16], drawn uniform in log space. */
#define LN16  2.7725887f

static uint64_t
stream_seed(uint64_t seed, const char *name)
{
    uint64_t  h = 0xcbf29ce484222325ULL, s = seed;     /* FNV-1a of the name */

    while (*name != '\0') {
        h = (h ^ (unsigned char) *name++) * 0x100000001b3ULL;
    }
    return clef_splitmix64(&s) ^ h;
}

/* Scales that keep activations in a sane range through every layer, by
 * what a tensor is (its role's kind, roles.h): linears ~ U(-1/sqrt(fan_in),
 * 1/sqrt(fan_in)); zero-centred RMSNorm weights small around 0; norms
 * applied as w (the GDN's gated norm, the tower's and the head's
 * LayerNorms) around 1. */
static void
init_rule(const clef_tensor_spec *s, clef_role_kind kind, float *center,
    float *amp)
{
    int64_t  fan_in;

    *center = 0.0f;
    switch (s->role) {
    case CLEF_ROLE_H_PRIOR_SCALE:
        *center = 0.7f;
        *amp = 0.05f;
        return;
    case CLEF_ROLE_H_JOINT_SCALE:
        *center = 1.3f;
        *amp = 0.05f;
        return;
    case CLEF_ROLE_H_RESIDUAL_GATE:
        *center = 0.4f;
        *amp = 0.05f;
        return;
    case CLEF_ROLE_H_SCORER_OUT:
        /* An output of std ~3, so that a random head still has clear
         * favourites (golden outputs with a margin between options). */
        *amp = 12.0f / sqrtf((float) s->shape[1]);
        return;
    case CLEF_ROLE_H_TYPE_EMBEDDING:
        *amp = 0.5f;
        return;
    default:
        break;
    }
    switch (kind) {
    case CLEF_RK_EMBED:
        *amp = 1.0f;
        break;
    case CLEF_RK_A_LOG:
        *center = 0.5f * LN16;
        *amp = 0.5f * LN16;
        break;
    case CLEF_RK_DT_BIAS:
        *amp = 0.25f;
        break;
    case CLEF_RK_NORM:
        *center = 1.0f;
        *amp = 0.1f;
        break;
    case CLEF_RK_NORM_1P:
    case CLEF_RK_NORM_BIAS:
        *amp = 0.1f;
        break;
    case CLEF_RK_POSITIONS:
        *amp = 0.5f;
        break;
    case CLEF_RK_BIAS:
        *amp = 0.05f;
        break;
    default:
        fan_in = s->ndim == 5 ? s->shape[1] * s->shape[2] * s->shape[3] * s->shape[4]
                 : s->ndim == 4 ? s->shape[1] * s->shape[2] * s->shape[3]
                 : s->ndim == 3 ? s->shape[1] * s->shape[2]
                 : s->ndim == 2 ? s->shape[1] : 1;
        *amp = 1.0f / sqrtf((float) fan_in);
        break;
    }
}

static int
write_data(FILE *f, const mkmodel_tensor *t, uint64_t seed, void *buf)
{
    uint64_t   state = stream_seed(seed, t->spec.name);
    int64_t    numel = 1, done, n, i;
    float      center, amp, v;
    double     u;
    float     *f32 = buf;
    uint16_t  *b16 = buf;
    size_t     es = clef_dtype_size(t->dtype);
    int        k;

    for (k = 0; k < t->spec.ndim; k++) {
        numel *= t->spec.shape[k];
    }
    init_rule(&t->spec, t->kind, &center, &amp);

    for (done = 0; done < numel; done += n) {
        n = numel - done < CHUNK ? numel - done : CHUNK;
        for (i = 0; i < n; i++) {
            u = (double) (clef_splitmix64(&state) >> 40) * 0x1p-24;
            v = (float) ((double) center + (double) amp * (2.0 * u - 1.0));
            if (t->dtype == CLEF_DTYPE_F32) {
                f32[i] = v;
            } else {
                b16[i] = clef_f32_to_bf16(v);
            }
        }
        if (fwrite(buf, es, (size_t) n, f) != (size_t) n) {
            return -1;
        }
    }
    return 0;
}

static char *
header_json(const mkmodel_tensor *tensors, int n, uint64_t *data_len)
{
    json_t    *root = json_object(), *e;
    uint64_t   off = 0;
    char      *text;
    int        i, k;

    json_object_set_new(root, "__metadata__", json_pack("{s:s}", "format", "pt"));
    for (i = 0; i < n; i++) {
        e = json_object();
        json_object_set_new(e, "dtype", json_string(clef_dtype_name(tensors[i].dtype)));
        json_object_set_new(e, "shape", json_array());
        for (k = 0; k < tensors[i].spec.ndim; k++) {
            json_array_append_new(json_object_get(e, "shape"),
                                  json_integer(tensors[i].spec.shape[k]));
        }
        json_object_set_new(e, "data_offsets",
                            json_pack("[I,I]", (json_int_t) off,
                                      (json_int_t) (off + tensors[i].nbytes)));
        json_object_set_new(root, tensors[i].spec.name, e);
        off += tensors[i].nbytes;
    }
    text = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(root);
    *data_len = off;
    return text;
}

int
mkmodel_write_safetensors(const char *path, const mkmodel_tensor *tensors, int n,
    uint64_t seed, int sparse)
{
    FILE      *f;
    char      *header;
    void      *buf = NULL;
    uint64_t   hlen, data_len;
    uint8_t    lb[8];
    size_t     pad;
    int        i, rc = -1;

    header = header_json(tensors, n, &data_len);
    f = fopen(path, "wb");
    if (header == NULL || f == NULL) {
        fprintf(stderr, "clef mkmodel: %s: %s\n", path,
                f == NULL ? strerror(errno) : "out of memory");
        goto done;
    }

    /* The header is padded with spaces so that the data starts 8-aligned. */
    pad = (8 - strlen(header) % 8) % 8;
    hlen = strlen(header) + pad;
    for (i = 0; i < 8; i++) {
        lb[i] = (uint8_t) (hlen >> (8 * i));
    }
    if (fwrite(lb, 1, 8, f) != 8 || fputs(header, f) == EOF
        || fprintf(f, "%*s", (int) pad, "") < 0)
    {
        goto io_error;
    }

    if (sparse) {
        if (fflush(f) != 0 || ftruncate(fileno(f), (off_t) (8 + hlen + data_len)) != 0) {
            goto io_error;
        }
    } else {
        buf = malloc((size_t) CHUNK * sizeof(float));
        if (buf == NULL) {
            fprintf(stderr, "clef mkmodel: out of memory\n");
            goto done;
        }
        for (i = 0; i < n; i++) {
            if (write_data(f, &tensors[i], seed, buf) != 0) {
                goto io_error;
            }
        }
    }
    if (fclose(f) != 0) {
        f = NULL;
        goto io_error;
    }
    f = NULL;
    rc = 0;
    goto done;

io_error:
    fprintf(stderr, "clef mkmodel: %s: write failed: %s\n", path, strerror(errno));

done:
    if (f != NULL) {
        fclose(f);
    }
    free(buf);
    free(header);
    return rc;
}
