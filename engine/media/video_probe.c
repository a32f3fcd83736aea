/*
 * What a video file's container says of it, read without a codec (see
 * video_input.h): the worker's cheap look before anything is queued.
 *
 * ISO base media (MP4, QuickTime): the boxes to moov, then mvhd (the
 * movie's duration), and per trak: hdlr (is it video), mdhd (its
 * duration), tkhd and the stsd sample entry (size, codec), stsz / stz2
 * (its sample count: the packets the decoder's scan counts).
 * Matroska (WebM): the EBML header's DocType, then the Segment's Info
 * (TimestampScale, Duration) and Tracks (TrackType, CodecID, Video's
 * PixelWidth and PixelHeight), up to the first Cluster.  Matroska states
 * no frame count.
 *
 * Every length is checked against what is left of its parent before it is
 * used; nesting and track counts are bounded.  What cannot be read is left
 * unknown (0) rather than refused: the engine's decoder then decides.
 */
#include "media/video_input.h"

#include <math.h>
#include <string.h>

#define MAX_DEPTH   8
#define MAX_TRACKS  64

typedef struct {
    const uint8_t  *p;
    size_t          len;
} span;

/* a track as its header says */
typedef struct {
    int      video;
    int      supported;
    char     codec[24];         /* "V_MPEGH/ISO/HEVC" and its NUL fit */
    int64_t  width, height, frames;
    double   seconds;
} track;

static const char *const  mp4_codecs[] = {
    "avc1", "avc3", "hvc1", "hev1", "vp08", "vp09", "av01", NULL
};
static const char *const  mkv_codecs[] = {
    "V_MPEG4/ISO/AVC", "V_MPEGH/ISO/HEVC", "V_VP8", "V_VP9", "V_AV1", NULL
};


static uint64_t
be(const uint8_t *p, int n)
{
    uint64_t  v = 0;
    int       i;

    for (i = 0; i < n; i++) {
        v = v << 8 | p[i];
    }
    return v;
}


static int
listed(const char *name, const char *const *list)
{
    for (; *list != NULL; list++) {
        if (strcmp(name, *list) == 0) {
            return 1;
        }
    }
    return 0;
}


static void
add_track(clef_video_header *h, const track *t)
{
    if (!t->video) {
        return;
    }
    if (h->video_tracks == 0) {
        memcpy(h->codec, t->codec, sizeof(h->codec));
    }
    h->video_tracks++;
    h->supported += t->supported;
    /* the largest of them: what the limits are checked against */
    if (t->width * t->height > (int64_t) h->width * h->height) {
        h->width = (int32_t) (t->width < INT32_MAX ? t->width : INT32_MAX);
        h->height = (int32_t) (t->height < INT32_MAX ? t->height : INT32_MAX);
    }
    if (t->frames > h->frames) {
        h->frames = t->frames;
    }
    if (t->seconds * 1e6 > (double) h->duration_us) {
        h->duration_us = t->seconds * 1e6 < 9e18 ? (int64_t) (t->seconds * 1e6)
                                                 : INT64_MAX;
    }
}


/* ---- ISO base media ------------------------------------------------------ */

/* The next box of s: its type and body; 0 at the end, -1 when its size
 * leaves s. */
static int
box(span *s, char type[5], span *body)
{
    uint64_t  size;
    size_t    head = 8;

    if (s->len < 8) {
        return s->len == 0 ? 0 : -1;
    }
    size = be(s->p, 4);
    memcpy(type, s->p + 4, 4);
    type[4] = '\0';
    if (size == 1) {
        if (s->len < 16) {
            return -1;
        }
        size = be(s->p + 8, 8);
        head = 16;
    } else if (size == 0) {
        size = s->len;
    }
    if (size < head || size > s->len) {
        return -1;
    }
    body->p = s->p + head;
    body->len = (size_t) size - head;
    s->p += size;
    s->len -= (size_t) size;
    return 1;
}


/* A full box's (version, then a duration field of 4 or 8 bytes after
 * skip bytes of times): mvhd and mdhd. */
static double
timed(const span *b)
{
    int       v1;
    uint64_t  scale, dur;

    if (b->len < 4) {
        return 0;
    }
    v1 = b->p[0] == 1;
    if (b->len < (size_t) (v1 ? 4 + 28 : 4 + 16)) {
        return 0;
    }
    scale = be(b->p + 4 + (v1 ? 16 : 8), 4);
    dur = be(b->p + 4 + (v1 ? 20 : 12), v1 ? 8 : 4);
    if (scale == 0 || dur == UINT64_MAX || (!v1 && dur == UINT32_MAX)) {
        return 0;
    }
    return (double) dur / (double) scale;
}


static void
stbl(span s, track *t)
{
    span  b, e;
    char  type[5];

    while (box(&s, type, &b) > 0) {
        if (strcmp(type, "stsd") == 0 && b.len >= 8 && be(b.p + 4, 4) >= 1) {
            e.p = b.p + 8;
            e.len = b.len - 8;
            if (box(&e, t->codec, &b) > 0 && b.len >= 28) {
                t->supported = listed(t->codec, mp4_codecs);
                t->width = (int64_t) be(b.p + 24, 2);
                t->height = (int64_t) be(b.p + 26, 2);
            }
        } else if (strcmp(type, "stsz") == 0 && b.len >= 12) {
            t->frames = (int64_t) be(b.p + 8, 4);
        } else if (strcmp(type, "stz2") == 0 && b.len >= 12) {
            t->frames = (int64_t) be(b.p + 8, 4);
        }
    }
}


/* The boxes of a trak, down to stbl (containers: mdia, minf). */
static void
trak(span s, track *t, int depth)
{
    span  b;
    char  type[5];

    while (depth < MAX_DEPTH && box(&s, type, &b) > 0) {
        if (strcmp(type, "mdia") == 0 || strcmp(type, "minf") == 0) {
            trak(b, t, depth + 1);
        } else if (strcmp(type, "hdlr") == 0 && b.len >= 12
                   && memcmp(b.p + 4, "dhlr", 4) != 0)
        {
            /* the media handler (mdia's); a QuickTime minf has a data
             * handler too ("dhlr", subtype "alis"), which says nothing
             * of the track's kind */
            t->video = memcmp(b.p + 8, "vide", 4) == 0;
        } else if (strcmp(type, "mdhd") == 0) {
            t->seconds = timed(&b);
        } else if (strcmp(type, "stbl") == 0) {
            stbl(b, t);
        }
    }
}


static int
probe_mp4(span s, clef_video_header *h)
{
    span    b, m;
    track   t;
    char    type[5];
    double  movie;
    int     rc, n = 0;

    while ((rc = box(&s, type, &b)) > 0) {
        if (strcmp(type, "moov") == 0) {
            break;
        }
    }
    if (rc <= 0) {
        return -1;
    }
    h->complete = 1;
    while (box(&b, type, &m) > 0 && n < MAX_TRACKS) {
        if (strcmp(type, "mvhd") == 0) {
            movie = timed(&m);
            if (movie * 1e6 > (double) h->duration_us) {
                h->duration_us = movie * 1e6 < 9e18 ? (int64_t) (movie * 1e6)
                                                    : INT64_MAX;
            }
        } else if (strcmp(type, "trak") == 0) {
            memset(&t, 0, sizeof(t));
            trak(m, &t, 0);
            add_track(h, &t);
            n++;
        }
    }
    return 0;
}


/* ---- Matroska ------------------------------------------------------------ */

#define EBML_UNKNOWN  UINT64_MAX

/* A variable-length integer: an element id (marker kept) or a size
 * (marker dropped; all ones: unknown).  0 bytes on a bad one. */
static int
vint(const span *s, size_t at, int keep, uint64_t *v)
{
    int       n, i;
    uint8_t   first;
    uint64_t  x, ones;

    if (at >= s->len) {
        return 0;
    }
    first = s->p[at];
    for (n = 1; n <= 8 && !(first & (0x80 >> (n - 1))); n++) {
    }
    if (n > 8 || at + (size_t) n > s->len) {
        return 0;
    }
    x = keep ? first : first & (0xff >> n);
    for (i = 1; i < n; i++) {
        x = x << 8 | s->p[at + (size_t) i];
    }
    ones = (UINT64_C(1) << (7 * n)) - 1;
    *v = !keep && x == ones ? EBML_UNKNOWN : x;
    return n;
}


/* The next element of s: its id and body (an unknown size runs to the end
 * of s); 0 at the end, -1 when it leaves s. */
static int
element(span *s, uint64_t *id, span *body)
{
    uint64_t  size;
    int       a, b;

    if (s->len == 0) {
        return 0;
    }
    a = vint(s, 0, 1, id);
    b = a > 0 ? vint(s, (size_t) a, 0, &size) : 0;
    if (a == 0 || b == 0) {
        return -1;
    }
    body->p = s->p + a + b;
    body->len = s->len - (size_t) (a + b);
    if (size != EBML_UNKNOWN) {
        if (size > body->len) {
            return -1;
        }
        body->len = (size_t) size;
    }
    s->p = body->p + body->len;
    s->len -= (size_t) (a + b) + body->len;
    return 1;
}


static double
ebml_float(const span *b)
{
    uint32_t  f32;
    uint64_t  f64;
    float     f;
    double    d;

    if (b->len == 4) {
        f32 = (uint32_t) be(b->p, 4);
        memcpy(&f, &f32, 4);
        return f;
    }
    if (b->len == 8) {
        f64 = be(b->p, 8);
        memcpy(&d, &f64, 8);
        return d;
    }
    return 0;
}


static void
mkv_track(span s, track *t)
{
    span      b, v;
    uint64_t  id, id2;

    while (element(&s, &id, &b) > 0) {
        if (id == 0x83 && b.len >= 1 && b.len <= 8) {           /* TrackType */
            t->video = be(b.p, (int) b.len) == 1;
        } else if (id == 0x86 && b.len < sizeof(t->codec)) {    /* CodecID */
            memcpy(t->codec, b.p, b.len);
            t->codec[b.len] = '\0';
            t->supported = listed(t->codec, mkv_codecs);
        } else if (id == 0xe0) {                                /* Video */
            while (element(&b, &id2, &v) > 0) {
                if (id2 == 0xb0 && v.len >= 1 && v.len <= 8) {
                    t->width = (int64_t) (be(v.p, (int) v.len) & INT32_MAX);
                } else if (id2 == 0xba && v.len >= 1 && v.len <= 8) {
                    t->height = (int64_t) (be(v.p, (int) v.len) & INT32_MAX);
                }
            }
        }
    }
}


static int
probe_mkv(span s, clef_video_header *h)
{
    span      b, c, e;
    track     t[MAX_TRACKS];
    uint64_t  id, id2, scale = 1000000;
    double    duration = 0;
    int       n = 0, k;

    /* the EBML header, then the Segment */
    if (element(&s, &id, &b) <= 0 || id != 0x1a45dfa3) {
        return -1;
    }
    while (element(&s, &id, &b) > 0 && id != 0x18538067) {
    }
    if (id != 0x18538067) {
        return -1;
    }
    while (element(&b, &id, &c) > 0 && id != 0x1f43b675) {   /* Cluster */
        if (id == 0x1549a966) {                              /* Info */
            while (element(&c, &id2, &e) > 0) {
                if (id2 == 0x2ad7b1 && e.len >= 1 && e.len <= 8) {
                    scale = be(e.p, (int) e.len);
                } else if (id2 == 0x4489) {
                    duration = ebml_float(&e);
                }
            }
        } else if (id == 0x1654ae6b) {                       /* Tracks */
            h->complete = 1;
            while (element(&c, &id2, &e) > 0 && n < MAX_TRACKS) {
                if (id2 == 0xae) {
                    memset(&t[n], 0, sizeof(t[n]));
                    mkv_track(e, &t[n]);
                    n++;
                }
            }
        }
    }
    /* Matroska's duration is the segment's, in TimestampScale units */
    for (k = 0; k < n; k++) {
        if (isfinite(duration) && duration > 0) {
            t[k].seconds = duration * (double) scale / 1e9;
        }
        add_track(h, &t[k]);
    }
    return 0;
}


clef_video_format
clef_video_sniff(const uint8_t *p, size_t len)
{
    static const char *const  boxes[] = {
        "ftyp", "moov", "mdat", "free", "skip", "wide", "pnot", "uuid", NULL
    };
    char                      type[5];

    if (len >= 4 && be(p, 4) == 0x1a45dfa3) {
        return CLEF_VIDEO_MKV;
    }
    if (len >= 8) {
        memcpy(type, p + 4, 4);
        type[4] = '\0';
        if (listed(type, boxes)) {
            return CLEF_VIDEO_MP4;
        }
    }
    return CLEF_VIDEO_NONE;
}


int
clef_video_probe(clef_video_format f, const uint8_t *p, size_t len,
    clef_video_header *h)
{
    span  s = { p, len };

    memset(h, 0, sizeof(*h));
    return f == CLEF_VIDEO_MP4 ? probe_mp4(s, h)
           : f == CLEF_VIDEO_MKV ? probe_mkv(s, h) : -1;
}
