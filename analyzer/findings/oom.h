/*
 * oom.h - post-mortems: what a failed allocation found when it failed (the
 * sites holding most on its device, those that grew most, what its pools
 * held beyond use), an analysis attached to the replay model
 * (analyzer/findings/oom.c). verdict.c and the reports read them.
 *
 * Included by: analyzer/findings, and the layers above it (report, export,
 * cmd) through their headers; tests. Never by the shim
 * or the model.
 */
#ifndef GPUSHIM_FINDINGS_OOM_H
#define GPUSHIM_FINDINGS_OOM_H

#include <stddef.h>
#include <stdint.h>

struct gs_replay;

/* What a failed allocation found, taken when it failed (the first
 * GS_POSTMORTEMS failures that may matter: one decided recovered or a probe
 * gives its slot back). */
#define GS_POSTMORTEMS 16
#define GS_POSTMORTEM_SITES 5
struct gs_postmortem {
    int present;
    uint64_t pool_unused;            /* bytes its device's pools held beyond use */
    unsigned nheld;                  /* the raw sites holding most on its device */
    uint32_t held_site[GS_POSTMORTEM_SITES];
    uint64_t held_bytes[GS_POSTMORTEM_SITES], held_count[GS_POSTMORTEM_SITES];
    unsigned ngrew;                  /* the raw sites that grew most before it */
    uint32_t grew_site[GS_POSTMORTEM_SITES];
    uint64_t grew_bytes[GS_POSTMORTEM_SITES];
    uint64_t grew_from_ns, grew_from_step; /* since which sample (step 0: by time) */
    int grew_by_steps;
};

/* Attaches the post-mortems to r (after gs_replay_init; attach growth
 * first: a post-mortem reads its samples). 0, or -1 on no memory. */
int gs_oom_attach(struct gs_replay *r);
/* failures[idx]'s post-mortem, or NULL (none taken, or oom not attached). */
const struct gs_postmortem *gs_failure_postmortem(const struct gs_replay *r, size_t idx);

#endif
