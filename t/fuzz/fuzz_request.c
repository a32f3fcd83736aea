/*
 * The untrusted path of a System One request, on arbitrary body bytes:
 *     clef_request_parse -> clef_encode -> clef_answer_json
 * A refusal must be a complete error whose error body is JSON; an accepted
 * request must give a record whose ids are in the vocab and whose spans lie
 * inside it, and an answer that is JSON for any logits, finite or not.
 *
 * The first input byte picks the options, the rest is the body:
 *   bit 0     tokenizer: Qwen3, or the small trained one
 *   bit 1     truncate the state instead of refusing
 *   bits 2-3  max_length: 65536, 4096, 256, 24
 *   bit 4     "raw" in the answer
 *   bit 5     media ids given (images are then accepted)
 *   bits 6-7  logits: moderate, huge finite, with +-inf, with NaN
 * The logits come from a generator seeded with a hash of the input, so an
 * input always replays the same way.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "fuzz_common.h"
#include "protocol/answer.h"
#include "protocol/encode.h"
#include "protocol/request.h"

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_load_tokenizers();
    return 0;
}

static uint64_t
next_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void
make_logits(float *l, int n, int mode, const uint8_t *data, size_t size)
{
    static const float  special[] = { INFINITY, -INFINITY, NAN, FLT_MAX,
                                      -FLT_MAX, 0.0f, -0.0f, FLT_MIN };
    uint64_t            s = 1469598103934665603ull, r;
    size_t              i;
    int                 o;

    for (i = 0; i < size; i++) {
        s = (s ^ data[i]) * 1099511628211ull;
    }
    s |= 1;
    for (o = 0; o < n; o++) {
        r = next_rand(&s);
        switch (mode) {
        case 0:
            l[o] = (float) ((double) (r % 2000001) / 1e5 - 10.0);
            break;
        case 1:
            /* up to 2^24 * 2^103: huge, still below FLT_MAX */
            l[o] = (r & 1 ? 1 : -1)
                   * (float) ldexp((double) (r >> 40), (int) (r >> 8) % 104);
            break;
        default:
            /* half of them special; only mode 3 gets NaN */
            if (r & 1) {
                l[o] = special[(r >> 1) % (mode == 3 ? 8 : 2)];
            } else {
                l[o] = (float) ((double) (r % 2000001) / 1e5 - 10.0);
            }
            break;
        }
    }
}

static const clef_json *
member(const clef_json *v, const char *key, clef_json_type type)
{
    const clef_json  *m = clef_json_get(v, key);

    if (m == NULL || m->type != type) {
        fuzz_fail("answer: \"%s\" missing or of the wrong type", key);
    }
    return m;
}

/* With finite logits every number in the answer is a finite float. */
static void
check_answer(const char *text, size_t len, const clef_request *req, int finite)
{
    clef_arena        a;
    clef_error        err;
    const clef_json  *root, *answers, *ans, *probs;
    size_t            i, k;

    clef_arena_init(&a, 4096);
    root = clef_json_parse(&a, text, len, &err);
    if (root == NULL) {
        fuzz_fail("answer is no JSON (%s): %.*s", err.message,
                  (int) (len > 2000 ? 2000 : len), text);
    }
    answers = member(root, "answers", CLEF_JSON_OBJECT);
    if (answers->len != (size_t) req->n_questions) {
        fuzz_fail("%zu answers for %d questions", answers->len, req->n_questions);
    }
    for (i = 0; finite && i < answers->len; i++) {
        ans = answers->items[i];
        switch (req->questions[i].type) {
        case CLEF_QTYPE_NOUL:
            member(ans, "noul", CLEF_JSON_FLOAT);
            break;
        case CLEF_QTYPE_SCORE:
            member(ans, "score", CLEF_JSON_FLOAT);
            /* fall through */
        default:
            member(ans, "confidence", CLEF_JSON_FLOAT);
            probs = member(ans, "probabilities", CLEF_JSON_OBJECT);
            if (probs->len != (size_t) req->questions[i].n_options) {
                fuzz_fail("question %zu: %zu probabilities for %d options", i,
                          probs->len, req->questions[i].n_options);
            }
            for (k = 0; k < probs->len; k++) {
                if (probs->items[k]->type != CLEF_JSON_FLOAT) {
                    fuzz_fail("question %zu: probability %zu is no float", i, k);
                }
            }
            break;
        }
    }
    clef_arena_free(&a);
}

static void
check_record(const clef_record *rec, const clef_request *req,
    const clef_tokenizer *tk, size_t max_length)
{
    size_t            i, n = rec->ids.n, vocab = clef_tokenizer_vocab_size(tk);
    int               q, o;
    const clef_span  *s;

    if (n > max_length) {
        fuzz_fail("%zu ids over max_length %zu", n, max_length);
    }
    for (i = 0; i < n; i++) {
        if (rec->ids.v[i] < 0 || (size_t) rec->ids.v[i] >= vocab) {
            fuzz_fail("id %d out of the vocab", (int) rec->ids.v[i]);
        }
    }
    if (rec->n_questions != req->n_questions || rec->option_offset[0] != 0
        || rec->option_offset[rec->n_questions] != rec->n_options)
    {
        fuzz_fail("record shape");
    }
    for (q = 0; q < rec->n_questions; q++) {
        s = &rec->question_spans[q];
        if (s->start < 0 || s->start > s->end || (size_t) s->end > n) {
            fuzz_fail("question %d span [%d, %d) of %zu", q, s->start, s->end, n);
        }
        if (rec->option_offset[q + 1] - rec->option_offset[q]
            != req->questions[q].n_options)
        {
            fuzz_fail("question %d option count", q);
        }
        for (o = rec->option_offset[q]; o < rec->option_offset[q + 1]; o++) {
            s = &rec->option_spans[o];
            /* an option's JSON is never empty, and it follows its question */
            if (s->start >= s->end || (size_t) s->end > n
                || s->start < rec->question_spans[q].end)
            {
                fuzz_fail("option %d span [%d, %d) of %zu", o, s->start, s->end, n);
            }
        }
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const int       lengths[] = { 65536, 4096, 256, 24 };
    int32_t                media[4];
    const clef_tokenizer  *tk;
    clef_request           req;
    clef_record            rec;
    clef_encode_opts       eo;
    clef_answer_opts       ao;
    clef_error             err;
    clef_buf               out = { 0 };
    float                 *logits;
    int                    flags, mode;

    if (size < 1) {
        return 0;
    }
    flags = data[0];
    tk = fuzz_tk[flags & 1 ? FUZZ_TRAINED : FUZZ_QWEN];

    memset(&err, 0, sizeof(err));
    if (clef_request_parse(&req, (const char *) data + 1, size - 1, NULL, &err) != 0) {
        fuzz_check_error(&err);
        return 0;
    }

    clef_encode_opts_default(&eo);
    eo.truncate = flags & 2 ? CLEF_TRUNCATE_STATE : CLEF_TRUNCATE_REJECT;
    eo.max_length = lengths[(flags >> 2) & 3];
    if (flags & 32) {
        /* what the processor puts for an image, in this tokenizer's ids */
        media[0] = clef_tokenizer_token_id(tk, "<|image_pad|>");
        if (media[0] < 0) {
            media[0] = (int32_t) clef_tokenizer_vocab_size(tk) - 1;
        }
        media[1] = media[2] = media[3] = media[0];
        eo.media_ids = media;
        eo.n_media_ids = 4;
    }
    memset(&err, 0, sizeof(err));
    if (clef_encode(tk, &req, &eo, &rec, &err) != 0) {
        fuzz_check_error(&err);
        clef_request_free(&req);
        return 0;
    }
    check_record(&rec, &req, tk, (size_t) eo.max_length);

    mode = (flags >> 6) & 3;
    logits = malloc(sizeof(float) * (size_t) (rec.n_options + 1));
    if (logits == NULL) {
        fuzz_fail("out of memory");
    }
    make_logits(logits, rec.n_options, mode, data, size);

    memset(&ao, 0, sizeof(ao));
    ao.raw = (flags >> 4) & 1;
    if (clef_answer_json(&out, &req, &rec, logits, &ao) != 0 || out.data == NULL) {
        fuzz_fail("clef_answer_json failed");
    }
    check_answer(out.data, out.len, &req, mode < 2);

    clef_buf_free(&out);
    free(logits);
    clef_record_free(&rec);
    clef_request_free(&req);
    return 0;
}
