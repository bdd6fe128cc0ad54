/*
 * test_timeline.c - analyzer/timeline.c: each bucket holds the most live in
 * it, buckets without a change carry the last value, and when the run
 * outgrows the buckets pairs merge (the most of the two) and the width
 * doubles, keeping every peak.
 */
#include <criterion/criterion.h>

#include "../../analyzer/analyzer.h"

#define MS 1000000ull

Test(timeline, buckets_hold_the_most_and_carry_the_last)
{
    struct gs_timeline t = {0};
    gs_timeline_note(&t, 0, 100);
    gs_timeline_note(&t, MS / 2, 300); /* same bucket: the most counts */
    gs_timeline_note(&t, MS / 2 + 1, 50);
    gs_timeline_note(&t, 4 * MS, 70); /* buckets 1-3 carry 50; bucket 4 starts from 50 */
    cr_assert_eq(t.width_ns, MS);
    cr_assert_eq(t.n, 5);
    uint64_t want[5] = {300, 50, 50, 50, 70};
    for (int i = 0; i < 5; i++)
        cr_assert_eq(t.hi[i], want[i], "bucket %d: %lu", i, (unsigned long)t.hi[i]);
    gs_timeline_note(&t, 4 * MS + 1, 10);
    cr_assert_eq(t.hi[4], 70, "a fall keeps the bucket's most");
}

Test(timeline, outgrown_buckets_merge_and_keep_every_peak)
{
    struct gs_timeline t = {0};
    for (uint64_t i = 0; i < 1000; i++) /* 1000 ms, a value a millisecond */
        gs_timeline_note(&t, i * MS, i == 777 ? 1000000 : i);
    cr_assert_eq(t.width_ns, 16 * MS, "1000 ms in 64 buckets: 16 ms each");
    cr_assert_eq(t.n, 63);
    cr_assert_eq(t.hi[777 / 16], 1000000, "the spike survives the merges");
    cr_assert_eq(t.hi[0], 15, "the most of the first 16 ms");
    cr_assert_eq(t.hi[62], 999);
    for (unsigned i = 1; i + 1 < t.n; i++) /* the last one ends at 999 ms */
        if (i != 777 / 16)
            cr_assert_eq(t.hi[i], i * 16 + 15, "bucket %u", i);
}
