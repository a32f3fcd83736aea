/*
 * build/clef: the command-line face of libclef.  The subcommands are a
 * stable contract used by the tests and the fixture scripts.
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"

typedef struct {
    const char   *name;
    clef_cmd_fn   fn;
    const char   *summary;
} clef_command;

static void
usage(FILE *f, const clef_command *cmds, size_t n)
{
    size_t  i;

    fprintf(f, "usage: clef COMMAND [ARGS...]   (clef COMMAND --help for details)\n\n"
               "commands:\n");
    for (i = 0; i < n; i++) {
        if (cmds[i].fn != NULL) {
            fprintf(f, "  %-9s %s\n", cmds[i].name, cmds[i].summary);
        }
    }
}

int
main(int argc, char **argv)
{
    size_t  i;

    const clef_command  cmds[] = {
        { "tokenize", clef_cmd_tokenize,
          "stdin {\"text\": ...} lines -> {\"ids\": [...]} lines" },
        { "encode", clef_cmd_encode,
          "stdin System One requests -> input_ids and spans" },
        { "render", clef_cmd_render,
          "stdin JSON values -> Python json.dumps rendering" },
        { "mkmodel", clef_cmd_mkmodel,
          "write a random Clef checkpoint in the release layout" },
        { "decide", clef_cmd_decide,
          "stdin System One requests -> System One responses" },
        { "image", clef_cmd_image,
          "image files -> what the engine makes of them (grid, tokens; "
          "--bench: images/s, --model: vision tower patches/s)" },
        { "video", clef_cmd_video,
          "video files -> frames sampled, grid, timestamps, tokens "
          "(--bench: seconds per video)" },
        { "audio", clef_cmd_audio,
          "audio files -> 16 kHz samples, log-mel features, tokens "
          "(--bench: seconds per record's features)" },
        { "bench", clef_cmd_bench,
          "time the backbone and the head" },
        { "gguf-split", clef_cmd_gguf_split,
          "a GGUF written as llama-gguf-split's parts" },
    };
    const size_t  n = sizeof(cmds) / sizeof(cmds[0]);

    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout, cmds, n);
        return argc < 2 ? 2 : 0;
    }

    for (i = 0; i < n; i++) {
        if (cmds[i].fn != NULL && strcmp(argv[1], cmds[i].name) == 0) {
            return cmds[i].fn(argc - 1, argv + 1);
        }
    }

    fprintf(stderr, "clef: unknown command '%s'\n", argv[1]);
    usage(stderr, cmds, n);
    return 2;
}
