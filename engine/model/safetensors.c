/*
 * safetensors: an 8-byte little-endian header length N, N bytes of JSON
 * ({name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}}),
 * then the data; offsets are relative to the first byte after the header.
 * Everything the header claims is checked against the file before any
 * pointer into the mapping is handed out.
 */
#include "model/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The safetensors format's own limit on the header. */
#define ST_MAX_HEADER  100000000ULL

struct clef_safetensors {
    char         *path;
    int           count;
    clef_tensor  *tensors;      /* in file (data offset) order */
    int          *by_name;      /* indices into tensors, sorted by name */
    void         *map;
    size_t        map_len;
};

static int
st_error(clef_error *err, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
st_error(clef_error *err, const char *path, const char *fmt, ...)
{
    char     msg[400];
    va_list  ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return clef_error_fail(err, CLEF_E_MODEL, "%s: %s", path, msg);
}

static int
read_full(int fd, void *buf, size_t n, off_t off)
{
    char     *p = buf;
    ssize_t   r;

    while (n > 0) {
        r = pread(fd, p, n, off);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            return -1;
        }
        p += r;
        n -= (size_t) r;
        off += r;
    }
    return 0;
}

/* A non-negative JSON integer, or -1. */
static int64_t
json_uint(const json_t *v)
{
    json_int_t  i;

    if (!json_is_integer(v)) {
        return -1;
    }
    i = json_integer_value(v);
    return i < 0 ? -1 : (int64_t) i;
}

static int
parse_entry(clef_safetensors *f, const char *name, const json_t *e,
    uint64_t data_len, clef_tensor *t, uint64_t *begin, clef_error *err)
{
    const json_t  *dtype, *shape, *offs;
    int64_t        b, end, d;
    uint64_t       numel, nbytes;
    size_t         i;

    if (!json_is_object(e)) {
        return st_error(err, f->path, "header entry '%s' is not an object", name);
    }
    dtype = json_object_get(e, "dtype");
    shape = json_object_get(e, "shape");
    offs = json_object_get(e, "data_offsets");
    if (!json_is_string(dtype) || !json_is_array(shape) || !json_is_array(offs)) {
        return st_error(err, f->path,
                        "tensor '%s' needs dtype, shape and data_offsets", name);
    }
    if (clef_dtype_from_name(json_string_value(dtype), &t->dtype) != 0) {
        return st_error(err, f->path, "tensor '%s' has unknown dtype '%s'",
                        name, json_string_value(dtype));
    }
    if (json_array_size(shape) > CLEF_TENSOR_MAX_DIMS) {
        return st_error(err, f->path, "tensor '%s' has %zu dimensions (at most %d)",
                        name, json_array_size(shape), CLEF_TENSOR_MAX_DIMS);
    }

    t->ndim = (int) json_array_size(shape);
    numel = 1;
    for (i = 0; i < json_array_size(shape); i++) {
        d = json_uint(json_array_get(shape, i));
        if (d < 0) {
            return st_error(err, f->path,
                            "tensor '%s' has a shape that is not a list of "
                            "non-negative integers", name);
        }
        t->shape[i] = d;
        if (d != 0 && numel > (UINT64_MAX >> 4) / (uint64_t) d) {
            return st_error(err, f->path, "tensor '%s' is too large", name);
        }
        numel *= (uint64_t) d;
    }
    nbytes = numel * clef_dtype_size(t->dtype);

    b = json_array_size(offs) == 2 ? json_uint(json_array_get(offs, 0)) : -1;
    end = json_array_size(offs) == 2 ? json_uint(json_array_get(offs, 1)) : -1;
    if (b < 0 || end < b) {
        return st_error(err, f->path, "tensor '%s' has malformed data_offsets", name);
    }
    if ((uint64_t) (end - b) != nbytes) {
        return st_error(err, f->path,
                        "tensor '%s' needs %llu bytes (%s x %llu) but "
                        "data_offsets [%lld, %lld) hold %lld",
                        name, (unsigned long long) nbytes,
                        clef_dtype_name(t->dtype), (unsigned long long) numel,
                        (long long) b, (long long) end, (long long) (end - b));
    }
    if ((uint64_t) end > data_len) {
        return st_error(err, f->path,
                        "truncated: tensor '%s' ends at data byte %lld but the "
                        "file holds %llu data bytes",
                        name, (long long) end, (unsigned long long) data_len);
    }

    t->numel = (int64_t) numel;
    t->nbytes = (size_t) nbytes;
    *begin = (uint64_t) b;
    return 0;
}

typedef struct {
    clef_tensor  t;
    uint64_t     begin;
} st_slot;

static int
cmp_begin(const void *a, const void *b)
{
    const st_slot  *x = a, *y = b;

    if (x->begin != y->begin) {
        return x->begin < y->begin ? -1 : 1;
    }
    return strcmp(x->t.name, y->t.name);
}

static int
cmp_name(const void *a, const void *b, void *arg)
{
    const clef_tensor  *t = arg;

    return strcmp(t[*(const int *) a].name, t[*(const int *) b].name);
}

static int
parse_header(clef_safetensors *f, const char *text, size_t len,
    uint64_t data_off, uint64_t data_len, int headers_only, clef_error *err)
{
    json_t        *root, *e;
    json_error_t   jerr;
    const char    *name;
    st_slot       *slots;
    uint64_t      *begins = NULL;
    size_t         n;
    int            i, rc = -1;

    root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL) {
        return st_error(err, f->path, "malformed header: %s (at byte %d)",
                        jerr.text, jerr.position);
    }
    if (!json_is_object(root)) {
        json_decref(root);
        return st_error(err, f->path, "malformed header: not a JSON object");
    }

    n = json_object_size(root);
    slots = calloc(n ? n : 1, sizeof(*slots));
    if (slots == NULL) {
        json_decref(root);
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "%s: out of memory",
                               f->path);
    }

    i = 0;
    json_object_foreach(root, name, e) {
        if (strcmp(name, "__metadata__") == 0) {
            continue;
        }
        slots[i].t.name = strdup(name);
        if (slots[i].t.name == NULL) {
            clef_error_fail(err, CLEF_E_NO_MEMORY, "%s: out of memory",
                            f->path);
            goto done;
        }
        i++;
        if (parse_entry(f, name, e, data_len, &slots[i - 1].t, &slots[i - 1].begin,
                        err) != 0)
        {
            goto done;
        }
    }
    f->count = i;

    /* Overlapping ranges would let two tensors alias the same bytes. */
    qsort(slots, (size_t) f->count, sizeof(*slots), cmp_begin);
    for (i = 1; i < f->count; i++) {
        if (slots[i].begin < slots[i - 1].begin + slots[i - 1].t.nbytes) {
            st_error(err, f->path, "tensors '%s' and '%s' overlap",
                     slots[i - 1].t.name, slots[i].t.name);
            goto done;
        }
    }

    f->tensors = calloc((size_t) f->count + 1, sizeof(*f->tensors));
    f->by_name = calloc((size_t) f->count + 1, sizeof(*f->by_name));
    begins = calloc((size_t) f->count + 1, sizeof(*begins));
    if (f->tensors == NULL || f->by_name == NULL || begins == NULL) {
        clef_error_fail(err, CLEF_E_NO_MEMORY, "%s: out of memory", f->path);
        goto done;
    }
    for (i = 0; i < f->count; i++) {
        f->tensors[i] = slots[i].t;
        begins[i] = slots[i].begin;
        slots[i].t.name = NULL;
        f->by_name[i] = i;
    }
    qsort_r(f->by_name, (size_t) f->count, sizeof(int), cmp_name, f->tensors);

    if (!headers_only) {
        for (i = 0; i < f->count; i++) {
            f->tensors[i].data = (const char *) f->map + data_off + begins[i];
        }
    }
    rc = 0;

done:
    for (i = 0; i < (int) n; i++) {
        free((char *) slots[i].t.name);
    }
    free(slots);
    free(begins);
    json_decref(root);
    return rc;
}

clef_safetensors *
clef_safetensors_open(const char *path, int headers_only, clef_error *err)
{
    clef_safetensors  *f;
    struct stat        st;
    unsigned char      lenbuf[8];
    uint64_t           hlen = 0, size;
    char              *text = NULL;
    int                fd, i;

    f = calloc(1, sizeof(*f));
    if (f == NULL || (f->path = strdup(path)) == NULL) {
        free(f);
        clef_error_fail(err, CLEF_E_NO_MEMORY, "%s: out of memory", path);
        return NULL;
    }

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        st_error(err, path, "cannot open: %s", strerror(errno));
        goto fail;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        st_error(err, path, "not a regular file");
        goto fail;
    }
    size = (uint64_t) st.st_size;
    if (size < 8 || read_full(fd, lenbuf, 8, 0) != 0) {
        st_error(err, path, "truncated: the file has %llu bytes, no header length",
                 (unsigned long long) size);
        goto fail;
    }
    for (i = 7; i >= 0; i--) {
        hlen = (hlen << 8) | lenbuf[i];
    }
    if (hlen > ST_MAX_HEADER) {
        st_error(err, path, "malformed header: length %llu is over the format's "
                 "limit of %llu bytes",
                 (unsigned long long) hlen, (unsigned long long) ST_MAX_HEADER);
        goto fail;
    }
    if (hlen > size - 8) {
        st_error(err, path, "truncated: the header needs %llu bytes but the file "
                 "has %llu after the length",
                 (unsigned long long) hlen, (unsigned long long) (size - 8));
        goto fail;
    }

    text = malloc(hlen ? hlen : 1);
    if (text == NULL) {
        clef_error_fail(err, CLEF_E_NO_MEMORY, "%s: out of memory", path);
        goto fail;
    }
    if (read_full(fd, text, hlen, 8) != 0) {
        st_error(err, path, "cannot read the header: %s", strerror(errno));
        goto fail;
    }

    if (!headers_only && size > 0) {
        f->map = mmap(NULL, (size_t) size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (f->map == MAP_FAILED) {
            f->map = NULL;
            st_error(err, path, "cannot map: %s", strerror(errno));
            goto fail;
        }
        f->map_len = (size_t) size;
    }

    if (parse_header(f, text, hlen, 8 + hlen, size - 8 - hlen, headers_only, err)
        != 0)
    {
        goto fail;
    }

    free(text);
    close(fd);
    return f;

fail:
    free(text);
    if (fd >= 0) {
        close(fd);
    }
    clef_safetensors_close(f);
    return NULL;
}

int
clef_safetensors_count(const clef_safetensors *f)
{
    return f->count;
}

const clef_tensor *
clef_safetensors_at(const clef_safetensors *f, int i)
{
    return i >= 0 && i < f->count ? &f->tensors[i] : NULL;
}

const clef_tensor *
clef_safetensors_find(const clef_safetensors *f, const char *name)
{
    int  lo = 0, hi = f->count - 1, mid, c;

    while (lo <= hi) {
        mid = lo + (hi - lo) / 2;
        c = strcmp(name, f->tensors[f->by_name[mid]].name);
        if (c == 0) {
            return &f->tensors[f->by_name[mid]];
        }
        if (c < 0) {
            hi = mid - 1;
        } else {
            lo = mid + 1;
        }
    }
    return NULL;
}

const char *
clef_safetensors_path(const clef_safetensors *f)
{
    return f->path;
}

void
clef_safetensors_close(clef_safetensors *f)
{
    int  i;

    if (f == NULL) {
        return;
    }
    if (f->tensors != NULL) {
        for (i = 0; i < f->count; i++) {
            free((char *) f->tensors[i].name);
        }
    }
    if (f->map != NULL) {
        munmap(f->map, f->map_len);
    }
    free(f->tensors);
    free(f->by_name);
    free(f->path);
    free(f);
}
