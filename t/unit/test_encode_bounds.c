/*
 * The bounded encoder (issue: one hostile body held the engine for
 * seconds): tokenization stops once a record cannot fit, with the exact
 * first ids when the caller truncates; words over 64 KiB are cut; the
 * plan a worker hands over round-trips, its malformed forms are refused,
 * and its lower bound of ids never exceeds the real count.
 *
 * Work is asserted by what was produced, never by time: a stopped
 * tokenization holds at most the cap plus the ids of one 64 KiB piece.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/mem.h"
#include "base/splitmix64.h"
#include "check.h"
#include "protocol/encode.h"
#include "protocol/plan.h"
#include "text/tokenizer.h"

#define MAX_WORD  65536


static char *
random_letters(size_t n, uint64_t seed)
{
    char    *s = malloc(n + 1);
    size_t   i;

    for (i = 0; s != NULL && i < n; i++) {
        s[i] = (char) ('a' + clef_splitmix64(&seed) % 26);
    }
    if (s != NULL) {
        s[n] = '\0';
    }
    return s;
}


/* A long natural text: the fixture requests' bodies, one after the other. */
static char *
natural_text(size_t want, size_t *len)
{
    clef_buf  b = { NULL, 0, 0 };
    FILE     *f;
    char      path[1024], *line = NULL;
    size_t    cap = 0;
    ssize_t   n;

    snprintf(path, sizeof(path), "%s/encode/cases.jsonl", check_fixtures());
    while (b.len < want) {
        f = fopen(path, "r");
        if (f == NULL) {
            break;
        }
        while (b.len < want && (n = getline(&line, &cap, f)) > 0) {
            clef_buf_append(&b, line, (size_t) n);
        }
        fclose(f);
    }
    free(line);
    *len = b.len;
    return b.data;
}


static void
test_tokenizer_stops(const clef_tokenizer *tk)
{
    clef_ids       full = { 0 }, part = { 0 }, chunk = { 0 };
    clef_tk_limit  exact = { 5000, SIZE_MAX }, hopeless = { SIZE_MAX, 65536 };
    size_t         len, lmax = clef_tokenizer_max_token_bytes(tk);
    char          *text;
    int            rc;

    CHECK_INT(lmax, 128, "qwen3: the longest token is 128 bytes (spaces)");

    /* natural text: the first ids are exactly those of the whole text */
    text = natural_text(1 << 20, &len);
    CHECK(text != NULL && len >= (1 << 20), "a 1 MiB natural text");
    clef_tokenizer_encode(tk, text, len, &full);
    rc = clef_tokenizer_encode_max(tk, text, len, &exact, &part);
    CHECK_INT(rc, 1, "5000 ids of %zu: stopped", full.n);
    CHECK(part.n > 5000 && part.n <= 5000 + 256, "%zu ids: the cap and one "
          "word more at most", part.n);
    CHECK(memcmp(part.v, full.v, part.n * sizeof(int32_t)) == 0,
          "the ids so far equal the first ids of the whole text");
    part.n = 0;
    exact.max_ids = full.n;
    rc = clef_tokenizer_encode_max(tk, text, len, &exact, &part);
    CHECK(rc == 0 && part.n == full.n, "a cap of exactly its %zu ids: done",
          full.n);
    clef_mem_free(text);                /* a clef_buf's data (mem.h) */

    /* 13 MiB of random letters: one word */
    len = 13 << 20;
    text = random_letters(len, 7);
    part.n = 0;
    rc = clef_tokenizer_encode_max(tk, text, len, &hopeless, &part);
    CHECK(rc == 1 && part.n == 0, "13 MiB in one word, 65,536 allowed: the "
          "length alone refuses it, no BPE ran (%zu ids)", part.n);
    part.n = 0;
    exact.max_ids = 1000;
    rc = clef_tokenizer_encode_max(tk, text, len, &exact, &part);
    clef_tokenizer_encode(tk, text, MAX_WORD, &chunk);
    CHECK(rc == 1 && part.n == chunk.n, "with the ids needed: only the first "
          "64 KiB piece ran (%zu ids, %zu in the piece)", part.n, chunk.n);
    CHECK(memcmp(part.v, chunk.v, chunk.n * sizeof(int32_t)) == 0,
          "and they are that piece's ids");

    /* a word over 64 KiB is cut there: 2 x 64 KiB = two pieces */
    full.n = 0;
    clef_tokenizer_encode(tk, text, 2 * MAX_WORD, &full);
    part.n = 0;
    clef_tokenizer_encode(tk, text + MAX_WORD, MAX_WORD, &part);
    CHECK(full.n == chunk.n + part.n
          && memcmp(full.v + chunk.n, part.v, part.n * sizeof(int32_t)) == 0,
          "a 128 KiB word is the ids of its two 64 KiB halves");
    free(text);

    clef_ids_free(&full);
    clef_ids_free(&part);
    clef_ids_free(&chunk);
}


static void
test_encode_refuses_early(const clef_tokenizer *tk)
{
    clef_encode_opts  opts;
    clef_request      req;
    clef_record       rec;
    clef_error        err;
    clef_buf          body = { NULL, 0, 0 };
    char             *letters;
    size_t            n = 13 << 20;

    letters = random_letters(n, 11);
    clef_buf_printf(&body, "{\"model\":\"m\",\"state\":\"%s\",\"questions\":"
                    "{\"q\":{\"type\":\"noul\",\"instructions\":\"x\"}}}",
                    letters);
    free(letters);
    CHECK(clef_request_parse(&req, body.data, body.len, NULL, &err) == 0,
          "a 13 MiB body parses");

    clef_encode_opts_default(&opts);
    CHECK_INT(clef_encode(tk, &req, &opts, &rec, &err), -1,
              "refused at the default limit");
    CHECK_STR(err.type, "max_tokens_exceeded", "max_tokens_exceeded");
    CHECK(strstr(err.message, "Request needs more than") != NULL,
          "counted only as far as needed: %s", err.message);

    opts.max_length = 300;
    opts.truncate = CLEF_TRUNCATE_STATE;
    CHECK_INT(clef_encode(tk, &req, &opts, &rec, &err), 0,
              "truncate=state keeps the start");
    CHECK_INT(rec.ids.n, 300, "300 ids");
    CHECK(rec.state_tokens <= 4 * 300 + 65536 + MAX_WORD,
          "the state was counted no further than the cap and one piece "
          "(%zu)", rec.state_tokens);
    clef_record_free(&rec);
    clef_request_free(&req);
    clef_buf_free(&body);
}


/* A text's ids alone. */
static size_t
count_ids(const clef_tokenizer *tk, clef_text t)
{
    clef_ids  ids = { 0 };
    size_t    n;

    clef_tokenizer_encode(tk, t.s, t.len, &ids);
    n = ids.n;
    clef_ids_free(&ids);
    return n;
}


static void
test_plans(const clef_tokenizer *tk)
{
    FILE         *f;
    char          path[1024], *line = NULL;
    size_t        cap = 0, lmax = clef_tokenizer_max_token_bytes(tk);
    size_t        min_all, min_state, real_all, real_state, cases = 0,
                  bad = 0, i;
    ssize_t       n;
    json_t       *c;
    const char   *b;
    clef_request  req;
    clef_error    err;
    clef_buf      blob;
    clef_plan     plan;
    int           q, k;

    snprintf(path, sizeof(path), "%s/encode/cases.jsonl", check_fixtures());
    f = fopen(path, "r");
    CHECK(f != NULL, "open %s", path);
    while (f != NULL && (n = getline(&line, &cap, f)) > 0) {
        c = json_loads(line, 0, NULL);
        b = json_string_value(json_object_get(c, "body"));
        if (b == NULL
            || clef_request_parse(&req, b, strlen(b), NULL, &err) != 0)
        {
            json_decref(c);
            continue;
        }
        memset(&blob, 0, sizeof(blob));
        if (clef_plan_build(&req, &blob, &err) != 0
            || clef_plan_view(&plan, blob.data, blob.len, &err) != 0)
        {
            bad++;
        } else {
            cases++;
            real_state = count_ids(tk, plan.state);
            real_all = real_state;
            for (q = 0; q < plan.n_questions; q++) {
                real_all += count_ids(tk, plan.questions[q].header)
                            + count_ids(tk, plan.questions[q].instruction);
                for (k = 0; k < plan.questions[q].n_options; k++) {
                    real_all += count_ids(tk, plan.questions[q].options[k]);
                }
            }
            min_all = clef_plan_min_ids(&plan, lmax, 0);
            min_state = clef_plan_min_ids(&plan, lmax, 1);
            bad += min_all > real_all || min_state > real_state
                   || plan.n_questions != req.n_questions;

            /* every cut short blob is refused, never read past its end */
            for (i = 0; i < blob.len; i += 1 + blob.len / 97) {
                clef_plan  p2;

                if (clef_plan_view(&p2, blob.data, i, &err) == 0) {
                    clef_plan_free(&p2);
                    bad++;
                }
            }
            clef_plan_free(&plan);
        }
        clef_buf_free(&blob);
        clef_request_free(&req);
        json_decref(c);
    }
    if (f != NULL) {
        fclose(f);
    }
    free(line);
    CHECK(cases >= 60 && bad == 0, "%zu fixture requests: plans round-trip, "
          "their lower bounds never exceed the real counts, cut blobs are "
          "refused (%zu failures)", cases, bad);

    CHECK(clef_plan_view(&plan, "CLP2", 4, &err) == -1
          && strcmp(err.type, "plan_invalid") == 0, "a wrong magic: refused");
}


int
main(void)
{
    clef_tokenizer  *tk;
    clef_error       err;
    char             path[1024];

    snprintf(path, sizeof(path), "%s", check_qwen3_tokenizer());
    tk = clef_tokenizer_load(path, &err);
    CHECK(tk != NULL, "load %s", path);
    if (tk == NULL) {
        printf("#   %s\n", err.message);
        return check_done();
    }
    test_tokenizer_stops(tk);
    test_encode_refuses_early(tk);
    test_plans(tk);
    clef_tokenizer_free(tk);
    return check_done();
}
