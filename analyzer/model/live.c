/*
 * live.c - the replay model's live set and its figures: one site per
 * (stack, kind of memory) with its totals, per-device and per-kind usage,
 * the peak, pools, and an allocation, a free, a refused free, a reference
 * or a pool's sample applied to them. Each change of the live set is
 * handed to blocks.c (segments, fragmentation), marks.c (steps) and
 * timeline.c (memory over time); a device allocation to the analyses
 * attached (gs_replay_attach). Built on state.c; outcome.c, graphs.c and
 * the dispatch (replay.c) call it.
 *
 * "What was live at the peak" is kept without copying the live set at every
 * new maximum: each new peak starts an epoch, and a site saves its figures
 * the first time it changes after the epoch began. At the end, a site that
 * saved in the last peak's epoch held its saved figures at the peak; any
 * other site has not changed since and holds its current ones.
 *
 * Sizes are the sizes the program asked for. Peak and leaks are about
 * device memory (GS_KIND_DEVICE); other kinds are totalled apart.
 */
#include <stdlib.h>
#include <string.h>

#include "analyzer/model/model_int.h"

#define RECENT_FREES GS_RECENT_FREES

struct gs_site *gs_replay_site(struct gs_replay *r, uint32_t stack_id, uint32_t kind, int make)
{
    /* most lookups: a site looked up lately, in the cache in front of the
     * map, placed by the stack id's low bits (ids are counted up) */
    uint64_t key = (uint64_t)stack_id << 8 | kind, idx;
    typeof(r->site_cache[0]) *c = &r->site_cache[(stack_id ^ kind << 4) % GS_SITE_CACHE];
    if (c->key_1 == key + 1)
        return &r->sites[c->idx];
    if (gs_idmap_get(r->sites_by_key, key, &idx) != 0) {
        if (!make ||
            gs_reserve((void **)&r->sites, &r->sites_cap, r->nsites, sizeof *r->sites) != 0 ||
            gs_idmap_put(r->sites_by_key, key, r->nsites) != 0)
            return NULL;
        idx = r->nsites++;
        struct gs_site *s = &r->sites[idx];
        memset(s, 0, sizeof *s);
        s->stack_id = stack_id;
        s->kind = kind;
    }
    c->key_1 = key + 1;
    c->idx = (size_t)idx;
    return &r->sites[idx];
}

/* Saves the site's figures if this is its first change since the last peak. */
static void touch(const struct gs_replay *r, struct gs_site *s)
{
    if (s->saved_epoch != r->peak_epoch) {
        s->saved_bytes = s->live_bytes;
        s->saved_count = s->live_count;
        s->saved_epoch = r->peak_epoch;
    }
}

uint64_t gs_site_peak_bytes(const struct gs_replay *r, const struct gs_site *s, uint64_t *count)
{
    if (!r->peak_epoch || s->kind != GS_KIND_DEVICE) {
        *count = 0;
        return 0;
    }
    if (s->saved_epoch == r->peak_epoch) {
        *count = s->saved_count;
        return s->saved_bytes;
    }
    *count = s->live_count;
    return s->live_bytes;
}

uint64_t gs_replay_leaks(const struct gs_replay *r, uint64_t *count)
{
    uint64_t bytes = 0;
    *count = 0;
    for (size_t i = 0; i < r->nsites; i++)
        if (r->sites[i].kind == GS_KIND_DEVICE) {
            bytes += r->sites[i].live_bytes;
            *count += r->sites[i].live_count;
        }
    return bytes;
}

static struct gs_device_usage *device_usage(struct gs_replay *r, int32_t device)
{
    return &r->devices[device >= 0 && device < GS_MAX_DEVICES ? device : GS_MAX_DEVICES];
}

/* ---- the live set ---- */

/* how: GS_DEVICE_NEW, or GS_DEVICE_BACK for one a refused free gives back. */
static void add_live(struct gs_replay *r, struct gs_live_alloc *a, uint64_t now, int how)
{
    struct gs_site *s = &r->sites[a->site];
    gs_blocks_before_add(r, a,
                         a->kind == GS_KIND_DEVICE && r->live_bytes + a->size > r->peak_bytes);
    touch(r, s);
    s->live_bytes += a->size;
    s->live_count++;
    struct gs_device_usage *d = device_usage(r, a->device);
    struct gs_kind_usage *k = &r->kinds[a->kind];
    k->live_bytes += a->size;
    if (k->live_bytes > k->peak_bytes)
        k->peak_bytes = k->live_bytes;
    if (a->kind != GS_KIND_DEVICE) {
        gs_blocks_after_add(r, a); /* a mapped range of device memory is a segment */
        return;
    }
    d->present = 1;
    d->live_bytes += a->size;
    r->rounding_live += gs_rounding_waste(a->size);
    if (d->live_bytes > d->peak_bytes) {
        d->peak_bytes = d->live_bytes;
        d->peak_time_ns = now;
    }
    r->live_bytes += a->size;
    if (r->live_bytes > r->peak_bytes) {
        r->peak_bytes = r->live_bytes;
        r->peak_time_ns = now;
        r->peak_epoch++;
        r->peak_pool_reserved = r->pool_reserved;
        r->peak_pool_used = r->pool_used;
        r->rounding_at_peak = r->rounding_live;
        gs_blocks_new_peak(r);
    }
    gs_timelines_note(r, (unsigned)(d - r->devices), now, d->live_bytes);
    gs_marks_device_added(r, a->size);
    gs_blocks_after_add(r, a);
    GS_REPLAY_HOOKS_CALL(r, on_device, a, (size_t)(a - r->allocs), how);
}

/* a: the allocation that was at allocs[idx] (a copy: the slot is free). */
static void remove_live(struct gs_replay *r, struct gs_live_alloc *a, size_t idx)
{
    struct gs_site *s = &r->sites[a->site];
    gs_blocks_before_remove(r, a);
    touch(r, s);
    s->live_bytes -= a->size;
    s->live_count--;
    r->kinds[a->kind].live_bytes -= a->size;
    if (a->kind != GS_KIND_DEVICE) {
        gs_blocks_after_remove(r, a);
        return;
    }
    struct gs_device_usage *d = device_usage(r, a->device);
    d->live_bytes -= a->size;
    r->live_bytes -= a->size;
    uint64_t waste = gs_rounding_waste(a->size);
    r->rounding_live -= waste < r->rounding_live ? waste : r->rounding_live;
    gs_timelines_note(r, (unsigned)(d - r->devices), r->last_time_ns, d->live_bytes);
    gs_marks_device_removed(r, a->size);
    gs_blocks_after_remove(r, a);
    GS_REPLAY_HOOKS_CALL(r, on_device, a, idx, GS_DEVICE_GONE);
}

/* As gs_replay_insert, at slot: where the live set's map keeps a->addr's
 * index (gs_idmap_add's, the map unchanged since). The record as stored, or
 * NULL, the key taken out again. */
static struct gs_live_alloc *insert_at(struct gs_replay *r, const struct gs_live_alloc *a,
                                       uint64_t *slot)
{
    size_t idx = r->free_slot;
    if (idx == SIZE_MAX) {
        if (gs_reserve((void **)&r->allocs, &r->allocs_cap, r->nallocs, sizeof *r->allocs) != 0) {
            gs_idmap_remove_found(r->live[a->space], slot);
            return NULL;
        }
        idx = r->nallocs++;
    } else {
        r->free_slot = (size_t)r->allocs[idx].addr; /* the free list is threaded through addr */
    }
    *slot = idx;
    r->allocs[idx] = *a;
    return &r->allocs[idx];
}

/* As gs_replay_insert; the record as stored, or NULL. */
static struct gs_live_alloc *insert(struct gs_replay *r, const struct gs_live_alloc *a)
{
    int added;
    uint64_t *slot = gs_idmap_add(r->live[a->space], a->addr, &added);
    return slot ? insert_at(r, a, slot) : NULL;
}

int gs_replay_insert(struct gs_replay *r, const struct gs_live_alloc *a)
{
    return insert(r, a) ? 0 : -1;
}

/* Takes the allocation whose index gs_idmap_find found in space's map out
 * of the live set, its record gone with it. */
static void unlink_found(struct gs_replay *r, uint32_t space, uint64_t *found)
{
    size_t idx = (size_t)*found;
    gs_idmap_remove_found(r->live[space], found);
    r->allocs[idx].addr = r->free_slot;
    r->free_slot = idx;
}

/* As unlink_found, the record copied into *out first. */
static size_t take_found(struct gs_replay *r, uint32_t space, uint64_t *found,
                         struct gs_live_alloc *out)
{
    size_t idx = (size_t)*found;
    *out = r->allocs[idx];
    unlink_found(r, space, found);
    return idx;
}

/* Takes the allocation at addr out of the live set into *out, its slot
 * into *idx; -1 if none. */
static int take(struct gs_replay *r, uint32_t space, uint64_t addr, struct gs_live_alloc *out,
                size_t *idx)
{
    uint64_t *found = gs_idmap_find(r->live[space], addr);
    if (!found)
        return -1;
    *idx = take_found(r, space, found, out);
    return 0;
}

void gs_replay_apply_alloc(struct gs_replay *r, const struct gs_revent *e)
{
    if (e->kind >= GS_KIND_COUNT || e->space >= GS_SPACE_COUNT)
        return; /* from a newer writer: not counted here */
    /* one probe of the live set for the look and the insert: slot keeps
     * e->addr's place until the allocation is stored (nothing below changes
     * this map before; hooks do not change the live set) */
    int added;
    uint64_t *slot = gs_idmap_add(r->live[e->space], e->addr, &added);
    if (slot && !added) { /* its free was lost with a damaged chunk */
        struct gs_live_alloc old;
        size_t idx = take_found(r, e->space, slot, &old);
        remove_live(r, &old, idx);
        slot = NULL;
    }
    struct gs_site *s = gs_replay_site(r, e->stack_id, e->kind, 1);
    if (!s) {
        if (slot)
            gs_idmap_remove_found(r->live[e->space], slot);
        return;
    }
    if (!s->allocs)
        s->api = e->api;
    s->allocs++;
    s->alloc_bytes += e->size;
    gs_site_count_thread(s, gs_replay_thread_of_event(r, e->tid));
    r->allocations++;
    r->kinds[e->kind].allocs++;
    struct gs_live_alloc a = {.addr = e->addr,
                              .size = e->size,
                              .time_ns = e->time_ns,
                              .site = (uint32_t)(s - r->sites),
                              .device = e->device,
                              .kind = e->kind,
                              .space = e->space,
                              .tid = e->tid,
                              .refs = 1,
                              .seq = r->allocations};
    if (e->space == GS_SPACE_MAPPING && e->parent) {
        struct gs_live_alloc *mem = gs_live_find(r, GS_SPACE_HANDLE, e->parent);
        if (mem) { /* mapped memory lives while mapped, even once released */
            mem->refs++;
            a.parent = e->parent;
        }
    }
    if (e->kind == GS_KIND_DEVICE) {
        device_usage(r, e->device)->allocs++;
        GS_REPLAY_HOOKS_CALL(r, on_alloc, a.site, e->time_ns);
    }
    struct gs_live_alloc *stored = slot ? insert_at(r, &a, slot) : insert(r, &a);
    if (stored)
        add_live(r, stored, e->time_ns, GS_DEVICE_NEW);
}

/* The ring's record of a FREE, which FREE_FAILED may undo. */
static struct gs_recent_free *remember_free(struct gs_replay *r, const struct gs_live_alloc *a,
                                            uint32_t tid, int removed)
{
    struct gs_recent_free *slot = &r->recent[r->recent_next++ % RECENT_FREES];
    slot->a = *a;
    slot->tid = tid;
    slot->valid = 1;
    slot->removed = removed;
    slot->nothing = 0;
    return slot;
}

/* Drops one reference of the allocation at (space, addr); it ends with its
 * last, and a mapping that ends drops its reference to its memory. Returns
 * -1 if nothing is live there. */
static int drop(struct gs_replay *r, uint32_t space, uint64_t addr, uint32_t tid)
{
    uint64_t *found = gs_idmap_find(r->live[space], addr); /* one probe for the look and the take */
    if (!found)
        return -1;
    struct gs_live_alloc *live = &r->allocs[*found];
    if (live->refs > 1) {
        live->refs--;
        remember_free(r, live, tid, 0);
        return 0;
    }
    /* the ring's copy is the one the rest reads: one copy, not two */
    struct gs_live_alloc *a = &remember_free(r, live, tid, 1)->a;
    size_t idx = (size_t)*found;
    unlink_found(r, space, found);
    remove_live(r, a, idx);
    r->frees++;
    uint64_t parent = a->parent;
    if (parent)
        drop(r, GS_SPACE_HANDLE, parent, tid);
    return 0;
}

static int by_addr(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* Ends every mapping in [addr, addr+size): one unmap may cover several.
 * They end in address order, not in the order of their slots, so that the
 * frees a FREE_FAILED may undo come in an order the events alone decide (a
 * replay loaded from a checkpoint numbers its slots anew). */
static int unmap_range(struct gs_replay *r, uint64_t addr, uint64_t size, uint32_t tid)
{
    uint64_t *found = NULL;
    size_t n = 0, cap = 0, ended = 0;
    for (size_t i = 0; i < r->nallocs; i++) {
        struct gs_live_alloc *a = &r->allocs[i];
        if (a->space != GS_SPACE_MAPPING || a->addr < addr || a->addr - addr >= size ||
            !gs_replay_slot_live(r, i))
            continue; /* another space, outside, or a free slot */
        if (gs_reserve((void **)&found, &cap, n, sizeof *found) == 0) {
            found[n++] = a->addr;
        } else {
            drop(r, GS_SPACE_MAPPING, a->addr, tid); /* no memory to order it */
            ended++;
        }
    }
    if (n > 1)
        qsort(found, n, sizeof *found, by_addr);
    for (size_t k = 0; k < n; k++)
        drop(r, GS_SPACE_MAPPING, found[k], tid);
    free(found);
    return ended + n ? 0 : -1;
}

/* A FREE: the allocation (or the mappings of a range) it ends; what graph
 * pools and the chains of retries make of it is graphs.c's
 * (gs_graphs_on_free), which calls this. */
void gs_replay_apply_free(struct gs_replay *r, const struct gs_revent *e)
{
    int found = -1;
    if (e->space == GS_SPACE_MAPPING && e->size)
        found = unmap_range(r, e->addr, e->size, e->tid);
    else if (e->space < GS_SPACE_COUNT)
        found = drop(r, e->space, e->addr, e->tid);
    if (found != 0) {
        r->frees_unknown++;
        struct gs_live_alloc none = {.addr = e->addr, .space = e->space};
        remember_free(r, &none, e->tid, 0);
        r->recent[(r->recent_next - 1) % RECENT_FREES].nothing = 1;
    }
}

void gs_replay_apply_free_failed(struct gs_replay *r, const struct gs_revent *e)
{
    for (size_t i = 0; i < RECENT_FREES; i++) {
        struct gs_recent_free *f = &r->recent[(r->recent_next - 1 - i) % RECENT_FREES];
        if (!f->valid || f->a.addr != e->addr || f->a.space != e->space || f->tid != e->tid)
            continue;
        f->valid = 0;
        if (f->nothing)
            return; /* the refused free of an address that was not live */
        if (!f->removed) {
            struct gs_live_alloc *live = gs_live_find(r, f->a.space, f->a.addr);
            if (live)
                live->refs++;
            return;
        }
        struct gs_live_alloc a = f->a;
        a.refs = 1;
        struct gs_live_alloc *stored = insert(r, &a);
        if (stored)
            add_live(r, stored, e->time_ns, GS_DEVICE_BACK);
        struct gs_live_alloc *mem = a.parent ? gs_live_find(r, GS_SPACE_HANDLE, a.parent) : NULL;
        if (mem)
            mem->refs++; /* the restored mapping holds its memory again */
        r->frees--;
        r->frees_undone++;
        return;
    }
}

void gs_replay_apply_ref(struct gs_replay *r, const struct gs_revent *e)
{
    struct gs_live_alloc *live = e->space < GS_SPACE_COUNT ? gs_live_find(r, e->space, e->addr) : NULL;
    if (live) {
        live->refs++;
        r->refs++;
    }
}

struct gs_pool_usage *gs_replay_pool(struct gs_replay *r, uint64_t pool, int32_t device, int make)
{
    uint64_t idx;
    if (gs_idmap_get(r->pools_by_id, pool, &idx) == 0)
        return &r->pools[idx];
    if (!make || gs_reserve((void **)&r->pools, &r->pools_cap, r->npools, sizeof *r->pools) != 0 ||
        gs_idmap_put(r->pools_by_id, pool, r->npools) != 0)
        return NULL;
    idx = r->npools++;
    r->pools[idx] = (struct gs_pool_usage){.pool = pool, .device = device};
    return &r->pools[idx];
}

void gs_replay_apply_pool(struct gs_replay *r, const struct gs_revent *e)
{
    struct gs_pool_usage *p = gs_replay_pool(r, e->pool, e->device, 1);
    if (!p)
        return;
    r->pool_reserved += e->reserved - p->reserved;
    r->pool_used += e->used - p->used;
    p->reserved = e->reserved;
    p->used = e->used;
    p->samples++;
    if (e->reserved > p->peak_reserved)
        p->peak_reserved = e->reserved;
    if (e->used > p->peak_used)
        p->peak_used = e->used;
    if (e->reserved > e->used && e->reserved - e->used > p->peak_unused)
        p->peak_unused = e->reserved - e->used;
}

void gs_replay_set_held(struct gs_replay *r, uint32_t space, uint64_t addr, uint64_t size,
                        uint32_t site, int32_t device, uint64_t now)
{
    struct gs_live_alloc old;
    size_t idx;
    if (take(r, space, addr, &old, &idx) == 0)
        remove_live(r, &old, idx);
    struct gs_live_alloc a = {.addr = addr,
                              .size = size,
                              .time_ns = now,
                              .site = site,
                              .device = device,
                              .kind = GS_KIND_DEVICE,
                              .space = space,
                              .refs = 1};
    struct gs_live_alloc *stored = size ? insert(r, &a) : NULL;
    if (stored)
        add_live(r, stored, now, GS_DEVICE_NEW);
}
