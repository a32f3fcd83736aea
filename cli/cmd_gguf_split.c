/*
 * clef gguf-split [--split-max-tensors N] [--no-tensor-first-split] IN
 * PREFIX: IN (a GGUF, or the first part of a split one) written as
 * PREFIX-00001-of-0000K.gguf ..., the parts llama-gguf-split --split
 * writes with the same options (model/gguf_split.h).  For the tests and
 * for a model to be published split; `clef decide` and `clef_model` read
 * the parts from the first.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "commands.h"
#include "model/gguf.h"
#include "model/gguf_split.h"

static void
split_usage(FILE *f)
{
    fprintf(f,
        "usage: clef gguf-split [--split-max-tensors N] [--no-tensor-first-split]\n"
        "                       IN.gguf PREFIX\n"
        "\n"
        "Writes IN as PREFIX-00001-of-0000K.gguf ... as llama-gguf-split --split\n"
        "does: the metadata in the first part, at most N tensors a part (128),\n"
        "split.no, split.count and split.tensors.count in every part.\n"
        "\n"
        "  --split-max-tensors N    tensors per part\n"
        "  --no-tensor-first-split  the first part holds the metadata only\n"
        "  --help                   this text\n");
}

int
clef_cmd_gguf_split(int argc, char **argv)
{
    clef_gguf   *g;
    clef_error   err;
    const char  *in = NULL, *prefix = NULL;
    char        *end;
    long         max = 128;
    int          i, first_empty = 0, parts;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0) {
            split_usage(stdout);
            return 0;
        }
        if (strcmp(argv[i], "--split-max-tensors") == 0 && i + 1 < argc) {
            max = strtol(argv[++i], &end, 10);
            if (*end != '\0' || max < 1) {
                fprintf(stderr, "clef gguf-split: --split-max-tensors takes a"
                        " positive number, not '%s'\n", argv[i]);
                return 2;
            }
        } else if (strcmp(argv[i], "--no-tensor-first-split") == 0) {
            first_empty = 1;
        } else if (argv[i][0] != '-' && in == NULL) {
            in = argv[i];
        } else if (argv[i][0] != '-' && prefix == NULL) {
            prefix = argv[i];
        } else {
            split_usage(stderr);
            return 2;
        }
    }
    if (prefix == NULL) {
        split_usage(stderr);
        return 2;
    }
    g = clef_gguf_open(in, 0, &err);
    if (g == NULL
        || clef_gguf_split_write(g, prefix, (size_t) max, first_empty, &parts,
                                 &err) != 0)
    {
        fprintf(stderr, "clef gguf-split: %s\n", err.message);
        clef_gguf_close(g);
        return 1;
    }
    printf("%d parts: %s-00001-of-%05d.gguf ...\n", parts, prefix, parts);
    clef_gguf_close(g);
    return 0;
}
