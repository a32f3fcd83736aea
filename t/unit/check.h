/*
 * A minimal TAP producer for the C unit tests (run by prove).  Every check
 * prints "ok N - name" or "not ok N - name" with a diagnostic; check_done()
 * prints the plan and returns the exit status.
 */
#ifndef CLEF_CHECK_H
#define CLEF_CHECK_H

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int  check_count;
static int  check_failures;

static void __attribute__((format(printf, 4, 5), unused))
check_report(int ok, const char *file, int line, const char *fmt, ...)
{
    va_list  ap;

    check_count++;
    printf("%s %d - ", ok ? "ok" : "not ok", check_count);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    if (!ok) {
        check_failures++;
        printf("#   failed at %s:%d\n", file, line);
    }
    fflush(stdout);
}

#define CHECK(cond, ...)  check_report(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

#define CHECK_INT(got, want, ...)                                            \
    do {                                                                     \
        long long g_ = (long long) (got), w_ = (long long) (want);           \
        CHECK(g_ == w_, __VA_ARGS__);                                        \
        if (g_ != w_) printf("#   got %lld, want %lld\n", g_, w_);           \
    } while (0)

#define CHECK_STR(got, want, ...)                                            \
    do {                                                                     \
        const char *g_ = (got), *w_ = (want);                                \
        int ok_ = g_ != NULL && w_ != NULL && strcmp(g_, w_) == 0;           \
        CHECK(ok_, __VA_ARGS__);                                             \
        if (!ok_) printf("#   got  '%s'\n#   want '%s'\n",                   \
                         g_ ? g_ : "(null)", w_ ? w_ : "(null)");            \
    } while (0)

#define CHECK_NEAR(got, want, tol, ...)                                      \
    do {                                                                     \
        double g_ = (got), w_ = (want);                                      \
        int ok_ = fabs(g_ - w_) <= (tol);                                    \
        CHECK(ok_, __VA_ARGS__);                                             \
        if (!ok_) printf("#   got %.9g, want %.9g (tol %g)\n", g_, w_,       \
                         (double) (tol));                                    \
    } while (0)

static int __attribute__((unused))
check_done(void)
{
    printf("1..%d\n", check_count);
    return check_failures ? 1 : 0;
}

/* max |got - want| / max(1, max |want|) over n floats. */
static __attribute__((unused)) double
check_rel_err(const float *got, const float *want, int64_t n)
{
    double   e = 0, scale = 1, d;
    int64_t  i;

    for (i = 0; i < n; i++) {
        if (fabs(want[i]) > scale) {
            scale = fabs(want[i]);
        }
    }
    for (i = 0; i < n; i++) {
        d = fabs((double) got[i] - want[i]);
        if (isnan(d)) {
            return NAN;         /* fails every "err <= tol" check */
        }
        if (d > e) {
            e = d;
        }
    }
    return e / scale;
}

/* Paths the tests read, relative to the repository root: the fixtures. */
static __attribute__((unused)) const char *
check_fixtures(void)
{
    const char *p = getenv("CLEF_FIXTURES");
    return p ? p : "t/fixtures";
}

/* The real Qwen3 tokenizer (tokenizer.json, tokenizer_config.json), kept in
 * the repository so that a clone needs nothing beside it; the fixtures'
 * expected ids and checkpoint hashes are for exactly these bytes. */
static __attribute__((unused)) const char *
check_qwen3_tokenizer(void)
{
    static char  path[256];

    snprintf(path, sizeof(path), "%s/tokenizer/qwen3", check_fixtures());
    return path;
}

#endif
