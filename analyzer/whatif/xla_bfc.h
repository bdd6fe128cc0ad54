/*
 * xla_bfc.h - a model of XLA's BFC allocator, tsl::BFCAllocator, as JAX's
 * GPU client builds it (analyzer/whatif/xla_bfc.c): its configuration (the
 * card's bytes, what XLA_PYTHON_CLIENT_MEM_FRACTION, _PREALLOCATE and the
 * allocator's options set), the requests it takes (alloc, free) and the
 * figures it keeps (bytes in use, pool bytes, region calls, where it ran
 * out).
 *
 * Included by: analyzer/whatif, the layers above it (findings, report,
 * export, cmd, main.c) and tests. Never by the shim or the model.
 */
#ifndef GPUSHIM_WHATIF_XLA_BFC_H
#define GPUSHIM_WHATIF_XLA_BFC_H

#include <stdint.h>

/* BFCAllocator's constants (bfc_allocator.h): kMinAllocationSize and
 * kNumBins (bin b holds free chunks of [256 << b, 256 << (b + 1)) bytes,
 * the last one all above 256 MiB). */
#define GS_BFC_MIN_ALLOCATION 256ull
#define GS_BFC_NUM_BINS 21

struct gs_bfc_config {
    uint64_t capacity;       /* the card's bytes (DeviceMemoryUsage's total); required:
                              * the memory limit is its fraction */
    /* What the card can give the process: its total less the CUDA context
     * and other processes' memory; 0: capacity. A region (cuMemAlloc) past
     * it, less what is held outside the allocator (gs_bfc_set_external),
     * is refused, and Extend backs off. At most capacity. */
    uint64_t available;
    double memory_fraction;  /* XLA_PYTHON_CLIENT_MEM_FRACTION (0.75): in (0, 1] */
    /* GpuAllocatorConfig::gpu_system_memory_size: the memory limit in bytes
     * in place of fraction x capacity; 0: not set (the default). May exceed
     * the card, which then refuses regions (Extend backs off). */
    uint64_t system_memory_size;
    /* XLA_PYTHON_CLIENT_PREALLOCATE (1). CreateBFCAllocator sets the
     * allocator's allow_growth = !preallocate and nothing else, so this one
     * knob is both: 1 makes the first region the whole memory limit, 0 (or
     * TensorFlow's allow_growth) grows regions from 2 MiB, doubling. */
    int preallocate;
    /* Options::garbage_collection: free regions with no chunk in use and
     * retry when the pool cannot grow. 0 as JAX builds the allocator;
     * TensorFlow's GPUBFCAllocator turns it on (TF_ENABLE_GPU_GARBAGE_COLLECTION). */
    int garbage_collection;
    /* Options::fragmentation_fraction: a chunk is split when keeping it whole
     * would waste at least this fraction of the memory limit; 0 (the
     * default): 128 MiB. In [0, 1]. */
    double fragmentation_fraction;
};

/* JAX's defaults: fraction 0.75, preallocate, no garbage collection, the
 * 128 MiB rule; capacity 0 (to be set: gs_bfc_config_check refuses 0). */
void gs_bfc_config_default(struct gs_bfc_config *c);
/* 0, or -1 for a capacity of 0 or over 1 EiB, an available over the
 * capacity, a fraction outside (0, 1], a
 * system_memory_size over 1 EiB, or a fragmentation_fraction outside [0, 1]. */
int gs_bfc_config_check(const struct gs_bfc_config *c);
/* memory_limit_: system_memory_size when set, else capacity x fraction
 * (CreateBFCAllocator's allocator_memory, truncated as size_t). */
uint64_t gs_bfc_memory_limit(const struct gs_bfc_config *c);

struct gs_bfc_stats {
    uint64_t requests;            /* alloc and free requests taken */
    uint64_t memory_limit;        /* memory_limit_ (stats bytes_limit) */
    uint64_t bytes_in_use, peak_bytes_in_use; /* bytes in chunks in use (their sizes) */
    uint64_t requested;           /* bytes asked for by the live allocations */
    uint64_t largest_alloc_size;  /* the largest chunk handed out */
    uint64_t num_allocs;          /* chunks handed out */
    uint64_t pool_bytes, peak_pool_bytes; /* bytes in regions (held from the driver) */
    uint64_t unallocated_at_peak; /* pool_bytes - bytes_in_use while pool_bytes stood at its
                                   * peak, the least of it after a request */
    uint64_t region_allocs;       /* regions added: SubAllocator::Alloc calls that succeeded */
    uint64_t region_frees;        /* regions given back (garbage collection) */
    uint64_t driver_refusals;     /* SubAllocator::Alloc calls the card refused (Extend backs off) */
    uint64_t gc_runs;             /* DeallocateFreeRegions calls that freed regions */
    uint64_t next_region_bytes;   /* curr_region_allocation_bytes_: the next region's target */
    uint64_t largest_free_chunk;  /* LargestFreeChunk after the last request */
    uint64_t ooms;                /* allocations that ran out */
    uint64_t first_oom_request;   /* the request's index (from 0) of the first, if any */
    uint64_t first_oom_size;      /* its size */
    uint64_t live_chunks;         /* chunks the model holds now, in use and free */
    uint64_t free_chunks;         /* of them free, in the bins */
    uint64_t regions;             /* regions held now */
};

struct gs_bfc;
/* NULL on no memory or a config gs_bfc_config_check refuses. */
struct gs_bfc *gs_bfc_new(const struct gs_bfc_config *c);
void gs_bfc_free(struct gs_bfc *t);

enum {
    GS_BFC_OK = 0,
    GS_BFC_OOM = 1,    /* ran out: counted, the allocation is not live */
    GS_BFC_BAD = -1,   /* an id already live, or an id not live (free) */
    GS_BFC_NOMEM = -2, /* the model's own memory ran out: only gs_bfc_free is safe after */
};
/* An allocation of size bytes, known by id until freed. Size 0 takes no
 * memory (AllocateRawInternal returns no pointer for it) but the id is live. */
int gs_bfc_alloc(struct gs_bfc *t, uint64_t id, uint64_t size);
int gs_bfc_release(struct gs_bfc *t, uint64_t id);
/* The same known by the model's handle instead of an id (the caller keeps
 * which is whose): *handle is the allocation's, GS_BFC_HANDLE_NONE when it
 * did not succeed; a handle not live is GS_BFC_BAD; a stale one (released,
 * its slot taken again) names what holds the slot now. */
#define GS_BFC_HANDLE_NONE UINT32_MAX
#define GS_BFC_HANDLE_ZERO (UINT32_MAX - 1) /* a live allocation of size 0 */
int gs_bfc_alloc_h(struct gs_bfc *t, uint64_t size, uint32_t *handle);
int gs_bfc_release_h(struct gs_bfc *t, uint32_t handle);
/* Device memory held outside the allocator from now on (NCCL's buffers,
 * the program's own cudaMalloc): the card then gives regions at most
 * available less it. */
void gs_bfc_set_external(struct gs_bfc *t, uint64_t bytes);
const struct gs_bfc_stats *gs_bfc_stats(const struct gs_bfc *t);
/* The model's invariants, for tests and fuzzing: 0 when they hold (each
 * region covered by its chunks without gap, neighbours linked both ways, no
 * two free neighbours unmerged, every free chunk in the bin of its size and
 * no other, the figures the chunks' and regions' sums, the pool within the
 * memory limit), else the number of the first that does not. */
int gs_bfc_check(const struct gs_bfc *t);
/* The chunk a live id holds: 0 and its address (the model's own, see
 * xla_bfc.c) and size; -1 for an id not live or live with size 0. */
int gs_bfc_chunk_of(const struct gs_bfc *t, uint64_t id, uint64_t *addr, uint64_t *size);

/* The source's size rules, for tests and reports: RoundedBytes (the chunk
 * size a request gets; UINT64_MAX when it cannot be rounded) and
 * BinNumForSize. */
uint64_t gs_bfc_rounded_bytes(uint64_t bytes);
int gs_bfc_bin_for_size(uint64_t bytes);

#endif
