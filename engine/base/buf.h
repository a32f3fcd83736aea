/*
 * Growable byte buffer and token-id vector.  Both report allocation failure
 * with a non-zero return (never abort) and keep their content valid.
 */
#ifndef CLEF_BUF_H
#define CLEF_BUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    char    *data;   /* always NUL-terminated when non-NULL */
    size_t   len;
    size_t   cap;
} clef_buf;

int  clef_buf_reserve(clef_buf *b, size_t extra);
int  clef_buf_append(clef_buf *b, const void *p, size_t n);
int  clef_buf_putc(clef_buf *b, char c);
int  clef_buf_printf(clef_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void clef_buf_free(clef_buf *b);

typedef struct {
    int32_t  *v;
    size_t    n;
    size_t    cap;
} clef_ids;

int  clef_ids_reserve(clef_ids *ids, size_t extra);
int  clef_ids_push(clef_ids *ids, int32_t id);
int  clef_ids_append(clef_ids *ids, const int32_t *v, size_t n);
void clef_ids_free(clef_ids *ids);

#endif
