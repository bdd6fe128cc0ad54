/*
 * answer.h - the question gpushim whatif and the OOM verdict ask (answer.c):
 * a run's tensors under each setting on each card, the run's own card taken
 * from what its failed allocations said, and the best setting per card.
 *
 * Included by: analyzer/whatif, the layers above it and tests.
 */
#ifndef GPUSHIM_WHATIF_ANSWER_H
#define GPUSHIM_WHATIF_ANSWER_H

#include <stddef.h>
#include <stdint.h>

#include "analyzer/whatif/whatif.h"

struct gs_replay;
struct gs_trace_info;

#define GS_WI_CARDS 4 /* cards one answer compares, besides no limit */

struct gs_wi_card {
    char name[40];  /* "24 GB", or "the run's" */
    uint64_t bytes; /* the card's memory; 0 for the run's own (per device) */
    int run;        /* the run's own card */
};

struct gs_wi_question {
    struct gs_wi_setting settings[GS_WI_SETTINGS];
    size_t nsettings;    /* 0: the default settings of the allocator, with the run's own */
    enum gs_wi_allocator allocator; /* whose defaults (the caller tells from the trace's
                                     * framework: analyzer/findings' gs_allocator_mode) */
    enum gs_tc_torch torch;
    int torch_before_2_5; /* the version asked for shares no expandable segment by IPC */
    struct gs_wi_card cards[GS_WI_CARDS];
    size_t ncards;       /* 0: the run's own card */
    uint64_t context;    /* memory of each card given that the process cannot use (the
                          * CUDA context and others): the device gives it no more than
                          * the card less this; the allocators' fractions are still of
                          * the whole card */
};

struct gs_wi_answer {
    struct gs_wi_question q; /* with its defaults filled in; the run's card left out when
                              * unknown */
    /* outcome c * nsettings + s: setting s on card c; c == ncards: no limit */
    struct gs_wi_device *dev[GS_MAX_DEVICES + 1]; /* by device (the last: -1), NULL: none */
    enum gs_wi_source source;
    uint64_t run_card[GS_MAX_DEVICES + 1]; /* the memory the process had on each
                                            * device (0: unknown) */
    uint64_t run_total[GS_MAX_DEVICES + 1]; /* and the device's total memory */
    int ipc_seen;            /* the run imported another process's memory (CUDA IPC) */
    int ipc_breaks;          /* and the version asked for cannot share expandable segments */
    int run_card_unknown;    /* the run's card was asked for and no failure told it */
    /* the passes */
    struct gs_whatif *w;     /* the cards known at the start, and no limit */
    struct gs_whatif *w_run; /* the run's cards, once the trace told them (NULL: none) */
    int cards_known;         /* the run's cards were known at the start */
};

/* The value of the setting name the run had (GS_REC_SETTINGS), or NULL. */
const char *gs_wi_run_setting(const struct gs_trace_info *info, const char *name);
/* The run's allocator settings (PYTORCH_ALLOC_CONF, else
 * PYTORCH_CUDA_ALLOC_CONF) without the backend option gpushim run
 * --per-tensor adds, in buf; NULL when it had none. */
const char *gs_wi_run_conf(const struct gs_trace_info *info, char *buf, size_t sz);

/* The answer in one pass or two. begin: the question's defaults from the
 * trace's header (info) and the cases; r, when the trace was already read,
 * gives the run's cards up front (else NULL). Then each event of the trace
 * to gs_wi_answer_event (or gs_whatif_replay of a->w), and finish with the
 * trace read into r: the run's cards from its failures, replayed in a
 * second pass over path, as seen (the first read's records), when they
 * were not known at begin. 0, or -1 with
 * why in err; gs_wi_answer_free in either case. */
int gs_wi_answer_begin(struct gs_wi_answer *a, const struct gs_wi_question *q,
                       const struct gs_trace_info *info, const struct gs_replay *r, char *err,
                       size_t errsz);
void gs_wi_answer_event(struct gs_wi_answer *a, const struct gs_revent *e);
int gs_wi_answer_finish(struct gs_wi_answer *a, const char *path,
                        const struct gs_read_seen *seen, const struct gs_replay *r, char *err,
                        size_t errsz);
/* All of it for a trace at path already read into r: 0, or -1 with why. */
int gs_wi_answer(const char *path, const struct gs_read_seen *seen,
                 const struct gs_trace_info *info, const struct gs_replay *r,
                 const struct gs_wi_question *q, struct gs_wi_answer *a, char *err, size_t errsz);
void gs_wi_answer_free(struct gs_wi_answer *a);
/* The devices replayed: index 0 .. GS_MAX_DEVICES (the last: device -1);
 * NULL for one with no tensor. */
const struct gs_wi_device *gs_wi_answer_device(const struct gs_wi_answer *a, size_t idx);

/* The outcome of setting s on card c (c == ncards: no limit) on a device. */
const struct gs_wi_outcome *gs_wi_outcome_of(const struct gs_wi_answer *a,
                                             const struct gs_wi_device *d, size_t c, size_t s);
/* The best setting on card c for the device: one that does not run out,
 * then the fewest OOM retries (each empties the cache and synchronises),
 * then the lowest peak, then the fewest cudaMalloc and cudaFree calls; not
 * expandable segments when the run shared memory by CUDA IPC and the
 * version asked for is older than 2.5. SIZE_MAX: none fits. */
size_t gs_wi_best(const struct gs_wi_answer *a, const struct gs_wi_device *d, size_t c);
/* The card's bytes the allocator may take on the device: 0 when unknown. */
uint64_t gs_wi_card_bytes(const struct gs_wi_answer *a, const struct gs_wi_device *d, size_t c);

/* What the replay says of one of the run's failed requests (the OOM
 * verdict): on the run's card (the answer's first), the best setting (as
 * gs_wi_best ranks them) that served it without running out before it. */
struct gs_wi_verdict {
    int replayed;       /* the request was replayed (0: nothing to say) */
    size_t setting;     /* the setting, SIZE_MAX when none served it */
    uint64_t peak;      /* its peak on the card (reserved plus outside memory) */
    uint64_t capacity;  /* the card's bytes for the process */
    uint64_t needs;     /* what the first setting (the run's own, or default)
                         * reserves with no limit (the most; with a limit, an OOM
                         * empties its cache first) */
    char sentence[400];
};
/* 0 and v filled, or -1 when the answer has nothing on that request (the
 * failure at time_ns on device). */
int gs_wi_verdict(const struct gs_wi_answer *a, int32_t device, uint64_t time_ns,
                  struct gs_wi_verdict *v);

#endif
