/*
 * FFmpeg's input over a buffer in memory (see av_memio.h).
 */
#include "media/av_memio.h"

#include <stdio.h>
#include <string.h>

#include "base/clock.h"


static int
mem_read(void *opaque, uint8_t *buf, int size)
{
    clef_av_memio  *io = opaque;
    size_t          n;

    if (clef_clock_seconds() > io->deadline) {
        return AVERROR_EXIT;
    }
    if (io->pos >= io->len) {
        return AVERROR_EOF;
    }
    n = io->len - io->pos;
    if (n > (size_t) size) {
        n = (size_t) size;
    }
    memcpy(buf, io->p + io->pos, n);
    io->pos += n;
    return (int) n;
}


static int64_t
mem_seek(void *opaque, int64_t offset, int whence)
{
    clef_av_memio  *io = opaque;
    int64_t         base;

    if (whence & AVSEEK_SIZE) {
        return (int64_t) io->len;
    }
    switch (whence & ~AVSEEK_FORCE) {
    case SEEK_SET:
        base = 0;
        break;
    case SEEK_CUR:
        base = (int64_t) io->pos;
        break;
    case SEEK_END:
        base = (int64_t) io->len;
        break;
    default:
        return AVERROR(EINVAL);
    }
    /* within [0, len], without overflowing on a hostile offset */
    if (offset < -base || offset > (int64_t) io->len - base) {
        return AVERROR(EINVAL);
    }
    io->pos = (size_t) (base + offset);
    return (int64_t) io->pos;
}


static int
past_deadline(void *opaque)
{
    clef_av_memio  *io = opaque;

    return clef_clock_seconds() > io->deadline;
}


/* libavformat opens every resource other than the main input through
 * io_open (mov's external data references, playlists, image sequences):
 * none may be opened from a request's file */
static int
refuse_open(AVFormatContext *s, AVIOContext **pb, const char *url, int flags,
    AVDictionary **options)
{
    return AVERROR(EPERM);
}


int
clef_av_memio_attach(AVFormatContext *fmt, clef_av_memio *io, int size,
    AVIOContext **pb)
{
    uint8_t  *buf;

    *pb = NULL;
    buf = av_malloc((size_t) size);
    if (buf == NULL) {
        return -1;
    }
    *pb = avio_alloc_context(buf, size, 0, io, mem_read, NULL, mem_seek);
    if (*pb == NULL) {
        av_free(buf);
        return -1;
    }
    fmt->pb = *pb;
    fmt->flags |= AVFMT_FLAG_CUSTOM_IO;
    fmt->io_open = refuse_open;
    fmt->interrupt_callback.callback = past_deadline;
    fmt->interrupt_callback.opaque = io;
    return 0;
}


void
clef_av_memio_free(AVIOContext **pb)
{
    if (*pb != NULL) {
        av_freep(&(*pb)->buffer);
        avio_context_free(pb);
    }
}
