/*
 * Video decoding from memory (see video_decode.h): the container and the
 * scan, then the frames at the sampled indices in rgb24, converted the
 * way torchcodec's CPU path converts them.
 */
#include "media/video_decode.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libavcodec/avcodec.h>
#include <libavfilter/buffersink.h>
#include <libavfilter/buffersrc.h>
#include <libavformat/avformat.h>
#include <libavutil/display.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>

#include "base/clock.h"
#include "media/av_memio.h"

#define VIDEO_IO_BUFFER  (64 << 10)

static pthread_once_t  quiet_once = PTHREAD_ONCE_INIT;

/* libavformat's names of the two containers the reference serves */
static const char  *allowed_formats = "mov,mp4,m4a,3gp,3g2,mj2,matroska,webm";
/* the decoders avcodec_find_decoder() gives for the allowed codecs */
static const char  *allowed_decoders = "h264,hevc,vp8,vp9,libdav1d,av1";

struct clef_video_decoder {
    clef_av_memio       io;
    clef_video_limits   lim;
    clef_video_info     info;
    int                 index;
    int                 timed;        /* Clef Omni's sampling */
    int32_t             tw, th;       /* timed: the scaled size */
    clef_video_config   tconf;        /* timed: the processor's */
    char                loc[64];
    AVFormatContext    *fmt;
    AVIOContext        *pb;
    AVCodecContext     *dec;
    int                 stream;
    int64_t            *pts;          /* [n_frames] packet pts, sorted */
    /* colour conversion, made for the first frame and kept */
    struct SwsContext  *sws;
    AVFilterGraph      *graph;
    AVFilterContext    *src, *sink;
    int                 conv_w, conv_h, conv_fmt, conv_cs, conv_range;
    uint8_t            *rgb;          /* [height][width][3] */
    uint8_t            *wide;         /* timed: libswscale's output, rows
                                         of stride bytes */
    int                 stride;
};


static int
refuse(clef_video_decoder *d, clef_error *err, const char *type,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int
refuse(clef_video_decoder *d, clef_error *err, const char *type,
    const char *fmt, ...)
{
    va_list  ap;
    char     why[320];

    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    return clef_error_set(err, 400, type, d->loc, "Video %d %s.", d->index,
                          why);
}


/* "cannot be decoded: REASON" for a failure of FFmpeg's, the time budget
 * when the interrupt callback or the read callback stopped it */
static int
refuse_av(clef_video_decoder *d, clef_error *err, const char *what, int rc)
{
    char  msg[AV_ERROR_MAX_STRING_SIZE];

    if (rc == AVERROR_EXIT || clef_clock_seconds() > d->io.deadline) {
        return refuse(d, err, "video_decode_budget",
            "took more than %.0f s to decode", d->lim.max_decode_seconds);
    }
    if (rc == AVERROR(ENOMEM)) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY,
                               "Out of memory decoding video %d.", d->index);
    }
    av_strerror(rc, msg, sizeof(msg));
    return refuse(d, err, "video_invalid",
                  "cannot be decoded (%s: %s; the file may be truncated or "
                  "damaged)", what, msg);
}


static int
name_in(const char *name, const char *list)
{
    size_t       n = strlen(name);
    const char  *p = list;

    while (*p != '\0') {
        if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == '\0')) {
            return 1;
        }
        p = strchr(p, ',');
        if (p == NULL) {
            break;
        }
        p++;
    }
    return 0;
}


/* the display matrix's rotation rounded to a multiple of 90 degrees, as
 * torchcodec's rotation_from_degrees(); 0 when there is none */
static int
stream_rotation(const AVStream *st)
{
    const uint8_t  *m;
    size_t          size = 0;
    double          deg;

    m = av_stream_get_side_data(st, AV_PKT_DATA_DISPLAYMATRIX, &size);
    if (m == NULL || size < 9 * sizeof(int32_t)) {
        return 0;
    }
    deg = av_display_rotation_get((const int32_t *) m);
    if (isnan(deg)) {
        return 0;
    }
    return (int) round(deg / 90.0) * 90;
}


static double
pts_seconds(int64_t pts, AVRational tb)
{
    /* torchcodec's pts_to_seconds: the product before the division */
    return (double) pts * tb.num / tb.den;
}


static int
cmp_i64(const void *a, const void *b)
{
    int64_t  x = *(const int64_t *) a, y = *(const int64_t *) b;

    return x < y ? -1 : x > y;
}


/* The container's own statements, before any frame is decoded. */
static int
check_header(clef_video_decoder *d, const AVStream *st, clef_error *err)
{
    int64_t  w = st->codecpar->width, h = st->codecpar->height;
    double   secs;

    if (w <= 0 || h <= 0) {
        return refuse(d, err, "video_invalid",
                      "cannot be decoded (its video stream has no size)");
    }
    if (w * h > d->lim.max_pixels) {
        return refuse(d, err, "video_too_many_pixels",
            "has frames of %lldx%lld pixels; the limit is %lld pixels a "
            "frame", (long long) w, (long long) h,
            (long long) d->lim.max_pixels);
    }
    secs = d->fmt->duration > 0 ? (double) d->fmt->duration / AV_TIME_BASE
                                : 0.0;
    if (st->duration > 0 && st->time_base.den > 0
        && pts_seconds(st->duration, st->time_base) > secs)
    {
        secs = pts_seconds(st->duration, st->time_base);
    }
    if (secs > d->lim.max_seconds) {
        return refuse(d, err, "video_too_long",
            "lasts %.1f s; the limit is %.0f s", secs, d->lim.max_seconds);
    }
    if (st->nb_frames > d->lim.max_frames) {
        return refuse(d, err, "video_too_many_frames",
            "has %lld frames; the limit is %lld", (long long) st->nb_frames,
            (long long) d->lim.max_frames);
    }
    return 0;
}


static int
check_budget(clef_video_decoder *d, int64_t frames, clef_error *err)
{
    int64_t  px = (int64_t) d->info.width * d->info.height;

    if (frames > d->lim.max_decode_pixels / px) {
        return refuse(d, err, "video_decode_budget",
            "needs %lld frames of %dx%d decoded; the limit is %lld pixels",
            (long long) frames, (int) d->info.width, (int) d->info.height,
            (long long) d->lim.max_decode_pixels);
    }
    return 0;
}


/* Every packet of the stream once, no decoding: the frame count, the
 * span, and each frame's pts (torchcodec's exact-mode scan). */
static int
scan(clef_video_decoder *d, clef_error *err)
{
    AVStream  *st = d->fmt->streams[d->stream];
    AVPacket  *pkt = av_packet_alloc();
    int64_t    n = 0, cap = 0, begin = INT64_MAX, end = INT64_MIN, t, *grow;
    double     span;
    int        rc;

    if (pkt == NULL) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "Out of memory.");
    }
    for ( ;; ) {
        rc = av_read_frame(d->fmt, pkt);
        if (rc == AVERROR_EOF) {
            break;
        }
        if (rc < 0) {
            av_packet_free(&pkt);
            return refuse_av(d, err, "reading its packets", rc);
        }
        if (pkt->stream_index != d->stream
            || (pkt->flags & AV_PKT_FLAG_DISCARD))
        {
            av_packet_unref(pkt);
            continue;
        }
        if (n >= d->lim.max_frames) {
            av_packet_free(&pkt);
            return refuse(d, err, "video_too_many_frames",
                "has more than %lld frames", (long long) d->lim.max_frames);
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 256;
            grow = realloc(d->pts, sizeof(int64_t) * (size_t) cap);
            if (grow == NULL) {
                av_packet_free(&pkt);
                return clef_error_fail(err, CLEF_E_NO_MEMORY,
                                       "Out of memory.");
            }
            d->pts = grow;
        }
        t = pkt->pts == AV_NOPTS_VALUE ? pkt->dts : pkt->pts;
        d->pts[n++] = t;
        if (t < begin) {
            begin = t;
        }
        if (t + pkt->duration > end) {
            end = t + pkt->duration;
        }
        av_packet_unref(pkt);
    }
    av_packet_free(&pkt);

    if (n == 0) {
        return refuse(d, err, "video_invalid", "has no frames");
    }
    qsort(d->pts, (size_t) n, sizeof(int64_t), cmp_i64);
    d->info.n_frames = n;
    span = pts_seconds(end, st->time_base) - pts_seconds(begin, st->time_base);
    d->info.duration = span;
    d->info.fps = span != 0.0 ? (double) n / span : av_q2d(st->r_frame_rate);
    if (!(d->info.fps > 0.0) || !isfinite(d->info.fps)) {
        /* what transformers assumes when the decoder gives no fps */
        d->info.fps = 24.0;
    }
    if (span > d->lim.max_seconds) {
        return refuse(d, err, "video_too_long",
            "lasts %.1f s; the limit is %.0f s", span, d->lim.max_seconds);
    }
    if (check_budget(d, n, err) != 0) {
        return -1;
    }

    /* back to the start, as torchcodec rewinds after its scan */
    rc = avformat_seek_file(d->fmt, 0, INT64_MIN, 0, 0, 0);
    if (rc < 0) {
        return refuse_av(d, err, "rewinding it", rc);
    }
    return 0;
}


static int
open_decoder(clef_video_decoder *d, const AVCodec *codec, clef_error *err)
{
    AVStream  *st = d->fmt->streams[d->stream];
    int        rc;

    d->dec = avcodec_alloc_context3(codec);
    if (d->dec == NULL) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "Out of memory.");
    }
    rc = avcodec_parameters_to_context(d->dec, st->codecpar);
    if (rc < 0) {
        return refuse_av(d, err, "reading its codec parameters", rc);
    }
    d->dec->thread_count = d->lim.threads;
    d->dec->pkt_timebase = st->time_base;
    d->dec->max_pixels = d->lim.max_pixels;
    rc = avcodec_open2(d->dec, codec, NULL);
    if (rc < 0) {
        return refuse_av(d, err, "opening its decoder", rc);
    }
    d->dec->time_base = st->time_base;
    return 0;
}


static int video_open(clef_video_decoder *d, clef_error *err);


/* FFmpeg logs to stderr by default; the engine says why a video was
 * refused in the error it returns instead, once per request */
static void
quiet_ffmpeg(void)
{
    av_log_set_level(AV_LOG_QUIET);
}


static int
video_open_as(const uint8_t *data, size_t len, int index,
    const clef_video_limits *lim, const clef_video_config *timed,
    clef_video_decoder **out, clef_error *err)
{
    clef_video_decoder  *d;

    *out = NULL;
    pthread_once(&quiet_once, quiet_ffmpeg);
    d = calloc(1, sizeof(*d));
    if (d == NULL) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "Out of memory.");
    }
    d->lim = *lim;
    d->index = index;
    d->timed = timed != NULL;
    if (timed != NULL) {
        d->tconf = *timed;
    }
    d->stream = -1;
    snprintf(d->loc, sizeof(d->loc), "[\"body\",\"videos\",%d]", index);
    d->io.p = data;
    d->io.len = len;
    d->io.deadline = clef_clock_seconds() + lim->max_decode_seconds;
    if (video_open(d, err) != 0) {
        clef_video_close(d);
        return -1;
    }
    *out = d;
    return 0;
}


int
clef_video_open(const uint8_t *data, size_t len, int index,
    const clef_video_limits *lim, clef_video_decoder **out, clef_error *err)
{
    return video_open_as(data, len, index, lim, NULL, out, err);
}


int
clef_video_open_timed(const uint8_t *data, size_t len, int index,
    const clef_video_limits *lim, const clef_video_config *vc,
    clef_video_decoder **out, clef_error *err)
{
    return video_open_as(data, len, index, lim, vc, out, err);
}


/* PyAV's choice: the first stream whose type is video */
static int
first_video_stream(AVFormatContext *fmt, const AVCodec **codec)
{
    unsigned  i;

    for (i = 0; i < fmt->nb_streams; i++) {
        if (fmt->streams[i]->codecpar->codec_type == AVMEDIA_TYPE_VIDEO) {
            *codec = avcodec_find_decoder(fmt->streams[i]->codecpar->codec_id);
            return (int) i;
        }
    }
    return AVERROR_STREAM_NOT_FOUND;
}


static int
video_open(clef_video_decoder *d, clef_error *err)
{
    const AVCodec       *codec = NULL;
    AVDictionary        *opts = NULL;
    AVStream            *st;
    unsigned             i;
    int                  rc, w, h;

    d->fmt = avformat_alloc_context();
    if (d->fmt == NULL
        || clef_av_memio_attach(d->fmt, &d->io, VIDEO_IO_BUFFER, &d->pb) != 0)
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
        /* avformat_open_input() freed the context, not our I/O */
        d->fmt = NULL;
        if (rc == AVERROR_INVALIDDATA) {
            return refuse(d, err, "video_invalid",
                          "is not an MP4, QuickTime, Matroska or WebM file");
        }
        return refuse_av(d, err, "reading its container", rc);
    }

    /* what the header says, before avformat_find_stream_info() decodes
     * the first frames of the streams */
    for (i = 0; i < d->fmt->nb_streams; i++) {
        st = d->fmt->streams[i];
        if (st->codecpar->codec_type == AVMEDIA_TYPE_AUDIO) {
            d->info.has_audio = 1;
        }
        if (st->codecpar->codec_type == AVMEDIA_TYPE_VIDEO
            && st->codecpar->width > 0 && st->codecpar->height > 0
            && check_header(d, st, err) != 0)
        {
            return -1;
        }
    }
    rc = avformat_find_stream_info(d->fmt, NULL);
    if (rc < 0) {
        return refuse_av(d, err, "reading its streams", rc);
    }

    rc = d->timed ? first_video_stream(d->fmt, &codec)
                  : av_find_best_stream(d->fmt, AVMEDIA_TYPE_VIDEO, -1, -1,
                                        &codec, 0);
    if (rc == AVERROR_STREAM_NOT_FOUND) {
        return refuse(d, err, "video_no_stream", "has no video stream");
    }
    if (rc < 0 || codec == NULL) {
        return refuse(d, err, "video_codec_unsupported",
                      "is in a codec this server cannot decode (it decodes "
                      "H.264, HEVC, VP8, VP9 and AV1)");
    }
    d->stream = rc;
    st = d->fmt->streams[d->stream];
    if (!name_in(codec->name, allowed_decoders)) {
        return refuse(d, err, "video_codec_unsupported",
            "is in %s; this server decodes H.264, HEVC, VP8, VP9 and AV1",
            avcodec_get_name(st->codecpar->codec_id));
    }
    snprintf(d->info.codec, sizeof(d->info.codec), "%s",
             avcodec_get_name(st->codecpar->codec_id));
    if (check_header(d, st, err) != 0) {
        return -1;
    }
    /* Clef Omni's reference (PyAV) reads every stream's packets: the
     * others are read and dropped, not discarded, as a demuxer skips a
     * discarded stream's damaged blocks that it would stop at (a Matroska
     * lace), so the frames end where the reference's demuxer stops */
    for (i = 0; !d->timed && i < d->fmt->nb_streams; i++) {
        if ((int) i != d->stream) {
            d->fmt->streams[i]->discard = AVDISCARD_ALL;
        }
    }

    /* PyAV hands the frames over as decoded */
    d->info.rotation = d->timed ? 0 : stream_rotation(st);
    if (d->info.rotation != 0 && d->info.rotation != 90
        && d->info.rotation != -90 && d->info.rotation != 180
        && d->info.rotation != -180)
    {
        return refuse(d, err, "video_invalid",
                      "has a display matrix that is not a rotation");
    }
    if (d->info.rotation == -180) {
        d->info.rotation = 180;
    }
    w = st->codecpar->width;
    h = st->codecpar->height;
    d->info.width = d->info.rotation == 90 || d->info.rotation == -90 ? h : w;
    d->info.height = d->info.rotation == 90 || d->info.rotation == -90 ? w : h;

    if (scan(d, err) != 0 || open_decoder(d, codec, err) != 0) {
        return -1;
    }
    d->tw = w;
    d->th = h;
    if (d->timed) {
        clef_video_timed_size(w, h, &d->tconf, &d->tw, &d->th);
    }
    d->rgb = malloc((size_t) (w * h > d->tw * d->th ? w * h : d->tw * d->th)
                    * 3);
    if (d->timed) {
        /* FFmpeg's own frame buffers: 64-byte rows and a row of slack */
        d->stride = FFALIGN(d->tw * 3, 64);
        d->wide = av_malloc((size_t) d->stride * (size_t) (d->th + 1));
        if (d->wide == NULL) {
            return clef_error_fail(err, CLEF_E_NO_MEMORY, "Out of memory.");
        }
    }
    if (d->rgb == NULL) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "Out of memory.");
    }
    return 0;
}


const clef_video_info *
clef_video_decoder_info(const clef_video_decoder *d)
{
    return &d->info;
}


/* ---- colour conversion: torchcodec's two CPU paths ---------------------- */

static int
sws_setup(clef_video_decoder *d, const AVFrame *f)
{
    const int  *coef;
    int        *inv, *tab, src_range, dst_range, bright, contrast, sat;

    d->sws = sws_getContext(f->width, f->height, f->format, f->width,
                            f->height, AV_PIX_FMT_RGB24, 0, NULL, NULL, NULL);
    if (d->sws == NULL) {
        return -1;
    }
    if (sws_getColorspaceDetails(d->sws, &inv, &src_range, &tab, &dst_range,
                                 &bright, &contrast, &sat) == -1)
    {
        return -1;
    }
    if (f->color_range != AVCOL_RANGE_UNSPECIFIED) {
        src_range = f->color_range == AVCOL_RANGE_JPEG;
    }
    coef = sws_getCoefficients(f->colorspace);
    if (sws_setColorspaceDetails(d->sws, coef, src_range, coef, dst_range,
                                 bright, contrast, sat) == -1)
    {
        return -1;
    }
    return 0;
}


static int
graph_setup(clef_video_decoder *d, const AVFrame *f)
{
    static const enum AVPixelFormat  rgb[] = { AV_PIX_FMT_RGB24,
                                               AV_PIX_FMT_NONE };
    AVBufferSrcParameters  *par;
    AVFilterInOut          *outs, *ins;
    const char             *desc;
    int                     rc;

    switch (d->info.rotation) {
    case 90:
        desc = "format=rgb24,transpose=cclock";
        break;
    case -90:
        desc = "format=rgb24,transpose=clock";
        break;
    case 180:
        desc = "format=rgb24,hflip,vflip";
        break;
    default:
        desc = "copy";
    }
    d->graph = avfilter_graph_alloc();
    par = av_buffersrc_parameters_alloc();
    if (d->graph == NULL || par == NULL) {
        av_free(par);
        return -1;
    }
    d->graph->nb_threads = d->lim.threads;
    d->src = avfilter_graph_alloc_filter(d->graph,
                                         avfilter_get_by_name("buffer"), "in");
    if (d->src == NULL) {
        av_free(par);
        return -1;
    }
    par->format = f->format;
    par->width = f->width;
    par->height = f->height;
    par->sample_aspect_ratio = f->sample_aspect_ratio;
    par->time_base = d->fmt->streams[d->stream]->time_base;
    rc = av_buffersrc_parameters_set(d->src, par);
    av_free(par);
    if (rc < 0 || avfilter_init_str(d->src, NULL) < 0
        || avfilter_graph_create_filter(&d->sink,
               avfilter_get_by_name("buffersink"), "out", NULL, NULL,
               d->graph) < 0
        || av_opt_set_int_list(d->sink, "pix_fmts", rgb, AV_PIX_FMT_NONE,
                               AV_OPT_SEARCH_CHILDREN) < 0)
    {
        return -1;
    }
    outs = avfilter_inout_alloc();
    ins = avfilter_inout_alloc();
    if (outs == NULL || ins == NULL) {
        avfilter_inout_free(&outs);
        avfilter_inout_free(&ins);
        return -1;
    }
    outs->name = av_strdup("in");
    outs->filter_ctx = d->src;
    ins->name = av_strdup("out");
    ins->filter_ctx = d->sink;
    rc = avfilter_graph_parse_ptr(d->graph, desc, &ins, &outs, NULL);
    avfilter_inout_free(&outs);
    avfilter_inout_free(&ins);
    if (rc < 0 || avfilter_graph_config(d->graph, NULL) < 0) {
        return -1;
    }
    return 0;
}


static void
conv_free(clef_video_decoder *d)
{
    sws_freeContext(d->sws);
    d->sws = NULL;
    avfilter_graph_free(&d->graph);
    d->src = NULL;
    d->sink = NULL;
}


/* Where libswscale puts a subsampled frame's chroma: what FFmpeg 8's
 * sws_scale_frame takes from the frame (an unspecified location is the
 * centre), in the units of the legacy options (256 a luma sample);
 * -513 where the format is not subsampled that way. */
static void
chroma_pos(const AVFrame *f, int *h, int *v)
{
    const AVPixFmtDescriptor  *desc = av_pix_fmt_desc_get(f->format);
    enum AVChromaLocation      loc = f->chroma_location;
    int                        x, y;

    if (loc == AVCHROMA_LOC_UNSPECIFIED) {
        loc = AVCHROMA_LOC_CENTER;
    }
    if (desc == NULL || avcodec_enum_to_chroma_pos(&x, &y, loc) < 0) {
        *h = *v = -513;
        return;
    }
    *h = desc->log2_chroma_w ? x * ((1 << desc->log2_chroma_w) - 1) : -513;
    *v = desc->log2_chroma_h ? y * ((1 << desc->log2_chroma_h) - 1) : -513;
}


/* PyAV's to_ndarray(format="rgb24", width=, height=): FFmpeg 8's
 * sws_scale_frame with SWS_BILINEAR, which builds a libswscale context
 * from the frame's tags: its chroma location, its range (limited unless
 * tagged full), its matrix (sws_getCoefficients: an unspecified one is
 * BT.601); RGB out is full range. */
static int
timed_setup(clef_video_decoder *d, const AVFrame *f)
{
    const int  *coef;
    int        *inv, *tab, src_range, dst_range, bright, contrast, sat;
    int         h, v;

    d->sws = sws_alloc_context();
    if (d->sws == NULL) {
        return -1;
    }
    chroma_pos(f, &h, &v);
    if (av_opt_set_int(d->sws, "srcw", f->width, 0) < 0
        || av_opt_set_int(d->sws, "srch", f->height, 0) < 0
        || av_opt_set_int(d->sws, "src_format", f->format, 0) < 0
        || av_opt_set_int(d->sws, "dstw", d->tw, 0) < 0
        || av_opt_set_int(d->sws, "dsth", d->th, 0) < 0
        || av_opt_set_int(d->sws, "dst_format", AV_PIX_FMT_RGB24, 0) < 0
        || av_opt_set_int(d->sws, "sws_flags", SWS_BILINEAR, 0) < 0
        || av_opt_set_int(d->sws, "src_range",
                          f->color_range == AVCOL_RANGE_JPEG, 0) < 0
        || av_opt_set_int(d->sws, "dst_range", 1, 0) < 0
        || av_opt_set_int(d->sws, "src_h_chr_pos", h, 0) < 0
        || av_opt_set_int(d->sws, "src_v_chr_pos", v, 0) < 0
        || sws_init_context(d->sws, NULL, NULL) < 0
        || sws_getColorspaceDetails(d->sws, &inv, &src_range, &tab,
                                    &dst_range, &bright, &contrast, &sat)
           == -1)
    {
        return -1;
    }
    coef = sws_getCoefficients(f->colorspace);
    return sws_setColorspaceDetails(d->sws, coef, src_range,
                                    sws_getCoefficients(AVCOL_SPC_RGB),
                                    dst_range, bright, contrast, sat) == -1
           ? -1 : 0;
}


/* f scaled to d->rgb ([th][tw][3]); libswscale writes whole SIMD blocks
 * past a row's end, so into padded rows first (as into an AVFrame's) */
static int
convert_timed(clef_video_decoder *d, AVFrame *f, clef_error *err)
{
    uint8_t  *dst[4] = { d->wide, NULL, NULL, NULL };
    int       ls[4] = { d->stride, 0, 0, 0 }, y;

    if (f->width != d->info.width || f->height != d->info.height) {
        return refuse(d, err, "video_invalid",
            "has a frame of %dx%d in a stream of %dx%d", f->width,
            f->height, (int) d->info.width, (int) d->info.height);
    }
    if (d->sws == NULL || f->format != d->conv_fmt
        || (int) f->colorspace != d->conv_cs
        || (int) f->color_range != d->conv_range)
    {
        conv_free(d);
        d->conv_fmt = f->format;
        d->conv_cs = f->colorspace;
        d->conv_range = f->color_range;
        if (timed_setup(d, f) != 0) {
            conv_free(d);
            return refuse(d, err, "video_invalid",
                "cannot be converted to RGB (pixel format %s)",
                av_get_pix_fmt_name(f->format) ? av_get_pix_fmt_name(f->format)
                                               : "unknown");
        }
    }
    if (sws_scale(d->sws, (const uint8_t *const *) f->data, f->linesize, 0,
                  f->height, dst, ls) != d->th)
    {
        return refuse(d, err, "video_invalid", "cannot be converted to RGB");
    }
    for (y = 0; y < d->th; y++) {
        memcpy(d->rgb + (size_t) y * d->tw * 3,
               d->wide + (size_t) y * d->stride, (size_t) d->tw * 3);
    }
    return 0;
}


/* f to d->rgb ([height][width][3] of the info, upright) */
static int
convert(clef_video_decoder *d, AVFrame *f, clef_error *err)
{
    AVFrame   *o;
    uint8_t   *dst[4] = { d->rgb, NULL, NULL, NULL };
    int        ls[4] = { d->info.width * 3, 0, 0, 0 }, y, rc;
    int        ow = d->info.rotation % 180 ? f->height : f->width;
    int        oh = d->info.rotation % 180 ? f->width : f->height;
    int        swscale = d->info.rotation == 0 && f->width % 32 == 0;

    if (ow != d->info.width || oh != d->info.height) {
        return refuse(d, err, "video_invalid",
            "has a frame of %dx%d in a stream of %dx%d", f->width,
            f->height, (int) d->info.width, (int) d->info.height);
    }
    if (f->width != d->conv_w || f->height != d->conv_h
        || f->format != d->conv_fmt || (int) f->colorspace != d->conv_cs
        || (int) f->color_range != d->conv_range || (swscale && d->sws == NULL)
        || (!swscale && d->graph == NULL))
    {
        conv_free(d);
        d->conv_w = f->width;
        d->conv_h = f->height;
        d->conv_fmt = f->format;
        d->conv_cs = f->colorspace;
        d->conv_range = f->color_range;
        if ((swscale ? sws_setup(d, f) : graph_setup(d, f)) != 0) {
            conv_free(d);
            return refuse(d, err, "video_invalid",
                "cannot be converted to RGB (pixel format %s)",
                av_get_pix_fmt_name(f->format) ? av_get_pix_fmt_name(f->format)
                                               : "unknown");
        }
    }
    if (swscale) {
        /* kept while the frames' size, format, matrix and range stay
         * (torchcodec keys its context on the same) */
        if (sws_scale(d->sws, (const uint8_t *const *) f->data, f->linesize,
                      0, f->height, dst, ls) != f->height)
        {
            return refuse(d, err, "video_invalid",
                          "cannot be converted to RGB");
        }
        return 0;
    }

    rc = av_buffersrc_write_frame(d->src, f);
    o = av_frame_alloc();
    if (rc < 0 || o == NULL || av_buffersink_get_frame(d->sink, o) < 0
        || o->width != d->info.width || o->height != d->info.height
        || o->format != AV_PIX_FMT_RGB24)
    {
        av_frame_free(&o);
        return refuse(d, err, "video_invalid", "cannot be converted to RGB");
    }
    for (y = 0; y < o->height; y++) {
        memcpy(d->rgb + (size_t) y * ls[0], o->data[0] + (size_t) y
               * o->linesize[0], (size_t) ls[0]);
    }
    av_frame_free(&o);
    return 0;
}


/* ---- decoding ----------------------------------------------------------- */

int
clef_video_decode_frames(clef_video_decoder *d, const int64_t *indices,
    int32_t n, clef_video_frame_fn fn, void *ctx, clef_error *err)
{
    AVPacket  *pkt = av_packet_alloc();
    AVFrame   *f = av_frame_alloc();
    int64_t    t, decoded = 0, target;
    int32_t    k = 0;
    int        rc, eof = 0, converted, failed = 0;

    if (pkt == NULL || f == NULL) {
        av_packet_free(&pkt);
        av_frame_free(&f);
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "Out of memory.");
    }
    for (k = 0; k < n; k++) {
        if (indices[k] < 0 || indices[k] >= d->info.n_frames
            || (k > 0 && indices[k] < indices[k - 1]))
        {
            av_packet_free(&pkt);
            av_frame_free(&f);
            return clef_error_fail(err, CLEF_E_INTERNAL,
                                   "Video frame indices out of order.");
        }
    }

    k = 0;
    while (k < n && !failed) {
        rc = avcodec_receive_frame(d->dec, f);
        if (rc == 0) {
            decoded++;
            if (decoded > d->info.n_frames + 16
                || check_budget(d, decoded, err) != 0)
            {
                if (decoded > d->info.n_frames + 16) {
                    refuse(d, err, "video_invalid",
                           "cannot be decoded (more frames than packets)");
                }
                failed = 1;
                break;
            }
            t = f->pts != AV_NOPTS_VALUE ? f->pts : f->pkt_dts;
            converted = 0;
            while (k < n) {
                target = d->pts[indices[k]];
                if (t < target) {
                    break;
                }
                if (!converted && convert(d, f, err) != 0) {
                    failed = 1;
                    break;
                }
                converted = 1;
                if (fn(ctx, k, d->rgb, err) != 0) {
                    failed = 1;
                    break;
                }
                k++;
            }
            av_frame_unref(f);
            continue;
        }
        if (rc != AVERROR(EAGAIN) || eof) {
            if (rc != AVERROR_EOF) {
                refuse_av(d, err, "decoding a frame", rc);
            } else {
                refuse(d, err, "video_invalid",
                    "cannot be decoded (frame %lld of %lld is missing: the "
                    "file may be truncated or damaged)",
                    (long long) indices[k], (long long) d->info.n_frames);
            }
            failed = 1;
            break;
        }
        if (clef_clock_seconds() > d->io.deadline) {
            refuse_av(d, err, "decoding", AVERROR_EXIT);
            failed = 1;
            break;
        }
        rc = av_read_frame(d->fmt, pkt);
        if (rc == AVERROR_EOF) {
            eof = 1;
            rc = avcodec_send_packet(d->dec, NULL);
        } else if (rc >= 0) {
            if (pkt->stream_index != d->stream) {
                av_packet_unref(pkt);
                continue;
            }
            rc = avcodec_send_packet(d->dec, pkt);
            av_packet_unref(pkt);
        } else {
            refuse_av(d, err, "reading a packet", rc);
            failed = 1;
            break;
        }
        if (rc < 0) {
            refuse_av(d, err, "decoding a packet", rc);
            failed = 1;
        }
    }
    av_packet_free(&pkt);
    av_frame_free(&f);
    return failed ? -1 : 0;
}


/* One step of decoding: a frame into f (1), or nothing yet after a
 * packet was sent (0), or the end of the stream (2); -1 with err. */
static int
next_frame(clef_video_decoder *d, AVPacket *pkt, AVFrame *f, int *eof,
    clef_error *err)
{
    int  rc;

    for ( ;; ) {
        rc = avcodec_receive_frame(d->dec, f);
        if (rc == 0) {
            return 1;
        }
        if (rc == AVERROR_EOF) {
            return 2;
        }
        if (rc != AVERROR(EAGAIN) || *eof) {
            return refuse_av(d, err, "decoding a frame", rc);
        }
        if (clef_clock_seconds() > d->io.deadline) {
            return refuse_av(d, err, "decoding", AVERROR_EXIT);
        }
        rc = av_read_frame(d->fmt, pkt);
        if (rc == AVERROR_EOF) {
            *eof = 1;
            rc = avcodec_send_packet(d->dec, NULL);
        } else if (rc >= 0) {
            if (pkt->stream_index != d->stream) {
                av_packet_unref(pkt);
                continue;
            }
            rc = avcodec_send_packet(d->dec, pkt);
            av_packet_unref(pkt);
        } else {
            return refuse_av(d, err, "reading a packet", rc);
        }
        if (rc < 0) {
            return refuse_av(d, err, "decoding a packet", rc);
        }
    }
}


int
clef_video_decode_timed(clef_video_decoder *d, clef_video_frame_fn fn,
    void *ctx, clef_error *err)
{
    AVRational  tb = d->fmt->streams[d->stream]->time_base;
    AVPacket   *pkt = av_packet_alloc();
    AVFrame    *f = av_frame_alloc();
    int64_t     decoded = 0;
    int32_t     kept = 0;
    double      t;
    int         rc = 0, eof = 0;

    if (pkt == NULL || f == NULL) {
        av_packet_free(&pkt);
        av_frame_free(&f);
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "Out of memory.");
    }
    d->info.kept = 0;
    for ( ;; ) {
        rc = next_frame(d, pkt, f, &eof, err);
        if (rc != 1) {
            break;
        }
        decoded++;
        if (decoded > d->info.n_frames + 16) {
            rc = refuse(d, err, "video_invalid",
                        "cannot be decoded (more frames than packets)");
            break;
        }
        if (check_budget(d, decoded, err) != 0) {
            rc = -1;
            break;
        }
        /* PyAV's frame.time: float(pts) * num / den; the reference keeps a
         * frame unless it comes more than 1e-6 s before the next step */
        if (f->pts != AV_NOPTS_VALUE) {
            t = (double) f->pts * tb.num / tb.den;
            if (!(t + 1e-6 < (double) kept / d->tconf.fps)) {
                if (convert_timed(d, f, err) != 0
                    || fn(ctx, kept, d->rgb, err) != 0)
                {
                    rc = -1;
                    break;
                }
                kept++;
            }
        }
        av_frame_unref(f);
    }
    av_packet_free(&pkt);
    av_frame_free(&f);
    if (rc != 2) {
        return -1;
    }
    if (kept == 0) {
        return refuse(d, err, "video_invalid", "has no decodable frames");
    }
    d->info.kept = kept;
    return 0;
}


void
clef_video_close(clef_video_decoder *d)
{
    if (d == NULL) {
        return;
    }
    conv_free(d);
    avcodec_free_context(&d->dec);
    avformat_close_input(&d->fmt);
    clef_av_memio_free(&d->pb);
    free(d->pts);
    free(d->rgb);
    av_free(d->wide);
    free(d);
}
