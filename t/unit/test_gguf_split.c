/*
 * Split GGUFs (model/gguf_split.h): llama.cpp's gg1 Q4_K_M fixture written
 * as llama-gguf-split's parts by clef_gguf_split_write (3 parts of 40
 * tensors; and 4 with a metadata-only first part, --no-tensor-first-split)
 *   - every part carries split.no, split.count, split.tensors.count with
 *     llama-gguf-split's types, the metadata only in the first; and each
 *     part is byte for byte what llama-gguf-split writes with the same
 *     options (t/fixtures/gguf/split.json, gen_split_fixtures.py), so the
 *     tests' split files are llama.cpp's;
 *   - the first part opens as the whole file: every tensor with the same
 *     name, type, shape and bytes, each from its part; headers only too;
 *   - `clef decide` on the first part answers byte for byte as on the
 *     unsplit file, at fp32 and at q8;
 *   - refusals, each naming the part: a later part given alone, a missing
 *     part, a part of another split, parts swapped, a tensor missing, a
 *     tensor in two parts, a first part not named as one, a part that says
 *     another tensor count.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "check.h"
#include "gguf_manifest.h"
#include "slurp.h"
#include "shell.h"
#include "model/gguf.h"
#include "model/gguf_clef.h"
#include "model/gguf_split.h"
#include "model/gguf_write.h"

static char  dir[256];
static char  src[600];

static const char *
part(const char *prefix, int no, int count)
{
    static char  path[4][700];
    static int   k;
    char         pre[600];

    k = (k + 1) % 4;
    snprintf(pre, sizeof(pre), "%s/%s", dir, prefix);
    clef_gguf_split_path(path[k], sizeof(path[k]), pre, no, count);
    return path[k];
}

/* The same tensors, in the same order, with the same bytes. */
static int
same_tensors(const clef_gguf *a, const clef_gguf *b)
{
    const clef_gguf_tensor  *x, *y;
    size_t                   i;

    if (clef_gguf_tensor_count(a) != clef_gguf_tensor_count(b)) {
        return 0;
    }
    for (i = 0; i < clef_gguf_tensor_count(a); i++) {
        x = clef_gguf_tensor_at(a, i);
        y = clef_gguf_tensor_at(b, i);
        if (strcmp(x->name, y->name) != 0 || x->type != y->type
            || x->ndim != y->ndim || memcmp(x->ne, y->ne, sizeof(x->ne)) != 0
            || x->nbytes != y->nbytes
            || (x->data != NULL && y->data != NULL
                && memcmp(x->data, y->data, x->nbytes) != 0)
            || clef_gguf_tensor_find(b, x->name) != y)
        {
            printf("#   tensor %zu '%s' differs\n", i, x->name);
            return 0;
        }
    }
    return 1;
}

static void
test_keys(void)
{
    const clef_gguf_value  *no, *count, *n;
    clef_gguf              *p;
    clef_error              err;
    int                     i, ok = 1;

    for (i = 0; i < 3; i++) {
        p = clef_gguf_open(part("a", i, 3), CLEF_GGUF_ONE_PART, &err);
        if (p == NULL) {
            CHECK(0, "part %d opens alone: %s", i + 1, err.message);
            return;
        }
        no = clef_gguf_get(p, "split.no");
        count = clef_gguf_get(p, "split.count");
        n = clef_gguf_get(p, "split.tensors.count");
        ok &= no != NULL && no->type == CLEF_GGUF_UINT16
              && no->v.u == (uint64_t) i
              && count != NULL && count->type == CLEF_GGUF_UINT16
              && count->v.u == 3
              && n != NULL && n->type == CLEF_GGUF_INT32 && n->v.i == 92
              && (i == 0 ? clef_gguf_kv_count(p) > 3
                         : clef_gguf_kv_count(p) == 3)
              && clef_gguf_tensor_count(p) == (i < 2 ? 40u : 12u);
        clef_gguf_close(p);
    }
    CHECK(ok, "3 parts of 40, 40 and 12 tensors: split.no UINT16 0-2,"
          " split.count UINT16 3, split.tensors.count INT32 92 in each, the"
          " model's metadata in the first only");
}

/* Each part of splits "a" (3) and "b" (4) against llama-gguf-split's. */
static void
test_llama_bytes(void)
{
    static const struct {
        const char  *key;
        int          n;
    } splits[] = { { "a", 3 }, { "b", 4 } };
    json_t       *want, *h;
    json_error_t  jerr;
    char          path[700], got[20], *bytes;
    size_t        len, k;
    int           i, ok;

    snprintf(path, sizeof(path), "%s/gguf/split.json", check_fixtures());
    want = json_load_file(path, 0, &jerr);
    for (k = 0; k < 2; k++) {
        h = json_object_get(want, splits[k].key);
        ok = (int) json_array_size(h) == splits[k].n;
        for (i = 0; ok && i < splits[k].n; i++) {
            bytes = slurp(part(splits[k].key, i, splits[k].n), &len);
            snprintf(got, sizeof(got), "%016llx",
                     (unsigned long long) (bytes ? fnv(bytes, len) : 0));
            ok = bytes != NULL
                 && strcmp(got, json_string_value(json_array_get(h, i))) == 0;
            free(bytes);
        }
        CHECK(ok, "split %s: its %d parts byte for byte llama-gguf-split's",
              splits[k].key, splits[k].n);
    }
    json_decref(want);
}

static void
test_open(void)
{
    clef_gguf   *whole, *g;
    clef_error   err;
    size_t       i;
    int          ok;

    whole = clef_gguf_open(src, 0, &err);
    g = clef_gguf_open(part("a", 0, 3), 0, &err);
    CHECK(g != NULL && whole != NULL, "the first part opens: %s",
          g ? "" : err.message);
    if (g == NULL || whole == NULL) {
        clef_gguf_close(whole);
        return;
    }
    CHECK(clef_gguf_tensor_count(whole) == 92 && same_tensors(whole, g),
          "as the whole file: all 92 tensors, in order, the same bytes");
    ok = clef_gguf_part_count(g) == 3
         && strcmp(clef_gguf_part_path(g, 2), part("a", 2, 3)) == 0
         && clef_gguf_part_path(g, 3) == NULL;
    for (i = 0; i < clef_gguf_tensor_count(g); i++) {
        ok &= clef_gguf_tensor_at(g, i)->part == (int) i / 40;
    }
    CHECK(ok, "3 files, each tensor from its part");
    CHECK(clef_gguf_kv_count(g) == clef_gguf_kv_count(whole) + 3,
          "the metadata: the file's and the three split keys");
    clef_gguf_close(g);

    g = clef_gguf_open(part("b", 0, 4), CLEF_GGUF_HEADERS_ONLY, &err);
    CHECK(g != NULL && clef_gguf_part_count(g) == 4
          && same_tensors(whole, g)
          && clef_gguf_tensor_at(g, 0)->data == NULL
          && clef_gguf_tensor_at(g, 0)->part == 1,
          "a metadata-only first part, headers only: every part's tensor"
          " infos, nothing mapped: %s", g ? "" : err.message);
    clef_gguf_close(g);
    clef_gguf_close(whole);
}

/* The bodies of the e2e fixture's requests, one a line, into dir/req.jsonl. */
static int
write_requests(void)
{
    json_t       *j;
    json_error_t  jerr;
    FILE         *in, *out;
    char         *line = NULL, path[700];
    size_t        cap = 0;
    int           n = 0;

    snprintf(path, sizeof(path), "%s/gguf/e2e/q4_k_m.jsonl", check_fixtures());
    in = fopen(path, "r");
    snprintf(path, sizeof(path), "%s/req.jsonl", dir);
    out = fopen(path, "w");
    while (in != NULL && out != NULL && getline(&line, &cap, in) > 0) {
        j = json_loads(line, 0, &jerr);
        if (j != NULL && json_is_string(json_object_get(j, "body"))) {
            fprintf(out, "%s\n", json_string_value(json_object_get(j, "body")));
            n++;
        }
        json_decref(j);
    }
    free(line);
    if (in != NULL) {
        fclose(in);
    }
    if (out != NULL) {
        fclose(out);
    }
    return n;
}

static void
test_decide(void)
{
    const char  *prec[] = { "fp32", "q8" };
    int          i;

    CHECK_INT(write_requests(), 25, "the e2e fixture's 25 requests");
    for (i = 0; i < 2; i++) {
        CHECK(sh("build/clef decide '%s' --precision %s < '%s/req.jsonl'"
                 " > '%s/whole.out'", src, prec[i], dir, dir) == 0
              && sh("build/clef decide '%s' --precision %s < '%s/req.jsonl'"
                    " > '%s/split.out'", part("b", 0, 4), prec[i], dir,
                    dir) == 0
              && sh("test $(grep -c answers '%s/split.out') -eq 25", dir) == 0
              && sh("cmp -s '%s/whole.out' '%s/split.out'", dir, dir) == 0,
              "clef decide on the first of 4 parts at %s: its 25 answers byte"
              " for byte the unsplit file's", prec[i]);
    }
}

/* Part no of 3 of split "a" written again as out: its keys (split.* with
 * count, if count >= 0, said to be that) and tensors but drop, plus
 * extra's first tensor when extra is not NULL. */
static int
rewrite_part(int no, const char *out, const char *drop, const char *extra,
    int64_t tensors, clef_error *err)
{
    const clef_gguf_value   *v;
    const clef_gguf_tensor  *t;
    clef_gguf_writer        *w = clef_gguf_writer_new();
    clef_gguf               *p, *x = NULL;
    size_t                   i;
    int                      rc;

    p = clef_gguf_open(part("a", no, 3), CLEF_GGUF_ONE_PART, err);
    if (extra != NULL) {
        x = clef_gguf_open(extra, CLEF_GGUF_ONE_PART, err);
    }
    rc = p == NULL || (extra != NULL && x == NULL);
    for (i = 0; rc == 0 && i < clef_gguf_kv_count(p); i++) {
        v = clef_gguf_kv_at(p, i);
        rc = tensors >= 0 && strcmp(v->key, "split.tensors.count") == 0
             ? clef_gguf_put_int(w, v->key, CLEF_GGUF_INT32, tensors, err)
             : clef_gguf_put_value(w, v->key, v, err);
    }
    for (i = 0; rc == 0 && i < clef_gguf_tensor_count(p); i++) {
        t = clef_gguf_tensor_at(p, i);
        if (drop == NULL || strcmp(t->name, drop) != 0) {
            rc = clef_gguf_add_tensor(w, t->name, t->type, t->ndim, t->ne,
                                      t->data, err);
        }
    }
    if (rc == 0 && x != NULL) {
        t = clef_gguf_tensor_at(x, 0);
        rc = clef_gguf_add_tensor(w, t->name, t->type, t->ndim, t->ne,
                                  t->data, err);
    }
    if (rc == 0) {
        rc = clef_gguf_writer_write(w, out, err);
    }
    clef_gguf_writer_free(w);
    clef_gguf_close(p);
    clef_gguf_close(x);
    return rc;
}

/* A copy of split "a" as split "c", part no written by rewrite_part()
 * (drop, extra, tensors) or, with from set, copied from that file. */
static void
make_c(int no, const char *from, const char *drop, const char *extra,
    int64_t tensors)
{
    clef_error  err;
    char        f[700], x[700];
    int         i;

    /* part()'s paths are overwritten by its later calls */
    snprintf(f, sizeof(f), "%s", from != NULL ? from : "");
    snprintf(x, sizeof(x), "%s", extra != NULL ? extra : "");
    for (i = 0; i < 3; i++) {
        if (i != no) {
            sh("cp '%s' '%s'", part("a", i, 3), part("c", i, 3));
        } else if (from != NULL) {
            sh("cp '%s' '%s'", f, part("c", i, 3));
        } else if (rewrite_part(i, part("c", i, 3), drop,
                                extra != NULL ? x : NULL, tensors, &err) != 0)
        {
            printf("# rewrite: %s\n", err.message);
        }
    }
}

/* Opening split "c" (or path) fails with a message holding want. */
static void
refused(const char *path, const char *want, const char *what)
{
    clef_gguf   *g;
    clef_error   err;

    g = clef_gguf_open(path != NULL ? path : part("c", 0, 3),
                       CLEF_GGUF_HEADERS_ONLY, &err);
    CHECK(g == NULL && err.code == CLEF_E_MODEL
          && strstr(err.message, want) != NULL, "%s: %s", what,
          g == NULL ? err.message : "opened");
    clef_gguf_close(g);
}

static void
test_refusals(void)
{
    char  want[900], path[700];

    snprintf(want, sizeof(want), "%s: is part 2 of 3 of a GGUF split by"
             " llama-gguf-split: give its first part, '%s'", part("a", 1, 3),
             part("a", 0, 3));
    refused(part("a", 1, 3), want, "a later part given alone names the first");
    CHECK(sh("build/clef decide '%s' </dev/null >/dev/null 2>'%s/why'",
             part("a", 1, 3), dir) != 0
          && sh("grep -q 'is part 2 of 3 of a GGUF split by llama-gguf-split:"
                " give its first part' '%s/why'", dir) == 0,
          "clef decide refuses it with the same message");

    make_c(2, NULL, NULL, NULL, -1);
    unlink(part("c", 2, 3));
    snprintf(want, sizeof(want), "part 3 of 3 of '%s': cannot open '%s'",
             part("c", 0, 3), part("c", 2, 3));
    refused(NULL, want, "a missing part");

    make_c(2, part("b", 2, 4), NULL, NULL, -1);
    refused(NULL, "is one of 4 parts (split.count), the first part",
            "a part of another split under this one's name");

    make_c(1, part("a", 2, 3), NULL, NULL, -1);
    refused(NULL, "is part 3 (split.no 2) under the name of part 2 of 3",
            "parts swapped");

    make_c(2, NULL, "blk.1.post_attention_norm.weight", NULL, -1);
    refused(NULL, "its 3 parts hold 91 tensors, split.tensors.count says"
            " 92", "a tensor missing from a part");

    make_c(2, NULL, "blk.1.post_attention_norm.weight", part("a", 1, 3), -1);
    refused(NULL, "the tensor 'dec.blk.1.ffn_norm.bias' is in part 2 and in"
            " part 3", "a tensor in two parts");

    make_c(2, NULL, NULL, NULL, 93);
    refused(NULL, "says its split holds 93 tensors (split.tensors.count),"
            " the first part", "a part that says another tensor count");

    snprintf(path, sizeof(path), "%s/renamed.gguf", dir);
    sh("cp '%s' '%s'", part("a", 0, 3), path);
    refused(path, "is the first of 3 parts of a GGUF split by"
            " llama-gguf-split, but not named as one (PREFIX-00001-of-00003"
            ".gguf)", "a first part under another name");
}

int
main(void)
{
    clef_gguf   *g;
    clef_error   err;
    char         pre[400];
    int          n = 0, rc;

    snprintf(src, sizeof(src), "%s/gguf/gg1.q4_k_m.gguf", check_fixtures());
    snprintf(dir, sizeof(dir), "/tmp/clef-test-gguf-split-%ld",
             (long) getpid());
    sh("mkdir -p '%s'", dir);
    g = clef_gguf_open(src, 0, &err);
    CHECK(g != NULL, "the fixture opens: %s", g ? "" : err.message);
    if (g == NULL) {
        return check_done();
    }
    snprintf(pre, sizeof(pre), "%s/a", dir);
    rc = clef_gguf_split_write(g, pre, 40, 0, &n, &err);
    CHECK(rc == 0 && n == 3, "written in 3 parts of at most 40 tensors: %s",
          rc == 0 ? "" : err.message);
    snprintf(pre, sizeof(pre), "%s/b", dir);
    rc = clef_gguf_split_write(g, pre, 40, 1, &n, &err);
    CHECK(rc == 0 && n == 4, "and in 4, the first holding no tensor: %s",
          rc == 0 ? "" : err.message);
    clef_gguf_close(g);

    test_keys();
    test_llama_bytes();
    test_open();
    test_decide();
    test_refusals();
    sh("rm -rf '%s'", dir);
    return check_done();
}
