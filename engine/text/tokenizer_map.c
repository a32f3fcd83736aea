/*
 * The string -> id map of the tokenizer (vocab, added tokens).
 */
#include "text/tokenizer_impl.h"

#include <stdlib.h>
#include <string.h>

static int
strmap_grow(tk_strmap *m)
{
    size_t           cap, i, j;
    tk_strmap_slot  *slots;

    cap = m->slots ? (m->mask + 1) * 2 : 64;
    slots = malloc(cap * sizeof(*slots));
    if (slots == NULL) {
        return -1;
    }
    for (i = 0; i < cap; i++) {
        slots[i].val = -1;
    }
    if (m->slots != NULL) {
        for (i = 0; i <= m->mask; i++) {
            if (m->slots[i].val < 0) {
                continue;
            }
            j = m->slots[i].hash & (cap - 1);
            while (slots[j].val >= 0) {
                j = (j + 1) & (cap - 1);
            }
            slots[j] = m->slots[i];
        }
        free(m->slots);
    }
    m->slots = slots;
    m->mask = cap - 1;
    return 0;
}

int
tk_strmap_put(tk_strmap *m, const char *k, size_t n, int32_t val)
{
    uint32_t         h;
    size_t           j;
    tk_strmap_slot  *sl;

    if (n > UINT32_MAX || m->keys.len > UINT32_MAX - n) {
        return -1;
    }
    if ((m->used + 1) * 2 > (m->slots ? m->mask + 1 : 0)) {
        if (strmap_grow(m) != 0) {
            return -1;
        }
    }
    h = (uint32_t) clef_hash(k, n);
    for (j = h & m->mask; ; j = (j + 1) & m->mask) {
        sl = &m->slots[j];
        if (sl->val < 0) {
            break;
        }
        if (sl->hash == h && sl->len == n
            && (n == 0 || memcmp(m->keys.data + sl->off, k, n) == 0))
        {
            sl->val = val;
            return 0;
        }
    }
    sl->off = (uint32_t) m->keys.len;
    sl->len = (uint32_t) n;
    sl->hash = h;
    if (clef_buf_append(&m->keys, k, n) != 0) {
        return -1;
    }
    sl->val = val;
    m->used++;
    return 0;
}

int32_t
tk_strmap_get(const tk_strmap *m, const char *k, size_t n)
{
    uint32_t               h;
    size_t                 j;
    const tk_strmap_slot  *sl;

    if (m->slots == NULL) {
        return -1;
    }
    h = (uint32_t) clef_hash(k, n);
    for (j = h & m->mask; ; j = (j + 1) & m->mask) {
        sl = &m->slots[j];
        if (sl->val < 0) {
            return -1;
        }
        if (sl->hash == h && sl->len == n
            && (n == 0 || memcmp(m->keys.data + sl->off, k, n) == 0))
        {
            return sl->val;
        }
    }
}

void
tk_strmap_free(tk_strmap *m)
{
    free(m->slots);
    clef_buf_free(&m->keys);
    memset(m, 0, sizeof(*m));
}
