/*
 * spans.c - sorted address ranges with a payload: the symbolizer's indexes
 * of a module's symbols and compile units (spans.h).
 *
 * Sorting is a merge sort of its own, which keeps equals in the order they
 * were added: a large library's symbol table is tens of thousands of spans,
 * and qsort's call per comparison and copy of each span through memcpy were
 * most of building its index, which a first analysis waits for.
 */
#include <stdlib.h>
#include <string.h>

#include "analyzer/symbols/spans.h"
#include "analyzer/util/reserve.h"

int gs_span_add(struct gs_span_index *ix, struct gs_span sp)
{
    if (gs_reserve((void **)&ix->v, &ix->cap, ix->n, sizeof *ix->v) != 0)
        return -1;
    ix->v[ix->n++] = sp;
    return 0;
}

static int before(const struct gs_span *a, const struct gs_span *b)
{
    return a->lo != b->lo ? a->lo < b->lo : a->rank < b->rank;
}

#define RUN 8 /* spans sorted by insertion before merging */

/* v[0..n) by (lo, rank), equals in their order, through tmp (n spans). */
static void sort(struct gs_span *v, size_t n, struct gs_span *tmp)
{
    for (size_t lo = 0; lo < n; lo += RUN) {
        size_t hi = n - lo > RUN ? lo + RUN : n;
        for (size_t i = lo + 1; i < hi; i++) {
            struct gs_span x = v[i];
            size_t j = i;
            for (; j > lo && before(&x, &v[j - 1]); j--)
                v[j] = v[j - 1];
            v[j] = x;
        }
    }
    struct gs_span *from = v, *to = tmp;
    for (size_t w = RUN; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = n - lo > w ? lo + w : n, hi = n - mid > w ? mid + w : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) /* the left one of equals first */
                to[k++] = before(&from[j], &from[i]) ? from[j++] : from[i++];
            while (i < mid)
                to[k++] = from[i++];
            while (j < hi)
                to[k++] = from[j++];
        }
        struct gs_span *t = from;
        from = to;
        to = t;
    }
    if (from != v)
        memcpy(v, from, n * sizeof *v);
}

/* The same order for qsort, when there is no memory for the merge (equals
 * may then come in another order). */
static int compare(const void *a, const void *b)
{
    const struct gs_span *x = a, *y = b;
    return before(x, y) ? -1 : before(y, x) ? 1 : 0;
}

void gs_span_finish(struct gs_span_index *ix)
{
    if (ix->n < 2)
        return;
    struct gs_span *tmp = malloc(ix->n * sizeof *tmp);
    if (tmp)
        sort(ix->v, ix->n, tmp);
    else
        qsort(ix->v, ix->n, sizeof ix->v[0], compare);
    free(tmp);
    size_t kept = 1;
    for (size_t i = 1; i < ix->n; i++)
        if (ix->v[i].lo != ix->v[kept - 1].lo)
            ix->v[kept++] = ix->v[i];
    ix->n = kept;
}

const struct gs_span *gs_span_find(const struct gs_span_index *ix, uint64_t a)
{
    size_t lo = 0, hi = ix->n; /* first span starting above a */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ix->v[mid].lo <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo, tries = 0; i > 0 && tries < 8; i--, tries++) {
        const struct gs_span *sp = &ix->v[i - 1];
        if (a < sp->hi)
            return sp;
    }
    return NULL;
}
