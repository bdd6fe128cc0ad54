/*
 * replay.c - the analyzer's one streaming pass over the events.
 *
 * It keeps only what grows with the live set and with distinct stacks:
 * the live allocations (by address), one site per (stack, kind of memory)
 * with its totals, per-device and per-kind usage, and the failed
 * allocations. Nothing grows with the number of events.
 *
 * "What was live at the peak" is kept without copying the live set at every
 * new maximum: each new peak starts an epoch, and a site saves its figures
 * the first time it changes after the epoch began. At the end, a site that
 * saved in the last peak's epoch held its saved figures at the peak; any
 * other site has not changed since and holds its current ones.
 *
 * Sizes are the sizes the program asked for. Peak and leaks are about
 * device memory (GS_KIND_DEVICE); other kinds are totalled apart.
 *
 * Each failed allocation's outcome, and the probes' allocations that never
 * join the live set, are outcome.c's: it sees each event first.
 *
 * A rotated trace starts with a checkpoint (checkpoint.c): this state as it
 * stood, loaded in place of the events it summarizes; the events after it
 * replay as usual.
 *
 * What the program says through the public API has files of its own, called
 * from here: marks and steps (marks.c), its own allocator's blocks and the
 * fragmentation of driver allocations (blocks.c).
 *
 * Threads' names (GS_REC_THREAD) are kept as the trace defines them, like
 * modules: each distinct name once, and each thread's latest; a site counts
 * its allocations by the name their thread had then, so a pool of workers
 * that share a name counts as one, and a thread renamed midway counts under
 * each name in turn.
 */
#include <stdlib.h>
#include <string.h>

#include "analyzer/analyzer.h"

#define RECENT_FREES GS_RECENT_FREES
#define MAX_FAILURES GS_MAX_FAILURES

/* The state the events build, apart from what the trace defines (modules
 * and stacks): a checkpoint replaces the one and keeps the other. */
static void init_state(struct gs_replay *r)
{
    for (int s = 0; s < GS_SPACE_COUNT; s++)
        r->live[s] = gs_idmap_new();
    r->pools_by_id = gs_idmap_new();
    r->sites_by_key = gs_idmap_new();
    r->recent = calloc(RECENT_FREES, sizeof *r->recent);
    r->free_slot = SIZE_MAX;
    gs_marks_init(&r->marks);
    gs_blocks_init(&r->blocks);
    gs_graphs_init(&r->graphs);
}

static void free_state(struct gs_replay *r)
{
    free(r->allocs);
    free(r->sites);
    free(r->failures);
    free(r->chains);
    free(r->recent);
    free(r->pools);
    for (int s = 0; s < GS_SPACE_COUNT; s++)
        gs_idmap_free(r->live[s]);
    gs_idmap_free(r->pools_by_id);
    gs_idmap_free(r->sites_by_key);
    gs_marks_free(&r->marks);
    gs_blocks_free(&r->blocks);
    gs_graphs_free(&r->graphs);
    gs_timelines_free(r);
}

void gs_replay_init(struct gs_replay *r)
{
    memset(r, 0, sizeof *r);
    r->modules_by_id = gs_idmap_new();
    r->stacks_by_id = gs_idmap_new();
    r->pycodes_by_id = gs_idmap_new();
    r->thread_names_by_hash = gs_idmap_new();
    r->threads_by_tid = gs_idmap_new();
    init_state(r);
}

void gs_replay_free(struct gs_replay *r)
{
    for (size_t i = 0; i < r->nmodules; i++)
        free(r->modules[i].path);
    for (size_t i = 0; i < r->nstacks; i++)
        free(r->stacks[i].pcs);
    for (size_t i = 0; i < r->npycodes; i++) {
        free(r->pycodes[i].file);
        free(r->pycodes[i].function);
    }
    for (size_t i = 0; i < r->nthread_names; i++)
        free(r->thread_names[i]);
    free(r->modules);
    free(r->stacks);
    free(r->pycodes);
    free(r->thread_names);
    free(r->threads);
    gs_idmap_free(r->modules_by_id);
    gs_idmap_free(r->stacks_by_id);
    gs_idmap_free(r->pycodes_by_id);
    gs_idmap_free(r->thread_names_by_hash);
    gs_idmap_free(r->threads_by_tid);
    free_state(r);
    for (unsigned i = 0; i < r->nhooks; i++)
        if (r->hook[i]->free)
            r->hook[i]->free(r->hook_ctx[i]);
    memset(r, 0, sizeof *r);
}

int gs_replay_attach(struct gs_replay *r, const struct gs_replay_hook *h, void *ctx)
{
    if (r->nhooks == GS_REPLAY_HOOKS)
        return -1;
    r->hook[r->nhooks] = h;
    r->hook_ctx[r->nhooks++] = ctx;
    return 0;
}

void *gs_replay_hook_ctx(const struct gs_replay *r, const struct gs_replay_hook *h)
{
    for (unsigned i = 0; i < r->nhooks; i++)
        if (r->hook[i] == h)
            return r->hook_ctx[i];
    return NULL;
}

void gs_replay_reset(struct gs_replay *r)
{
    struct gs_replay keep = *r;
    free_state(r);
    memset(r, 0, sizeof *r);
    r->modules = keep.modules;
    r->nmodules = keep.nmodules;
    r->modules_cap = keep.modules_cap;
    r->modules_by_id = keep.modules_by_id;
    r->stacks = keep.stacks;
    r->nstacks = keep.nstacks;
    r->stacks_cap = keep.stacks_cap;
    r->stacks_by_id = keep.stacks_by_id;
    r->pycodes = keep.pycodes;
    r->npycodes = keep.npycodes;
    r->pycodes_cap = keep.pycodes_cap;
    r->pycodes_by_id = keep.pycodes_by_id;
    r->thread_names = keep.thread_names;
    r->nthread_names = keep.nthread_names;
    r->thread_names_cap = keep.thread_names_cap;
    r->thread_names_by_hash = keep.thread_names_by_hash;
    r->threads = keep.threads;
    r->nthreads = keep.nthreads;
    r->threads_cap = keep.threads_cap;
    r->threads_by_tid = keep.threads_by_tid;
    memcpy(r->hook, keep.hook, sizeof r->hook);
    memcpy(r->hook_ctx, keep.hook_ctx, sizeof r->hook_ctx);
    r->nhooks = keep.nhooks;
    init_state(r);
    for (unsigned i = 0; i < r->nhooks; i++)
        if (r->hook[i]->reset)
            r->hook[i]->reset(r->hook_ctx[i], r);
}

/* ---- modules and stacks ---- */

static int runtime_module(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    return strncmp(base, "libgpushim.so", 13) == 0 || strncmp(base, "libcuda.so", 10) == 0 ||
           strncmp(base, "libcudart.so", 12) == 0;
}

void gs_replay_on_module(void *ctx, const struct gs_rmodule *m)
{
    struct gs_replay *r = ctx;
    uint64_t idx;
    if (gs_idmap_get(r->modules_by_id, m->id, &idx) == 0)
        return; /* defined twice (a checkpoint, a copied block): the first stands */
    if (gs_reserve((void **)&r->modules, &r->modules_cap, r->nmodules, sizeof *r->modules) != 0)
        return;
    char *path = strdup(m->path);
    if (!path)
        return;
    if (gs_idmap_put(r->modules_by_id, m->id, r->nmodules) != 0) {
        free(path);
        return;
    }
    struct gs_module *mod = &r->modules[r->nmodules++];
    mod->id = m->id;
    mod->bias = m->bias;
    mod->lo = m->lo;
    mod->span = m->span;
    mod->path = path;
    mod->build_id_len = m->build_id_len <= sizeof mod->build_id ? m->build_id_len : 0;
    if (mod->build_id_len) /* none may come as NULL (the shim's own modules) */
        memcpy(mod->build_id, m->build_id, mod->build_id_len);
    mod->is_runtime = runtime_module(path);
}

void gs_replay_on_stack(void *ctx, uint32_t id, const uint64_t *pcs, unsigned n)
{
    struct gs_replay *r = ctx;
    uint64_t idx;
    if (gs_idmap_get(r->stacks_by_id, id, &idx) == 0)
        return; /* defined twice: the first stands */
    if (gs_reserve((void **)&r->stacks, &r->stacks_cap, r->nstacks, sizeof *r->stacks) != 0)
        return;
    uint64_t *copy = malloc((n ? n : 1) * sizeof *copy);
    if (!copy)
        return;
    memcpy(copy, pcs, n * sizeof *pcs);
    if (gs_idmap_put(r->stacks_by_id, id, r->nstacks) != 0) {
        free(copy);
        return;
    }
    r->stacks[r->nstacks++] = (struct gs_stack){.id = id, .n = n, .pcs = copy};
}

void gs_replay_on_pycode(void *ctx, const struct gs_rpycode *c)
{
    struct gs_replay *r = ctx;
    uint64_t idx;
    if (gs_idmap_get(r->pycodes_by_id, c->id, &idx) == 0)
        return; /* defined twice: the first stands */
    if (gs_reserve((void **)&r->pycodes, &r->pycodes_cap, r->npycodes, sizeof *r->pycodes) != 0)
        return;
    char *file = strdup(c->file), *function = strdup(c->function);
    if (!file || !function || gs_idmap_put(r->pycodes_by_id, c->id, r->npycodes) != 0) {
        free(file);
        free(function);
        return;
    }
    r->pycodes[r->npycodes++] = (struct gs_pycode){
        .id = c->id, .first_line = c->first_line, .file = file, .function = function};
}

const struct gs_pycode *gs_replay_pycode(const struct gs_replay *r, uint32_t id)
{
    uint64_t idx;
    return gs_idmap_get(r->pycodes_by_id, id, &idx) == 0 ? &r->pycodes[idx] : NULL;
}

/* ---- thread names ---- */

static uint64_t name_hash(const char *text)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        h = (h ^ *p) * 0x100000001b3ull;
    return h;
}

const char *gs_replay_thread_name(const struct gs_replay *r, uint32_t name)
{
    return name && name <= r->nthread_names ? r->thread_names[name - 1] : NULL;
}

uint32_t gs_replay_thread_intern(struct gs_replay *r, const char *text)
{
    char cut[GS_MAX_THREAD_NAME + 1];
    snprintf(cut, sizeof cut, "%s", text);
    uint64_t h = name_hash(cut), idx;
    int hashed = gs_idmap_get(r->thread_names_by_hash, h, &idx) == 0;
    if (hashed && strcmp(r->thread_names[idx], cut) == 0)
        return (uint32_t)idx + 1;
    for (size_t i = 0; hashed && i < r->nthread_names; i++) /* two names, one hash */
        if (strcmp(r->thread_names[i], cut) == 0)
            return (uint32_t)i + 1;
    if (r->nthread_names >= UINT32_MAX - 1 ||
        gs_reserve((void **)&r->thread_names, &r->thread_names_cap, r->nthread_names,
                   sizeof *r->thread_names) != 0)
        return 0;
    char *copy = strdup(cut);
    if (!copy || (!hashed && gs_idmap_put(r->thread_names_by_hash, h, r->nthread_names) != 0)) {
        free(copy);
        return 0;
    }
    r->thread_names[r->nthread_names++] = copy;
    return (uint32_t)r->nthread_names;
}

void gs_replay_thread_named(struct gs_replay *r, uint32_t tid, const char *text)
{
    uint32_t name = gs_replay_thread_intern(r, text);
    uint64_t idx;
    r->last_tid_valid = 0;
    if (gs_idmap_get(r->threads_by_tid, tid, &idx) == 0) {
        r->threads[idx].name = name; /* renamed, or a new thread with an old one's tid */
        return;
    }
    if (!name ||
        gs_reserve((void **)&r->threads, &r->threads_cap, r->nthreads, sizeof *r->threads) != 0 ||
        gs_idmap_put(r->threads_by_tid, tid, r->nthreads) != 0)
        return;
    r->threads[r->nthreads++] = (struct gs_thread){.tid = tid, .name = name};
}

uint32_t gs_replay_thread_of(const struct gs_replay *r, uint32_t tid)
{
    uint64_t idx;
    return gs_idmap_get(r->threads_by_tid, tid, &idx) == 0 ? r->threads[idx].name : 0;
}

/* The same for the replay's events, which come in runs from one thread. */
static uint32_t thread_of_event(struct gs_replay *r, uint32_t tid)
{
    if (!r->last_tid_valid || r->last_tid != tid) {
        r->last_tid = tid;
        r->last_tid_name = gs_replay_thread_of(r, tid);
        r->last_tid_valid = 1;
    }
    return r->last_tid_name;
}

void gs_site_count_thread(struct gs_site *s, uint32_t name)
{
    if (!name)
        return;
    for (int i = 0; i < GS_SITE_THREADS; i++) {
        if (s->thread[i] == name || !s->thread[i]) {
            s->thread[i] = name;
            s->thread_allocs[i]++;
            return;
        }
    }
    s->other_thread_allocs++;
}

void gs_replay_on_thread(void *ctx, uint32_t tid, const char *name)
{
    gs_replay_thread_named(ctx, tid, name);
}

const struct gs_stack *gs_replay_stack(const struct gs_replay *r, uint32_t id)
{
    uint64_t idx;
    return gs_idmap_get(r->stacks_by_id, id, &idx) == 0 ? &r->stacks[idx] : NULL;
}

const struct gs_module *gs_replay_module_at(const struct gs_replay *r, uint64_t pc)
{
    /* The latest module that holds pc: a later image at the same place
     * replaced an earlier one. */
    for (size_t i = r->nmodules; i-- > 0;) {
        const struct gs_module *m = &r->modules[i];
        if (pc >= m->lo && pc - m->lo < m->span)
            return m;
    }
    return NULL;
}

/* ---- sites ---- */

struct gs_site *gs_replay_site(struct gs_replay *r, uint32_t stack_id, uint32_t kind, int make)
{
    uint64_t key = (uint64_t)stack_id << 8 | kind, idx;
    if (gs_idmap_get(r->sites_by_key, key, &idx) == 0)
        return &r->sites[idx];
    if (!make ||
        gs_reserve((void **)&r->sites, &r->sites_cap, r->nsites, sizeof *r->sites) != 0 ||
        gs_idmap_put(r->sites_by_key, key, r->nsites) != 0)
        return NULL;
    struct gs_site *s = &r->sites[r->nsites++];
    memset(s, 0, sizeof *s);
    s->stack_id = stack_id;
    s->kind = kind;
    return s;
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

static void add_live(struct gs_replay *r, const struct gs_live_alloc *a, uint64_t now)
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
    gs_timeline_note(&r->timeline, now, r->live_bytes);
    gs_timeline_device_note(r, (unsigned)(d - r->devices), now, d->live_bytes);
    gs_marks_device_added(r, a->size);
    gs_blocks_after_add(r, a);
}

static void remove_live(struct gs_replay *r, const struct gs_live_alloc *a)
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
    gs_timeline_note(&r->timeline, r->last_time_ns, r->live_bytes);
    gs_timeline_device_note(r, (unsigned)(d - r->devices), r->last_time_ns, d->live_bytes);
    gs_marks_device_removed(r, a->size);
    gs_blocks_after_remove(r, a);
}

int gs_replay_insert(struct gs_replay *r, const struct gs_live_alloc *a)
{
    size_t idx;
    if (r->free_slot != SIZE_MAX) {
        idx = r->free_slot;
    } else {
        if (gs_reserve((void **)&r->allocs, &r->allocs_cap, r->nallocs, sizeof *r->allocs) != 0)
            return -1;
        idx = r->nallocs;
    }
    if (gs_idmap_put(r->live[a->space], a->addr, idx) != 0)
        return -1; /* the slot stays free */
    if (idx == r->nallocs)
        r->nallocs++;
    else
        r->free_slot = (size_t)r->allocs[idx].addr; /* the free list is threaded through addr */
    r->allocs[idx] = *a;
    return 0;
}

/* The live allocation at addr in space, or NULL. */
static struct gs_live_alloc *find_live(const struct gs_replay *r, uint32_t space, uint64_t addr)
{
    uint64_t idx;
    return gs_idmap_get(r->live[space], addr, &idx) == 0 ? &r->allocs[idx] : NULL;
}

struct gs_live_alloc *gs_replay_find_live(const struct gs_replay *r, uint32_t space,
                                          uint64_t addr)
{
    return find_live(r, space, addr);
}

int gs_replay_slot_live(const struct gs_replay *r, size_t idx)
{
    /* A free slot's addr threads the free list: its (space, addr) is not
     * in the live set, or is another slot's. */
    const struct gs_live_alloc *a = &r->allocs[idx];
    return find_live(r, a->space, a->addr) == a;
}

/* Takes the allocation at addr out of the live set into *out; -1 if none. */
static int take(struct gs_replay *r, uint32_t space, uint64_t addr, struct gs_live_alloc *out)
{
    uint64_t idx;
    if (gs_idmap_get(r->live[space], addr, &idx) != 0)
        return -1;
    gs_idmap_del(r->live[space], addr);
    *out = r->allocs[idx];
    r->allocs[idx].addr = r->free_slot;
    r->free_slot = (size_t)idx;
    return 0;
}

static void on_alloc(struct gs_replay *r, const struct gs_revent *e)
{
    struct gs_live_alloc old;
    if (e->kind >= GS_KIND_COUNT || e->space >= GS_SPACE_COUNT)
        return; /* from a newer writer: not counted here */
    if (take(r, e->space, e->addr, &old) == 0) /* its free was lost with a damaged block */
        remove_live(r, &old);
    struct gs_site *s = gs_replay_site(r, e->stack_id, e->kind, 1);
    if (!s)
        return;
    if (!s->allocs)
        s->api = e->api;
    s->allocs++;
    s->alloc_bytes += e->size;
    gs_site_count_thread(s, thread_of_event(r, e->tid));
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
                              .refs = 1};
    if (e->space == GS_SPACE_MAPPING && e->parent) {
        struct gs_live_alloc *mem = find_live(r, GS_SPACE_HANDLE, e->parent);
        if (mem) { /* mapped memory lives while mapped, even once released */
            mem->refs++;
            a.parent = e->parent;
        }
    }
    if (e->kind == GS_KIND_DEVICE) {
        device_usage(r, e->device)->allocs++;
        GS_REPLAY_HOOKS_CALL(r, on_alloc, a.site, e->time_ns);
    }
    if (gs_replay_insert(r, &a) == 0)
        add_live(r, &a, e->time_ns);
}

static void remember_free(struct gs_replay *r, const struct gs_live_alloc *a, uint32_t tid,
                          int removed)
{
    struct gs_recent_free *slot = &r->recent[r->recent_next++ % RECENT_FREES];
    slot->a = *a;
    slot->tid = tid;
    slot->valid = 1;
    slot->removed = removed;
    slot->nothing = 0;
}

/* Drops one reference of the allocation at (space, addr); it ends with its
 * last, and a mapping that ends drops its reference to its memory. Returns
 * -1 if nothing is live there. */
static int drop(struct gs_replay *r, uint32_t space, uint64_t addr, uint32_t tid)
{
    struct gs_live_alloc *live = find_live(r, space, addr);
    if (!live)
        return -1;
    if (live->refs > 1) {
        live->refs--;
        remember_free(r, live, tid, 0);
        return 0;
    }
    struct gs_live_alloc a;
    take(r, space, addr, &a);
    remove_live(r, &a);
    r->frees++;
    remember_free(r, &a, tid, 1);
    if (a.parent)
        drop(r, GS_SPACE_HANDLE, a.parent, tid);
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

static void on_free(struct gs_replay *r, const struct gs_revent *e)
{
    int found = -1;
    uint64_t before = r->live_bytes;
    int32_t graph_device = 0; /* a graph allocation's: its pool keeps the bytes */
    struct gs_live_alloc *graph_alloc =
        e->space == GS_SPACE_ADDRESS && gs_graphs_take(r, e->addr, &graph_device)
            ? find_live(r, GS_SPACE_ADDRESS, e->addr)
            : NULL;
    uint64_t graph_size = graph_alloc ? graph_alloc->size : 0;
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
    if (r->nchains && r->live_bytes < before)
        gs_outcome_on_freed(r, e->tid, before - r->live_bytes);
    if (graph_size)
        gs_graphs_returned(r, graph_device, graph_size, e->time_ns);
}

static void on_free_failed(struct gs_replay *r, const struct gs_revent *e)
{
    for (size_t i = 0; i < RECENT_FREES; i++) {
        struct gs_recent_free *f = &r->recent[(r->recent_next - 1 - i) % RECENT_FREES];
        if (!f->valid || f->a.addr != e->addr || f->a.space != e->space || f->tid != e->tid)
            continue;
        f->valid = 0;
        if (f->nothing)
            return; /* the refused free of an address that was not live */
        if (!f->removed) {
            struct gs_live_alloc *live = find_live(r, f->a.space, f->a.addr);
            if (live)
                live->refs++;
            return;
        }
        struct gs_live_alloc a = f->a;
        a.refs = 1;
        if (gs_replay_insert(r, &a) == 0)
            add_live(r, &a, e->time_ns);
        struct gs_live_alloc *mem = a.parent ? find_live(r, GS_SPACE_HANDLE, a.parent) : NULL;
        if (mem)
            mem->refs++; /* the restored mapping holds its memory again */
        r->frees--;
        r->frees_undone++;
        return;
    }
}

static void on_ref(struct gs_replay *r, const struct gs_revent *e)
{
    struct gs_live_alloc *live = e->space < GS_SPACE_COUNT ? find_live(r, e->space, e->addr) : NULL;
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

static void on_pool(struct gs_replay *r, const struct gs_revent *e)
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

static void on_alloc_failed(struct gs_replay *r, const struct gs_revent *e)
{
    r->failed++;
    if (r->nfailures >= MAX_FAILURES || gs_reserve((void **)&r->failures, &r->failures_cap,
                                                   r->nfailures, sizeof *r->failures) != 0) {
        r->failures_dropped++;
        gs_outcome_on_failure(r, e, SIZE_MAX);
        return;
    }
    r->failures[r->nfailures++] = (struct gs_failure){.time_ns = e->time_ns,
                                                      .api = e->api,
                                                      .result = e->result,
                                                      .device = e->device,
                                                      .requested = e->size,
                                                      .free_bytes = e->free_bytes,
                                                      .total_bytes = e->total_bytes,
                                                      .process_live_bytes =
                                                          e->device >= 0 && e->device < GS_MAX_DEVICES
                                                              ? r->devices[e->device].live_bytes
                                                              : r->live_bytes,
                                                      .stack_id = e->stack_id,
                                                      .thread = thread_of_event(r, e->tid)};
    gs_outcome_on_failure(r, e, r->nfailures - 1);
    gs_blocks_on_failure(r, r->nfailures - 1);
    GS_REPLAY_HOOKS_CALL(r, on_failure, r->nfailures - 1);
}

void gs_replay_apply_alloc(struct gs_replay *r, const struct gs_revent *e) { on_alloc(r, e); }

void gs_replay_apply_free(struct gs_replay *r, const struct gs_revent *e) { on_free(r, e); }

void gs_replay_set_held(struct gs_replay *r, uint32_t space, uint64_t addr, uint64_t size,
                        uint32_t site, int32_t device, uint64_t now)
{
    struct gs_live_alloc old;
    if (take(r, space, addr, &old) == 0)
        remove_live(r, &old);
    struct gs_live_alloc a = {.addr = addr,
                              .size = size,
                              .time_ns = now,
                              .site = site,
                              .device = device,
                              .kind = GS_KIND_DEVICE,
                              .space = space,
                              .refs = 1};
    if (size && gs_replay_insert(r, &a) == 0)
        add_live(r, &a, now);
}

void gs_replay_event(struct gs_replay *r, const struct gs_revent *e)
{
    struct gs_revent launch_failure;
    if (e->type == GS_REC_ALLOC_FAILED && r->graphs.pending)
        e = gs_graphs_failure(r, e, &launch_failure);
    r->events++;
    r->checkpoint.open = 0; /* its records all come before any event */
    GS_REPLAY_HOOKS_CALL(r, before_event, e->time_ns);
    if (e->time_ns > r->last_time_ns)
        r->last_time_ns = e->time_ns;
    if (gs_outcome_event(r, e)) { /* a probe's allocation, or its free: held apart */
        GS_REPLAY_HOOKS_CALL(r, after_event, e->time_ns);
        return;
    }
    switch (e->type) {
    case GS_REC_ALLOC:
        on_alloc(r, e);
        break;
    case GS_REC_FREE:
        on_free(r, e);
        break;
    case GS_REC_FREE_FAILED:
        on_free_failed(r, e);
        break;
    case GS_REC_ALLOC_FAILED:
        on_alloc_failed(r, e);
        break;
    case GS_REC_REF:
        on_ref(r, e);
        break;
    case GS_REC_POOL:
        on_pool(r, e);
        break;
    case GS_REC_MARK:
        gs_marks_on_mark(r, e);
        break;
    case GS_REC_BLOCK_ALLOC:
        gs_blocks_on_alloc(r, e);
        break;
    case GS_REC_BLOCK_FREE:
        gs_blocks_on_free(r, e);
        break;
    case GS_REC_GRAPH_NODE:
    case GS_REC_GRAPH:
        gs_graphs_event(r, e);
        break;
    default:
        break;
    }
    GS_REPLAY_HOOKS_CALL(r, after_event, e->time_ns);
}

void gs_replay_finish(struct gs_replay *r)
{
    gs_outcome_finish(r);
    gs_blocks_finish(r);
    for (unsigned i = 0; i < r->nhooks; i++)
        if (r->hook[i]->finish)
            r->hook[i]->finish(r->hook_ctx[i], r);
}

void gs_replay_on_event(void *ctx, const struct gs_revent *e) { gs_replay_event(ctx, e); }

/* Checkpoints are the analyzer's to load (analyzer/read/checkpoint_load.c:
 * gs_replay_ops); the shim's model never reads one. */
const struct gs_reader_ops gs_model_ops = {
    .module = gs_replay_on_module,
    .stack = gs_replay_on_stack,
    .pycode = gs_replay_on_pycode,
    .event = gs_replay_on_event,
    .thread = gs_replay_on_thread,
};
