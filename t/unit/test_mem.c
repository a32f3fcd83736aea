/*
 * libclef's allocations routed to a caller's pool (mem.h): while a pool is
 * in use, request-sized allocations (a parsed request's arena, its JSON
 * scratch, a plan, an answer) come from it and nothing of it reaches
 * free(); blocks from either side are freed and grown correctly whichever
 * allocator is current.
 */
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "check.h"
#include "protocol/plan.h"
#include "protocol/request.h"

typedef struct {
    unsigned char  *base;
    size_t          used;
    size_t          size;
    int             calls;
} bump;


static void *
bump_alloc(void *ctx, size_t n)
{
    bump  *b = ctx;
    void  *p;

    n = (n + 15) & ~(size_t) 15;
    if (b->used + n > b->size) {
        return NULL;
    }
    p = b->base + b->used;
    b->used += n;
    b->calls++;
    return p;
}


static int
inside(const bump *b, const void *p)
{
    return (const unsigned char *) p >= b->base
           && (const unsigned char *) p < b->base + b->size;
}


int
main(void)
{
    static const char  body[] =
        "{\"model\":\"m\",\"state\":{\"ticket\":\"charged twice\",\"n\":[1,2.5]},"
        "\"questions\":{\"refund\":{\"type\":\"noul\",\"instructions\":\"Refund?\"},"
        "\"team\":{\"type\":\"choice\",\"criteria\":{\"billing\":null,"
        "\"tech\":\"bugs\"}}}}";
    bump                 b;
    clef_mem_pool        pool;
    const clef_mem_pool *prev;
    clef_request         req;
    clef_error           err;
    clef_buf             plan = { 0 };
    clef_plan            view;
    char                *h, *p, *q;
    int                  rc;

    (void) check_fixtures;
    b.size = 1 << 20;
    b.base = aligned_alloc(16, b.size);
    b.used = 0;
    b.calls = 0;
    pool.alloc = bump_alloc;
    pool.ctx = &b;

    /* heap blocks, then a pool in use: each side handled by its kind */
    h = clef_mem_alloc(100);
    CHECK(h != NULL && !inside(&b, h) && ((uintptr_t) h & 15) == 0,
          "without a pool: the heap, 16-byte aligned");
    prev = clef_mem_use(&pool);
    CHECK(prev == NULL, "no pool was in use");
    p = clef_mem_alloc(100);
    CHECK(p != NULL && inside(&b, p) && ((uintptr_t) p & 15) == 0,
          "with a pool: from it, 16-byte aligned");
    memset(p, 'x', 100);
    q = clef_mem_realloc(p, 5000);
    CHECK(q != NULL && inside(&b, q) && q[99] == 'x', "a pool block grows by "
          "a copy in the pool");
    memcpy(h, "heap", 5);
    h = clef_mem_realloc(h, 200);
    CHECK(h != NULL && inside(&b, h) && strcmp(h, "heap") == 0,
          "a heap block grown while the pool is in use moves into it");
    clef_mem_free(q);

    /* the request path: parse, render a plan, view it */
    rc = clef_request_parse(&req, body, sizeof(body) - 1, NULL, &err);
    CHECK_INT(rc, 0, "a request parses with the pool in use");
    CHECK(rc == 0 && inside(&b, req.questions), "its arena is in the pool");
    CHECK(clef_plan_build(&req, &plan, &err) == 0 && inside(&b, plan.data),
          "a plan is rendered into the pool");
    CHECK(clef_plan_view(&view, plan.data, plan.len, &err) == 0
          && inside(&b, view.questions), "and viewed from it");
    clef_plan_free(&view);
    clef_mem_use(NULL);

    /* freed after the pool was put away: nothing reaches free() */
    clef_buf_free(&plan);
    clef_request_free(&req);
    clef_mem_free(h);
    CHECK(b.calls > 5, "%d allocations came from the pool", b.calls);

    /* back on the heap */
    p = clef_mem_alloc(64);
    CHECK(p != NULL && !inside(&b, p), "the heap again after clef_mem_use(NULL)");
    clef_mem_free(p);
    free(b.base);
    return check_done();
}
