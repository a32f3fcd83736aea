/*
 * A request's file as FFmpeg's input: an AVIOContext that reads and seeks
 * in a buffer in memory, under a deadline, and never opens a second
 * resource.  The audio and the video decoders (audio_decode.c,
 * video_decode.c) open their containers through it; like them it is
 * FFmpeg code (the Makefile's FFMPEG_SRC), which only the decode process
 * and libclef.a link.
 */
#ifndef CLEF_AV_MEMIO_H
#define CLEF_AV_MEMIO_H

#include <stddef.h>
#include <stdint.h>

#include <libavformat/avformat.h>

typedef struct {
    const uint8_t  *p;
    size_t          len;
    size_t          pos;
    double          deadline;   /* clef_clock_seconds(): a read after it
                                   fails with AVERROR_EXIT, and the
                                   demuxer is interrupted */
} clef_av_memio;

/* Makes fmt (from avformat_alloc_context()) read io: an AVIOContext with
 * a buffer of size bytes in *pb, which the caller frees with
 * clef_av_memio_free() (avformat_close_input() leaves custom I/O alone).
 * -1 out of memory, *pb then NULL. */
int  clef_av_memio_attach(AVFormatContext *fmt, clef_av_memio *io, int size,
    AVIOContext **pb);

void clef_av_memio_free(AVIOContext **pb);

#endif
