/*
 * blocks.h - the program's own allocator's blocks (include/gpushim.h:
 * gpushim_block_alloc) and the fragmentation of driver allocations, as the
 * replay model keeps them (analyzer/model/blocks.c).
 *
 * Included by: analyzer/model/model.h (which the others include)
 */
#ifndef GPUSHIM_MODEL_BLOCKS_H
#define GPUSHIM_MODEL_BLOCKS_H

#include <stddef.h>
#include <stdint.h>

struct gs_replay;
struct gs_site;
struct gs_idmap;
struct gs_ordmap;

/* Fragmentation inside driver allocations at one moment (docs/api.md
 * "Fragmentation"). A segment is a live device allocation at an address
 * (cuMemAlloc*, stream-ordered, the pluggable allocator's); a block is in
 * the segment that holds its first byte. */
struct gs_frag {
    int present;              /* the run had given blocks by then */
    uint64_t time_ns;
    int32_t device;           /* the device it is about; -1: all of them */
    uint64_t segments;        /* segments that hold at least one block */
    uint64_t segment_bytes;   /* their bytes */
    uint64_t block_bytes;     /* their bytes inside blocks (overlaps counted once) */
    uint64_t largest_free;    /* the largest run of their bytes outside blocks */
    uint64_t outside_bytes;   /* bytes of blocks that start in no segment */
};

/* A live block. */
struct gs_block {
    uint64_t addr, size, time_ns;
    uint32_t site; /* index in gs_blocks.sites */
    uint32_t tid;
};

/* A segment as the fragmentation figures keep it (blocks.c). */
struct gs_seg;

struct gs_blocks {
    int seen;                        /* a block event came */
    struct gs_block *blocks;         /* the live blocks, free slots threaded through addr */
    size_t nblocks, blocks_cap, free_slot;
    struct gs_idmap *by_addr;        /* addr -> index in blocks */
    struct gs_site *sites;           /* by call site of gpushim_block_alloc (kind 0) */
    size_t nsites, sites_cap;
    struct gs_idmap *sites_by_stack; /* stack id -> index in sites */
    uint64_t allocs, frees, frees_unknown;
    uint64_t live_bytes, live_count;
    uint64_t peak_bytes, peak_time_ns, peak_epoch;
    /* fragmentation: at the device peak, and at each failure kept */
    int peak_pending;                /* the device peak's figures are still to be taken */
    struct gs_frag at_peak;
    struct gs_frag *at_failure;      /* one per gs_replay.failures entry */
    size_t at_failure_cap;
    /* a cache of the segments and blocks in address order, built when first
     * needed (never checkpointed: it is made again from the live sets) */
    int indexed;
    struct gs_ordmap *seg_map;       /* start -> index in segs */
    struct gs_ordmap *block_map;     /* addr -> index in blocks */
    struct gs_seg *segs;
    size_t nsegs, segs_cap, seg_free;
    uint32_t *dirty;                 /* segments whose blocks changed */
    size_t ndirty, dirty_cap;
    uint64_t sum_bytes, sum_covered, sum_inside, sum_segments; /* segments with blocks */
    uint64_t max_gap;
    size_t max_gap_seg;
    int max_valid;
};

/* The fragmentation now, on device (-1: all devices). */
void gs_blocks_fragmentation(struct gs_replay *r, int32_t device, struct gs_frag *out);
/* Bytes a block site held at the block peak. */
uint64_t gs_block_site_peak_bytes(const struct gs_blocks *b, const struct gs_site *s,
                                  uint64_t *count);
/* Whether blocks[idx] holds a live block. */
int gs_blocks_slot_live(const struct gs_blocks *b, size_t idx);

#endif
