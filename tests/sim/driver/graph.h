/*
 * graph.h - CUDA graphs' memory: graphs and their memory nodes (graph.c), graph allocations
 * and the graph memory pool (graphmem.c), stream capture (capture.c); the design is graph.c's.
 *
 * Included by: graph.c, graphmem.c, capture.c, and the sections that free or allocate what a
 * graph or a capture may hold: alloc.c, memory.c (after sim.h).
 */
#ifndef GS_SIM_GRAPH_H
#define GS_SIM_GRAPH_H

#include "tests/sim/driver/sim.h"

/* A CUgraph: its memory nodes, in the order they were added (graph.c). */
struct sim_graph {
    struct sim_gnode **nodes;
    size_t n, cap;
    int execs; /* its executables alive */
};

/* A graph allocation's address, reserved while its node exists or it is live. */
struct sim_galloc {
    uint64_t addr, size;
    int dev;
    int node; /* its allocation node and the executables' copies of it that exist */
    int live; /* allocated by a run and not yet freed */
};

/* A device's graph memory pool (graphmem.c). */
struct sim_gpool {
    uint64_t used, reserved, used_high, reserved_high;
};

#pragma GCC visibility push(hidden)

/* ---- graph.c (the _locked functions: lock held) ---- */
extern struct reg graphs, gexecs;
gs_curesult alloc_node_locked(struct sim_graph *g, int dev, uint64_t bytesize,
                              gs_cudeviceptr *dptr, struct sim_gnode **node);
gs_curesult free_node_locked(struct sim_graph *g, gs_cudeviceptr dptr,
                             struct sim_gnode **node);

/* ---- graphmem.c (lock held) ---- */
extern struct sim_gpool gpool[SIM_MAX_DEVICES];
extern struct sim_galloc *gallocs;
extern size_t ngallocs, gallocs_cap;
struct sim_galloc *galloc_find(uint64_t addr);
void galloc_reap(struct sim_galloc *g);
void gpool_use(int dev, uint64_t size);
void gpool_reserve(int dev, uint64_t reserved);
void galloc_end(struct sim_galloc *g);
int graph_free_locked(gs_cudeviceptr dptr);

/* ---- capture.c (the _locked functions: lock held) ---- */
int capture_prohibits(void);
gs_curesult capture_alloc_locked(struct gs_custream_st *s, uint64_t size,
                                 gs_cudeviceptr *dptr);
gs_curesult capture_free_locked(struct gs_custream_st *s, gs_cudeviceptr dptr);

#pragma GCC visibility pop

#endif
