/*
 * File paths.
 */
#ifndef CLEF_PATH_H
#define CLEF_PATH_H

/* "dir/name", malloc'ed; NULL when out of memory. */
char *clef_path_join(const char *dir, const char *name);

#endif
