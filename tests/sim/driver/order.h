/*
 * order.h - stream order (order.c): the streams' vector clocks, pending frees of pool memory,
 * simcuda_use marks and reuse hazards; the design is order.c's.
 *
 * Included by: the files of tests/sim/driver/ that order work on streams: order.c, alloc.c,
 * context.c, event.c, stream.c (after sim.h).
 */
#ifndef GS_SIM_ORDER_H
#define GS_SIM_ORDER_H

#include "tests/sim/driver/sim.h"

/* What a point in a stream's work comes after, as a vector clock: v[i] is
 * how far into stream i's work (its operations, counted from 1) it is
 * ordered after. A stream's clock is that of its next operation, its own
 * entry its position; an event's is that of the point it was recorded at;
 * a pending free's that of the free. */
struct clock {
    uint64_t *v;
    size_t n;
};

/* One stream: orders[d] is device d's default stream (the NULL, legacy and
 * per-thread streams alike), then each created stream in creation order.
 * Kept after cuStreamDestroy: its frees still complete in its order. */
struct order {
    int device;
    int blocking; /* a default stream, or created without NON_BLOCKING */
    struct clock clock;
    uint64_t done; /* its work up to here has completed */
};

/* simcuda_use: stream `order` uses the range from position pos on. */
struct use {
    uint64_t addr, size;
    int order;
    uint64_t pos;
};

#pragma GCC visibility push(hidden)

/* Lock held. */
extern struct order *orders;
extern struct use *uses;
extern size_t nuses, uses_cap;
extern unsigned long hazards;
int clock_join(struct clock *c, const struct clock *src);
int clock_set(struct clock *c, const struct clock *src);
int order_add(int dev, int blocking);
int orders_ready(void);
int order_of(gs_custream s, int dev);
int order_implicit(int o);
uint64_t order_next(int o);
void order_complete(const struct clock *c);
void order_complete_device(int dev);
int pending_add(const struct live *e, int o);
long pending_fit(const struct gs_cupool_st *pool, int o, uint64_t size);
int pending_take(size_t i, uint64_t size, int o, uint64_t *addr);
int pending_wait_all(struct gs_cupool_st *pool, int o);
void hazard_check(const char *api, int o, uint64_t addr, uint64_t size);

#pragma GCC visibility pop

#endif
