/*
 * Base64 decoding (see base64.h): one table lookup per character, four
 * characters to three bytes.
 */
#include "media/base64.h"

/* 0-63: the character's value; 64: whitespace; 65: '='; 255: invalid */
#define B64_SPACE  64
#define B64_PAD    65
#define B64_BAD    255

static const uint8_t *
b64_table(void)
{
    static uint8_t  t[256];
    static int      ready;
    const char     *alpha =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    int             i;

    /* idempotent: two threads racing here write the same bytes */
    if (!ready) {
        for (i = 0; i < 256; i++) {
            t[i] = B64_BAD;
        }
        for (i = 0; i < 64; i++) {
            t[(unsigned char) alpha[i]] = (uint8_t) i;
        }
        t[' '] = B64_SPACE;
        t['\t'] = B64_SPACE;
        t['\r'] = B64_SPACE;
        t['\n'] = B64_SPACE;
        t['='] = B64_PAD;
        ready = 1;
    }
    return t;
}


size_t
clef_base64_max_decoded(size_t len)
{
    return len / 4 * 3 + 3;
}


int64_t
clef_base64_decode(const char *s, size_t len, uint8_t *out, size_t *bad,
    const char **why)
{
    const uint8_t  *t = b64_table();
    uint32_t        acc = 0;
    size_t          i, n = 0;
    int             q = 0, pad = 0;
    uint8_t         v;

    for (i = 0; i < len; i++) {
        /* whole quanta of alphabet characters, the common case, four at a
         * time: the worker decodes up to 12 MB of them per request */
        if (q == 0) {
            while (i + 4 <= len) {
                uint8_t  a = t[(unsigned char) s[i]], b = t[(unsigned char) s[i + 1]];
                uint8_t  c = t[(unsigned char) s[i + 2]], d = t[(unsigned char) s[i + 3]];

                if ((a | b | c | d) & 0xc0) {
                    break;          /* whitespace, '=' or an error: below */
                }
                out[n] = (uint8_t) (a << 2 | b >> 4);
                out[n + 1] = (uint8_t) (b << 4 | c >> 2);
                out[n + 2] = (uint8_t) (c << 6 | d);
                n += 3;
                i += 4;
            }
            if (i == len) {
                break;
            }
        }
        v = t[(unsigned char) s[i]];

        if (v == B64_SPACE) {
            continue;
        }
        if (v == B64_BAD) {
            *bad = i;
            *why = "a character outside the base64 alphabet";
            return -1;
        }
        if (v == B64_PAD) {
            /* "xx==" or "xxx=": padding fills the rest of the last quantum */
            if (q < 2) {
                *bad = i;
                *why = "'=' where no padding can be";
                return -1;
            }
            pad++;
            q++;
            if (q == 4) {
                goto quantum;
            }
            continue;
        }
        if (pad) {
            *bad = i;
            *why = "data after the '=' padding";
            return -1;
        }

        acc = acc << 6 | v;
        q++;
        if (q < 4) {
            continue;
        }

    quantum:
        if (pad == 0) {
            out[n++] = (uint8_t) (acc >> 16);
            out[n++] = (uint8_t) (acc >> 8);
            out[n++] = (uint8_t) acc;
        } else {
            /* pad 2: 12 bits carry one byte; pad 1: 18 bits carry two */
            acc <<= 6 * pad;
            out[n++] = (uint8_t) (acc >> 16);
            if (pad == 1) {
                out[n++] = (uint8_t) (acc >> 8);
            }
            /* anything after a padded quantum is an error, but whitespace */
            for (i++; i < len; i++) {
                if (t[(unsigned char) s[i]] != B64_SPACE) {
                    *bad = i;
                    *why = "data after the '=' padding";
                    return -1;
                }
            }
            return (int64_t) n;
        }
        acc = 0;
        q = 0;
    }

    if (q != 0) {
        *bad = len;
        *why = "incorrect padding (the text does not end on a whole "
               "4-character group)";
        return -1;
    }
    return (int64_t) n;
}
