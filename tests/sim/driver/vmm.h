/*
 * vmm.h - memory reached through handles rather than cuMemAlloc: cuMemCreate's physical
 * allocations and their mappings (vmm.c), multicast objects (multicast.c, which are physical
 * allocations too), handles opened with cuIpcOpenMemHandle (ipc.c).
 *
 * Included by: vmm.c, multicast.c, ipc.c, and pointer.c (which looks addresses up in all of
 * them), after sim.h.
 */
#ifndef GS_SIM_VMM_H
#define GS_SIM_VMM_H

#include "tests/sim/driver/sim.h"

/* CUmemAccessDesc */
struct sim_access_desc {
    gs_cumemlocation location;
    int flags;
};

/* A cuMemCreate allocation. */
struct phys {
    uint64_t serial; /* 0: free slot */
    uint64_t size;
    gs_cumemallocationprop prop;
    int device; /* charged device; -1: host memory */
    int refs;   /* cuMemCreate/Retain/Import minus cuMemRelease */
    int maps;   /* mappings of it, and bindings of it to multicast objects */
    int multicast;          /* a cuMulticastCreate object: device is -1 */
    unsigned mc_devices;    /* its team's size (numDevices) */
    uint32_t mc_team;       /* devices added to it, a bit each */
};

/* A handle opened with cuIpcOpenMemHandle. */
struct ipc_open {
    gs_cuipcmemhandle handle;
    uint64_t addr, size;
    int refs;
};

#pragma GCC visibility push(hidden)

/* ---- vmm.c (lock held) ---- */
extern struct rangeset mappings;
extern struct phys *phys_tab;
int handle_phys(gs_cumemhandle h);
gs_cumemhandle handle_new(int i);
int phys_new(void);
void phys_maybe_free(int i);

/* ---- ipc.c (lock held) ---- */
extern struct ipc_open *ipc_opens;
extern size_t nipc_opens;

#pragma GCC visibility pop

#endif
