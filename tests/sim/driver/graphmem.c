/*
 * graphmem.c - the graph memory pool: graph allocations' addresses, the pool's bytes
 * (cuDeviceGraphMemTrim, cuDeviceGetGraphMemAttribute, cuDeviceSetGraphMemAttribute). The
 * design: graph.c.
 */
#include "tests/sim/driver/sim.h"
#include "tests/sim/driver/entry.h"
#include "tests/sim/driver/graph.h"

struct sim_galloc *gallocs;
size_t ngallocs, gallocs_cap;
struct sim_gpool gpool[SIM_MAX_DEVICES];

struct sim_galloc *galloc_find(uint64_t addr)
{
    for (size_t i = 0; i < ngallocs; i++)
        if (gallocs[i].addr == addr)
            return &gallocs[i];
    return NULL;
}

/* Gives back a graph allocation's address once nothing holds it. */
void galloc_reap(struct sim_galloc *g)
{
    if (g->node || g->live)
        return;
    space_put(&devices[g->dev].space, g->addr, g->size);
    *g = gallocs[--ngallocs];
}

void gpool_use(int dev, uint64_t size)
{
    gpool[dev].used += size;
    if (gpool[dev].used > gpool[dev].used_high)
        gpool[dev].used_high = gpool[dev].used;
}

void gpool_reserve(int dev, uint64_t reserved)
{
    if (reserved <= gpool[dev].reserved)
        return;
    devices[dev].used += reserved - gpool[dev].reserved;
    gpool[dev].reserved = reserved;
    if (reserved > gpool[dev].reserved_high)
        gpool[dev].reserved_high = reserved;
}

/* A live graph allocation freed: its bytes go back to the graph pool. */
void galloc_end(struct sim_galloc *g)
{
    g->live = 0;
    gpool[g->dev].used -= g->size;
    galloc_reap(g);
}

int graph_free_locked(gs_cudeviceptr dptr)
{
    struct sim_galloc *g = galloc_find(dptr);

    if (!g || !g->live)
        return 0;
    galloc_end(g);
    return 1;
}

gs_curesult sim_cuDeviceGraphMemTrim(gs_cudevice device)
{
    uint64_t keep;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!valid_device(device))
        return GS_CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&lock);
    keep = round_up(gpool[device].used, SIM_GRANULE);
    if (keep < gpool[device].reserved) {
        devices[device].used -= gpool[device].reserved - keep;
        gpool[device].reserved = keep;
    }
    pthread_mutex_unlock(&lock);
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuDeviceGraphMemTrim)

static gs_curesult graph_mem_attr(gs_cudevice device, gs_cugraphmemattr attr, void *value,
                                  int set)
{
    uint64_t *v;
    gs_curesult rc = GS_CUDA_SUCCESS;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!valid_device(device))
        return GS_CUDA_ERROR_INVALID_DEVICE;
    if (!value || attr < GS_CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT ||
        attr > GS_CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH)
        return GS_CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    v = attr == GS_CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT       ? &gpool[device].used
        : attr == GS_CU_GRAPH_MEM_ATTR_USED_MEM_HIGH        ? &gpool[device].used_high
        : attr == GS_CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT ? &gpool[device].reserved
                                                            : &gpool[device].reserved_high;
    if (!set)
        memcpy(value, v, sizeof *v);
    else if (attr == GS_CU_GRAPH_MEM_ATTR_USED_MEM_HIGH && !*(uint64_t *)value)
        *v = gpool[device].used;
    else if (attr == GS_CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH && !*(uint64_t *)value)
        *v = gpool[device].reserved;
    else
        rc = GS_CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&lock);
    return rc;
}

gs_curesult sim_cuDeviceGetGraphMemAttribute(gs_cudevice device, gs_cugraphmemattr attr,
                                             void *value)
{
    return graph_mem_attr(device, attr, value, 0);
}
SIM_EXPORT(cuDeviceGetGraphMemAttribute)

gs_curesult sim_cuDeviceSetGraphMemAttribute(gs_cudevice device, gs_cugraphmemattr attr,
                                             void *value)
{
    return graph_mem_attr(device, attr, value, 1);
}
SIM_EXPORT(cuDeviceSetGraphMemAttribute)
