/*
 * The GGUF types ngx_clef reads only (model/quant.h), end to end, on Clef
 * files llama-quantize made of the gg1 checkpoint (t/fixtures/gguf/types,
 * t/reference/gen_gguf_types.py: every type it writes that ngx_clef reads
 * but does not write, the i-quants with an importance matrix, a dynamic
 * mix of --tensor-type overrides, and Q1_0 and Q2_0 in a mix: ggml's
 * dequantization their reference, gguf-py having none):
 *
 *   - every tensor of every file: its type, shape and bytes, and our
 *     dequantization of it, against gguf-py's (FNV-1a 64 in the
 *     manifest);
 *   - the exact mode: `clef decide --precision fp32` on each file answers
 *     byte for byte (--raw: unrounded logits and probabilities) as on an
 *     F32 file of the same tensors dequantized (written here): the blocks
 *     are dequantized into the very fp32 panels an F32 matrix gives, so
 *     the exact mode's agreement with the reference on F32 files
 *     (test_decide_e2e, 5.4e-7) holds for every type;
 *   - the fast mode: `--precision q8` within Q8_TOL of the exact mode on
 *     every probability (the worst difference printed per file), and
 *     deterministic: the same bytes with one thread and records batched.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "gguf_manifest.h"
#include "jsonl.h"
#include "shell.h"
#include "model/gguf.h"
#include "model/gguf_write.h"
#include "model/quant.h"

#define Q8_TOL  5e-2

static char  dir[256];
static char  fix[512];

/* path's metadata and tensors, every block type dequantized to F32, into
 * out. */
static int
write_twin(const char *path, const char *out, clef_error *err)
{
    const clef_gguf_tensor  *t;
    clef_gguf_writer        *w = clef_gguf_writer_new();
    clef_gguf               *g = clef_gguf_open(path, 0, err);
    float                  **vals;
    size_t                   i, n;
    int                      rc = g == NULL;

    n = g != NULL ? clef_gguf_tensor_count(g) : 0;
    vals = calloc(n + 1, sizeof(*vals));
    for (i = 0; rc == 0 && i < clef_gguf_kv_count(g); i++) {
        rc = clef_gguf_put_value(w, clef_gguf_kv_at(g, i)->key,
                                 clef_gguf_kv_at(g, i), err);
    }
    for (i = 0; rc == 0 && i < n; i++) {
        t = clef_gguf_tensor_at(g, i);
        if (!clef_dtype_is_block(t->dtype)) {
            rc = clef_gguf_add_tensor(w, t->name, t->type, t->ndim, t->ne,
                                      t->data, err);
            continue;
        }
        vals[i] = malloc((size_t) t->numel * sizeof(float));
        clef_dtype_traits_of(t->dtype)->to_f32(t->data, vals[i], t->numel);
        rc = clef_gguf_add_tensor_f32(w, t->name, CLEF_GGML_F32, t->ndim,
                                      t->ne, vals[i], err);
    }
    if (rc == 0) {
        rc = clef_gguf_writer_write(w, out, err);
    }
    for (i = 0; i < n; i++) {
        free(vals[i]);
    }
    free(vals);
    clef_gguf_writer_free(w);
    clef_gguf_close(g);
    return rc != 0 ? -1 : 0;
}

/* The largest |probability| difference of two --raw response files. */
static double
worst_diff(const char *a_path, const char *b_path, size_t *count)
{
    json_t       *a = read_jsonl(a_path), *b = read_jsonl(b_path);
    json_t       *ra, *rb, *qa, *pa, *pb;
    const char   *id;
    size_t        i, k;
    double        worst = 0, d;

    *count = 0;
    if (json_array_size(a) != json_array_size(b) || json_array_size(a) == 0) {
        worst = 1;
    }
    for (i = 0; worst < 1 && i < json_array_size(a); i++) {
        ra = json_object_get(json_array_get(a, i), "answers");
        rb = json_object_get(json_array_get(b, i), "answers");
        json_object_foreach(ra, id, qa) {
            pa = json_object_get(json_object_get(qa, "raw"), "probabilities");
            pb = json_object_get(json_object_get(json_object_get(rb, id),
                                                 "raw"), "probabilities");
            if (json_array_size(pa) == 0
                || json_array_size(pa) != json_array_size(pb))
            {
                worst = 1;
                break;
            }
            for (k = 0; k < json_array_size(pa); k++) {
                d = json_number_value(json_array_get(pa, k))
                    - json_number_value(json_array_get(pb, k));
                d = d < 0 ? -d : d;
                worst = d > worst ? d : worst;
            }
            (*count)++;
        }
    }
    json_decref(a);
    json_decref(b);
    return worst;
}

static void
check_answers(const char *file)
{
    clef_error  err;
    char        path[1200], twin[700], a[700], b[700];
    double      d;
    size_t      n;

    snprintf(path, sizeof(path), "%s/%s", fix, file);
    snprintf(twin, sizeof(twin), "%s/twin.gguf", dir);
    CHECK(write_twin(path, twin, &err) == 0, "%s: its F32 twin is written",
          file);
    CHECK(sh("build/clef decide '%s' --raw --precision fp32 < '%s/req.jsonl'"
             " > '%s/exact.out'", path, dir, dir) == 0
          && sh("build/clef decide '%s' --raw --precision fp32 < '%s/req.jsonl'"
                " > '%s/twin.out'", twin, dir, dir) == 0
          && sh("test $(grep -c '\"raw\"' '%s/exact.out') -eq"
                " $(wc -l < '%s/req.jsonl')", dir, dir) == 0
          && sh("cmp -s '%s/exact.out' '%s/twin.out'", dir, dir) == 0,
          "%s --precision fp32: every answer byte for byte (--raw) as on the"
          " F32 file of its dequantized tensors", file);
    CHECK(sh("build/clef decide '%s' --raw --precision q8 < '%s/req.jsonl'"
             " > '%s/q8.out'", path, dir, dir) == 0
          && sh("build/clef decide '%s' --raw --precision q8 -t 1 --batch 8"
                " < '%s/req.jsonl' > '%s/q8b.out'", path, dir, dir) == 0
          && sh("cmp -s '%s/q8.out' '%s/q8b.out'", dir, dir) == 0,
          "%s --precision q8: the same bytes on one thread, batched", file);
    snprintf(a, sizeof(a), "%s/q8.out", dir);
    snprintf(b, sizeof(b), "%s/exact.out", dir);
    d = worst_diff(a, b, &n);
    printf("# %s: max |q8 - fp32| over %zu questions: %.3g\n", file, n, d);
    CHECK(n > 20 && d <= Q8_TOL, "%s: q8 within %g of the exact mode (%.3g)",
          file, Q8_TOL, d);
}

/* The e2e fixture's requests that take the default limits, one a line. */
static int
write_requests(void)
{
    json_t  *cases = NULL, *c;
    FILE    *out;
    char     path[700];
    size_t   i;
    int      n = 0;

    snprintf(path, sizeof(path), "%s/e2e/q4_k_m.jsonl", fix);
    cases = read_jsonl(path);
    snprintf(path, sizeof(path), "%s/req.jsonl", dir);
    out = fopen(path, "w");
    json_array_foreach(cases, i, c) {
        if (out != NULL
            && json_integer_value(json_object_get(c, "max_length")) == 65536
            && strcmp(json_string_value(json_object_get(c, "truncate")),
                      "reject") == 0)
        {
            fprintf(out, "%s\n", json_string_value(json_object_get(c, "body")));
            n++;
        }
    }
    if (out != NULL) {
        fclose(out);
    }
    json_decref(cases);
    return n;
}

int
main(int argc, char **argv)
{
    json_t       *man, *files, *ts;
    json_error_t  jerr;
    const char   *file;
    char          path[1200];
    int           n;

    snprintf(fix, sizeof(fix), "%s/gguf", check_fixtures());
    snprintf(dir, sizeof(dir), "/tmp/clef-test-gguf-types-%ld",
             (long) getpid());
    sh("mkdir -p '%s'", dir);
    n = write_requests();
    CHECK(n > 20, "%d requests of the e2e fixture", n);
    snprintf(path, sizeof(path), "%s/types/manifest.json", fix);
    man = json_load_file(path, 0, &jerr);
    CHECK(man != NULL, "the manifest %s loads", path);
    files = json_object_get(man, "files");
    json_object_foreach(files, file, ts) {
        char  name[300];

        snprintf(name, sizeof(name), "types/%s", file);
        if (argc > 1 && strstr(file, argv[1]) == NULL) {
            continue;
        }
        snprintf(path, sizeof(path), "%s/%s", fix, name);
        manifest_check_file(path, name, ts);
        check_answers(name);
    }
    json_decref(man);
    sh("rm -rf '%s'", dir);
    return check_done();
}
