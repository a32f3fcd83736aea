/*
 * Added tokens, matched the way HF's AddedVocabulary does: an automaton
 * over the token contents finds the leftmost-longest match, the search
 * resumes after it (non-overlapping, even when the match is discarded),
 * single_word discards a match glued to a word character, lstrip and rstrip
 * pull the White_Space around a match into it.
 */
#include "text/tokenizer_impl.h"

#include <stdlib.h>
#include <string.h>

/* Node 0 is a sentinel: every link and pattern index is 1-based. */
static int32_t
trie_node(tk_trie *t, uint8_t byte)
{
    size_t         cap;
    tk_trie_node  *nodes;

    if (t->n_nodes == t->cap_nodes) {
        cap = t->cap_nodes ? t->cap_nodes * 2 : 64;
        nodes = realloc(t->nodes, cap * sizeof(*nodes));
        if (nodes == NULL) {
            return -1;
        }
        t->nodes = nodes;
        t->cap_nodes = cap;
    }
    memset(&t->nodes[t->n_nodes], 0, sizeof(tk_trie_node));
    t->nodes[t->n_nodes].byte = byte;
    return (int32_t) t->n_nodes++;
}

int
tk_trie_add(tk_trie *t, const char *s, size_t n, int32_t id, uint8_t flags)
{
    int32_t   node, c;
    int32_t  *ids;
    uint8_t  *fl;
    size_t    i;
    uint8_t   b;

    if (n == 0) {
        return 0;
    }
    if (t->n_nodes == 0) {
        if (trie_node(t, 0) < 0) {
            return -1;
        }
        t->first_byte = -1;
    }
    ids = realloc(t->ids, (t->n_patterns + 1) * sizeof(*ids));
    if (ids == NULL) {
        return -1;
    }
    t->ids = ids;
    fl = realloc(t->flags, (t->n_patterns + 1) * sizeof(*fl));
    if (fl == NULL) {
        return -1;
    }
    t->flags = fl;

    b = (uint8_t) s[0];
    node = t->root[b];
    if (node == 0) {
        if ((node = trie_node(t, b)) < 0) {
            return -1;
        }
        t->root[b] = node;
        /* memchr finds candidates when every pattern starts alike */
        t->first_byte = t->n_patterns == 0 ? b : -2;
    }
    for (i = 1; i < n; i++) {
        b = (uint8_t) s[i];
        for (c = t->nodes[node].first_child; c != 0; c = t->nodes[c].next_sibling) {
            if (t->nodes[c].byte == b) {
                break;
            }
        }
        if (c == 0) {
            if ((c = trie_node(t, b)) < 0) {
                return -1;
            }
            t->nodes[c].next_sibling = t->nodes[node].first_child;
            t->nodes[node].first_child = c;
        }
        node = c;
    }
    t->ids[t->n_patterns] = id;
    t->flags[t->n_patterns] = flags;
    t->n_patterns++;
    if (t->nodes[node].pattern == 0) {
        /* the same content twice: the first pattern is the one reported */
        t->nodes[node].pattern = (int32_t) t->n_patterns;
    }
    return 0;
}

void
tk_trie_free(tk_trie *t)
{
    free(t->nodes);
    free(t->ids);
    free(t->flags);
    memset(t, 0, sizeof(*t));
}

/* Leftmost-longest match at or after from: 1 found, 0 none. */
static int
trie_find(const tk_trie *t, const char *s, size_t n, size_t from,
    size_t *ms, size_t *me, int32_t *pat)
{
    const tk_trie_node  *nodes = t->nodes;
    const char          *q;
    size_t               i, j, end = 0;
    int32_t              node, c, best;

    for (i = from; i < n; i++) {
        if (t->first_byte >= 0) {
            q = memchr(s + i, t->first_byte, n - i);
            if (q == NULL) {
                return 0;
            }
            i = (size_t) (q - s);
        }
        node = t->root[(uint8_t) s[i]];
        if (node == 0) {
            continue;
        }
        best = 0;
        for (j = i + 1; ; j++) {
            if (nodes[node].pattern != 0) {
                best = nodes[node].pattern;
                end = j;
            }
            if (j >= n) {
                break;
            }
            for (c = nodes[node].first_child; c != 0; c = nodes[c].next_sibling) {
                if (nodes[c].byte == (uint8_t) s[j]) {
                    break;
                }
            }
            if (c == 0) {
                break;
            }
            node = c;
        }
        if (best != 0) {
            *ms = i;
            *me = end;
            *pat = best - 1;
            return 1;
        }
    }
    return 0;
}

int
tk_added_split(const tk_trie *t, tk_thread *th, const char *s, size_t n,
    tk_seg_fn seg, void *ctx)
{
    size_t    pos = 0, start_offset = 0, ms, me, start, stop, k, len;
    int32_t   pat;
    uint8_t   flags;
    int       rc, w;

    if (n == 0) {
        return 0;
    }
    while (t->n_patterns > 0 && trie_find(t, s, n, pos, &ms, &me, &pat)) {
        pos = me;
        flags = t->flags[pat];
        if (flags & TK_ADDED_SINGLE_WORD) {
            if (ms > 0) {
                k = tk_utf8_last(s, ms);
                if ((w = tk_is_word_char(th, s + k, ms - k)) != 0) {
                    if (w < 0) {
                        return -1;
                    }
                    continue;
                }
            }
            if (me < n) {
                if ((w = tk_is_word_char(th, s + me, n - me)) != 0) {
                    if (w < 0) {
                        return -1;
                    }
                    continue;
                }
            }
        }
        start = ms;
        stop = me;
        if (flags & TK_ADDED_LSTRIP) {
            while (start > 0) {
                k = tk_utf8_last(s, start);
                if (!tk_is_white_space(tk_utf8_decode(s + k, start - k, &len))) {
                    break;
                }
                start = k;
            }
            /* spaces an earlier match already took stay with it */
            if (start < start_offset) {
                start = start_offset < stop ? start_offset : stop;
            }
        }
        if (flags & TK_ADDED_RSTRIP) {
            while (stop < n
                   && tk_is_white_space(tk_utf8_decode(s + stop, n - stop, &len)))
            {
                stop += len;
            }
        }
        if (start_offset < start
            && (rc = seg(ctx, -1, s + start_offset, start - start_offset)) != 0)
        {
            return rc;
        }
        if ((rc = seg(ctx, t->ids[pat], s + start, stop - start)) != 0) {
            return rc;
        }
        start_offset = stop;
    }
    if (start_offset < n) {
        return seg(ctx, -1, s + start_offset, n - start_offset);
    }
    return 0;
}
