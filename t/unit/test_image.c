/*
 * Images, from the bytes a request carries to the vision tower's input,
 * against the reference processor on the corpus of t/fixtures/images
 * (t/reference/gen_image_fixtures.py): every image goes in as a data URL
 * (the worker's wire checks and header probe), is decoded (the engine's
 * decoders, EXIF applied) and preprocessed (smart_resize, antialiased
 * bicubic, normalisation, patches); the grid must be the reference's and
 * every resized pixel within one uint8 step of it (the figures are
 * printed), the refused ones refused with the same reason.
 */
#include "check.h"
#include "slurp.h"

#include <jansson.h>

#include "media/image_decode.h"
#include "media/image_input.h"
#include "media/processor.h"
#include "text/json.h"



static char *
data_url_body(const char *ctype, const unsigned char *p, size_t n)
{
    static const char  a[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char    *s = malloc(n / 3 * 4 + 128 + strlen(ctype)), *o;
    size_t   i;
    uint32_t v;

    o = s + sprintf(s, "[\"data:%s;base64,", ctype);
    for (i = 0; i + 2 < n; i += 3) {
        v = (uint32_t) p[i] << 16 | (uint32_t) p[i + 1] << 8 | p[i + 2];
        *o++ = a[v >> 18];
        *o++ = a[(v >> 12) & 63];
        *o++ = a[(v >> 6) & 63];
        *o++ = a[v & 63];
    }
    if (n - i == 1) {
        v = (uint32_t) p[i] << 16;
        o += sprintf(o, "%c%c==", a[v >> 18], a[(v >> 12) & 63]);
    } else if (n - i == 2) {
        v = (uint32_t) p[i] << 16 | (uint32_t) p[i + 1] << 8;
        o += sprintf(o, "%c%c%c=", a[v >> 18], a[(v >> 12) & 63], a[(v >> 6) & 63]);
    }
    strcpy(o, "\"]");
    return s;
}


static void
run_case(const json_t *c, double *sum_diff, long long *pixels, int *worst)
{
    const char        *name = json_string_value(json_object_get(c, "name"));
    const char        *refused = json_string_value(json_object_get(c, "refused"));
    json_t            *grid = json_object_get(c, "grid");
    char               path[1024], *bytes, *body;
    size_t             len, elen;
    clef_arena         arena;
    clef_error         err;
    clef_json         *images;
    clef_media_input  *in;
    clef_rgb_image     rgb, want;
    clef_media_item    im;
    clef_processor_config  pc;
    int                orient, rc, d, maxd = 0;
    long long          i, n;
    double             sum = 0;
    char               msg[256];

    snprintf(path, sizeof(path), "%s/images/%s", check_fixtures(),
             json_string_value(json_object_get(c, "file")));
    bytes = slurp(path, &len);
    CHECK(bytes != NULL, "%s: read", name);
    if (bytes == NULL) {
        return;
    }
    body = data_url_body(json_string_value(json_object_get(c, "content_type")),
                         (unsigned char *) bytes, len);
    clef_arena_init(&arena, 1 << 16);
    images = clef_json_parse(&arena, body, strlen(body), &err);
    rc = clef_image_inputs_read(&arena, images, NULL, &in, &err);

    if (refused != NULL) {
        CHECK(rc != 0, "%s: refused", name);
        CHECK_STR(err.type, refused, "%s: refused as %s", name, refused);
        CHECK_STR(err.loc, "[\"body\",\"images\",0]", "%s: loc", name);
        goto done;
    }
    CHECK(rc == 0, "%s: accepted (%s)", name, rc ? err.message : "");
    if (rc != 0) {
        goto done;
    }
    rc = clef_image_decode(&in[0], 0, CLEF_IMAGE_MAX_PIXELS, &rgb, &err);
    CHECK(rc == 0, "%s: decoded (%s)", name, rc ? err.message : "");
    if (rc != 0) {
        goto done;
    }
    CHECK(rgb.width == json_integer_value(json_object_get(c, "width"))
          && rgb.height == json_integer_value(json_object_get(c, "height")),
          "%s: %dx%d upright", name, rgb.width, rgb.height);

    clef_processor_config_default(&pc);
    rc = clef_image_preprocess(&rgb, 0, &pc, &im, &err);
    clef_rgb_image_free(&rgb);
    CHECK(rc == 0, "%s: preprocessed", name);
    if (rc != 0) {
        goto done;
    }
    CHECK(im.grid_h == json_integer_value(json_array_get(grid, 1))
          && im.grid_w == json_integer_value(json_array_get(grid, 2)),
          "%s: grid 1x%dx%d", name, im.grid_h, im.grid_w);

    snprintf(path, sizeof(path), "%s/images/expect/%s.png", check_fixtures(),
             name);
    free(bytes);
    bytes = slurp(path, &elen);
    rc = bytes != NULL ? clef_decode_png((uint8_t *) bytes, elen, 1LL << 26,
                                         1e300, &want, &orient, msg) : -1;
    CHECK(rc == 0 && want.width == im.grid_w * 16
          && want.height == im.grid_h * 16, "%s: expected image read", name);
    if (rc == 0 && want.width == im.grid_w * 16 && want.height == im.grid_h * 16) {
        n = (long long) want.width * want.height * 3;
        for (i = 0; i < n; i++) {
            d = abs((int) want.rgb[i] - (int) im.bytes[i]);
            maxd = d > maxd ? d : maxd;
            sum += d;
        }
        CHECK(maxd <= 1, "%s: every pixel within one step (max %d, mean %.3g)",
              name, maxd, sum / (double) n);
        *sum_diff += sum;
        *pixels += n;
        *worst = maxd > *worst ? maxd : *worst;
        clef_rgb_image_free(&want);
    }
    clef_media_item_free(&im);

done:
    clef_arena_free(&arena);
    free(body);
    free(bytes);
}


int
main(void)
{
    char        path[1024], line[8192];
    FILE       *f;
    json_t     *c;
    double      sum = 0;
    long long   values = 0;
    int         worst = 0, cases = 0;

    snprintf(path, sizeof(path), "%s/images/cases.jsonl", check_fixtures());
    f = fopen(path, "r");
    CHECK(f != NULL, "cases.jsonl");
    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        c = json_loads(line, 0, NULL);
        if (c != NULL) {
            run_case(c, &sum, &values, &worst);
            cases++;
            json_decref(c);
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    CHECK(cases >= 40, "%d corpus images", cases);
    printf("# processor parity: %lld values, max |diff| %d uint8 steps, "
           "mean |diff| %.6f steps\n", values, worst,
           values ? sum / (double) values : 0.0);
    return check_done();
}
