/*
 * A Clef release directory as a container (container.h;
 * docs/spec/encoder-and-head.md §1, §7, docs/spec/backbone.md §1-§2):
 * config.json, joint_head_config.json, preprocessor_config.json and
 * video_preprocessor_config.json when the tower is there,
 * model.safetensors.index.json + shards (or one model.safetensors),
 * joint_head.safetensors, tokenizer.json.  Tensors stay in the mapped
 * files.  A checkpoint with Qwen3_5ForCausalLM names ("model.X") is mapped
 * onto the canonical "model.language_model.X"; mtp.* is never read, nor
 * model.visual.* when the config has no vision_config.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/path.h"
#include "model/container.h"
#include "model/model_config.h"
#include "model/model_omni.h"
#include "model/model_vision.h"
#include "model/safetensors.h"

#define CANONICAL  CLEF_TEXT_PREFIX

typedef struct {
    char              *name;            /* file name inside dir */
    clef_safetensors  *st;
} release_file;

typedef struct {
    char               *dir;
    int                 flags;
    release_file       *files;
    int                 n_files;
    clef_safetensors   *head_file;
    char               *head_path;      /* joint_head.safetensors */
} release;

static int
oom(clef_error *err)
{
    return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
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
        clef_error_fail(err, CLEF_E_MODEL, "%s: cannot open: %s", path,
                        strerror(errno));
        return NULL;
    }
    root = json_loadf(f, JSON_REJECT_DUPLICATES, &jerr);
    fclose(f);
    if (root == NULL) {
        clef_error_fail(err, CLEF_E_MODEL, "%s: malformed JSON: %s (line %d)",
                        path, jerr.text, jerr.line);
    }
    return root;
}

/* ---- open / close ------------------------------------------------------- */

static int
release_probe(const char *path)
{
    return 1;
}

static void
release_close(void *c)
{
    release  *r = c;
    int       i;

    if (r == NULL) {
        return;
    }
    for (i = 0; i < r->n_files; i++) {
        clef_safetensors_close(r->files[i].st);
        free(r->files[i].name);
    }
    clef_safetensors_close(r->head_file);
    free(r->files);
    free(r->head_path);
    free(r->dir);
    free(r);
}

static void *
release_open(const char *path, const char *mmproj, int flags,
    clef_error *err)
{
    release      *r;
    struct stat   st;

    /* the path names a file that is not a GGUF (its magic): say so
     * rather than fail on "FILE/config.json" */
    if (stat(path, &st) == 0 && !S_ISDIR(st.st_mode)) {
        clef_error_fail(err, CLEF_E_MODEL, "%s is not a directory (a Clef"
                        " release) nor a GGUF file (it does not begin with"
                        " \"GGUF\")", path);
        return NULL;
    }
    if (mmproj != NULL) {
        clef_error_fail(err, CLEF_E_MODEL, "%s: mmproj= names the vision"
                        " tower of a GGUF model; a release directory has its"
                        " tower in it", path);
        return NULL;
    }
    r = calloc(1, sizeof(*r));

    if (r == NULL || (r->dir = strdup(path)) == NULL
        || (r->head_path = clef_path_join(path, "joint_head.safetensors"))
           == NULL)
    {
        release_close(r);
        oom(err);
        return NULL;
    }
    r->flags = flags;
    return r;
}

static const char *
release_where(void *c, clef_source s)
{
    release  *r = c;

    return s == CLEF_SOURCE_HEAD ? r->head_path : r->dir;
}

/* ---- configs ------------------------------------------------------------ */

static int
release_configs(void *c, clef_model_configs *cfg, clef_error *err)
{
    release  *r = c;
    json_t   *root;
    char     *path, *head;
    int       rc = -1;

    path = clef_path_join(r->dir, "config.json");
    head = clef_path_join(r->dir, "joint_head_config.json");
    if (path == NULL || head == NULL) {
        oom(err);
        goto done;
    }

    root = load_json(path, err);
    if (root == NULL) {
        goto done;
    }
    cfg->family = clef_config_family(root);
    rc = clef_text_config_parse(root, path, &cfg->text, err);
    if (rc == 0 && cfg->family == CLEF_FAMILY_OMNI) {
        /* the thinker's towers and token ids */
        rc = clef_vision_config_parse(clef_omni_thinker(root), path,
                                      &cfg->vision, err);
        if (rc == 0) {
            rc = clef_omni_config_parse(root, path, cfg, err);
        }
    } else if (rc == 0) {
        rc = clef_vision_config_parse(root, path, &cfg->vision, err);
    }
    json_decref(root);
    if (rc != 0) {
        goto done;
    }
    if (cfg->vision.present) {
        free(path);
        path = clef_path_join(r->dir, "preprocessor_config.json");
        if (path == NULL) {
            rc = oom(err);
            goto done;
        }
        root = exists(path) ? load_json(path, err) : NULL;
        if (exists(path) && root == NULL) {
            rc = -1;
            goto done;
        }
        rc = clef_processor_config_parse(root, path, &cfg->vision,
                                         &cfg->vision.processor, err);
        if (rc == 0 && cfg->audio.present) {
            rc = clef_audio_features_parse(root, path, &cfg->audio, err);
        }
        json_decref(root);
        if (rc != 0) {
            goto done;
        }
        free(path);
        path = clef_path_join(r->dir, "video_preprocessor_config.json");
        if (path == NULL) {
            rc = oom(err);
            goto done;
        }
        root = exists(path) ? load_json(path, err) : NULL;
        if (exists(path) && root == NULL) {
            rc = -1;
            goto done;
        }
        rc = clef_video_processor_config_parse(root, path, &cfg->vision,
                                               &cfg->vision.video, err);
        json_decref(root);
        if (rc != 0) {
            goto done;
        }
    }

    rc = -1;
    if (!exists(head)) {
        clef_error_set(err, 501, "not_a_decision_model", NULL,
                       "not a decision model: %s has no joint_head_config.json",
                       r->dir);
        goto done;
    }
    root = load_json(head, err);
    if (root == NULL) {
        goto done;
    }
    rc = clef_head_config_parse(root, head, &cfg->head, err);
    json_decref(root);
    if (rc == 0 && cfg->head.hidden_size != cfg->text.hidden_size) {
        rc = clef_error_fail(err, CLEF_E_MODEL, "%s: hidden_size %d does not "
                             "match the backbone's %d", head,
                             cfg->head.hidden_size, cfg->text.hidden_size);
    }

done:
    free(path);
    free(head);
    return rc;
}

/* ---- tensors ------------------------------------------------------------ */

static int
is_vision_tensor(const char *name)
{
    return strncmp(name, CLEF_VISION_PREFIX,
                   sizeof(CLEF_VISION_PREFIX) - 1) == 0;
}

/* The canonical name of a stored tensor into buf, or NULL for one never
 * read (MTP; the tower when the config has none, as Qwen3_5ForCausalLM;
 * a Clef Omni release's talker.* and code2wav.*, model_omni.h).
 * Qwen3_5ForCausalLM stores "model.X"; the tower keeps its name. */
static const char *
canonical_name(const clef_model_configs *cfg, const char *stored, char *buf,
    size_t size, int *skip)
{
    if (cfg->family == CLEF_FAMILY_OMNI) {
        *skip = clef_omni_canonical(stored, buf, size) != 1
                || (!cfg->vision.present && is_vision_tensor(buf));
        return *skip ? NULL : buf;
    }
    *skip = strncmp(stored, "mtp.", 4) == 0
            || (!cfg->vision.present && is_vision_tensor(stored));
    if (*skip) {
        return NULL;
    }
    if (!is_vision_tensor(stored) && strncmp(stored, "model.", 6) == 0
        && strncmp(stored, CANONICAL, sizeof(CANONICAL) - 1) != 0)
    {
        snprintf(buf, size, CANONICAL "%s", stored + 6);
    } else {
        snprintf(buf, size, "%s", stored);
    }
    return buf;
}

static int
add_tensor(clef_tensor_table *tt, const clef_tensor *t,
    const clef_safetensors *st, const clef_model_configs *cfg,
    clef_error *err)
{
    char         buf[512];
    const char  *name;
    int          skip;

    if (strlen(t->name) + sizeof(CANONICAL) >= sizeof(buf)) {
        return clef_error_fail(err, CLEF_E_MODEL,
                               "%s: tensor name '%.64s...' is too long",
                               clef_safetensors_path(st), t->name);
    }
    name = canonical_name(cfg, t->name, buf, sizeof(buf), &skip);
    return skip ? 0 : clef_tensor_table_add(tt, name, 0, t,
                                            clef_safetensors_path(st), err);
}

static clef_safetensors *
open_file(release *r, const char *name, clef_error *err)
{
    release_file      *f;
    clef_safetensors  *st;
    char              *path;
    int                i;

    for (i = 0; i < r->n_files; i++) {
        if (strcmp(r->files[i].name, name) == 0) {
            return r->files[i].st;
        }
    }
    path = clef_path_join(r->dir, name);
    f = realloc(r->files, (size_t) (r->n_files + 1) * sizeof(*f));
    if (path == NULL || f == NULL) {
        free(path);
        if (f != NULL) {
            r->files = f;
        }
        oom(err);
        return NULL;
    }
    r->files = f;
    st = clef_safetensors_open(path, r->flags & CLEF_MODEL_HEADERS_ONLY, err);
    free(path);
    if (st == NULL) {
        return NULL;
    }
    f = &r->files[r->n_files];
    f->name = strdup(name);
    f->st = st;
    if (f->name == NULL) {
        clef_safetensors_close(st);
        oom(err);
        return NULL;
    }
    r->n_files++;
    return st;
}

static int
load_index(release *r, const char *index_path, const clef_model_configs *cfg,
    clef_tensor_table *tt, clef_error *err)
{
    json_t             *root, *map, *v;
    const char         *name, *file;
    const clef_tensor  *t;
    clef_safetensors   *st;
    char                buf[512];
    int                 skip, rc = -1;

    root = load_json(index_path, err);
    if (root == NULL) {
        return -1;
    }
    map = json_object_get(root, "weight_map");
    if (!json_is_object(map)) {
        clef_error_fail(err, CLEF_E_MODEL, "%s: no weight_map object",
                        index_path);
        goto done;
    }

    json_object_foreach(map, name, v) {
        canonical_name(cfg, name, buf, sizeof(buf), &skip);
        if (skip) {
            continue;                     /* never open a shard of these */
        }
        file = json_is_string(v) ? json_string_value(v) : NULL;
        if (file == NULL || file[0] == '\0' || file[0] == '.'
            || strchr(file, '/') != NULL)
        {
            clef_error_fail(err, CLEF_E_MODEL, "%s: tensor '%s' is mapped to "
                            "%s%s%s, not a file name in the directory",
                            index_path, name, file ? "'" : "",
                            file ? file : "a non-string", file ? "'" : "");
            goto done;
        }
        st = open_file(r, file, err);
        if (st == NULL) {
            goto done;
        }
        t = clef_safetensors_find(st, name);
        if (t == NULL) {
            clef_error_fail(err, CLEF_E_MODEL, "%s: tensor '%s' is mapped to "
                            "'%s', which does not hold it", index_path, name,
                            file);
            goto done;
        }
        if (add_tensor(tt, t, st, cfg, err) != 0) {
            goto done;
        }
    }
    rc = 0;

done:
    json_decref(root);
    return rc;
}

static int
load_single(release *r, const clef_model_configs *cfg, clef_tensor_table *tt,
    clef_error *err)
{
    clef_safetensors  *st;
    int                i;

    st = open_file(r, "model.safetensors", err);
    if (st == NULL) {
        return -1;
    }
    for (i = 0; i < clef_safetensors_count(st); i++) {
        if (add_tensor(tt, clef_safetensors_at(st, i), st, cfg, err) != 0) {
            return -1;
        }
    }
    return 0;
}

static int
load_backbone(release *r, const clef_model_configs *cfg, clef_tensor_table *tt,
    clef_error *err)
{
    char  *index = clef_path_join(r->dir, "model.safetensors.index.json");
    char  *single = clef_path_join(r->dir, "model.safetensors");
    int    rc;

    if (index == NULL || single == NULL) {
        rc = oom(err);
    } else if (exists(index)) {
        rc = load_index(r, index, cfg, tt, err);
    } else if (exists(single)) {
        rc = load_single(r, cfg, tt, err);
    } else {
        rc = clef_error_fail(err, CLEF_E_MODEL, "%s: no "
                             "model.safetensors.index.json or "
                             "model.safetensors", r->dir);
    }
    free(index);
    free(single);
    return rc;
}

static int
load_head(release *r, clef_tensor_table *tt, clef_error *err)
{
    const clef_tensor  *t;
    int                 i;

    r->head_file = clef_safetensors_open(r->head_path,
                                         r->flags & CLEF_MODEL_HEADERS_ONLY,
                                         err);
    if (r->head_file == NULL) {
        return -1;
    }
    for (i = 0; i < clef_safetensors_count(r->head_file); i++) {
        t = clef_safetensors_at(r->head_file, i);
        if (clef_tensor_table_add(tt, t->name, 1, t, r->head_path, err) != 0) {
            return -1;
        }
    }
    return 0;
}

static int
release_tensors(void *c, const clef_model_configs *cfg, clef_source s,
    clef_tensor_table *tt, clef_error *err)
{
    release  *r = c;

    return s == CLEF_SOURCE_HEAD ? load_head(r, tt, err)
                                 : load_backbone(r, cfg, tt, err);
}

/* ---- tokenizer ---------------------------------------------------------- */

static clef_tokenizer *
release_tokenizer(void *c, const clef_model_configs *cfg, clef_error *err)
{
    release         *r = c;
    clef_tokenizer  *tok;
    char            *path = clef_path_join(r->dir, "tokenizer.json");
    size_t           n;

    if (path == NULL) {
        oom(err);
        return NULL;
    }
    tok = clef_tokenizer_load(path, err);
    if (tok != NULL) {
        n = clef_tokenizer_vocab_size(tok);
        if (n > (size_t) cfg->text.vocab_size) {
            clef_error_fail(err, CLEF_E_MODEL, "%s: %zu token ids do not fit "
                            "the vocab_size of %d", path, n,
                            cfg->text.vocab_size);
            clef_tokenizer_free(tok);
            tok = NULL;
        }
    }
    free(path);
    return tok;
}

const clef_container_kind  clef_container_release = {
    "release directory",
    release_probe,
    release_open,
    release_configs,
    release_tensors,
    release_where,
    release_tokenizer,
    NULL,                       /* weights: the matrices' one type */
    release_close,
};
