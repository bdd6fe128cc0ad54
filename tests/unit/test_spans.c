/*
 * test_spans.c - analyzer/symbols/spans.c: an index of address ranges is
 * sorted by start address and keeps, of spans starting at one address, the
 * lowest rank and of equal ranks the first added (as the symbolizer's
 * symbol and CU indexes need), at every size around the merge's runs; and
 * a lookup finds the range that holds an address.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include "analyzer/symbols/spans.h"

static uint64_t next(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

/* What finishing must give: a stable insertion sort, then the first of
 * each start address. */
static size_t reference(struct gs_span *v, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        struct gs_span x = v[i];
        size_t j = i;
        for (; j > 0 && (x.lo < v[j - 1].lo || (x.lo == v[j - 1].lo && x.rank < v[j - 1].rank));
             j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
    size_t kept = n ? 1 : 0;
    for (size_t i = 1; i < n; i++)
        if (v[i].lo != v[kept - 1].lo)
            v[kept++] = v[i];
    return kept;
}

Test(spans, sorted_with_the_first_lowest_rank_of_each_address)
{
    static const size_t sizes[] = {0, 1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 1000, 2049};
    uint64_t s = 5;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        for (int round = 0; round < 4; round++) {
            struct gs_span_index ix = {0};
            struct gs_span *want = malloc((n ? n : 1) * sizeof *want);
            cr_assert_not_null(want);
            uint64_t range = round == 0 ? 4 : round == 1 ? n + 1 : 1ull << 40; /* ties: many, some, few */
            for (size_t i = 0; i < n; i++) {
                /* u.cu: the order added, to tell equals apart */
                struct gs_span sp = {.lo = next(&s) % range, .rank = (int)(next(&s) % 3), .u.cu = i};
                if (round == 3)
                    sp.lo = n - i; /* descending */
                sp.hi = sp.lo + 1 + next(&s) % 100;
                cr_assert_eq(gs_span_add(&ix, sp), 0);
                want[i] = sp;
            }
            size_t kept = reference(want, n);
            gs_span_finish(&ix);
            cr_assert_eq(ix.n, kept, "%zu spans, round %d: kept", n, round);
            for (size_t i = 0; i < kept; i++) {
                cr_assert_eq(ix.v[i].lo, want[i].lo, "%zu spans, round %d: span %zu's start", n,
                             round, i);
                cr_assert_eq(ix.v[i].u.cu, want[i].u.cu,
                             "%zu spans, round %d: span %zu is the first lowest rank", n, round, i);
            }
            free(want);
            free(ix.v);
        }
    }
}

Test(spans, a_lookup_finds_the_range_that_holds_the_address)
{
    struct gs_span_index ix = {0};
    /* [100, 200) with [120, 130) inside it, [300, 310), [400, 400) empty */
    gs_span_add(&ix, (struct gs_span){.lo = 300, .hi = 310, .u.cu = 3});
    gs_span_add(&ix, (struct gs_span){.lo = 120, .hi = 130, .u.cu = 2});
    gs_span_add(&ix, (struct gs_span){.lo = 100, .hi = 200, .u.cu = 1});
    gs_span_finish(&ix);
    cr_assert_null(gs_span_find(&ix, 99));
    cr_assert_eq(gs_span_find(&ix, 100)->u.cu, 1);
    cr_assert_eq(gs_span_find(&ix, 125)->u.cu, 2, "the inner range, nearest below");
    cr_assert_eq(gs_span_find(&ix, 150)->u.cu, 1, "past the inner one: the outer");
    cr_assert_eq(gs_span_find(&ix, 309)->u.cu, 3);
    cr_assert_null(gs_span_find(&ix, 310));
    cr_assert_null(gs_span_find(&ix, 250), "between ranges");
    free(ix.v);
}
