/*
 * render(v) of the reference encoder: a string is returned unchanged (not
 * quoted); any other value is Python's
 *   json.dumps(v, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
 * byte for byte: keys sorted by code point at every level, escapes only for
 * '"', '\\', \b \f \n \r \t and other bytes below 0x20 as \u00xx (lowercase
 * hex), floats as Python repr (shortest round-trip digits; 1e5 -> 100000.0,
 * 1e-7 -> 1e-07, 1e16 -> 1e+16, -0.0), integers exactly.
 */
#ifndef CLEF_RENDER_H
#define CLEF_RENDER_H

#include "base/buf.h"
#include "text/json.h"

/* Appends render(v) to out.  Returns 0, or -1 when memory runs out. */
int clef_render(clef_buf *out, const clef_json *v);

/* Appends json.dumps(v, ...) to out, also quoting a top-level string. */
int clef_render_json(clef_buf *out, const clef_json *v);

/* Appends Python repr(d) of a finite double, e.g. "0.1", "1e-07", "100000.0". */
int clef_render_float(clef_buf *out, double d);

/* Appends s as a JSON string literal with json.dumps(ensure_ascii=False) escaping. */
int clef_render_string(clef_buf *out, const char *s, size_t len);

#endif
