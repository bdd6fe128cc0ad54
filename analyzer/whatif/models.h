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
    uint64_t unallocated_at_peak; /* reserved - allocated when reserved last peaked */
    uint64_t segment_allocs;      /* cudaMalloc calls or pages mapped; BFC: regions added */
    uint64_t segment_frees;       /* cudaFree calls or pages unmapped; BFC: regions freed */
    uint64_t oom_retries;         /* allocations retried after emptying the cache (BFC:
                                   * after garbage collection) */
    uint64_t gc_frees;            /* freed by garbage collection */
    uint64_t ooms;
};

enum { GS_WI_OK = 0, GS_WI_OOM = 1, GS_WI_BAD = -1, GS_WI_NOMEM = -2 };

struct gs_wi_model;
/* NULL on no memory or a setting the model refuses. capacity: the bytes
 * the process may take on the device (0: no limit). */
struct gs_wi_model *gs_wi_model_new(const struct gs_wi_setting *s, uint64_t capacity);
void gs_wi_model_free(struct gs_wi_model *m);
/* An allocation; *handle names it to gs_wi_model_release (GS_WI_NO_HANDLE
 * when it did not succeed, which release refuses as GS_WI_BAD). */
#define GS_WI_NO_HANDLE UINT32_MAX
int gs_wi_model_alloc(struct gs_wi_model *m, uint64_t size, uint64_t stream, uint32_t *handle);
int gs_wi_model_release(struct gs_wi_model *m, uint32_t handle);
/* Device memory held outside the allocator from now on (the BFC model,
 * whose pool is a fraction of the card, ignores it). */
void gs_wi_model_set_external(struct gs_wi_model *m, uint64_t bytes);
uint64_t gs_wi_model_reserved(const struct gs_wi_model *m);
void gs_wi_model_figures(const struct gs_wi_model *m, struct gs_wi_figures *f);

#endif
