/*
 * Clef Omni's videos heard with their sound (media.h "Audio in video"):
 * the video row's extend step (prepare.h).
 */
#ifndef CLEF_VIDEO_SOUND_H
#define CLEF_VIDEO_SOUND_H

#include "media/prepare.h"

/*
 * When the model hears videos (clef_media_conf.videos_with_sound) and the
 * record has videos with an audio stream: each video's track, decoded
 * from the video's file as a clip is (the reference's load_video:
 * _decode_audio, the first audio stream, the clips' resampler), is
 * appended to *items as an audio item, the video and its track pointing
 * at each other.  The reference hears a record's videos only when every
 * one of them has a track with a sample: a video without an audio stream,
 * or whose track decodes to nothing, turns the sound off for the whole
 * record, and no track is kept.  It decodes every video's track all the
 * same, so a track it cannot decode fails the request even beside a
 * silent video; a refusal of this server's own (a codec it does not
 * take, a track over its limits) would not stop the reference: it is
 * refused only when the sound is heard.  A server without an audio tower
 * refuses a record whose every video has sound (400
 * videos_with_sound_unsupported).  What a track's decode says is read
 * from its verdict (decoder.h), never from its message.
 */
int clef_video_sound_extend(const clef_media_input *in, int n_in,
    clef_media_item **items, int *n, const clef_media_conf *mc,
    const clef_media_run *run, clef_error *err);

#endif
