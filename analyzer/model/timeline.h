/*
 * timeline.h - device memory over time, all devices and each device, in
 * buckets that widen as the run goes on (analyzer/model/timeline.c).
 *
 * Included by: analyzer/model/model.h (which the others include)
 */
#ifndef GPUSHIM_MODEL_TIMELINE_H
#define GPUSHIM_MODEL_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

struct gs_replay;

/* timeline.c: device memory over time (all devices), in buckets that widen
 * as the run goes on. */
#define GS_TIMELINE_BUCKETS 64
struct gs_timeline {
    uint64_t width_ns;                /* of a bucket; 0 before the first change */
    unsigned n;                       /* buckets in use */
    uint64_t hi[GS_TIMELINE_BUCKETS];  /* the most live in each */
    uint64_t end[GS_TIMELINE_BUCKETS]; /* live after its last change */
    /* the last bucket's times, [last_from, last_from + last_width), while
     * its width holds (0: not known), so that a change in it costs no
     * division */
    uint64_t last_from, last_width;
};

/* Device memory of one device (index as gs_replay.devices) over time, or
 * NULL if it never changed. */
const struct gs_timeline *gs_device_timeline(const struct gs_replay *r, unsigned device_index);
/* The common bucket width and count of a report: the widest timeline's. */
void gs_timeline_span(const struct gs_replay *r, uint64_t *width_ns, unsigned *n);
/* src's buckets merged up to width_ns (a power-of-two multiple of its own)
 * and carried to n buckets with the value its last change left; a NULL src
 * reads as no memory at any time. */
void gs_timeline_aligned(const struct gs_timeline *src, uint64_t width_ns, unsigned n,
                         struct gs_timeline *out);

#endif
