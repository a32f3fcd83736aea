/*
 * A request's images in the worker (image_input.h, base64.h): every
 * refusal of the wire form and the limits, with its status, type, loc and
 * message; base64 exactly; decompression bombs refused from the header;
 * the images carried through the plan blob to the engine byte for byte.
 */
#include "check.h"

#include "media/base64.h"
#include "media/image_decode.h"
#include "media/image_input.h"
#include "protocol/encode.h"
#include "protocol/plan.h"
#include "protocol/request.h"

#define Q  "{\"model\":\"m\",\"state\":\"s\",\"questions\":{\"q\":{\"type\":\"noul\"}},"

/* A 1x1 RGB PNG, and one whose IHDR claims 100000 x 100000 */
static const char  png1[] =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGNgYGAAAAAEAAH2FzhVAAAAAElFTkSuQmCC";
static const char  bomb[] =
    "iVBORw0KGgoAAAANSUhEUgABhqAAAYagCAIAAAAnMJyfAAAADElEQVR4nGNgYGAAAAAEAAH2FzhVAAAAAElFTkSuQmCC";


static void
refused(const char *name, const char *images, int status, const char *type,
    const char *loc, const char *msg)
{
    clef_request  req;
    clef_error    err;
    clef_buf      b = { NULL, 0, 0 };
    int           rc;

    clef_buf_printf(&b, Q "\"images\":%s}", images);
    rc = clef_request_parse(&req, b.data, b.len, NULL, &err);
    if (rc == 0) {
        rc = clef_request_check_media(&req, 1, &err);
        clef_request_free(&req);
    }
    CHECK(rc != 0, "%s: refused", name);
    CHECK_INT(err.status, status, "%s: status", name);
    CHECK_STR(err.type, type, "%s: type", name);
    CHECK_STR(err.loc, loc, "%s: loc", name);
    if (msg != NULL) {
        CHECK_STR(err.message, msg, "%s: message", name);
    }
    clef_buf_free(&b);
}


static void
test_base64(void)
{
    uint8_t      out[64];
    size_t       bad = 0;
    const char  *why = NULL;

    CHECK_INT(clef_base64_decode("TWFu", 4, out, &bad, &why), 3, "Man");
    CHECK(memcmp(out, "Man", 3) == 0, "Man: bytes");
    CHECK_INT(clef_base64_decode("TWE=", 4, out, &bad, &why), 2, "Ma=");
    CHECK_INT(clef_base64_decode("TQ==", 4, out, &bad, &why), 1, "M==");
    CHECK(out[0] == 'M', "M==: byte");
    CHECK_INT(clef_base64_decode("TW\r\nFu \n", 8, out, &bad, &why), 3,
              "whitespace between characters is skipped");
    CHECK_INT(clef_base64_decode("", 0, out, &bad, &why), 0, "empty");
    CHECK_INT(clef_base64_decode("TWF", 3, out, &bad, &why), -1, "no padding: refused");
    CHECK_INT(bad, 3, "no padding: offset at the end");
    CHECK_INT(clef_base64_decode("TW-u", 4, out, &bad, &why), -1, "'-': refused");
    CHECK_INT(bad, 2, "'-': its offset");
    CHECK_STR(why, "a character outside the base64 alphabet", "'-': why");
    CHECK_INT(clef_base64_decode("T===", 4, out, &bad, &why), -1, "'=' too early");
    CHECK_INT(bad, 1, "'=' too early: offset");
    CHECK_INT(clef_base64_decode("TQ==TWFu", 8, out, &bad, &why), -1,
              "data after padding");
    CHECK_INT(bad, 4, "data after padding: offset");
    CHECK_INT(clef_base64_decode("TQ=a", 4, out, &bad, &why), -1, "'=' then data");
}


static void
test_refusals(void)
{
    clef_buf  b = { NULL, 0, 0 };
    size_t    i;
    char     *p;

    refused("number", "[3]", 422, "image_type", "[\"body\",\"images\",0]",
            "Input should be a data URL string or an object with "
            "\"content_type\" and \"base64\"");
    refused("object without base64", "[{\"content_type\":\"image/png\"}]", 422,
            "missing", "[\"body\",\"images\",0,\"base64\"]", "Field required");
    refused("object without content_type", "[{\"base64\":\"AA==\"}]", 422,
            "missing", "[\"body\",\"images\",0,\"content_type\"]", NULL);
    refused("content_type a number", "[{\"content_type\":1,\"base64\":\"AA==\"}]",
            422, "string_type", "[\"body\",\"images\",0,\"content_type\"]", NULL);
    refused("remote URL", "[\"https://example.com/cat.png\"]", 400,
            "image_url_unsupported", "[\"body\",\"images\",0]",
            "Image 0 is a remote URL: images are not fetched; send the image "
            "itself as a data URL (data:image/png;base64,...).");
    refused("not a data URL", "[\"iVBORw0KGgo=\"]", 400, "image_data_url_invalid",
            "[\"body\",\"images\",0]", "Image 0 is not a data URL: expected "
            "data:image/png|jpeg|webp;base64,..., got 'iVBORw0KGgo='.");
    refused("data URL without comma", "[\"data:image/png;base64\"]", 400,
            "image_data_url_invalid", "[\"body\",\"images\",0]",
            "Image 0 is a data URL without the ',' before its data.");
    refused("gif", "[\"data:image/gif;base64,R0lGODlh\"]", 400,
            "image_type_unsupported", "[\"body\",\"images\",0]",
            "Image 0 has type 'image/gif': only image/png, image/jpeg and "
            "image/webp are accepted.");
    refused("object of another type",
            "[{\"content_type\":\"text/plain\",\"base64\":\"AA==\"}]", 400,
            "image_type_unsupported", "[\"body\",\"images\",0]", NULL);
    refused("not base64-encoded", "[\"data:image/png,abc\"]", 400,
            "image_data_url_invalid", "[\"body\",\"images\",0]",
            "Image 0 is a data URL that is not base64-encoded: expected "
            "data:image/png;base64,...");
    clef_buf_printf(&b, "[\"data:image/png;base64,%s\",\"data:image/png;base64,"
                    "ab$d\"]", png1);
    refused("bad base64, second image", b.data, 400, "image_base64_invalid",
            "[\"body\",\"images\",1]", NULL);
    clef_buf_free(&b);
    refused("bad base64: 1st refused first",
            "[\"data:image/png;base64,a!==\",\"data:image/png;base64,ab$d\"]",
            400, "image_base64_invalid", "[\"body\",\"images\",0]",
            "Image 0 is not valid base64: a character outside the base64 "
            "alphabet at offset 1 of its data.");
    refused("empty", "[\"data:image/png;base64,\"]", 400, "image_invalid",
            "[\"body\",\"images\",0]", "Image 0 is empty.");
    refused("declared png, bytes jpeg", "[\"data:image/png;base64,/9j/4AAQ\"]",
            400, "image_type_mismatch", "[\"body\",\"images\",0]",
            "Image 0 is declared image/png but its bytes are a JPEG file.");
    refused("no known signature", "[\"data:image/webp;base64,AAAAAAAA\"]", 400,
            "image_invalid", "[\"body\",\"images\",0]",
            "Image 0 is not a PNG, JPEG or WebP file (its first bytes are "
            "none of their signatures).");
    refused("PNG signature only", "[\"data:image/png;base64,iVBORw0KGgo=\"]", 400,
            "image_invalid", "[\"body\",\"images\",0]",
            "Image 0 cannot be read: the PNG has no IHDR chunk where the "
            "format puts it.");
    refused("JPEG without a frame header", "[\"data:image/jpeg;base64,/9j/2Q==\"]",
            400, "image_invalid", "[\"body\",\"images\",0]",
            "Image 0 cannot be read: the JPEG has no frame header before its "
            "data.");
    refused("decompression bomb: 100000 x 100000 in 69 bytes of PNG",
            "[\"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgABhqAAAYagCAIAAAAnMJyfAAAADElEQVR4nGNgYGAAAAAEAAH2FzhVAAAAAElFTkSuQmCC\"]",
            400, "image_too_many_pixels", "[\"body\",\"images\",0]",
            "Image 0 is 100000x100000 (10000000000 pixels); the limit is "
            "16777216 pixels.");

    /* 4 MiB of base64 and one more character */
    clef_buf_printf(&b, "[\"data:image/png;base64,");
    clef_buf_reserve(&b, (4u << 20) + 16);
    p = b.data + b.len;
    for (i = 0; i < (4u << 20) + 4; i++) {
        p[i] = 'A';
    }
    b.len += i;
    clef_buf_printf(&b, "\"]");
    refused("over 4 MiB of base64", b.data, 413, "image_too_large",
            "[\"body\",\"images\",0]", "Image 0 is 4194308 bytes of base64; "
            "the limit is 4194304 bytes per image.");
    clef_buf_free(&b);

    /* 3 PNGs of 3 MiB (zeros after the file): the third goes over 8 MiB
     * decoded */
    clef_buf_printf(&b, "[");
    for (i = 0; i < 3; i++) {
        clef_buf_printf(&b, "%s\"data:image/png;base64,%s", i ? "," : "", png1);
        clef_buf_reserve(&b, 4u << 20);
        memset(b.data + b.len, 'A', (4u << 20) - strlen(png1));
        b.len += (4u << 20) - strlen(png1);
        b.data[b.len] = '\0';
        clef_buf_printf(&b, "\"");
    }
    clef_buf_printf(&b, "]");
    refused("over 8 MiB decoded in all", b.data, 413, "images_too_large",
            "[\"body\",\"images\",2]", "Images 0 to 2 decode to 9437184 bytes; "
            "the limit is 8388608 bytes for all images of a request.");
    clef_buf_free(&b);

    refused("aspect ratio over 200", "[\"data:image/png;base64,"
            "iVBORw0KGgoAAAANSUhEUgAAAMkAAAABCAIAAAD7Hx2LAAAADElEQVR4nGNgYGAAAAAEAAH2FzhVAAAAAElFTkSuQmCC\"]",
            400, "image_aspect_ratio", "[\"body\",\"images\",0]",
            "Image 0 is 201x1: its aspect ratio 201.0 is over the processor's "
            "limit of 200.");
}


static void
test_plan(void)
{
    clef_request       req;
    clef_error         err;
    clef_buf           body = { NULL, 0, 0 }, blob = { NULL, 0, 0 };
    clef_plan          plan;
    clef_media_input  *in;
    int                ok;

    clef_buf_printf(&body, Q "\"images\":[\"data:image/png;base64,%s\","
                    "{\"content_type\":\"IMAGE/PNG\",\"base64\":\"%s\"}]}",
                    png1, png1);
    ok = clef_request_parse(&req, body.data, body.len, NULL, &err) == 0
         && clef_request_check_media(&req, 1, &err) == 0;
    CHECK(ok, "two images read (%s)", ok ? "" : err.message);
    if (!ok) {
        clef_buf_free(&body);
        return;
    }
    in = req.media[CLEF_MEDIA_IMAGE].inputs;
    CHECK(in[0].format == CLEF_IMAGE_PNG
          && in[0].width == 1 && in[0].height == 1
          && in[1].len == in[0].len,
          "PNG 1x1, the object form with a type in capitals too");
    ok = clef_plan_build(&req, &blob, &err) == 0
         && clef_plan_view(&plan, blob.data, blob.len, &err) == 0;
    CHECK(ok, "plan with images");
    if (ok) {
        clef_media_conf  mc;

        clef_media_conf_default(&mc);
        /* 1 x 1 grows to 256 x 256: 8 x 8 merged tokens, + 2 each */
        CHECK_INT(clef_plan_media_ids(&plan, &mc), 2 * (64 + 2),
                  "plan: the images' ids from their headers");
        CHECK(plan.n_media == 2 && plan.media[1].kind == CLEF_MEDIA_IMAGE
              && plan.media[1].format == CLEF_IMAGE_PNG
              && plan.media[1].len == in[1].len
              && memcmp(plan.media[1].data, in[1].data,
                        plan.media[1].len) == 0,
              "plan: the files byte for byte");
        clef_plan_free(&plan);
        /* a blob cut inside an image is refused, not read past */
        CHECK(clef_plan_view(&plan, blob.data, blob.len - 3, &err) == -1
              && strcmp(err.type, "plan_invalid") == 0, "plan: cut blob refused");
    }
    clef_buf_free(&blob);
    clef_request_free(&req);
    clef_buf_free(&body);
    (void) bomb;
}


static void
test_exif(void)
{
    /* "II*\0", IFD at 8, 1 entry: tag 0x0112 SHORT 1 value 6 */
    static const uint8_t  ii[] = { 'I', 'I', 0x2a, 0, 8, 0, 0, 0, 1, 0,
                                   0x12, 0x01, 3, 0, 1, 0, 0, 0, 6, 0, 0, 0 };
    static const uint8_t  mm[] = { 'M', 'M', 0, 0x2a, 0, 0, 0, 8, 0, 1,
                                   0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, 3, 0, 0 };
    clef_rgb_image  im;
    uint8_t         px[2 * 3 * 3];
    int             i;

    CHECK_INT(clef_exif_orientation(ii, sizeof(ii)), 6, "EXIF II: 6");
    CHECK_INT(clef_exif_orientation(mm, sizeof(mm)), 3, "EXIF MM: 3");
    /* cut inside the entry: the reference reads 0xFFFF there, which
     * changes nothing */
    CHECK_INT(clef_exif_orientation(ii, 12), 0xffff, "EXIF cut: 0xFFFF");
    CHECK_INT(clef_exif_orientation(ii, 9), -1, "EXIF cut before the IFD: none");
    CHECK_INT(clef_exif_orientation((const uint8_t *) "XX", 2), -1, "EXIF junk: none");

    /* 3 wide, 2 high, pixel value = its index; 90 cw gives 2 wide, 3 high */
    for (i = 0; i < 6; i++) {
        px[3 * i] = px[3 * i + 1] = px[3 * i + 2] = (uint8_t) i;
    }
    im.width = 3;
    im.height = 2;
    im.rgb = malloc(sizeof(px));
    memcpy(im.rgb, px, sizeof(px));
    CHECK(clef_exif_apply(&im, 6) == 0 && im.width == 2 && im.height == 3,
          "orientation 6: 2x3");
    /* rows of the upright image: 3 0 / 4 1 / 5 2 */
    CHECK(im.rgb[0] == 3 && im.rgb[3] == 0 && im.rgb[6] == 4 && im.rgb[15] == 2,
          "orientation 6: rotated clockwise");
    clef_rgb_image_free(&im);
}


/* docs/spec/backbone.md §5.3's example: 5 text tokens, <vision_start>,
 * a 4 x 4 merged image, <vision_end>, text; then a second image, 2 x 6 */
static void
test_mrope(void)
{
    clef_media_item  im[2];
    clef_media_span  spans[2] = { { 6, 16, 0, 0 }, { 24, 12, 1, 0 } };
    int32_t          pos[3 * 40];
    int              t, ok = 1;

    memset(im, 0, sizeof(im));
    im[0].grid_h = 8;
    im[0].grid_w = 8;
    im[0].merge = 2;
    im[1].grid_h = 4;
    im[1].grid_w = 12;
    im[1].merge = 2;
    clef_mrope_positions(40, im, spans, 2, pos);
    for (t = 0; t < 6; t++) {
        ok &= pos[t] == t && pos[40 + t] == t && pos[80 + t] == t;
    }
    CHECK(ok, "M-RoPE: text then <vision_start> count 0..5 on every axis");
    /* image 1 at 6: T 6, H 6 + i, W 6 + j */
    CHECK(pos[6] == 6 && pos[46] == 6 && pos[86] == 6
          && pos[6 + 5] == 6 && pos[46 + 5] == 7 && pos[86 + 5] == 7
          && pos[21] == 6 && pos[61] == 9 && pos[101] == 9,
          "M-RoPE: the 4 x 4 image at (6, 6 + i, 6 + j)");
    /* <vision_end>, text: 6 + max(4, 4) = 10, 11 */
    CHECK(pos[22] == 10 && pos[62] == 10 && pos[102] == 10 && pos[23] == 11,
          "M-RoPE: the text after it at 10, 11");
    /* image 2 at 24, position 12: 2 x 6 -> the next text at 12 + 6 */
    CHECK(pos[24] == 12 && pos[64] == 12 && pos[104] == 12
          && pos[35] == 12 && pos[75] == 13 && pos[115] == 17
          && pos[36] == 18 && pos[76] == 18 && pos[39] == 21,
          "M-RoPE: a 2 x 6 image moves the text on by 6");

    /* spans of several groups (a kind with a temporal axis), 25 tokens:
     * (p + s, p + i, p + j), then p + max(groups, h, w) */
    im[0].grid_h = 4;                   /* merged 2 x 2: 8 tokens, 2 groups */
    im[0].grid_w = 4;
    im[1].grid_h = 2;                   /* merged 1 x 2: 12 tokens, 6 groups */
    im[1].grid_w = 4;
    spans[0] = (clef_media_span) { 2, 8, 0, 0 };
    spans[1] = (clef_media_span) { 11, 12, 1, 0 };
    clef_mrope_positions(25, im, spans, 2, pos);
    /* span 0 at 2, group 1, row 1, col 0: token 8 */
    CHECK(pos[1] == 1 && pos[2] == 2 && pos[27] == 2 && pos[52] == 2
          && pos[8] == 3 && pos[33] == 3 && pos[58] == 2
          && pos[9] == 3 && pos[34] == 3 && pos[59] == 3,
          "M-RoPE: a 2-group span at (p + s, p + i, p + j)");
    /* then 2 + max(2, 2, 2) = 4; span 1 at 5, six groups of 1 x 2: its
     * last token (5 + 5, 5, 5 + 1), the text after it at 5 + 6 */
    CHECK(pos[10] == 4 && pos[35] == 4 && pos[11] == 5 && pos[36] == 5
          && pos[61] == 5 && pos[22] == 10 && pos[47] == 5 && pos[72] == 6
          && pos[23] == 11 && pos[48] == 11 && pos[73] == 11 && pos[24] == 12,
          "M-RoPE: six groups of 1 x 2 move the text on by 6");
}


int
main(void)
{
    test_mrope();
    test_base64();
    test_refusals();
    test_plan();
    test_exif();
    return check_done();
}
