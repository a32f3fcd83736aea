/*
 * The worker's look at a video's container (media/video_probe.c), read
 * without a codec, on every clip of t/fixtures/video/cases.jsonl (written
 * by t/reference/gen_video_fixtures.py from the reference's decode): the
 * family its first bytes say, one video track in one of the five codecs,
 * and wherever the header states them, the stored frame size (the clip's
 * size, or its transpose for a quarter-turn rotation) and the sample
 * count (the frames the reference decodes).  QuickTime files (a data
 * handler in minf beside the media handler) and Matroska's longest codec
 * id (V_MPEGH/ISO/HEVC) among them.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "media/video_input.h"
#include "slurp.h"


int
main(void)
{
    clef_video_header   h;
    clef_video_format   f;
    json_t             *c, *size;
    char                path[1024], line[1 << 16], *p, *ext;
    FILE               *in;
    size_t              len;
    long long           w, ht, frames;
    int                 n = 0, ok, mov = 0, hevc_mkv = 0;

    snprintf(path, sizeof(path), "%s/video/cases.jsonl", check_fixtures());
    in = fopen(path, "r");
    CHECK(in != NULL, "%s opens", path);
    while (in != NULL && fgets(line, sizeof(line), in) != NULL) {
        c = json_loads(line, 0, NULL);
        if (c == NULL || json_object_get(c, "file") == NULL
            || json_object_get(c, "size") == NULL)
        {
            json_decref(c);
            continue;
        }
        snprintf(path, sizeof(path), "%s/video/%s", check_fixtures(),
                 json_string_value(json_object_get(c, "file")));
        p = slurp(path, &len);
        size = json_object_get(c, "size");
        w = json_integer_value(json_array_get(size, 0));
        ht = json_integer_value(json_array_get(size, 1));
        frames = json_integer_value(json_object_get(c, "frames"));
        ext = strrchr(path, '.') + 1;
        memset(&h, 0, sizeof(h));
        f = p != NULL ? clef_video_sniff((uint8_t *) p, len) : CLEF_VIDEO_NONE;
        ok = f == (strcmp(ext, "mp4") == 0 || strcmp(ext, "mov") == 0
                   ? CLEF_VIDEO_MP4 : CLEF_VIDEO_MKV)
             && clef_video_probe(f, (uint8_t *) p, len, &h) == 0
             && h.video_tracks == 1 && h.supported == 1
             && (h.width == 0 || (h.width == w && h.height == ht)
                 || (h.width == ht && h.height == w))
             && (h.frames == 0 || h.frames == frames);
        CHECK(ok, "%s: %s, one video track in %s, %dx%d, %lld samples "
              "(the reference: %lldx%lld, %lld frames)",
              json_string_value(json_object_get(c, "name")),
              f == CLEF_VIDEO_MP4 ? "MP4" : "Matroska", h.codec, h.width,
              h.height, (long long) h.frames, w, ht, frames);
        mov += ok && strcmp(ext, "mov") == 0;
        hevc_mkv += ok && strcmp(h.codec, "V_MPEGH/ISO/HEVC") == 0;
        n++;
        free(p);
        json_decref(c);
    }
    if (in != NULL) {
        fclose(in);
    }
    CHECK(n >= 20 && mov >= 2 && hevc_mkv >= 1, "%d clips probed, %d "
          "QuickTime, %d HEVC in Matroska", n, mov, hevc_mkv);
    return check_done();
}
