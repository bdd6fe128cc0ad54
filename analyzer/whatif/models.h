/*
 * models.h - the allocator models a what-if replay drives, behind one face
 * (models.c): made from a setting and a capacity, asked to allocate and
 * free, told of memory held outside them, and read as the same figures
 * whichever allocator they model.
 *
 * Included by: analyzer/whatif (whatif.h, for struct gs_wi_figures; whatif.c).
 */
#ifndef GPUSHIM_WHATIF_MODELS_H
#define GPUSHIM_WHATIF_MODELS_H

#include <stdint.h>

struct gs_wi_setting;

/* One model's figures. Reserved: what it holds from the driver (PyTorch's
 * segments, the BFC pool's regions); allocated: what its live blocks or
 * chunks take (rounded sizes). */
struct gs_wi_figures {
    uint64_t reserved, reserved_peak;
    uint64_t allocated, allocated_peak;
    uint64_t unallocated_at_peak; /* reserved - allocated while reserved stood at its peak,
                                   * the least after any request: what the peak holds
                                   * beyond the blocks at their fullest during it */
    uint64_t segment_allocs;      /* cudaMalloc calls or pages mapped; BFC: regions added */
    uint64_t segment_frees;       /* cudaFree calls or pages unmapped; BFC: regions freed */
    uint64_t num_device_alloc;    /* PyTorch's stat: cudaMalloc and map_block calls (each of
                                   * them maps one or more pages); BFC: regions added */
    uint64_t num_device_free;     /* cudaFree and unmap_block calls; BFC: regions freed */
    uint64_t oom_retries;         /* allocations retried after emptying the cache (BFC:
                                   * after garbage collection) */
    uint64_t gc_frees;            /* freed by garbage collection */
    uint64_t ooms;
};

enum { GS_WI_OK = 0, GS_WI_OOM = 1, GS_WI_BAD = -1, GS_WI_NOMEM = -2 };

struct gs_wi_model;
/* NULL on no memory or a setting the model refuses. capacity: the bytes
 * the process may take on the device (0: no limit); total: the card's
 * total memory, which the allocators' fractions are of (PyTorch's memory
 * fraction and garbage collection threshold, XLA's memory limit; 0:
 * capacity). */
struct gs_wi_model *gs_wi_model_new(const struct gs_wi_setting *s, uint64_t capacity,
                                    uint64_t total);
void gs_wi_model_free(struct gs_wi_model *m);
/* An allocation; *handle names it to gs_wi_model_release (GS_WI_NO_HANDLE
 * when it did not succeed, which release refuses as GS_WI_BAD). */
#define GS_WI_NO_HANDLE UINT32_MAX
int gs_wi_model_alloc(struct gs_wi_model *m, uint64_t size, uint64_t stream, uint32_t *handle);
int gs_wi_model_release(struct gs_wi_model *m, uint32_t handle);
/* Device memory held outside the allocator from now on: the device then
 * gives the model at most its capacity less it. */
void gs_wi_model_set_external(struct gs_wi_model *m, uint64_t bytes);
uint64_t gs_wi_model_reserved(const struct gs_wi_model *m);
void gs_wi_model_figures(const struct gs_wi_model *m, struct gs_wi_figures *f);

/* Following: one model run for several cases. A case whose setting and
 * capacity would make its model do what another's does, so far, follows
 * that one (gs_wi_model_follow) and is told its outcome; when the next
 * request could be one where its own rules act otherwise
 * (gs_wi_model_diverges), its model is made then from the one it followed
 * (gs_wi_model_fork) and goes on alone. What can differ and still be
 * followed, for PyTorch's model: the garbage collection threshold and
 * memory fraction with no limit (they act only on a card); the card, for
 * one without expandable segments followed by the same setting with no
 * limit, until the limit is near; max_split_size, followed by the same
 * setting without one, until a block that large could be asked for or
 * held. XLA's: its fraction with no limit. Following changes no figure:
 * tests/unit/test_whatif.c compares each case with its model run alone. */
struct gs_wi_follow {
    int conditional;    /* 0: the two models do the same always (twins) */
    uint64_t max_split; /* its max_split_size where the one followed has none; 0: none */
    uint64_t limit;     /* where the one followed has no limit: the least of the card,
                         * the memory fraction's bytes and garbage collection's
                         * threshold; UINT64_MAX: none */
};
/* 1 (and *f) when setting s on a card (capacity, total, as for
 * gs_wi_model_new) may follow setting by on its card. */
int gs_wi_model_follow(const struct gs_wi_setting *s, uint64_t capacity, uint64_t total,
                       const struct gs_wi_setting *by, uint64_t by_capacity, uint64_t by_total,
                       struct gs_wi_follow *f);
/* 1 when the follower could act otherwise than `by` at the next request:
 * an allocation of size (alloc) or a free, with outside bytes held outside
 * the allocator. */
int gs_wi_model_diverges(const struct gs_wi_model *by, const struct gs_wi_follow *f, int alloc,
                         uint64_t size, uint64_t outside);
/* The follower's own model, from the one it followed until now. NULL on
 * no memory. */
struct gs_wi_model *gs_wi_model_fork(const struct gs_wi_model *by, const struct gs_wi_setting *s,
                                     uint64_t capacity, uint64_t total);

#endif
