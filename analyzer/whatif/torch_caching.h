/*
 * torch_caching.h - a model of PyTorch's CUDA caching allocator
 * (analyzer/whatif/torch_caching.c): its configuration (what
 * PYTORCH_CUDA_ALLOC_CONF sets, the card's bytes, the PyTorch version where
 * the behaviour differs), the requests it takes (alloc, free, empty_cache)
 * and the figures it keeps (reserved, allocated, segment calls, OOM retries,
 * where it ran out).
 *
 * Included by: analyzer/whatif, the layers above it (findings, report,
 * export, cmd, main.c) and tests. Never by the shim or the model.
 */
#ifndef GPUSHIM_WHATIF_TORCH_CACHING_H
#define GPUSHIM_WHATIF_TORCH_CACHING_H

#include <stdint.h>

/* PyTorch versions, oldest first: each 2.x release by its minor number
 * (GS_TC_TORCH_2_0 + minor), then the changes the model knows past the
 * newest. The allocator is modelled as the newest source has it (torch 2.12,
 * 13eab2b3ef4e); what an older release differs in and the model follows is
 * its options (settings.c: which it accepts, and their limits) and the
 * memory fraction's rules (gs_tc_torch_fraction_optional). */
enum gs_tc_torch {
    GS_TC_TORCH_2_0 = 0,
    GS_TC_TORCH_2_1 = 1,  /* expandable_segments */
    GS_TC_TORCH_2_2 = 2,  /* release_lock_on_cudamalloc, pinned host registration */
    GS_TC_TORCH_2_5 = 5,  /* expandable segments shared through exported handles */
    GS_TC_TORCH_2_6 = 6,  /* max_non_split_rounding_mb, pinned_use_background_threads */
    GS_TC_TORCH_2_9 = 9,  /* graph_capture_record_stream_reuse; the last of the older
                           * CUDAAllocatorConfig::parseArgs (max_split_size_mb > 20) */
    GS_TC_TORCH_2_10 = 10, /* AcceleratorAllocatorConfig (max_split_size_mb >= 20),
                            * per_process_memory_fraction, a fraction of 1 no limit */
    /* The source as of torch 2.12 (13eab2b3ef4e): get_free_block applies
     * the max_split_size oversize rules to blocks of expandable segments
     * too (pytorch/pytorch#123548: reserved grows without bound when
     * max_split_size_mb and expandable_segments:True are set together). */
    GS_TC_TORCH_2_12 = 12,
    /* With pytorch/pytorch#193400 ("Let expandable segments reuse free
     * blocks larger than max_split_size"): the oversize rules skip blocks
     * of expandable segments. Open when this was written; 2.12 otherwise. */
    GS_TC_TORCH_PR193400 = 13,
};
#define GS_TC_TORCH_NEWEST GS_TC_TORCH_2_12 /* the newest released behaviour */
/* The 2.x minor number whose options and limits a version has. */
static inline int gs_tc_torch_minor(enum gs_tc_torch t)
{
    return t == GS_TC_TORCH_PR193400 ? 12 : (int)t;
}
/* From 2.10 DeviceCachingAllocator keeps allowed_memory_maximum as an
 * std::optional set only by a fraction below 1 (setMemoryFraction: "if
 * (fraction < 1.0)"), and malloc collects garbage only with it
 * (allowed_memory_maximum.has_value()); before, setMemoryFraction set
 * set_fraction for any fraction, 1 included. */
static inline int gs_tc_torch_fraction_optional(enum gs_tc_torch t)
{
    return gs_tc_torch_minor(t) >= 10;
}
/* max_split_size_mb's least value in MiB: 21 before 2.10
 * (CUDAAllocatorConfig::parseMaxSplitSize: val1 > kLargeBuffer / mb), 20
 * from it (AcceleratorAllocatorConfig::parseMaxSplitSize: val_env >=
 * min_allowed_split_size_mb, kLargeBuffer / kMB). max_non_split_rounding_mb
 * alike. */
static inline unsigned gs_tc_torch_min_split_mb(enum gs_tc_torch t)
{
    return gs_tc_torch_minor(t) >= 10 ? 20 : 21;
}

/* roundup_power2_divisions has one value per power-of-two interval from
 * 1 MiB up (CUDAAllocatorConfig: kRoundUpPowerOfTwoIntervals, the last
 * interval holding everything above). */
#define GS_TC_POW2_INTERVALS 16

struct gs_tc_config {
    enum gs_tc_torch torch;
    uint64_t capacity;       /* the bytes the process may take from the device (the card
                              * less the CUDA context and other processes); 0: unlimited */
    /* The card's total memory (cudaGetDeviceProperties' totalGlobalMem,
     * cudaMemGetInfo's total), 0: capacity. What PyTorch takes fractions of:
     * set_per_process_memory_fraction's allowed_memory_maximum (and so
     * garbage_collection_threshold's), and an expandable segment's address
     * space (1 1/8 of it). The device refuses memory past capacity. */
    uint64_t total;
    uint64_t max_split_size; /* max_split_size_mb in bytes; 0: unlimited (the default) */
    uint64_t max_non_split_rounding; /* max_non_split_rounding_mb in bytes (20 MiB) */
    /* 0 or 1: off; otherwise a power of two (CUDAAllocatorConfig checks it) */
    uint32_t roundup_power2_divisions[GS_TC_POW2_INTERVALS];
    double gc_threshold;     /* garbage_collection_threshold, 0: off; acts only with a
                              * memory fraction set, as in the source */
    double memory_fraction;  /* torch.cuda.set_per_process_memory_fraction; 0: not set */
    int expandable_segments; /* expandable_segments:True */
};

/* The defaults: torch GS_TC_TORCH_NEWEST, unlimited card, no options. */
void gs_tc_config_default(struct gs_tc_config *c);
/* roundup_power2_divisions:N for every interval. */
void gs_tc_config_pow2_all(struct gs_tc_config *c, uint32_t divisions);
/* 0, or -1 when a value is one PyTorch refuses (max_split_size_mb under
 * the version's least, divisions not a power of two, a threshold outside
 * (0, 1)), or a
 * capacity or total over 1 EiB, or a total below the capacity. */
int gs_tc_config_check(const struct gs_tc_config *c);

struct gs_tc_stats {
    uint64_t requests;           /* alloc, free and empty_cache requests taken */
    uint64_t reserved, reserved_peak;   /* bytes in segments (mapped pages) */
    uint64_t allocated, allocated_peak; /* bytes in allocated blocks (rounded sizes) */
    uint64_t requested;          /* bytes asked for by the live allocations */
    uint64_t unallocated_at_peak; /* reserved - allocated while reserved stood at its peak,
                                   * the least of it after a request */
    uint64_t segment_allocs;     /* cudaMalloc calls, or pages mapped (expandable) */
    uint64_t segment_frees;      /* cudaFree calls, or pages unmapped */
    /* DeviceStats' num_device_alloc and num_device_free as PyTorch counts
     * them: one for each cudaMalloc (alloc_block) and each map_block call,
     * which maps as many pages as the block needs; one for each cudaFree
     * (release_block) and each unmap_block call. */
    uint64_t num_device_alloc, num_device_free;
    uint64_t oom_retries;        /* allocations retried after the cache was emptied */
    uint64_t gc_frees;           /* segments freed by garbage_collection_threshold */
    uint64_t ooms;               /* allocations that ran out */
    uint64_t first_oom_request;  /* the request's index (from 0) of the first, if any */
    uint64_t first_oom_size;     /* its size */
    uint64_t live_blocks;        /* blocks the model holds now (allocated, free, unmapped) */
    uint64_t block_max;          /* the largest mapped block there has been, free or not */
};

struct gs_tc;
/* NULL on no memory or a config gs_tc_config_check refuses. */
struct gs_tc *gs_tc_new(const struct gs_tc_config *c);
/* A copy of t under configuration c, as if c's model had taken every request
 * t took: c differs from t's own in what has not acted yet, which the
 * caller knows (models.c: the capacity, memory fraction and garbage
 * collection of a model that never neared c's limits, without expandable
 * segments, whose address space follows the capacity; max_split_size of
 * one that never held a block that large, stats.block_max). NULL when c
 * is refused or on no memory. */
struct gs_tc *gs_tc_clone(const struct gs_tc *t, const struct gs_tc_config *c);
void gs_tc_free(struct gs_tc *t);

enum {
    GS_TC_OK = 0,
    GS_TC_OOM = 1,    /* ran out: counted, the allocation is not live */
    GS_TC_BAD = -1,   /* an id already live, or an id not live (free) */
    GS_TC_NOMEM = -2, /* the model's own memory ran out */
};
/* An allocation of size bytes on stream, known by id until freed. Size 0
 * takes no memory (PyTorch returns no pointer) but the id is live. */
int gs_tc_alloc(struct gs_tc *t, uint64_t id, uint64_t size, uint64_t stream);
int gs_tc_release(struct gs_tc *t, uint64_t id);
/* The same known by the model's handle instead of an id (the caller keeps
 * which handle is whose: the what-if replay, which has its own map):
 * *handle is the allocation's, GS_TC_HANDLE_NONE when it did not succeed. A
 * handle not live is GS_TC_BAD; a stale one (released, its slot taken
 * again) names what holds the slot now. */
#define GS_TC_HANDLE_NONE UINT32_MAX
#define GS_TC_HANDLE_ZERO (UINT32_MAX - 1) /* a live allocation of size 0 */
int gs_tc_alloc_h(struct gs_tc *t, uint64_t size, uint64_t stream, uint32_t *handle);
int gs_tc_release_h(struct gs_tc *t, uint32_t handle);
/* Device memory held outside the allocator from now on (NCCL's buffers,
 * the program's own cudaMalloc): the driver then gives the allocator at
 * most the capacity less it. */
void gs_tc_set_external(struct gs_tc *t, uint64_t bytes);
/* torch.cuda.empty_cache(): release_cached_blocks. */
void gs_tc_empty_cache(struct gs_tc *t);
const struct gs_tc_stats *gs_tc_stats(const struct gs_tc *t);
const struct gs_tc_config *gs_tc_config_of(const struct gs_tc *t);
/* The model's invariants, for tests and fuzzing: 0 when they hold (each
 * segment's blocks contiguous, no two free or two unmapped neighbours
 * unmerged, every cached block in its pool, the figures the blocks' sums),
 * else the number of the first that does not. */
int gs_tc_check(const struct gs_tc *t);

/* The rounding rules, for tests and reports: round_size (the block size a
 * request gets) and get_allocation_size (the segment cudaMalloc gets for
 * it). UINT64_MAX when the size cannot be rounded without overflow. */
uint64_t gs_tc_round_size(const struct gs_tc_config *c, uint64_t size);
uint64_t gs_tc_segment_size(uint64_t rounded);

#endif
