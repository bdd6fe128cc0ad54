/*
 * timeline.c - device memory over time, in a fixed number of buckets, for
 * the sparkline of the text report and the JSON timeline.
 *
 * One streaming pass cannot know how long the run is, so the buckets start
 * 1 ms wide and, whenever the run outgrows them, pairs are merged and the
 * width doubles: memory stays fixed and every bucket holds the most device
 * memory live at any moment of it. A bucket with no change carries the
 * value the last change left.
 */
#include <string.h>

#include "analyzer.h"

static void halve(struct gs_timeline *t)
{
    for (unsigned i = 0; i < GS_TIMELINE_BUCKETS / 2; i++) {
        unsigned a = 2 * i, b = 2 * i + 1;
        uint64_t hi = t->hi[a] > t->hi[b] ? t->hi[a] : t->hi[b];
        uint64_t end = b < t->n ? t->end[b] : t->end[a];
        t->hi[i] = hi;
        t->end[i] = end;
    }
    t->n = (t->n + 1) / 2;
    memset(t->hi + GS_TIMELINE_BUCKETS / 2, 0, sizeof t->hi / 2);
    memset(t->end + GS_TIMELINE_BUCKETS / 2, 0, sizeof t->end / 2);
    t->width_ns *= 2;
}

void gs_timeline_note(struct gs_timeline *t, uint64_t time_ns, uint64_t live_bytes)
{
    if (!t->width_ns)
        t->width_ns = 1000000;
    while (time_ns / t->width_ns >= GS_TIMELINE_BUCKETS && t->width_ns < UINT64_MAX / 4)
        halve(t);
    uint64_t at = time_ns / t->width_ns;
    unsigned idx = at < GS_TIMELINE_BUCKETS ? (unsigned)at : GS_TIMELINE_BUCKETS - 1;
    uint64_t before = t->n ? t->end[t->n - 1] : 0;
    for (unsigned i = t->n; i < idx; i++) /* no change in these: what the last one left */
        t->hi[i] = t->end[i] = before;
    if (idx >= t->n) {
        t->hi[idx] = before > live_bytes ? before : live_bytes;
        t->n = idx + 1;
    } else if (live_bytes > t->hi[idx]) {
        t->hi[idx] = live_bytes;
    }
    t->end[idx] = live_bytes;
}
