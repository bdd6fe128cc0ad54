/*
 * test_timeline.c - analyzer/model/timeline.c: each bucket holds the most live in
 * it, buckets without a change carry the last value, and when the run
 * outgrows the buckets pairs merge (the most of the two) and the width
 * doubles, keeping every peak; each device has its own, and a report puts
 * them on one time scale (merged up to the widest, carried to the end); a
 * device used alone shares the process's, and gives the same as its own.
 * The last bucket's times, kept so that a change there costs no division,
 * give what dividing gives, change after change.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "analyzer/model/model.h"
#include "analyzer/model/replay.h"
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

/* A change of device memory as live.c makes it: the device's bytes, then
 * the process's, then the timelines. */
static void change(struct gs_replay *r, unsigned device, uint64_t time_ns, int64_t delta)
{
    r->devices[device].live_bytes += (uint64_t)delta;
    r->live_bytes += (uint64_t)delta;
    gs_timelines_note(r, device, time_ns, r->devices[device].live_bytes);
}

Test(timeline, each_device_its_own_on_a_common_scale)
{
    static struct gs_replay r; /* zeroed: only the timelines are used */
    /* device 0: 1 MiB at 0 ms, freed at 2 ms; device 1: 3 MiB at 100 ms */
    change(&r, 0, 0, 1 << 20);
    change(&r, 0, 2 * MS, -(1 << 20));
    change(&r, 1, 100 * MS, 3 << 20);
    cr_assert_null(gs_device_timeline(&r, 2), "no change on device 2: no timeline");
    cr_assert_eq(gs_device_timeline(&r, 0)->width_ns, MS, "device 0 alone stays 1 ms wide");
    cr_assert_eq(r.timeline.width_ns, 2 * MS, "all devices: 100 ms in 64 buckets");
    uint64_t width;
    unsigned n;
    gs_timeline_span(&r, &width, &n);
    cr_assert_eq(width, 2 * MS, "100 ms in 64 buckets: 2 ms each");
    cr_assert_eq(n, 51);
    struct gs_timeline d0, d1;
    gs_timeline_aligned(gs_device_timeline(&r, 0), width, n, &d0);
    gs_timeline_aligned(gs_device_timeline(&r, 1), width, n, &d1);
    cr_assert_eq(d0.n, 51);
    cr_assert_eq(d0.hi[0], 1 << 20, "device 0's first 2 ms");
    cr_assert_eq(d0.hi[1], 1 << 20, "freed at the start of its second bucket, which held it");
    cr_assert_eq(d0.hi[2], 0);
    cr_assert_eq(d0.hi[50], 0, "carried to the end");
    cr_assert_eq(d1.hi[49], 0);
    cr_assert_eq(d1.hi[50], 3 << 20, "device 1's allocation in the last bucket");
    gs_timelines_free(&r);
    cr_assert_null(gs_device_timeline(&r, 0));
}

static void same_timeline(const struct gs_timeline *a, const struct gs_timeline *b,
                          const char *what)
{
    cr_assert_eq(a->width_ns, b->width_ns, "%s: width", what);
    cr_assert_eq(a->n, b->n, "%s: buckets", what);
    cr_assert_arr_eq(a->hi, b->hi, sizeof a->hi, "%s: the most in each bucket", what);
    cr_assert_arr_eq(a->end, b->end, sizeof a->end, "%s: the last in each bucket", what);
    cr_assert_eq(a->last_from, b->last_from, "%s: the last bucket's start", what);
    cr_assert_eq(a->last_width, b->last_width, "%s: the last bucket's width", what);
}

/* Two runs of the same changes, one with the device's timeline kept apart
 * from the start: each device's timeline must be the same in both, before
 * and after a second device joins, whichever of the two ways it is kept. */
Test(timeline, one_device_alone_shares_the_process_timeline)
{
    static struct gs_replay r, apart;
    uint64_t s = 7;
    change(&apart, 3, 0, 0); /* device 3 first, at no cost: the others apart from the start */
    for (int phase = 0; phase < 3; phase++) {
        unsigned device = phase == 1 ? 5 : 0; /* device 0 alone, then 5, then 0 again */
        for (int i = 0; i < 500; i++) {
            uint64_t t = (uint64_t)(phase * 500 + i) * MS / 3;
            int64_t d = (int64_t)(s = s * 6364136223846793005ull + 1442695040888963407ull) >> 44;
            if ((int64_t)r.devices[device].live_bytes + d < 0)
                d = -d;
            change(&r, device, t, d);
            change(&apart, device, t, d);
        }
        if (phase == 0) {
            cr_assert_eq(gs_device_timeline(&r, 0), &r.timeline,
                         "device 0 alone: its timeline is the process's");
            cr_assert_null(r.device_timelines[0], "and is not kept twice");
        } else {
            cr_assert_neq(gs_device_timeline(&r, 0), &r.timeline, "two devices: one each");
        }
        for (unsigned dev = 0; dev <= GS_MAX_DEVICES; dev++) {
            const struct gs_timeline *a = gs_device_timeline(&r, dev),
                                     *b = gs_device_timeline(&apart, dev);
            char what[64];
            snprintf(what, sizeof what, "phase %d, device %u", phase, dev);
            if (dev == 3)
                continue;
            cr_assert_eq(!a, !b, "%s: a timeline in both or neither", what);
            if (a)
                same_timeline(a, b, what);
        }
        same_timeline(&r.timeline, &apart.timeline, "all devices");
    }
    gs_timelines_free(&r);
    gs_timelines_free(&apart);
}

Test(timeline, memory_on_another_device_from_a_checkpoint_is_not_device_0s)
{
    static struct gs_replay r;
    r.devices[1].live_bytes = r.live_bytes = 1000; /* loaded, not a change */
    change(&r, 0, MS, 24);
    cr_assert_eq(r.timeline.end[1], 1024, "all devices");
    cr_assert_eq(gs_device_timeline(&r, 0)->end[1], 24, "device 0 alone");
    cr_assert_null(gs_device_timeline(&r, 1), "no change on device 1");
    gs_timelines_free(&r);
}

/* ---- the last bucket's times, kept so that most changes cost no division ---- */

/* gs_timeline_note as it is without that: each change's bucket found by
 * dividing its time by the width. */
static void merge_pairs(struct gs_timeline *t)
{
    for (unsigned i = 0; i < GS_TIMELINE_BUCKETS / 2; i++) {
        unsigned a = 2 * i, b = 2 * i + 1;
        t->hi[i] = t->hi[a] > t->hi[b] ? t->hi[a] : t->hi[b];
        t->end[i] = b < t->n ? t->end[b] : t->end[a];
    }
    t->n = (t->n + 1) / 2;
    memset(t->hi + GS_TIMELINE_BUCKETS / 2, 0, sizeof t->hi / 2);
    memset(t->end + GS_TIMELINE_BUCKETS / 2, 0, sizeof t->end / 2);
    t->width_ns *= 2;
}

static void note_by_division(struct gs_timeline *t, uint64_t time_ns, uint64_t live)
{
    if (!t->width_ns)
        t->width_ns = MS;
    while (time_ns / t->width_ns >= GS_TIMELINE_BUCKETS && t->width_ns < UINT64_MAX / 4)
        merge_pairs(t);
    uint64_t at = time_ns / t->width_ns;
    unsigned idx = at < GS_TIMELINE_BUCKETS ? (unsigned)at : GS_TIMELINE_BUCKETS - 1;
    uint64_t before = t->n ? t->end[t->n - 1] : 0;
    for (unsigned i = t->n; i < idx; i++)
        t->hi[i] = t->end[i] = before;
    if (idx >= t->n) {
        t->hi[idx] = before > live ? before : live;
        t->n = idx + 1;
    } else if (live > t->hi[idx]) {
        t->hi[idx] = live;
    }
    t->end[idx] = live;
}

static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

Test(timeline, the_last_buckets_times_give_what_dividing_gives)
{
    /* 200000 changes: mostly a few microseconds apart (most in the bucket
     * before), some back into an earlier bucket, some far ahead (buckets
     * merge, the width doubles), and some at the end of time, where the
     * last bucket takes what lies past it. Checked after every change, and
     * once more after gs_timeline_aligned has carried it further. */
    struct gs_timeline got = {0}, want = {0};
    uint64_t s = 88172645463325252ull, t = 0;
    for (unsigned k = 0; k < 200000; k++) {
        uint64_t r = next_random(&s), live = r >> 40, when;
        switch (r % 100) {
        case 0: /* back into an earlier bucket */
            when = t > 0 ? (r >> 8) % t : 0;
            break;
        case 1: /* far ahead */
            t += (r >> 8) % (1000 * MS);
            when = t;
            break;
        case 2: /* past the end of what the widest buckets hold */
            when = k > 199000 ? UINT64_MAX - (r >> 20) : t;
            break;
        default:
            t += (r >> 8) % 5000;
            when = t;
        }
        gs_timeline_note(&got, when, live);
        note_by_division(&want, when, live);
        cr_assert_eq(got.width_ns, want.width_ns, "change %u: width", k);
        cr_assert_eq(got.n, want.n, "change %u: buckets", k);
        cr_assert_eq(memcmp(got.hi, want.hi, sizeof got.hi), 0, "change %u: the most", k);
        cr_assert_eq(memcmp(got.end, want.end, sizeof got.end), 0, "change %u: the last", k);
        if (k == 100000 || k == 150000) { /* carried to the end, on the same scale and
                                             * on a wider one, then changed again */
            struct gs_timeline a;
            gs_timeline_aligned(&got, got.width_ns * (k == 100000 ? 1 : 2), GS_TIMELINE_BUCKETS,
                                &a);
            want = a;
            got = a;
        }
    }
}
