/*
 * Audio decoding from memory to 16 kHz mono float (see audio_decode.h):
 * the container, the first audio stream, its decoder, and PyAV's
 * resampling graph.
 */
#include "media/audio_decode.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libavcodec/avcodec.h>
#include <libavfilter/avfilter.h>
#include <libavfilter/buffersink.h>
#include <libavfilter/buffersrc.h>
#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
#include <libavutil/opt.h>

#include "base/clock.h"
#include "media/av_memio.h"
#include "media/audio_features.h"

#define AUDIO_IO_BUFFER  (32 << 10)

static pthread_once_t  quiet_once = PTHREAD_ONCE_INIT;

/* libavformat's demuxers of the containers served: WAV, FLAC, MP3, Ogg
 * (Opus, Vorbis, FLAC), MP4/M4A (AAC, ALAC), ADTS AAC, WebM/Matroska */
static const char  *allowed_formats =
    "wav,flac,mp3,ogg,mov,mp4,m4a,3gp,3g2,mj2,aac,matroska,webm";
/* the decoders avcodec_find_decoder() gives for the codecs served: those
 * of the containers above as clips and as videos' tracks carry them */
static const char  *allowed_decoders =
    "pcm_s16le,pcm_s16be,pcm_s24le,pcm_s24be,pcm_s32le,pcm_s32be,"
    "pcm_f32le,pcm_f32be,pcm_f64le,pcm_f64be,pcm_u8,pcm_s8,pcm_alaw,"
    "pcm_mulaw,adpcm_ima_wav,adpcm_ms,adpcm_ima_qt,flac,mp3float,mp3,"
    "mp2float,mp2,opus,vorbis,aac,aac_fixed,alac,ac3,eac3";

typedef struct {
    clef_av_memio       io;
    clef_audio_limits   lim;
    int                 index;
    char                loc[64];
    AVFormatContext    *fmt;
    AVIOContext        *pb;
    AVCodecContext     *dec;
    int                 stream;
    AVFilterGraph      *graph;
    AVFilterContext    *src, *sink;
    int                 in_fmt, in_rate;
    AVChannelLayout     in_layout;
    float              *out;
    int64_t             n, cap, max_n;
    clef_audio_info     info;
} audio_dec;


static int
refuse(audio_dec *d, clef_error *err, const char *type, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int
refuse(audio_dec *d, clef_error *err, const char *type, const char *fmt, ...)
{
    va_list  ap;
    char     why[320];

    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    return clef_error_set(err, 400, type, d->loc, d->lim.track
                          ? "Video %d's sound %s." : "Audio clip %d %s.",
                          d->index, why);
}


static int
refuse_av(audio_dec *d, clef_error *err, const char *what, int rc)
{
    char  msg[AV_ERROR_MAX_STRING_SIZE];

    if (rc == AVERROR_EXIT || clef_clock_seconds() > d->io.deadline) {
        return refuse(d, err, "audio_decode_budget",
            "took more than %.0f s to decode", d->lim.max_decode_seconds);
    }
    if (rc == AVERROR(ENOMEM)) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY,
                               "Out of memory decoding audio clip %d.",
                               d->index);
    }
    av_strerror(rc, msg, sizeof(msg));
    return refuse(d, err, "audio_invalid",
                  "cannot be decoded (%s: %s; the file may be truncated or "
                  "damaged)", what, msg);
}


static int
name_in(const char *name, const char *list)
{
    size_t       n = strlen(name);
    const char  *p = list;

    while (p != NULL && *p != '\0') {
        if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == '\0')) {
            return 1;
        }
        p = strchr(p, ',');
        p = p != NULL ? p + 1 : NULL;
    }
    return 0;
}


static void
quiet_ffmpeg(void)
{
    av_log_set_level(AV_LOG_QUIET);
}


static int
open_input(audio_dec *d, clef_error *err)
{
    const AVCodec  *codec;
    AVDictionary   *opts = NULL;
    AVStream       *st;
    unsigned        i;
    int             rc;

    d->fmt = avformat_alloc_context();
    if (d->fmt == NULL
        || clef_av_memio_attach(d->fmt, &d->io, AUDIO_IO_BUFFER, &d->pb) != 0)
    {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "Out of memory.");
    }

    av_dict_set(&opts, "format_whitelist", allowed_formats, 0);
    av_dict_set(&opts, "codec_whitelist", allowed_decoders, 0);
    av_dict_set(&opts, "protocol_whitelist", "", 0);
    av_dict_set(&opts, "max_streams", "16", 0);
    rc = avformat_open_input(&d->fmt, NULL, NULL, &opts);
    av_dict_free(&opts);
    if (rc < 0) {
        d->fmt = NULL;
        if (rc == AVERROR_INVALIDDATA) {
            return refuse(d, err, "audio_invalid", "is not a WAV, FLAC, MP3, "
                          "Ogg, MP4/M4A, AAC or WebM file");
        }
        return refuse_av(d, err, "reading its container", rc);
    }
    snprintf(d->info.container, sizeof(d->info.container), "%s",
             d->fmt->iformat->name);
    /* PyAV's av.open reads the streams' parameters this way */
    rc = avformat_find_stream_info(d->fmt, NULL);
    if (rc < 0) {
        return refuse_av(d, err, "reading its streams", rc);
    }

    /* the reference takes the first audio stream, in the file's order */
    d->stream = -1;
    for (i = 0; i < d->fmt->nb_streams; i++) {
        if (d->fmt->streams[i]->codecpar->codec_type == AVMEDIA_TYPE_AUDIO) {
            d->stream = (int) i;
            break;
        }
    }
    if (d->stream < 0) {
        return refuse(d, err, "audio_no_stream", "has no audio stream");
    }
    /* the other streams are read and dropped, not discarded: PyAV reads
     * them all, and a demuxer skips a discarded stream's damaged blocks
     * that it would stop at (a Matroska lace), so the reference's samples
     * end where its demuxer stops */
    st = d->fmt->streams[d->stream];
    codec = avcodec_find_decoder(st->codecpar->codec_id);
    if (codec == NULL || !name_in(codec->name, allowed_decoders)) {
        return refuse(d, err, "audio_codec_unsupported",
            "is in %s; this server decodes PCM, ADPCM, FLAC, MP3, Opus, "
            "Vorbis, AAC, ALAC and AC-3",
            avcodec_get_name(st->codecpar->codec_id));
    }
    if (st->codecpar->ch_layout.nb_channels > CLEF_AUDIO_MAX_CHANNELS
        || st->codecpar->sample_rate > CLEF_AUDIO_MAX_RATE)
    {
        return refuse(d, err, "audio_invalid",
            "has %d channels at %d Hz; the limits are %d channels and %d Hz",
            st->codecpar->ch_layout.nb_channels, st->codecpar->sample_rate,
            CLEF_AUDIO_MAX_CHANNELS, CLEF_AUDIO_MAX_RATE);
    }
    snprintf(d->info.codec, sizeof(d->info.codec), "%s", codec->name);

    d->dec = avcodec_alloc_context3(codec);
    if (d->dec == NULL) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "Out of memory.");
    }
    rc = avcodec_parameters_to_context(d->dec, st->codecpar);
    if (rc < 0) {
        return refuse_av(d, err, "reading its codec parameters", rc);
    }
    d->dec->pkt_timebase = st->time_base;
    d->dec->thread_count = 1;
    rc = avcodec_open2(d->dec, codec, NULL);
    if (rc < 0) {
        return refuse_av(d, err, "opening its decoder", rc);
    }
    return 0;
}


/* PyAV's AudioResampler graph for the first frame f (audio_decode.h). */
static int
graph_setup(audio_dec *d, const AVFrame *f)
{
    const AVStream  *st = d->fmt->streams[d->stream];
    AVFilterContext *aformat;
    char             layout[64], args[256];

    if (av_channel_layout_describe(&f->ch_layout, layout, sizeof(layout)) < 0
        || av_get_sample_fmt_name(f->format) == NULL)
    {
        return -1;
    }
    snprintf(args, sizeof(args), "sample_rate=%d:sample_fmt=%s:"
             "channel_layout=%s:time_base=%d/%d", f->sample_rate,
             av_get_sample_fmt_name(f->format), layout, st->time_base.num,
             st->time_base.den);
    d->graph = avfilter_graph_alloc();
    if (d->graph == NULL) {
        return -1;
    }
    d->graph->nb_threads = 1;
    if (avfilter_graph_create_filter(&d->src, avfilter_get_by_name("abuffer"),
                                     "abuffer", args, NULL, d->graph) < 0
        || avfilter_graph_create_filter(&aformat,
               avfilter_get_by_name("aformat"), "aformat",
               "sample_rates=16000:sample_fmts=flt:channel_layouts=mono",
               NULL, d->graph) < 0
        || avfilter_graph_create_filter(&d->sink,
               avfilter_get_by_name("abuffersink"), "abuffersink", NULL,
               NULL, d->graph) < 0
        || avfilter_link(d->src, 0, aformat, 0) < 0
        || avfilter_link(aformat, 0, d->sink, 0) < 0
        || avfilter_graph_config(d->graph, NULL) < 0)
    {
        return -1;
    }
    d->in_fmt = f->format;
    d->in_rate = f->sample_rate;
    return av_channel_layout_copy(&d->in_layout, &f->ch_layout) < 0 ? -1 : 0;
}


static int
append(audio_dec *d, const AVFrame *o, clef_error *err)
{
    int64_t   cap, i;
    float    *grow;

    if (o->nb_samples <= 0) {
        return 0;
    }
    if (o->format != AV_SAMPLE_FMT_FLT || o->ch_layout.nb_channels != 1
        || o->sample_rate != CLEF_AUDIO_RATE)
    {
        return refuse(d, err, "audio_invalid", "cannot be resampled");
    }
    if (d->n + o->nb_samples > d->max_n) {
        return refuse(d, err, "audio_too_long",
            "lasts more than %.0f s; the limit is %.0f s",
            d->lim.max_seconds, d->lim.max_seconds);
    }
    if (d->n + o->nb_samples > d->cap) {
        cap = d->cap ? d->cap : 1 << 15;
        while (cap < d->n + o->nb_samples) {
            cap *= 2;
        }
        grow = realloc(d->out, sizeof(float) * (size_t) cap);
        if (grow == NULL) {
            return clef_error_fail(err, CLEF_E_NO_MEMORY, "Out of memory.");
        }
        d->out = grow;
        d->cap = cap;
    }
    memcpy(d->out + d->n, o->data[0], sizeof(float) * (size_t) o->nb_samples);
    /* a float WAV may hold anything: NaN or infinity would make every
     * feature, and the answer, NaN (the reference would answer so) */
    for (i = d->n; i < d->n + o->nb_samples; i++) {
        if (!isfinite(d->out[i])) {
            return refuse(d, err, "audio_invalid", "has a sample that is "
                          "not a finite number (at %.3f s)",
                          (double) i / CLEF_AUDIO_RATE);
        }
    }
    d->n += o->nb_samples;
    return 0;
}


/* What the sink has, until it says EAGAIN (or EOF after the flush). */
static int
drain_sink(audio_dec *d, AVFrame *o, clef_error *err)
{
    int  rc;

    for ( ;; ) {
        rc = av_buffersink_get_frame(d->sink, o);
        if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) {
            return 0;
        }
        if (rc < 0) {
            return refuse_av(d, err, "resampling", rc);
        }
        rc = append(d, o, err);
        av_frame_unref(o);
        if (rc != 0) {
            return -1;
        }
    }
}


/* One decoded frame into the graph (made for the first). */
static int
push(audio_dec *d, AVFrame *f, AVFrame *o, clef_error *err)
{
    int  rc;

    if (d->graph == NULL) {
        if (graph_setup(d, f) != 0) {
            return refuse(d, err, "audio_invalid", "cannot be resampled "
                          "(%d channels of %s at %d Hz)",
                          f->ch_layout.nb_channels,
                          av_get_sample_fmt_name(f->format) != NULL
                          ? av_get_sample_fmt_name(f->format) : "?",
                          f->sample_rate);
        }
        d->info.rate = f->sample_rate;
        d->info.channels = f->ch_layout.nb_channels;
        av_channel_layout_describe(&f->ch_layout, d->info.layout,
                                   sizeof(d->info.layout));
    } else if (f->format != d->in_fmt || f->sample_rate != d->in_rate
               || av_channel_layout_compare(&f->ch_layout, &d->in_layout)
                  != 0)
    {
        /* PyAV: "Frame does not match AudioResampler setup." */
        return refuse(d, err, "audio_invalid", "changes its sample format, "
                      "rate or channels mid-stream");
    }
    rc = av_buffersrc_write_frame(d->src, f);
    if (rc < 0) {
        return refuse_av(d, err, "resampling", rc);
    }
    return drain_sink(d, o, err);
}


static int
decode_all(audio_dec *d, clef_error *err)
{
    AVPacket  *pkt = av_packet_alloc();
    AVFrame   *f = av_frame_alloc(), *o = av_frame_alloc();
    int        rc, eof = 0, failed = 0;

    if (pkt == NULL || f == NULL || o == NULL) {
        failed = clef_error_fail(err, CLEF_E_NO_MEMORY, "Out of memory.");
        goto done;
    }
    for ( ;; ) {
        rc = avcodec_receive_frame(d->dec, f);
        if (rc == 0) {
            rc = push(d, f, o, err);
            av_frame_unref(f);
            if (rc != 0) {
                failed = -1;
                goto done;
            }
            continue;
        }
        if (rc == AVERROR_EOF) {
            break;
        }
        if (rc != AVERROR(EAGAIN)) {
            failed = refuse_av(d, err, "decoding a frame", rc);
            goto done;
        }
        if (clef_clock_seconds() > d->io.deadline) {
            failed = refuse_av(d, err, "decoding", AVERROR_EXIT);
            goto done;
        }
        rc = eof ? AVERROR_EOF : av_read_frame(d->fmt, pkt);
        if (rc == AVERROR_EOF) {
            /* the decoder drained, as PyAV's flush packet does */
            eof = 1;
            rc = avcodec_send_packet(d->dec, NULL);
            if (rc == AVERROR_EOF) {
                break;
            }
        } else if (rc >= 0) {
            if (pkt->stream_index != d->stream) {
                av_packet_unref(pkt);
                continue;
            }
            rc = avcodec_send_packet(d->dec, pkt);
            av_packet_unref(pkt);
        } else {
            failed = refuse_av(d, err, "reading a packet", rc);
            goto done;
        }
        if (rc < 0) {
            failed = refuse_av(d, err, "decoding a packet", rc);
            goto done;
        }
    }
    /* EOF into the graph: the resampler's tail */
    if (d->graph != NULL) {
        rc = av_buffersrc_write_frame(d->src, NULL);
        if (rc < 0) {
            failed = refuse_av(d, err, "resampling", rc);
            goto done;
        }
        if (drain_sink(d, o, err) != 0) {
            failed = -1;
            goto done;
        }
    }
    if (d->n == 0) {
        failed = refuse(d, err, "audio_no_stream",
                        "has no decodable audio (not one sample)");
    }

done:
    av_packet_free(&pkt);
    av_frame_free(&f);
    av_frame_free(&o);
    return failed ? -1 : 0;
}


static void
audio_close(audio_dec *d)
{
    avfilter_graph_free(&d->graph);
    avcodec_free_context(&d->dec);
    avformat_close_input(&d->fmt);
    clef_av_memio_free(&d->pb);
    av_channel_layout_uninit(&d->in_layout);
}


int
clef_audio_decode(const uint8_t *data, size_t len, int index,
    const clef_audio_limits *lim, float **samples, int64_t *n,
    clef_audio_info *info, clef_error *err)
{
    audio_dec  d;
    int        rc;

    *samples = NULL;
    *n = 0;
    pthread_once(&quiet_once, quiet_ffmpeg);
    memset(&d, 0, sizeof(d));
    d.lim = *lim;
    d.index = index;
    d.io.p = data;
    d.io.len = len;
    d.io.deadline = clef_clock_seconds() + lim->max_decode_seconds;
    d.max_n = (int64_t) (lim->max_seconds * CLEF_AUDIO_RATE);
    snprintf(d.loc, sizeof(d.loc), "[\"body\",\"%s\",%d]",
             lim->track ? "videos" : "audio", index);

    rc = open_input(&d, err) == 0 && decode_all(&d, err) == 0 ? 0 : -1;
    audio_close(&d);
    if (rc != 0) {
        free(d.out);
        return -1;
    }
    d.info.samples = d.n;
    if (info != NULL) {
        *info = d.info;
    }
    *samples = d.out;
    *n = d.n;
    return 0;
}
