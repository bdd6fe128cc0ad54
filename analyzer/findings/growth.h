/*
 * growth.h - growth: every call site's live device bytes sampled over the
 * run (at steps or windows of time and events), an analysis attached to the
 * replay model (analyzer/findings/growth.c). The samples are read by the
 * leak suspects, the post-mortems (oom.c), the reports and the exports.
 *
 * Included by: analyzer/findings, and the layers above it (report, export,
 * cmd) through their headers; tests. Never by the shim
 * or the model: they do not know growth exists.
 */
#ifndef GPUSHIM_FINDINGS_GROWTH_H
#define GPUSHIM_FINDINGS_GROWTH_H

#include <stddef.h>
#include <stdint.h>

struct gs_replay;

/* Every site's live device bytes, sampled at steps (the marks of the step
 * label, gs_marks_step_label) or, without marks, at windows of time or of
 * events, whichever ends first. */
#define GS_GROWTH_SAMPLES 64
#define GS_GROWTH_WINDOW_NS 1000000ull /* the first windows: 1 ms; they widen */
#define GS_GROWTH_WINDOW_EVENTS 4      /* ... or 4 events; they widen too */
#define GS_GROWTH_QUIET_TAKES 8        /* a window's state taken at most so often */
struct gs_growth {
    int by_steps;        /* samples are taken at marks of step_label; else at windows */
    uint32_t step_label; /* index in gs_marks.labels */
    uint64_t every;      /* steps (or ns of a window) from one sample to the next */
    uint64_t every_events; /* windows: the most events in one */
    uint64_t events;     /* windows: events in this one so far */
    uint64_t next_ns;    /* windows: when the clock next ends one */
    int due;             /* windows: the clock has ended this one; it ends at its trough */
    int fell;            /* windows: device memory fell in this one */
    uint64_t before;     /* windows: device bytes live before this event */
    int quiet;           /* windows: slot n holds the window's quietest moment so far */
    unsigned quiet_takes;
    uint64_t quiet_bytes; /* the device bytes live then */
    uint64_t steps;      /* marks of step_label since sampling by steps began */
    int shadow;          /* by steps: slot n holds the first mark of shadow_label, */
    uint32_t shadow_label; /* another label's, in case it becomes the step label */
    unsigned n;          /* samples kept */
    uint64_t time_ns[GS_GROWTH_SAMPLES];
    uint64_t step[GS_GROWTH_SAMPLES]; /* by steps: the step that began then, from 1 */
    /* the two layers at each sample: blocks in segments (all devices), pools */
    struct gs_layers {
        uint64_t segment_bytes, block_bytes, largest_free;
        uint64_t pool_reserved, pool_used;
    } layers[GS_GROWTH_SAMPLES];
    uint64_t *live;      /* live[site * GS_GROWTH_SAMPLES + k]: site's live bytes at sample k */
    uint64_t *first_ns;  /* per site: the time of its first allocation (UINT64_MAX: none) */
    size_t nsites;       /* sites the arrays have room for */
};

/* Attaches growth to r (after gs_replay_init): its samples are taken from
 * the next event on, and freed with r. 0, or -1 on no memory (no samples). */
int gs_growth_attach(struct gs_replay *r);
/* r's samples; with growth not attached, none (n 0). */
const struct gs_growth *gs_growth_of(const struct gs_replay *r);

#endif
