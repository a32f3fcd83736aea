/*
 * Clef-flash's text sizes (docs/spec/backbone.md §1) as a
 * clef_text_config, for the tests that split it into shards.
 */
#ifndef CLEF_TEST_FLASH_CONFIG_H
#define CLEF_TEST_FLASH_CONFIG_H

#include <string.h>

#include "model/model.h"

static void
flash_config(clef_text_config *c)
{
    memset(c, 0, sizeof(*c));
    c->hidden_size = 4096;
    c->intermediate_size = 12288;
    c->num_attention_heads = 16;
    c->num_key_value_heads = 4;
    c->head_dim = 256;
    c->attn_output_gate = 1;
    c->linear_num_key_heads = 16;
    c->linear_num_value_heads = 32;
    c->linear_key_head_dim = 128;
    c->linear_value_head_dim = 128;
}

#endif
