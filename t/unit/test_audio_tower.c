/*
 * Clef Omni's audio tower and the placement of audio clips against the
 * reference (t/fixtures/audio, written by t/reference/gen_omni_audio_
 * fixtures.py from transformers 5.10.2's Qwen3-Omni thinker and Cloudflare's
 * Clef Omni code in fp32), on the checkpoint t/fixtures/models/omni1.json
 * that `clef mkmodel` writes again here:
 *
 *   - clef_audio_output_tokens() and the tower's chunks, paddings and
 *     attention windows (backend/audio_layout.h) on known lengths;
 *   - fed the reference's log-mel features, the CPU tower's rows of every
 *     clip within 1e-5 of the reference's (all of them);
 *   - the record's ids, question and option spans identical to the
 *     reference's, from our own expansion of the clips (their frame counts
 *     alone) and of its images (decoded and processed by the engine);
 *   - the CPU backend's probabilities within 1e-5;
 *   - a clip's rows bit-identical whether its record's clips run alone or
 *     with every other record's clips, and every record's logits
 *     bit-identical whether alone or packed into one batch;
 *   - refusals: a clip prepared for another tower, a model without one.
 */
#include <jansson.h>
#include <unistd.h>

#include "backend/audio_layout.h"
#include "backend/vision_layout.h"
#include "backend/backend.h"
#include "check.h"
#include "cpu/model/audio.h"
#include "cpu/parallel/pool.h"
#include "media/audio_features.h"
#include "media/base64.h"
#include "model/model.h"
#include "model/model_media.h"
#include "protocol/encode_media.h"
#include "protocol/plan.h"
#include "protocol/request.h"
#include "shell.h"
#include "vision_cases.h"
#include "audio_cases.h"
#include "e2e_cases.h"

#define TOWER_TOL  1e-5
#define PROB_TOL   1e-5
#define MAX_RECS   32
#define MAX_CLIPS  4

/* under the sanitizers a few records: short clips of one record padded
 * together, the 12-second clip (two windows), a clip after an image */
#if defined(__SANITIZE_ADDRESS__)
#define RUN_CASE(i)  ((i) < 4 || (i) == 6)
#else
#define RUN_CASE(i)  1
#endif

static char    tmp[] = "/tmp/clef_audio_XXXXXX";
static double  worst_tower, worst_prob;


static void
check_encoding(json_t *c, const clef_record *rec, const char *name,
    int n_clips)
{
    json_t   *ids = json_object_get(c, "input_ids");
    json_t   *qs = json_object_get(c, "questions");
    int       ok, k, first;
    int64_t   t;

    CHECK(e2e_ids_equal(ids, rec), "%s: %zu input ids identical", name,
          rec->ids.n);
    CHECK(e2e_spans_equal(qs, rec), "%s: question and option spans identical",
          name);

    /* the clips' spans: after the images', each its item's tokens; their
     * positions count on as text */
    first = rec->n_spans - n_clips;
    ok = first >= 0;
    for (k = 0; ok && k < n_clips; k++) {
        const clef_media_span  *s = &rec->spans[first + k];

        ok = s->item == rec->n_media - n_clips + k && s->row == 0
             && s->len == rec->media[s->item].tokens
             && rec->ids.v[s->start - 1] == 151669
             && rec->ids.v[s->start + s->len] == 151670;
        for (t = s->start - 1; ok && t <= s->start + s->len; t++) {
            ok = rec->positions[t] == rec->positions[t - 1] + 1
                 && rec->positions[rec->ids.n + t] == rec->positions[t]
                 && rec->positions[2 * rec->ids.n + t] == rec->positions[t];
        }
    }
    CHECK(ok, "%s: %d clips: <|audio_start|>, their pads, <|audio_end|>, "
          "positions on as text", name, n_clips);
}


/* ---- what needs no model ---------------------------------------------- */

static void
check_tokens(void)
{
    static const int64_t  want[][2] = {
        { 0, 0 }, { 1, 1 }, { 2, 1 }, { 8, 1 }, { 9, 2 }, { 20, 3 },
        { 50, 7 }, { 73, 10 }, { 99, 13 }, { 100, 13 }, { 101, 14 },
        { 150, 20 }, { 199, 26 }, { 200, 26 }, { 810, 106 },
        { 1200, 156 }, { 6000, 780 }, { -5, 0 },
    };
    size_t                i;
    int                   ok = 1;

    for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        if (clef_audio_output_tokens(want[i][0]) != want[i][1]) {
            printf("#   %lld frames: %lld tokens, want %lld\n",
                   (long long) want[i][0],
                   (long long) clef_audio_output_tokens(want[i][0]),
                   (long long) want[i][1]);
            ok = 0;
        }
    }
    CHECK(ok, "clef_audio_output_tokens: %zu lengths as the reference's "
          "formula", i);
}


static void
check_layout(void)
{
    clef_audio_tower_config  a = { 0 };
    clef_audio_layout        l;
    clef_media_item          it[3];
    const clef_media_item   *p[3] = { &it[0], &it[1], &it[2] };
    const char              *why = NULL;
    float                    v = 0;
    int32_t                  g[3] = { 0, 0, 1 };
    int                      k, ok;

    a.num_mel_bins = 128;
    a.n_window = 50;
    a.n_window_infer = 800;
    a.d_model = 32;
    memset(it, 0, sizeof(it));
    for (k = 0; k < 3; k++) {
        it[k].kind = CLEF_MEDIA_AUDIO;
        it[k].grid_t = 1;
        it[k].grid_h = 128;
        it[k].values = &v;
    }
    it[0].grid_w = 50;
    it[1].grid_w = 73;
    it[2].grid_w = 1200;
    for (k = 0; k < 3; k++) {
        it[k].tokens = clef_audio_output_tokens(it[k].grid_w);
    }
    ok = clef_audio_layout_build(&a, p, g, 3, &l, &why) == 0
         && l.n_chunks == 14 && l.rows == 7 + 10 + 156
         && l.chunks[0].width == 73 && l.chunks[1].width == 73
         && l.chunks[2].width == 100 && l.chunks[13].frames == 100
         && l.chunks[13].row == 7 + 10 + 143 && l.chunks[13].rows == 13
         && l.n_windows == 4 && l.cu[1] == 7 && l.cu[2] == 17
         && l.cu[3] == 17 + 104 && l.cu[4] == 173 && l.longest == 104
         && l.widest == 100;
    CHECK(ok, "layout: 50 and 73 frames of one record padded to 73, one "
          "window each; 1200 frames: 12 chunks of 100, windows 104 + 52");
    clef_audio_layout_free(&l);

    /* the short clip with the long one of its record: padded to 100 */
    g[0] = 1;
    ok = clef_audio_layout_build(&a, p, g, 3, &l, &why) == 0
         && l.chunks[0].width == 100 && l.chunks[1].width == 73
         && l.cu[1] == 7;
    clef_audio_layout_free(&l);
    ok = ok && clef_audio_layout_build(&a, p, NULL, 3, &l, &why) == 0
         && l.chunks[0].width == 50 && l.chunks[1].width == 73;
    clef_audio_layout_free(&l);
    CHECK(ok, "layout: a clip's padding is its record's longest chunk");

    /* 210 frames, windows of 13 * 2 with n_window_infer 200: 27 rows in
     * windows of 26 and 1 */
    a.n_window_infer = 200;
    it[0].grid_w = 210;
    it[0].tokens = clef_audio_output_tokens(210);
    ok = clef_audio_layout_build(&a, p, NULL, 1, &l, &why) == 0
         && l.n_chunks == 3 && l.chunks[2].frames == 10
         && l.chunks[2].rows == 2 && l.chunks[2].width == 100
         && l.n_windows == 2 && l.cu[1] == 26 && l.cu[2] == 28;
    clef_audio_layout_free(&l);
    CHECK(ok, "layout: n_window_infer 200: windows of 26 rows");

    it[0].tokens++;
    ok = clef_audio_layout_build(&a, p, NULL, 1, &l, &why) == -1
         && strstr(why, "another tower") != NULL;
    it[0].tokens--;
    it[0].grid_h = 80;
    ok = ok && clef_audio_layout_build(&a, p, NULL, 1, &l, &why) == -1;
    it[0].grid_h = 128;
    it[0].grid_w = 0;
    it[0].tokens = 0;
    ok = ok && clef_audio_layout_build(&a, p, NULL, 1, &l, &why) == -1;
    CHECK(ok, "layout: refuses clips of the wrong token count, mel bins, or "
          "no frames (%s)", why != NULL ? why : "");

    a.n_window = 40;
    ok = clef_audio_config_refusal(&a) != NULL;
    a.n_window = 50;
    a.n_window_infer = 99;
    ok = ok && clef_audio_config_refusal(&a) != NULL;
    a.n_window_infer = 800;
    CHECK(ok && clef_audio_config_refusal(&a) == NULL,
          "the tower refuses chunks other than 100 frames, windows under one");
}


static void
check_positions(void)
{
    float   pos[13 * 32];
    double  inc = log(10000.0) / 15, d = 0, e;
    int     t, i;

    clef_audio_positions(32, 13, pos);
    for (t = 0; t < 13; t++) {
        for (i = 0; i < 16; i++) {
            e = fabs(pos[t * 32 + i] - sin(t * exp(-inc * i)));
            d = e > d ? e : d;
            e = fabs(pos[t * 32 + 16 + i] - cos(t * exp(-inc * i)));
            d = e > d ? e : d;
        }
    }
    CHECK(d < 1e-5 && pos[0] == 0.0f && pos[16] == 1.0f,
          "sinusoidal positions: sin | cos of t / 10000^(i / 15) (max %.2g)",
          d);
}


int
main(void)
{
    const clef_backend_ops  *ops;
    clef_backend            *b = NULL;
    clef_backend_opts        bo = { 0 };
    clef_cpu_audio          *tower = NULL;
    clef_cpu_pool           *pool;
    clef_model              *m = NULL;
    clef_error               err;
    clef_record              recs[MAX_RECS];
    const clef_record       *ptrs[MAX_RECS];
    const clef_media_item   *all[MAX_RECS * MAX_CLIPS];
    int32_t                  group[MAX_RECS * MAX_CLIPS];
    int64_t                  first_row[MAX_RECS], rows = 0;
    json_t                  *cases = json_array(), *c;
    char                     path[1024], dir[1100], *line = NULL;
    size_t                   cap = 0;
    FILE                    *f;
    float                   *alone[MAX_RECS], *packed, *batched = NULL;
    float                   *clip_rows[MAX_RECS];
    double                   d;
    int                      n = 0, i, k, same, ok, off, o, total, n_all = 0;
    int                      hidden = 0;

    check_tokens();
    check_layout();
    check_positions();

    if (access("build/clef", X_OK) != 0 || mkdtemp(tmp) == NULL) {
        printf("1..0 # SKIP build/clef is not built\n");
        return 0;
    }
    snprintf(dir, sizeof(dir), "%s/omni1", tmp);
    CHECK_INT(sh("build/clef mkmodel --config '%s/models/omni1.json' "
                 "--tokenizer '%s/tokenizer/qwen3-omni' --seed 21 --shards 2 "
                 "--out '%s' > /dev/null", check_fixtures(), check_fixtures(),
                 dir), 0, "mkmodel omni1");
    CHECK_INT(sh("cd '%s' && sha256sum --quiet -c '%s/%s/models/omni1.sha256'",
                 dir, getcwd(path, sizeof(path)), check_fixtures()), 0,
              "omni1: files as t/fixtures/models/omni1.sha256");

    snprintf(path, sizeof(path), "%s/audio/omni1.jsonl", check_fixtures());
    f = fopen(path, "r");
    while (f != NULL && getline(&line, &cap, f) > 0) {
        json_array_append_new(cases, json_loads(line, 0, NULL));
    }
    if (f != NULL) {
        fclose(f);
    }
    free(line);
    CHECK(json_array_size(cases) >= 12, "%zu records with audio clips",
          json_array_size(cases));

    m = clef_model_open(dir, 0, &err);
    ops = clef_backend_find("cpu", &err);
    bo.threads = 2;
    CHECK(m != NULL && ops != NULL && ops->open(m, &bo, &b, &err) == 0,
          "omni1 opens on the CPU backend");
    pool = clef_cpu_pool_create(2, &err);
    CHECK(m != NULL && pool != NULL
          && clef_cpu_audio_open(m, pool, &tower, &err) == 0 && tower != NULL,
          "omni1's audio tower opens");
    if (b == NULL || tower == NULL) {
        return check_done();
    }
    hidden = clef_model_text_config(m)->hidden_size;

    json_array_foreach(cases, i, c) {
        const char       *name = json_string_value(json_object_get(c, "name"));
        clef_media_item   clips[MAX_CLIPS];
        clef_record      *rec = &recs[n];
        json_t           *a;
        float             lg[256], *want;
        int               nc, first;
        int64_t           r0, T;

        if (n >= MAX_RECS) {
            break;
        }
        if (!RUN_CASE(i)) {
            continue;
        }
        nc = clip_items(c, clips);
        CHECK(nc >= 1 && nc <= MAX_CLIPS, "%s: %d clips of reference "
              "features", name, nc);
        if (nc < 1 || nc > MAX_CLIPS) {
            continue;
        }
        if (encode_case_audio(m, c, clips, nc, rec) != 0) {
            CHECK(0, "%s: encoded", name);
            for (k = 0; k < nc; k++) {
                clef_media_item_free(&clips[k]);
            }
            continue;
        }
        check_encoding(c, rec, name, nc);

        /* the tower on the record's clips alone */
        first = rec->n_media - nc;
        T = 0;
        for (k = 0; k < nc; k++) {
            all[n_all + k] = &rec->media[first + k];
            group[n_all + k] = n;
            T += rec->media[first + k].tokens;
        }
        clip_rows[n] = malloc(sizeof(float) * (size_t) (T * hidden + 1));
        ok = clip_rows[n] != NULL
             && clef_cpu_audio_forward(tower, all + n_all, group + n_all,
                                       nc, clip_rows[n], &err) == 0;
        d = ok ? 0 : 1;
        r0 = 0;
        json_array_foreach(json_object_get(c, "audio"), k, a) {
            int64_t  tk = json_integer_value(json_object_get(a, "tokens")), e;

            want = floats(json_object_get(a, "output"), tk * hidden);
            ok &= want != NULL && tk == rec->media[first + k].tokens;
            for (e = 0; ok && e < tk * hidden; e++) {
                double  dd = fabs(clip_rows[n][r0 * hidden + e] - want[e]);

                d = dd > d ? dd : d;
            }
            r0 += tk;
            free(want);
        }
        worst_tower = d > worst_tower ? d : worst_tower;
        CHECK(ok && d <= TOWER_TOL, "%s: the tower's %lld rows within %g of "
              "the reference's (max %.3g)", name, (long long) T, TOWER_TOL, d);
        /* the reference pads a record's chunks to its longest: its short
         * clips padded alone are not what it computed */
        if (strcmp(name, "two-short") == 0) {
            json_t   *a0 = json_array_get(json_object_get(c, "audio"), 0);
            int64_t   t0 = rec->media[first].tokens, j;
            double    e = 0;

            want = floats(json_object_get(a0, "output"), t0 * hidden);
            ok = want != NULL
                 && clef_cpu_audio_forward(tower, all + n_all, NULL, nc,
                                           clip_rows[n], &err) == 0;
            for (j = 0; ok && j < t0 * hidden; j++) {
                e = fabs(clip_rows[n][j] - want[j]) > e
                    ? fabs(clip_rows[n][j] - want[j]) : e;
            }
            free(want);
            CHECK(ok && e > 1e-4, "%s: each clip padded alone instead: the "
                  "first clip's rows off by %.3g", name, e);
            clef_cpu_audio_forward(tower, all + n_all, group + n_all, nc,
                                   clip_rows[n], &err);
        }
        first_row[n] = rows;
        rows += T;
        n_all += nc;

        ok = forward(ops, b, (const clef_record *const []) { rec }, 1, lg) == 0;
        d = ok ? e2e_compare(c, "probabilities", rec, lg, &same) : 1;
        worst_prob = d > worst_prob ? d : worst_prob;
        CHECK(ok && d <= PROB_TOL && same, "%s: probabilities within %g "
              "(max %.3g), the reference's argmax", name, PROB_TOL, d);
        alone[n] = malloc(sizeof(float) * (size_t) rec->n_options);
        memcpy(alone[n], lg, sizeof(float) * (size_t) rec->n_options);
        n++;
    }

    /* every record's clips through the tower together, each record its
     * group: each clip's rows those of its record alone */
    batched = malloc(sizeof(float) * (size_t) (rows * hidden + 1));
    ok = batched != NULL
         && clef_cpu_audio_forward(tower, all, group, n_all, batched, &err)
            == 0;
    for (k = 0; ok && k < n; k++) {
        int64_t  T = (k + 1 < n ? first_row[k + 1] : rows) - first_row[k];

        ok = memcmp(batched + first_row[k] * hidden, clip_rows[k],
                    sizeof(float) * (size_t) (T * hidden)) == 0;
    }
    CHECK(ok, "%d clips of %d records in one tower call: each clip's rows "
          "bit-identical to its record's alone", n_all, n);

    /* one thread or three: the same bits */
    {
        clef_cpu_pool   *p1 = clef_cpu_pool_create(1, &err);
        clef_cpu_pool   *p3 = clef_cpu_pool_create(3, &err);
        clef_cpu_audio  *t1 = NULL, *t3 = NULL;
        size_t           sz = sizeof(float) * (size_t) (rows * hidden + 1);
        float           *o1 = malloc(sz), *o3 = malloc(sz);

        ok = batched != NULL && p1 != NULL && p3 != NULL && o1 != NULL
             && o3 != NULL
             && clef_cpu_audio_open(m, p1, &t1, &err) == 0
             && clef_cpu_audio_open(m, p3, &t3, &err) == 0
             && clef_cpu_audio_forward(t1, all, group, n_all, o1, &err) == 0
             && clef_cpu_audio_forward(t3, all, group, n_all, o3, &err) == 0
             && memcmp(o1, batched, sizeof(float) * (size_t) (rows * hidden))
                == 0
             && memcmp(o3, batched, sizeof(float) * (size_t) (rows * hidden))
                == 0;
        CHECK(ok, "the tower on 1, 2 and 3 threads: the same bits");
        clef_cpu_audio_close(t1);
        clef_cpu_audio_close(t3);
        clef_cpu_pool_destroy(p1);
        clef_cpu_pool_destroy(p3);
        free(o1);
        free(o3);
    }
    free(batched);

    /* one packed batch of every record: the logits of each alone */
    total = 0;
    for (k = 0; k < n; k++) {
        ptrs[k] = &recs[k];
        total += recs[k].n_options;
    }
    packed = malloc(sizeof(float) * (size_t) (total + 1));
    ok = packed != NULL && forward(ops, b, ptrs, n, packed) == 0;
    off = 0;
    for (k = 0; ok && k < n; k++) {
        for (o = 0; o < recs[k].n_options; o++) {
            ok &= packed[off + o] == alone[k][o];
        }
        off += recs[k].n_options;
    }
    CHECK(ok, "%d records with clips packed into one batch: every logit "
          "bit-identical to the record alone", n);
    free(packed);

    /* the packed batch's rows of each tower over their own pad tokens:
     * the audio tower's over <|audio_pad|>, the vision tower's over
     * <|image_pad|> (audio clips left out of its numbering) */
    {
        clef_batch  batch;
        int32_t     cu[MAX_RECS + 1], *dst, *ids;
        int64_t     arows = 0, vrows = 0, T, j, hit;
        const char *why = "";
        int         rr;

        clef_batch_init(&batch, ptrs, n, cu);
        ok = clef_batch_set_media(&batch, &err) == 0;
        for (k = 0; ok && k < batch.n_items; k++) {
            const clef_media_item  *it = clef_batch_item(&batch, k);

            *(it->kind == CLEF_MEDIA_AUDIO ? &arows : &vrows) += it->tokens;
        }
        T = clef_batch_tokens(&batch);
        ids = malloc(sizeof(int32_t) * (size_t) (T + 1));
        dst = malloc(sizeof(int32_t) * (size_t) (arows + vrows + 1));
        for (rr = 0; rr < n; rr++) {
            memcpy(ids + cu[rr], recs[rr].ids.v,
                   sizeof(int32_t) * recs[rr].ids.n);
        }
        hit = 0;
        ok = ok && clef_audio_scatter_rows(&batch, dst, arows, &why) == 0;
        for (j = 0; ok && j < arows; j++) {
            ok = dst[j] >= 0 && ids[dst[j]] == 151675
                 && (j == 0 || dst[j] > dst[j - 1]);
        }
        for (j = 0; ok && j < T; j++) {
            hit += ids[j] == 151675;
        }
        ok = ok && hit == arows
             && clef_vision_scatter_rows(&batch, dst, vrows, &why) == 0;
        for (j = 0; ok && j < vrows; j++) {
            ok = dst[j] >= 0 && ids[dst[j]] == 151655;
        }
        CHECK(ok && arows > 0 && vrows > 0, "one batch: %lld audio rows over "
              "its audio pads, %lld image rows over its image pads (%s)",
              (long long) arows, (long long) vrows, why);
        clef_batch_free_media(&batch);
        free(ids);
        free(dst);
    }

    /* a clip whose token count is not the tower's: refused, not run */
    if (n > 0) {
        clef_batch  batch;
        int32_t     cu[2];
        float       lg[256];
        int         last = recs[0].n_media - 1;

        recs[0].media[last].tokens++;
        clef_batch_init(&batch, (const clef_record *const []) { &recs[0] }, 1,
                        cu);
        ok = clef_batch_set_media(&batch, &err) == 0
             && ops->forward(b, &batch, lg, &err) == -1;
        clef_batch_free_media(&batch);
        recs[0].media[last].tokens--;
        CHECK(ok && err.code == CLEF_E_INTERNAL
              && strstr(err.message, "prepared for another tower") != NULL,
              "a clip of the wrong token count: refused (%s)", err.message);
    }

    printf("# audio tower: max |rows - reference| %.3g, max |p - reference| "
           "%.3g over %d records, %d clips\n", worst_tower, worst_prob, n,
           n_all);
    for (k = 0; k < n; k++) {
        clef_record_free(&recs[k]);
        free(alone[k]);
        free(clip_rows[k]);
    }
    clef_cpu_audio_close(tower);
    clef_cpu_pool_destroy(pool);
    ops->close(b);
    clef_model_close(m);
    json_decref(cases);
    sh("rm -rf '%s'", tmp);
    return check_done();
}
