/*
 * xla_bfc.c - owns the model of XLA's BFC ("best fit with coalescing")
 * allocator, tsl::BFCAllocator (xla/tsl/framework/bfc_allocator.{h,cc}),
 * written here in C from reading that source (openxla/xla at 00df9eefeb54),
 * one device, as JAX's GPU client builds it: CreateBFCAllocator
 * (xla/pjrt/gpu/gpu_helpers.cc, the version taking gpu_system_memory_size)
 * gives it memory_limit = total x memory_fraction, or gpu_system_memory_size
 * when set, and allow_growth = !preallocate; the other options keep
 * BFCAllocator::Options' defaults (garbage_collection off,
 * fragmentation_fraction 0, no spatial partitioning). JAX's defaults are
 * XLA_PYTHON_CLIENT_PREALLOCATE=true and a fraction of 0.75 (the JAX
 * documentation, "GPU memory allocation").
 *
 * Modelled: RoundedBytes (256-byte multiples), the 21 bins (BinNumForSize),
 * the best fit in bin order (FindChunkPtr -> FindTaggedChunkPtr ->
 * AllocateChunkFromLowEnd), the split rule (ShouldSplitChunk, SplitChunk),
 * coalescing on free (MarkFree, TryToCoalesce, MergeChunks), region growth
 * (Extend: curr_region_allocation_bytes_ doubling, the backpedal when the
 * card refuses) and garbage collection (DeallocateFreeRegions,
 * DeallocateRegions), in AllocateRawInternal's order; the stats of
 * FinishChunkAllocation and GetStats. Each function below names the one it
 * follows.
 *
 * The bins keep their free chunks ordered by (size, address) as the
 * source's FreeChunkSet does (non-partitioned, every free chunk tagged
 * kLower, ascending addresses): per bin an ordered map of sizes, each to an
 * ordered map of the addresses of the free chunks of that size, so the best
 * fit costs O(bins x log chunks).
 *
 * Addresses are the model's own: a region takes the lowest free range of
 * the model's address space (where cuMemAlloc puts one is the driver's
 * choice); only the order of free chunks of one size depends on them. The
 * GPU sub-allocator (se::DeviceMemAllocator) does not support coalescing,
 * so each region stays apart, as in the source with coalesce_regions_ off.
 *
 * Not modelled: alignment beyond 256 bytes (XLA asks for 64, rounded up to
 * kMinAllocationSize, and regions are 256-byte aligned, so padding is
 * always 0), the timestamped chunks of a timing counter (XLA's GPU client
 * sets none), spatial partitioning and its central gap (the default off;
 * newer JAX documents a "0.75+" policy built on it, not modelled), the
 * retry helper's wait for other threads' frees (a replay has none: the
 * retry gives the first answer), unified memory, other devices.
 */
#include <stdlib.h>
#include <string.h>

#include "analyzer/util/idmap.h"
#include "analyzer/util/ordmap.h"
#include "analyzer/whatif/xla_bfc.h"

#define MIN_ALLOC GS_BFC_MIN_ALLOCATION
#define NUM_BINS GS_BFC_NUM_BINS
#define MIN_ALLOC_BITS 8
#define GROWTH_START (2ull << 20)          /* allow_growth's first region: 2 MiB */
#define MAX_INTERNAL_FRAG (128ll << 20)    /* the 128 MiB split rule */
#define MAX_BYTES (1ull << 60)             /* capacity and limits: the model's sums stay exact */
#define REGION_CAP (1ull << 62)            /* curr_region_allocation_bytes_ saturates here */
#define VA_BASE (1ull << 32)               /* the model's address space starts here */
#define VA_ALIGN (2ull << 20)              /* and puts regions on 2 MiB boundaries */
#define NONE UINT32_MAX
#define ZERO_ID UINT64_MAX                 /* an id live with size 0: no chunk */

struct bchunk { /* a Chunk */
    uint64_t addr, size, requested;
    uint32_t prev, next; /* the physically adjacent chunks in the region */
    uint32_t region;
    int8_t bin;          /* bin_num: the bin of a free chunk, -1 in use */
    uint8_t in_use, used;
};

struct bregion { /* an AllocationRegion */
    uint64_t base, size;
    uint32_t first;   /* its chunk at base: never merged away nor split off */
    uint32_t in_use;  /* its chunks in use */
    uint8_t used;
};

struct gs_bfc {
    struct gs_bfc_config c;
    struct gs_bfc_stats s;
    uint64_t memory_limit;
    int64_t max_frag;        /* max_internal_fragmentation_bytes_ */
    uint64_t curr_region;    /* curr_region_allocation_bytes_ */
    int allow_growth;
    uint64_t external;       /* device memory held outside the allocator */
    struct bchunk *ch;
    uint32_t nch, capch, free_slot; /* free_slot: unused chunk slots, chained through .next */
    struct bregion *rg;
    uint32_t nrg, caprg;
    struct gs_ordmap *by_base;      /* region base -> region index */
    struct gs_ordmap *bins[NUM_BINS]; /* per bin: size -> (struct gs_ordmap *) address -> chunk */
    struct gs_ordmap **spare;       /* empty address maps for reuse */
    uint32_t nspare, capspare;
    struct gs_idmap *ids;           /* id -> chunk index */
    int peak_pending;
    int err; /* the model's own memory ran out during this request */
};

/* ---- the configuration (CreateBFCAllocator, BFCAllocator::BFCAllocator) ---- */

void gs_bfc_config_default(struct gs_bfc_config *c)
{
    memset(c, 0, sizeof *c);
    c->memory_fraction = 0.75;
    c->preallocate = 1;
}

int gs_bfc_config_check(const struct gs_bfc_config *c)
{
    if (c->capacity == 0 || c->capacity > MAX_BYTES || c->system_memory_size > MAX_BYTES ||
        c->available > c->capacity)
        return -1;
    if (!(c->memory_fraction > 0.0 && c->memory_fraction <= 1.0))
        return -1;
    if (!(c->fragmentation_fraction >= 0.0 && c->fragmentation_fraction <= 1.0))
        return -1;
    return 0;
}

uint64_t gs_bfc_memory_limit(const struct gs_bfc_config *c)
{
    if (c->system_memory_size)
        return c->system_memory_size;
    return (uint64_t)((double)c->capacity * c->memory_fraction);
}

/* ---- the size rules: RoundedBytes, BinNumForSize ---- */

uint64_t gs_bfc_rounded_bytes(uint64_t bytes)
{
    if (bytes > UINT64_MAX - (MIN_ALLOC - 1))
        return UINT64_MAX;
    return (bytes + MIN_ALLOC - 1) / MIN_ALLOC * MIN_ALLOC;
}

int gs_bfc_bin_for_size(uint64_t bytes)
{
    uint64_t v = (bytes < MIN_ALLOC ? MIN_ALLOC : bytes) >> MIN_ALLOC_BITS;
    int b = 63 - __builtin_clzll(v);
    return b < NUM_BINS - 1 ? b : NUM_BINS - 1;
}

/* Room for one more of n elements of `size` bytes in *v (capacity *cap,
 * doubled from `first`): 0, or -1 and t->err on no memory. */
static int room(struct gs_bfc *t, void **v, uint32_t *cap, uint32_t n, size_t size, uint32_t first)
{
    if (n < *cap)
        return 0;
    uint32_t c = *cap ? *cap * 2 : first;
    void *nv = c > *cap && c != NONE ? realloc(*v, (size_t)c * size) : NULL;
    if (!nv) {
        t->err = 1;
        return -1;
    }
    *v = nv;
    *cap = c;
    return 0;
}

/* ---- chunks (AllocateChunk, DeallocateChunk) ---- */

static uint32_t chunk_new(struct gs_bfc *t)
{
    uint32_t i;
    if (t->free_slot != NONE) {
        i = t->free_slot;
        t->free_slot = t->ch[i].next;
    } else {
        if (room(t, (void **)&t->ch, &t->capch, t->nch, sizeof *t->ch, 64) < 0)
            return NONE;
        i = t->nch++;
    }
    memset(&t->ch[i], 0, sizeof t->ch[i]);
    t->ch[i].prev = t->ch[i].next = t->ch[i].region = NONE;
    t->ch[i].bin = -1;
    t->ch[i].used = 1;
    t->s.live_chunks++;
    return i;
}

static void chunk_drop(struct gs_bfc *t, uint32_t i)
{
    t->ch[i].used = 0;
    t->ch[i].next = t->free_slot;
    t->free_slot = i;
    t->s.live_chunks--;
}

/* ---- the bins (Bin::free_chunks, InsertFreeChunk, RemoveFreeChunkFromBin) ---- */

/* The address map of the free chunks of `size` in bin b, or NULL. */
static struct gs_ordmap *size_set(const struct gs_bfc *t, int b, uint64_t size)
{
    uint64_t k, v;
    if (gs_ordmap_floor(t->bins[b], size, &k, &v) < 0 || k != size)
        return NULL;
    return (struct gs_ordmap *)(uintptr_t)v;
}

/* InsertFreeChunk: into the bin of its size, ordered by (size, address). */
static void bin_insert(struct gs_bfc *t, uint32_t i)
{
    struct bchunk *c = &t->ch[i];
    int b = gs_bfc_bin_for_size(c->size);
    struct gs_ordmap *set = size_set(t, b, c->size);
    if (!set) {
        set = t->nspare ? t->spare[--t->nspare] : gs_ordmap_new();
        if (!set || gs_ordmap_put(t->bins[b], c->size, (uint64_t)(uintptr_t)set) < 0) {
            gs_ordmap_free(set);
            t->err = 1;
            return;
        }
    }
    if (gs_ordmap_put(set, c->addr, i) < 0) {
        t->err = 1;
        return;
    }
    c->bin = (int8_t)b;
    t->s.free_chunks++;
}

/* RemoveFreeChunkFromBin; a size left with no chunk leaves the bin. */
static void bin_remove(struct gs_bfc *t, uint32_t i)
{
    struct bchunk *c = &t->ch[i];
    if (c->bin < 0)
        return;
    struct gs_ordmap *set = size_set(t, c->bin, c->size);
    if (set && gs_ordmap_del(set, c->addr) == 0) {
        t->s.free_chunks--;
        if (gs_ordmap_count(set) == 0) {
            gs_ordmap_del(t->bins[c->bin], c->size);
            if (room(t, (void **)&t->spare, &t->capspare, t->nspare, sizeof *t->spare, 16) < 0)
                gs_ordmap_free(set);
            else
                t->spare[t->nspare++] = set;
        }
    }
    c->bin = -1;
}

/* LargestBinnedFreeChunk: the last chunk of the highest bin not empty. */
static uint64_t largest_free(const struct gs_bfc *t)
{
    for (int b = NUM_BINS - 1; b >= 0; b--) {
        uint64_t k, v;
        if (gs_ordmap_floor(t->bins[b], UINT64_MAX, &k, &v) == 0)
            return k;
    }
    return 0;
}

/* ---- splitting and merging (SplitChunk, MergeChunks, TryToCoalesce) ---- */

/* SplitChunk: chunk i keeps its first n bytes; the rest becomes a new free
 * chunk after it, into its bin. */
static void split_chunk(struct gs_bfc *t, uint32_t i, uint64_t n)
{
    uint32_t j = chunk_new(t);
    if (j == NONE)
        return;
    struct bchunk *c = &t->ch[i], *x = &t->ch[j];
    x->addr = c->addr + n;
    x->size = c->size - n;
    x->region = c->region;
    c->size = n;
    x->prev = i;
    x->next = c->next;
    if (x->next != NONE)
        t->ch[x->next].prev = j;
    c->next = j;
    bin_insert(t, j);
}

/* MergeChunks: h2, the chunk right after h1, into h1. */
static void merge_chunks(struct gs_bfc *t, uint32_t h1, uint32_t h2)
{
    struct bchunk *a = &t->ch[h1], *b = &t->ch[h2];
    a->next = b->next;
    if (a->next != NONE)
        t->ch[a->next].prev = h1;
    a->size += b->size;
    chunk_drop(t, h2);
}

/* TryToCoalesce: the next chunk, if free, into this one; then this one, if
 * the previous is free, into it. Returns the chunk that holds the result. */
static uint32_t try_to_coalesce(struct gs_bfc *t, uint32_t h)
{
    uint32_t n = t->ch[h].next;
    if (n != NONE && !t->ch[n].in_use) {
        bin_remove(t, n);
        merge_chunks(t, h, n);
    }
    uint32_t p = t->ch[h].prev;
    if (p != NONE && !t->ch[p].in_use) {
        bin_remove(t, p);
        merge_chunks(t, p, h);
        h = p;
    }
    return h;
}

/* ---- regions (Extend, DeallocateFreeRegions, DeallocateRegions) ---- */

/* Where the sub-allocator puts a region of `bytes`: the lowest 2 MiB
 * boundary from VA_BASE with no live region in the way. */
static uint64_t place_region(const struct gs_bfc *t, uint64_t bytes)
{
    uint64_t a = VA_BASE, k = 0, base, idx;
    while (gs_ordmap_ceil(t->by_base, k, &base, &idx) == 0) {
        if (base >= a + bytes)
            break;
        uint64_t end = base + t->rg[idx].size;
        if (end > a)
            a = (end + VA_ALIGN - 1) / VA_ALIGN * VA_ALIGN;
        k = base + 1;
    }
    return a;
}

static uint32_t region_new(struct gs_bfc *t, uint64_t bytes)
{
    uint32_t r = NONE;
    for (uint32_t k = 0; k < t->nrg; k++)
        if (!t->rg[k].used) {
            r = k;
            break;
        }
    if (r == NONE) {
        if (room(t, (void **)&t->rg, &t->caprg, t->nrg, sizeof *t->rg, 8) < 0)
            return NONE;
        r = t->nrg++;
    }
    uint64_t base = place_region(t, bytes);
    uint32_t h = chunk_new(t);
    if (h == NONE || gs_ordmap_put(t->by_base, base, r) < 0) {
        t->err = 1;
        return NONE;
    }
    t->rg[r] = (struct bregion){.base = base, .size = bytes, .first = h, .used = 1};
    t->ch[h].addr = base;
    t->ch[h].size = bytes;
    t->ch[h].region = r;
    bin_insert(t, h); /* one free chunk for the whole region (no coalescing of regions) */
    t->s.regions++;
    return r;
}

/* The sub-allocator's Alloc (DeviceMemAllocator: cuMemAlloc of exactly
 * `bytes`): the card refuses what it has not, its memory for the process
 * less the pool and what is held outside it. The memory limit is a
 * fraction of the card's total (CreateBFCAllocator: total_memory x
 * memory_fraction, the free memory it queries beside it unused), so it may
 * pass what the card can give: then this refuses first. */
static int driver_gives(const struct gs_bfc *t, uint64_t bytes)
{
    uint64_t avail = t->c.available ? t->c.available : t->c.capacity;
    uint64_t held = t->s.pool_bytes + t->external;
    return held >= t->s.pool_bytes && held <= avail && bytes <= avail - held;
}

void gs_bfc_set_external(struct gs_bfc *t, uint64_t bytes) { t->external = bytes; }

static void pool_add(struct gs_bfc *t, uint64_t n)
{
    t->s.pool_bytes += n;
    if (t->s.pool_bytes > t->s.peak_pool_bytes) {
        t->s.peak_pool_bytes = t->s.pool_bytes;
        t->peak_pending = 1;
    }
}

static void region_grow_target(struct gs_bfc *t)
{
    t->curr_region = t->curr_region >= REGION_CAP / 2 ? REGION_CAP : t->curr_region * 2;
}

/* Extend: what is left under the memory limit (rounded down to 256) must
 * hold the request; the region target doubles until it does; the region
 * is the target or what is left, whichever is less; a refusal from the card
 * backs off by 0.9 (kBackpedalFactor, a float) down to the request; a
 * target not raised for this request is doubled for the next. */
static int extend(struct gs_bfc *t, uint64_t rounded)
{
    uint64_t available = (t->memory_limit - t->s.pool_bytes) / MIN_ALLOC * MIN_ALLOC;
    if (rounded > available)
        return 0;
    int increased = 0;
    while (rounded > t->curr_region) {
        region_grow_target(t);
        increased = 1;
    }
    uint64_t bytes = t->curr_region < available ? t->curr_region : available;
    while (!driver_gives(t, bytes)) {
        t->s.driver_refusals++;
        uint64_t back = gs_bfc_rounded_bytes((uint64_t)((float)bytes * 0.9f));
        if (back >= bytes)
            back = bytes - MIN_ALLOC;
        bytes = back;
        if (bytes < rounded)
            return 0;
    }
    if (!increased)
        region_grow_target(t);
    if (region_new(t, bytes) == NONE)
        return 0;
    pool_add(t, bytes);
    t->s.region_allocs++;
    t->s.next_region_bytes = t->curr_region;
    return 1;
}

/* DeallocateRegions for one region: its chunks out of the bins and gone,
 * the memory back to the sub-allocator. */
static void region_free(struct gs_bfc *t, uint32_t r)
{
    for (uint32_t h = t->rg[r].first; h != NONE;) {
        uint32_t n = t->ch[h].next;
        if (!t->ch[h].in_use)
            bin_remove(t, h);
        chunk_drop(t, h);
        h = n;
    }
    gs_ordmap_del(t->by_base, t->rg[r].base);
    t->s.pool_bytes -= t->rg[r].size;
    t->s.region_frees++;
    t->s.regions--;
    t->rg[r].used = 0;
}

/* DeallocateFreeRegions: with garbage_collection, the regions with no chunk
 * in use are freed when they and what is left under the limit could hold
 * the request. 1 when it freed any. */
static int deallocate_free_regions(struct gs_bfc *t, uint64_t rounded)
{
    if (!t->c.garbage_collection)
        return 0;
    uint64_t total_free = 0;
    for (uint32_t r = 0; r < t->nrg; r++)
        if (t->rg[r].used && t->rg[r].in_use == 0)
            total_free += t->rg[r].size;
    if (total_free == 0)
        return 0;
    if (rounded > t->memory_limit - t->s.pool_bytes + total_free)
        return 0;
    for (uint32_t r = 0; r < t->nrg; r++)
        if (t->rg[r].used && t->rg[r].in_use == 0)
            region_free(t, r);
    t->s.gc_runs++;
    return 1;
}

/* ---- the allocator's steps ---- */

/* FindChunkPtr (non-partitioned: FindTaggedChunkPtr, every free chunk
 * kLower): from the request's bin up, the first chunk in (size, address)
 * order at least the request - in a bin the smallest that fits, then the
 * lowest address; out of its bin. */
static uint32_t find_chunk(struct gs_bfc *t, uint64_t rounded)
{
    for (int b = gs_bfc_bin_for_size(rounded); b < NUM_BINS; b++) {
        uint64_t size, set, addr, h;
        if (gs_ordmap_ceil(t->bins[b], rounded, &size, &set) < 0)
            continue;
        if (gs_ordmap_ceil((struct gs_ordmap *)(uintptr_t)set, 0, &addr, &h) < 0)
            continue; /* not reached: an empty size leaves the bin */
        bin_remove(t, (uint32_t)h);
        return (uint32_t)h;
    }
    return NONE;
}

/* ShouldSplitChunk: split when the chunk is at least twice the request, or
 * keeping it whole would waste max_internal_fragmentation_bytes_ or more. */
static int should_split(const struct gs_bfc *t, uint64_t size, uint64_t rounded)
{
    return size >= rounded * 2 || (int64_t)(size - rounded) >= t->max_frag;
}

/* AllocateChunkFromLowEnd and FinishChunkAllocation: the chunk split when
 * ShouldSplitChunk says so, marked in use, the stats updated. */
static void allocate_chunk(struct gs_bfc *t, uint32_t h, uint64_t rounded, uint64_t num_bytes)
{
    if (should_split(t, t->ch[h].size, rounded))
        split_chunk(t, h, rounded);
    struct bchunk *c = &t->ch[h];
    c->in_use = 1;
    c->requested = num_bytes;
    t->rg[c->region].in_use++;
    t->s.num_allocs++;
    t->s.bytes_in_use += c->size;
    t->s.requested += num_bytes;
    if (t->s.bytes_in_use > t->s.peak_bytes_in_use)
        t->s.peak_bytes_in_use = t->s.bytes_in_use;
    if (c->size > t->s.largest_alloc_size)
        t->s.largest_alloc_size = c->size;
}

/* MarkFree, then TryToCoalesce and InsertFreeChunk (DeallocateRawInternal). */
static void deallocate_chunk(struct gs_bfc *t, uint32_t h)
{
    struct bchunk *c = &t->ch[h];
    c->in_use = 0;
    t->rg[c->region].in_use--;
    t->s.bytes_in_use -= c->size;
    t->s.requested -= c->requested;
    c->requested = 0;
    bin_insert(t, try_to_coalesce(t, h));
}

/* After each request: the pool bytes not in use while the pool stands at
 * its peak, the least of them (a new peak starts over). */
static void end_request(struct gs_bfc *t)
{
    uint64_t idle = t->s.pool_bytes - t->s.bytes_in_use;
    if (t->peak_pending) {
        t->s.unallocated_at_peak = t->s.peak_pool_bytes - t->s.bytes_in_use;
        t->peak_pending = 0;
    } else if (t->s.pool_bytes == t->s.peak_pool_bytes && idle < t->s.unallocated_at_peak) {
        t->s.unallocated_at_peak = idle;
    }
    t->s.largest_free_chunk = largest_free(t);
}

/* ---- the interface ---- */

struct gs_bfc *gs_bfc_new(const struct gs_bfc_config *c)
{
    if (gs_bfc_config_check(c) < 0)
        return NULL;
    struct gs_bfc *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->c = *c;
    t->free_slot = NONE;
    t->ids = gs_idmap_new();
    t->by_base = gs_ordmap_new();
    int ok = t->ids && t->by_base;
    for (int b = 0; b < NUM_BINS; b++)
        ok = ok && (t->bins[b] = gs_ordmap_new()) != NULL;
    if (!ok) {
        gs_bfc_free(t);
        return NULL;
    }
    /* BFCAllocator::BFCAllocator: memory_limit_ the total it is given; the
     * first region 2 MiB (or the limit, if less) with allow_growth, else the
     * whole limit; max_internal_fragmentation_bytes_ a fraction of the
     * limit, or 128 MiB. */
    t->memory_limit = gs_bfc_memory_limit(c);
    t->allow_growth = !c->preallocate;
    uint64_t first = t->allow_growth && t->memory_limit > GROWTH_START ? GROWTH_START : t->memory_limit;
    t->curr_region = gs_bfc_rounded_bytes(first);
    t->max_frag = c->fragmentation_fraction > 0.0
                      ? (int64_t)(c->fragmentation_fraction * (double)t->memory_limit)
                      : MAX_INTERNAL_FRAG;
    t->s.memory_limit = t->memory_limit;
    t->s.next_region_bytes = t->curr_region;
    return t;
}

void gs_bfc_free(struct gs_bfc *t)
{
    if (!t)
        return;
    for (int b = 0; b < NUM_BINS; b++) {
        uint64_t k = 0, size, set;
        while (t->bins[b] && gs_ordmap_ceil(t->bins[b], k, &size, &set) == 0) {
            gs_ordmap_free((struct gs_ordmap *)(uintptr_t)set);
            if (size == UINT64_MAX)
                break;
            k = size + 1;
        }
        gs_ordmap_free(t->bins[b]);
    }
    for (uint32_t k = 0; k < t->nspare; k++)
        gs_ordmap_free(t->spare[k]);
    free(t->spare);
    gs_ordmap_free(t->by_base);
    gs_idmap_free(t->ids);
    free(t->ch);
    free(t->rg);
    free(t);
}

static int oom(struct gs_bfc *t, uint64_t size)
{
    if (!t->s.ooms++) {
        t->s.first_oom_request = t->s.requests - 1;
        t->s.first_oom_size = size;
    }
    end_request(t);
    return GS_BFC_OOM;
}

/* AllocateRawInternal: the best fit; else Extend and the best fit; else,
 * with garbage collection, the free regions freed, Extend and the best
 * fit; else out of memory. */
/* BFCAllocator::AllocateRawInternal: the chunk for a request, in *out (a
 * chunk index, GS_BFC_HANDLE_ZERO for size 0). */
static int allocate_raw(struct gs_bfc *t, uint64_t size, uint32_t *out)
{
    if (size == 0) {
        *out = GS_BFC_HANDLE_ZERO;
        return GS_BFC_OK;
    }
    uint64_t rounded = gs_bfc_rounded_bytes(size);
    if (rounded == UINT64_MAX)
        return oom(t, size);
    uint32_t h = find_chunk(t, rounded);
    if (h == NONE && !t->err && extend(t, rounded))
        h = find_chunk(t, rounded);
    if (h == NONE && !t->err && deallocate_free_regions(t, rounded) && extend(t, rounded))
        h = find_chunk(t, rounded);
    if (t->err)
        return GS_BFC_NOMEM;
    if (h == NONE)
        return oom(t, size);
    allocate_chunk(t, h, rounded, size);
    if (t->err)
        return GS_BFC_NOMEM;
    *out = h;
    return GS_BFC_OK;
}

int gs_bfc_alloc(struct gs_bfc *t, uint64_t id, uint64_t size)
{
    uint64_t v;
    uint32_t h;
    t->s.requests++;
    t->err = 0;
    if (gs_idmap_get(t->ids, id, &v) == 0)
        return GS_BFC_BAD;
    int rc = allocate_raw(t, size, &h);
    if (rc != GS_BFC_OK)
        return rc;
    if (gs_idmap_put(t->ids, id, h == GS_BFC_HANDLE_ZERO ? ZERO_ID : h) < 0)
        return GS_BFC_NOMEM;
    if (h != GS_BFC_HANDLE_ZERO)
        end_request(t);
    return GS_BFC_OK;
}

int gs_bfc_alloc_h(struct gs_bfc *t, uint64_t size, uint32_t *handle)
{
    t->s.requests++;
    t->err = 0;
    *handle = GS_BFC_HANDLE_NONE;
    int rc = allocate_raw(t, size, handle);
    if (rc == GS_BFC_OK && *handle != GS_BFC_HANDLE_ZERO)
        end_request(t);
    return rc;
}

static int chunk_in_use(const struct gs_bfc *t, uint32_t h)
{
    return h < t->nch && t->ch[h].used && t->ch[h].in_use;
}

/* BFCAllocator::DeallocateRawInternal of a live chunk. */
static int deallocate_raw(struct gs_bfc *t, uint32_t h)
{
    if (h != GS_BFC_HANDLE_ZERO)
        deallocate_chunk(t, h);
    if (t->err)
        return GS_BFC_NOMEM;
    end_request(t);
    return GS_BFC_OK;
}

int gs_bfc_release(struct gs_bfc *t, uint64_t id)
{
    uint64_t v;
    t->s.requests++;
    t->err = 0;
    if (gs_idmap_get(t->ids, id, &v) < 0)
        return GS_BFC_BAD;
    gs_idmap_del(t->ids, id);
    return deallocate_raw(t, v == ZERO_ID ? GS_BFC_HANDLE_ZERO : (uint32_t)v);
}

int gs_bfc_release_h(struct gs_bfc *t, uint32_t handle)
{
    t->s.requests++;
    t->err = 0;
    if (handle == GS_BFC_HANDLE_NONE ||
        (handle != GS_BFC_HANDLE_ZERO && !chunk_in_use(t, handle)))
        return GS_BFC_BAD;
    return deallocate_raw(t, handle);
}

const struct gs_bfc_stats *gs_bfc_stats(const struct gs_bfc *t) { return &t->s; }

int gs_bfc_chunk_of(const struct gs_bfc *t, uint64_t id, uint64_t *addr, uint64_t *size)
{
    uint64_t v;
    if (gs_idmap_get(t->ids, id, &v) < 0 || v == ZERO_ID)
        return -1;
    *addr = t->ch[v].addr;
    *size = t->ch[v].size;
    return 0;
}

/* 0 when chunk i of a free bin is where its size and address say. */
static int in_its_bin(const struct gs_bfc *t, uint32_t i)
{
    const struct bchunk *c = &t->ch[i];
    uint64_t k, v;
    if (c->bin != gs_bfc_bin_for_size(c->size))
        return -1;
    const struct gs_ordmap *set = size_set(t, c->bin, c->size);
    if (!set || gs_ordmap_floor(set, c->addr, &k, &v) < 0 || k != c->addr || v != i)
        return -1;
    return 0;
}

int gs_bfc_check(const struct gs_bfc *t)
{
    uint64_t in_use = 0, req = 0, live = 0, nfree = 0, pool = 0, nreg = 0, covered = 0;
    for (uint32_t r = 0; r < t->nrg; r++) {
        const struct bregion *g = &t->rg[r];
        if (!g->used)
            continue;
        nreg++;
        pool += g->size;
        uint64_t at = g->base, used = 0;
        uint32_t prev = NONE;
        for (uint32_t h = g->first; h != NONE; h = t->ch[h].next) {
            const struct bchunk *c = &t->ch[h];
            if (!c->used || c->region != r || c->prev != prev || c->addr != at)
                return 1; /* a region's chunks linked both ways, contiguous */
            if (c->size == 0 || c->size % MIN_ALLOC || c->addr % MIN_ALLOC)
                return 2; /* 256-byte multiples */
            if (prev != NONE && !c->in_use && !t->ch[prev].in_use)
                return 3; /* free neighbours merged */
            if (c->in_use) {
                if (c->bin != -1)
                    return 4; /* a chunk in use is in no bin */
                used++;
                in_use += c->size;
                req += c->requested;
            } else {
                if (in_its_bin(t, h) < 0)
                    return 4; /* a free chunk is in the bin of its size */
                nfree++;
            }
            live++;
            at += c->size;
            prev = h;
            if (live > t->s.live_chunks)
                return 5;
        }
        covered += at - g->base;
        if (at != g->base + g->size)
            return 1; /* the chunks cover the region */
        if (used != g->in_use)
            return 6;
        uint64_t k, v;
        if (gs_ordmap_floor(t->by_base, g->base, &k, &v) < 0 || k != g->base || v != r)
            return 7;
    }
    size_t binned = 0;
    for (int b = 0; b < NUM_BINS; b++) {
        uint64_t k = 0, size, set;
        while (gs_ordmap_ceil(t->bins[b], k, &size, &set) == 0) {
            if (gs_bfc_bin_for_size(size) != b || gs_ordmap_count((struct gs_ordmap *)(uintptr_t)set) == 0)
                return 8; /* sizes in their bins, none empty */
            binned += gs_ordmap_count((struct gs_ordmap *)(uintptr_t)set);
            if (size == UINT64_MAX)
                break;
            k = size + 1;
        }
    }
    if (binned != nfree || nfree != t->s.free_chunks)
        return 8; /* the bins hold the free chunks and no other */
    if (live != t->s.live_chunks || nreg != t->s.regions || gs_ordmap_count(t->by_base) != nreg)
        return 5;
    if (in_use != t->s.bytes_in_use || req != t->s.requested || in_use > t->s.peak_bytes_in_use)
        return 9;
    if (pool != t->s.pool_bytes || covered != pool || pool > t->s.peak_pool_bytes)
        return 10;
    if (pool > t->memory_limit)
        return 11;
    return 0;
}
