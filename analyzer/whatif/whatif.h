/*
 * whatif.h - a run's tensor-level allocations replayed, in their order and
 * on their streams, through models of the frameworks' allocators (PyTorch's
 * caching allocator, XLA's BFC) under several settings and cards side by
 * side (whatif.c), and the figures each gives.
 *
 * Included by: analyzer/whatif, the layers above it and tests.
 */
#ifndef GPUSHIM_WHATIF_WHATIF_H
#define GPUSHIM_WHATIF_WHATIF_H

#include <stddef.h>
#include <stdint.h>

#include "gpushim_trace.h"
#include "analyzer/trace/trace.h"
#include "analyzer/whatif/settings.h"
#include "analyzer/whatif/models.h"

#define GS_WI_CASES 64 /* the most (setting, card) pairs one replay takes */
/* A case's capacity: the memory the run's own device had for the process
 * (gs_whatif_set_run_card, with the device's total), or no limit when the
 * trace does not say. */
#define GS_WI_RUN_CARD UINT64_MAX
/* A case this replay leaves to another (its outcome stays zero). */
#define GS_WI_SKIP (UINT64_MAX - 1)

/* What the replay took as the run's tensors. */
enum gs_wi_source {
    GS_WI_SRC_NONE = 0,   /* none yet */
    GS_WI_SRC_DRIVER,     /* each device allocation (cudaMalloc, cuMemAlloc...): a
                           * program without a caching allocator, or PyTorch with
                           * PYTORCH_NO_CUDA_MEMORY_CACHING=1 */
    GS_WI_SRC_STREAM,     /* the stream-ordered and pluggable allocations (gpushim run
                           * --per-tensor); other device allocations are memory
                           * outside the allocator (NCCL, the program's own) */
    GS_WI_SRC_BLOCKS,     /* the program allocator's blocks (gpushim_block_alloc);
                           * device allocations are its segments, which the model
                           * replaces */
};

/* One pair to replay: a setting (index in the settings given) on a card. */
struct gs_wi_case {
    size_t setting;
    uint64_t capacity; /* bytes the process may take on the device: 0 no limit,
                        * GS_WI_RUN_CARD the run's own, GS_WI_SKIP not here */
    uint64_t total;    /* the card's total memory, which the allocators' fractions
                        * are of (0: capacity; the run's own card: set with it) */
};

/* Where a case first ran out. */
struct gs_wi_oom {
    uint64_t request;  /* the device's request (from 0) */
    uint64_t size, time_ns;
    uint32_t stack_id; /* its call site in the trace */
    uint32_t tid;
    uint64_t step;     /* the step of step_label it came in (from 1; 0: none) */
    char step_label[GS_MAX_LABEL + 1];
};

struct gs_wi_outcome { /* one case on one device */
    uint64_t capacity;     /* the bytes it had (0: no limit) */
    uint64_t total;        /* the card's total memory (fractions are of it; 0: no limit) */
    struct gs_wi_figures st; /* the model's figures */
    uint64_t device_peak;  /* the most reserved plus memory outside the allocator */
    int ran_out;
    struct gs_wi_oom first_oom;
    uint64_t failures_served; /* the run's failed requests it served */
    int served_first_failure; /* the run's first failed request on the device */
};

#define GS_WI_FAILED_KEPT 32 /* the run's failed requests kept per device, the first */

/* One of the run's failed requests, and which cases served it. */
struct gs_wi_failed {
    uint64_t time_ns, size;
    uint64_t served; /* bit k: case k served it (and released it at once) */
};

struct gs_wi_device {
    int present;
    int32_t device;        /* -1: unknown (blocks carry none) */
    uint64_t requests;     /* allocation requests replayed (failed ones included) */
    uint64_t frees;
    uint64_t failed_requests;        /* of those, the ones that failed in the run */
    uint64_t tensor_bytes, tensor_peak; /* bytes of live tensors as requested, and the most */
    uint64_t outside_bytes, outside_peak; /* device memory outside the allocator */
    uint64_t run_card;     /* the run's own capacity (gs_whatif_set_run_card), 0: unknown */
    uint64_t run_card_total; /* and the device's total memory then */
    struct gs_wi_failed failed[GS_WI_FAILED_KEPT]; /* the first failed requests */
    size_t nfailed;
    size_t models;         /* models run: one per case not following another at the
                            * start, and one per fork (whatif.c) */
    struct gs_wi_outcome out[GS_WI_CASES];
};

struct gs_whatif;

/* settings and cases are copied. NULL on no memory or an argument out of
 * range (too many cases, a setting index past nsettings). */
struct gs_whatif *gs_whatif_new(const struct gs_wi_setting *settings, size_t nsettings,
                                const struct gs_wi_case *cases, size_t ncases);
void gs_whatif_free(struct gs_whatif *w);
/* Sizes other than the trace's: fn gives the size case k is to request
 * for an allocation event e (its request as recorded, e->size bytes): to
 * replay the run at another batch size (gpushim plan). Set before the
 * first event; NULL: the trace's sizes. With it, cases of the same setting
 * and card keep a model each. */
typedef uint64_t (*gs_wi_size_fn)(void *ctx, size_t k, const struct gs_revent *e);
void gs_whatif_set_sizes(struct gs_whatif *w, gs_wi_size_fn fn, void *ctx);
/* Each request the replay takes as a tensor's, as it comes (the run's
 * failed ones too, and under blocks with device -1): what gpushim plan
 * gathers by call site. A replay with no case runs no model and only this.
 * When the source changes, what came before was not tensors
 * (gs_whatif_source tells). */
typedef void (*gs_wi_tap_fn)(void *ctx, const struct gs_revent *e);
void gs_whatif_set_tap(struct gs_whatif *w, gs_wi_tap_fn fn, void *ctx);
/* The run's own capacity on device (-1: the blocks' device), for the
 * cases of GS_WI_RUN_CARD, and the device's total memory (0: bytes): set
 * before the device's first event. */
void gs_whatif_set_run_card(struct gs_whatif *w, int32_t device, uint64_t bytes, uint64_t total);
/* Each event of the trace, in order; then gs_whatif_finish, which takes
 * the models' figures into the devices' outcomes. */
void gs_whatif_event(struct gs_whatif *w, const struct gs_revent *e);
void gs_whatif_finish(struct gs_whatif *w);
/* Reads the trace at path again, as seen (read.h: the same records as the
 * read before), hands each event to w, and finishes: 0, or -1 with why in
 * err. */
struct gs_read_seen;
int gs_whatif_replay(const char *path, const struct gs_read_seen *seen, struct gs_whatif *w,
                     char *err, size_t errsz);

enum gs_wi_source gs_whatif_source(const struct gs_whatif *w);
/* The devices replayed: index 0 .. GS_MAX_DEVICES (the last: device -1). */
const struct gs_wi_device *gs_whatif_device(const struct gs_whatif *w, size_t idx);
/* The model's memory ran out (the figures are then incomplete). */
int gs_whatif_nomem(const struct gs_whatif *w);

/* Whether api allocates device memory per request as a tensor would be
 * (and, when so, whether on a stream). */
int gs_wi_tensor_api(uint32_t api, int *stream_ordered);

#endif
