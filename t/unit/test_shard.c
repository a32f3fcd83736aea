/*
 * Tensor-parallel shards (shard.h): which tp a model accepts, with the
 * count it fails on named, and that the ranks' ranges tile every head and
 * column exactly once, grouped heads landing on the rank of their KV or
 * key head; the row-parallel segment count S (the largest of 8, 4, 2, 1
 * the model accepts) and the segments at a tp that does not divide it
 * (one a rank).
 */
#include <string.h>

#include "check.h"
#include "flash_config.h"
#include "model/shard.h"

int
main(void)
{
    clef_text_config  c;
    clef_shard        s;
    clef_error        err;
    int               tp, r, q_next, kv_next, k_next, v_next, i_next, ok;

    flash_config(&c);
    CHECK_INT(clef_shard_check(&c, 1, &err), 0, "tp=1 always fits");
    CHECK_INT(clef_shard_check(&c, 2, &err), 0, "tp=2 fits Clef-flash");
    CHECK_INT(clef_shard_check(&c, 4, &err), 0, "tp=4 fits Clef-flash");
    CHECK(clef_shard_check(&c, 8, &err) != 0, "tp=8 does not");
    CHECK_STR(err.message, "tp=8 does not divide the 4 KV heads of the model",
              "the refusal names the KV heads");
    CHECK(clef_shard_check(&c, 3, &err) != 0, "tp=3 does not");
    CHECK_STR(err.message,
              "tp=3 does not divide the 16 attention heads of the model",
              "the refusal names the attention heads");
    c.intermediate_size = 12290;
    CHECK(clef_shard_check(&c, 4, &err) != 0, "an odd intermediate size");
    CHECK_STR(err.message,
              "tp=4 does not divide the 12290 intermediate size of the model",
              "the refusal names the intermediate size");
    c.intermediate_size = 12288;
    c.linear_num_value_heads = 6;
    c.linear_num_key_heads = 2;
    CHECK(clef_shard_check(&c, 4, &err) != 0, "too few DeltaNet heads");
    CHECK_STR(err.message,
              "tp=4 does not divide the 2 DeltaNet key heads of the model",
              "the refusal names the DeltaNet key heads");
    CHECK(clef_shard_check(&c, 0, &err) != 0, "tp=0 is refused");

    flash_config(&c);
    for (tp = 1; tp <= 4; tp *= 2) {
        q_next = kv_next = k_next = v_next = i_next = 0;
        ok = 1;
        for (r = 0; r < tp; r++) {
            clef_shard_of(&c, tp, r, &s);
            ok &= s.rank == r && s.size == tp;
            ok &= s.q_head0 == q_next && s.kv_head0 == kv_next
                  && s.k_head0 == k_next && s.v_head0 == v_next
                  && s.inter0 == i_next;
            /* the grouped heads' first and last land on this rank's */
            ok &= s.q_head0 / (16 / 4) == s.kv_head0
                  && (s.q_head0 + s.q_heads - 1) / (16 / 4)
                     == s.kv_head0 + s.kv_heads - 1;
            ok &= s.v_head0 / (32 / 16) == s.k_head0
                  && (s.v_head0 + s.v_heads - 1) / (32 / 16)
                     == s.k_head0 + s.k_heads - 1;
            q_next += s.q_heads;
            kv_next += s.kv_heads;
            k_next += s.k_heads;
            v_next += s.v_heads;
            i_next += s.inter;
        }
        ok &= q_next == 16 && kv_next == 4 && k_next == 16 && v_next == 32
              && i_next == 12288;
        CHECK(ok, "tp=%d: the ranks tile every head and column once", tp);
    }
    clef_shard_of(&c, 4, 3, &s);
    CHECK(s.q_head0 == 12 && s.q_heads == 4 && s.kv_head0 == 3
          && s.kv_heads == 1 && s.v_head0 == 24 && s.v_heads == 8
          && s.inter0 == 9216 && s.inter == 3072,
          "tp=4 rank 3: heads 12-15, KV head 3, value heads 24-31, "
          "columns 9216-12287");

    /* segments: a property of the model, the same at every tp dividing it */
    flash_config(&c);
    CHECK_INT(clef_shard_segments_of_model(&c), 4, "Clef-flash (4 KV heads): "
              "S = 4");
    CHECK(clef_shard_segments(&c, 1) == 4 && clef_shard_segments(&c, 2) == 4
          && clef_shard_segments(&c, 4) == 4, "tp=1, 2, 4: 4 segments each");
    c.num_key_value_heads = 8;
    CHECK_INT(clef_shard_segments_of_model(&c), 8, "8 KV heads: S = 8");
    c.num_key_value_heads = 1;
    CHECK_INT(clef_shard_segments_of_model(&c), 1, "1 KV head: S = 1");
    c.num_key_value_heads = 6;
    c.num_attention_heads = 24;
    c.linear_num_key_heads = 6;
    c.linear_num_value_heads = 12;
    CHECK(clef_shard_segments_of_model(&c) == 2
          && clef_shard_check(&c, 3, &err) == 0
          && clef_shard_segments(&c, 3) == 3 && clef_shard_segments(&c, 6) == 6,
          "heads 3 and 6 divide, S = 2: tp=3 and tp=6 run one segment a rank");
    return check_done();
}
