/*
 * A Clef release directory: configs, tokenizer and mmapped weights, checked
 * tensor by tensor against the inventory the configs imply
 * (engine/model_config.c) before anything is handed out.
 */
#include "model/model.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model/model_config.h"
#include "model/model_vision.h"
#include "model/safetensors.h"

#define CANONICAL  "model.language_model."

typedef struct {
    char                    *name;      /* canonical */
    const clef_tensor       *t;
    const clef_safetensors  *file;
} model_entry;

typedef struct {
    char              *name;            /* file name inside dir */
    clef_safetensors  *st;
} model_file;

struct clef_model {
    char               *dir;
    int                 flags;
    clef_text_config    text;
    clef_head_config    head;
    clef_vision_config  vision;
    clef_tokenizer     *tokenizer;
    model_file         *files;
    int                 n_files;
    clef_safetensors   *head_file;
    model_entry        *entries;        /* sorted by name */
    int                 n_entries;
    int                 cap_entries;
};

static int
model_error(clef_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int
model_error(clef_error *err, const char *fmt, ...)
{
    char     msg[512];
    va_list  ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return clef_error_fail(err, CLEF_E_MODEL, "%s", msg);
}

static int
oom(clef_error *err)
{
    return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
}

static char *
join(const char *dir, const char *name)
{
    size_t  n = strlen(dir) + strlen(name) + 2;
    char   *p = malloc(n);

    if (p != NULL) {
        snprintf(p, n, "%s/%s", dir, name);
    }
    return p;
}

static int
exists(const char *path)
{
    struct stat  st;

    return stat(path, &st) == 0;
}

static json_t *
load_json(const char *path, clef_error *err)
{
    json_t        *root;
    json_error_t   jerr;
    FILE          *f;

    f = fopen(path, "rb");
    if (f == NULL) {
        model_error(err, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    root = json_loadf(f, JSON_REJECT_DUPLICATES, &jerr);
    fclose(f);
    if (root == NULL) {
        model_error(err, "%s: malformed JSON: %s (line %d)", path, jerr.text, jerr.line);
    }
    return root;
}

/* ---- canonical names ---------------------------------------------------- */

static int
is_vision_tensor(const char *name)
{
    return strncmp(name, CLEF_VISION_PREFIX, sizeof(CLEF_VISION_PREFIX) - 1) == 0;
}

/* The canonical name of a stored tensor, or NULL for one never read (MTP).
 * Qwen3_5ForCausalLM stores "model.X"; the vision tower keeps its name
 * (and is skipped when the config has no vision_config). */
static char *
canonical_name(const char *stored, int vision, int *skip)
{
    size_t  n;
    char   *p;

    /* a text-only config reads no vision tensor, as Qwen3_5ForCausalLM */
    *skip = strncmp(stored, "mtp.", 4) == 0
            || (!vision && is_vision_tensor(stored));
    if (*skip) {
        return NULL;
    }
    if (is_vision_tensor(stored)) {
        return strdup(stored);
    }
    if (strncmp(stored, "model.", 6) == 0
        && strncmp(stored, CANONICAL, sizeof(CANONICAL) - 1) != 0)
    {
        n = sizeof(CANONICAL) + strlen(stored + 6);
        p = malloc(n);
        if (p != NULL) {
            snprintf(p, n, CANONICAL "%s", stored + 6);
        }
        return p;
    }
    return strdup(stored);
}

static int
cmp_entry(const void *a, const void *b)
{
    return strcmp(((const model_entry *) a)->name, ((const model_entry *) b)->name);
}

static const model_entry *
find_entry(const clef_model *m, const char *name)
{
    model_entry  key;

    key.name = (char *) name;
    return m->n_entries == 0 ? NULL
           : bsearch(&key, m->entries, (size_t) m->n_entries, sizeof(key), cmp_entry);
}

/* Takes ownership of name. */
static int
push_entry(clef_model *m, char *name, const clef_tensor *t,
    const clef_safetensors *file, clef_error *err)
{
    model_entry  *e;

    if (name == NULL) {
        return oom(err);
    }
    if (m->n_entries == m->cap_entries) {
        m->cap_entries = m->cap_entries ? 2 * m->cap_entries : 256;
        e = realloc(m->entries, (size_t) m->cap_entries * sizeof(*e));
        if (e == NULL) {
            free(name);
            return oom(err);
        }
        m->entries = e;
    }
    e = &m->entries[m->n_entries++];
    e->name = name;
    e->t = t;
    e->file = file;
    return 0;
}

static int
add_entry(clef_model *m, const clef_tensor *t, const clef_safetensors *file,
    clef_error *err)
{
    char  *name;
    int    skip;

    name = canonical_name(t->name, m->vision.present, &skip);
    return skip ? 0 : push_entry(m, name, t, file, err);
}

/* Sorts the entries and refuses two stored tensors with one canonical name
 * (a checkpoint mixing the two layouts). */
static int
sort_entries(clef_model *m, clef_error *err)
{
    int  i;

    if (m->n_entries > 0) {
        qsort(m->entries, (size_t) m->n_entries, sizeof(model_entry), cmp_entry);
    }
    for (i = 1; i < m->n_entries; i++) {
        if (strcmp(m->entries[i].name, m->entries[i - 1].name) == 0) {
            return model_error(err, "%s: tensors '%s' and '%s' (in %s) are both '%s'",
                               m->dir, m->entries[i - 1].t->name, m->entries[i].t->name,
                               clef_safetensors_path(m->entries[i].file),
                               m->entries[i].name);
        }
    }
    return 0;
}

/* ---- weights ------------------------------------------------------------ */

static clef_safetensors *
open_file(clef_model *m, const char *name, clef_error *err)
{
    model_file        *f;
    clef_safetensors  *st;
    char              *path;
    int                i;

    for (i = 0; i < m->n_files; i++) {
        if (strcmp(m->files[i].name, name) == 0) {
            return m->files[i].st;
        }
    }
    path = join(m->dir, name);
    f = realloc(m->files, (size_t) (m->n_files + 1) * sizeof(*f));
    if (path == NULL || f == NULL) {
        free(path);
        if (f != NULL) {
            m->files = f;
        }
        oom(err);
        return NULL;
    }
    m->files = f;
    st = clef_safetensors_open(path, m->flags & CLEF_MODEL_HEADERS_ONLY, err);
    free(path);
    if (st == NULL) {
        return NULL;
    }
    f = &m->files[m->n_files];
    f->name = strdup(name);
    f->st = st;
    if (f->name == NULL) {
        clef_safetensors_close(st);
        oom(err);
        return NULL;
    }
    m->n_files++;
    return st;
}

static int
load_index(clef_model *m, const char *index_path, clef_error *err)
{
    json_t             *root, *map, *v;
    const char         *name, *file;
    const clef_tensor  *t;
    clef_safetensors   *st;
    int                 skip, rc = -1;
    char               *canon;

    root = load_json(index_path, err);
    if (root == NULL) {
        return -1;
    }
    map = json_object_get(root, "weight_map");
    if (!json_is_object(map)) {
        model_error(err, "%s: no weight_map object", index_path);
        goto done;
    }

    json_object_foreach(map, name, v) {
        canon = canonical_name(name, m->vision.present, &skip);
        free(canon);
        if (skip) {
            continue;                     /* never open a vision-only shard */
        }
        file = json_is_string(v) ? json_string_value(v) : NULL;
        if (file == NULL || file[0] == '\0' || file[0] == '.' || strchr(file, '/') != NULL) {
            model_error(err, "%s: tensor '%s' is mapped to %s%s%s, not a file name "
                        "in the directory", index_path, name, file ? "'" : "",
                        file ? file : "a non-string", file ? "'" : "");
            goto done;
        }
        st = open_file(m, file, err);
        if (st == NULL) {
            goto done;
        }
        t = clef_safetensors_find(st, name);
        if (t == NULL) {
            model_error(err, "%s: tensor '%s' is mapped to '%s', which does not hold it",
                        index_path, name, file);
            goto done;
        }
        if (add_entry(m, t, st, err) != 0) {
            goto done;
        }
    }
    rc = 0;

done:
    json_decref(root);
    return rc;
}

static int
load_single(clef_model *m, clef_error *err)
{
    clef_safetensors  *st;
    int                i;

    st = open_file(m, "model.safetensors", err);
    if (st == NULL) {
        return -1;
    }
    for (i = 0; i < clef_safetensors_count(st); i++) {
        if (add_entry(m, clef_safetensors_at(st, i), st, err) != 0) {
            return -1;
        }
    }
    return 0;
}

/* ---- checking against the inventory ------------------------------------- */

typedef struct {
    clef_tensor_spec  *v;
    int                n, cap;
} spec_list;

static int
collect_spec(const clef_tensor_spec *s, void *ctx)
{
    spec_list         *l = ctx;
    clef_tensor_spec  *p;

    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 256;
        p = realloc(l->v, (size_t) l->cap * sizeof(*p));
        if (p == NULL) {
            return -1;
        }
        l->v = p;
    }
    l->v[l->n++] = *s;
    return 0;
}

static int
cmp_spec(const void *a, const void *b)
{
    return strcmp(((const clef_tensor_spec *) a)->name,
                  ((const clef_tensor_spec *) b)->name);
}

static int
check_tensor(const clef_tensor_spec *s, const clef_tensor *t, const char *file,
    clef_error *err)
{
    char  got[128], want[128];

    if (!clef_dtype_wanted(s->dtype, t->dtype)) {
        return model_error(err, "%s: tensor '%s' is %s, expected %s", file, t->name,
                           clef_dtype_name(t->dtype),
                           s->dtype == CLEF_WANT_F32_OR_BF16 ? "F32 or BF16"
                                                              : "F32, F16 or BF16");
    }
    if (!clef_tensor_has_shape(t, s->ndim, s->shape)) {
        clef_shape_format(got, sizeof(got), t->ndim, t->shape);
        clef_shape_format(want, sizeof(want), s->ndim, s->shape);
        return model_error(err, "%s: tensor '%s' has shape %s, expected %s", file,
                           t->name, got, want);
    }
    return 0;
}

/* One part of the checkpoint (the text model and head inputs, or the
 * vision tower) against the tensors its config implies: each spec present
 * with its dtype and shape, in checkpoint order so that the first problem
 * reported is the first one; then no tensor of that part left over.  The
 * specs are freed. */
static int
check_part(clef_model *m, spec_list *specs, int vision, clef_error *err)
{
    clef_tensor_spec    key;
    const model_entry  *e;
    int                 i, rc = -1;

    for (i = 0; i < specs->n; i++) {
        e = find_entry(m, specs->v[i].name);
        if (e == NULL) {
            model_error(err, "%s: tensor '%s' is missing", m->dir, specs->v[i].name);
            goto done;
        }
        if (check_tensor(&specs->v[i], e->t, clef_safetensors_path(e->file), err)
            != 0)
        {
            goto done;
        }
    }

    qsort(specs->v, (size_t) specs->n, sizeof(*specs->v), cmp_spec);
    for (i = 0; i < m->n_entries; i++) {
        e = &m->entries[i];
        if (is_vision_tensor(e->name) != vision) {
            continue;           /* the other part's */
        }
        /* A tied checkpoint may still carry lm_head.weight: unused. */
        if (!vision && m->text.tie_word_embeddings
            && strcmp(e->name, "lm_head.weight") == 0)
        {
            continue;
        }
        snprintf(key.name, sizeof(key.name), "%s", e->name);
        if (strlen(e->name) >= sizeof(key.name)
            || bsearch(&key, specs->v, (size_t) specs->n, sizeof(key), cmp_spec)
               == NULL)
        {
            model_error(err, "%s: unexpected tensor '%s'",
                        clef_safetensors_path(e->file), e->t->name);
            goto done;
        }
    }
    rc = 0;

done:
    free(specs->v);
    return rc;
}

static int
check_text(clef_model *m, clef_error *err)
{
    spec_list  specs = { NULL, 0, 0 };

    if (clef_text_tensors(&m->text, collect_spec, &specs) != 0) {
        free(specs.v);
        return oom(err);
    }
    return check_part(m, &specs, 0, err);
}

static int
check_head(clef_model *m, const char *path, clef_error *err)
{
    spec_list           specs = { NULL, 0, 0 };
    clef_tensor_spec    key;
    const clef_tensor  *t;
    int                 i, rc = -1;

    if (clef_head_tensors(&m->head, collect_spec, &specs) != 0) {
        free(specs.v);
        return oom(err);
    }
    for (i = 0; i < specs.n; i++) {
        t = clef_safetensors_find(m->head_file, specs.v[i].name);
        if (t == NULL) {
            model_error(err, "%s: tensor '%s' is missing", path, specs.v[i].name);
            goto done;
        }
        if (check_tensor(&specs.v[i], t, path, err) != 0) {
            goto done;
        }
    }
    /* strict, like load_state_dict(strict=True) */
    qsort(specs.v, (size_t) specs.n, sizeof(*specs.v), cmp_spec);
    for (i = 0; i < clef_safetensors_count(m->head_file); i++) {
        t = clef_safetensors_at(m->head_file, i);
        snprintf(key.name, sizeof(key.name), "%s", t->name);
        if (strlen(t->name) >= sizeof(key.name)
            || bsearch(&key, specs.v, (size_t) specs.n, sizeof(key), cmp_spec) == NULL)
        {
            model_error(err, "%s: unexpected tensor '%s'", path, t->name);
            goto done;
        }
    }
    rc = 0;

done:
    free(specs.v);
    return rc;
}

/* The vision tower: every tensor the config implies, and nothing else
 * under model.visual.  A config with a vision_config whose checkpoint has
 * no model.visual.* tensor at all is a text-only checkpoint (it takes no
 * images). */
static int
check_vision(clef_model *m, clef_error *err)
{
    spec_list  specs = { NULL, 0, 0 };
    int        i, any = 0;

    for (i = 0; i < m->n_entries; i++) {
        any |= is_vision_tensor(m->entries[i].name);
    }
    if (!m->vision.present || !any) {
        m->vision.present = 0;
        return 0;
    }
    if (m->vision.out_hidden_size != m->text.hidden_size) {
        return model_error(err, "%s: vision_config.out_hidden_size %d is not "
                           "the text hidden_size %d", m->dir,
                           m->vision.out_hidden_size, m->text.hidden_size);
    }
    if (clef_vision_tensors(&m->vision, collect_spec, &specs) != 0) {
        free(specs.v);
        return oom(err);
    }
    return check_part(m, &specs, 1, err);
}

/* ---- open / close ------------------------------------------------------- */

static int
load_configs(clef_model *m, clef_error *err)
{
    json_t  *root;
    char    *cfg, *head;
    int      rc = -1;

    cfg = join(m->dir, "config.json");
    head = join(m->dir, "joint_head_config.json");
    if (cfg == NULL || head == NULL) {
        oom(err);
        goto done;
    }

    root = load_json(cfg, err);
    if (root == NULL) {
        goto done;
    }
    rc = clef_text_config_parse(root, cfg, &m->text, err);
    if (rc == 0) {
        rc = clef_vision_config_parse(root, cfg, &m->vision, err);
    }
    json_decref(root);
    if (rc != 0) {
        goto done;
    }
    if (m->vision.present) {
        free(cfg);
        cfg = join(m->dir, "preprocessor_config.json");
        if (cfg == NULL) {
            rc = oom(err);
            goto done;
        }
        root = exists(cfg) ? load_json(cfg, err) : NULL;
        if (exists(cfg) && root == NULL) {
            rc = -1;
            goto done;
        }
        rc = clef_processor_config_parse(root, cfg, &m->vision,
                                         &m->vision.processor, err);
        json_decref(root);
        if (rc != 0) {
            goto done;
        }
    }

    rc = -1;
    if (!exists(head)) {
        clef_error_set(err, 501, "not_a_decision_model", NULL,
                       "not a decision model: %s has no joint_head_config.json", m->dir);
        goto done;
    }
    root = load_json(head, err);
    if (root == NULL) {
        goto done;
    }
    rc = clef_head_config_parse(root, head, &m->head, err);
    json_decref(root);
    if (rc == 0 && m->head.hidden_size != m->text.hidden_size) {
        rc = model_error(err, "%s: hidden_size %d does not match the backbone's %d",
                         head, m->head.hidden_size, m->text.hidden_size);
    }

done:
    free(cfg);
    free(head);
    return rc;
}

static int
load_tokenizer(clef_model *m, clef_error *err)
{
    char    *path = join(m->dir, "tokenizer.json");
    size_t   n;

    if (path == NULL) {
        return oom(err);
    }
    m->tokenizer = clef_tokenizer_load(path, err);
    if (m->tokenizer == NULL) {
        free(path);
        return -1;
    }
    n = clef_tokenizer_vocab_size(m->tokenizer);
    if (n > (size_t) m->text.vocab_size) {
        model_error(err, "%s: %zu token ids do not fit the vocab_size of %d", path, n,
                    m->text.vocab_size);
        free(path);
        return -1;
    }
    free(path);
    return 0;
}

static int
load_weights(clef_model *m, clef_error *err)
{
    char  *index = join(m->dir, "model.safetensors.index.json");
    char  *single = join(m->dir, "model.safetensors");
    char  *head = join(m->dir, "joint_head.safetensors");
    int    rc = -1;

    if (index == NULL || single == NULL || head == NULL) {
        oom(err);
        goto done;
    }
    if (exists(index)) {
        rc = load_index(m, index, err);
    } else if (exists(single)) {
        rc = load_single(m, err);
    } else {
        rc = model_error(err, "%s: no model.safetensors.index.json or model.safetensors",
                         m->dir);
    }
    if (rc != 0 || (rc = sort_entries(m, err)) != 0
        || (rc = check_vision(m, err)) != 0 || (rc = check_text(m, err)) != 0)
    {
        goto done;
    }

    rc = -1;
    m->head_file = clef_safetensors_open(head, m->flags & CLEF_MODEL_HEADERS_ONLY, err);
    if (m->head_file == NULL || check_head(m, head, err) != 0) {
        goto done;
    }
    rc = 0;

done:
    free(index);
    free(single);
    free(head);
    return rc;
}

/* Tied embeddings: lm_head.weight is the embedding (after checking, so that a
 * stored, unused lm_head.weight of a tied checkpoint is replaced). */
static int
tie_lm_head(clef_model *m, clef_error *err)
{
    const model_entry       *embed = find_entry(m, CANONICAL "embed_tokens.weight");
    const clef_tensor       *t = embed->t;
    const clef_safetensors  *file = embed->file;
    model_entry             *e = (model_entry *) find_entry(m, "lm_head.weight");

    if (e != NULL) {
        e->t = t;
        e->file = file;
        return 0;
    }
    if (push_entry(m, strdup("lm_head.weight"), t, file, err) != 0) {
        return -1;
    }
    qsort(m->entries, (size_t) m->n_entries, sizeof(model_entry), cmp_entry);
    return 0;
}

clef_model *
clef_model_open(const char *dir, int flags, clef_error *err)
{
    clef_model  *m;

    m = calloc(1, sizeof(*m));
    if (m == NULL || (m->dir = strdup(dir)) == NULL) {
        free(m);
        oom(err);
        return NULL;
    }
    m->flags = flags;

    /* The tokenizer last: its parse is the slowest step. */
    if (load_configs(m, err) != 0
        || load_weights(m, err) != 0
        || (m->text.tie_word_embeddings && tie_lm_head(m, err) != 0)
        || load_tokenizer(m, err) != 0)
    {
        clef_model_close(m);
        return NULL;
    }
    return m;
}

void
clef_model_close(clef_model *m)
{
    int  i;

    if (m == NULL) {
        return;
    }
    for (i = 0; i < m->n_entries; i++) {
        free(m->entries[i].name);
    }
    for (i = 0; i < m->n_files; i++) {
        clef_safetensors_close(m->files[i].st);
        free(m->files[i].name);
    }
    clef_safetensors_close(m->head_file);
    if (m->tokenizer != NULL) {
        clef_tokenizer_free(m->tokenizer);
    }
    free(m->entries);
    free(m->files);
    free(m->dir);
    free(m);
}

const clef_text_config *
clef_model_text_config(const clef_model *m)
{
    return &m->text;
}

const clef_head_config *
clef_model_head_config(const clef_model *m)
{
    return &m->head;
}

const clef_vision_config *
clef_model_vision_config(const clef_model *m)
{
    return m->vision.present ? &m->vision : NULL;
}

const clef_tokenizer *
clef_model_tokenizer(const clef_model *m)
{
    return m->tokenizer;
}

const char *
clef_model_dir(const clef_model *m)
{
    return m->dir;
}

const clef_tensor *
clef_model_tensor(const clef_model *m, const char *name)
{
    const model_entry  *e = find_entry(m, name);

    return e != NULL ? e->t : NULL;
}

const clef_tensor *
clef_model_head_tensor(const clef_model *m, const char *name)
{
    return clef_safetensors_find(m->head_file, name);
}
