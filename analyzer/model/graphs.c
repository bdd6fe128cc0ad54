/*
 * graphs.c - CUDA graphs in the replay (docs/design.md "CUDA graphs").
 *
 * A graph's memory is accounted as the driver holds it:
 *   - at capture or when a node is added, nothing: the node (address, size,
 *     call stack) is kept with its graph, or with the stream whose capture
 *     makes the graph until the capture ends;
 *   - an executable keeps the nodes its graph had when instantiated (PyTorch
 *     destroys the graph right after instantiating it);
 *   - each launch runs its nodes in their order: an allocation node makes a
 *     live device allocation at its address, of its site, and a free node
 *     ends one; with AUTO_FREE_ON_LAUNCH the executable's allocations still
 *     live are freed first. An allocation the graph does not free stays
 *     live until a free (cuMemFreeAsync, cuMemFree, another graph's node);
 *   - the bytes freed go back to the device's graph pool, which keeps them:
 *     what it holds beyond its live allocations is the analyzer's own device
 *     allocation (GS_SPACE_GRAPH_POOL, by device number), at the call site of
 *     the launch that last grew it, so the pool counts in the peak, the
 *     timeline and "what set the peak". An allocation node uses that reserve
 *     first; the pool grows when its live allocations pass it;
 *   - the driver's figures after each launch, upload, trim and destruction
 *     (the pool's reserved and used bytes) set what it holds: a trim gives
 *     back what its graphs no longer use, an upload sets memory aside.
 *
 * A launch that failed for memory is followed by a failed allocation (the
 * shim's) with the device's free memory: the failure is tied to the first
 * allocation node of the launch whose growth of the pool passes it (its size
 * and call stack), else to its largest.
 */
#include <stdlib.h>
#include <string.h>

#include "analyzer/model/model_int.h"
#include "gpushim_cuda.h" /* GS_CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH */

void gs_graphs_init(struct gs_graphs *g)
{
    memset(g, 0, sizeof *g);
    g->live = gs_idmap_new();
}

static void obj_free(struct gs_graph_obj *o) { free(o->nodes); }

void gs_graphs_free(struct gs_graphs *g)
{
    for (size_t i = 0; i < g->nobjs; i++)
        obj_free(&g->objs[i]);
    free(g->objs);
    gs_idmap_free(g->live);
    memset(g, 0, sizeof *g);
}

size_t gs_graphs_count(const struct gs_graphs *g, enum gs_graph_which which)
{
    size_t n = 0;
    for (size_t i = 0; i < g->nobjs; i++)
        n += g->objs[i].which == which;
    return n;
}

static struct gs_graph_pool *pool_of(struct gs_replay *r, int32_t device)
{
    return &r->graphs.pools[device >= 0 && device < GS_MAX_DEVICES ? device : GS_MAX_DEVICES];
}

static int32_t device_of(const struct gs_replay *r, const struct gs_graph_pool *p)
{
    long d = p - r->graphs.pools;
    return d < GS_MAX_DEVICES ? (int32_t)d : GS_DEVICE_UNKNOWN;
}

static struct gs_graph_obj *find(struct gs_replay *r, uint32_t which, uint64_t handle)
{
    for (size_t i = 0; i < r->graphs.nobjs; i++)
        if (r->graphs.objs[i].which == which && r->graphs.objs[i].handle == handle)
            return &r->graphs.objs[i];
    return NULL;
}

static struct gs_graph_obj *make(struct gs_replay *r, uint32_t which, uint64_t handle)
{
    struct gs_graphs *g = &r->graphs;
    struct gs_graph_obj *o = find(r, which, handle);
    if (o)
        return o;
    if (gs_reserve((void **)&g->objs, &g->objs_cap, g->nobjs, sizeof *g->objs) != 0)
        return NULL;
    o = &g->objs[g->nobjs++];
    memset(o, 0, sizeof *o);
    o->which = which;
    o->handle = handle;
    o->device = GS_DEVICE_UNKNOWN;
    return o;
}

static void drop(struct gs_replay *r, struct gs_graph_obj *o)
{
    obj_free(o);
    *o = r->graphs.objs[--r->graphs.nobjs];
}

static int add_node(struct gs_graph_obj *o, const struct gs_graph_node *n)
{
    if (gs_reserve((void **)&o->nodes, &o->cap, o->n, sizeof *o->nodes) != 0)
        return -1;
    o->nodes[o->n++] = *n;
    if (o->device == GS_DEVICE_UNKNOWN)
        o->device = n->device;
    return 0;
}

/* What the pool holds beyond its live allocations, as the analyzer's own
 * allocation, at the call site of the call (stack_id, api; 0: none) that
 * last grew the pool. */
static void set_reserve(struct gs_replay *r, struct gs_graph_pool *p, uint32_t stack_id,
                        uint32_t api, uint64_t now)
{
    int32_t device = device_of(r, p);
    uint64_t key = (uint64_t)(device < 0 ? GS_MAX_DEVICES : device);
    uint64_t idle = p->reserved > p->live ? p->reserved - p->live : 0;
    const struct gs_live_alloc *held = gs_replay_find_live(r, GS_SPACE_GRAPH_POOL, key);
    uint32_t site;
    if (stack_id && p->reserved > p->prev_reserved) { /* it grew: held at this call */
        p->stack_id = stack_id;
        p->api = api;
    }
    p->prev_reserved = p->reserved;
    if (p->reserved > p->peak_reserved)
        p->peak_reserved = p->reserved;
    if (!held && !idle)
        return;
    stack_id = p->stack_id;
    api = p->api;
    if (held && gs_replay_site(r, stack_id, GS_KIND_DEVICE, 0) == &r->sites[held->site]) {
        site = held->site;
    } else {
        struct gs_site *s = gs_replay_site(r, stack_id, GS_KIND_DEVICE, 1);
        if (!s)
            return;
        if (!s->allocs && !s->api)
            s->api = api;
        site = (uint32_t)(s - r->sites);
    }
    gs_replay_set_held(r, GS_SPACE_GRAPH_POOL, key, idle, site, device, now);
}

/* The driver's figures after a call: what the pool holds. */
static void sampled(struct gs_replay *r, const struct gs_revent *e)
{
    if (!e->sampled)
        return;
    struct gs_graph_pool *p = pool_of(r, e->device);
    p->seen = 1;
    p->samples++;
    p->sampled_reserved = e->reserved;
    p->sampled_used = e->used;
    p->reserved = e->reserved > p->live ? e->reserved : p->live;
    set_reserve(r, p, e->stack_id, e->api, e->time_ns);
}

int gs_graphs_take(struct gs_replay *r, uint64_t addr, int32_t *device)
{
    uint64_t v;
    if (!gs_idmap_count(r->graphs.live) || gs_idmap_get(r->graphs.live, addr, &v) != 0)
        return 0;
    gs_idmap_del(r->graphs.live, addr);
    *device = (int32_t)v - 1;
    return 1;
}

void gs_graphs_returned(struct gs_replay *r, int32_t device, uint64_t size, uint64_t now)
{
    struct gs_graph_pool *p = pool_of(r, device);
    p->live -= size < p->live ? size : p->live;
    set_reserve(r, p, 0, 0, now);
}

void gs_graphs_on_free(struct gs_replay *r, const struct gs_revent *e)
{
    uint64_t before = r->live_bytes;
    int32_t graph_device = 0; /* a graph allocation's: its pool keeps the bytes */
    struct gs_live_alloc *graph_alloc =
        e->space == GS_SPACE_ADDRESS && gs_graphs_take(r, e->addr, &graph_device)
            ? gs_live_find(r, GS_SPACE_ADDRESS, e->addr)
            : NULL;
    uint64_t graph_size = graph_alloc ? graph_alloc->size : 0;
    gs_replay_apply_free(r, e);
    if (r->nchains && r->live_bytes < before)
        gs_outcome_on_freed(r, e->tid, before - r->live_bytes);
    if (graph_size)
        gs_graphs_returned(r, graph_device, graph_size, e->time_ns);
}

/* One allocation node run: the reserve first, then the pool grows. */
static void run_alloc(struct gs_replay *r, const struct gs_revent *launch,
                      const struct gs_graph_node *n)
{
    struct gs_graph_pool *p = pool_of(r, n->device);
    p->live += n->size;
    if (p->live > p->reserved)
        p->reserved = p->live;
    set_reserve(r, p, launch->stack_id, launch->api, launch->time_ns);
    struct gs_revent a = {.type = GS_REC_ALLOC,
                          .time_ns = launch->time_ns,
                          .tid = launch->tid,
                          .api = n->api,
                          .device = n->device,
                          .addr = n->addr,
                          .size = n->size,
                          .stack_id = n->stack_id,
                          .kind = GS_KIND_DEVICE,
                          .space = GS_SPACE_ADDRESS};
    gs_replay_apply_alloc(r, &a);
    if (gs_replay_find_live(r, GS_SPACE_ADDRESS, n->addr))
        gs_idmap_put(r->graphs.live, n->addr, (uint64_t)(n->device + 1));
}

static void run_free(struct gs_replay *r, const struct gs_revent *launch, uint64_t addr)
{
    uint64_t v;
    if (gs_idmap_get(r->graphs.live, addr, &v) != 0)
        return; /* not a graph allocation live now: the driver refuses such a node */
    struct gs_revent f = {.type = GS_REC_FREE,
                          .time_ns = launch->time_ns,
                          .tid = launch->tid,
                          .api = launch->api,
                          .device = (int32_t)v - 1,
                          .addr = addr,
                          .space = GS_SPACE_ADDRESS};
    gs_graphs_on_free(r, &f);
}

static void launch(struct gs_replay *r, const struct gs_revent *e, struct gs_graph_obj *x)
{
    struct gs_graph_pool *p = pool_of(r, e->device);
    p->seen = 1;
    if (e->result != 0) {
        p->launches_failed++;
        r->graphs.pending = e->result == GS_CUDA_ERROR_OUT_OF_MEMORY && x;
        r->graphs.pending_tid = e->tid;
        r->graphs.pending_exec = e->exec;
        return;
    }
    p->launches++;
    if (!x)
        return; /* an executable the trace never showed made */
    x->launches++;
    if (x->flags & GS_CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)
        for (size_t i = 0; i < x->n; i++)
            if (!x->nodes[i].is_free)
                run_free(r, e, x->nodes[i].addr);
    for (size_t i = 0; i < x->n; i++) {
        if (x->nodes[i].is_free)
            run_free(r, e, x->nodes[i].addr);
        else
            run_alloc(r, e, &x->nodes[i]);
    }
}

static void on_node(struct gs_replay *r, const struct gs_revent *e)
{
    struct gs_graph_obj *o = e->graph ? make(r, GS_GRAPH_OBJ_GRAPH, e->graph)
                                      : make(r, GS_GRAPH_OBJ_CAPTURE, e->stream);
    struct gs_graph_node n = {.addr = e->addr,
                              .size = e->op ? 0 : e->size,
                              .stack_id = e->stack_id,
                              .api = e->api,
                              .device = e->device,
                              .is_free = e->op != 0};
    r->graphs.nodes++;
    if (o)
        add_node(o, &n);
}

void gs_graphs_event(struct gs_replay *r, const struct gs_revent *e)
{
    struct gs_graph_obj *o;
    r->graphs.seen = 1;
    if (e->type == GS_REC_GRAPH_NODE) {
        on_node(r, e);
        return;
    }
    if (e->result != 0 && e->op != GS_GRAPH_LAUNCH && e->op != GS_GRAPH_UPLOAD)
        return; /* nothing was done */
    switch (e->op) {
    case GS_GRAPH_CAPTURE_BEGIN:
        if ((o = find(r, GS_GRAPH_OBJ_CAPTURE, e->stream)))
            drop(r, o); /* one that never ended */
        make(r, GS_GRAPH_OBJ_CAPTURE, e->stream);
        break;
    case GS_GRAPH_CAPTURE_END:
        if ((o = find(r, GS_GRAPH_OBJ_GRAPH, e->graph)))
            drop(r, o); /* a handle the driver reused */
        o = find(r, GS_GRAPH_OBJ_CAPTURE, e->stream);
        if (!o)
            o = make(r, GS_GRAPH_OBJ_CAPTURE, e->stream);
        if (o) {
            o->which = GS_GRAPH_OBJ_GRAPH;
            o->handle = e->graph;
        }
        break;
    case GS_GRAPH_INSTANTIATE: {
        if ((o = find(r, GS_GRAPH_OBJ_EXEC, e->exec)))
            drop(r, o);
        struct gs_graph_obj *x = make(r, GS_GRAPH_OBJ_EXEC, e->exec);
        o = find(r, GS_GRAPH_OBJ_GRAPH, e->graph); /* after make: the array may move */
        if (!x)
            break;
        r->graphs.execs_made++;
        x->graph = e->graph;
        x->flags = e->flags;
        for (size_t i = 0; o && i < o->n; i++)
            if (add_node(x, &o->nodes[i]) != 0)
                break;
        break;
    }
    case GS_GRAPH_LAUNCH:
        launch(r, e, find(r, GS_GRAPH_OBJ_EXEC, e->exec));
        break;
    case GS_GRAPH_UPLOAD:
        if (e->result != 0)
            pool_of(r, e->device)->launches_failed++;
        break;
    case GS_GRAPH_EXEC_DESTROY:
        if ((o = find(r, GS_GRAPH_OBJ_EXEC, e->exec)))
            drop(r, o);
        break;
    case GS_GRAPH_DESTROY:
        if ((o = find(r, GS_GRAPH_OBJ_GRAPH, e->graph)))
            drop(r, o);
        break;
    default: /* GS_GRAPH_TRIM, and ops of a newer writer: the sample says it all */
        break;
    }
    sampled(r, e);
}

const struct gs_revent *gs_graphs_failure(struct gs_replay *r, const struct gs_revent *e,
                                          struct gs_revent *out)
{
    struct gs_graphs *g = &r->graphs;
    if (e->tid != g->pending_tid ||
        (e->api != GS_API_cuGraphLaunch && e->api != GS_API_cuGraphLaunch_ptsz))
        return e;
    g->pending = 0;
    const struct gs_graph_obj *x = find(r, GS_GRAPH_OBJ_EXEC, g->pending_exec);
    if (!x)
        return e;
    /* the pool's growth at each node, as the launch would have run */
    const struct gs_graph_pool *p = pool_of(r, e->device);
    uint64_t use = p->live, largest = 0;
    const struct gs_graph_node *hit = NULL, *big = NULL;
    for (size_t i = 0; i < x->n && !hit; i++) {
        const struct gs_graph_node *n = &x->nodes[i];
        if (n->is_free) {
            for (size_t j = 0; j < i; j++)
                if (!x->nodes[j].is_free && x->nodes[j].addr == n->addr) {
                    use -= x->nodes[j].size < use ? x->nodes[j].size : use;
                    break;
                }
            continue;
        }
        use += n->size;
        if (n->size > largest) {
            largest = n->size;
            big = n;
        }
        if (e->free_bytes != UINT64_MAX && use > p->reserved && use - p->reserved > e->free_bytes)
            hit = n;
    }
    if (!hit)
        hit = big;
    if (!hit)
        return e;
    *out = *e;
    out->size = hit->size;
    out->stack_id = hit->stack_id;
    return out;
}

/* ---- what the checkpoint's loader builds graphs with ---- */

struct gs_graph_pool *gs_graphs_pool(struct gs_replay *r, int32_t device)
{
    return pool_of(r, device);
}

struct gs_graph_obj *gs_graphs_find(struct gs_replay *r, uint32_t which, uint64_t handle)
{
    return find(r, which, handle);
}

struct gs_graph_obj *gs_graphs_make(struct gs_replay *r, uint32_t which, uint64_t handle)
{
    return make(r, which, handle);
}

int gs_graphs_add_node(struct gs_graph_obj *o, const struct gs_graph_node *n)
{
    return add_node(o, n);
}
