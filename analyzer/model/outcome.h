/*
 * outcome.h - failed allocations as the replay model keeps them (struct
 * gs_failure), what became of each (enum gs_outcome, analyzer/model/
 * outcome.c) and the chains of retries still open.
 *
 * Included by: analyzer/model/model.h (which the others include)
 */
#ifndef GPUSHIM_MODEL_OUTCOME_H
#define GPUSHIM_MODEL_OUTCOME_H

#include <stddef.h>
#include <stdint.h>

#include "analyzer/trace/trace.h"

struct gs_replay;

/* What became of a failed allocation (outcome.c, docs/commands.md
 * "Failed allocations: what became of each"). */
enum gs_outcome {
    GS_OUTCOME_PENDING = 0, /* not decided yet: its thread may still retry */
    GS_OUTCOME_UNRECOVERED, /* nothing like it succeeded afterwards */
    GS_OUTCOME_RECOVERED,   /* its call site got the memory afterwards */
    GS_OUTCOME_PROBE,       /* a request made to learn what fits */
    GS_OUTCOME_REFUSED,     /* not a shortage: any result but CUDA_ERROR_OUT_OF_MEMORY */
    GS_OUTCOME_COUNT
};

struct gs_failure {
    uint64_t time_ns;
    uint32_t api, result;
    int32_t device;
    uint64_t requested, free_bytes, total_bytes;
    uint64_t process_live_bytes; /* device bytes this process held then, on that device */
    uint32_t stack_id;
    uint32_t thread; /* the name of its thread (gs_replay_thread_name); 0: not known */
    uint32_t tid;    /* its thread (0 for one a checkpoint gave) */
    uint32_t outcome;    /* enum gs_outcome */
    uint32_t chain_prev; /* pending: the failure before it in its chain of retries
                          * (index + 1; 0: none kept) */
    /* recovered, probe: what it took */
    uint64_t retry_ns;    /* from it to the allocation that succeeded */
    uint64_t retry_bytes; /* the size that succeeded */
    uint64_t freed_bytes, frees; /* device bytes its thread freed from it to then, in so
                                  * many frees (pending: the chain's counts when it failed) */
    uint32_t postmortem;  /* its post-mortem's slot + 1, given by an analysis attached
                           * (analyzer/findings/oom.c); 0: none */
};

/* A thread's failed allocations whose outcome waits on its next attempt
 * (outcome.c): the chain of its retries so far. */
#define GS_MAX_CHAINS 256 /* threads with a chain open at once; a failure past them is
                           * decided at once */
enum gs_chain_state {
    GS_CHAIN_OPEN = 0, /* its latest attempt failed */
    GS_CHAIN_HELD,     /* a probe's allocation succeeded and is held apart, until the
                        * thread's next event says whether it is freed at once */
};
struct gs_chain {
    uint32_t tid;
    int32_t device;
    uint32_t stack_id;   /* of its latest attempt */
    uint32_t state;      /* enum gs_chain_state */
    uint32_t probe;      /* its first failure asked for all the device's free memory or
                          * more, and each attempt since for at most half the one before */
    uint32_t last;       /* its latest failure kept: index + 1 in failures; 0: none kept */
    uint64_t last_size;  /* its latest attempt's request */
    uint64_t first_ns;   /* its first failure */
    uint64_t failures;   /* failures in it, kept or not */
    uint64_t freed_bytes, frees; /* device bytes its thread freed since its first failure */
    struct gs_revent held; /* GS_CHAIN_HELD: the allocation held apart (label NULL) */
};

/* The outcomes, all failures counted (those past GS_MAX_FAILURES too). */
struct gs_outcomes {
    uint64_t count[GS_OUTCOME_COUNT]; /* [PENDING] unused: a failure is counted once decided */
    uint64_t retries;                 /* recovered chains: retries that succeeded */
    uint64_t retry_ns;                /* from each one's first failure to its success */
    uint64_t retry_freed_bytes, retry_frees; /* what their threads freed before succeeding */
    uint64_t probes;                  /* probes' allocations, held apart */
    uint64_t probe_bytes;             /* all of them together */
    uint64_t probe_largest, probe_largest_ns; /* the largest, and when */
};

const char *gs_outcome_name(uint32_t outcome);
/* Failures that were not recovered from: all failed allocations less the
 * recovered, probes and refused (so a trace from before outcomes counts
 * them all). */
uint64_t gs_outcome_unrecovered(const struct gs_replay *r);

#endif
