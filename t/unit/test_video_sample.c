/*
 * The video processor's arithmetic against the reference on 1500 random
 * inputs (t/fixtures/video/math.jsonl, t/reference/gen_video_fixtures.py):
 * the frame count and indices of Qwen3VLVideoProcessor.sample_frames, the
 * video smart_resize (or its refusal), and the pair times' text of
 * Qwen3VLProcessor._calculate_timestamps; all exact.
 */
#include "check.h"

#include <jansson.h>

#include "media/video_sample.h"


static int
ints_equal(const int64_t *got, json_t *want, int32_t n)
{
    int32_t  i;

    if ((int32_t) json_array_size(want) != n) {
        return 0;
    }
    for (i = 0; i < n; i++) {
        if (got[i] != json_integer_value(json_array_get(want, (size_t) i))) {
            return 0;
        }
    }
    return 1;
}


int
main(void)
{
    clef_video_config  vc;
    json_error_t       jerr;
    json_t            *c, *want;
    FILE              *f = fopen("t/fixtures/video/math.jsonl", "r");
    char               line[1 << 16], text[64];
    const char        *why;
    int64_t           *idx, total, h, w, oh, ow, sum;
    double            *t, fps;
    int32_t            n, i;
    int                cases = 0, bad_n = 0, bad_idx = 0, bad_size = 0;
    int                bad_times = 0, refusals = 0, rc;

    clef_video_config_default(&vc);
    CHECK(f != NULL, "math.jsonl opens");
    if (f == NULL) {
        return check_done();
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        c = json_loads(line, 0, &jerr);
        if (c == NULL) {
            CHECK(0, "math.jsonl line parses: %s", jerr.text);
            break;
        }
        cases++;
        total = json_integer_value(json_object_get(c, "total"));
        fps = strtod(json_string_value(json_object_get(c, "fps")), NULL);
        n = clef_video_sample_count(total, fps, &vc);
        if (n != json_integer_value(json_object_get(c, "n"))) {
            bad_n++;
            printf("# total %lld fps %a: %d frames, want %lld\n",
                   (long long) total, fps, n,
                   json_integer_value(json_object_get(c, "n")));
            json_decref(c);
            continue;
        }
        idx = malloc(sizeof(int64_t) * (size_t) n);
        clef_video_sample_indices(total, n, idx);
        want = json_object_get(c, "indices");
        for (sum = 0, i = 0; i < n; i++) {
            sum += idx[i];
        }
        if ((json_is_array(want) && !ints_equal(idx, want, n))
            || sum != json_integer_value(json_object_get(c, "indices_sum")))
        {
            bad_idx++;
            printf("# total %lld n %d: indices differ\n", (long long) total, n);
        }

        h = json_integer_value(json_object_get(c, "h"));
        w = json_integer_value(json_object_get(c, "w"));
        want = json_object_get(c, "size");
        rc = clef_video_smart_resize(n, h, w, &vc, &oh, &ow, &why);
        if (json_is_array(want)
            ? rc != 0
              || oh != json_integer_value(json_array_get(want, 0))
              || ow != json_integer_value(json_array_get(want, 1))
            : rc == 0)
        {
            bad_size++;
            printf("# n %d %lldx%lld: rc %d %lldx%lld\n", n, (long long) h,
                   (long long) w, rc, (long long) oh, (long long) ow);
        }
        refusals += rc != 0;

        want = json_object_get(c, "times");
        if (json_is_array(want)) {
            t = malloc(sizeof(double) * (size_t) clef_video_grid_t(n, &vc));
            clef_video_pair_times(idx, n, fps, &vc, t);
            for (i = 0; i < clef_video_grid_t(n, &vc); i++) {
                clef_video_time_text(t[i], text, sizeof(text));
                if (strcmp(text, json_string_value(json_array_get(want,
                                                       (size_t) i))) != 0)
                {
                    bad_times++;
                    printf("# total %lld fps %a pair %d: %s, want %s\n",
                           (long long) total, fps, i, text,
                           json_string_value(json_array_get(want, (size_t) i)));
                    break;
                }
            }
            if ((int32_t) json_array_size(want) != clef_video_grid_t(n, &vc)) {
                bad_times++;
            }
            free(t);
        }
        free(idx);
        json_decref(c);
    }
    fclose(f);

    CHECK_INT(cases, 1500, "every case read");
    CHECK_INT(bad_n, 0, "frame counts equal the reference's");
    CHECK_INT(bad_idx, 0, "indices equal the reference's");
    CHECK_INT(bad_size, 0, "smart_resize sizes and refusals equal the "
              "reference's (%d refused)", refusals);
    CHECK_INT(bad_times, 0, "pair times' texts equal the reference's");
    CHECK(refusals > 0 && refusals < cases, "both outcomes covered");

    /* the one-frame video and the pair padding by hand */
    rc = clef_video_smart_resize(1, 120, 160, &vc, &oh, &ow, &why);
    CHECK(rc != 0 && strstr(why, "one frame") != NULL,
          "one frame is refused: %s", why);
    CHECK_INT(clef_video_grid_t(3, &vc), 2, "3 frames make 2 pairs");
    return check_done();
}
