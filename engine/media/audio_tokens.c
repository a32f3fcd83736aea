/*
 * An audio clip's token count (see audio_tokens.h).
 */
#include "media/audio_tokens.h"


/* Python's a // 2: the reference's formula floors (-1 // 2 is -1, so a
 * length that is a multiple of 100 adds no tail tokens). */
static int64_t
half_floor(int64_t a)
{
    return a >= 0 ? a / 2 : -((-a + 1) / 2);
}


int64_t
clef_audio_output_tokens(int64_t frames)
{
    int64_t  tail, n;

    if (frames <= 0) {
        return 0;
    }
    tail = frames % 100;
    n = half_floor(tail - 1) + 1;
    n = half_floor(n - 1) + 1;
    n = half_floor(n - 1) + 1;
    return n + frames / 100 * 13;
}
