/*
 * The fast precision end to end (`clef decide --precision q8`: int8
 * activations times the GGUF file's own blocks, cpu/kernels/qdot.h) on
 * committed Clef GGUF files of llama-quantize's Q8_0 and Q4_K_M:
 *
 *   - gg1 (t/fixtures/gguf/gg1.<type>.gguf, test_decide_e2e's): every
 *     request of t/fixtures/gguf/e2e/<type>.jsonl (the reference,
 *     transformers' Qwen3.5 and Cloudflare's ClefModel in fp32 on the
 *     file's dequantized weights) answers with probabilities within Q8_TOL
 *     of the reference, reported with the exact mode's (`--precision
 *     fp32`) difference beside; and deterministically: the same bytes with
 *     records packed into one forward (--batch 16), one thread (-t 1), and
 *     on the AVX2 kernel where the CPU picks a VNNI one
 *     (CLEF_CPU_QDOT_KERNEL=avx2); at --tp 2 the bytes of tp=1 on Q8_0,
 *     within Q8_TOL on Q4_K_M (cpu/model/weights.c, q8_segments);
 *   - gg2 (t/fixtures/gguf/llama/, t/reference/gen_llama_answers.py: a
 *     checkpoint llama.cpp loads, which gg1 is not), in every file type
 *     llama-quantize writes that ngx_clef reads (Q8_0, Q4_K_M, the
 *     i-quants, Q2_K, Q3_K, TQ1_0, TQ2_0) and in mixes of --tensor-type
 *     overrides (unsloth's dynamic files; Q1_0 and Q2_0; MXFP4 and
 *     NVFP4): within Q8_TOL of the reference on the same requests, and no
 *     further from it than llama-server's answers on the same file
 *     (committed beside it), over the requests llama-server answers.
 *
 * On every file `--precision fp32` is within FP32_TOL of the reference;
 * the three largest differences (fp32, q8, llama-server) are printed per
 * file.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "jsonl.h"
#include "shell.h"

#define Q8_TOL    5e-2
#define FP32_TOL  1e-5
#define NONE      ((size_t) -1)

static const char  *types[] = { "q8_0", "q4_k_m" };

/* t/fixtures/gguf/llama/gg2.NAME.gguf (gen_llama_answers.py's FILES) */
static const char  *gg2_files[] = {
    "q8_0", "q4_k_m", "iq4_nl", "iq4_xs", "q3_k_m", "q3_k_s", "q2_k",
    "iq3_xxs", "iq3_s", "iq2_xxs", "iq2_xs", "iq2_s", "iq1_s", "iq1_m",
    "tq1_0", "tq2_0", "ud-mix", "q1-mix", "fp4-mix",
};

static char  root[1024];
static char  tmp[1024];

static char *
slurp(const char *path)
{
    FILE    *f = fopen(path, "rb");
    char    *s = NULL;
    long     n;

    if (f != NULL && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0
        && fseek(f, 0, SEEK_SET) == 0 && (s = malloc((size_t) n + 1)) != NULL)
    {
        s[fread(s, 1, (size_t) n, f)] = '\0';
    }
    if (f != NULL) {
        fclose(f);
    }
    return s;
}

/*
 * `clef decide --raw EXTRA` on every case, a run per max_length and
 * truncation (the cases that share them run together, so that --batch
 * packs them): the responses into responses in case order, the runs'
 * bytes, concatenated, returned.
 */
static char *
decide(const char *model, json_t *cases, const char *env, const char *extra,
    json_t *responses)
{
    char         in[1200], out[1200], flags[64], *text = NULL, *one, *p;
    size_t       i, j, have = 0, n, idx[256];
    json_t      *c, *d, *lines;
    FILE        *f;
    int          ok = 1, ml;
    const char  *tr;

    snprintf(in, sizeof(in), "%s/in.jsonl", tmp);
    snprintf(out, sizeof(out), "%s/out.jsonl", tmp);
    json_array_foreach(cases, i, c) {
        json_array_append_new(responses, json_null());
    }
    json_array_foreach(cases, i, c) {
        if (!json_is_null(json_array_get(responses, i))) {
            continue;
        }
        ml = (int) json_integer_value(json_object_get(c, "max_length"));
        tr = json_string_value(json_object_get(c, "truncate"));
        f = fopen(in, "w");
        for (j = i, n = 0; j < json_array_size(cases) && f != NULL && n < 256;
             j++)
        {
            d = json_array_get(cases, j);
            if (json_integer_value(json_object_get(d, "max_length")) == ml
                && strcmp(json_string_value(json_object_get(d, "truncate")),
                          tr) == 0)
            {
                fprintf(f, "%s\n",
                        json_string_value(json_object_get(d, "body")));
                json_array_set_new(responses, j, json_true());
                idx[n++] = j;
            }
        }
        if (f != NULL) {
            fclose(f);
        }
        snprintf(flags, sizeof(flags), "--max-length %d%s", ml,
                 strcmp(tr, "state") == 0 ? " --truncate-state" : "");
        ok &= sh("%s '%s/build/clef' decide '%s' --raw %s %s < '%s' > '%s'",
                 env, root, model, flags, extra, in, out) == 0;
        lines = read_jsonl(out);
        ok &= json_array_size(lines) == n;
        for (j = 0; j < n; j++) {
            json_array_set(responses, idx[j], json_array_get(lines, j));
        }
        json_decref(lines);
        one = slurp(out);
        if (one != NULL && (p = realloc(text, have + strlen(one) + 1)) != NULL)
        {
            memcpy(p + have, one, strlen(one) + 1);
            text = p;
            have += strlen(one);
        }
        free(one);
    }
    CHECK(ok, "%s clef decide %s %s: a response per request", env, model,
          extra);
    return text;
}

/* The largest |probability| difference of responses (ours: raw, or
 * llama-server's: probabilities by option) from the reference, over the
 * cases `only` answered (all with NULL) but case `skip`; the case it is
 * in into *at. */
static double
worst_diff(json_t *cases, json_t *responses, int llama, json_t *only,
    size_t skip, size_t *count, size_t *at)
{
    json_t  *c, *q, *a, *p;
    size_t   i, j, k;
    double   worst = 0.0, d;

    *count = 0;
    *at = NONE;
    json_array_foreach(cases, i, c) {
        if (i == skip || (only != NULL
            && json_object_get(json_array_get(only, i), "answers") == NULL))
        {
            continue;
        }
        json_array_foreach(json_object_get(c, "questions"), j, q) {
            a = json_object_get(json_object_get(json_array_get(responses, i),
                                                "answers"),
                                json_string_value(json_object_get(q, "id")));
            if (!llama) {
                a = json_object_get(a, "raw");
            }
            p = json_object_get(a, "probabilities");
            if (json_array_size(p)
                != json_array_size(json_object_get(q, "probabilities")))
            {
                return 1.0;
            }
            for (k = 0; k < json_array_size(p); k++) {
                d = json_number_value(json_array_get(p, k))
                    - json_number_value(json_array_get(
                          json_object_get(q, "probabilities"), k));
                d = d < 0 ? -d : d;
                if (d > worst) {
                    worst = d;
                    *at = i;
                }
            }
            (*count)++;
        }
    }
    return worst;
}

/*
 * One file: its answers at q8 against the reference's (and fp32's beside);
 * llama: llama-server's answers on the file, which q8 must be no further
 * from the reference than; same: the determinism runs.
 */
static void
check_file(const char *what, const char *model, const char *ref,
    const char *llama_path, int same_runs)
{
    static const char  *same[][2] = {
        { "", "--precision q8 --batch 16" },
        { "", "--precision q8 -t 1 --batch 3" },
        { "CLEF_CPU_QDOT_KERNEL=avx2", "--precision q8" },
    };
    char     *q8, *again;
    json_t   *cases, *ours, *exact, *llama = NULL, *other;
    double    d_q8, d_fp32, d_llama, d_both, d_exact, d_next;
    size_t    n, n_exact, n_llama, n_both, n_next, i, refused, at;

    cases = read_jsonl(ref);
    CHECK(json_array_size(cases) > 20, "%s: %zu reference cases", what,
          json_array_size(cases));
    ours = json_array();
    q8 = decide(model, cases, "", "--precision q8", ours);
    exact = json_array();
    free(decide(model, cases, "", "--precision fp32", exact));
    d_q8 = worst_diff(cases, ours, 0, NULL, NONE, &n, &at);
    d_fp32 = worst_diff(cases, exact, 0, NULL, NONE, &n_exact, &at);
    if (llama_path == NULL) {
        printf("# %s, max |probability - reference| over %zu questions: q8 "
               "%.3g, fp32 %.3g\n", what, n, d_q8, d_fp32);
    }
    CHECK(n > 20 && n_exact == n && d_fp32 <= FP32_TOL,
          "%s --precision fp32: within %g of the reference (%.3g)", what,
          FP32_TOL, d_fp32);
    CHECK(n > 20 && d_q8 <= Q8_TOL,
          "%s --precision q8: within %g of the reference (%.3g)", what,
          Q8_TOL, d_q8);
    if (llama_path != NULL) {
        /* llama-server refuses some requests ngx_clef answers (null or
         * missing instructions, ...): both over the ones it answers */
        llama = read_jsonl(llama_path);
        d_llama = worst_diff(cases, llama, 1, llama, NONE, &n_llama, &at);
        /* its largest difference is one request it renders otherwise:
         * the next one, for scale */
        d_next = worst_diff(cases, llama, 1, llama, at, &n_next, &at);
        d_both = worst_diff(cases, ours, 0, llama, NONE, &n_both, &at);
        d_exact = worst_diff(cases, exact, 0, llama, NONE, &n_both, &at);
        for (i = 0, refused = 0; i < json_array_size(llama); i++) {
            refused += json_object_get(json_array_get(llama, i), "answers")
                       == NULL;
        }
        printf("# %s: max |probability - reference|: fp32 %.2g, q8 %.2g "
               "(all %zu questions); over the %zu questions llama-server "
               "answers (%zu of %zu requests refused): fp32 %.2g, q8 %.2g, "
               "llama-server %.2g (%.2g without its worst request)\n", what,
               d_fp32, d_q8, n_exact, n_llama, refused,
               json_array_size(llama), d_exact, d_both, d_llama, d_next);
        CHECK(json_array_size(llama) == json_array_size(cases)
              && n_llama >= n / 2 && n_both == n_llama && d_both <= d_llama,
              "%s --precision q8: no further from the reference than "
              "llama-server on the file (%.3g <= %.3g over %zu questions)",
              what, d_both, d_llama, n_llama);
    }
    for (i = 0; same_runs && i < sizeof(same) / sizeof(same[0]); i++) {
        other = json_array();
        again = decide(model, cases, same[i][0], same[i][1], other);
        CHECK(q8 != NULL && again != NULL && strcmp(q8, again) == 0,
              "%s %s %s: the bytes of --precision q8 alone", what,
              same[i][0], same[i][1]);
        free(again);
        json_decref(other);
    }
    if (same_runs) {
        /* two ranks: Q8_0's blocks of 32 let q8 keep the model's fixed
         * segments, so the sums and the bytes are tp=1's; a K type's 256
         * values cut across the ranks' columns, so each rank has its own
         * segment and the answers are only as close to the reference */
        other = json_array();
        again = decide(model, cases, "", "--precision q8 --tp 2", other);
        if (strstr(model, "q8_0") != NULL) {
            CHECK(q8 != NULL && again != NULL && strcmp(q8, again) == 0,
                  "%s --precision q8 --tp 2: the bytes of tp=1", what);
        } else {
            d_both = worst_diff(cases, other, 0, NULL, NONE, &n_both, &at);
            CHECK(again != NULL && n_both == n && d_both <= Q8_TOL,
                  "%s --precision q8 --tp 2: within %g of the reference "
                  "(%.3g)", what, Q8_TOL, d_both);
        }
        free(again);
        json_decref(other);
    }
    free(q8);
    json_decref(ours);
    json_decref(exact);
    json_decref(llama);
    json_decref(cases);
}

int
main(void)
{
    char    what[64], model[1200], ref[1200], llama[1200];
    size_t  i;

    if (getcwd(root, sizeof(root)) == NULL) {
        CHECK(0, "getcwd");
        return check_done();
    }
    snprintf(tmp, sizeof(tmp), "/tmp/clef-q8-XXXXXX");
    if (mkdtemp(tmp) == NULL) {
        CHECK(0, "mkdtemp");
        return check_done();
    }
    for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        /* gg1: the GGUF fixtures of test_decide_e2e */
        snprintf(what, sizeof(what), "gg1 %s", types[i]);
        snprintf(model, sizeof(model), "%s/%s/gguf/gg1.%s.gguf", root,
                 check_fixtures(), types[i]);
        snprintf(ref, sizeof(ref), "%s/gguf/e2e/%s.jsonl", check_fixtures(),
                 types[i]);
        check_file(what, model, ref, NULL, 1);
    }
    for (i = 0; i < sizeof(gg2_files) / sizeof(gg2_files[0]); i++) {
        /* gg2: a checkpoint llama.cpp loads, and llama-server's answers */
        snprintf(what, sizeof(what), "gg2 %s", gg2_files[i]);
        snprintf(model, sizeof(model), "%s/%s/gguf/llama/gg2.%s.gguf", root,
                 check_fixtures(), gg2_files[i]);
        snprintf(ref, sizeof(ref), "%s/gguf/llama/%s.reference.jsonl",
                 check_fixtures(), gg2_files[i]);
        snprintf(llama, sizeof(llama), "%s/gguf/llama/%s.llama.jsonl",
                 check_fixtures(), gg2_files[i]);
        check_file(what, model, ref, llama, 0);
    }
    sh("rm -rf '%s'", tmp);
    return check_done();
}
