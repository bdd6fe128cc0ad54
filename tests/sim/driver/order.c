/*
 * order.c - stream order: the streams' vector clocks, pending frees of pool memory, simcuda_use
 * marks and reuse hazards.
 *
 * Design
 *   - Stream order. No work runs, but each stream's operations (frees,
 *     event records, simcuda_use marks) are numbered, and a vector clock
 *     per stream says how far into every stream's work it is ordered after:
 *     cuStreamWaitEvent joins the event's clock (taken at cuEventRecord),
 *     the legacy default stream and the blocking streams join each other's
 *     (CUDA's implicit synchronization; the NULL, legacy and per-thread
 *     streams are one default stream per device here). Work completes only
 *     when the host synchronizes (a stream, its device, an event after it;
 *     cuEventQuery counts as one). A cuMemFreeAsync of pool memory is
 *     pending: the freeing stream may reuse it at once, another stream once
 *     ordered after the free (REUSE_FOLLOW_EVENT_DEPENDENCIES), every stream
 *     once the free completed; an allocation that cannot grow the pool
 *     waits for all its pending frees (REUSE_ALLOW_INTERNAL_DEPENDENCIES).
 *     A pending free is never handed out to a stream not ordered after it.
 */
#include "tests/sim/driver/sim.h"
#include "tests/sim/driver/order.h"

/* ---- clocks, pending frees, uses, hazards (lock held) ------------------ */

/* A cuMemFreeAsync of pool memory that not every stream may reuse yet. */
struct pending {
    uint64_t addr, size;
    int device;
    struct gs_cupool_st *pool;
    int order;          /* the freeing stream */
    uint64_t pos;       /* the free's position in it */
    struct clock clock; /* the free's */
};

struct order *orders;
static size_t norders, orders_cap;
static struct pending *pendings;
static size_t npendings, pendings_cap;
struct use *uses;
size_t nuses, uses_cap;
unsigned long hazards;

static uint64_t clock_get(const struct clock *c, int i)
{
    return (size_t)i < c->n ? c->v[i] : 0;
}

/* Raises entry i to at least v; -1 when out of memory. */
static int clock_raise(struct clock *c, int i, uint64_t v)
{
    if ((size_t)i >= c->n) {
        size_t cap = c->n;
        uint64_t *nv = grow(c->v, &cap, (size_t)i + 1, sizeof *nv);

        if (!nv)
            return -1;
        c->v = nv;
        c->n = cap;
    }
    if (c->v[i] < v)
        c->v[i] = v;
    return 0;
}

/* c comes after everything src comes after. */
int clock_join(struct clock *c, const struct clock *src)
{
    for (size_t i = src->n; i-- > 0;)
        if (src->v[i] && clock_raise(c, (int)i, src->v[i]) != 0)
            return -1;
    return 0;
}

/* c becomes src. */
int clock_set(struct clock *c, const struct clock *src)
{
    for (size_t i = 0; i < c->n; i++)
        c->v[i] = 0;
    return clock_join(c, src);
}

int order_add(int dev, int blocking)
{
    struct order *v = grow(orders, &orders_cap, norders + 1, sizeof *v);

    if (!v)
        return -1;
    orders = v;
    orders[norders] = (struct order){.device = dev, .blocking = blocking};
    return (int)norders++;
}

/* The default streams come first, made on first use. */
int orders_ready(void)
{
    while (norders < (size_t)cfg.ndevices)
        if (order_add((int)norders, 1) < 0)
            return -1;
    return 0;
}

/* The order of stream s, whose device (stream_device's) is dev; -1 if
 * none. */
int order_of(gs_custream s, int dev)
{
    long i;

    if (orders_ready() != 0)
        return -1;
    if (!sim_created_stream(s))
        return dev;
    i = reg_index(&streams, s);
    return i < 0 ? -1 : ((struct gs_custream_st *)streams.v[i])->order;
}

/* CUDA's implicit synchronization: the default stream comes after the
 * blocking streams' work before it, and they after its; non-blocking
 * streams after neither. */
int order_implicit(int o)
{
    struct order *x = &orders[o];

    if (!x->blocking)
        return 0;
    if (o != x->device)
        return clock_join(&x->clock, &orders[x->device].clock);
    for (size_t i = (size_t)cfg.ndevices; i < norders; i++)
        if (orders[i].device == x->device && orders[i].blocking &&
            clock_join(&x->clock, &orders[i].clock) != 0)
            return -1;
    return 0;
}

/* An operation on stream o: its position, 0 when out of memory. */
uint64_t order_next(int o)
{
    uint64_t pos = clock_get(&orders[o].clock, o) + 1;

    if (order_implicit(o) != 0 || clock_raise(&orders[o].clock, o, pos) != 0)
        return 0;
    return pos;
}

/* Does what stream o (-1: none) does now come after stream at's work up to
 * pos: the same stream, ordered after it, or that work completed? */
static int order_after(int o, int at, uint64_t pos)
{
    return at == o || (o >= 0 && clock_get(&orders[o].clock, at) >= pos) ||
           orders[at].done >= pos;
}

/* Pending free i is over: its memory is the pool's free memory again. */
static struct gs_cupool_st *pending_release(size_t i)
{
    struct pending *r = &pendings[i];
    struct gs_cupool_st *pool = r->pool;

    space_put(&devices[r->device].space, r->addr, r->size);
    pool->pending -= r->size;
    free(r->clock.v);
    *r = pendings[--npendings];
    return pool;
}

/* The work c comes after has completed: its frees' memory is free for
 * every stream, its uses are over. */
void order_complete(const struct clock *c)
{
    for (size_t i = 0; i < c->n && i < norders; i++)
        if (orders[i].done < c->v[i])
            orders[i].done = c->v[i];
    for (size_t i = npendings; i-- > 0;)
        if (orders[pendings[i].order].done >= pendings[i].pos)
            pool_reap(pending_release(i));
    for (size_t i = nuses; i-- > 0;)
        if (orders[uses[i].order].done >= uses[i].pos)
            uses[i] = uses[--nuses];
}

/* Everything on device dev completes (a context synchronize). */
void order_complete_device(int dev)
{
    for (size_t i = 0; i < norders; i++)
        if (orders[i].device == dev)
            order_complete(&orders[i].clock);
}

/* A free of pool memory e on stream o: pending until o's work reaches it
 * (for o at once, for the streams ordered after it then). */
int pending_add(const struct live *e, int o)
{
    uint64_t pos = order_next(o);
    struct pending *v;
    struct pending *r;

    if (!pos || !(v = grow(pendings, &pendings_cap, npendings + 1, sizeof *v)))
        return -1;
    pendings = v;
    r = &pendings[npendings];
    *r = (struct pending){e->addr, e->size, e->device, e->pool, o, pos, {NULL, 0}};
    if (clock_join(&r->clock, &orders[o].clock) != 0) {
        free(r->clock.v);
        return -1;
    }
    npendings++;
    e->pool->used -= e->size;
    e->pool->pending += e->size;
    return 0;
}

/* The pending free of pool holding size bytes that stream o may reuse
 * under the pool's default policy (freed on o, or o ordered after the free
 * with REUSE_FOLLOW_EVENT_DEPENDENCIES on), lowest address first; -1 if
 * none. Completed frees are already the pool's free memory. */
long pending_fit(const struct gs_cupool_st *pool, int o, uint64_t size)
{
    int follow = pool->reuse[SIM_CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES - 1];
    long best = -1;

    for (size_t i = 0; i < npendings; i++) {
        const struct pending *r = &pendings[i];

        if (r->pool == pool && r->size >= size && (best < 0 || r->addr < pendings[best].addr) &&
            (r->order == o || (follow && order_after(o, r->order, r->pos))))
            best = (long)i;
    }
    return best;
}

/* Stream o takes size bytes at the front of pending free i, coming after
 * the free; the rest stays pending. */
int pending_take(size_t i, uint64_t size, int o, uint64_t *addr)
{
    struct pending *r = &pendings[i];

    if (clock_join(&orders[o].clock, &r->clock) != 0)
        return -1;
    *addr = r->addr;
    r->addr += size;
    r->size -= size;
    r->pool->pending -= size;
    if (!r->size) {
        free(r->clock.v);
        *r = pendings[--npendings];
    }
    return 0;
}

/* The pool cannot grow: with REUSE_ALLOW_INTERNAL_DEPENDENCIES, stream o
 * waits for the pool's pending frees, whose memory becomes the pool's free
 * memory (any stream may then take it). 0 if there were none. */
int pending_wait_all(struct gs_cupool_st *pool, int o)
{
    int any = 0;

    if (!pool->reuse[SIM_CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES - 1])
        return 0;
    for (size_t i = npendings; i-- > 0;)
        if (pendings[i].pool == pool && clock_join(&orders[o].clock, &pendings[i].clock) == 0) {
            pending_release(i);
            any = 1;
        }
    return any;
}

/* An allocation on stream o (-1: none) got [addr, addr + size): if a
 * stream it does not come after may still be using some of it, that is a
 * reuse hazard, said on stderr and counted. */
void hazard_check(const char *api, int o, uint64_t addr, uint64_t size)
{
    for (size_t i = 0; i < nuses; i++) {
        const struct use *u = &uses[i];

        if (u->addr < addr + size && addr < u->addr + u->size &&
            !order_after(o, u->order, u->pos)) {
            hazards++;
            fprintf(stderr,
                    "simcuda: reuse hazard: %s on stream #%d got 0x%llx (%llu bytes), "
                    "which stream #%d may still be using\n",
                    api, o, (unsigned long long)addr, (unsigned long long)size, u->order);
            return;
        }
    }
}
