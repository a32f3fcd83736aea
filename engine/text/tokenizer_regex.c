/*
 * The tokenizer's regular expressions.  HF's tokenizers compiles Split
 * patterns with Oniguruma (Ruby syntax, UTF-8); we compile them with PCRE2
 * (JIT, UTF + UCP) after rewriting the constructs whose meaning differs:
 *   \s \S       Oniguruma: White_Space; PCRE2 UCP also takes U+180E
 *   \w \W \b \B Oniguruma: Alphabetic, Mark, Nd, Pc, and outside a class
 *               (its Latin-1 table) also ¹ ² ³ ¼ ½ ¾; PCRE2: L, N, _
 *   \h \H       Oniguruma: hex digit; PCRE2: horizontal space
 *   \v          Oniguruma: U+000B; PCRE2: vertical space
 *   \uHHHH      Oniguruma only
 *   (?m)        Ruby's dot-all, PCRE2's (?s)
 *   ^ $         always line anchors in Ruby: PCRE2_MULTILINE
 *   {,n}        Ruby's {0,n}
 * Constructs PCRE2 cannot express (nested classes, && intersections, POSIX
 * brackets, Oniguruma-only escapes) are refused rather than guessed.
 */
#include "text/tokenizer_impl.h"

#include <stdlib.h>
#include <string.h>

#define WORD_SET  "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}"
#define WORD      "[" WORD_SET "\\x{B2}\\x{B3}\\x{B9}\\x{BC}-\\x{BE}]"

/* Escapes whose meaning is the same in both engines, copied as they are. */
static const char  same_escapes[] = "dDnrtfaexAzZGKRXNkgc0123456789";

static pthread_key_t   thread_key;
static pthread_once_t  thread_once = PTHREAD_ONCE_INIT;
static int             thread_key_ok;

static void
thread_free(void *p)
{
    tk_thread  *th = p;

    if (th == NULL) {
        return;
    }
    pcre2_match_data_free(th->md);
    pcre2_match_context_free(th->mc);
    pcre2_jit_stack_free(th->js);
    free(th);
}

static void
thread_key_init(void)
{
    thread_key_ok = pthread_key_create(&thread_key, thread_free) == 0;
}

/* The main thread's state is released at exit: thread-specific data
 * destructors only run for threads that call pthread_exit or return. */
static void __attribute__((destructor))
thread_main_free(void)
{
    if (thread_key_ok) {
        thread_free(pthread_getspecific(thread_key));
        pthread_setspecific(thread_key, NULL);
    }
}

tk_thread *
tk_thread_get(void)
{
    tk_thread  *th;

    pthread_once(&thread_once, thread_key_init);
    if (!thread_key_ok) {
        return NULL;
    }
    th = pthread_getspecific(thread_key);
    if (th != NULL) {
        return th;
    }
    th = calloc(1, sizeof(*th));
    if (th == NULL) {
        return NULL;
    }
    /* Only the whole match is read: one ovector pair fits any pattern. */
    th->md = pcre2_match_data_create(1, NULL);
    th->mc = pcre2_match_context_create(NULL);
    if (th->md == NULL || th->mc == NULL
        || pthread_setspecific(thread_key, th) != 0)
    {
        thread_free(th);
        return NULL;
    }
    return th;
}

static int
put(clef_buf *out, const char *s)
{
    return clef_buf_append(out, s, strlen(s));
}

static int
is_hex(int c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')
           || (c >= 'A' && c <= 'F');
}

static int
is_alpha(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Length of the UTF-8 character starting with byte c (1 for stray bytes). */
static size_t
char_len(unsigned char c)
{
    return c < 0xc0 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
}

/*
 * Rewrites the escape at p[0..n) (p[0] == '\\'); *used gets its length.
 * Returns 0, -1 on allocation failure, or 1 with *bad set when the escape
 * has no PCRE2 equivalent.
 */
static int
translate_escape(const char *p, size_t n, int in_class, clef_buf *out,
    size_t *used, const char **bad)
{
    char    e;
    size_t  k;

    if (n < 2) {
        *used = 1;
        return put(out, "\\");          /* PCRE2 reports the error */
    }
    e = p[1];
    *used = 2;
    switch (e) {
    case 's':
        return put(out, "\\p{White_Space}");
    case 'S':
        return put(out, "\\P{White_Space}");
    case 'h':
        return put(out, in_class ? "0-9A-Fa-f" : "[0-9A-Fa-f]");
    case 'w':
        return put(out, in_class ? WORD_SET : WORD);
    case 'H':
    case 'W':
        if (in_class) {
            *bad = "a negated escape inside a character class";
            return 1;
        }
        return put(out, e == 'H' ? "[^0-9A-Fa-f]"
                        : "[^" WORD_SET "\\x{B2}\\x{B3}\\x{B9}\\x{BC}-\\x{BE}]");
    case 'b':
        if (in_class) {
            return put(out, "\\x08");
        }
        return put(out, "(?:(?<=" WORD ")(?!" WORD ")|(?<!" WORD ")(?=" WORD "))");
    case 'B':
        if (in_class) {
            *bad = "\\B inside a character class";
            return 1;
        }
        return put(out, "(?:(?<=" WORD ")(?=" WORD ")|(?<!" WORD ")(?!" WORD "))");
    case 'v':
        return put(out, "\\x0b");
    case 'u':
        if (n < 6 || !is_hex(p[2]) || !is_hex(p[3]) || !is_hex(p[4])
            || !is_hex(p[5]))
        {
            *bad = "\\u without four hex digits";
            return 1;
        }
        *used = 6;
        return clef_buf_printf(out, "\\x{%.4s}", p + 2);
    case 'p':
    case 'P':
        /* Ruby reads \pL as the letters p and L; PCRE2 as \p{L} */
        if (n < 3 || p[2] != '{') {
            *bad = "\\p without braces";
            return 1;
        }
        for (k = 3; k < n && p[k] != '}'; k++) {
            /* void */
        }
        *used = k < n ? k + 1 : n;
        return clef_buf_append(out, p, *used);
    default:
        break;
    }
    if (is_alpha((unsigned char) e) && strchr(same_escapes, e) == NULL) {
        *bad = "an escape PCRE2 does not share";
        return 1;
    }
    if (e >= '0' && e <= '9') {
        return clef_buf_append(out, p, 2);
    }
    if (!is_alpha((unsigned char) e)) {
        k = char_len((unsigned char) e);
        *used = 1 + (k < n - 1 ? k : n - 1);
    }
    return clef_buf_append(out, p, *used);
}

/* Translates the Oniguruma pattern p[0..n): 0, -1 on allocation failure,
 * 1 with *bad set for a construct PCRE2 cannot express. */
static int
translate(const char *p, size_t n, clef_buf *out, const char **bad)
{
    size_t  i = 0, j, used;
    int     in_class = 0, rc;
    char    c;

    while (i < n) {
        c = p[i];
        if (c == '\\') {
            rc = translate_escape(p + i, n - i, in_class, out, &used, bad);
            if (rc != 0) {
                return rc;
            }
            i += used;
            continue;
        }
        if (in_class) {
            if (c == '[') {
                *bad = (i + 1 < n && p[i + 1] == ':')
                       ? "a POSIX bracket expression" : "a nested character class";
                return 1;
            }
            if (c == '&' && i + 1 < n && p[i + 1] == '&') {
                *bad = "a character class intersection (&&)";
                return 1;
            }
            if (c == ']') {
                in_class = 0;
            }
            if (clef_buf_putc(out, c) != 0) {
                return -1;
            }
            i++;
            continue;
        }
        if (c == '[') {
            in_class = 1;
            j = i + 1;
            if (j < n && p[j] == '^') {
                j++;
            }
            if (j < n && p[j] == ']') {
                j++;                    /* a leading ] is a literal */
            }
            if (clef_buf_append(out, p + i, j - i) != 0) {
                return -1;
            }
            i = j;
            continue;
        }
        if (c == '(' && i + 2 < n && p[i + 1] == '?') {
            if (p[i + 2] == '~') {
                *bad = "the absent operator (?~...)";
                return 1;
            }
            for (j = i + 2; j < n && (is_alpha((unsigned char) p[j]) || p[j] == '-');
                 j++)
            {
                /* void */
            }
            if (j > i + 2 && j < n && (p[j] == ':' || p[j] == ')')) {
                if (put(out, "(?") != 0) {
                    return -1;
                }
                for (i += 2; i <= j; i++) {
                    if (p[i] != '-' && p[i] != ':' && p[i] != ')'
                        && strchr("imx", p[i]) == NULL)
                    {
                        *bad = "a group option other than i, m and x";
                        return 1;
                    }
                    /* Ruby's (?m) is dot-all */
                    if (clef_buf_putc(out, p[i] == 'm' ? 's' : p[i]) != 0) {
                        return -1;
                    }
                }
                continue;
            }
        }
        if (c == '{' && i + 1 < n && p[i + 1] == ',') {
            for (j = i + 2; j < n && p[j] >= '0' && p[j] <= '9'; j++) {
                /* void */
            }
            if (j > i + 2 && j < n && p[j] == '}') {
                if (put(out, "{0,") != 0) {
                    return -1;
                }
                i += 2;
                continue;
            }
        }
        if (clef_buf_putc(out, c) != 0) {
            return -1;
        }
        i++;
    }
    return 0;
}

int
tk_regex_compile(tk_regex *re, const char *pat, size_t n, int literal,
    const char *what, clef_error *err)
{
    clef_buf               src = { 0 };
    const char            *bad = NULL;
    pcre2_compile_context *cc;
    uint32_t               opt;
    int                    rc, ecode;
    PCRE2_SIZE             eoff;
    PCRE2_UCHAR            emsg[256];

    memset(re, 0, sizeof(*re));
    if (literal) {
        opt = PCRE2_UTF | PCRE2_LITERAL;
        rc = clef_buf_append(&src, pat, n);
    } else {
        opt = PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE;
        rc = translate(pat, n, &src, &bad);
    }
    if (rc < 0 || (rc == 0 && src.data == NULL && clef_buf_reserve(&src, 0) != 0)) {
        clef_buf_free(&src);
        return tk_oom(err);
    }
    if (rc > 0) {
        clef_buf_free(&src);
        return clef_error_set(err, 500, "tokenizer_unsupported", NULL,
                              "%s: the regex \"%.*s\" uses %s, which is not supported",
                              what, (int) n, pat, bad);
    }

    cc = pcre2_compile_context_create(NULL);
    if (cc == NULL) {
        clef_buf_free(&src);
        return tk_oom(err);
    }
    pcre2_set_newline(cc, PCRE2_NEWLINE_LF);
    pcre2_set_bsr(cc, PCRE2_BSR_UNICODE);
    re->code = pcre2_compile((PCRE2_SPTR) src.data, src.len, opt, &ecode, &eoff,
                             cc);
    pcre2_compile_context_free(cc);
    clef_buf_free(&src);
    if (re->code == NULL) {
        pcre2_get_error_message(ecode, emsg, sizeof(emsg));
        return clef_error_set(err, 500, "tokenizer_invalid", NULL,
                              "%s: cannot compile the regex \"%.*s\": %s",
                              what, (int) n, pat, (const char *) emsg);
    }
    re->jit = pcre2_jit_compile(re->code, PCRE2_JIT_COMPLETE) == 0;
    return 0;
}

void
tk_regex_free(tk_regex *re)
{
    pcre2_code_free(re->code);
    re->code = NULL;
}

/* One match at or after start: 1 found, 0 none, -1 error. */
static int
regex_find(const tk_regex *re, tk_thread *th, const char *s, size_t n,
    size_t start, size_t *ms, size_t *me)
{
    PCRE2_SIZE       *ov;
    pcre2_jit_stack  *js;
    size_t            size;
    int               rc;

    for ( ;; ) {
        if (re->jit) {
            rc = pcre2_jit_match(re->code, (PCRE2_SPTR) s, n, start, 0, th->md,
                                 th->mc);
        } else {
            rc = pcre2_match(re->code, (PCRE2_SPTR) s, n, start,
                             PCRE2_NO_UTF_CHECK, th->md, th->mc);
        }
        if (rc != PCRE2_ERROR_JIT_STACKLIMIT || th->js_size >= (64u << 20)) {
            break;
        }
        /* A long subject outgrew the JIT stack: retry with a bigger one. */
        size = th->js_size ? th->js_size * 4 : (1u << 20);
        js = pcre2_jit_stack_create(32 * 1024, size, NULL);
        if (js == NULL) {
            return -1;
        }
        pcre2_jit_stack_free(th->js);
        th->js = js;
        th->js_size = size;
        pcre2_jit_stack_assign(th->mc, NULL, js);
    }
    if (rc == PCRE2_ERROR_NOMATCH) {
        return 0;
    }
    if (rc < 0) {
        return -1;
    }
    ov = pcre2_get_ovector_pointer(th->md);
    *ms = ov[0];
    *me = ov[1];
    return 1;
}

int
tk_regex_split(const tk_regex *re, tk_thread *th, const char *s, size_t n,
    tk_piece_fn piece, void *ctx)
{
    size_t  last_end = 0, prev = 0, ms, me, k;
    int     have_last = 0, rc;
    size_t  last_match_end = 0;

    while (last_end <= n) {
        rc = regex_find(re, th, s, n, last_end, &ms, &me);
        if (rc < 0) {
            return -1;
        }
        if (rc == 0) {
            break;
        }
        if (ms == me && have_last && last_match_end == me) {
            /* The onig crate skips an empty match that touches the
             * previous one and searches again one character later. */
            k = last_end < n ? char_len((unsigned char) s[last_end]) : 1;
            last_end += k;
            continue;
        }
        last_end = me;
        last_match_end = me;
        have_last = 1;
        if (ms > prev && (rc = piece(ctx, s + prev, ms - prev)) != 0) {
            return rc;
        }
        if (me > ms && (rc = piece(ctx, s + ms, me - ms)) != 0) {
            return rc;
        }
        prev = me;
    }
    if (prev < n) {
        return piece(ctx, s + prev, n - prev);
    }
    return 0;
}

static pcre2_code      *word_code;
static pthread_once_t   word_once = PTHREAD_ONCE_INIT;

static void
word_init(void)
{
    int         ecode;
    PCRE2_SIZE  eoff;

    /* Rust regex's Unicode \w (UTS #18 annex C), anchored on one char. */
    word_code = pcre2_compile((PCRE2_SPTR) "[\\p{Alphabetic}\\p{M}\\p{Nd}"
                              "\\p{Pc}\\p{Join_Control}]",
                              PCRE2_ZERO_TERMINATED,
                              PCRE2_UTF | PCRE2_UCP | PCRE2_ANCHORED,
                              &ecode, &eoff, NULL);
}

static void __attribute__((destructor))
word_free(void)
{
    pcre2_code_free(word_code);
    word_code = NULL;
}

int
tk_is_word_char(tk_thread *th, const char *s, size_t n)
{
    int  rc;

    pthread_once(&word_once, word_init);
    if (word_code == NULL) {
        return -1;
    }
    rc = pcre2_match(word_code, (PCRE2_SPTR) s, char_len((unsigned char) s[0]) < n
                     ? char_len((unsigned char) s[0]) : n,
                     0, PCRE2_NO_UTF_CHECK, th->md, NULL);
    if (rc == PCRE2_ERROR_NOMATCH) {
        return 0;
    }
    return rc < 0 ? -1 : 1;
}
