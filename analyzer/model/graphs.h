/*
 * graphs.h - CUDA graphs as the replay model follows them (analyzer/model/
 * graphs.c, docs/design.md "CUDA graphs"): graphs, executables, captures,
 * and each device's graph memory pool.
 *
 * Included by: analyzer/model/model.h (which the others include)
 */
#ifndef GPUSHIM_MODEL_GRAPHS_H
#define GPUSHIM_MODEL_GRAPHS_H

#include <stddef.h>
#include <stdint.h>

#include "analyzer/trace/trace.h" /* GS_MAX_DEVICES */

struct gs_idmap;

/* A memory node, as recorded. */
struct gs_graph_node {
    uint64_t addr, size; /* size: allocation nodes */
    uint32_t stack_id, api;
    int32_t device;
    uint32_t is_free;
};
enum gs_graph_which { GS_GRAPH_OBJ_GRAPH = 0, GS_GRAPH_OBJ_EXEC, GS_GRAPH_OBJ_CAPTURE };
/* A graph, an executable (with the nodes of its graph when instantiated) or
 * a capture under way (by its stream). */
struct gs_graph_obj {
    uint32_t which;   /* enum gs_graph_which */
    uint64_t handle;  /* CUgraph, CUgraphExec, or the capturing stream */
    uint64_t graph;   /* an executable's graph */
    uint64_t flags;   /* an executable's instantiation flags */
    int32_t device;   /* of its first node (-1: none) */
    uint64_t launches;
    struct gs_graph_node *nodes;
    size_t n, cap;
};
/* A device's graph memory pool (index GS_MAX_DEVICES: an unknown device). */
struct gs_graph_pool {
    int seen;
    uint64_t reserved;    /* what it holds, as the replay follows it */
    uint64_t live;        /* bytes of graph allocations live */
    uint64_t sampled_reserved, sampled_used, samples; /* the driver's, at the last sample */
    uint64_t peak_reserved;
    uint64_t launches, launches_failed;
    uint32_t stack_id, api; /* the call that last grew it (its reserve is held there) */
    uint64_t prev_reserved; /* reserved when the reserve was last set */
};
struct gs_graphs {
    int seen; /* any graph record */
    struct gs_graph_obj *objs;
    size_t nobjs, objs_cap;
    struct gs_graph_pool pools[GS_MAX_DEVICES + 1];
    struct gs_idmap *live; /* graph allocation address -> device + 1 */
    uint64_t nodes;        /* memory nodes recorded */
    uint64_t execs_made;   /* executables instantiated */
    /* a launch that failed for memory, whose failed allocation comes next */
    int pending;
    uint32_t pending_tid;
    uint64_t pending_exec;
};

/* The number of graphs, executables alive. */
size_t gs_graphs_count(const struct gs_graphs *g, enum gs_graph_which which);

#endif
