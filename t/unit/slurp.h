/*
 * A whole fixture file in memory, for the C unit tests.
 */
#ifndef CLEF_TEST_SLURP_H
#define CLEF_TEST_SLURP_H

#include <stdio.h>
#include <stdlib.h>

/* The bytes of path (malloc'ed, one spare byte for a terminator the
 * caller may write) and their count in *len; NULL when unreadable. */
static char * __attribute__((unused))
slurp(const char *path, size_t *len)
{
    FILE  *f = fopen(path, "rb");
    char  *p;
    long   n;

    if (f == NULL) {
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    p = n < 0 ? NULL : malloc((size_t) n + 1);
    if (p != NULL && fread(p, 1, (size_t) n, f) != (size_t) n) {
        free(p);
        p = NULL;
    }
    fclose(f);
    *len = n < 0 ? 0 : (size_t) n;
    return p;
}

#endif
