/*
 * Clef Omni's videos heard with their sound (see video_sound.h).
 */
#include "media/video_sound.h"

#include <stdlib.h>
#include <string.h>

#include "media/audio_decode.h"
#include "media/decoder.h"


/* The record's videos, and in *with_sound how many of them have an audio
 * stream. */
static int
count_videos(const clef_media_item *items, int n, int *with_sound)
{
    int  k, videos = 0;

    *with_sound = 0;
    for (k = 0; k < n; k++) {
        if (items[k].kind == CLEF_MEDIA_VIDEO) {
            videos++;
            *with_sound += items[k].has_audio != 0;
        }
    }
    return videos;
}


/* Every video's track decoded; the tracks of a heard record appended. */
static int
add_tracks(const clef_media_input *in, clef_media_item *items, int *n,
    const clef_media_run *run, int heard, clef_error *err)
{
    clef_decode_verdict  verdict;
    clef_audio_limits    lim;
    clef_error           held;
    float               *samples;
    int64_t              len;
    int                  k, v, first = *n;

    memset(&held, 0, sizeof(held));
    clef_audio_limits_default(&lim);
    lim.track = 1;
    for (k = 0, v = -1; k < first; k++) {
        if (items[k].kind != CLEF_MEDIA_VIDEO) {
            continue;
        }
        v++;
        if (!items[k].has_audio) {
            continue;
        }
        if (clef_decoder_audio_run(&run->dec, in[k].data, in[k].len, v,
                                   &lim, &samples, &len, &verdict, err)
            != 0)
        {
            switch (verdict) {
            case CLEF_DECODE_NO_STREAM:
                /* silent after all: the record's videos are not heard */
                clef_error_clear(err);
                heard = 0;
                while (*n > first) {
                    clef_media_item_free(&items[--*n]);
                }
                continue;
            case CLEF_DECODE_OVER_LIMIT:
                /* this server's own limit: refused if the sound is heard */
                if (held.status == 0) {
                    held = *err;
                }
                clef_error_clear(err);
                continue;
            default:
                /* undecodable, or the server's failure */
                return -1;
            }
        }
        if (!heard) {
            free(samples);
            continue;
        }
        memset(&items[*n], 0, sizeof(clef_media_item));
        items[*n].kind = CLEF_MEDIA_AUDIO;
        items[*n].values = samples;
        items[*n].samples = len;
        items[*n].sound_of = k + 1;
        items[k].sound = ++*n;
    }
    if (heard && held.status != 0) {
        *err = held;
        return -1;
    }
    for (k = 0; !heard && k < first; k++) {
        items[k].sound = 0;
    }
    return 0;
}


int
clef_video_sound_extend(const clef_media_input *in, int n_in,
    clef_media_item **items, int *n, const clef_media_conf *mc,
    const clef_media_run *run, clef_error *err)
{
    clef_media_item  *grown;
    int               videos, sounding;

    (void) n_in;
    videos = count_videos(*items, *n, &sounding);
    if (mc->videos_with_sound != CLEF_VIDEO_SOUND_HEARD || sounding == 0) {
        return 0;
    }
    if (!(mc->accepts & CLEF_MEDIA_BIT(CLEF_MEDIA_AUDIO))) {
        if (sounding < videos) {
            return 0;
        }
        return clef_error_set(err, 400, "videos_with_sound_unsupported",
            "[\"body\",\"videos\"]",
            "Every video of this request has an audio track, which "
            "Clef Omni hears with its frames, and this server has no "
            "audio tower here; send at least one video without an "
            "audio track, or the videos without their sound.");
    }
    grown = realloc(*items, sizeof(clef_media_item) * (size_t) (*n + videos
                                                               + 1));
    if (grown == NULL) {
        return clef_error_set(err, 500, "internal_error", "",
                              "Out of memory.");
    }
    *items = grown;
    return add_tracks(in, grown, n, run, sounding == videos, err);
}
