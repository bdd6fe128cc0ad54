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
#include <string.h>

#include "analyzer/whatif/models.h"
#include "analyzer/whatif/settings.h"

#define NO_LIMIT_BFC (1ull << 50) /* a card for the BFC model with no limit: 1 PiB */

struct gs_wi_model {
    enum gs_wi_allocator allocator;
    struct gs_tc *tc;
    struct gs_bfc *bfc;
};

/* The torch configuration of setting s on a card. */
static struct gs_tc_config tc_config(const struct gs_wi_setting *s, uint64_t capacity,
                                     uint64_t total)
{
    struct gs_tc_config c = s->tc;
    c.capacity = capacity;
    c.total = capacity ? total : 0;
    return c;
}

/* The card's total memory: what the allocators' fractions are of. */
static uint64_t total_of(uint64_t capacity, uint64_t total) { return total ? total : capacity; }

struct gs_wi_model *gs_wi_model_new(const struct gs_wi_setting *s, uint64_t capacity,
                                    uint64_t total)
{
    struct gs_wi_model *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->allocator = s->allocator;
    if (s->allocator == GS_WI_XLA) {
        struct gs_bfc_config c = s->bfc;
        c.capacity = capacity ? total_of(capacity, total) : NO_LIMIT_BFC;
        c.available = capacity;
        if (!capacity) {
            c.preallocate = 0;
            c.memory_fraction = 1.0;
        }
        m->bfc = gs_bfc_new(&c);
    } else {
        struct gs_tc_config c = tc_config(s, capacity, total);
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
    else
        gs_bfc_set_external(m->bfc, bytes);
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
                                    .num_device_alloc = t->num_device_alloc,
                                    .num_device_free = t->num_device_free,
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
                                    .num_device_alloc = b->region_allocs,
                                    .num_device_free = b->region_frees,
                                    .oom_retries = b->gc_runs,
                                    .gc_frees = b->region_frees,
                                    .ooms = b->ooms};
    }
}

/* ---- following ---- */

/* Two settings whose models would do the same always on a card of capacity
 * (0: no limit): garbage_collection_threshold and the memory fraction act
 * only with a card (set_fraction), and the BFC model with no limit grows
 * its pool the same whatever its fraction. */
static int same_model(const struct gs_wi_setting *a, const struct gs_wi_setting *b,
                      uint64_t capacity)
{
    if (a->allocator == GS_WI_XLA)
        return capacity == 0 ||
               (a->bfc.memory_fraction == b->bfc.memory_fraction &&
                a->bfc.system_memory_size == b->bfc.system_memory_size &&
                a->bfc.preallocate == b->bfc.preallocate &&
                a->bfc.garbage_collection == b->bfc.garbage_collection &&
                a->bfc.fragmentation_fraction == b->bfc.fragmentation_fraction);
    const struct gs_tc_config *x = &a->tc, *y = &b->tc;
    return x->max_split_size == y->max_split_size &&
           (capacity == 0 ||
            (x->gc_threshold == y->gc_threshold && x->memory_fraction == y->memory_fraction));
}

int gs_wi_model_follow(const struct gs_wi_setting *s, uint64_t capacity, uint64_t total,
                       const struct gs_wi_setting *by, uint64_t by_capacity, uint64_t by_total,
                       struct gs_wi_follow *f)
{
    *f = (struct gs_wi_follow){.limit = UINT64_MAX};
    if (s->allocator != by->allocator)
        return 0;
    if (capacity == 0)
        total = 0;
    if (by_capacity == 0)
        by_total = 0;
    if (s->allocator == GS_WI_XLA)
        return capacity == by_capacity && total_of(capacity, total) ==
                                              total_of(by_capacity, by_total) &&
               same_model(s, by, capacity);
    const struct gs_tc_config *x = &s->tc, *y = &by->tc;
    /* what acts from the first request: the version's rules, the rounding,
     * the segments */
    if (x->torch != y->torch || x->max_non_split_rounding != y->max_non_split_rounding ||
        memcmp(x->roundup_power2_divisions, y->roundup_power2_divisions,
               sizeof x->roundup_power2_divisions) ||
        x->expandable_segments != y->expandable_segments)
        return 0;
    struct gs_wi_setting t = *s; /* s, less what is followed under conditions */
    if (x->max_split_size != y->max_split_size) {
        if (y->max_split_size)
            return 0;
        f->max_split = x->max_split_size;
        t.tc.max_split_size = 0;
    }
    int same_card = capacity == by_capacity &&
                    total_of(capacity, total) == total_of(by_capacity, by_total);
    if (!same_card) {
        /* an expandable segment's address space follows the card */
        if (by_capacity || x->expandable_segments)
            return 0;
        struct gs_tc_config c = tc_config(s, capacity, total);
        f->limit = capacity;
        if (c.memory_fraction > 0.0) { /* allowed_memory_maximum: of the card's total */
            uint64_t allowed =
                (uint64_t)(c.memory_fraction * (double)total_of(capacity, total));
            uint64_t gc = (uint64_t)(c.gc_threshold * (double)allowed);
            f->limit = allowed < f->limit ? allowed : f->limit;
            f->limit = c.gc_threshold > 0.0 && gc < f->limit ? gc : f->limit;
        }
    }
    f->conditional = f->max_split || f->limit != UINT64_MAX;
    return !same_card || same_model(&t, by, capacity);
}

int gs_wi_model_diverges(const struct gs_wi_model *by, const struct gs_wi_follow *f, int alloc,
                         uint64_t size, uint64_t outside)
{
    if (!by->tc)
        return 0; /* (XLA's are followed only as twins) */
    const struct gs_tc_stats *st = gs_tc_stats(by->tc);
    if (f->max_split && st->block_max >= f->max_split)
        return 1; /* a block its oversize rules would treat otherwise */
    if (!alloc)
        return 0;
    /* the most this request could take from the device: a new segment */
    uint64_t seg = gs_tc_segment_size(gs_tc_round_size(gs_tc_config_of(by->tc), size));
    if (f->max_split && seg >= f->max_split)
        return 1;
    uint64_t held = st->reserved + outside;
    return f->limit != UINT64_MAX &&
           (held < st->reserved || held > f->limit || seg > f->limit - held);
}

struct gs_wi_model *gs_wi_model_fork(const struct gs_wi_model *by, const struct gs_wi_setting *s,
                                     uint64_t capacity, uint64_t total)
{
    if (!by->tc)
        return NULL; /* (XLA's are followed only as twins, which never fork) */
    struct gs_wi_model *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    struct gs_tc_config c = tc_config(s, capacity, total);
    m->allocator = s->allocator;
    if (!(m->tc = gs_tc_clone(by->tc, &c))) {
        free(m);
        return NULL;
    }
    return m;
}
