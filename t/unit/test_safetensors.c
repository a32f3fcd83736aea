/*
 * engine/safetensors.c on hand-made files: values read back, header-only
 * mode maps nothing, and every malformed or truncated file is refused with
 * the exact message.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "model/safetensors.h"

static char  tmpdir[] = "/tmp/clef_st_XXXXXX";
static char  path[256];

/* Writes the 8-byte length, header (padded to 8 bytes with spaces) and data. */
static void
write_file(const char *header, const void *data, size_t n)
{
    FILE      *f = fopen(path, "wb");
    size_t     hl = strlen(header), pad = (8 - hl % 8) % 8, i;
    uint64_t   len = hl + pad;
    uint8_t    lb[8];

    for (i = 0; i < 8; i++) {
        lb[i] = (uint8_t) (len >> (8 * i));
    }
    fwrite(lb, 1, 8, f);
    fwrite(header, 1, hl, f);
    for (i = 0; i < pad; i++) {
        fputc(' ', f);
    }
    if (n > 0) {
        fwrite(data, 1, n, f);
    }
    fclose(f);
}

static void
write_raw(const void *bytes, size_t n)
{
    FILE  *f = fopen(path, "wb");

    fwrite(bytes, 1, n, f);
    fclose(f);
}

/* 1 when /proc/self/maps lists a mapping of path. */
static int
mapped(const char *p)
{
    FILE   *f = fopen("/proc/self/maps", "r");
    char    line[1024];
    int     found = 0;

    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        if (strstr(line, p) != NULL) {
            found = 1;
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    return found;
}

static void
expect_error(const char *what, const char *want_fmt, ...)
{
    clef_safetensors  *f;
    clef_error         err;
    char               tail[400], want[700];
    va_list            ap;

    va_start(ap, want_fmt);
    vsnprintf(tail, sizeof(tail), want_fmt, ap);
    va_end(ap);
    snprintf(want, sizeof(want), "%s: %s", path, tail);

    clef_error_clear(&err);
    f = clef_safetensors_open(path, 0, &err);
    CHECK(f == NULL, "%s: refused", what);
    CHECK_STR(err.message, want, "%s: message", what);
    CHECK_STR(err.type, "model_invalid", "%s: type", what);
    clef_safetensors_close(f);

    /* Header-only mode checks exactly as much. */
    clef_error_clear(&err);
    f = clef_safetensors_open(path, 1, &err);
    CHECK(f == NULL && strcmp(err.message, want) == 0,
          "%s: refused in header-only mode too", what);
    clef_safetensors_close(f);
}

static void
test_good(void)
{
    /* a: F32 [2,3] = 1..6; b: BF16 [4] = 1, -2, 0.5, 3; c: I64 scalar = -7;
     * e: U8 [0].  Data order b, a, c (not name order). */
    static const char  *header =
        "{\"__metadata__\":{\"format\":\"pt\"},"
        "\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[8,32]},"
        "\"b\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[0,8]},"
        "\"c\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[32,40]},"
        "\"e\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[40,40]}}";
    uint8_t             data[40];
    const float         a[6] = { 1, 2, 3, 4, 5, 6 };
    const uint16_t      b[4] = { 0x3f80, 0xc000, 0x3f00, 0x4040 };
    const int64_t       c = -7;
    clef_safetensors   *f;
    const clef_tensor  *t;
    clef_error          err;
    float               out[6];
    int64_t             cv;

    memcpy(data, b, 8);
    memcpy(data + 8, a, 24);
    memcpy(data + 32, &c, 8);
    write_file(header, data, sizeof(data));

    f = clef_safetensors_open(path, 0, &err);
    CHECK(f != NULL, "good file opens");
    if (f == NULL) {
        printf("#   %s\n", err.message);
        return;
    }
    CHECK_INT(clef_safetensors_count(f), 4, "four tensors, __metadata__ skipped");
    CHECK_STR(clef_safetensors_path(f), path, "path kept");
    CHECK_STR(clef_safetensors_at(f, 0)->name, "b", "at(0) = b: data order");
    CHECK_STR(clef_safetensors_at(f, 1)->name, "a", "at(1) = a");
    CHECK_STR(clef_safetensors_at(f, 2)->name, "c", "at(2) = c");
    CHECK_STR(clef_safetensors_at(f, 3)->name, "e", "at(3) = e");
    CHECK(clef_safetensors_at(f, 4) == NULL, "at(4) is NULL");
    CHECK(clef_safetensors_find(f, "d") == NULL, "find of an absent name is NULL");
    CHECK(mapped(path), "the file is mapped");

    t = clef_safetensors_find(f, "a");
    CHECK(t != NULL && t->dtype == CLEF_DTYPE_F32 && t->ndim == 2
          && t->shape[0] == 2 && t->shape[1] == 3 && t->numel == 6
          && t->nbytes == 24, "a: F32 [2, 3]");
    clef_tensor_to_f32(t, out);
    CHECK(memcmp(out, a, sizeof(a)) == 0, "a: values 1..6");

    t = clef_safetensors_find(f, "b");
    CHECK(t != NULL && t->dtype == CLEF_DTYPE_BF16 && t->numel == 4, "b: BF16 [4]");
    clef_tensor_to_f32(t, out);
    CHECK(out[0] == 1.0f && out[1] == -2.0f && out[2] == 0.5f && out[3] == 3.0f,
          "b: values 1, -2, 0.5, 3");

    t = clef_safetensors_find(f, "c");
    CHECK(t != NULL && t->dtype == CLEF_DTYPE_I64 && t->ndim == 0 && t->numel == 1,
          "c: I64 scalar");
    memcpy(&cv, t->data, 8);
    CHECK_INT(cv, -7, "c: value -7");

    t = clef_safetensors_find(f, "e");
    CHECK(t != NULL && t->dtype == CLEF_DTYPE_U8 && t->numel == 0 && t->nbytes == 0,
          "e: U8 [0]");
    clef_safetensors_close(f);
    CHECK(!mapped(path), "closing unmaps");

    f = clef_safetensors_open(path, 1, &err);
    CHECK(f != NULL, "header-only open");
    if (f != NULL) {
        t = clef_safetensors_find(f, "a");
        CHECK(t != NULL && t->data == NULL && t->nbytes == 24 && t->shape[1] == 3,
              "header-only: shapes without data");
        CHECK(clef_safetensors_at(f, 0)->data == NULL
              && clef_safetensors_at(f, 2)->data == NULL, "header-only: no data at all");
        CHECK(!mapped(path), "header-only: nothing mapped");
        clef_safetensors_close(f);
    }
}

static void
test_errors(void)
{
    uint8_t  data[64] = { 0 };
    uint8_t  raw[16] = { 100, 0, 0, 0, 0, 0, 0, 0, '{', '}' };

    unlink(path);
    expect_error("missing file", "cannot open: No such file or directory");

    write_raw(raw, 5);
    expect_error("five bytes", "truncated: the file has 5 bytes, no header length");

    write_raw(raw, 16);
    expect_error("header past the end",
                 "truncated: the header needs 100 bytes but the file has 8 after "
                 "the length");

    raw[0] = 0x00;
    raw[4] = 0x01;                          /* 2^32 bytes */
    write_raw(raw, 16);
    expect_error("huge header length",
                 "malformed header: length 4294967296 is over the format's limit of "
                 "100000000 bytes");

    write_file("{\"a\":", NULL, 0);
    expect_error("malformed JSON",
                 "malformed header: unexpected token near end of file (at byte 8)");

    write_file("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}} x",
               data, 4);
    expect_error("trailing garbage", "malformed header: end of file expected near "
                 "'x' (at byte 56)");

    write_file("[1, 2]", NULL, 0);
    expect_error("not an object", "malformed header: not a JSON object");

    write_file("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
               "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", data, 8);
    expect_error("duplicate name",
                 "malformed header: duplicate object key near '\"a\"' (at byte 57)");

    write_file("{\"a\":[1]}", NULL, 0);
    expect_error("entry not an object", "header entry 'a' is not an object");

    write_file("{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", data, 4);
    expect_error("no data_offsets", "tensor 'a' needs dtype, shape and data_offsets");

    write_file("{\"a\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}",
               data, 8);
    expect_error("unknown dtype", "tensor 'a' has unknown dtype 'F64'");

    write_file("{\"a\":{\"dtype\":\"F32\",\"shape\":[2,-3],\"data_offsets\":[0,8]}}",
               data, 8);
    expect_error("negative dimension", "tensor 'a' has a shape that is not a list of "
                 "non-negative integers");

    write_file("{\"a\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],"
               "\"data_offsets\":[0,1]}}", data, 1);
    expect_error("nine dimensions", "tensor 'a' has 9 dimensions (at most 8)");

    write_file("{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,20]}}",
               data, 24);
    expect_error("size mismatch", "tensor 'a' needs 24 bytes (F32 x 6) but "
                 "data_offsets [0, 20) hold 20");

    write_file("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}",
               data, 8);
    expect_error("reversed offsets", "tensor 'a' has malformed data_offsets");

    write_file("{\"a\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[0,8]},"
               "\"b\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[8,32]}}",
               data, 30);
    expect_error("truncated data", "truncated: tensor 'b' ends at data byte 32 but "
                 "the file holds 30 data bytes");

    write_file("{\"a\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[0,8]},"
               "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[6,14]}}",
               data, 14);
    expect_error("overlap", "tensors 'a' and 'b' overlap");
}

int
main(void)
{
    if (mkdtemp(tmpdir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(path, sizeof(path), "%s/x.safetensors", tmpdir);

    test_good();
    test_errors();

    unlink(path);
    rmdir(tmpdir);
    return check_done();
}
