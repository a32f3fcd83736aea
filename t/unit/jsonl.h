/*
 * A JSON Lines file read by the C unit tests (the reference's fixtures,
 * clef decide's output).
 */
#ifndef CLEF_TEST_JSONL_H
#define CLEF_TEST_JSONL_H

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

/* An array of the file's lines parsed, null for a line that does not
 * parse; empty when the file does not open. */
static json_t * __attribute__((unused))
read_jsonl(const char *path)
{
    FILE          *f = fopen(path, "r");
    json_t        *arr = json_array(), *v;
    char          *line = NULL;
    size_t         cap = 0;
    json_error_t   jerr;

    if (f == NULL) {
        return arr;
    }
    while (getline(&line, &cap, f) > 0) {
        v = json_loads(line, JSON_DECODE_ANY, &jerr);
        json_array_append_new(arr, v ? v : json_null());
    }
    free(line);
    fclose(f);
    return arr;
}

#endif
