/*
 * torch_snapshot.c - export --format=torch-snapshot: the run as PyTorch's
 * memory snapshot (torch.cuda.memory._snapshot(), a pickle of plain values,
 * pickle.c), which pytorch.org/memory_viz and torch.cuda._memory_viz open.
 *
 *   {"segments": [...], "device_traces": [[...], ...], "allocator_settings": {...}}
 *
 * Segments are the driver allocations of device memory at an address
 * (cuMemAlloc*, stream-ordered, the pluggable allocator's) live at the end,
 * in address order. When the program gives its own allocator's blocks
 * (gpushim_block_alloc), a segment's blocks are those live in it, and the
 * gaps between them "inactive" blocks: the blocks tile the segment. A
 * segment without blocks is one block covering it: "active_allocated" when
 * the run gives no blocks at all (the driver allocation is the tensor),
 * "inactive" when it does (the allocator holds it empty).
 *
 * device_traces holds each device's events in order: "segment_alloc" and
 * "segment_free" for driver allocations, "alloc" and "free_completed" for
 * blocks (for each driver allocation too when the run gives no blocks, so
 * that memory_viz's active memory timeline shows them), "oom" for a failed
 * allocation (size: the request, device_free: what the device had free).
 * Frames are the event's call stack, innermost first, Python frames in
 * place of the interpreter's (as the report shows them). The trace records
 * no stack for a free: a free's frames are those of the allocation it ends
 * (memory_viz draws what a free ends, up to it, with the free's frames).
 *
 * memory_viz replays a device's events backwards from the segments at the
 * end, and fails on a block that lies in no segment at some moment; so a
 * block is in the snapshot only while it lies whole inside a live segment
 * and overlaps no other such block: given elsewhere it is left out, and
 * when its segment is freed first it ends there ("free_completed" just
 * before the "segment_free"). Memory that has no address (cuMemCreate's
 * physical memory, its mappings), other kinds than device memory, and
 * events of an unknown device are left out.
 *
 * One pass (load.c's watch); memory bounded by the live set, the distinct
 * stacks and the events kept. As PyTorch's recorder (its max_entries), a
 * device keeps its last max_entries events (--max-entries, 100000 by
 * default), each pickled as it comes, in a ring: memory_viz replays them
 * backwards from the segments at the end, so what fell out of the ring is
 * simply what was there before. Whether the run gives blocks is known only
 * at its first block: until then each driver allocation also goes in as an
 * "alloc" and a "free_completed", taken out then.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "gpushim_trace.h"
#include "analyzer/util/idmap.h"
#include "analyzer/util/ordmap.h"
#include "analyzer/util/pickle.h"
#include "analyzer/util/reserve.h"
#include "analyzer/trace/trace.h"
#include "analyzer/model/model.h"
#include "analyzer/model/replay.h"
#include "analyzer/symbols/symbolize.h"
#include "analyzer/symbols/symbols.h"
#include "analyzer/report/load.h"
#include "analyzer/export/export.h"

#define MiB (1024 * 1024ull)

struct seg {
    uint64_t addr, size, stream, time_ns;
    int32_t device;
    uint32_t stack_id;
};

struct blk {
    uint64_t addr, size;
    int32_t device;
    uint32_t stack_id;
};

/* A device's last events, pickled, in a ring. */
struct entry {
    char *bytes;
    size_t len;
    int plain; /* an "alloc" or "free_completed" of a driver allocation */
    size_t failure; /* an "oom": its failure in the replay, index + 1 (0: not kept) */
};
struct dtrace {
    struct entry *ring;
    size_t cap, head, n; /* the oldest is ring[(head + cap - n) % cap] */
};

struct snap {
    enum gs_stack_view view;
    int failed;    /* out of memory: said once */
    uint64_t max_entries; /* per device; 0: all */
    FILE *scratch;        /* an event pickled, before it goes in a ring */
    char *scratch_buf;
    size_t scratch_len;
    int blocks;    /* the run gives blocks */
    size_t nfailures; /* the replay's failures before the event */
    int synced;    /* the state a checkpoint loaded is taken */
    int maxdev;    /* the largest device index with an event or a segment, or -1 */
    uint64_t start_us; /* the trace's start, wall clock */
    struct dtrace dev[GS_MAX_DEVICES];
    struct gs_ordmap *seg_map, *blk_map; /* addr -> index */
    struct seg *segs;
    size_t nsegs, segs_cap, seg_free;
    struct blk *blks;
    size_t nblks, blks_cap, blk_free;
    /* each stack's frames, pickled once */
    struct gs_idmap *frames_by_stack; /* stack id -> index in frames */
    struct {
        char *bytes;
        size_t len;
    } *frames;
    size_t nframes, frames_cap;
};

/* ---- frames ---- */

struct frame_writer {
    struct gs_pickle *pk;
};

static void frame_out(void *ctx, const struct gs_frame *f, unsigned index)
{
    struct gs_pickle *pk = ((struct frame_writer *)ctx)->pk;
    char pc[32];
    (void)index;
    snprintf(pc, sizeof pc, "0x%" PRIx64, f->pc);
    gs_pickle_dict(pk);
    gs_pickle_str(pk, "filename");
    gs_pickle_str(pk, f->file ? f->file : f->module && f->module[0] ? f->module : "??");
    gs_pickle_str(pk, "line");
    gs_pickle_int(pk, f->line);
    gs_pickle_str(pk, "name");
    gs_pickle_str(pk, f->function ? f->function : pc);
    gs_pickle_end(pk);
}

/* The stack's frames as a pickled list, made on its first use. */
static void frames(struct snap *s, struct gs_loaded *l, struct gs_pickle *pk, uint32_t stack_id)
{
    static const char empty[] = {']', '(', 'e'}; /* EMPTY_LIST MARK APPENDS */
    uint64_t idx;
    if (s->frames_by_stack && gs_idmap_get(s->frames_by_stack, stack_id, &idx) == 0) {
        gs_pickle_raw(pk, s->frames[idx].bytes, s->frames[idx].len);
        return;
    }
    char *bytes = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&bytes, &len);
    if (!mem) {
        gs_pickle_raw(pk, empty, sizeof empty);
        return;
    }
    struct gs_pickle part;
    gs_pickle_begin_part(&part, mem);
    gs_pickle_list(&part);
    struct frame_writer fw = {&part};
    gs_site_frames(&l->r, l->sym, stack_id, s->view, UINT32_MAX, frame_out, &fw);
    gs_pickle_end(&part);
    if (fclose(mem) != 0 || !bytes) {
        free(bytes);
        gs_pickle_raw(pk, empty, sizeof empty);
        return;
    }
    gs_pickle_raw(pk, bytes, len);
    if (!s->frames_by_stack ||
        gs_reserve((void **)&s->frames, &s->frames_cap, s->nframes, sizeof *s->frames) != 0 ||
        gs_idmap_put(s->frames_by_stack, stack_id, s->nframes) != 0) {
        free(bytes);
        return;
    }
    s->frames[s->nframes].bytes = bytes;
    s->frames[s->nframes++].len = len;
}

/* ---- device traces ---- */

static void no_memory(struct snap *s)
{
    if (!s->failed)
        fprintf(stderr, "gpushim export: out of memory\n");
    s->failed = 1;
}

static struct dtrace *dtrace(struct snap *s, int32_t device)
{
    if (device < 0 || device >= GS_MAX_DEVICES)
        return NULL;
    if (device > s->maxdev)
        s->maxdev = device;
    return &s->dev[device];
}

/* Puts an event's bytes in the device's ring, the oldest out when full. */
static void ring_put(struct snap *s, struct dtrace *t, char *bytes, size_t len, int plain,
                     size_t failure)
{
    if (t->n == t->cap && (!s->max_entries || t->cap < s->max_entries)) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        if (s->max_entries && cap > s->max_entries)
            cap = (size_t)s->max_entries;
        struct entry *ring = malloc(cap * sizeof *ring);
        if (!ring) {
            free(bytes);
            no_memory(s);
            return;
        }
        for (size_t i = 0; i < t->n; i++) /* oldest first, from 0 */
            ring[i] = t->ring[(t->head + t->cap - t->n + i) % t->cap];
        free(t->ring);
        t->ring = ring;
        t->cap = cap;
        t->head = t->n;
    }
    struct entry *e = &t->ring[t->head];
    if (t->n == t->cap) { /* full at max_entries: the oldest goes */
        free(e->bytes);
    } else {
        t->n++;
    }
    *e = (struct entry){.bytes = bytes, .len = len, .plain = plain, .failure = failure};
    t->head = (t->head + 1) % t->cap;
}

/* The run gives blocks: driver allocations are segments only from now on,
 * and the "alloc" and "free_completed" they were written with so far go. */
static void blocks_given(struct snap *s)
{
    if (s->blocks)
        return;
    s->blocks = 1;
    for (int d = 0; d < GS_MAX_DEVICES; d++) {
        struct dtrace *t = &s->dev[d];
        if (!t->n)
            continue;
        struct entry *ring = malloc(t->cap * sizeof *ring);
        if (!ring) {
            no_memory(s);
            return;
        }
        size_t kept = 0;
        for (size_t i = 0; i < t->n; i++) { /* oldest first */
            struct entry e = t->ring[(t->head + t->cap - t->n + i) % t->cap];
            if (e.plain)
                free(e.bytes);
            else
                ring[kept++] = e;
        }
        free(t->ring);
        t->ring = ring;
        t->n = kept;
        t->head = kept % t->cap;
    }
}

struct event {
    const char *action;
    uint64_t addr, size, stream, time_ns;
    uint32_t stack_id;
    int oom;
    uint64_t device_free;
    size_t failure; /* oom: its failure in the replay, index + 1 (0: not kept) */
};

static void write_event(struct snap *s, struct gs_loaded *l, struct gs_pickle *pk,
                        const struct event *ev)
{
    gs_pickle_dict(pk);
    gs_pickle_str(pk, "action");
    gs_pickle_str(pk, ev->action);
    gs_pickle_str(pk, "addr");
    gs_pickle_uint(pk, ev->addr);
    gs_pickle_str(pk, "size");
    gs_pickle_uint(pk, ev->size);
    gs_pickle_str(pk, "stream");
    gs_pickle_uint(pk, ev->stream);
    gs_pickle_str(pk, "time_us");
    gs_pickle_uint(pk, s->start_us + ev->time_ns / 1000);
    if (ev->oom) {
        gs_pickle_str(pk, "device_free");
        gs_pickle_uint(pk, ev->device_free);
    }
    gs_pickle_str(pk, "frames");
    frames(s, l, pk, ev->stack_id);
    gs_pickle_end(pk);
}

/* Puts ev in the device's events; plain: an "alloc" or "free_completed"
 * of a driver allocation, there only while the run gives no blocks. */
static void emit(struct snap *s, struct gs_loaded *l, int32_t device, const struct event *ev,
                 int plain)
{
    struct dtrace *t = dtrace(s, device);
    if (!t || (plain && s->blocks) || s->failed)
        return;
    struct gs_pickle pk;
    gs_pickle_begin_part(&pk, s->scratch);
    write_event(s, l, &pk, ev);
    off_t len = ftello(s->scratch);
    char *bytes = len > 0 && fflush(s->scratch) == 0 ? malloc((size_t)len) : NULL;
    if (!bytes) {
        no_memory(s);
        return;
    }
    memcpy(bytes, s->scratch_buf, (size_t)len);
    fseeko(s->scratch, 0, SEEK_SET);
    ring_put(s, t, bytes, (size_t)len, plain, ev->failure);
}

/* ---- segments and blocks, as the snapshot has them ---- */

static int is_segment(const struct gs_live_alloc *a)
{
    return a && a->kind == GS_KIND_DEVICE && a->space == GS_SPACE_ADDRESS;
}

static struct seg *seg_at(struct snap *s, uint64_t addr)
{
    uint64_t k, idx;
    if (gs_ordmap_floor(s->seg_map, addr, &k, &idx) != 0 || k != addr)
        return NULL;
    return &s->segs[idx];
}

/* The live segment that holds [addr, addr + size) whole, or NULL. */
static struct seg *seg_holding(struct snap *s, uint64_t addr, uint64_t size)
{
    uint64_t k, idx;
    if (gs_ordmap_floor(s->seg_map, addr, &k, &idx) != 0)
        return NULL;
    struct seg *g = &s->segs[idx];
    uint64_t off = addr - g->addr;
    return off < g->size && size <= g->size - off ? g : NULL;
}

static int add_seg(struct snap *s, const struct seg *g)
{
    size_t idx;
    if (!g->size || g->size > UINT64_MAX - g->addr)
        return -1; /* nothing, or past the end of the addresses: no tiling holds it */
    if (s->seg_free != SIZE_MAX) {
        idx = s->seg_free;
    } else {
        if (gs_reserve((void **)&s->segs, &s->segs_cap, s->nsegs, sizeof *s->segs) != 0)
            return -1;
        idx = s->nsegs;
    }
    if (gs_ordmap_put(s->seg_map, g->addr, idx) != 0)
        return -1;
    if (idx == s->nsegs)
        s->nsegs++;
    else
        s->seg_free = (size_t)s->segs[idx].addr; /* the free list is threaded through addr */
    s->segs[idx] = *g;
    return 0;
}

static void del_seg(struct snap *s, uint64_t addr)
{
    uint64_t k, idx;
    if (gs_ordmap_floor(s->seg_map, addr, &k, &idx) != 0 || k != addr)
        return;
    gs_ordmap_del(s->seg_map, addr);
    s->segs[idx].addr = s->seg_free;
    s->seg_free = (size_t)idx;
}

/* Whether [addr, addr + size) overlaps a block in the snapshot. */
static int blk_overlaps(struct snap *s, uint64_t addr, uint64_t size)
{
    uint64_t k, idx;
    if (gs_ordmap_floor(s->blk_map, addr, &k, &idx) == 0 && addr - k < s->blks[idx].size)
        return 1;
    return gs_ordmap_ceil(s->blk_map, addr, &k, &idx) == 0 && k - addr < size;
}

static int add_blk(struct snap *s, const struct blk *b)
{
    size_t idx;
    if (s->blk_free != SIZE_MAX) {
        idx = s->blk_free;
    } else {
        if (gs_reserve((void **)&s->blks, &s->blks_cap, s->nblks, sizeof *s->blks) != 0)
            return -1;
        idx = s->nblks;
    }
    if (gs_ordmap_put(s->blk_map, b->addr, idx) != 0)
        return -1;
    if (idx == s->nblks)
        s->nblks++;
    else
        s->blk_free = (size_t)s->blks[idx].addr;
    s->blks[idx] = *b;
    return 0;
}

/* Ends the block at addr in the snapshot: 0, or -1 when there is none. */
static int end_blk(struct snap *s, struct gs_loaded *l, uint64_t addr, uint64_t now)
{
    uint64_t k, idx;
    if (gs_ordmap_floor(s->blk_map, addr, &k, &idx) != 0 || k != addr)
        return -1;
    struct blk b = s->blks[idx];
    struct seg *g = seg_holding(s, b.addr, b.size);
    struct event ev = {.action = "free_completed", .addr = b.addr, .size = b.size,
                       .stream = g ? g->stream : 0, .time_ns = now, .stack_id = b.stack_id};
    emit(s, l, b.device, &ev, 0);
    gs_ordmap_del(s->blk_map, addr);
    s->blks[idx].addr = s->blk_free;
    s->blk_free = (size_t)idx;
    return 0;
}

static void segment_freed(struct snap *s, struct gs_loaded *l, struct seg g, uint64_t now)
{
    uint64_t k, idx;
    /* its blocks end first: memory_viz has no block outside a segment */
    while (gs_ordmap_ceil(s->blk_map, g.addr, &k, &idx) == 0 && k - g.addr < g.size)
        end_blk(s, l, k, now);
    struct event ev = {.action = "free_completed", .addr = g.addr, .size = g.size,
                       .stream = g.stream, .time_ns = now, .stack_id = g.stack_id};
    emit(s, l, g.device, &ev, 1);
    ev.action = "segment_free";
    emit(s, l, g.device, &ev, 0);
    del_seg(s, g.addr);
}

static void segment_made(struct snap *s, struct gs_loaded *l, const struct gs_live_alloc *a,
                         uint64_t stream, uint64_t now)
{
    struct gs_site *site = &l->r.sites[a->site];
    struct seg g = {.addr = a->addr, .size = a->size, .stream = stream, .time_ns = a->time_ns,
                    .device = a->device, .stack_id = site->stack_id};
    if (add_seg(s, &g) != 0)
        return;
    struct event ev = {.action = "segment_alloc", .addr = g.addr, .size = g.size,
                       .stream = stream, .time_ns = now, .stack_id = g.stack_id};
    emit(s, l, g.device, &ev, 0);
    ev.action = "alloc";
    emit(s, l, g.device, &ev, 1);
}

/* A block the replay holds: in the snapshot if it lies whole in a segment
 * and overlaps no other. Silent: the state a checkpoint loaded. */
static void block_made(struct snap *s, struct gs_loaded *l, uint64_t addr, uint64_t size,
                       uint32_t stack_id, uint64_t now, int silent)
{
    struct seg *g = size ? seg_holding(s, addr, size) : NULL;
    if (!g || blk_overlaps(s, addr, size))
        return;
    struct blk b = {.addr = addr, .size = size, .device = g->device, .stack_id = stack_id};
    if (add_blk(s, &b) != 0 || silent)
        return;
    struct event ev = {.action = "alloc", .addr = addr, .size = size, .stream = g->stream,
                       .time_ns = now, .stack_id = stack_id};
    emit(s, l, g->device, &ev, 0);
}

/* A rotated trace starts with the state its checkpoint loaded: its
 * segments and blocks are there from the start, with no event. */
static void sync(struct snap *s, struct gs_loaded *l)
{
    struct gs_replay *r = &l->r;
    s->synced = 1;
    if (!r->checkpoint.present)
        return;
    for (size_t i = 0; i < r->nallocs; i++) {
        const struct gs_live_alloc *a = &r->allocs[i];
        if (!is_segment(a) || !gs_replay_slot_live(r, i) || seg_at(s, a->addr))
            continue;
        struct seg g = {.addr = a->addr, .size = a->size, .time_ns = a->time_ns,
                        .device = a->device, .stack_id = r->sites[a->site].stack_id};
        add_seg(s, &g);
        if (a->device >= 0 && a->device < GS_MAX_DEVICES && a->device > s->maxdev)
            s->maxdev = a->device;
    }
    if (r->blocks.seen || r->blocks.live_count)
        blocks_given(s);
    for (size_t i = 0; i < r->blocks.nblocks; i++)
        if (gs_blocks_slot_live(&r->blocks, i)) {
            const struct gs_block *b = &r->blocks.blocks[i];
            block_made(s, l, b->addr, b->size, r->blocks.sites[b->site].stack_id, 0, 1);
        }
}

static void before(void *ctx, struct gs_loaded *l, const struct gs_revent *e)
{
    struct snap *s = ctx;
    (void)e;
    if (!s->synced) {
        s->start_us = l->info.header.realtime_ns / 1000;
        sync(s, l);
    }
    s->nfailures = l->r.nfailures;
}

static void after(void *ctx, struct gs_loaded *l, const struct gs_revent *e)
{
    struct snap *s = ctx;
    struct gs_replay *r = &l->r;
    uint64_t now = r->last_time_ns;
    switch (e->type) {
    case GS_REC_ALLOC:
    case GS_REC_FREE:
    case GS_REC_FREE_FAILED: {
        if (e->space != GS_SPACE_ADDRESS)
            break;
        const struct gs_live_alloc *a = gs_replay_find_live(r, GS_SPACE_ADDRESS, e->addr);
        struct seg *g = seg_at(s, e->addr);
        int live = is_segment(a);
        int same = g && live && a->size == g->size && a->time_ns == g->time_ns &&
                   a->device == g->device;
        if (g && !same)
            segment_freed(s, l, *g, now);
        if (live && !same)
            segment_made(s, l, a, e->type == GS_REC_ALLOC ? e->stream : 0, now);
        break;
    }
    case GS_REC_ALLOC_FAILED: {
        struct event ev = {.action = "oom", .size = e->size, .stream = e->stream,
                           .time_ns = now, .stack_id = e->stack_id, .oom = 1,
                           .device_free = e->free_bytes,
                           .failure = r->nfailures > s->nfailures ? r->nfailures : 0};
        emit(s, l, e->device, &ev, 0);
        break;
    }
    case GS_REC_BLOCK_ALLOC: {
        uint64_t idx;
        blocks_given(s);
        end_blk(s, l, e->addr, now); /* its free was lost with a damaged chunk */
        if (gs_idmap_get(r->blocks.by_addr, e->addr, &idx) == 0)
            block_made(s, l, e->addr, e->size, e->stack_id, now, 0);
        break;
    }
    case GS_REC_BLOCK_FREE:
        blocks_given(s);
        end_blk(s, l, e->addr, now);
        break;
    default:
        break;
    }
}

/* ---- the pickle ---- */

static void write_segment(struct snap *s, struct gs_loaded *l, struct gs_pickle *pk,
                          const struct seg *g)
{
    uint64_t k, idx, active = 0, at = g->addr, end = g->addr + g->size;
    for (uint64_t from = g->addr;
         gs_ordmap_ceil(s->blk_map, from, &k, &idx) == 0 && k - g->addr < g->size; from = k + 1)
        if (k >= at && s->blks[idx].size <= end - k) {
            active += s->blks[idx].size;
            at = k + s->blks[idx].size;
        }
    int whole = !s->blocks; /* a run without blocks: the allocation is the tensor */
    if (whole)
        active = g->size;
    gs_pickle_dict(pk);
    gs_pickle_str(pk, "device");
    gs_pickle_int(pk, g->device);
    gs_pickle_str(pk, "address");
    gs_pickle_uint(pk, g->addr);
    gs_pickle_str(pk, "total_size");
    gs_pickle_uint(pk, g->size);
    gs_pickle_str(pk, "allocated_size");
    gs_pickle_uint(pk, active);
    gs_pickle_str(pk, "active_size");
    gs_pickle_uint(pk, active);
    gs_pickle_str(pk, "requested_size");
    gs_pickle_uint(pk, active);
    gs_pickle_str(pk, "stream");
    gs_pickle_uint(pk, g->stream);
    /* PyTorch's small pool takes segments of kSmallBuffer (2 MiB), its large
     * pool of 10 MiB or more (c10/cuda/CUDACachingAllocator.cpp,
     * get_allocation_size) */
    gs_pickle_str(pk, "segment_type");
    gs_pickle_str(pk, g->size <= 2 * MiB ? "small" : "large");
    gs_pickle_str(pk, "segment_pool_id");
    gs_pickle_list(pk);
    gs_pickle_int(pk, 0);
    gs_pickle_int(pk, 0);
    gs_pickle_end(pk);
    gs_pickle_str(pk, "is_expandable");
    gs_pickle_bool(pk, 0);
    gs_pickle_str(pk, "frames");
    frames(s, l, pk, g->stack_id);
    gs_pickle_str(pk, "blocks");
    gs_pickle_list(pk);
    at = g->addr;
    for (uint64_t from = g->addr;; from = k + 1) {
        int found = !whole && gs_ordmap_ceil(s->blk_map, from, &k, &idx) == 0 &&
                    k - g->addr < g->size;
        if (found && (k < at || s->blks[idx].size > end - k))
            continue; /* does not fit where the tiling stands: left out */
        uint64_t gap_end = found ? k : end;
        if (gap_end > at) { /* a gap, or the whole segment */
            gs_pickle_dict(pk);
            gs_pickle_str(pk, "address");
            gs_pickle_uint(pk, at);
            gs_pickle_str(pk, "size");
            gs_pickle_uint(pk, gap_end - at);
            gs_pickle_str(pk, "requested_size");
            gs_pickle_uint(pk, whole ? g->size : 0);
            gs_pickle_str(pk, "state");
            gs_pickle_str(pk, whole ? "active_allocated" : "inactive");
            gs_pickle_str(pk, "frames");
            frames(s, l, pk, whole ? g->stack_id : 0);
            gs_pickle_end(pk);
            at = gap_end;
        }
        if (!found)
            break;
        const struct blk *b = &s->blks[idx];
        gs_pickle_dict(pk);
        gs_pickle_str(pk, "address");
        gs_pickle_uint(pk, b->addr);
        gs_pickle_str(pk, "size");
        gs_pickle_uint(pk, b->size);
        gs_pickle_str(pk, "requested_size");
        gs_pickle_uint(pk, b->size);
        gs_pickle_str(pk, "state");
        gs_pickle_str(pk, "active_allocated");
        gs_pickle_str(pk, "frames");
        frames(s, l, pk, b->stack_id);
        gs_pickle_end(pk);
        at = b->addr + b->size;
    }
    gs_pickle_end(pk);
    gs_pickle_end(pk);
}

/* A device's events, oldest first; an "oom" only for a failure nothing
 * recovered from, as PyTorch records one only when it raises
 * OutOfMemoryError (its retries, probes and refused requests are not its
 * OOMs; a failure past the replay's GS_MAX_FAILURES, not kept, stays). */
static void write_trace(struct gs_pickle *pk, const struct gs_replay *r, const struct dtrace *t)
{
    gs_pickle_list(pk);
    for (size_t i = 0; i < t->n; i++) {
        const struct entry *e = &t->ring[(t->head + t->cap - t->n + i) % t->cap];
        if (e->failure && e->failure <= r->nfailures &&
            r->failures[e->failure - 1].outcome != GS_OUTCOME_UNRECOVERED)
            continue;
        gs_pickle_raw(pk, e->bytes, e->len);
    }
    gs_pickle_end(pk);
}

static void write_snapshot(struct snap *s, struct gs_loaded *l, FILE *out)
{
    struct gs_pickle pk;
    gs_pickle_begin(&pk, out);
    gs_pickle_dict(&pk);
    gs_pickle_str(&pk, "segments");
    gs_pickle_list(&pk);
    uint64_t k, idx;
    for (uint64_t from = 0; gs_ordmap_ceil(s->seg_map, from, &k, &idx) == 0; from = k + 1) {
        const struct seg *g = &s->segs[idx];
        if (g->device >= 0 && g->device < GS_MAX_DEVICES)
            write_segment(s, l, &pk, g);
        if (k == UINT64_MAX)
            break;
    }
    gs_pickle_end(&pk);
    gs_pickle_str(&pk, "device_traces");
    gs_pickle_list(&pk);
    for (int d = 0; d <= s->maxdev; d++)
        write_trace(&pk, &l->r, &s->dev[d]);
    gs_pickle_end(&pk);
    gs_pickle_str(&pk, "allocator_settings");
    gs_pickle_dict(&pk);
    for (unsigned i = 0; i < l->info.header.nsettings && i < GS_HEADER_SETTINGS; i++) {
        gs_pickle_str(&pk, l->info.header.settings[i].name);
        gs_pickle_str(&pk, l->info.header.settings[i].value);
    }
    gs_pickle_end(&pk);
    gs_pickle_finish(&pk);
}

int gs_export_torch_snapshot(FILE *out, const char *path, enum gs_stack_view view,
                             uint64_t max_entries)
{
    struct snap *s = calloc(1, sizeof *s);
    int rc = -1;
    if (!s || !(s->seg_map = gs_ordmap_new()) || !(s->blk_map = gs_ordmap_new()) ||
        !(s->frames_by_stack = gs_idmap_new()) ||
        !(s->scratch = open_memstream(&s->scratch_buf, &s->scratch_len))) {
        fprintf(stderr, "gpushim export: out of memory\n");
        goto done;
    }
    s->view = view;
    s->max_entries = max_entries;
    s->maxdev = -1;
    s->seg_free = s->blk_free = SIZE_MAX;
    struct gs_event_watch w = {.ctx = s, .before = before, .after = after};
    struct gs_loaded l;
    if (gs_load_watch("export", path, &l, &w) != 0)
        goto done;
    if (!s->synced) { /* no event: what a checkpoint loaded, if any */
        s->start_us = l.info.header.realtime_ns / 1000;
        sync(s, &l);
    }
    if (!s->failed)
        write_snapshot(s, &l, out);
    gs_loaded_free(&l);
    rc = s->failed ? -1 : 0;
done:
    if (s) {
        for (int d = 0; d < GS_MAX_DEVICES; d++) {
            struct dtrace *t = &s->dev[d];
            for (size_t i = 0; i < t->n; i++)
                free(t->ring[(t->head + t->cap - t->n + i) % t->cap].bytes);
            free(t->ring);
        }
        if (s->scratch)
            fclose(s->scratch);
        free(s->scratch_buf);
        for (size_t i = 0; i < s->nframes; i++)
            free(s->frames[i].bytes);
        free(s->frames);
        free(s->segs);
        free(s->blks);
        gs_ordmap_free(s->seg_map);
        gs_ordmap_free(s->blk_map);
        gs_idmap_free(s->frames_by_stack);
        free(s);
    }
    return rc;
}
