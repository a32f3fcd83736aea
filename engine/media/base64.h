/*
 * Base64 (RFC 4648 §4, the standard alphabet) as images arrive in a System
 * One request.  Strict where a lenient decoder would guess: a character
 * outside the alphabet is an error naming its offset, '=' may only pad the
 * last quantum, and the text must end on a whole quantum (Python's
 * base64.decodebytes, which the reference uses, raises "Incorrect padding"
 * there too).  ASCII whitespace between characters is skipped, so MIME
 * text broken into 76-column lines decodes.
 */
#ifndef CLEF_BASE64_H
#define CLEF_BASE64_H

#include <stddef.h>
#include <stdint.h>

/* Most bytes len characters of base64 can decode to. */
size_t clef_base64_max_decoded(size_t len);

/*
 * Decodes s[0..len) into out (clef_base64_max_decoded(len) bytes of room).
 * Returns the decoded length, or -1 with *bad set to the offset of the
 * offending character (len for a text that ends inside a quantum) and *why
 * to a short reason.
 */
int64_t clef_base64_decode(const char *s, size_t len, uint8_t *out,
    size_t *bad, const char **why);

#endif
