/*
 * blocks.c - the second layer: blocks that the program's own allocator
 * carves from driver allocations (gpushim_block_alloc/_free, include/
 * gpushim.h), within the one streaming pass of replay.c; and how
 * fragmented the driver allocations are.
 *
 * Blocks are kept as live.c keeps allocations: a live set by address, one
 * site per call stack of gpushim_block_alloc with its totals, and what each
 * site held at the blocks' own peak (peak epochs, as live.c explains).
 *
 * Fragmentation (docs/api.md "Fragmentation"). A segment is a live device
 * allocation at an address (cuMemAlloc*, stream-ordered ones, the pluggable
 * allocator's), or a run of mapped ranges of device memory that touch (a
 * "run": PyTorch's expandable segments map their pages one by one, and its
 * own snapshot counts each contiguous mapped range as one segment); a block
 * belongs to the segment that holds its first byte.
 * Over the segments that hold at least one block: their bytes, the bytes
 * inside blocks (a byte inside two blocks counts once; a block's bytes past
 * its segment's end count for no segment), the free bytes (the difference)
 * and the largest run of free bytes inside one segment; fragmentation is
 * 1 - largest / free. Taken at the device peak and at each failure kept.
 *
 * Keeping that cheap in one pass: the segments and the blocks are also kept
 * in address order (ordmap.c), but only once the run has a block (a run
 * without one pays nothing), and each segment caches its figures, worked
 * out again only when its blocks changed (it is "dirty") and only when
 * figures are taken. The device peak's figures are taken lazily too: a new
 * peak only notes that they are pending, and they are taken just before the
 * next change to a segment or a block, or at the end; a run climbing to its
 * peak allocation after allocation takes them once.
 */
#include <stdlib.h>
#include <string.h>

#include "analyzer/model/model_int.h"

struct gs_seg {
    uint64_t start, size; /* a free slot: start threads the free list */
    int32_t device;
    int live, dirty;
    int run; /* mapped ranges that touch: grows and shrinks as they come and go */
    uint64_t nblocks, covered, inside, max_gap; /* cached, unless dirty */
};

void gs_blocks_init(struct gs_blocks *b)
{
    memset(b, 0, sizeof *b);
    b->by_addr = gs_idmap_new();
    b->sites_by_stack = gs_idmap_new();
    b->free_slot = SIZE_MAX;
    b->seg_free = SIZE_MAX;
    b->max_gap_seg = SIZE_MAX;
}

static void drop_index(struct gs_blocks *b)
{
    gs_ordmap_free(b->seg_map);
    gs_ordmap_free(b->block_map);
    free(b->segs);
    free(b->dirty);
    b->seg_map = b->block_map = NULL;
    b->segs = NULL;
    b->dirty = NULL;
    b->nsegs = b->segs_cap = b->ndirty = b->dirty_cap = 0;
    b->seg_free = SIZE_MAX;
    b->sum_bytes = b->sum_covered = b->sum_inside = b->sum_segments = 0;
    b->max_gap = 0;
    b->max_gap_seg = SIZE_MAX;
    b->max_valid = 0;
    b->indexed = 0;
}

void gs_blocks_free(struct gs_blocks *b)
{
    drop_index(b);
    free(b->blocks);
    free(b->sites);
    free(b->at_failure);
    gs_idmap_free(b->by_addr);
    gs_idmap_free(b->sites_by_stack);
    memset(b, 0, sizeof *b);
}

/* ---- sites ---- */

struct gs_site *gs_blocks_site(struct gs_blocks *b, uint32_t stack_id, int make)
{
    uint64_t idx;
    if (gs_idmap_get(b->sites_by_stack, stack_id, &idx) == 0)
        return &b->sites[idx];
    if (!make || gs_reserve((void **)&b->sites, &b->sites_cap, b->nsites, sizeof *b->sites) != 0 ||
        gs_idmap_put(b->sites_by_stack, stack_id, b->nsites) != 0)
        return NULL;
    struct gs_site *s = &b->sites[b->nsites++];
    memset(s, 0, sizeof *s);
    s->stack_id = stack_id;
    return s;
}

static void touch(const struct gs_blocks *b, struct gs_site *s)
{
    if (s->saved_epoch != b->peak_epoch) {
        s->saved_bytes = s->live_bytes;
        s->saved_count = s->live_count;
        s->saved_epoch = b->peak_epoch;
    }
}

uint64_t gs_block_site_peak_bytes(const struct gs_blocks *b, const struct gs_site *s,
                                  uint64_t *count)
{
    if (!b->peak_epoch) {
        *count = 0;
        return 0;
    }
    if (s->saved_epoch == b->peak_epoch) {
        *count = s->saved_count;
        return s->saved_bytes;
    }
    *count = s->live_count;
    return s->live_bytes;
}

/* ---- the live blocks ---- */

int gs_blocks_insert(struct gs_blocks *b, const struct gs_block *blk)
{
    uint64_t have;
    if (gs_idmap_get(b->by_addr, blk->addr, &have) == 0)
        return -1;
    size_t idx;
    if (b->free_slot != SIZE_MAX) {
        idx = b->free_slot;
    } else {
        if (gs_reserve((void **)&b->blocks, &b->blocks_cap, b->nblocks, sizeof *b->blocks) != 0)
            return -1;
        idx = b->nblocks;
    }
    if (gs_idmap_put(b->by_addr, blk->addr, idx) != 0)
        return -1;
    if (idx == b->nblocks)
        b->nblocks++;
    else
        b->free_slot = (size_t)b->blocks[idx].addr;
    b->blocks[idx] = *blk;
    return 0;
}

int gs_blocks_slot_live(const struct gs_blocks *b, size_t idx)
{
    uint64_t at;
    return gs_idmap_get(b->by_addr, b->blocks[idx].addr, &at) == 0 && at == idx;
}

/* ---- segments, in address order ---- */

enum { NOT_SEGMENT, SEGMENT, MAPPED_RANGE };

/* Whether a is a segment, or a mapped range of device memory (which joins
 * the run of those it touches). A mapping's memory lives while mapped. */
static int segment_kind(const struct gs_replay *r, const struct gs_live_alloc *a)
{
    if (a->kind == GS_KIND_DEVICE && a->space == GS_SPACE_ADDRESS)
        return SEGMENT;
    if (a->kind != GS_KIND_MAPPED || a->space != GS_SPACE_MAPPING || !a->parent)
        return NOT_SEGMENT;
    const struct gs_live_alloc *mem = gs_replay_find_live(r, GS_SPACE_HANDLE, a->parent);
    return mem && mem->kind == GS_KIND_DEVICE ? MAPPED_RANGE : NOT_SEGMENT;
}

static uint64_t end_of(uint64_t addr, uint64_t size)
{
    return size > UINT64_MAX - addr ? UINT64_MAX : addr + size;
}

/* 0, or -1 on no memory (the caller then drops the cache, made again when
 * next needed). */
static int mark_dirty(struct gs_blocks *b, size_t idx)
{
    struct gs_seg *s = &b->segs[idx];
    if (s->dirty)
        return 0;
    if (gs_reserve((void **)&b->dirty, &b->dirty_cap, b->ndirty, sizeof *b->dirty) != 0)
        return -1;
    s->dirty = 1;
    b->dirty[b->ndirty++] = (uint32_t)idx;
    return 0;
}

/* The segment that holds addr: its index, or SIZE_MAX. */
static size_t segment_at(const struct gs_blocks *b, uint64_t addr)
{
    uint64_t start, idx;
    if (gs_ordmap_floor(b->seg_map, addr, &start, &idx) != 0)
        return SIZE_MAX;
    const struct gs_seg *s = &b->segs[idx];
    return addr - start < s->size ? (size_t)idx : SIZE_MAX;
}

static void dirty_at(struct gs_blocks *b, uint64_t addr)
{
    size_t idx = b->indexed ? segment_at(b, addr) : SIZE_MAX;
    if (idx != SIZE_MAX && mark_dirty(b, idx) != 0)
        drop_index(b);
}

static int add_segment(struct gs_blocks *b, uint64_t start, uint64_t size, int32_t device,
                       int run)
{
    size_t idx;
    if (b->seg_free != SIZE_MAX) {
        idx = b->seg_free;
    } else {
        if (b->nsegs >= UINT32_MAX ||
            gs_reserve((void **)&b->segs, &b->segs_cap, b->nsegs, sizeof *b->segs) != 0)
            return -1;
        idx = b->nsegs;
    }
    if (gs_ordmap_put(b->seg_map, start, idx) != 0)
        return -1;
    if (idx == b->nsegs)
        b->nsegs++;
    else
        b->seg_free = (size_t)b->segs[idx].start;
    b->segs[idx] = (struct gs_seg){.start = start, .size = size, .device = device, .live = 1,
                                   .run = run};
    return mark_dirty(b, idx); /* blocks may lie there already (a segment freed under them) */
}

/* Takes a segment's cached figures out of the sums. */
static void unsum(struct gs_blocks *b, size_t idx)
{
    struct gs_seg *s = &b->segs[idx];
    if (!s->nblocks)
        return;
    b->sum_bytes -= s->size;
    b->sum_covered -= s->covered;
    b->sum_inside -= s->inside;
    b->sum_segments--;
}

static void remove_segment(struct gs_blocks *b, uint64_t start)
{
    uint64_t k, idx;
    if (gs_ordmap_floor(b->seg_map, start, &k, &idx) != 0 || k != start)
        return;
    unsum(b, (size_t)idx);
    if (b->max_gap_seg == idx)
        b->max_valid = 0;
    gs_ordmap_del(b->seg_map, start);
    struct gs_seg *s = &b->segs[idx];
    s->live = s->dirty = 0;
    s->nblocks = 0;
    s->start = b->seg_free;
    b->seg_free = (size_t)idx;
}

/* A run's new size: its figures out of the sums, to be worked out again. */
static int resize_run(struct gs_blocks *b, size_t idx, uint64_t size)
{
    unsum(b, idx);
    b->segs[idx].nblocks = 0;
    b->segs[idx].size = size;
    if (b->max_gap_seg == idx)
        b->max_valid = 0;
    return mark_dirty(b, idx);
}

/* The run of device's that starts at addr, or SIZE_MAX. */
static size_t run_at(const struct gs_blocks *b, uint64_t addr, int32_t device)
{
    uint64_t start, idx;
    if (gs_ordmap_floor(b->seg_map, addr, &start, &idx) != 0 || start != addr)
        return SIZE_MAX;
    const struct gs_seg *s = &b->segs[idx];
    return s->run && s->device == device ? (size_t)idx : SIZE_MAX;
}

/* The run of device's that ends at addr, or SIZE_MAX. */
static size_t run_before(const struct gs_blocks *b, uint64_t addr, int32_t device)
{
    uint64_t start, idx;
    if (!addr || gs_ordmap_floor(b->seg_map, addr - 1, &start, &idx) != 0)
        return SIZE_MAX;
    const struct gs_seg *s = &b->segs[idx];
    return s->run && s->device == device && end_of(start, s->size) == addr ? (size_t)idx
                                                                           : SIZE_MAX;
}

/* A mapped range joins the runs it touches, before and after it. */
static int add_mapped(struct gs_blocks *b, const struct gs_live_alloc *a)
{
    uint64_t end = end_of(a->addr, a->size), size = a->size;
    size_t next = run_at(b, end, a->device);
    if (next != SIZE_MAX) {
        size += b->segs[next].size;
        remove_segment(b, end);
    }
    size_t prev = run_before(b, a->addr, a->device);
    if (prev != SIZE_MAX)
        return resize_run(b, prev, b->segs[prev].size + size);
    return add_segment(b, a->addr, size, a->device, 1);
}

/* An unmapped range leaves its run, which may fall in two. */
static int remove_mapped(struct gs_blocks *b, const struct gs_live_alloc *a)
{
    uint64_t start, k;
    if (gs_ordmap_floor(b->seg_map, a->addr, &start, &k) != 0)
        return 0;
    size_t idx = (size_t)k;
    const struct gs_seg *s = &b->segs[idx];
    if (!s->run || a->addr - start >= s->size)
        return 0;
    uint64_t end = end_of(start, s->size), cut = end_of(a->addr, a->size);
    if (cut < end && add_segment(b, cut, end - cut, s->device, 1) != 0)
        return -1;
    if (a->addr > start)
        return resize_run(b, idx, a->addr - start);
    remove_segment(b, start);
    return 0;
}

/* Builds the address-ordered cache from the live sets: on the first block,
 * and again after a checkpoint or when memory ran short. */
int gs_blocks_index(struct gs_replay *r)
{
    struct gs_blocks *b = &r->blocks;
    if (b->indexed)
        return 0;
    drop_index(b);
    b->seg_map = gs_ordmap_new();
    b->block_map = gs_ordmap_new();
    if (!b->seg_map || !b->block_map)
        goto fail;
    b->indexed = 1;
    for (size_t i = 0; i < r->nallocs; i++) {
        const struct gs_live_alloc *a = &r->allocs[i];
        int kind = gs_replay_slot_live(r, i) ? segment_kind(r, a) : NOT_SEGMENT;
        if ((kind == SEGMENT && add_segment(b, a->addr, a->size, a->device, 0) != 0) ||
            (kind == MAPPED_RANGE && add_mapped(b, a) != 0))
            goto fail;
    }
    for (size_t i = 0; i < b->nblocks; i++)
        if (gs_blocks_slot_live(b, i) && gs_ordmap_put(b->block_map, b->blocks[i].addr, i) != 0)
            goto fail;
    return 0;
fail:
    drop_index(b);
    return -1;
}

/* Works a segment's figures out from its blocks, in address order. */
static void measure(struct gs_blocks *b, struct gs_seg *s)
{
    uint64_t end = end_of(s->start, s->size), cursor = s->start, key = s->start, k, v;
    s->nblocks = s->covered = s->inside = s->max_gap = 0;
    while (gs_ordmap_ceil(b->block_map, key, &k, &v) == 0 && k < end) {
        const struct gs_block *blk = &b->blocks[v];
        uint64_t bend = end_of(k, blk->size);
        if (bend > end)
            bend = end;
        s->nblocks++;
        s->inside += blk->size;
        if (k > cursor) {
            if (k - cursor > s->max_gap)
                s->max_gap = k - cursor;
            cursor = k;
        }
        if (bend > cursor) {
            s->covered += bend - cursor;
            cursor = bend;
        }
        if (k == UINT64_MAX)
            break;
        key = k + 1;
    }
    if (s->nblocks && end - cursor > s->max_gap)
        s->max_gap = end - cursor;
}

/* Every dirty segment measured again, and the sums brought up to date. */
static void flush(struct gs_blocks *b)
{
    for (size_t i = 0; i < b->ndirty; i++) {
        size_t idx = b->dirty[i];
        struct gs_seg *s = &b->segs[idx];
        if (!s->live || !s->dirty)
            continue; /* freed since, or listed twice */
        unsum(b, idx);
        measure(b, s);
        s->dirty = 0;
        if (s->nblocks) {
            b->sum_bytes += s->size;
            b->sum_covered += s->covered;
            b->sum_inside += s->inside;
            b->sum_segments++;
        }
        if (!b->max_valid)
            continue;
        if (s->nblocks && s->max_gap >= b->max_gap) {
            b->max_gap = s->max_gap; /* the largest is here now */
            b->max_gap_seg = idx;
        } else if (b->max_gap_seg == idx) {
            b->max_valid = 0; /* the largest shrank: look again below */
        }
    }
    b->ndirty = 0;
    if (b->max_valid)
        return;
    b->max_gap = 0;
    b->max_gap_seg = SIZE_MAX;
    for (size_t i = 0; i < b->nsegs; i++)
        if (b->segs[i].live && b->segs[i].nblocks && b->segs[i].max_gap >= b->max_gap) {
            b->max_gap = b->segs[i].max_gap;
            b->max_gap_seg = i;
        }
    b->max_valid = 1;
}

void gs_blocks_fragmentation(struct gs_replay *r, int32_t device, struct gs_frag *out)
{
    struct gs_blocks *b = &r->blocks;
    memset(out, 0, sizeof *out);
    out->present = b->seen;
    out->device = device;
    out->time_ns = r->last_time_ns;
    if (!b->seen || !b->live_count || gs_blocks_index(r) != 0)
        return;
    flush(b);
    out->outside_bytes = b->live_bytes - b->sum_inside;
    if (device < 0) {
        out->segments = b->sum_segments;
        out->segment_bytes = b->sum_bytes;
        out->block_bytes = b->sum_covered;
        out->largest_free = b->max_gap;
        return;
    }
    for (size_t i = 0; i < b->nsegs; i++) {
        const struct gs_seg *s = &b->segs[i];
        if (!s->live || !s->nblocks || s->device != device)
            continue;
        out->segments++;
        out->segment_bytes += s->size;
        out->block_bytes += s->covered;
        if (s->max_gap > out->largest_free)
            out->largest_free = s->max_gap;
    }
}

/* ---- the device peak's figures, taken before the first change after it ---- */

static void take_peak(struct gs_replay *r)
{
    struct gs_blocks *b = &r->blocks;
    b->peak_pending = 0;
    gs_blocks_fragmentation(r, GS_DEVICE_UNKNOWN, &b->at_peak);
    b->at_peak.time_ns = r->peak_time_ns;
}

static void before_change(struct gs_replay *r)
{
    if (r->blocks.peak_pending)
        take_peak(r);
}

void gs_blocks_new_peak(struct gs_replay *r) { r->blocks.peak_pending = 1; }

void gs_blocks_before_add(struct gs_replay *r, const struct gs_live_alloc *a, int new_peak)
{
    if (r->blocks.peak_pending && !new_peak && segment_kind(r, a))
        before_change(r);
}

void gs_blocks_after_add(struct gs_replay *r, const struct gs_live_alloc *a)
{
    struct gs_blocks *b = &r->blocks;
    int kind = b->indexed ? segment_kind(r, a) : NOT_SEGMENT;
    if ((kind == SEGMENT && add_segment(b, a->addr, a->size, a->device, 0) != 0) ||
        (kind == MAPPED_RANGE && add_mapped(b, a) != 0))
        drop_index(b);
}

void gs_blocks_before_remove(struct gs_replay *r, const struct gs_live_alloc *a)
{
    if (r->blocks.peak_pending && segment_kind(r, a))
        before_change(r);
}

void gs_blocks_after_remove(struct gs_replay *r, const struct gs_live_alloc *a)
{
    struct gs_blocks *b = &r->blocks;
    int kind = b->indexed ? segment_kind(r, a) : NOT_SEGMENT;
    if (kind == SEGMENT)
        remove_segment(b, a->addr);
    else if (kind == MAPPED_RANGE && remove_mapped(b, a) != 0)
        drop_index(b);
}

/* Room for at_failure[idx], the new entries zeroed (not present). */
int gs_blocks_failure_room(struct gs_blocks *b, size_t idx)
{
    if (idx < b->at_failure_cap)
        return 0;
    size_t cap = b->at_failure_cap ? b->at_failure_cap * 2 : 64;
    if (cap <= idx)
        cap = idx + 1;
    struct gs_frag *p = realloc(b->at_failure, cap * sizeof *p);
    if (!p)
        return -1;
    memset(p + b->at_failure_cap, 0, (cap - b->at_failure_cap) * sizeof *p);
    b->at_failure = p;
    b->at_failure_cap = cap;
    return 0;
}

void gs_blocks_on_failure(struct gs_replay *r, size_t idx)
{
    struct gs_blocks *b = &r->blocks;
    if (gs_blocks_failure_room(b, idx) != 0)
        return;
    const struct gs_failure *f = &r->failures[idx];
    gs_blocks_fragmentation(r, f->device, &b->at_failure[idx]);
    b->at_failure[idx].time_ns = f->time_ns;
}

void gs_blocks_finish(struct gs_replay *r) { before_change(r); }

/* ---- block events ---- */

static void remove_block(struct gs_replay *r, size_t idx)
{
    struct gs_blocks *b = &r->blocks;
    struct gs_block blk = b->blocks[idx];
    gs_idmap_del(b->by_addr, blk.addr);
    b->blocks[idx].addr = b->free_slot;
    b->free_slot = idx;
    if (b->indexed) {
        gs_ordmap_del(b->block_map, blk.addr);
        dirty_at(b, blk.addr);
    }
    struct gs_site *s = &b->sites[blk.site];
    touch(b, s);
    s->live_bytes -= blk.size;
    s->live_count--;
    b->live_bytes -= blk.size;
    b->live_count--;
}

void gs_blocks_on_alloc(struct gs_replay *r, const struct gs_revent *e)
{
    struct gs_blocks *b = &r->blocks;
    uint64_t idx;
    before_change(r); /* the peak's figures, before this block and as "seen" was then */
    b->seen = 1;
    gs_blocks_index(r);
    if (gs_idmap_get(b->by_addr, e->addr, &idx) == 0) /* its free was lost with a damaged chunk */
        remove_block(r, (size_t)idx);
    struct gs_site *s = gs_blocks_site(b, e->stack_id, 1);
    if (!s)
        return;
    s->allocs++;
    s->alloc_bytes += e->size;
    gs_site_count_thread(s, gs_replay_thread_of(r, e->tid));
    b->allocs++;
    struct gs_block blk = {.addr = e->addr, .size = e->size, .time_ns = e->time_ns,
                           .site = (uint32_t)(s - b->sites), .tid = e->tid};
    if (gs_blocks_insert(b, &blk) != 0)
        return;
    if (b->indexed) {
        if (gs_idmap_get(b->by_addr, e->addr, &idx) != 0 ||
            gs_ordmap_put(b->block_map, e->addr, idx) != 0)
            drop_index(b);
        else
            dirty_at(b, e->addr);
    }
    touch(b, s);
    s->live_bytes += e->size;
    s->live_count++;
    b->live_bytes += e->size;
    b->live_count++;
    if (b->live_bytes > b->peak_bytes || !b->peak_epoch) {
        b->peak_bytes = b->live_bytes;
        b->peak_time_ns = e->time_ns;
        b->peak_epoch++;
    }
}

/* Every block that starts in [addr, addr+span) goes back: an NVTX heap
 * reset or unregistered (shim/hooks/nvtx_mem.c). */
static void free_span(struct gs_replay *r, uint64_t addr, uint64_t span)
{
    struct gs_blocks *b = &r->blocks;
    uint64_t end = addr + span < addr ? UINT64_MAX : addr + span, k, v;
    b->seen = 1;
    gs_blocks_index(r);
    if (!b->indexed)
        return; /* no memory for the index: the blocks stay */
    before_change(r);
    while (gs_ordmap_ceil(b->block_map, addr, &k, &v) == 0 && k < end) {
        remove_block(r, (size_t)v);
        b->frees++;
    }
}

void gs_blocks_on_free(struct gs_replay *r, const struct gs_revent *e)
{
    struct gs_blocks *b = &r->blocks;
    uint64_t idx;
    if (e->size) {
        free_span(r, e->addr, e->size);
        return;
    }
    if (gs_idmap_get(b->by_addr, e->addr, &idx) != 0) {
        b->seen = 1;
        b->frees_unknown++;
        return;
    }
    before_change(r);
    b->seen = 1;
    remove_block(r, (size_t)idx);
    b->frees++;
}
