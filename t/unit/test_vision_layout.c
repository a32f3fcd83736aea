/*
 * The host side of the CUDA vision tower (engine/backend/vision_layout.c),
 * which needs no device: checked here against independent definitions.
 *
 *   - patch (row, col): every grid cell once, each merge^2 run of patches
 *     one merge x merge block, blocks in row-major order;
 *   - the position-table taps: sum_k w_k table[tap_k] is torch's bilinear
 *     align_corners resampling computed in double (1e-5), the weights sum
 *     to 1, a grid the table's size reads the table itself;
 *   - the rotary tables: cos / sin of p theta^(-4i / hd) in double (1e-5);
 *   - attention tiles: every query of every image in exactly one tile of
 *     its own image;
 *   - scatter rows: each image's merged rows land on its pad tokens in the
 *     packed batch (text records between), and a span past its image or
 *     the batch is refused;
 *   - the M-RoPE axis of each rotary pair: transformers' interleaved
 *     slicing (freqs_t[..., offset:3 section:3] = freqs[axis]) for the
 *     test checkpoints' and the real sections.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/vision_layout.h"
#include "check.h"
#include "protocol/encode.h"

static void
test_patch_rc(void)
{
    static const int  grids[][2] = { { 2, 2 }, { 4, 6 }, { 6, 4 }, { 2, 18 },
                                     { 10, 14 } };
    clef_media_item   im;
    int32_t           r, c, r0, c0;
    int               g, p, ok, seen[10 * 18];

    memset(&im, 0, sizeof(im));
    im.merge = 2;
    for (g = 0; g < 5; g++) {
        im.grid_h = grids[g][0];
        im.grid_w = grids[g][1];
        memset(seen, 0, sizeof(seen));
        ok = 1;
        for (p = 0; p < im.grid_h * im.grid_w; p++) {
            clef_vision_patch_rc(&im, p, &r, &c);
            ok &= r >= 0 && r < im.grid_h && c >= 0 && c < im.grid_w;
            if (ok) {
                seen[r * im.grid_w + c]++;
            }
            /* block p / 4 is (p / 4 / (w / 2), p / 4 % (w / 2)) */
            r0 = p / 4 / (im.grid_w / 2) * 2;
            c0 = p / 4 % (im.grid_w / 2) * 2;
            ok &= r == r0 + (p % 4) / 2 && c == c0 + p % 2;
        }
        for (p = 0; p < im.grid_h * im.grid_w; p++) {
            ok &= seen[p] == 1;
        }
        CHECK(ok, "patch (row, col) of a %d x %d grid: merge blocks in order, "
              "every cell once", im.grid_h, im.grid_w);
    }
}


/* torch.nn.functional.interpolate(mode="bilinear", align_corners=True)
 * of one value, in double. */
static double
bilinear(const float *t, int side, int64_t r, int64_t c, int64_t gh,
    int64_t gw)
{
    double  sy = gh > 1 ? (double) r * (side - 1) / (double) (gh - 1) : 0;
    double  sx = gw > 1 ? (double) c * (side - 1) / (double) (gw - 1) : 0;
    int     y0 = (int) floor(sy), x0 = (int) floor(sx);
    int     y1 = y0 + 1 < side ? y0 + 1 : side - 1;
    int     x1 = x0 + 1 < side ? x0 + 1 : side - 1;
    double  fy = sy - y0, fx = sx - x0;

    return (1 - fy) * (1 - fx) * t[y0 * side + x0] + (1 - fy) * fx * t[y0 * side + x1]
           + fy * (1 - fx) * t[y1 * side + x0] + fy * fx * t[y1 * side + x1];
}


static void
test_pos_taps(void)
{
    static const int  grids[][2] = { { 2, 2 }, { 4, 6 }, { 8, 8 }, { 16, 10 },
                                     { 30, 4 }, { 2, 100 } };
    float             table[8 * 8], w[4], got;
    int32_t           tap[4];
    double            err, worst, sum;
    int               side = 8, g, r, c, k, ok, ident;

    for (k = 0; k < side * side; k++) {
        table[k] = (float) sin(k * 0.7) * 3.0f;
    }
    for (g = 0; g < 6; g++) {
        worst = 0;
        ok = 1;
        ident = 1;
        for (r = 0; r < grids[g][0]; r++) {
            for (c = 0; c < grids[g][1]; c++) {
                clef_vision_pos_taps(r, c, grids[g][0], grids[g][1], side, tap, w);
                got = 0;
                sum = 0;
                for (k = 0; k < 4; k++) {
                    ok &= tap[k] >= 0 && tap[k] < side * side && w[k] >= 0;
                    got += w[k] * table[tap[k]];
                    sum += w[k];
                }
                ok &= fabs(sum - 1) < 1e-6;
                err = fabs(got - bilinear(table, side, r, c, grids[g][0],
                                          grids[g][1]));
                worst = err > worst ? err : worst;
                ident &= w[0] == 1.0f && tap[0] == r * side + c;
            }
        }
        CHECK(ok && worst < 1e-5, "position taps of a %d x %d grid from an "
              "8 x 8 table: torch's align_corners bilinear (max error %.2g), "
              "weights sum to 1", grids[g][0], grids[g][1], worst);
        if (grids[g][0] == side && grids[g][1] == side) {
            CHECK(ident, "a grid of the table's size reads the table itself");
        }
    }
}


static void
test_rotary(void)
{
    static const int  hds[] = { 16, 72 };
    float             cs[200 * 18], sn[200 * 18];
    double            worst = 0, a;
    int               h, p, i, q;

    for (h = 0; h < 2; h++) {
        q = hds[h] / 4;
        clef_vision_rotary_table(hds[h], 10000.0, 200, cs, sn);
        worst = 0;
        for (p = 0; p < 200; p++) {
            for (i = 0; i < q; i++) {
                a = p * pow(10000.0, -(double) (2 * i) / (hds[h] / 2));
                worst = fmax(worst, fabs(cs[p * q + i] - cos(a)));
                worst = fmax(worst, fabs(sn[p * q + i] - sin(a)));
            }
        }
        CHECK(worst < 1e-4, "2D rotary tables, head dim %d, 200 positions: "
              "cos / sin of p theta^(-4i/hd) (max error %.2g)", hds[h], worst);
    }
}


static void
test_tiles(void)
{
    static const int64_t  cu[] = { 0, 16, 80, 210, 274 };
    int32_t               tiles[3 * 16];
    int                   seen[274], ok = 1, k, q, img;
    int64_t               n, t;

    n = clef_vision_attn_tiles(cu, 4, 64, NULL);
    CHECK_INT(n, 1 + 1 + 3 + 1, "attention tiles of 16, 64, 130 and 64 patches");
    CHECK_INT(clef_vision_attn_tiles(cu, 4, 64, tiles), n, "filled as counted");
    memset(seen, 0, sizeof(seen));
    for (t = 0; t < n; t++) {
        for (img = 0; img < 4 && cu[img] != tiles[3 * t]; img++) {
        }
        ok &= img < 4 && tiles[3 * t + 1] == cu[img + 1] - cu[img]
              && tiles[3 * t + 2] % 64 == 0 && tiles[3 * t + 2] < tiles[3 * t + 1];
        for (q = 0; ok && q < 64 && tiles[3 * t + 2] + q < tiles[3 * t + 1]; q++) {
            seen[tiles[3 * t] + tiles[3 * t + 2] + q]++;
        }
    }
    for (k = 0; k < 274; k++) {
        ok &= seen[k] == 1;
    }
    CHECK(ok, "every query of every image in exactly one tile of its image");
}


/* A record of n tokens with images of the given grids at the given pads. */
static void
fake_record(clef_record *r, int n, int n_images, const int (*grids)[2],
    const int32_t *starts)
{
    int  k;

    memset(r, 0, sizeof(*r));
    r->ids.v = calloc((size_t) n, sizeof(int32_t));
    r->ids.n = (size_t) n;
    r->n_media = n_images;
    r->n_spans = n_images;
    r->media = calloc((size_t) n_images + 1, sizeof(clef_media_item));
    r->spans = calloc((size_t) n_images + 1, sizeof(clef_media_span));
    for (k = 0; k < n_images; k++) {
        r->media[k].kind = CLEF_MEDIA_IMAGE;
        r->media[k].grid_t = 1;
        r->media[k].grid_h = grids[k][0];
        r->media[k].grid_w = grids[k][1];
        r->media[k].merge = 2;
        r->media[k].patch = 16;
        r->media[k].temporal = 2;
        r->media[k].tokens = grids[k][0] * grids[k][1] / 4;
        r->spans[k].start = starts[k];
        r->spans[k].len = (int32_t) r->media[k].tokens;
        r->spans[k].item = k;
    }
}


static void
free_record(clef_record *r)
{
    free(r->ids.v);
    free(r->media);
    free(r->spans);
}


static void
test_scatter(void)
{
    static const int      g1[][2] = { { 4, 4 }, { 2, 6 } }, g2[][2] = { { 6, 4 } };
    static const int32_t  s1[] = { 3, 10 }, s2[] = { 1 };
    clef_record           rec[3];
    const clef_record    *ptr[3] = { &rec[0], &rec[1], &rec[2] };
    clef_batch            b;
    clef_error            err;
    clef_media_span       saved, *spans;
    int32_t               cu[4], dst[16], want[13];
    const char           *why = NULL;
    int                   i, ok;

    fake_record(&rec[0], 5, 0, NULL, NULL);           /* text, tokens 0..4 */
    fake_record(&rec[1], 16, 2, g1, s1);              /* tokens 5..20 */
    fake_record(&rec[2], 9, 1, g2, s2);               /* tokens 21..29 */
    clef_batch_init(&b, ptr, 3, cu);
    CHECK(clef_batch_set_media(&b, &err) == 0 && b.n_spans == 3,
          "a batch of a text record and records with 2 and 1 images");
    /* image 0: 4 rows at 5 + 3; image 1: 3 rows at 5 + 10; image 2: 6 at 21 + 1 */
    for (i = 0; i < 4; i++) {
        want[i] = 8 + i;
    }
    for (i = 0; i < 3; i++) {
        want[4 + i] = 15 + i;
    }
    for (i = 0; i < 6; i++) {
        want[7 + i] = 22 + i;
    }
    ok = clef_vision_scatter_rows(&b, dst, 13, &why) == 0;
    for (i = 0; ok && i < 13; i++) {
        ok = dst[i] == want[i];
    }
    CHECK(ok, "each merged row lands on its image's pad token in the batch");

    /* the batch's spans are const to backends; this test owns them */
    spans = (clef_media_span *) b.spans;
    saved = spans[1];
    spans[1].len = 4;
    ok = clef_vision_scatter_rows(&b, dst, 13, &why) == -1 && why != NULL;
    CHECK(ok, "a span longer than its image's merged rows is refused (%s)",
          why ? why : "");
    spans[1] = saved;
    spans[2].start = 28;
    why = NULL;
    ok = clef_vision_scatter_rows(&b, dst, 13, &why) == -1 && why != NULL;
    CHECK(ok, "a span past the batch is refused (%s)", why ? why : "");
    clef_batch_free_media(&b);
    for (i = 0; i < 3; i++) {
        free_record(&rec[i]);
    }
}


static void
test_mrope_axis(void)
{
    static const int  secs[][4] = { { 4, 4, 4, 12 }, { 11, 11, 10, 32 },
                                    { 24, 20, 20, 64 } };
    int               s, j, d, ax[64], ok;

    for (s = 0; s < 3; s++) {
        /* freqs_t = freqs[0]; for dim, offset in ((1, 1), (2, 2)):
         *     freqs_t[..., offset:3 * section[dim]:3] = freqs[dim] */
        for (j = 0; j < secs[s][3]; j++) {
            ax[j] = 0;
        }
        for (d = 1; d <= 2; d++) {
            for (j = d; j < 3 * secs[s][d] && j < secs[s][3]; j += 3) {
                ax[j] = d;
            }
        }
        ok = 1;
        for (j = 0; j < secs[s][3]; j++) {
            ok &= clef_mrope_axis(secs[s], j) == ax[j];
        }
        CHECK(ok, "M-RoPE axes of sections [%d, %d, %d] over %d pairs: the "
              "reference's interleaving", secs[s][0], secs[s][1], secs[s][2],
              secs[s][3]);
    }
}


int
main(void)
{
    test_patch_rc();
    test_pos_taps();
    test_rotary();
    test_tiles();
    test_scatter();
    test_mrope_axis();
    return check_done();
}
