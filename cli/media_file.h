/*
 * What the media commands (clef audio, clef video) share: a file read
 * whole, and the JSON lines they print (a string as the renderer writes
 * it, a file's refusal).
 */
#ifndef CLEF_CLI_MEDIA_FILE_H
#define CLEF_CLI_MEDIA_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/* The file's bytes (malloc'ed, one spare byte after them) and *len; NULL
 * when it cannot be read. */
uint8_t *clef_cli_slurp(const char *path, size_t *len);

/* s as a JSON string on stdout. */
void clef_cli_print_string(const char *s);

/* {"file": path, "error": {"status", "type", "message"}} and a newline. */
void clef_cli_print_error(const char *path, const clef_error *err);

#endif
