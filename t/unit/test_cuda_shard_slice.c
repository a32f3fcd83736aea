/*
 * The CUDA backend's host slicing of a layer's stacked weights for a
 * tensor-parallel rank (cuda/shard_slice.h), without a GPU: the rows and
 * columns each kind of tensor keeps, the offsets of the stacked parts
 * (gdn_in = qkv | z | b | a, attn_in = q(+gate) | k | v, mlp_gu), the
 * copies, all against hand-computed values on a tiny layout, and that the
 * ranks of tp = 1, 2, 4 tile every tensor of Clef-flash exactly once.
 *
 * The pure-C slicing file is compiled into this test (it needs no CUDA
 * runtime), so it runs on every build, with or without nvcc.
 */
#include <stdint.h>
#include <string.h>

#include "../../cuda/shard_slice.c"
#include "check.h"
#include "flash_config.h"
#include "model/shard.h"

/* Heads and dims small enough to compute by hand:
 *   attention: 4 query heads (gated: 4 q_proj rows each), 2 KV heads, hd 2
 *   DeltaNet: 2 key heads of dk 2, 4 value heads of dv 3 (conv 20 channels)
 *   MLP: 8 intermediate columns */
static void
tiny_config(clef_text_config *c)
{
    memset(c, 0, sizeof(*c));
    c->hidden_size = 2;
    c->intermediate_size = 8;
    c->num_attention_heads = 4;
    c->num_key_value_heads = 2;
    c->head_dim = 2;
    c->attn_output_gate = 1;
    c->linear_num_key_heads = 2;
    c->linear_num_value_heads = 4;
    c->linear_key_head_dim = 2;
    c->linear_value_head_dim = 3;
}

static int
ranges_are(const cuda_range *r, int n, int want_n, const int64_t *want)
{
    int  i;

    if (n != want_n) {
        return 0;
    }
    for (i = 0; i < n; i++) {
        if (r[i].start != want[2 * i] || r[i].count != want[2 * i + 1]) {
            return 0;
        }
    }
    return 1;
}

/* The extent (rows, or columns for the column kinds) of kind's tensor. */
static int64_t
extent(const clef_text_config *c, cuda_slice_kind k)
{
    int64_t  hd = c->head_dim, dv = c->linear_value_head_dim;

    switch (k) {
    case CUDA_SLICE_Q_PROJ:
        return c->num_attention_heads * hd * (c->attn_output_gate ? 2 : 1);
    case CUDA_SLICE_KV_PROJ:
        return c->num_key_value_heads * hd;
    case CUDA_SLICE_O_PROJ:
        return c->num_attention_heads * hd;
    case CUDA_SLICE_GDN_QKV:
        return 2 * (int64_t) c->linear_num_key_heads * c->linear_key_head_dim
               + c->linear_num_value_heads * dv;
    case CUDA_SLICE_GDN_Z:
    case CUDA_SLICE_GDN_OUT:
        return c->linear_num_value_heads * dv;
    case CUDA_SLICE_GDN_HEAD:
        return c->linear_num_value_heads;
    case CUDA_SLICE_MLP_IN:
    case CUDA_SLICE_MLP_DOWN:
        return c->intermediate_size;
    }
    return 0;
}

static void
check_rank1_of_2(void)
{
    static const cuda_slice_kind  gdn[4] = {
        CUDA_SLICE_GDN_QKV, CUDA_SLICE_GDN_Z, CUDA_SLICE_GDN_HEAD, CUDA_SLICE_GDN_HEAD
    };
    static const cuda_slice_kind  attn[3] = {
        CUDA_SLICE_Q_PROJ, CUDA_SLICE_KV_PROJ, CUDA_SLICE_KV_PROJ
    };
    static const cuda_slice_kind  mlp[2] = { CUDA_SLICE_MLP_IN, CUDA_SLICE_MLP_IN };
    static const int64_t  q[] = { 8, 8 }, kv[] = { 2, 2 }, o[] = { 4, 4 };
    static const int64_t  qkv[] = { 2, 2, 6, 2, 14, 6 }, z[] = { 6, 6 };
    static const int64_t  hv[] = { 2, 2 }, mi[] = { 4, 4 };
    clef_text_config      c;
    clef_shard            s;
    cuda_range            r[CUDA_SLICE_MAX];
    int64_t               off[4], rows;
    uint16_t              src[20 * 8], dst[20 * 8];
    int                   i, j, ok;

    tiny_config(&c);
    clef_shard_of(&c, 2, 1, &s);

    CHECK(ranges_are(r, cuda_slice_ranges(&c, &s, CUDA_SLICE_Q_PROJ, r), 1, q),
          "q_proj: rank 1 of 2 keeps rows [8, 16), heads 2-3 with their gates");
    CHECK(ranges_are(r, cuda_slice_ranges(&c, &s, CUDA_SLICE_KV_PROJ, r), 1, kv),
          "k_proj/v_proj: rows [2, 4), KV head 1");
    CHECK(ranges_are(r, cuda_slice_ranges(&c, &s, CUDA_SLICE_O_PROJ, r), 1, o),
          "o_proj: columns [4, 8), query heads 2-3");
    CHECK(ranges_are(r, cuda_slice_ranges(&c, &s, CUDA_SLICE_GDN_QKV, r), 3, qkv),
          "in_proj_qkv and conv channels: q [2, 4) | k [6, 8) | v [14, 20)");
    CHECK(ranges_are(r, cuda_slice_ranges(&c, &s, CUDA_SLICE_GDN_Z, r), 1, z),
          "in_proj_z: rows [6, 12), value heads 2-3");
    CHECK(ranges_are(r, cuda_slice_ranges(&c, &s, CUDA_SLICE_GDN_OUT, r), 1, z),
          "out_proj: columns [6, 12)");
    CHECK(ranges_are(r, cuda_slice_ranges(&c, &s, CUDA_SLICE_GDN_HEAD, r), 1, hv),
          "in_proj_b/a, A_log, dt_bias: value heads [2, 4)");
    CHECK(ranges_are(r, cuda_slice_ranges(&c, &s, CUDA_SLICE_MLP_IN, r), 1, mi),
          "gate_proj/up_proj: rows [4, 8)");
    CHECK(ranges_are(r, cuda_slice_ranges(&c, &s, CUDA_SLICE_MLP_DOWN, r), 1, mi),
          "down_proj: columns [4, 8)");
    CHECK(cuda_slice_columns(CUDA_SLICE_O_PROJ) && cuda_slice_columns(CUDA_SLICE_GDN_OUT)
          && cuda_slice_columns(CUDA_SLICE_MLP_DOWN)
          && !cuda_slice_columns(CUDA_SLICE_Q_PROJ)
          && !cuda_slice_columns(CUDA_SLICE_GDN_QKV),
          "the row-parallel projections split columns, the others rows");

    /* The stacked layouts, with the offsets backend.c's sizes() gives the
     * kernels for the rank (local Cconv 10, Hv 2, dv 3): z at Cconv, b at
     * Cconv + Hv dv, a at b + Hv. */
    rows = cuda_slice_stack(&c, &s, gdn, 4, off);
    CHECK(rows == 20 && off[0] == 0 && off[1] == 10 && off[2] == 16 && off[3] == 18,
          "gdn_in = qkv (10) | z at 10 | b at 16 | a at 18: 20 rows (%lld; %lld %lld "
          "%lld)", (long long) rows, (long long) off[1], (long long) off[2],
          (long long) off[3]);
    rows = cuda_slice_stack(&c, &s, attn, 3, off);
    CHECK(rows == 12 && off[1] == 8 && off[2] == 10,
          "attn_in = q+gate (8) | k at 8 | v at 10: 12 rows (%lld)", (long long) rows);
    rows = cuda_slice_stack(&c, &s, mlp, 2, off);
    CHECK(rows == 8 && off[1] == 4, "mlp_gu = gate (4) | up at 4");

    /* Copies: element (row y, column x) holds 100 y + x. */
    for (i = 0; i < 20; i++) {
        for (j = 0; j < 8; j++) {
            src[i * 8 + j] = (uint16_t) (100 * i + j);
        }
    }
    /* in_proj_qkv as [20][2]: rows 2, 3, 6, 7, 14 .. 19 in that order */
    {
        static const int  want_rows[10] = { 2, 3, 6, 7, 14, 15, 16, 17, 18, 19 };
        uint16_t          m[20 * 2];

        for (i = 0; i < 20; i++) {
            m[2 * i] = (uint16_t) (100 * i);
            m[2 * i + 1] = (uint16_t) (100 * i + 1);
        }
        memset(dst, 0xff, sizeof(dst));
        cuda_slice_rows(m, 2, sizeof(uint16_t), r,
                        cuda_slice_ranges(&c, &s, CUDA_SLICE_GDN_QKV, r), dst);
        ok = 1;
        for (i = 0; i < 10; i++) {
            ok &= dst[2 * i] == 100 * want_rows[i] && dst[2 * i + 1] == 100 * want_rows[i] + 1;
        }
        ok &= dst[20] == 0xffff;
        CHECK(ok, "in_proj_qkv rows copied q | k | v, nothing past them");
    }
    /* o_proj as [3][8] (H = 3 rows here): columns 4 .. 7 of every row */
    memset(dst, 0xff, sizeof(dst));
    cuda_slice_cols(src, 3, 8, sizeof(uint16_t), r,
                    cuda_slice_ranges(&c, &s, CUDA_SLICE_O_PROJ, r), dst);
    ok = 1;
    for (i = 0; i < 3; i++) {
        for (j = 0; j < 4; j++) {
            ok &= dst[i * 4 + j] == 100 * i + 4 + j;
        }
    }
    ok &= dst[12] == 0xffff;
    CHECK(ok, "o_proj columns 4-7 of each row, packed [3][4]");
    /* fp32 elements take the same path */
    {
        float  f[4 * 3], g[2 * 3];

        for (i = 0; i < 12; i++) {
            f[i] = (float) i + 0.5f;
        }
        cuda_slice_rows(f, 3, sizeof(float), r,
                        cuda_slice_ranges(&c, &s, CUDA_SLICE_GDN_HEAD, r), g);
        CHECK(g[0] == 6.5f && g[5] == 11.5f, "fp32 rows: value heads 2-3 of a [4][3]");
    }
}

/* Every rank's ranges of every kind tile the tensor exactly once, in rank
 * order within each block, for tp = 1, 2, 4 on Clef-flash. */
static void
check_tiling(void)
{
    clef_text_config  c;
    clef_shard        s;
    cuda_range        r[CUDA_SLICE_MAX];
    static uint8_t    seen[65536];
    int               tp, rank, k, i, n, ok;
    int64_t           e, x;

    flash_config(&c);
    for (tp = 1; tp <= 4; tp *= 2) {
        ok = 1;
        for (k = CUDA_SLICE_Q_PROJ; k <= CUDA_SLICE_MLP_DOWN; k++) {
            e = extent(&c, (cuda_slice_kind) k);
            memset(seen, 0, (size_t) e);
            for (rank = 0; rank < tp; rank++) {
                clef_shard_of(&c, tp, rank, &s);
                n = cuda_slice_ranges(&c, &s, (cuda_slice_kind) k, r);
                ok &= cuda_slice_total(r, n) * tp == e;
                for (i = 0; i < n; i++) {
                    for (x = r[i].start; x < r[i].start + r[i].count && x < e; x++) {
                        seen[x]++;
                    }
                    ok &= r[i].start + r[i].count <= e;
                }
            }
            for (x = 0; x < e; x++) {
                ok &= seen[x] == 1;
            }
        }
        CHECK(ok, "tp=%d: the ranks' rows and columns cover every tensor of "
              "Clef-flash exactly once, in equal shares", tp);
    }
    clef_shard_of(&c, 1, 0, &s);
    n = cuda_slice_ranges(&c, &s, CUDA_SLICE_GDN_QKV, r);
    CHECK(n == 3 && r[0].start == 0 && r[1].start == 2048 && r[2].start == 4096
          && r[2].count == 4096 && cuda_slice_total(r, n) == 8192,
          "tp=1: in_proj_qkv's three ranges are the whole [8192] in order");
}

int
main(void)
{
    check_rank1_of_2();
    check_tiling();
    return check_done();
}
