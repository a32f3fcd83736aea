/*
 * The record encoder against the reference: every case of
 * t/fixtures/encode/cases.jsonl (t/reference/gen_encode_fixtures.py) must
 * give the same input_ids, the same question and option spans and the same
 * option ids in the same order, or the same refusal.  The same cases go
 * through `build/clef encode` to hold its output format to the contract.
 */
#include "check.h"

#include <jansson.h>
#include <sys/wait.h>
#include <unistd.h>

#include "protocol/encode.h"

typedef struct {
    char        *name;
    char        *body;
    int          max_length;
    int          truncate_state;
    json_t      *expect;         /* the reference's record, or NULL */
    json_t      *error;          /* the expected refusal, or NULL */
    long long    state_tokens;
    long long    state_kept;
    json_t      *root;
} fixture;

static fixture  *cases;
static size_t    n_cases;


static void
load_fixtures(void)
{
    char          path[1024], *line = NULL;
    size_t        cap = 0, alloc = 0;
    ssize_t       len;
    FILE         *f;
    json_t       *j;
    json_error_t  je;
    fixture      *c;

    snprintf(path, sizeof(path), "%s/encode/cases.jsonl", check_fixtures());
    f = fopen(path, "r");
    CHECK(f != NULL, "open %s", path);
    if (f == NULL) {
        return;
    }

    while ((len = getline(&line, &cap, f)) > 0) {
        j = json_loadb(line, (size_t) len, 0, &je);
        if (j == NULL) {
            CHECK(0, "fixture line %zu: %s", n_cases + 1, je.text);
            continue;
        }
        if (n_cases == alloc) {
            alloc = alloc ? alloc * 2 : 128;
            cases = realloc(cases, alloc * sizeof(fixture));
        }
        c = &cases[n_cases++];
        memset(c, 0, sizeof(*c));
        c->root = j;
        c->name = (char *) json_string_value(json_object_get(j, "name"));
        c->body = (char *) json_string_value(json_object_get(j, "body"));
        c->max_length = (int) json_integer_value(json_object_get(j, "max_length"));
        c->truncate_state = strcmp(json_string_value(
            json_object_get(j, "truncate")), "state") == 0;
        c->expect = json_object_get(j, "expect");
        c->error = json_object_get(j, "error");
        c->state_tokens = json_integer_value(json_object_get(j, "state_tokens"));
        c->state_kept = json_integer_value(json_object_get(j, "state_kept"));
    }
    free(line);
    fclose(f);
}


static int
span_is(const clef_span *s, json_t *want)
{
    return s->start == json_integer_value(json_array_get(want, 0))
           && s->end == json_integer_value(json_array_get(want, 1));
}


static int
id_is(clef_str id, json_t *want)
{
    return id.len == json_string_length(want)
           && memcmp(id.s, json_string_value(want), id.len) == 0;
}


static const char *const  type_names[] = { "noul", "choice", "score" };

/* Returns NULL when rec matches the expectation, else what differs. */
static const char *
compare(const fixture *c, const clef_request *req, const clef_record *rec,
    char *why, size_t cap)
{
    json_t        *ids, *qs, *q, *opts, *o;
    size_t         i, k, n;
    const clef_span *s;

    ids = json_object_get(c->expect, "input_ids");
    n = json_array_size(ids);
    for (i = 0; i < n && i < rec->ids.n; i++) {
        if (rec->ids.v[i] != json_integer_value(json_array_get(ids, i))) {
            snprintf(why, cap, "input_ids[%zu] = %d, want %lld (of %zu)", i,
                     (int) rec->ids.v[i],
                     (long long) json_integer_value(json_array_get(ids, i)), n);
            return why;
        }
    }
    if (rec->ids.n != n) {
        snprintf(why, cap, "%zu input_ids, want %zu", rec->ids.n, n);
        return why;
    }

    qs = json_object_get(c->expect, "questions");
    if ((size_t) rec->n_questions != json_array_size(qs)) {
        snprintf(why, cap, "%d questions, want %zu", rec->n_questions,
                 json_array_size(qs));
        return why;
    }
    for (i = 0; i < json_array_size(qs); i++) {
        q = json_array_get(qs, i);
        if (!id_is(req->questions[i].id, json_object_get(q, "id"))) {
            snprintf(why, cap, "question %zu: id '%s', want '%s'", i,
                     req->questions[i].id.s,
                     json_string_value(json_object_get(q, "id")));
            return why;
        }
        if (strcmp(type_names[rec->question_types[i]],
                   json_string_value(json_object_get(q, "type"))) != 0)
        {
            snprintf(why, cap, "question %zu: type %s", i,
                     type_names[rec->question_types[i]]);
            return why;
        }
        if (!span_is(&rec->question_spans[i], json_object_get(q, "span"))) {
            snprintf(why, cap, "question %zu: span [%d, %d], want [%lld, %lld]",
                     i, (int) rec->question_spans[i].start,
                     (int) rec->question_spans[i].end,
                     (long long) json_integer_value(json_array_get(
                         json_object_get(q, "span"), 0)),
                     (long long) json_integer_value(json_array_get(
                         json_object_get(q, "span"), 1)));
            return why;
        }
        opts = json_object_get(q, "options");
        n = (size_t) (rec->option_offset[i + 1] - rec->option_offset[i]);
        if (n != json_array_size(opts)
            || (size_t) req->questions[i].n_options != n)
        {
            snprintf(why, cap, "question %zu: %zu options, want %zu", i, n,
                     json_array_size(opts));
            return why;
        }
        for (k = 0; k < n; k++) {
            o = json_array_get(opts, k);
            s = &rec->option_spans[rec->option_offset[i] + k];
            if (!id_is(req->questions[i].options[k].id, json_object_get(o, "id"))) {
                snprintf(why, cap, "question %zu option %zu: id '%s', want '%s'",
                         i, k, req->questions[i].options[k].id.s,
                         json_string_value(json_object_get(o, "id")));
                return why;
            }
            if (!span_is(s, json_object_get(o, "span"))) {
                snprintf(why, cap, "question %zu option %zu: span [%d, %d]", i, k,
                         (int) s->start, (int) s->end);
                return why;
            }
        }
    }
    if (rec->option_offset[rec->n_questions] != rec->n_options) {
        snprintf(why, cap, "option_offset[n_questions] %d != n_options %d",
                 rec->option_offset[rec->n_questions], rec->n_options);
        return why;
    }
    if ((long long) rec->state_tokens != c->state_tokens
        || (long long) rec->state_kept != c->state_kept)
    {
        snprintf(why, cap, "state %zu kept %zu, want %lld kept %lld",
                 rec->state_tokens, rec->state_kept, c->state_tokens,
                 c->state_kept);
        return why;
    }
    return NULL;
}


static void
test_fixtures(const clef_tokenizer *tk)
{
    clef_encode_opts  opts;
    clef_request      req;
    clef_record       rec;
    clef_error        err;
    const fixture    *c;
    const char       *why;
    char              buf[1024];
    size_t            i;
    int               rc;

    for (i = 0; i < n_cases; i++) {
        c = &cases[i];
        if (clef_request_parse(&req, c->body, strlen(c->body), NULL, &err) != 0) {
            CHECK(0, "%s: request refused: %s %s", c->name, err.type, err.message);
            continue;
        }
        clef_encode_opts_default(&opts);
        opts.max_length = c->max_length;
        opts.truncate = c->truncate_state ? CLEF_TRUNCATE_STATE
                                          : CLEF_TRUNCATE_REJECT;
        clef_error_clear(&err);
        rc = clef_encode(tk, &req, &opts, &rec, &err);

        if (c->error != NULL) {
            why = NULL;
            if (rc == 0) {
                why = "encoded, want a refusal";
                clef_record_free(&rec);
            } else if (err.status != json_integer_value(json_object_get(c->error, "status"))
                       || strcmp(err.type, json_string_value(
                              json_object_get(c->error, "type"))) != 0
                       || strcmp(err.message, json_string_value(
                              json_object_get(c->error, "message"))) != 0
                       || err.loc[0] != '\0')
            {
                snprintf(buf, sizeof(buf), "%d %s '%s', want '%s'", err.status,
                         err.type, err.message, json_string_value(
                             json_object_get(c->error, "message")));
                why = buf;
            }
        } else if (rc != 0) {
            snprintf(buf, sizeof(buf), "refused: %d %s %s", err.status, err.type,
                     err.message);
            why = buf;
        } else {
            why = compare(c, &req, &rec, buf, sizeof(buf));
            clef_record_free(&rec);
        }
        CHECK(why == NULL, "%s: as the reference", c->name);
        if (why != NULL) {
            printf("#   %s\n", why);
        }
        clef_request_free(&req);
    }
}


static const fixture *
find(const char *name)
{
    size_t  i;

    for (i = 0; i < n_cases; i++) {
        if (strcmp(cases[i].name, name) == 0) {
            return &cases[i];
        }
    }
    return NULL;
}


/* The prompt before the state, as spec §3.3 writes it. */
static size_t
prefix_tokens(const clef_tokenizer *tk)
{
    static const char  prefix[] = "<|im_start|>system\nRead the complete "
        "state and schema. Decide every field jointly. Each answer must be "
        "exactly one of that field's allowed options.<|im_end|>\n"
        "<|im_start|>user\nSTATE:\n";
    clef_ids  ids = { 0 };
    size_t    n;

    clef_tokenizer_encode(tk, prefix, sizeof(prefix) - 1, &ids);
    n = ids.n;
    clef_ids_free(&ids);
    return n;
}


static void
test_media_and_defaults(const clef_tokenizer *tk)
{
    static const char  img[] = "{\"model\":\"m\",\"state\":\"s\",\"images\":"
        "[\"data:image/png;base64,AAAA\"],\"questions\":{\"q\":{\"type\":\"noul\"}}}";
    static const int32_t  media[] = { 151652, 151655, 151655, 151653, 198 };
    clef_encode_opts  opts;
    clef_request      req;
    clef_record       rec, plain;
    clef_error        err;
    const fixture    *c;
    char              want[256];
    size_t            i, pre;
    int               ok;

    if (clef_request_parse(&req, img, sizeof(img) - 1, NULL, &err) == 0) {
        CHECK_INT(clef_encode(tk, &req, NULL, &rec, &err), -1,
                  "images without media ids: refused");
        CHECK_INT(err.status, 400, "images_unsupported: status");
        CHECK_STR(err.type, "images_unsupported", "images_unsupported: type");
        CHECK_STR(err.message, "This model does not accept images.",
                  "images_unsupported: message");
        CHECK(rec.ids.v == NULL && rec.option_spans == NULL,
              "images_unsupported: record empty");

        /* media ids go after the prefix, before the state, and count */
        if (clef_encode(tk, &req, &(clef_encode_opts) {
                .max_length = 0, .media_ids = media, .n_media_ids = 5 },
                &rec, &err) == 0)
        {
            opts = (clef_encode_opts) { .max_length = 65536 };
            req.media[CLEF_MEDIA_IMAGE].n = 0;
            if (clef_encode(tk, &req, &opts, &plain, &err) == 0) {
                pre = prefix_tokens(tk);
                ok = rec.ids.n == plain.ids.n + 5
                     && memcmp(rec.ids.v, plain.ids.v, pre * 4) == 0
                     && memcmp(rec.ids.v + pre, media, sizeof(media)) == 0
                     && memcmp(rec.ids.v + pre + 5, plain.ids.v + pre,
                               (plain.ids.n - pre) * 4) == 0;
                CHECK(ok, "media ids inserted after the %zu prefix tokens", pre);
                ok = rec.question_spans[0].start == plain.question_spans[0].start + 5;
                for (i = 0; i < (size_t) rec.n_options; i++) {
                    ok &= rec.option_spans[i].start == plain.option_spans[i].start + 5
                          && rec.option_spans[i].end == plain.option_spans[i].end + 5;
                }
                CHECK(ok, "media ids shift every span");

                clef_record_free(&rec);
                opts.max_length = (int) plain.ids.n + 4;
                opts.media_ids = media;
                opts.n_media_ids = 5;
                req.media[CLEF_MEDIA_IMAGE].n = 1;
                CHECK_INT(clef_encode(tk, &req, &opts, &rec, &err), -1,
                          "media ids count towards the limit");
                snprintf(want, sizeof(want), "Request needs %zu tokens (state 1, "
                         "prompt and schema %zu); the limit is %d.",
                         plain.ids.n + 5, plain.ids.n + 4, opts.max_length);
                CHECK_STR(err.message, want, "media: message counts");
                clef_record_free(&plain);
            }
        }
        clef_record_free(&rec);
        clef_request_free(&req);
    }

    /* NULL opts: 65,536 tokens, reject */
    c = find("long-state/reject");
    if (c != NULL
        && clef_request_parse(&req, c->body, strlen(c->body), NULL, &err) == 0)
    {
        CHECK_INT(clef_encode(tk, &req, NULL, &rec, &err), 0,
                  "NULL opts: the default limit fits a long state");
        CHECK_INT(rec.state_kept, rec.state_tokens, "NULL opts: state whole");
        clef_record_free(&rec);
        clef_request_free(&req);
    }
}


#define JSON_INVALID  "{\"error\": {\"status\": 422, \"type\": \"json_invalid\""

/*
 * Runs build/clef encode on the cases of each (max_length, policy) that
 * has at least three, one request per line: the bodies written over several
 * lines are left to the library test above.
 */
static int
same_group(const fixture *a, const fixture *b)
{
    return a->max_length == b->max_length
           && a->truncate_state == b->truncate_state
           && strchr(b->body, '\n') == NULL;
}


static void
test_cli(const char *tokdir)
{
    char          cmd[2048], tmp[] = "/tmp/test_encode_XXXXXX", *line = NULL;
    size_t        i, j, cap = 0, done;
    int           fd, ok, same;
    FILE         *in, *out;
    json_t       *got, *e;
    const char   *why;
    unsigned char *seen;

    if (access("build/clef", X_OK) != 0) {
        CHECK(1, "# SKIP build/clef not built");
        return;
    }

    seen = calloc(n_cases, 1);
    for (i = 0; i < n_cases; i++) {
        if (seen[i] || strchr(cases[i].body, '\n') != NULL) {
            continue;
        }
        /* the groups of one or two cases would only repeat the tokenizer
         * load: the big groups hold every output shape */
        for (done = 0, j = i; j < n_cases; j++) {
            done += same_group(&cases[i], &cases[j]);
        }
        if (done < 3) {
            continue;
        }
        done = 0;
        fd = mkstemp(tmp);
        in = fdopen(fd, "w");
        for (j = i; j < n_cases; j++) {
            if (same_group(&cases[i], &cases[j])) {
                fprintf(in, "%s\n", cases[j].body);
                seen[j] = 1;
                done++;
            }
        }
        fclose(in);
        snprintf(cmd, sizeof(cmd), "build/clef encode %s --max-length %d%s < %s",
                 tokdir, cases[i].max_length,
                 cases[i].truncate_state ? " --truncate-state" : "", tmp);
        out = popen(cmd, "r");

        ok = 1;
        why = "";
        for (j = i; j < n_cases; j++) {
            if (!same_group(&cases[i], &cases[j])) {
                continue;
            }
            if (getline(&line, &cap, out) <= 0) {
                ok = 0;
                why = "output ends early";
                break;
            }
            got = json_loads(line, 0, NULL);
            if (cases[j].error != NULL) {
                e = got ? json_object_get(got, "error") : NULL;
                same = e != NULL
                       && json_equal(json_object_get(e, "status"),
                                     json_object_get(cases[j].error, "status"))
                       && json_equal(json_object_get(e, "type"),
                                     json_object_get(cases[j].error, "type"))
                       && json_equal(json_object_get(e, "message"),
                                     json_object_get(cases[j].error, "message"))
                       && json_object_get(e, "loc") == NULL
                       && json_object_size(e) == 3;
            } else {
                same = got != NULL && json_equal(got, cases[j].expect);
            }
            json_decref(got);
            if (!same) {
                ok = 0;
                why = cases[j].name;
                break;
            }
        }
        CHECK(pclose(out) == 0 && ok, "clef encode --max-length %d%s: %zu cases",
              cases[i].max_length, cases[i].truncate_state ? " --truncate-state"
              : "", done);
        if (!ok) {
            printf("#   first difference: %s\n", why);
        }
        unlink(tmp);
        strcpy(tmp, "/tmp/test_encode_XXXXXX");
    }

    /* a refused line is answered in place, loc included */
    snprintf(cmd, sizeof(cmd), "printf '%%s\\n' '{\"model\":1}' '[' "
             "| build/clef encode %s", tokdir);
    out = popen(cmd, "r");
    ok = getline(&line, &cap, out) > 0
         && strcmp(line, "{\"error\": {\"status\": 422, \"type\": \"string_type\", "
                   "\"message\": \"Input should be a valid string\", "
                   "\"loc\": [\"body\",\"model\"]}}\n") == 0
         && getline(&line, &cap, out) > 0
         && strncmp(line, JSON_INVALID, sizeof(JSON_INVALID) - 1) == 0
         && getline(&line, &cap, out) <= 0;
    CHECK(pclose(out) == 0 && ok, "clef encode: errors, one line each");

    snprintf(cmd, sizeof(cmd), "build/clef encode %s --max-length x "
             "</dev/null 2>/dev/null", tokdir);
    CHECK_INT(WEXITSTATUS(system(cmd)), 2, "clef encode: bad usage exits 2");
    CHECK_INT(WEXITSTATUS(system("build/clef encode >/dev/null 2>&1")), 2,
              "clef encode: no MODEL exits 2");
    CHECK_INT(WEXITSTATUS(system("build/clef encode --help "
                                 "| grep -q 'usage: clef encode MODEL '")),
              0, "clef encode --help");

    free(line);
    free(seen);
}


int
main(void)
{
    clef_tokenizer  *tk;
    clef_error       err;
    char             path[1024];
    size_t           i;

    snprintf(path, sizeof(path), "%s", check_qwen3_tokenizer());
    tk = clef_tokenizer_load(path, &err);
    CHECK(tk != NULL, "load %s", path);
    if (tk == NULL) {
        printf("#   %s\n", err.message);
        return check_done();
    }

    load_fixtures();
    CHECK(n_cases >= 60, "%zu fixture cases", n_cases);

    test_fixtures(tk);
    test_media_and_defaults(tk);
    test_cli(path);

    for (i = 0; i < n_cases; i++) {
        json_decref(cases[i].root);
    }
    free(cases);
    clef_tokenizer_free(tk);
    return check_done();
}
