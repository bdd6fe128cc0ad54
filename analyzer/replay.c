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
 */
#include <stdlib.h>
#include <string.h>

#include "analyzer.h"

#define RECENT_FREES 256
#define MAX_FAILURES 10000

struct gs_live_alloc {
    uint64_t addr, size, time_ns;
    uint32_t site;
    int32_t device;
    uint32_t kind;
    uint32_t tid;
};

struct gs_recent_free {
    struct gs_live_alloc a;
    int valid;
};

static const char *const api_names[GS_API_COUNT] = {
    [GS_API_UNKNOWN] = "unknown",
#define NAME(x) [GS_API_##x] = #x
    NAME(cuMemAlloc_v2),
    NAME(cuMemFree_v2),
    NAME(cuMemAllocPitch_v2),
    NAME(cuMemAllocManaged),
    NAME(cuMemAllocAsync),
    NAME(cuMemAllocAsync_ptsz),
    NAME(cuMemFreeAsync),
    NAME(cuMemFreeAsync_ptsz),
    NAME(cuMemAllocFromPoolAsync),
    NAME(cuMemAllocFromPoolAsync_ptsz),
    NAME(cudaMalloc),
    NAME(cudaFree),
    NAME(cudaMallocPitch),
    NAME(cudaMallocManaged),
    NAME(cudaMallocAsync),
    NAME(cudaMallocAsync_ptsz),
    NAME(cudaFreeAsync),
    NAME(cudaFreeAsync_ptsz),
#undef NAME
};

const char *gs_api_name(uint32_t api) { return api < GS_API_COUNT ? api_names[api] : "unknown"; }

const char *gs_result_name(uint32_t result)
{
    switch (result) {
    case 0: return "CUDA_SUCCESS";
    case 1: return "CUDA_ERROR_INVALID_VALUE";
    case 2: return "CUDA_ERROR_OUT_OF_MEMORY";
    case 3: return "CUDA_ERROR_NOT_INITIALIZED";
    case 4: return "CUDA_ERROR_DEINITIALIZED";
    case 100: return "CUDA_ERROR_NO_DEVICE";
    case 101: return "CUDA_ERROR_INVALID_DEVICE";
    case 201: return "CUDA_ERROR_INVALID_CONTEXT";
    case 700: return "CUDA_ERROR_ILLEGAL_ADDRESS";
    case 999: return "CUDA_ERROR_UNKNOWN";
    default: return "CUDA_ERROR";
    }
}

/* Grows an array of n elements of size sz to hold one more. */
static int reserve(void **arr, size_t *cap, size_t n, size_t sz)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 64;
    void *p = realloc(*arr, c * sz);
    if (!p)
        return -1;
    *arr = p;
    *cap = c;
    return 0;
}

void gs_replay_init(struct gs_replay *r)
{
    memset(r, 0, sizeof *r);
    r->stacks_by_id = gs_idmap_new();
    r->live = gs_idmap_new();
    r->sites_by_key = gs_idmap_new();
    r->recent = calloc(RECENT_FREES, sizeof *r->recent);
    r->free_slot = SIZE_MAX;
}

void gs_replay_free(struct gs_replay *r)
{
    for (size_t i = 0; i < r->nmodules; i++)
        free(r->modules[i].path);
    for (size_t i = 0; i < r->nstacks; i++)
        free(r->stacks[i].pcs);
    free(r->modules);
    free(r->stacks);
    free(r->allocs);
    free(r->sites);
    free(r->failures);
    free(r->recent);
    gs_idmap_free(r->stacks_by_id);
    gs_idmap_free(r->live);
    gs_idmap_free(r->sites_by_key);
    memset(r, 0, sizeof *r);
}

/* ---- modules and stacks ---- */

static int runtime_module(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    return strncmp(base, "libgpushim.so", 13) == 0 || strncmp(base, "libcuda.so", 10) == 0 ||
           strncmp(base, "libcudart.so", 12) == 0;
}

static void on_module(void *ctx, const struct gs_rmodule *m)
{
    struct gs_replay *r = ctx;
    if (reserve((void **)&r->modules, &r->modules_cap, r->nmodules, sizeof *r->modules) != 0)
        return;
    char *path = strdup(m->path);
    if (!path)
        return;
    struct gs_module *mod = &r->modules[r->nmodules++];
    mod->id = m->id;
    mod->bias = m->bias;
    mod->lo = m->lo;
    mod->span = m->span;
    mod->path = path;
    mod->build_id_len = m->build_id_len <= sizeof mod->build_id ? m->build_id_len : 0;
    memcpy(mod->build_id, m->build_id, mod->build_id_len);
    mod->is_runtime = runtime_module(path);
}

static void on_stack(void *ctx, uint32_t id, const uint64_t *pcs, unsigned n)
{
    struct gs_replay *r = ctx;
    uint64_t idx;
    if (gs_idmap_get(r->stacks_by_id, id, &idx) == 0)
        return; /* defined twice: the first stands */
    if (reserve((void **)&r->stacks, &r->stacks_cap, r->nstacks, sizeof *r->stacks) != 0)
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

static struct gs_site *site(struct gs_replay *r, uint32_t stack_id, uint32_t kind)
{
    uint64_t key = (uint64_t)stack_id << 8 | kind, idx;
    if (gs_idmap_get(r->sites_by_key, key, &idx) == 0)
        return &r->sites[idx];
    if (reserve((void **)&r->sites, &r->sites_cap, r->nsites, sizeof *r->sites) != 0 ||
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
    touch(r, s);
    s->live_bytes += a->size;
    s->live_count++;
    struct gs_device_usage *d = device_usage(r, a->device);
    struct gs_kind_usage *k = &r->kinds[a->kind];
    k->live_bytes += a->size;
    if (k->live_bytes > k->peak_bytes)
        k->peak_bytes = k->live_bytes;
    if (a->kind != GS_KIND_DEVICE)
        return;
    d->present = 1;
    d->live_bytes += a->size;
    if (d->live_bytes > d->peak_bytes) {
        d->peak_bytes = d->live_bytes;
        d->peak_time_ns = now;
    }
    r->live_bytes += a->size;
    if (r->live_bytes > r->peak_bytes) {
        r->peak_bytes = r->live_bytes;
        r->peak_time_ns = now;
        r->peak_epoch++;
    }
}

static void remove_live(struct gs_replay *r, const struct gs_live_alloc *a)
{
    struct gs_site *s = &r->sites[a->site];
    touch(r, s);
    s->live_bytes -= a->size;
    s->live_count--;
    r->kinds[a->kind].live_bytes -= a->size;
    if (a->kind != GS_KIND_DEVICE)
        return;
    device_usage(r, a->device)->live_bytes -= a->size;
    r->live_bytes -= a->size;
}

static int insert(struct gs_replay *r, const struct gs_live_alloc *a)
{
    size_t idx;
    if (r->free_slot != SIZE_MAX) {
        idx = r->free_slot;
        r->free_slot = (size_t)r->allocs[idx].addr; /* the free list is threaded through addr */
    } else {
        if (reserve((void **)&r->allocs, &r->allocs_cap, r->nallocs, sizeof *r->allocs) != 0)
            return -1;
        idx = r->nallocs++;
    }
    if (gs_idmap_put(r->live, a->addr, idx) != 0)
        return -1;
    r->allocs[idx] = *a;
    return 0;
}

/* Takes the allocation at addr out of the live set into *out; -1 if none. */
static int take(struct gs_replay *r, uint64_t addr, struct gs_live_alloc *out)
{
    uint64_t idx;
    if (gs_idmap_get(r->live, addr, &idx) != 0)
        return -1;
    gs_idmap_del(r->live, addr);
    *out = r->allocs[idx];
    r->allocs[idx].addr = r->free_slot;
    r->free_slot = (size_t)idx;
    return 0;
}

static void on_alloc(struct gs_replay *r, const struct gs_revent *e)
{
    struct gs_live_alloc old;
    if (e->kind >= GS_KINDS)
        return; /* a kind from a newer writer: not counted here */
    if (take(r, e->addr, &old) == 0) /* its free was lost with a damaged block */
        remove_live(r, &old);
    struct gs_site *s = site(r, e->stack_id, e->kind);
    if (!s)
        return;
    if (!s->allocs)
        s->api = e->api;
    s->allocs++;
    s->alloc_bytes += e->size;
    r->allocations++;
    r->kinds[e->kind].allocs++;
    struct gs_live_alloc a = {.addr = e->addr,
                              .size = e->size,
                              .time_ns = e->time_ns,
                              .site = (uint32_t)(s - r->sites),
                              .device = e->device,
                              .kind = e->kind,
                              .tid = e->tid};
    if (e->kind == GS_KIND_DEVICE)
        device_usage(r, e->device)->allocs++;
    if (insert(r, &a) == 0)
        add_live(r, &a, e->time_ns);
}

static void on_free(struct gs_replay *r, const struct gs_revent *e)
{
    struct gs_live_alloc a;
    if (take(r, e->addr, &a) != 0) {
        r->frees_unknown++;
        return;
    }
    remove_live(r, &a);
    r->frees++;
    struct gs_recent_free *slot = &r->recent[r->recent_next++ % RECENT_FREES];
    slot->a = a;
    slot->a.tid = e->tid;
    slot->valid = 1;
}

static void on_free_failed(struct gs_replay *r, const struct gs_revent *e)
{
    for (size_t i = 0; i < RECENT_FREES; i++) {
        struct gs_recent_free *f = &r->recent[(r->recent_next - 1 - i) % RECENT_FREES];
        if (!f->valid || f->a.addr != e->addr || f->a.tid != e->tid)
            continue;
        f->valid = 0;
        struct gs_live_alloc a = f->a;
        if (insert(r, &a) == 0)
            add_live(r, &a, e->time_ns);
        r->frees--;
        r->frees_undone++;
        return;
    }
}

static void on_alloc_failed(struct gs_replay *r, const struct gs_revent *e)
{
    r->failed++;
    if (r->nfailures >= MAX_FAILURES ||
        reserve((void **)&r->failures, &r->failures_cap, r->nfailures, sizeof *r->failures) != 0) {
        r->failures_dropped++;
        return;
    }
    r->failures[r->nfailures++] = (struct gs_failure){.time_ns = e->time_ns,
                                                      .api = e->api,
                                                      .result = e->result,
                                                      .device = e->device,
                                                      .requested = e->size,
                                                      .free_bytes = e->free_bytes,
                                                      .total_bytes = e->total_bytes,
                                                      .process_live_bytes = r->live_bytes,
                                                      .stack_id = e->stack_id};
}

void gs_replay_event(struct gs_replay *r, const struct gs_revent *e)
{
    if (e->time_ns > r->last_time_ns)
        r->last_time_ns = e->time_ns;
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
    default:
        break;
    }
}

static void on_event(void *ctx, const struct gs_revent *e) { gs_replay_event(ctx, e); }

const struct gs_reader_ops gs_replay_ops = {
    .module = on_module,
    .stack = on_stack,
    .event = on_event,
};
