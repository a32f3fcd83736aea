/*
 * clef_tokenizer_encode on arbitrary bytes, with the Qwen3 tokenizer and the
 * small trained one: it must succeed, and every id must be in the vocab.
 * Bytes in two calls must give the same ids (the per-thread caches must not
 * change an answer).
 */
#include <stdint.h>

#include "fuzz_common.h"

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_load_tokenizers();
    return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    clef_ids  ids = { 0 }, again = { 0 };
    size_t    i, n;
    int       k;

    for (k = 0; k < 2; k++) {
        if (clef_tokenizer_encode(fuzz_tk[k], (const char *) data, size, &ids) != 0
            || clef_tokenizer_encode(fuzz_tk[k], (const char *) data, size, &again) != 0)
        {
            fuzz_fail("encode failed on %zu bytes", size);
        }
        if (size > 0 && ids.n == 0) {
            fuzz_fail("no ids for %zu bytes", size);
        }
        n = clef_tokenizer_vocab_size(fuzz_tk[k]);
        for (i = 0; i < ids.n; i++) {
            if (ids.v[i] < 0 || (size_t) ids.v[i] >= n) {
                fuzz_fail("id %d out of the vocab (%zu)", (int) ids.v[i], n);
            }
        }
        if (ids.n != again.n
            || (ids.n > 0
                && memcmp(ids.v, again.v, ids.n * sizeof(int32_t)) != 0))
        {
            fuzz_fail("two encodes of the same bytes differ");
        }
        ids.n = 0;
        again.n = 0;
    }
    clef_ids_free(&ids);
    clef_ids_free(&again);
    return 0;
}
