/*
 * The BPE word cache: word bytes -> ids, shared by every thread that
 * encodes with one tokenizer.  64 shards, each an open-addressing table
 * behind its own mutex, so concurrent encoders rarely meet on a lock.  A
 * full shard is emptied and refilled: natural text keeps reusing a small
 * set of words, so that is as good as LRU here and much simpler.
 */
#include "text/tokenizer_impl.h"

#include <stdlib.h>
#include <string.h>

#define SHARD_MASK  (TK_CACHE_SHARDS - 1)
#define SLOT_MASK   (TK_CACHE_SLOTS - 1)
#define SHARD_FULL  (TK_CACHE_SLOTS * 3 / 4)

int
tk_cache_init(tk_cache *c)
{
    size_t  i;

    c->shards = calloc(TK_CACHE_SHARDS, sizeof(tk_cache_shard));
    if (c->shards == NULL) {
        return -1;
    }
    for (i = 0; i < TK_CACHE_SHARDS; i++) {
        if (pthread_mutex_init(&c->shards[i].lock, NULL) != 0) {
            while (i-- > 0) {
                pthread_mutex_destroy(&c->shards[i].lock);
            }
            free(c->shards);
            c->shards = NULL;
            return -1;
        }
    }
    return 0;
}

static void
shard_clear(tk_cache_shard *sh)
{
    size_t  i;

    for (i = 0; i < TK_CACHE_SLOTS; i++) {
        free(sh->slots[i].entry);
        sh->slots[i].entry = NULL;
    }
    sh->used = 0;
}

void
tk_cache_free(tk_cache *c)
{
    size_t  i;

    if (c->shards == NULL) {
        return;
    }
    for (i = 0; i < TK_CACHE_SHARDS; i++) {
        shard_clear(&c->shards[i]);
        pthread_mutex_destroy(&c->shards[i].lock);
    }
    free(c->shards);
    c->shards = NULL;
}

static int
entry_is(const uint32_t *e, const char *word, size_t n)
{
    return e[0] == n && memcmp((const char *) (e + 2 + e[1]), word, n) == 0;
}

int
tk_cache_get(const tk_cache *c, uint64_t hash, const char *word, size_t n,
    clef_ids *out)
{
    tk_cache_shard  *sh = &c->shards[hash & SHARD_MASK];
    size_t           j;
    uint32_t        *e;
    int              rc = 0;

    pthread_mutex_lock(&sh->lock);
    for (j = (hash >> 6) & SLOT_MASK; ; j = (j + 1) & SLOT_MASK) {
        e = sh->slots[j].entry;
        if (e == NULL) {
            break;
        }
        if (sh->slots[j].hash == hash && entry_is(e, word, n)) {
            rc = clef_ids_append(out, (const int32_t *) (e + 2), e[1]) == 0 ? 1 : -1;
            break;
        }
    }
    pthread_mutex_unlock(&sh->lock);
    return rc;
}

void
tk_cache_put(const tk_cache *c, uint64_t hash, const char *word, size_t n,
    const int32_t *ids, size_t nids)
{
    tk_cache_shard  *sh = &c->shards[hash & SHARD_MASK];
    size_t           j;
    uint32_t        *e;

    e = malloc((2 + nids) * sizeof(uint32_t) + n);
    if (e == NULL) {
        return;
    }
    e[0] = (uint32_t) n;
    e[1] = (uint32_t) nids;
    memcpy(e + 2, ids, nids * sizeof(int32_t));
    memcpy((char *) (e + 2 + nids), word, n);

    pthread_mutex_lock(&sh->lock);
    if (sh->used >= SHARD_FULL) {
        shard_clear(sh);
    }
    for (j = (hash >> 6) & SLOT_MASK; ; j = (j + 1) & SLOT_MASK) {
        if (sh->slots[j].entry == NULL) {
            sh->slots[j].entry = e;
            sh->slots[j].hash = hash;
            sh->used++;
            e = NULL;
            break;
        }
        if (sh->slots[j].hash == hash && entry_is(sh->slots[j].entry, word, n)) {
            break;                      /* another thread was first */
        }
    }
    pthread_mutex_unlock(&sh->lock);
    free(e);
}
