/*
 * What an audio file's first bytes say, with no codec (see audio_input.h):
 * its family, and for WAV and FLAC its length.
 */
#include "media/audio_input.h"

#include <string.h>


static uint32_t
le32(const uint8_t *p)
{
    return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16
           | (uint32_t) p[3] << 24;
}


static uint16_t
le16(const uint8_t *p)
{
    return (uint16_t) (p[0] | p[1] << 8);
}


/* An ID3v2 tag's size with its header, 0 when there is none. */
static size_t
id3_size(const uint8_t *p, size_t len)
{
    if (len < 10 || memcmp(p, "ID3", 3) != 0 || ((p[6] | p[7] | p[8] | p[9])
                                                 & 0x80))
    {
        return 0;
    }
    return 10 + ((size_t) p[6] << 21 | (size_t) p[7] << 14
                 | (size_t) p[8] << 7 | p[9]) + (p[5] & 0x10 ? 10 : 0);
}


clef_audio_format
clef_audio_sniff(const uint8_t *p, size_t len)
{
    size_t  id3;

    if (len >= 12 && (memcmp(p, "RIFF", 4) == 0 || memcmp(p, "RIFX", 4) == 0)
        && memcmp(p + 8, "WAVE", 4) == 0)
    {
        return CLEF_AUDIO_WAV;
    }
    if (len >= 4 && memcmp(p, "OggS", 4) == 0) {
        return CLEF_AUDIO_OGG;
    }
    if (len >= 12 && memcmp(p + 4, "ftyp", 4) == 0) {
        return CLEF_AUDIO_MP4;
    }
    if (len >= 4 && p[0] == 0x1a && p[1] == 0x45 && p[2] == 0xdf
        && p[3] == 0xa3)
    {
        return CLEF_AUDIO_WEBM;
    }
    /* FLAC and MP3 may follow an ID3v2 tag */
    id3 = id3_size(p, len);
    if (id3 > 0) {
        return id3 < len && len - id3 >= 4 && memcmp(p + id3, "fLaC", 4) == 0
               ? CLEF_AUDIO_FLAC : CLEF_AUDIO_MP3;
    }
    if (len >= 4 && memcmp(p, "fLaC", 4) == 0) {
        return CLEF_AUDIO_FLAC;
    }
    /* a frame sync: 11 bits for MPEG audio (layer bits not 00), 12 for
     * ADTS AAC (layer bits 00) */
    if (len >= 2 && p[0] == 0xff && (p[1] & 0xe0) == 0xe0) {
        return (p[1] & 0xf6) == 0xf0 ? CLEF_AUDIO_AAC
               : (p[1] & 0x06) != 0 ? CLEF_AUDIO_MP3 : CLEF_AUDIO_NONE;
    }
    return CLEF_AUDIO_NONE;
}


/* RIFF/WAVE: the fmt chunk's channels, rate and block size, the data
 * chunk's bytes (as many as follow it at most) */
static void
probe_wav(const uint8_t *p, size_t len, clef_audio_header *h)
{
    size_t    at = 12, size, avail;
    uint32_t  rate = 0, block = 0, ch = 0;

    if (memcmp(p, "RIFF", 4) != 0) {
        return;
    }
    while (at + 8 <= len) {
        size = le32(p + at + 4);
        avail = len - at - 8;
        if (memcmp(p + at, "fmt ", 4) == 0 && size >= 16 && avail >= 16) {
            ch = le16(p + at + 10);
            rate = le32(p + at + 12);
            block = le16(p + at + 20);
        } else if (memcmp(p + at, "data", 4) == 0) {
            if (rate > 0 && block > 0 && ch > 0) {
                h->frames = (int64_t) ((size < avail ? size : avail) / block);
                h->rate = (int32_t) (rate < INT32_MAX ? rate : 0);
                h->channels = (int32_t) ch;
            }
            return;
        }
        if (size > avail) {
            return;
        }
        at += 8 + size + (size & 1);
    }
}


/* fLaC then metadata blocks; STREAMINFO first: rate 20 bits, channels 3,
 * bits per sample 5, total samples 36 */
static void
probe_flac(const uint8_t *p, size_t len, clef_audio_header *h)
{
    const uint8_t  *s;
    size_t          id3 = id3_size(p, len);

    if (id3 >= len) {
        return;
    }
    p += id3;
    len -= id3;
    if (len < 8 + 34 || (p[4] & 0x7f) != 0) {
        return;
    }
    s = p + 8;
    h->rate = (int32_t) ((uint32_t) s[10] << 12 | (uint32_t) s[11] << 4
                         | s[12] >> 4);
    h->channels = ((s[12] >> 1) & 7) + 1;
    h->frames = (int64_t) (s[13] & 0x0f) << 32 | (int64_t) s[14] << 24
                | (int64_t) s[15] << 16 | (int64_t) s[16] << 8 | s[17];
    if (h->rate == 0) {
        h->frames = 0;
    }
}


void
clef_audio_probe(clef_audio_format f, const uint8_t *p, size_t len,
    clef_audio_header *h)
{
    memset(h, 0, sizeof(*h));
    if (f == CLEF_AUDIO_WAV) {
        probe_wav(p, len, h);
    } else if (f == CLEF_AUDIO_FLAC) {
        probe_flac(p, len, h);
    }
}
