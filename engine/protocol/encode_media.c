/*
 * Records with media (see encode_media.h).
 */
#include "protocol/encode_media.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "media/prepare.h"
#include "model/model_media.h"


static int
plan_has(const clef_plan *plan, clef_media_kind kind)
{
    int  k;

    for (k = 0; k < plan->n_media; k++) {
        if (plan->media[k].kind == kind) {
            return 1;
        }
    }
    return 0;
}


void
clef_encode_media_release(clef_encode_opts *opts)
{
    int  k;

    for (k = 0; opts->media != NULL && k < opts->n_media; k++) {
        clef_media_item_free(&opts->media[k]);
    }
    free(opts->media);
    opts->media = NULL;
    opts->n_media = 0;
}


/* The kinds' begin() steps (prepare.h), each over the record's items of
 * its kind (contiguous in a plan). */
static int
begin_kinds(const clef_plan *plan, const clef_media_conf *mc,
    clef_media_run *run, clef_error *err)
{
    const clef_media_prep  *prep;
    int                     k, n;

    for (k = 0; k < plan->n_media; k += n) {
        for (n = 1; k + n < plan->n_media
                    && plan->media[k + n].kind == plan->media[k].kind; n++)
        {
            /* void */
        }
        prep = clef_media_prep_of(plan->media[k].kind);
        if (prep->begin != NULL
            && prep->begin(&plan->media[k], n, mc, run, err) != 0)
        {
            return -1;
        }
    }
    return 0;
}


static void
release_kinds(clef_media_run *run)
{
    const clef_media_prep  *prep;
    int                     kind;

    for (kind = 1; kind < CLEF_MEDIA_KINDS; kind++) {
        prep = clef_media_prep_of(kind);
        if (prep != NULL && prep->release != NULL) {
            prep->release(run);
        }
    }
}


/* The kinds' extend steps (prepare.h), once each for the kinds the
 * record has, in kind order. */
static int
extend_kinds(const clef_plan *plan, const clef_media_conf *mc,
    const clef_media_run *run, clef_encode_opts *opts, clef_error *err)
{
    const clef_media_prep  *prep;
    int                     kind;

    for (kind = 1; kind < CLEF_MEDIA_KINDS; kind++) {
        prep = clef_media_prep_of(kind);
        if (prep != NULL && prep->extend != NULL
            && plan_has(plan, (clef_media_kind) kind)
            && prep->extend(plan->media, plan->n_media, &opts->media,
                            &opts->n_media, mc, run, err) != 0)
        {
            return -1;
        }
    }
    return 0;
}


/* Each kind's step over the record's items (prepare.h's finish), once
 * every item is prepared, for the kinds the record has. */
static int
finish_kinds(const clef_media_conf *mc, clef_encode_opts *opts,
    clef_error *err)
{
    const clef_media_prep  *prep;
    int                     kind, k;

    for (kind = 1; kind < CLEF_MEDIA_KINDS; kind++) {
        prep = clef_media_prep_of(kind);
        if (prep == NULL || prep->finish == NULL) {
            continue;
        }
        for (k = 0; k < opts->n_media; k++) {
            if (opts->media[k].kind == (clef_media_kind) kind) {
                break;
            }
        }
        if (k < opts->n_media
            && prep->finish(opts->media, opts->n_media, mc, err) != 0)
        {
            return -1;
        }
    }
    return 0;
}


int
clef_encode_media_prepare(const clef_media_conf *mc, const clef_plan *plan,
    clef_encode_opts *opts, clef_error *err)
{
    const clef_media_kind_info  *kind;
    const clef_media_prep       *prep;
    const clef_media_input      *in;
    clef_media_conf              conf = *mc;
    clef_media_run               run;
    int64_t                      ids;
    int                          k, index, max_length;

    opts->media = NULL;
    opts->n_media = 0;
    for (k = 0; k < plan->n_media; k++) {
        in = &plan->media[k];
        kind = clef_media_kind_of(in->kind);
        /* a kind this engine cannot prepare or place is refused before
         * anything is decoded */
        if (!(mc->accepts & CLEF_MEDIA_BIT(in->kind)) || in->format == 0
            || clef_media_prep_of(in->kind) == NULL
            || clef_media_prep_of(in->kind)->expand == NULL)
        {
            return clef_error_set(err, 400, kind->unsupported, "",
                                  "This model does not accept %s.",
                                  kind->many);
        }
    }
    /* Clef Omni's reference hands its processor the request's
     * media_kwargs beside its own videos_kwargs, which it refuses or
     * applies its own way: none is taken with its videos */
    if (CLEF_MC_VIDEO(mc).sampling == CLEF_VIDEO_TIMED && plan->kwargs.set != 0
        && plan_has(plan, CLEF_MEDIA_VIDEO))
    {
        return clef_error_set(err, 400, "media_kwargs_unsupported",
            "[\"body\",\"media_kwargs\"]",
            "Clef Omni takes no media_kwargs with videos: its reference "
            "samples them at 2 frames a second with its own sizes.");
    }
    /* items that cannot fit are refused before a pixel is decoded */
    ids = clef_plan_media_ids(plan, mc);
    max_length = opts->max_length > 0 ? opts->max_length
                                      : CLEF_DEFAULT_MAX_LENGTH;
    if (ids > max_length) {
        return clef_error_set(err, 413, "max_tokens_exceeded", "",
            "The %d %s need %lld tokens; the limit is %d.", plan->n_media,
            clef_plan_media_noun(plan), (long long) ids, max_length);
    }
    opts->media = calloc((size_t) plan->n_media + 1, sizeof(clef_media_item));
    if (opts->media == NULL) {
        return clef_error_set(err, 500, "internal_error", "", "Out of memory.");
    }
    opts->n_media = plan->n_media;
    clef_media_conf_tokens(mc, opts->tokens);
    /* what the request's media_kwargs change in its processors */
    clef_media_conf_apply_kwargs(&conf, &plan->kwargs);
    memset(&run, 0, sizeof(run));
    if (opts->media_run != NULL) {
        run.dec = *opts->media_run;
    } else {
        run.dec.progress = opts->progress;
        run.dec.ctx = opts->progress_ctx;
    }
    opts->newline_each = mc->newline_each;

    /* one item at a time (at most one decoded frame is held), but a kind
     * decoded in one round trip a record first (begin_kinds); a refusal
     * names the item by its index among its kind's */
    if (begin_kinds(plan, &conf, &run, err) != 0) {
        release_kinds(&run);
        clef_encode_media_release(opts);
        return -1;
    }
    for (k = 0, index = 0; k < plan->n_media; k++, index++) {
        in = &plan->media[k];
        if (k > 0 && in->kind != plan->media[k - 1].kind) {
            index = 0;
        }
        prep = clef_media_prep_of(in->kind);
        if (prep->prepare(in, index, &conf, &run, &opts->media[k], err) != 0) {
            release_kinds(&run);
            clef_encode_media_release(opts);
            return -1;
        }
    }
    release_kinds(&run);
    /* items that bring items of another kind (a video's sound) */
    if (extend_kinds(plan, &conf, &run, opts, err) != 0) {
        clef_encode_media_release(opts);
        return -1;
    }
    if (finish_kinds(&conf, opts, err) != 0) {
        clef_encode_media_release(opts);
        return -1;
    }
    return 0;
}


int
clef_encode_with_media(const clef_model *m, const clef_request *req,
    const clef_encode_opts *opts, clef_record *rec, clef_error *err)
{
    clef_media_conf   mc;
    clef_encode_opts  o;
    clef_buf          blob = { NULL, 0, 0 };
    clef_plan         plan;
    int               rc = -1;

    memset(rec, 0, sizeof(*rec));
    if (opts != NULL) {
        o = *opts;
    } else {
        clef_encode_opts_default(&o);
    }
    o.media = NULL;
    o.n_media = 0;
    clef_model_media_conf(m, &mc);
    if (clef_plan_build(req, &blob, err) != 0
        || clef_plan_view(&plan, blob.data, blob.len, err) != 0)
    {
        clef_buf_free(&blob);
        return -1;
    }
    if (plan.n_media == 0
        || clef_encode_media_prepare(&mc, &plan, &o, err) == 0)
    {
        rc = clef_encode_plan(clef_model_tokenizer(m), &plan, &o, rec, err);
        clef_encode_media_release(&o);
    }
    clef_plan_free(&plan);
    clef_buf_free(&blob);
    return rc;
}
