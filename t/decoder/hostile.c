/*
 * A hostile decode child, for the tests only (build/t/clef-decoder-hostile,
 * clef-decoder built with this file and -DCLEF_DECODER_HOSTILE): what a
 * decoder taken over by a file could answer the engine, chosen by the
 * file itself.  An image whose bytes end with "HOSTILE:" and a mode gets,
 * instead of its decoding:
 *
 *   status   a refusal of status 418, type image_teapot (outside the
 *            closed list of what a decoder may refuse with)
 *   kind     a 400 of another kind's type (video_invalid)
 *   size     success with a 100000 x 100000 image: 30 GB of pixels said
 *            to follow (more than the request allows)
 *   short    success with the right header and half its pixels, then the
 *            end of its socket
 *   hang     nothing, ever: it waits to be killed
 *   spam     5000 lines on stderr, then the refusal of `status`
 *
 * Any other file is decoded as the real child does.  The engine must
 * answer each of these as the file's 400 (a misbehaving decoder was made
 * to misbehave by its file), never allocate what it is told, never hang.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "media/decoder_wire.h"
#include "media/kinds.h"

int clef_hostile_child(const clef_dec_request *rq, const uint8_t *data);


static const char *
mode_of(const clef_dec_request *rq, const uint8_t *data)
{
    static char  mode[16];
    const char  *tag = "HOSTILE:";
    size_t       n = strlen(tag), len = (size_t) rq->len, i;

    for (i = len > 24 ? len - 24 : 0; i + n <= len; i++) {
        if (memcmp(data + i, tag, n) == 0) {
            snprintf(mode, sizeof(mode), "%.*s", (int) (len - i - n),
                     (const char *) data + i + n);
            mode[strcspn(mode, "\n")] = '\0';
            return mode;
        }
    }
    return NULL;
}


static void
say(const clef_dec_result *r, const void *payload, size_t len)
{
    if (write(CLEF_DEC_FD, r, sizeof(*r)) != (ssize_t) sizeof(*r)
        || (len > 0 && write(CLEF_DEC_FD, payload, len) != (ssize_t) len))
    {
        _exit(6);
    }
}


/* Returns 0 when the file asks for nothing hostile; else never returns. */
int
clef_hostile_child(const clef_dec_request *rq, const uint8_t *data)
{
    static uint8_t    pixels[64 * 64 * 3];
    clef_dec_result   r;
    const char       *mode = rq->kind == CLEF_MEDIA_IMAGE ? mode_of(rq, data)
                                                          : NULL;
    int               i;

    if (mode == NULL) {
        return 0;
    }
    memset(&r, 0, sizeof(r));
    r.magic = CLEF_DEC_MAGIC;
    if (strcmp(mode, "spam") == 0) {
        for (i = 0; i < 5000; i++) {
            fprintf(stderr, "hostile decoder line %d: \x1b[31mred\x1b[0m\n",
                    i);
        }
        fflush(stderr);
        mode = "status";
    }
    if (strcmp(mode, "status") == 0 || strcmp(mode, "kind") == 0) {
        r.ok = 0;
        r.err.status = strcmp(mode, "status") == 0 ? 418 : 400;
        snprintf(r.err.type, sizeof(r.err.type), "%s",
                 strcmp(mode, "status") == 0 ? "image_teapot"
                                             : "video_invalid");
        snprintf(r.err.message, sizeof(r.err.message), "I'm a teapot.");
        say(&r, NULL, 0);
        _exit(0);
    }
    if (strcmp(mode, "size") == 0 || strcmp(mode, "short") == 0) {
        r.ok = 1;
        r.width = strcmp(mode, "size") == 0 ? 100000 : 64;
        r.height = r.width;
        r.rgb_len = (uint64_t) r.width * (uint64_t) r.height * 3;
        say(&r, pixels, strcmp(mode, "short") == 0 ? sizeof(pixels) / 2 : 0);
        _exit(0);
    }
    for ( ;; ) {
        sleep(1);       /* pause() is not among what the sandbox allows */
    }
}
