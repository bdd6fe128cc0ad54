/*
 * sim.h - what the files of the simulated CUDA driver (tests/sim/driver/, built as
 * libcuda.so.1) share: constants, the structures of its objects, the state one mutex
 * guards, and the helpers and entry points more than one file uses. Each file is a section
 * of the CUDA Driver API reference (its top comment says which); state.c, support.c,
 * space.c, pools.c, alloc.c and order.c hold what the sections share.
 *
 * Included by: every file of tests/sim/driver/ (its .c files and its other headers) alone.
 *
 * The driver lets gpushim's tests run where there is no GPU: it exports the real driver's
 * names with the real ABIs (the gs_ declarations of include/gpushim_cuda.h) and behaves
 * like the real driver wherever a memory profiler can tell.
 *
 * Design
 *   - Nothing but cuInit, cuDriverGetVersion, cuGetProcAddress[_v2] and the
 *     error-string lookups works before cuInit (CUDA_ERROR_NOT_INITIALIZED).
 *     Allocation calls need a current context (CUDA_ERROR_INVALID_CONTEXT),
 *     except the virtual-memory ones, which name their device. The current
 *     context is thread-local; each device has one primary context and one
 *     default memory pool, both static objects.
 *   - Device memory is never touched, only accounted. Each device owns 1 TiB
 *     of fake address space at SIM_BASE + device * SIM_SPAN; cuMemAddress-
 *     Reserve ranges come from a region of their own (SIM_VA_BASE) and
 *     cuIpcOpenMemHandle addresses from another (SIM_IPC_BASE). Sizes are
 *     rounded up to 512 bytes. A device's used bytes are its cuMemAlloc-
 *     style allocations, its cuMemCreate physical memory, its arrays and its
 *     pools' reserved bytes, so cuMemGetInfo reports exactly capacity - used.
 *   - Everything declared here is hidden (#pragma GCC visibility below): it binds inside
 *     libcuda.so.1 as a static would, so an interposer exporting the same names never
 *     replaces it (getproc.c), and nothing of it is exported.
 *
 * Not simulated: releasing a primary context to zero references does not
 * free the allocations made in it; opportunistic reuse (of frees that
 * completed without a synchronize); cuMemFree does not synchronize; an
 * exported token does not keep its allocation alive; IPC handles
 * are not checked against the exporter's live allocations.
 */
#ifndef GS_SIM_H
#define GS_SIM_H

#include "gpushim_cuda.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SIM_DRIVER_VERSION 13000
#define SIM_MAX_DEVICES 16
#define SIM_ALIGN 512ull
#define SIM_BASE 0x700000000000ull
#define SIM_SPAN (1ull << 40)
#define SIM_DEFAULT_MEMORY (16ull << 30)
#define SIM_GRANULE (2ull << 20) /* VMM granularity and pool chunk */
#define SIM_VA_BASE 0x720000000000ull
#define SIM_IPC_BASE 0x740000000000ull
#define SIM_REGION_SPAN (1ull << 44)
#define SIM_PAGE 4096ull
#define SIM_FIRST_TOKEN 1000000

/* cuda.h values that gpushim_cuda.h does not carry */
#define SIM_CU_MEM_ATTACH_HOST 2
#define SIM_CU_MEMORYTYPE_DEVICE 2
#define SIM_CU_POINTER_ATTRIBUTE_CONTEXT 1
#define SIM_CU_POINTER_ATTRIBUTE_MEMORY_TYPE 2
#define SIM_CU_POINTER_ATTRIBUTE_DEVICE_POINTER 3
#define SIM_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL 9
#define SIM_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR 11
#define SIM_CU_POINTER_ATTRIBUTE_RANGE_SIZE 12
#define SIM_CUDA_ERROR_INVALID_HANDLE 400
#define SIM_CUDA_ERROR_ILLEGAL_STATE 401
#define SIM_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED 712
#define SIM_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED 713
#define SIM_CUDA_ERROR_UNKNOWN 999
#define SIM_CUDA_ERROR_NOT_PERMITTED 800
#define SIM_CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED 102
#define SIM_CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED 110
#define SIM_CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED 115
#define SIM_CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED 128
#define SIM_CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID 134
#define SIM_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR 1
#define SIM_CU_MEM_ALLOC_GRANULARITY_RECOMMENDED 1
#define SIM_CU_MEM_ACCESS_FLAGS_PROT_READ 1
#define SIM_CU_MEM_ACCESS_FLAGS_PROT_READWRITE 3
#define SIM_CU_MEMHOSTALLOC_ALL 0x7    /* PORTABLE | DEVICEMAP | WRITECOMBINED */
#define SIM_CU_MEMHOSTREGISTER_ALL 0xf /* ... | IOMEMORY | READ_ONLY */
#define SIM_CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS 1
#define SIM_CU_STREAM_NON_BLOCKING 1
#define SIM_CU_STREAM_LEGACY ((gs_custream)0x1)
#define SIM_CU_STREAM_PER_THREAD ((gs_custream)0x2)

/* A stream cuStreamCreate made: not NULL, the legacy or the per-thread one. */
static inline int sim_created_stream(gs_custream s)
{
    return s && s != SIM_CU_STREAM_LEGACY && s != SIM_CU_STREAM_PER_THREAD;
}
#define SIM_CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES 1
#define SIM_CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC 2
#define SIM_CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES 3
#define SIM_CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH 6
#define SIM_CU_MEMPOOL_ATTR_USED_MEM_HIGH 8

/* Exported names are aliases of the hidden sim_ definitions (see getproc.c); an
 * alias must be in the file that defines its function. */
#define SIM_EXPORT(name)                                                           \
    extern __typeof__(sim_##name) name                                             \
        __attribute__((alias("sim_" #name), visibility("default")));

/* Declaring the header's X-macro lists makes the compiler check that each
 * sim_ definition has exactly the declared ABI. */
#define SIM_DECLARE(name, ret, params) ret name params;
GS_DRIVER_HOOKED(SIM_DECLARE)
GS_DRIVER_GETTERS(SIM_DECLARE)
GS_DRIVER_USED(SIM_DECLARE)
#undef SIM_DECLARE

struct gs_cuctx_st {
    int device;
};

struct gs_cupool_st {
    int device;
    int destroyed; /* by cuMemPoolDestroy; freed once used drops to 0 */
    uint64_t used, reserved, threshold, max_size, used_high, reserved_high;
    uint64_t pending; /* freed on a stream, not yet reusable by every stream */
    int reuse[3];     /* the REUSE_* attributes, by value - 1 */
};

struct sim_graph; /* graph.h */

struct gs_custream_st {
    int device;
    unsigned int flags;
    int order; /* its index in orders (order.c) */
    struct sim_graph *capture; /* the graph its capture under way makes; NULL: none */
    int capture_mode;          /* that capture's CUstreamCaptureMode */
    int capture_invalidated;   /* a call broke that capture (cuStreamGetDevice: graph.c) */
};

struct hole {
    uint64_t off, len;
};

/* A region of fake address space (space.c): holes below a bump pointer. No hole ends
 * at top (it would have been given back to the bump pointer). */
struct space {
    uint64_t base, limit, top;
    struct hole *holes; /* sorted by offset, never adjacent */
    size_t nholes, holes_cap;
};

struct device {
    uint64_t capacity, used;
    struct space space;
    int ctx_refs;
    struct gs_cuctx_st ctx;
    struct gs_cupool_st pool;      /* the default pool */
    struct gs_cupool_st *cur_pool; /* cuDeviceSetMemPool's */
};

struct live {
    gs_cudeviceptr addr; /* 0: empty slot */
    uint64_t size;       /* rounded, as accounted */
    int device;
    int managed;
    struct gs_cupool_st *pool; /* the pool charged, NULL: the device */
    uint64_t serial;           /* unique per allocation, for IPC handles */
    void *host;                /* SIMCUDA_HOST_MALLOC block */
};

/* An address range: a reservation, a mapping or pinned host memory. */
struct range {
    uint64_t addr, size;
    uint64_t offset;       /* mapping: offset into the physical allocation */
    gs_cumemhandle handle; /* mapping: the handle it was mapped with */
    int phys;              /* mapping: index of the physical allocation */
    int count;             /* reservation: its mappings; host: HOST_* */
};

enum { HOST_ALLOCATED = 1, HOST_REGISTERED = 2 };

struct rangeset {
    struct range *v; /* sorted by address, disjoint */
    size_t n, cap;
};

/* A set of heap objects handed out as handles. */
struct reg {
    void **v;
    size_t n, cap;
};

/* The configuration read_env takes from the environment (state.c). */
struct sim_config {
    int ndevices;
    uint64_t capacity;
    int host_malloc;
    int log;
    int fabric; /* SIMCUDA_FABRIC */
};

/* What the files define for every other, by file; what only some need is in the headers
 * of its subject: order.h (stream order), alloc.h (allocate and free), graph.h (graphs,
 * graph memory, stream capture), vmm.h (mappings, physical allocations, IPC), entry.h (the
 * entry points getproc.c's table names beyond the header's lists). Hidden: these bind
 * inside libcuda.so.1, as statics would, and are never exported. */
#pragma GCC visibility push(hidden)

/* The entry points, sim_ + the name SIM_EXPORT exports, each defined in the file of its
 * section (getproc.c's table takes their addresses): those of the header's lists here,
 * the others in entry.h. */
#define SIM_DECLARE_SIM(name, ret, params) ret sim_##name params;
GS_DRIVER_HOOKED(SIM_DECLARE_SIM)
GS_DRIVER_GETTERS(SIM_DECLARE_SIM)
GS_DRIVER_USED(SIM_DECLARE_SIM)
#undef SIM_DECLARE_SIM

/* ---- state.c: lock guards the rest; cfg is written once, initialized is atomic ---- */
extern struct sim_config cfg;
extern pthread_once_t env_once;
extern pthread_mutex_t lock;
extern int initialized; /* atomic: set once cuInit succeeded */
extern struct device devices[SIM_MAX_DEVICES];
extern struct live *table;
extern size_t table_cap, table_count;
extern __thread struct gs_cuctx_st *current_ctx;
extern struct reg pools, arrays, mip_arrays, streams;
extern uint64_t next_serial;
__attribute__((format(printf, 1, 2))) void sim_log(const char *fmt, ...);
void pool_init(struct gs_cupool_st *p, int device);
void read_env(void);

/* ---- support.c ---- */
int is_initialized(void);
int valid_device(gs_cudevice dev);
struct gs_cuctx_st *ctx_of(const void *p);
int current_device(void);
uint64_t round_up(uint64_t n, uint64_t align);
void *grow(void *v, size_t *cap, size_t need, size_t elem);
struct range *rs_find(const struct rangeset *s, uint64_t addr);
int rs_overlaps(const struct rangeset *s, uint64_t addr, uint64_t size);
int rs_insert(struct rangeset *s, const struct range *r);
void rs_remove(struct rangeset *s, size_t i, size_t count);
long rs_run(const struct rangeset *s, uint64_t addr, uint64_t size, size_t *count);
int reg_add(struct reg *r, void *p);
long reg_index(const struct reg *r, const void *p);
void reg_del(struct reg *r, size_t i);
size_t slot_find(gs_cudeviceptr addr);
int table_grow(void);
struct live *table_get(gs_cudeviceptr addr);
struct live *table_containing(gs_cudeviceptr addr);
void table_remove(size_t i);

/* ---- space.c ---- */
int space_take(struct space *s, uint64_t len, uint64_t align, uint64_t *addr);
int space_take_at(struct space *s, uint64_t addr, uint64_t len);
void space_put(struct space *s, uint64_t addr, uint64_t len);

/* ---- stream.c ---- */
gs_curesult stream_device(gs_custream s, int *dev);

/* ---- pools.c ---- */
struct gs_cupool_st *pool_of(const void *p);
void pool_shrink(struct gs_cupool_st *p, uint64_t keep);
void pool_reap(struct gs_cupool_st *p);
void trim_pools(int dev);

#pragma GCC visibility pop

#endif
