/*
 * System One request validation: every refusal of engine/request.c with its
 * exact status, type, loc and message, and the accepted edge cases with the
 * options they produce.
 */
#include "check.h"

#include "base/buf.h"
#include "protocol/request.h"

#define Q1  "{\"model\":\"m\",\"state\":\"s\",\"questions\":"


static void
expect_error(const char *name, const char *body, size_t len,
    const clef_limits *lim, int status, const char *type, const char *loc,
    const char *message)
{
    clef_request  req;
    clef_error    err;
    int           rc;

    clef_error_clear(&err);
    rc = clef_request_parse(&req, body, len, lim, &err);
    CHECK_INT(rc, -1, "%s: refused", name);
    CHECK_INT(err.status, status, "%s: status", name);
    CHECK_STR(err.type, type, "%s: type", name);
    if (loc != NULL) {
        CHECK_STR(err.loc, loc, "%s: loc", name);
    }
    if (message != NULL) {
        CHECK_STR(err.message, message, "%s: message", name);
    }
    CHECK(req.arena.head == NULL && req.questions == NULL,
          "%s: request freed", name);
}


#define ERR(name, body, status, type, loc, message)                         \
    expect_error(name, body, sizeof(body) - 1, NULL, status, type, loc, message)


static int
parse_ok(const char *name, const char *body, size_t len, clef_request *req)
{
    clef_error  err;
    int         rc;

    clef_error_clear(&err);
    rc = clef_request_parse(req, body, len, NULL, &err);
    CHECK_INT(rc, 0, "%s: accepted", name);
    if (rc != 0) {
        printf("#   %d %s %s %s\n", err.status, err.type, err.loc, err.message);
    }
    return rc;
}


static int
str_is(clef_str s, const char *want)
{
    return s.len == strlen(want) && memcmp(s.s, want, s.len) == 0;
}


static int
desc_is(const clef_json *d, const char *want)
{
    if (want == NULL) {
        return d == NULL;
    }
    return d != NULL && d->type == CLEF_JSON_STRING && d->len == strlen(want)
           && memcmp(d->str, want, d->len) == 0;
}


/* A body with n questions; q(buf, i) writes the i-th "id":{...}. */
static void
body_with(clef_buf *b, int n, void (*q)(clef_buf *, int))
{
    int  i;

    b->len = 0;
    clef_buf_printf(b, Q1 "{");
    for (i = 0; i < n; i++) {
        if (i) {
            clef_buf_putc(b, ',');
        }
        q(b, i);
    }
    clef_buf_printf(b, "}}");
}


static void
q_noul(clef_buf *b, int i)
{
    clef_buf_printf(b, "\"q%d\":{\"type\":\"noul\"}", i);
}


static void
q_noul_last_untyped(clef_buf *b, int i)
{
    clef_buf_printf(b, i == 64 ? "\"q%d\":{}" : "\"q%d\":{\"type\":\"noul\"}", i);
}


static void
choice_body(clef_buf *b, int n)
{
    int  i;

    b->len = 0;
    clef_buf_printf(b, Q1 "{\"c\":{\"type\":\"choice\",\"criteria\":{");
    for (i = 0; i < n; i++) {
        /* labels sent in reverse order: the encoder sorts them */
        clef_buf_printf(b, "%s\"l%03d\":%s", i ? "," : "", n - 1 - i,
                        i % 2 ? "null" : "\"d\"");
    }
    clef_buf_printf(b, "}}}}");
}


static void
score_body(clef_buf *b, int n)
{
    int  i;

    b->len = 0;
    clef_buf_printf(b, Q1 "{\"s\":{\"type\":\"score\",\"criteria\":[");
    for (i = 0; i < n; i++) {
        clef_buf_printf(b, "%s\"level %d\"", i ? "," : "", i);
    }
    clef_buf_printf(b, "]}}}");
}


static void
test_body_errors(void)
{
    ERR("not json", "{", 422, "json_invalid", NULL, NULL);
    ERR("body array", "[]", 422, "dict_type", "[\"body\"]",
        "Input should be a valid dictionary");
    ERR("body string", "\"x\"", 422, "dict_type", "[\"body\"]",
        "Input should be a valid dictionary");
    ERR("body null", "null", 422, "dict_type", "[\"body\"]",
        "Input should be a valid dictionary");
    ERR("empty object", "{}", 422, "missing", "[\"body\",\"model\"]",
        "Field required");
    ERR("model missing", "{\"state\":1,\"questions\":{}}", 422, "missing",
        "[\"body\",\"model\"]", "Field required");
    ERR("model number", "{\"model\":1,\"state\":1,\"questions\":{}}", 422,
        "string_type", "[\"body\",\"model\"]", "Input should be a valid string");
    ERR("model null", "{\"model\":null,\"state\":1,\"questions\":{}}", 422,
        "string_type", "[\"body\",\"model\"]", "Input should be a valid string");
    ERR("state missing", "{\"model\":\"m\",\"questions\":{}}", 422, "missing",
        "[\"body\",\"state\"]", "Field required");
    ERR("questions missing", "{\"model\":\"m\",\"state\":null}", 422, "missing",
        "[\"body\",\"questions\"]", "Field required");
    ERR("questions array", Q1 "[]}", 422, "dict_type",
        "[\"body\",\"questions\"]", "Input should be a valid dictionary");
    ERR("questions null", Q1 "null}", 422, "dict_type",
        "[\"body\",\"questions\"]", "Input should be a valid dictionary");
    ERR("questions empty", Q1 "{}}", 400, "too_few_questions", "",
        "Too few questions. Must have at least 1 question.");
    ERR("images string", Q1 "{\"q\":{\"type\":\"noul\"}},\"images\":\"x\"}", 422,
        "list_type", "[\"body\",\"images\"]", "Input should be a valid list");
    ERR("images object", Q1 "{\"q\":{\"type\":\"noul\"}},\"images\":{}}", 422,
        "list_type", "[\"body\",\"images\"]", "Input should be a valid list");
    ERR("five images",
        Q1 "{\"q\":{\"type\":\"noul\"}},\"images\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}",
        400, "too_many_images", "", "Too many images. Must have at most 4 images.");
}


static void
test_question_errors(void)
{
    ERR("question number", Q1 "{\"q\":1}}", 422, "dict_type",
        "[\"body\",\"questions\",\"q\"]", "Input should be a valid dictionary");
    ERR("question null", Q1 "{\"q\":null}}", 422, "dict_type",
        "[\"body\",\"questions\",\"q\"]", "Input should be a valid dictionary");
    ERR("question array", Q1 "{\"q\":[]}}", 422, "dict_type",
        "[\"body\",\"questions\",\"q\"]", "Input should be a valid dictionary");
    ERR("no type", Q1 "{\"q\":{\"instructions\":\"x\"}}}", 422,
        "union_tag_not_found", "[\"body\",\"questions\",\"q\"]",
        "Unable to extract tag using discriminator 'type'");
    ERR("type boolean", Q1 "{\"q\":{\"type\":\"boolean\"}}}", 422,
        "union_tag_invalid", "[\"body\",\"questions\",\"q\"]",
        "Input tag 'boolean' found using 'type' does not match any of the "
        "expected tags: 'noul', 'choice', 'score'");
    ERR("type case", Q1 "{\"q\":{\"type\":\"Noul\"}}}", 422,
        "union_tag_invalid", "[\"body\",\"questions\",\"q\"]",
        "Input tag 'Noul' found using 'type' does not match any of the "
        "expected tags: 'noul', 'choice', 'score'");
    ERR("type with NUL", Q1 "{\"q\":{\"type\":\"noul\\u0000\"}}}", 422,
        "union_tag_invalid", "[\"body\",\"questions\",\"q\"]",
        "Input tag 'noul\\u0000' found using 'type' does not match any of the "
        "expected tags: 'noul', 'choice', 'score'");
    ERR("type number", Q1 "{\"q\":{\"type\":5}}}", 422, "union_tag_invalid",
        "[\"body\",\"questions\",\"q\"]",
        "Input tag '5' found using 'type' does not match any of the "
        "expected tags: 'noul', 'choice', 'score'");
    ERR("type null", Q1 "{\"q\":{\"type\":null}}}", 422, "union_tag_invalid",
        "[\"body\",\"questions\",\"q\"]",
        "Input tag 'None' found using 'type' does not match any of the "
        "expected tags: 'noul', 'choice', 'score'");
    ERR("type true", Q1 "{\"q\":{\"type\":true}}}", 422, "union_tag_invalid",
        "[\"body\",\"questions\",\"q\"]",
        "Input tag 'True' found using 'type' does not match any of the "
        "expected tags: 'noul', 'choice', 'score'");
    ERR("loc escapes the id", Q1 "{\"a\\\"b\\\\c\\n\":{}}}", 422,
        "union_tag_not_found", "[\"body\",\"questions\",\"a\\\"b\\\\c\\u000a\"]",
        "Unable to extract tag using discriminator 'type'");

    ERR("noul criteria string",
        Q1 "{\"q\":{\"type\":\"noul\",\"criteria\":\"x\"}}}", 422, "dict_type",
        "[\"body\",\"questions\",\"q\",\"criteria\"]",
        "Input should be a valid dictionary");
    ERR("noul criteria array",
        Q1 "{\"q\":{\"type\":\"noul\",\"criteria\":[]}}}", 422, "dict_type",
        "[\"body\",\"questions\",\"q\",\"criteria\"]",
        "Input should be a valid dictionary");
    ERR("noul criteria false",
        Q1 "{\"q\":{\"type\":\"noul\",\"criteria\":false}}}", 422, "dict_type",
        "[\"body\",\"questions\",\"q\",\"criteria\"]",
        "Input should be a valid dictionary");

    ERR("choice criteria missing", Q1 "{\"c\":{\"type\":\"choice\"}}}", 422,
        "missing", "[\"body\",\"questions\",\"c\",\"criteria\"]", "Field required");
    ERR("choice criteria null",
        Q1 "{\"c\":{\"type\":\"choice\",\"criteria\":null}}}", 422, "missing",
        "[\"body\",\"questions\",\"c\",\"criteria\"]", "Field required");
    ERR("choice criteria array",
        Q1 "{\"c\":{\"type\":\"choice\",\"criteria\":[\"a\",\"b\"]}}}", 422,
        "dict_type", "[\"body\",\"questions\",\"c\",\"criteria\"]",
        "Input should be a valid dictionary");
    ERR("choice criteria empty",
        Q1 "{\"c\":{\"type\":\"choice\",\"criteria\":{}}}}", 400,
        "too_few_choices", "", "Too few choices. Must have at least 2 choices.");
    ERR("choice one label",
        Q1 "{\"c\":{\"type\":\"choice\",\"criteria\":{\"a\":null}}}}", 400,
        "too_few_choices", "", "Too few choices. Must have at least 2 choices.");

    ERR("score criteria missing", Q1 "{\"s\":{\"type\":\"score\"}}}", 422,
        "missing", "[\"body\",\"questions\",\"s\",\"criteria\"]", "Field required");
    ERR("score criteria null",
        Q1 "{\"s\":{\"type\":\"score\",\"criteria\":null}}}", 422, "missing",
        "[\"body\",\"questions\",\"s\",\"criteria\"]", "Field required");
    ERR("score criteria object",
        Q1 "{\"s\":{\"type\":\"score\",\"criteria\":{\"0\":\"a\"}}}}", 422,
        "list_type", "[\"body\",\"questions\",\"s\",\"criteria\"]",
        "Input should be a valid list");
    ERR("score criteria string",
        Q1 "{\"s\":{\"type\":\"score\",\"criteria\":\"abc\"}}}", 422,
        "list_type", "[\"body\",\"questions\",\"s\",\"criteria\"]",
        "Input should be a valid list");
    ERR("score criteria empty",
        Q1 "{\"s\":{\"type\":\"score\",\"criteria\":[]}}}", 400,
        "too_few_score_levels", "",
        "Too few score levels. Must have at least 1 level.");
    ERR("score null level",
        Q1 "{\"s\":{\"type\":\"score\",\"criteria\":[null]}}}", 422,
        "level_type", "[\"body\",\"questions\",\"s\",\"criteria\",0]",
        "Score levels must be strings, objects or arrays");
    ERR("score number level",
        Q1 "{\"s\":{\"type\":\"score\",\"criteria\":[\"a\",{},[],3]}}}", 422,
        "level_type", "[\"body\",\"questions\",\"s\",\"criteria\",3]",
        "Score levels must be strings, objects or arrays");
}


static void
test_id_errors(void)
{
    clef_buf  b = { 0 };
    int       i;

    ERR("id with space", Q1 "{\"a b\":{\"type\":\"noul\"}}}", 400,
        "invalid_question_id", "",
        "Invalid question id 'a b': must be 1 to 100 characters of "
        "A-Z a-z 0-9 _ . -");
    ERR("empty id", Q1 "{\"\":{\"type\":\"noul\"}}}", 400,
        "invalid_question_id", "",
        "Invalid question id '': must be 1 to 100 characters of "
        "A-Z a-z 0-9 _ . -");
    ERR("unicode id", Q1 "{\"caf\\u00e9\":{\"type\":\"noul\"}}}", 400,
        "invalid_question_id", "",
        "Invalid question id 'caf\xc3\xa9': must be 1 to 100 characters of "
        "A-Z a-z 0-9 _ . -");
    ERR("control in id", Q1 "{\"a\\tb\":{\"type\":\"noul\"}}}", 400,
        "invalid_question_id", "",
        "Invalid question id 'a\\u0009b': must be 1 to 100 characters of "
        "A-Z a-z 0-9 _ . -");
    ERR("slash in id", Q1 "{\"a/b\":{\"type\":\"noul\"}}}", 400,
        "invalid_question_id", "",
        "Invalid question id 'a/b': must be 1 to 100 characters of "
        "A-Z a-z 0-9 _ . -");

    /* 101 characters: refused, and the echo is cut to 93 bytes + "..." */
    clef_buf_printf(&b, Q1 "{\"");
    for (i = 0; i < 101; i++) {
        clef_buf_putc(&b, 'x');
    }
    clef_buf_printf(&b, "\":{\"type\":\"noul\"}}}");
    expect_error("101-char id", b.data, b.len, NULL, 400, "invalid_question_id",
        "", "Invalid question id 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
        "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...': must be 1 to 100 "
        "characters of A-Z a-z 0-9 _ . -");

    /* a long multi-byte id is cut on a character boundary */
    b.len = 0;
    clef_buf_printf(&b, Q1 "{\"");
    for (i = 0; i < 60; i++) {
        clef_buf_printf(&b, "\xc3\xa9");
    }
    clef_buf_printf(&b, "\":{\"type\":\"noul\"}}}");
    {
        clef_request  req;
        clef_error    err;
        const char   *p, *q;

        CHECK_INT(clef_request_parse(&req, b.data, b.len, NULL, &err), -1,
                  "long unicode id: refused");
        p = strchr(err.message, '\'');
        q = p ? strstr(p, "...'") : NULL;
        CHECK(p != NULL && q != NULL && (q - p - 1) % 2 == 0
              && (q - p - 1) <= 93 && (q - p - 1) >= 90,
              "long unicode id: echo cut between characters");
    }

    /* a long id in a loc is cut to 197 bytes + "...", and stays JSON */
    b.len = 0;
    clef_buf_printf(&b, Q1 "{\"");
    for (i = 0; i < 300; i++) {
        clef_buf_putc(&b, 'y');
    }
    clef_buf_printf(&b, "\":{}}}");
    {
        char  want[512];
        int   n;

        n = snprintf(want, sizeof(want), "[\"body\",\"questions\",\"");
        memset(want + n, 'y', 197);
        snprintf(want + n + 197, sizeof(want) - (size_t) n - 197, "...\"]");
        expect_error("300-char id in loc", b.data, b.len, NULL, 422,
            "union_tag_not_found", want,
            "Unable to extract tag using discriminator 'type'");
    }

    /* a 422 anywhere comes before any 400 (schema before handler) */
    ERR("bad id and no type", Q1 "{\"a b\":{}}}", 422, "union_tag_not_found",
        "[\"body\",\"questions\",\"a b\"]",
        "Unable to extract tag using discriminator 'type'");

    clef_buf_free(&b);
}


static void
test_limit_errors(void)
{
    clef_buf     b = { 0 };
    clef_limits  lim;

    body_with(&b, 65, q_noul);
    expect_error("65 questions", b.data, b.len, NULL, 400, "too_many_questions",
        "", "Too many questions. Must have at most 64 questions.");

    body_with(&b, 65, q_noul_last_untyped);
    expect_error("65 questions, one untyped", b.data, b.len, NULL, 422,
        "union_tag_not_found", "[\"body\",\"questions\",\"q64\"]",
        "Unable to extract tag using discriminator 'type'");

    clef_limits_default(&lim);
    lim.max_questions = 3;
    body_with(&b, 4, q_noul);
    expect_error("limit 3 questions", b.data, b.len, &lim, 400,
        "too_many_questions", "",
        "Too many questions. Must have at most 3 questions.");
    lim.max_questions = 1;
    body_with(&b, 2, q_noul);
    expect_error("limit 1 question", b.data, b.len, &lim, 400,
        "too_many_questions", "",
        "Too many questions. Must have at most 1 question.");

    choice_body(&b, 256);
    expect_error("256 choices", b.data, b.len, NULL, 400, "too_many_choices",
        "", "Too many choices. Must have at most 255 choices.");

    score_body(&b, 11);
    expect_error("11 levels", b.data, b.len, NULL, 400, "too_many_score_levels",
        "", "Too many score levels. Must have at most 10 levels.");

    clef_limits_default(&lim);
    lim.min_score_levels = 2;
    lim.max_choices = 4;
    lim.media[CLEF_MEDIA_IMAGE].max_items = 1;
    lim.max_id_len = 3;
    score_body(&b, 1);
    expect_error("limit 2 levels", b.data, b.len, &lim, 400,
        "too_few_score_levels", "",
        "Too few score levels. Must have at least 2 levels.");
    choice_body(&b, 5);
    expect_error("limit 4 choices", b.data, b.len, &lim, 400,
        "too_many_choices", "", "Too many choices. Must have at most 4 choices.");
    expect_error("limit 1 image",
        Q1 "{\"q\":{\"type\":\"noul\"}},\"images\":[\"a\",\"b\"]}",
        sizeof(Q1 "{\"q\":{\"type\":\"noul\"}},\"images\":[\"a\",\"b\"]}") - 1,
        &lim, 400, "too_many_images", "",
        "Too many images. Must have at most 1 image.");
    expect_error("limit id 3", Q1 "{\"abcd\":{\"type\":\"noul\"}}}",
        sizeof(Q1 "{\"abcd\":{\"type\":\"noul\"}}}") - 1, &lim, 400,
        "invalid_question_id", "",
        "Invalid question id 'abcd': must be 1 to 3 characters of "
        "A-Z a-z 0-9 _ . -");

    clef_buf_free(&b);
}


static void
test_accepted(void)
{
    clef_request          req;
    const clef_question  *q;
    clef_buf              b = { 0 };
    char                  want[16];
    int                   i, ok;

    /* the edges that pass */
    score_body(&b, 10);
    if (parse_ok("10 levels", b.data, b.len, &req) == 0) {
        q = &req.questions[0];
        CHECK_INT(q->type, CLEF_QTYPE_SCORE, "10 levels: type");
        CHECK_INT(q->n_options, 10, "10 levels: options");
        ok = 1;
        for (i = 0; i < 10; i++) {
            snprintf(want, sizeof(want), "%d", i);
            ok &= str_is(q->options[i].id, want)
                  && q->options[i].request_index == i
                  && clef_question_option_by_request_index(q, i) == i;
        }
        CHECK(ok, "10 levels: ids \"0\"..\"9\" in order");
        CHECK(q->options[9].description->type == CLEF_JSON_STRING
              && strcmp(q->options[9].description->str, "level 9") == 0,
              "10 levels: descriptions");
        clef_request_free(&req);
    }

    score_body(&b, 1);
    if (parse_ok("1 level", b.data, b.len, &req) == 0) {
        CHECK_INT(req.questions[0].n_options, 1, "1 level: one option");
        clef_request_free(&req);
    }

    choice_body(&b, 255);
    if (parse_ok("255 choices", b.data, b.len, &req) == 0) {
        q = &req.questions[0];
        CHECK_INT(q->n_options, 255, "255 choices: options");
        ok = 1;
        for (i = 0; i < 255; i++) {
            snprintf(want, sizeof(want), "l%03d", i);
            /* sent reversed, so encoder index i is request index 254 - i */
            ok &= str_is(q->options[i].id, want)
                  && q->options[i].request_index == 254 - i
                  && desc_is(q->options[i].description, (254 - i) % 2 ? NULL : "d")
                  && clef_question_option_by_request_index(q, 254 - i) == i;
        }
        CHECK(ok, "255 choices: sorted, request indexes and inverse agree");
        CHECK_INT(clef_question_option_by_request_index(q, 255), -1,
                  "255 choices: index out of range");
        CHECK_INT(clef_question_option_by_request_index(q, -1), -1,
                  "255 choices: negative index");
        clef_request_free(&req);
    }

    body_with(&b, 64, q_noul);
    if (parse_ok("64 questions", b.data, b.len, &req) == 0) {
        CHECK_INT(req.n_questions, 64, "64 questions: count");
        CHECK(str_is(req.questions[0].id, "q0") && str_is(req.questions[63].id, "q63"),
              "64 questions: request order");
        clef_request_free(&req);
    }

    b.len = 0;
    clef_buf_printf(&b, Q1 "{\"");
    for (i = 0; i < 100; i++) {
        clef_buf_putc(&b, "aZ09_.-"[i % 7]);
    }
    clef_buf_printf(&b, "\":{\"type\":\"noul\"}}}");
    if (parse_ok("100-char id", b.data, b.len, &req) == 0) {
        CHECK_INT(req.questions[0].id.len, 100, "100-char id: kept");
        clef_request_free(&req);
    }

    b.len = 0;
    clef_buf_printf(&b, "{\"model\":\"jev-latest\",\"state\":null,\"extra\":[1],"
        "\"vendor\":7,\"images\":null,\"questions\":{\"q\":{\"type\":\"noul\","
        "\"unknown\":{\"x\":1},\"instructions\":null}}}");
    if (parse_ok("null state, unknown fields", b.data, b.len, &req) == 0) {
        CHECK(str_is(req.model, "jev-latest"), "model kept");
        CHECK(req.state != NULL && req.state->type == CLEF_JSON_NULL,
              "null state is a state");
        CHECK(req.media[CLEF_MEDIA_IMAGE].items == NULL
              && req.media[CLEF_MEDIA_IMAGE].n == 0, "images null: none");
        CHECK(req.questions[0].instructions == NULL, "instructions null: NULL");
        clef_request_free(&req);
    }

    b.len = 0;
    clef_buf_printf(&b, Q1 "{\"q\":{\"type\":\"noul\"}},\"images\":[\"a\",{},3,4]}");
    if (parse_ok("4 images", b.data, b.len, &req) == 0) {
        CHECK_INT(req.media[CLEF_MEDIA_IMAGE].n, 4, "4 images: counted");
        CHECK(req.media[CLEF_MEDIA_IMAGE].items != NULL
              && req.media[CLEF_MEDIA_IMAGE].items->type == CLEF_JSON_ARRAY,
              "4 images: the array");
        clef_request_free(&req);
    }

    clef_buf_free(&b);
}


static void
test_options(void)
{
    static const char  body[] = Q1 "{"
        "\"a\":{\"type\":\"noul\"},"
        "\"b\":{\"type\":\"noul\",\"instructions\":\"\",\"criteria\":"
            "{\"true\":\"yes\",\"maybe\":\"x\"}},"
        "\"c\":{\"type\":\"noul\",\"instructions\":0,\"criteria\":"
            "{\"true\":null,\"false\":{\"k\":1}}},"
        "\"d\":{\"type\":\"noul\",\"instructions\":false,\"criteria\":null},"
        "\"e\":{\"type\":\"choice\",\"criteria\":{\"\\u00e9\":null,\"z\":\"zz\","
            "\"Z\":null,\"\":\"empty\",\"\\ud83d\\ude00\":null,\"e\":\"ee\"}},"
        "\"f\":{\"type\":\"score\",\"instructions\":{\"x\":1},"
            "\"criteria\":[\"lo\",{\"w\":1},[\"hi\"]]}}}";
    clef_request          req;
    const clef_question  *q;
    static const char    *sorted[] = { "", "Z", "e", "z", "\xc3\xa9",
                                       "\xf0\x9f\x98\x80" };
    static const int      req_index[] = { 3, 2, 5, 1, 0, 4 };
    int                   i, ok;

    if (parse_ok("options", body, sizeof(body) - 1, &req) != 0) {
        return;
    }
    CHECK_INT(req.n_questions, 6, "options: 6 questions");

    q = &req.questions[0];
    CHECK(q->type == CLEF_QTYPE_NOUL && q->n_options == 2
          && str_is(q->options[0].id, "true") && str_is(q->options[1].id, "false")
          && desc_is(q->options[0].description,
                     "The proposition is true or the answer is yes.")
          && desc_is(q->options[1].description,
                     "The proposition is false or the answer is no."),
          "noul: true then false with the default descriptions");
    CHECK(q->instructions == NULL && q->criteria == NULL,
          "noul: missing instructions and criteria are NULL");
    CHECK(clef_question_option_by_request_index(q, 1) == 1
          && clef_question_option_by_request_index(q, 2) == -1,
          "noul: request index is the encoder index");

    q = &req.questions[1];
    CHECK(desc_is(q->options[0].description, "yes")
          && desc_is(q->options[1].description,
                     "The proposition is false or the answer is no."),
          "noul: criteria override true only, extra keys ignored");
    CHECK(q->instructions != NULL && q->instructions->type == CLEF_JSON_STRING
          && q->instructions->len == 0, "noul: \"\" instructions kept as \"\"");

    q = &req.questions[2];
    CHECK(q->options[0].description == NULL
          && q->options[1].description != NULL
          && q->options[1].description->type == CLEF_JSON_OBJECT,
          "noul: null override drops the description, objects kept");
    CHECK(q->instructions != NULL && q->instructions->type == CLEF_JSON_INT,
          "noul: 0 instructions kept");

    q = &req.questions[3];
    CHECK(q->criteria == NULL && q->instructions != NULL
          && q->instructions->type == CLEF_JSON_FALSE
          && desc_is(q->options[0].description,
                     "The proposition is true or the answer is yes."),
          "noul: null criteria, false instructions kept");

    q = &req.questions[4];
    CHECK_INT(q->type, CLEF_QTYPE_CHOICE, "choice: type");
    ok = q->n_options == 6;
    for (i = 0; ok && i < 6; i++) {
        ok = str_is(q->options[i].id, sorted[i])
             && q->options[i].request_index == req_index[i]
             && clef_question_option_by_request_index(q, req_index[i]) == i;
    }
    CHECK(ok, "choice: labels in code-point order, request indexes kept");
    CHECK(q->options[0].description != NULL && q->options[1].description == NULL
          && desc_is(q->options[3].description, "zz"),
          "choice: null description is NULL");

    q = &req.questions[5];
    CHECK(q->type == CLEF_QTYPE_SCORE && q->n_options == 3
          && str_is(q->options[2].id, "2")
          && q->options[2].description->type == CLEF_JSON_ARRAY
          && q->options[1].description->type == CLEF_JSON_OBJECT,
          "score: ids and structured levels");
    CHECK(q->instructions != NULL && q->instructions->type == CLEF_JSON_OBJECT,
          "score: structured instructions");

    clef_request_free(&req);
    clef_request_free(&req);
    CHECK(req.arena.head == NULL, "free twice is harmless");
}


/* clef_request_check_media() on media fields a model does not take or this
 * server does not read yet, and on media_kwargs: each refused by name,
 * with where it is (issue 21, issue 22); status 0: accepted. */
static void
media_check(const char *name, const char *tail, unsigned accepts, int status,
    const char *type, const char *loc, const char *message)
{
    clef_request  req;
    clef_error    err;
    clef_buf      b = { NULL, 0, 0 };
    int           rc;

    clef_error_clear(&err);
    clef_buf_printf(&b, "{\"model\":\"m\",\"questions\":{\"q\":{\"type\":"
                    "\"noul\"}}%s%s}", strstr(tail, "\"state\"") != NULL
                    ? "" : ",\"state\":\"s\"", tail);
    rc = clef_request_parse(&req, b.data, b.len, NULL, &err);
    if (rc == 0) {
        rc = clef_request_check_media(&req, accepts, &err);
        clef_request_free(&req);
    }
    clef_buf_free(&b);
    if (status == 0) {
        CHECK_INT(rc, 0, "%s: accepted", name);
        return;
    }
    CHECK_INT(rc, -1, "%s: refused", name);
    CHECK_INT(err.status, status, "%s: status", name);
    CHECK_STR(err.type, type, "%s: type", name);
    CHECK_STR(err.loc, loc, "%s: loc", name);
    if (message != NULL) {
        CHECK_STR(err.message, message, "%s: message", name);
    }
}


static void
test_media_fields(void)
{
    media_check("two videos, a model without videos",
                ",\"videos\":[\"data:video/mp4;base64,AAAA\","
                "{\"content_type\":\"video/webm\",\"base64\":\"AAAA\"}]", 0,
                400, "videos_unsupported", "[\"body\",\"videos\"]",
                "This model does not accept videos (2 given): remove "
                "\"videos\"; text and JSON states are supported.");
    media_check("a video beside images a model takes",
                ",\"videos\":[\"x\"]", 1, 400, "videos_unsupported",
                "[\"body\",\"videos\"]",
                "This model does not accept videos (1 given): remove "
                "\"videos\"; text, JSON states and images are supported.");
    media_check("audio, a model without an audio tower",
                ",\"audio\":[\"data:audio/wav;base64,AAAA\"]", 0,
                400, "audio_unsupported", "[\"body\",\"audio\"]",
                "This model does not accept audio clips (1 given): "
                "remove \"audio\"; text and JSON states are supported.");
    media_check("audio beside images, a model with images only",
                ",\"audio\":[{\"content_type\":\"audio/mpeg\","
                "\"base64\":\"AAAA\"}]", 1, 400, "audio_unsupported",
                "[\"body\",\"audio\"]",
                "This model does not accept audio clips (1 given): "
                "remove \"audio\"; text, JSON states and images are "
                "supported.");
    /* a 44-byte WAV header with one 16-bit sample */
    media_check("audio, a model that takes it",
                ",\"audio\":[\"data:audio/wav;base64,UklGRiYAAABXQVZFZm10"
                "IBAAAAABAAEAgD4AAAB9AAACABAAZGF0YQIAAAAAAA==\"]",
                CLEF_MEDIA_BIT(CLEF_MEDIA_AUDIO), 0, NULL, NULL, NULL);
    media_check("audio declared WAV, an MP3's bytes",
                ",\"audio\":[\"data:audio/wav;base64,SUQzBAAAAAAAAA==\"]",
                CLEF_MEDIA_BIT(CLEF_MEDIA_AUDIO), 400, "audio_type_mismatch",
                "[\"body\",\"audio\",0]",
                "Audio clip 0 is declared audio/wav but its bytes are an MP3 "
                "file.");
    media_check("five audio clips", ",\"audio\":[\"a\",\"a\",\"a\",\"a\","
                "\"a\"]", CLEF_MEDIA_BIT(CLEF_MEDIA_AUDIO), 400,
                "too_many_audio", "", "Too many audio clips. Must have at "
                "most 4 audio clips.");
    media_check("media_kwargs: an unknown key after a known one",
                ",\"media_kwargs\":{\"fps\":1,\"x\":2}", 1,
                400, "media_kwargs_unsupported",
                "[\"body\",\"media_kwargs\",\"x\"]",
                "The media_kwargs key \"x\" is not supported: this server "
                "takes fps, size, min_pixels, max_pixels, cap_pixels_per_frame "
                "and max_video_tokens; remove it.");
    media_check("a media_kwargs key with a quote and a newline",
                ",\"media_kwargs\":{\"a\\\"b\\nc\":null}", 0, 400,
                "media_kwargs_unsupported",
                "[\"body\",\"media_kwargs\",\"a\\\"b\\u000ac\"]",
                "The media_kwargs key \"a\"b\\u000ac\" is not supported: "
                "this server takes fps, size, min_pixels, max_pixels, "
                "cap_pixels_per_frame and max_video_tokens; remove it.");
    media_check("media_kwargs: min_frames, which the reference drops",
                ",\"media_kwargs\":{\"min_frames\":8}", 0, 400,
                "media_kwargs_unsupported",
                "[\"body\",\"media_kwargs\",\"min_frames\"]",
                "The media_kwargs key \"min_frames\" is not supported: the "
                "reference's video processor reads it from its configuration "
                "only, so a request's changes nothing; remove it.");
    media_check("media_kwargs: max_frames too", ",\"media_kwargs\":"
                "{\"max_frames\":8}", 0, 400, "media_kwargs_unsupported",
                "[\"body\",\"media_kwargs\",\"max_frames\"]", NULL);
    media_check("media_kwargs: num_frames", ",\"media_kwargs\":"
                "{\"num_frames\":8}", 0, 400, "media_kwargs_unsupported",
                "[\"body\",\"media_kwargs\",\"num_frames\"]",
                "The media_kwargs key \"num_frames\" is not supported: the "
                "reference's video processor refuses it beside its fps, "
                "which is always set; send fps instead.");
    media_check("media_kwargs: the tower's patch size", ",\"media_kwargs\":"
                "{\"patch_size\":14}", 0, 400, "media_kwargs_unsupported",
                "[\"body\",\"media_kwargs\",\"patch_size\"]",
                "The media_kwargs key \"patch_size\" is not supported: it is "
                "the vision tower's own; remove it.");
    media_check("media_kwargs: fps 0", ",\"media_kwargs\":{\"fps\":0}", 0,
                400, "media_kwargs_invalid",
                "[\"body\",\"media_kwargs\",\"fps\"]",
                "The media_kwargs key \"fps\" must be a number above 0 and at "
                "most 120.");
    media_check("media_kwargs: fps 120.5", ",\"media_kwargs\":"
                "{\"fps\":120.5}", 0, 400, "media_kwargs_invalid",
                "[\"body\",\"media_kwargs\",\"fps\"]", NULL);
    media_check("media_kwargs: fps a string", ",\"media_kwargs\":"
                "{\"fps\":\"2\"}", 0, 400, "media_kwargs_invalid",
                "[\"body\",\"media_kwargs\",\"fps\"]", NULL);
    media_check("media_kwargs: size with one edge", ",\"media_kwargs\":"
                "{\"size\":{\"longest_edge\":100000}}", 0, 400,
                "media_kwargs_invalid",
                "[\"body\",\"media_kwargs\",\"size\"]",
                "The media_kwargs key \"size\" must be an object of two "
                "integers, shortest_edge and longest_edge, each from 1 to "
                "16777216.");
    media_check("media_kwargs: size over the bound", ",\"media_kwargs\":"
                "{\"size\":{\"shortest_edge\":1,\"longest_edge\":"
                "16777217}}", 0, 400, "media_kwargs_invalid",
                "[\"body\",\"media_kwargs\",\"size\"]", NULL);
    media_check("media_kwargs: size with a third key", ",\"media_kwargs\":"
                "{\"size\":{\"shortest_edge\":1,\"longest_edge\":2,"
                "\"height\":3}}", 0, 400, "media_kwargs_invalid",
                "[\"body\",\"media_kwargs\",\"size\"]", NULL);
    media_check("media_kwargs: max_pixels 1.5", ",\"media_kwargs\":"
                "{\"max_pixels\":1.5}", 0, 400, "media_kwargs_invalid",
                "[\"body\",\"media_kwargs\",\"max_pixels\"]",
                "The media_kwargs key \"max_pixels\" must be an integer from "
                "1 to 16777216.");
    media_check("media_kwargs: min_pixels 0", ",\"media_kwargs\":"
                "{\"min_pixels\":0}", 0, 400, "media_kwargs_invalid",
                "[\"body\",\"media_kwargs\",\"min_pixels\"]", NULL);
    media_check("media_kwargs: a huge integer", ",\"media_kwargs\":"
                "{\"max_video_tokens\":123456789012345678901234567890}", 0,
                400, "media_kwargs_invalid",
                "[\"body\",\"media_kwargs\",\"max_video_tokens\"]",
                "The media_kwargs key \"max_video_tokens\" must be an integer "
                "from 1 to 24576.");
    media_check("media_kwargs: cap_pixels_per_frame 1", ",\"media_kwargs\":"
                "{\"cap_pixels_per_frame\":1}", 0, 400, "media_kwargs_invalid",
                "[\"body\",\"media_kwargs\",\"cap_pixels_per_frame\"]",
                "The media_kwargs key \"cap_pixels_per_frame\" must be true or "
                "false.");
    media_check("media_kwargs: every key it takes, in bounds",
                ",\"media_kwargs\":{\"fps\":120,\"size\":{\"shortest_edge\":"
                "1,\"longest_edge\":16777216},\"min_pixels\":1,"
                "\"max_pixels\":16777216,\"cap_pixels_per_frame\":false,"
                "\"max_video_tokens\":24576}", 0, 0, NULL, NULL, NULL);
    media_check("videos before media_kwargs",
                ",\"media_kwargs\":{\"x\":1},\"videos\":[1]", 0, 400,
                "videos_unsupported", "[\"body\",\"videos\"]", NULL);
    media_check("OpenRouter's video part in a state",
                ",\"state\":[\"see\",{\"type\":\"video_url\",\"video_url\":"
                "{\"url\":\"data:video/mp4;base64,AAAA\"}}]", 1, 400,
                "videos_unsupported", "[\"body\",\"state\",1]",
                "Video parts in the state (state[1] has type \"video_url\") "
                "are not supported; this server reads the state as text or "
                "JSON.");
    media_check("an input_audio part in a state",
                ",\"state\":[{\"type\":\"input_audio\",\"input_audio\":"
                "{\"data\":\"AAAA\",\"format\":\"wav\"}}]", 0, 400,
                "audio_unsupported", "[\"body\",\"state\",0]",
                "Audio parts in the state (state[0] has type "
                "\"input_audio\") are not supported; this server reads the "
                "state as text or JSON.");
    media_check("an image part in a state, images taken",
                ",\"state\":[{\"type\":\"input_image\"}]", 1, 400,
                "images_unsupported", "[\"body\",\"state\",0]",
                "Image parts in the state (state[0] has type "
                "\"input_image\") are not supported: send images in a "
                "top-level \"images\" array; this server reads the state as "
                "text or JSON.");

    /* the shapes the reference's request model gives them (422) */
    ERR("videos not a list", Q1 "{\"q\":{\"type\":\"noul\"}},\"videos\":7}",
        422, "list_type", "[\"body\",\"videos\"]", "Input should be a valid list");
    ERR("audio not a list", Q1 "{\"q\":{\"type\":\"noul\"}},\"audio\":\"x\"}",
        422, "list_type", "[\"body\",\"audio\"]", "Input should be a valid list");
    ERR("media_kwargs not an object",
        Q1 "{\"q\":{\"type\":\"noul\"}},\"media_kwargs\":[]}", 422,
        "dict_type", "[\"body\",\"media_kwargs\"]",
        "Input should be a valid dictionary");

    /* empty or null: nothing is there to ignore */
    media_check("empty videos and audio, null media_kwargs",
                ",\"videos\":[],\"audio\":null,\"media_kwargs\":null", 0, 0,
                NULL, NULL, NULL);
    media_check("empty media_kwargs, null videos",
                ",\"media_kwargs\":{},\"videos\":null,\"audio\":[]", 0, 0,
                NULL, NULL, NULL);
}


int
main(void)
{
    test_body_errors();
    test_question_errors();
    test_id_errors();
    test_limit_errors();
    test_accepted();
    test_options();
    test_media_fields();
    return check_done();
}
