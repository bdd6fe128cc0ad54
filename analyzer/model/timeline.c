/*
 * timeline.c - device memory over time, in a fixed number of buckets, for
 * all devices together and for each device: the sparklines of the text
 * report, the JSON timeline and the charts of the HTML export.
 *
 * One streaming pass cannot know how long the run is, so the buckets start
 * 1 ms wide and, whenever the run outgrows them, pairs are merged and the
 * width doubles: memory stays fixed and every bucket holds the most device
 * memory live at any moment of it. A bucket with no change carries the
 * value the last change left.
 *
 * A run on one device has one timeline: the device's is the process's
 * (gs_timelines_note), so that a change costs one note, not two.
 */
#include <stdlib.h>
#include <string.h>

#include "analyzer/model/model_int.h"

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
    /* most changes: in the last bucket (which may reach past 2^64 ns) */
    if (time_ns >= t->last_from && time_ns - t->last_from < t->last_width) {
        unsigned last = t->n - 1;
        if (live_bytes > t->hi[last])
            t->hi[last] = live_bytes;
        t->end[last] = live_bytes;
        return;
    }
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
    /* the last bucket's times, unless the change was past them (merged into
     * the last bucket at the end of time) or before them */
    t->last_from = at * t->width_ns;
    t->last_width = at == t->n - 1 ? t->width_ns : 0;
}

static void device_note(struct gs_replay *r, unsigned device_index, uint64_t time_ns,
                        uint64_t live_bytes)
{
    struct gs_timeline **t = &r->device_timelines[device_index];
    if (!*t && !(*t = calloc(1, sizeof **t)))
        return;
    gs_timeline_note(*t, time_ns, live_bytes);
}

/* While every change has been on one device, which held all the device
 * memory live at the first (the others none), that device's timeline is the
 * process's: it is kept once (timeline_alone, the device's index + 1). Both
 * change by the same bytes after. The first change on another device copies
 * it to the device's own, and each device keeps its own after. */
#define SPLIT UINT32_MAX

/* gs_timelines_note past its most common case: out of line, so that the
 * case costs no saving of registers. */
static __attribute__((noinline)) void note_apart(struct gs_replay *r, unsigned device_index,
                                                 uint64_t time_ns, uint64_t device_bytes)
{
    if (!r->timeline_alone && !r->timeline.width_ns && device_bytes == r->live_bytes) {
        r->timeline_alone = device_index + 1; /* the first change */
        gs_timeline_note(&r->timeline, time_ns, device_bytes);
        return;
    }
    if (r->timeline_alone && r->timeline_alone != SPLIT) {
        struct gs_timeline *own = malloc(sizeof *own);
        if (own)
            *own = r->timeline;
        r->device_timelines[r->timeline_alone - 1] = own; /* none on no memory, as below */
    }
    r->timeline_alone = SPLIT;
    gs_timeline_note(&r->timeline, time_ns, r->live_bytes);
    device_note(r, device_index, time_ns, device_bytes);
}

void gs_timelines_note(struct gs_replay *r, unsigned device_index, uint64_t time_ns,
                       uint64_t device_bytes)
{
    if (device_index > GS_MAX_DEVICES)
        return;
    if (r->timeline_alone == device_index + 1) /* device_bytes is r->live_bytes still */
        gs_timeline_note(&r->timeline, time_ns, device_bytes);
    else
        note_apart(r, device_index, time_ns, device_bytes);
}

const struct gs_timeline *gs_device_timeline(const struct gs_replay *r, unsigned device_index)
{
    if (device_index > GS_MAX_DEVICES)
        return NULL;
    if (r->timeline_alone == device_index + 1)
        return &r->timeline;
    return r->device_timelines[device_index];
}

void gs_timelines_free(struct gs_replay *r)
{
    for (unsigned d = 0; d <= GS_MAX_DEVICES; d++) {
        free(r->device_timelines[d]);
        r->device_timelines[d] = NULL;
    }
    r->timeline_alone = 0;
}

/* Every timeline starts 1 ms wide and doubles, so the widest one's width is
 * a power-of-two multiple of every other's. */
void gs_timeline_span(const struct gs_replay *r, uint64_t *width_ns, unsigned *n)
{
    uint64_t w = r->timeline.width_ns;
    for (unsigned d = 0; d <= GS_MAX_DEVICES; d++) {
        const struct gs_timeline *t = gs_device_timeline(r, d);
        if (t && t->width_ns > w)
            w = t->width_ns;
    }
    unsigned most = 0;
    struct gs_timeline a;
    gs_timeline_aligned(&r->timeline, w, 0, &a);
    most = a.n;
    for (unsigned d = 0; d <= GS_MAX_DEVICES; d++) {
        const struct gs_timeline *t = gs_device_timeline(r, d);
        if (!t)
            continue;
        gs_timeline_aligned(t, w, 0, &a);
        if (a.n > most)
            most = a.n;
    }
    *width_ns = w;
    *n = most;
}

void gs_timeline_aligned(const struct gs_timeline *src, uint64_t width_ns, unsigned n,
                         struct gs_timeline *out)
{
    if (src)
        *out = *src;
    else
        memset(out, 0, sizeof *out);
    if (!out->width_ns) {
        out->width_ns = width_ns;
        out->n = 0;
    }
    while (out->width_ns < width_ns && out->width_ns < UINT64_MAX / 4)
        halve(out);
    if (n > GS_TIMELINE_BUCKETS)
        n = GS_TIMELINE_BUCKETS;
    uint64_t last = out->n ? out->end[out->n - 1] : 0;
    for (unsigned i = out->n; i < n; i++)
        out->hi[i] = out->end[i] = last;
    if (n > out->n)
        out->n = n;
    out->last_width = 0; /* its last bucket may be another now */
}
