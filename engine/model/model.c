/*
 * A Clef model: configs, tokenizer and one canonical tensor table, filled
 * by its container (container.h: a release directory today) and checked
 * tensor by tensor against the inventory the configs imply (roles.h)
 * before anything is handed out.
 */
#include "model/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/container.h"
#include "model/model_config.h"
#include "model/model_omni.h"
#include "model/model_vision.h"

typedef struct {
    char               *name;           /* canonical */
    int                 head;           /* a joint-head tensor */
    int                 seq;            /* in the order added */
    const clef_tensor  *t;
    const char         *from;           /* where it was read, for messages */
} model_entry;

struct clef_tensor_table {
    model_entry  *v;                    /* sorted by (head, name) */
    int           n, cap;
};

struct clef_model {
    char                       *path;
    clef_model_configs          cfg;
    clef_tokenizer             *tokenizer;
    const clef_container_kind  *kind;
    void                       *container;
    clef_tensor_table           table;
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

static const char *
where(const clef_model *m, clef_source s)
{
    return m->kind->where(m->container, s);
}

/* ---- the canonical table ------------------------------------------------ */

/* Which part of the backbone a canonical name is in: checked apart, each
 * against its own config. */
typedef enum {
    GROUP_TEXT = 0,
    GROUP_VISION,
    GROUP_AUDIO
} tensor_group;

static tensor_group
group_of(const char *name)
{
    if (strncmp(name, CLEF_VISION_PREFIX, sizeof(CLEF_VISION_PREFIX) - 1) == 0)
    {
        return GROUP_VISION;
    }
    return strncmp(name, CLEF_AUDIO_PREFIX, sizeof(CLEF_AUDIO_PREFIX) - 1) == 0
           ? GROUP_AUDIO : GROUP_TEXT;
}

static int
cmp_entry(const void *a, const void *b)
{
    const model_entry  *x = a, *y = b;

    return x->head != y->head ? x->head - y->head : strcmp(x->name, y->name);
}

static const model_entry *
find_entry(const clef_model *m, const char *name, int head)
{
    model_entry  key;

    key.name = (char *) name;
    key.head = head;
    return m->table.n == 0 ? NULL
           : bsearch(&key, m->table.v, (size_t) m->table.n, sizeof(key),
                     cmp_entry);
}

int
clef_tensor_table_add(clef_tensor_table *tt, const char *canonical, int head,
    const clef_tensor *t, const char *from, clef_error *err)
{
    model_entry  *e;

    if (tt->n == tt->cap) {
        tt->cap = tt->cap ? 2 * tt->cap : 256;
        e = realloc(tt->v, (size_t) tt->cap * sizeof(*e));
        if (e == NULL) {
            return oom(err);
        }
        tt->v = e;
    }
    e = &tt->v[tt->n];
    e->name = strdup(canonical);
    if (e->name == NULL) {
        return oom(err);
    }
    e->head = head != 0;
    e->seq = tt->n++;
    e->t = t;
    e->from = from;
    return 0;
}

/* Sorts the table and refuses two stored tensors with one canonical name
 * (a checkpoint mixing the two layouts). */
static int
sort_entries(clef_model *m, clef_error *err)
{
    model_entry  *v = m->table.v;
    int           i;

    if (m->table.n > 0) {
        qsort(v, (size_t) m->table.n, sizeof(*v), cmp_entry);
    }
    for (i = 1; i < m->table.n; i++) {
        if (cmp_entry(&v[i], &v[i - 1]) == 0) {
            return model_error(err, "%s: tensors '%s' and '%s' (in %s) are both '%s'",
                               where(m, CLEF_SOURCE_BACKBONE), v[i - 1].t->name,
                               v[i].t->name, v[i].from, v[i].name);
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
    char        got[128], want[128];
    clef_dtype  types[4];
    int         i, n = clef_tensor_types(t, types, 4);

    for (i = 0; i < n; i++) {
        if (!clef_dtype_wanted(s->dtype, types[i])) {
            return model_error(err, "%s: tensor '%s' is %s, expected %s", file,
                               t->name, clef_dtype_name(types[i]),
                               s->dtype == CLEF_WANT_F32_OR_BF16
                               ? "F32 or BF16" : "F32, F16 or BF16");
        }
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
check_part(clef_model *m, spec_list *specs, tensor_group group,
    clef_error *err)
{
    clef_tensor_spec    key;
    const model_entry  *e;
    int                 i, rc = -1;

    for (i = 0; i < specs->n; i++) {
        e = find_entry(m, specs->v[i].name, 0);
        if (e == NULL) {
            model_error(err, "%s: tensor '%s' is missing",
                        where(m, CLEF_SOURCE_BACKBONE), specs->v[i].name);
            goto done;
        }
        if (check_tensor(&specs->v[i], e->t, e->from, err) != 0) {
            goto done;
        }
    }

    qsort(specs->v, (size_t) specs->n, sizeof(*specs->v), cmp_spec);
    for (i = 0; i < m->table.n; i++) {
        e = &m->table.v[i];
        if (e->head || group_of(e->name) != group) {
            continue;           /* another part's */
        }
        /* A tied checkpoint may still carry lm_head.weight: unused. */
        if (group == GROUP_TEXT && m->cfg.text.tie_word_embeddings
            && strcmp(e->name, clef_role_of(CLEF_ROLE_LM_HEAD)->name) == 0)
        {
            continue;
        }
        snprintf(key.name, sizeof(key.name), "%s", e->name);
        if (strlen(e->name) >= sizeof(key.name)
            || bsearch(&key, specs->v, (size_t) specs->n, sizeof(key), cmp_spec)
               == NULL)
        {
            model_error(err, "%s: unexpected tensor '%s'", e->from, e->t->name);
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

    if (clef_text_tensors(&m->cfg.text, collect_spec, &specs) != 0) {
        free(specs.v);
        return oom(err);
    }
    return check_part(m, &specs, GROUP_TEXT, err);
}

/* The head, strict like load_state_dict(strict=True): every tensor the
 * config implies, and nothing else (the first unexpected one in the order
 * the container gave them). */
static int
check_head(clef_model *m, clef_error *err)
{
    spec_list           specs = { NULL, 0, 0 };
    clef_tensor_spec    key;
    const model_entry  *e, *first = NULL;
    const char         *path = where(m, CLEF_SOURCE_HEAD);
    int                 i, rc = -1;

    if (clef_head_tensors(&m->cfg.head, collect_spec, &specs) != 0) {
        free(specs.v);
        return oom(err);
    }
    for (i = 0; i < specs.n; i++) {
        e = find_entry(m, specs.v[i].name, 1);
        if (e == NULL) {
            model_error(err, "%s: tensor '%s' is missing", path, specs.v[i].name);
            goto done;
        }
        if (check_tensor(&specs.v[i], e->t, e->from, err) != 0) {
            goto done;
        }
    }
    qsort(specs.v, (size_t) specs.n, sizeof(*specs.v), cmp_spec);
    for (i = 0; i < m->table.n; i++) {
        e = &m->table.v[i];
        if (!e->head || (first != NULL && e->seq > first->seq)) {
            continue;
        }
        snprintf(key.name, sizeof(key.name), "%s", e->name);
        if (strlen(e->name) >= sizeof(key.name)
            || bsearch(&key, specs.v, (size_t) specs.n, sizeof(key), cmp_spec) == NULL)
        {
            first = e;
        }
    }
    if (first != NULL) {
        model_error(err, "%s: unexpected tensor '%s'", first->from, first->t->name);
        goto done;
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
    spec_list            specs = { NULL, 0, 0 };
    clef_vision_config  *v = &m->cfg.vision;
    int                  i, any = 0;

    for (i = 0; i < m->table.n; i++) {
        any |= !m->table.v[i].head
               && group_of(m->table.v[i].name) == GROUP_VISION;
    }
    if (!v->present || !any) {
        v->present = 0;
        return 0;
    }
    if (v->out_hidden_size != m->cfg.text.hidden_size) {
        return model_error(err, "%s: vision_config.out_hidden_size %d is not "
                           "the text hidden_size %d",
                           where(m, CLEF_SOURCE_BACKBONE), v->out_hidden_size,
                           m->cfg.text.hidden_size);
    }
    if (clef_vision_tensors(v, collect_spec, &specs) != 0) {
        free(specs.v);
        return oom(err);
    }
    return check_part(m, &specs, GROUP_VISION, err);
}

/* Clef Omni's audio tower, likewise: every tensor its config implies and
 * nothing else under model.audio_tower; none at all is a checkpoint that
 * takes no audio. */
static int
check_audio(clef_model *m, clef_error *err)
{
    spec_list                 specs = { NULL, 0, 0 };
    clef_audio_tower_config  *a = &m->cfg.audio;
    int                       i, any = 0;

    for (i = 0; i < m->table.n; i++) {
        any |= !m->table.v[i].head
               && group_of(m->table.v[i].name) == GROUP_AUDIO;
    }
    if (!a->present || !any) {
        a->present = 0;
        return any ? check_part(m, &specs, GROUP_AUDIO, err) : 0;
    }
    if (a->output_dim != m->cfg.text.hidden_size) {
        return model_error(err, "%s: audio_config.output_dim %d is not the "
                           "text hidden_size %d",
                           where(m, CLEF_SOURCE_BACKBONE), a->output_dim,
                           m->cfg.text.hidden_size);
    }
    if (clef_audio_tensors(a, collect_spec, &specs) != 0) {
        free(specs.v);
        return oom(err);
    }
    return check_part(m, &specs, GROUP_AUDIO, err);
}

/* ---- open / close ------------------------------------------------------- */

static int
load_tensors(clef_model *m, clef_error *err)
{
    const clef_container_kind  *k = m->kind;

    if (k->tensors(m->container, &m->cfg, CLEF_SOURCE_BACKBONE, &m->table, err)
        != 0
        || sort_entries(m, err) != 0 || check_vision(m, err) != 0
        || check_audio(m, err) != 0 || check_text(m, err) != 0)
    {
        return -1;
    }
    if (k->tensors(m->container, &m->cfg, CLEF_SOURCE_HEAD, &m->table, err) != 0
        || sort_entries(m, err) != 0)
    {
        return -1;
    }
    return check_head(m, err);
}

/* Tied embeddings: lm_head.weight is the embedding (after checking, so that a
 * stored, unused lm_head.weight of a tied checkpoint is replaced). */
static int
tie_lm_head(clef_model *m, clef_error *err)
{
    const char         *lm = clef_role_of(CLEF_ROLE_LM_HEAD)->name;
    const model_entry  *embed;
    const clef_tensor  *t;
    const char         *from;
    model_entry        *e = (model_entry *) find_entry(m, lm, 0);
    char                name[160];

    clef_role_name(&m->cfg.text, CLEF_ROLE_EMBED, 0, name, sizeof(name));
    embed = find_entry(m, name, 0);
    t = embed->t;
    from = embed->from;

    if (e != NULL) {
        e->t = t;
        e->from = from;
        return 0;
    }
    if (clef_tensor_table_add(&m->table, lm, 0, t, from, err) != 0) {
        return -1;
    }
    qsort(m->table.v, (size_t) m->table.n, sizeof(model_entry), cmp_entry);
    return 0;
}

clef_model *
clef_model_open(const char *path, int flags, clef_error *err)
{
    return clef_model_open_files(path, NULL, flags, err);
}

clef_model *
clef_model_open_files(const char *path, const char *mmproj, int flags,
    clef_error *err)
{
    clef_model  *m;

    m = calloc(1, sizeof(*m));
    if (m == NULL || (m->path = strdup(path)) == NULL) {
        free(m);
        oom(err);
        return NULL;
    }
    m->kind = clef_container_find(path);
    m->container = m->kind->open(path, mmproj, flags, err);

    /* The tokenizer last: its parse is the slowest step. */
    if (m->container == NULL
        || m->kind->configs(m->container, &m->cfg, err) != 0
        || load_tensors(m, err) != 0
        || (m->cfg.text.tie_word_embeddings && tie_lm_head(m, err) != 0)
        || (m->tokenizer = m->kind->tokenizer(m->container, &m->cfg, err))
           == NULL)
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
    for (i = 0; i < m->table.n; i++) {
        free(m->table.v[i].name);
    }
    if (m->container != NULL) {
        m->kind->close(m->container);
    }
    if (m->tokenizer != NULL) {
        clef_tokenizer_free(m->tokenizer);
    }
    free(m->table.v);
    free(m->path);
    free(m);
}

const clef_text_config *
clef_model_text_config(const clef_model *m)
{
    return &m->cfg.text;
}

const clef_head_config *
clef_model_head_config(const clef_model *m)
{
    return &m->cfg.head;
}

const clef_vision_config *
clef_model_vision_config(const clef_model *m)
{
    return m->cfg.vision.present ? &m->cfg.vision : NULL;
}

int
clef_model_default_max_length(const clef_model *m)
{
    return m->cfg.family == CLEF_FAMILY_OMNI ? CLEF_OMNI_MAX_LENGTH : 0;
}

clef_family
clef_model_family(const clef_model *m)
{
    return m->cfg.family;
}

const clef_omni_config *
clef_model_omni_config(const clef_model *m)
{
    return m->cfg.family == CLEF_FAMILY_OMNI ? &m->cfg.omni : NULL;
}

const clef_audio_tower_config *
clef_model_audio_config(const clef_model *m)
{
    return m->cfg.audio.present ? &m->cfg.audio : NULL;
}

const clef_tokenizer *
clef_model_tokenizer(const clef_model *m)
{
    return m->tokenizer;
}

const char *
clef_model_dir(const clef_model *m)
{
    return m->path;
}

const char *
clef_model_container(const clef_model *m)
{
    return m->kind->name;
}

void
clef_model_weights(const clef_model *m, char *buf, size_t size)
{
    const clef_tensor  *t;

    buf[0] = '\0';
    if (m->kind->weights != NULL) {
        m->kind->weights(m->container, buf, size);
    }
    if (buf[0] == '\0') {
        /* a release stores its matrices as its embedding (Omni's layers
         * have no dense MLP to ask) */
        t = clef_model_role(m, CLEF_ROLE_EMBED, 0);
        snprintf(buf, size, "%s", t != NULL ? clef_dtype_name(t->dtype) : "?");
    }
}

int
clef_model_tensor_count(const clef_model *m)
{
    return m->table.n;
}

const clef_tensor *
clef_model_tensor_at(const clef_model *m, int i, const char **name)
{
    if (i < 0 || i >= m->table.n) {
        return NULL;
    }
    *name = m->table.v[i].name;
    return m->table.v[i].t;
}

const clef_tensor *
clef_model_tensor(const clef_model *m, const char *name)
{
    const model_entry  *e = find_entry(m, name, 0);

    return e != NULL ? e->t : NULL;
}

const clef_tensor *
clef_model_head_tensor(const clef_model *m, const char *name)
{
    const model_entry  *e = find_entry(m, name, 1);

    return e != NULL ? e->t : NULL;
}
