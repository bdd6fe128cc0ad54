/*
 * plan_replay.h - gpushim plan's replay (plan_replay.c): the tensor-level
 * requests of each run by call site, their sizes fitted against the batch,
 * and the largest batch whose replay through the model of PyTorch's
 * caching allocator does not run out on each card.
 *
 * Included by: analyzer/cmd/plan.c and plan_replay.c.
 */
#ifndef GPUSHIM_CMD_PLAN_REPLAY_H
#define GPUSHIM_CMD_PLAN_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "analyzer/report/load.h"
#include "analyzer/whatif/whatif.h"

#define GS_PR_MAX_BATCH 4294967295ull /* the largest batch plan takes */

/* One run's tensor-level requests by call site, taken while it loads. */
struct gs_pr_sites;

/* NULL on no memory. */
struct gs_pr_sites *gs_pr_sites_new(void);
void gs_pr_sites_free(struct gs_pr_sites *s);
/* The watch to hand gs_load_watch for the run. */
void gs_pr_sites_watch(struct gs_pr_sites *s, struct gs_event_watch *w);
/* Once the run is loaded: names its sites (gs_multi_site_key, merged
 * view). 0, or -1 when memory ran out. */
int gs_pr_sites_close(struct gs_pr_sites *s, struct gs_loaded *l);
/* What the whatif replay takes as the run's tensors (GS_WI_SRC_NONE:
 * none; the replay cannot be made). */
enum gs_wi_source gs_pr_sites_source(const struct gs_pr_sites *s);

struct gs_pr_question {
    const char *path;                        /* the reference run's trace, */
    const struct gs_read_seen *seen;         /* as its read saw it */
    const struct gs_pr_sites *const *runs;   /* every run, closed */
    const uint64_t *batch;                   /* their batches (two different at least) */
    size_t nruns, ref;                       /* ref: the reference run's index */
    struct gs_wi_setting setting;            /* the allocator's setting */
    const uint64_t *usable;                  /* each card's bytes for the process */
    const uint64_t *total;                   /* each card's total memory, which the
                                              * allocators' fractions are of (NULL, or
                                              * 0: usable) */
    const long double *linear;               /* the straight line's largest batch
                                              * on each card (-1: any) */
    size_t ncards;
};

struct gs_pr_card {
    int any;         /* every batch up to GS_PR_MAX_BATCH fits */
    uint64_t batch;  /* the largest that fits: 0 when not one sample does */
    uint64_t peak;   /* its device peak (reserved plus memory outside the allocator,
                      * the most of any device); 0 when batch is 0 */
};

struct gs_pr_answer {
    size_t sites_scaled, sites_fixed; /* the reference run's call sites */
    size_t passes;                    /* replays of the reference trace */
};

/* Searches each card's largest batch (out: ncards of them): 0, or -1 with
 * why in err. */
int gs_pr_replay(const struct gs_pr_question *q, struct gs_pr_card *out, struct gs_pr_answer *a,
                 char *err, size_t errsz);

#endif
