/*
 * test_timeline.c - analyzer/model/timeline.c: each bucket holds the most live in
 * it, buckets without a change carry the last value, and when the run
 * outgrows the buckets pairs merge (the most of the two) and the width
 * doubles, keeping every peak; each device has its own, and a report puts
 * them on one time scale (merged up to the widest, carried to the end).
 */
#include <criterion/criterion.h>

#include "analyzer/model/model.h"
#include "analyzer/model/model_int.h"

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

Test(timeline, aligned_merges_to_a_wider_width_and_carries_the_last)
{
    struct gs_timeline t = {0}, a;
    gs_timeline_note(&t, 0, 10);
    gs_timeline_note(&t, 1 * MS, 40);
    gs_timeline_note(&t, 2 * MS, 20);
    gs_timeline_note(&t, 3 * MS + 1, 5); /* 4 buckets of 1 ms: 10, 40, 20, 20 (then 5) */
    gs_timeline_aligned(&t, 4 * MS, 5, &a);
    cr_assert_eq(a.width_ns, 4 * MS);
    cr_assert_eq(a.n, 5, "carried to 5 buckets");
    cr_assert_eq(a.hi[0], 40, "the most of the 4 ms");
    for (int i = 1; i < 5; i++)
        cr_assert_eq(a.hi[i], 5, "bucket %d carries what the last change left", i);
    gs_timeline_aligned(NULL, 2 * MS, 3, &a);
    cr_assert_eq(a.n, 3);
    cr_assert_eq(a.width_ns, 2 * MS);
    cr_assert_eq(a.hi[0] | a.hi[1] | a.hi[2], 0, "no timeline: nothing live");
}

Test(timeline, each_device_its_own_on_a_common_scale)
{
    static struct gs_replay r; /* zeroed: only the timelines are used */
    /* device 0: 1 MiB at 0 ms, freed at 2 ms; device 1: 3 MiB at 100 ms;
     * all devices together, as replay.c notes them */
    gs_timeline_device_note(&r, 0, 0, 1 << 20);
    gs_timeline_note(&r.timeline, 0, 1 << 20);
    gs_timeline_device_note(&r, 0, 2 * MS, 0);
    gs_timeline_note(&r.timeline, 2 * MS, 0);
    gs_timeline_device_note(&r, 1, 100 * MS, 3 << 20);
    gs_timeline_note(&r.timeline, 100 * MS, 3 << 20);
    cr_assert_null(r.device_timelines[2], "no change on device 2: no timeline");
    cr_assert_eq(r.device_timelines[0]->width_ns, MS, "device 0 alone stays 1 ms wide");
    uint64_t width;
    unsigned n;
    gs_timeline_span(&r, &width, &n);
    cr_assert_eq(width, 2 * MS, "100 ms in 64 buckets: 2 ms each");
    cr_assert_eq(n, 51);
    struct gs_timeline d0, d1;
    gs_timeline_aligned(r.device_timelines[0], width, n, &d0);
    gs_timeline_aligned(r.device_timelines[1], width, n, &d1);
    cr_assert_eq(d0.n, 51);
    cr_assert_eq(d0.hi[0], 1 << 20, "device 0's first 2 ms");
    cr_assert_eq(d0.hi[1], 1 << 20, "freed at the start of its second bucket, which held it");
    cr_assert_eq(d0.hi[2], 0);
    cr_assert_eq(d0.hi[50], 0, "carried to the end");
    cr_assert_eq(d1.hi[49], 0);
    cr_assert_eq(d1.hi[50], 3 << 20, "device 1's allocation in the last bucket");
    gs_timelines_free(&r);
    cr_assert_null(r.device_timelines[0]);
}
