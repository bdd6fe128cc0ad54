/*
 * models.c - owns the one face of the allocator models (models.h): PyTorch's
 * caching allocator (torch_caching.c) and XLA's BFC allocator (xla_bfc.c),
 * each made from a setting and a capacity and read as the same figures.
 *
 * With no limit, the BFC model grows its pool region by region
 * (preallocation of a fraction of an unlimited card means nothing): its
 * figures are then what its buffers would take.
 */
#include <stdlib.h>

#include "analyzer/whatif/models.h"
#include "analyzer/whatif/settings.h"

#define NO_LIMIT_BFC (1ull << 50) /* a card for the BFC model with no limit: 1 PiB */

struct gs_wi_model {
    enum gs_wi_allocator allocator;
    struct gs_tc *tc;
    struct gs_bfc *bfc;
};

struct gs_wi_model *gs_wi_model_new(const struct gs_wi_setting *s, uint64_t capacity)
{
    struct gs_wi_model *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->allocator = s->allocator;
    if (s->allocator == GS_WI_XLA) {
        struct gs_bfc_config c = s->bfc;
        c.capacity = capacity ? capacity : NO_LIMIT_BFC;
        if (!capacity) {
            c.preallocate = 0;
            c.memory_fraction = 1.0;
        }
        m->bfc = gs_bfc_new(&c);
    } else {
        struct gs_tc_config c = s->tc;
        c.capacity = capacity;
        m->tc = gs_tc_new(&c);
    }
    if (!m->tc && !m->bfc) {
        free(m);
        return NULL;
    }
    return m;
}

void gs_wi_model_free(struct gs_wi_model *m)
{
    if (!m)
        return;
    gs_tc_free(m->tc);
    gs_bfc_free(m->bfc);
    free(m);
}

/* The models' codes are the same numbers (GS_TC_*, GS_BFC_*), and so are
 * their handles of nothing (GS_TC_HANDLE_NONE, GS_BFC_HANDLE_NONE). */
_Static_assert(GS_TC_HANDLE_NONE == GS_WI_NO_HANDLE && GS_BFC_HANDLE_NONE == GS_WI_NO_HANDLE,
               "one handle of nothing");

int gs_wi_model_alloc(struct gs_wi_model *m, uint64_t size, uint64_t stream, uint32_t *handle)
{
    return m->tc ? gs_tc_alloc_h(m->tc, size, stream, handle)
                 : gs_bfc_alloc_h(m->bfc, size, handle);
}

int gs_wi_model_release(struct gs_wi_model *m, uint32_t handle)
{
    return m->tc ? gs_tc_release_h(m->tc, handle) : gs_bfc_release_h(m->bfc, handle);
}

void gs_wi_model_set_external(struct gs_wi_model *m, uint64_t bytes)
{
    if (m->tc)
        gs_tc_set_external(m->tc, bytes);
}

uint64_t gs_wi_model_reserved(const struct gs_wi_model *m)
{
    return m->tc ? gs_tc_stats(m->tc)->reserved : gs_bfc_stats(m->bfc)->pool_bytes;
}

void gs_wi_model_figures(const struct gs_wi_model *m, struct gs_wi_figures *f)
{
    if (m->tc) {
        const struct gs_tc_stats *t = gs_tc_stats(m->tc);
        *f = (struct gs_wi_figures){.reserved = t->reserved,
                                    .reserved_peak = t->reserved_peak,
                                    .allocated = t->allocated,
                                    .allocated_peak = t->allocated_peak,
                                    .unallocated_at_peak = t->unallocated_at_peak,
                                    .segment_allocs = t->segment_allocs,
                                    .segment_frees = t->segment_frees,
                                    .oom_retries = t->oom_retries,
                                    .gc_frees = t->gc_frees,
                                    .ooms = t->ooms};
    } else {
        const struct gs_bfc_stats *b = gs_bfc_stats(m->bfc);
        *f = (struct gs_wi_figures){.reserved = b->pool_bytes,
                                    .reserved_peak = b->peak_pool_bytes,
                                    .allocated = b->bytes_in_use,
                                    .allocated_peak = b->peak_bytes_in_use,
                                    .unallocated_at_peak = b->unallocated_at_peak,
                                    .segment_allocs = b->region_allocs,
                                    .segment_frees = b->region_frees,
                                    .oom_retries = b->gc_runs,
                                    .gc_frees = b->region_frees,
                                    .ooms = b->ooms};
    }
}
