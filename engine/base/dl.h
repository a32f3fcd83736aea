/*
 * Loading a shared library of ours that is installed beside the object
 * the calling code is linked into (the nginx module's .so, build/clef, or
 * libclef_engine.so), then by the dynamic linker's own search: how the
 * engine process finds libclef_engine.so and the engine finds
 * libclef_cuda.so, wherever `make install` or a build put the three.
 */
#ifndef CLEF_DL_H
#define CLEF_DL_H

#include <stddef.h>

/* dlopen(RTLD_NOW | RTLD_LOCAL) of file: first in the folder of the object
 * that holds anchor, then by name.  NULL with why[0..size) filled: the
 * nearby file's error when there was one, as it is the more useful. */
void *clef_dlopen_beside(const void *anchor, const char *file, char *why,
    size_t size);

/* The path file would have beside anchor's object into path[0..size);
 * -1 when the object cannot be named. */
int   clef_path_beside(const void *anchor, const char *file, char *path,
    size_t size);

#endif
