/*
 * driver.c - the simulated CUDA driver, built as libcuda.so.1.
 *
 * Owns: devices, primary contexts, the thread's current context, streams,
 * stream order and events, memory pools, the device-memory allocator, virtual memory management,
 * pinned host memory, arrays, IPC handles, CUDA graphs (stream capture,
 * graph memory nodes, the graph memory pool: the section "CUDA graphs")
 * and cuGetProcAddress. It lets
 * gpushim's tests run where there is no GPU: it exports the real driver's
 * names with the real ABIs (the gs_ declarations of include/gpushim_cuda.h)
 * and behaves like the real driver wherever a memory profiler can tell.
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
 *   - Addresses come from a first-fit list of holes (sorted by address,
 *     coalesced) and, when no hole fits, from a bump pointer. A freed range
 *     is a hole again, so later allocations reuse it, as the real one does.
 *   - Live allocations sit in an open-addressing hash table keyed by
 *     address (linear probing, backward-shift deletion). Reservations,
 *     mappings and pinned host ranges sit in sorted arrays.
 *   - Pools (cuMemAllocAsync, cuMemAllocFromPoolAsync): used is the sum of
 *     the live allocations from the pool; reserved grows in 2 MiB chunks to
 *     cover used and the pending frees (below) and is what the device is
 *     charged. A free returns bytes to the pool only; cuStreamSynchronize,
 *     cuEventSynchronize and cuCtxSynchronize shrink the reserved bytes of
 *     the device's pools to the chunks used and pending frees need or the
 *     release threshold (rounded up to a chunk), whichever is more;
 *     cuMemPoolTrimTo likewise with its own minimum.
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
 *   - Reuse hazards: the test-only simcuda_use(stream, ptr) marks ptr's
 *     allocation in use by the stream until its work completes; an
 *     allocation that gets part of it for a stream not ordered after that
 *     use is a hazard, said on stderr ("simcuda: reuse hazard: ...", streams
 *     by number: device d's default stream is #d, created streams follow in
 *     creation order) and counted (simcuda_hazards()).
 *   - Virtual memory: cuMemCreate makes a physical allocation (2 MiB
 *     granularity) with a reference count. The machine has no fabric: a
 *     requested FABRIC handle type is refused with CUDA_ERROR_NOT_SUPPORTED,
 *     what real drivers return on a GPU without fabric support (the one
 *     NCCL's ncclMemAlloc, PyTorch's ExpandableSegment::map and XLA's
 *     CudaRawMemoryAllocation::Create retry without FABRIC on, with
 *     CUDA_ERROR_NOT_PERMITTED, which a fabric GPU without an IMEX channel
 *     returns). Its handles are small integers,
 *     the lowest free one, reused once the allocation is gone, which is when
 *     the count is 0 and no mapping refers to it. Imports make a new handle
 *     for the same allocation; the "file descriptors" that cuMemExportTo-
 *     ShareableHandle writes are tokens from 1000000 up, valid in this
 *     process (and its forks) while the allocation lives.
 *   - Multicast objects (cuMulticastCreate) are handles of the same table
 *     with no device and no memory of their own: devices join the team
 *     (cuMulticastAddDevice) and bind their own physical memory
 *     (cuMulticastBindMem, cuMulticastBindAddr), which a binding keeps alive
 *     until cuMulticastUnbind, as a mapping does. The object is mapped with
 *     cuMemMap, exported and imported, and released with cuMemRelease like
 *     physical memory.
 *   - Pinned host memory (cuMemHostAlloc, cuMemAllocHost) is real, page-
 *     aligned heap memory; registrations are tracked by exact byte range.
 *     Neither consumes device capacity.
 *   - Arrays and mipmapped arrays are heap objects charged to the current
 *     context's device; their handles are the objects' addresses.
 *   - Streams are heap objects that remember their device; the NULL,
 *     legacy (0x1) and per-thread (0x2) streams mean the current context's.
 *   - One mutex guards all of this state and the context reference counts.
 *     It is held across fork() (pthread_atfork), so a child forked while
 *     another thread is inside the driver can use it.
 *   - cuGetProcAddress resolves base names through a table of this file's
 *     own static functions, never through the dynamic linker: a preloaded
 *     interposer exports the same names, and must get the driver's code.
 *     Exported names are aliases of those static functions for the same
 *     reason (taking an exported function's address inside a shared object
 *     would go through the GOT, which an interposer overrides).
 *
 * Environment
 *   SIMCUDA_DEVICES      device count (default 1, at most 16; 0: cuInit fails
 *                        with CUDA_ERROR_NO_DEVICE)
 *   SIMCUDA_MEMORY       capacity per device in bytes, suffix K/M/G/T for
 *                        KiB/MiB/GiB/TiB (default 16G, at most 1T)
 *   SIMCUDA_OTHER        bytes of each device that other processes hold (suffix
 *                        as SIMCUDA_MEMORY; default 0, at most the capacity):
 *                        neither free nor this process's
 *   SIMCUDA_HOST_MALLOC  1: each cuMemAlloc-style allocation (cuMemAlloc,
 *                        cuMemAllocPitch, cuMemAllocManaged, the async ones)
 *                        also holds a malloc(64), so a heap profiler sees one
 *                        heap event per device event
 *   SIMCUDA_LOG          1: trace calls to stderr
 *   SIMCUDA_FABRIC       1: the devices say they support FABRIC handles
 *                        (CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED),
 *                        as GPUs of an NVSwitch system do, and cuMemCreate
 *                        refuses one with CUDA_ERROR_NOT_PERMITTED, as they
 *                        do with no IMEX channel (NCCL asks the attribute
 *                        before it tries FABRIC)
 *
 * Not simulated: releasing a primary context to zero references does not
 * free the allocations made in it; opportunistic reuse (of frees that
 * completed without a synchronize); cuMemFree does not synchronize; an
 * exported token does not keep its allocation alive; IPC handles
 * are not checked against the exporter's live allocations.
 */
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
#define SIM_CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES 1
#define SIM_CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC 2
#define SIM_CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES 3
#define SIM_CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH 6
#define SIM_CU_MEMPOOL_ATTR_USED_MEM_HIGH 8

/* Exported names are aliases of the static sim_ definitions (see above). */
#define SIM_EXPORT(name)                                                           \
    extern __typeof__(sim_##name) name                                             \
        __attribute__((alias("sim_" #name), visibility("default")));

/* Declaring the header's X-macro lists makes the compiler check that each
 * definition below has exactly the declared ABI. */
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

struct sim_graph;

struct gs_custream_st {
    int device;
    unsigned int flags;
    int order; /* its index in orders (stream order, below) */
    struct sim_graph *capture; /* the graph its capture under way makes; NULL: none */
    int capture_mode;          /* that capture's CUstreamCaptureMode */
};

/* What CUarray and CUmipmappedArray handles point to. */
struct sim_array {
    int device;
    uint64_t size; /* rounded, as accounted */
};

/* CUmemAccessDesc */
struct sim_access_desc {
    gs_cumemlocation location;
    int flags;
};

/* What cuIpcGetMemHandle writes into the 64 bytes of a CUipcMemHandle. */
struct sim_ipc {
    char magic[8];
    int32_t pid, device;
    uint64_t dptr, size, serial;
};
_Static_assert(sizeof(struct sim_ipc) <= sizeof(gs_cuipcmemhandle), "IPC handle too small");

struct hole {
    uint64_t off, len;
};

/* A region of fake address space: holes below a bump pointer. No hole ends
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

/* Physical memory bound to a multicast object. */
struct mc_bind {
    uint64_t mc_serial; /* the object's */
    int mc, dev, phys;  /* the object's and the memory's allocation indexes */
    uint64_t mc_offset, size;
};

/* A cuMemExportToShareableHandle token. */
struct token {
    int fd, phys;
    uint64_t serial;
};

/* A handle opened with cuIpcOpenMemHandle. */
struct ipc_open {
    gs_cuipcmemhandle handle;
    uint64_t addr, size;
    int refs;
};

/* A set of heap objects handed out as handles. */
struct reg {
    void **v;
    size_t n, cap;
};

static struct {
    int ndevices;
    uint64_t capacity;
    int host_malloc;
    int log;
    int fabric; /* SIMCUDA_FABRIC */
} cfg;

static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int initialized; /* atomic: set once cuInit succeeded */
static struct device devices[SIM_MAX_DEVICES];
static struct live *table;
static size_t table_cap, table_count;
static __thread struct gs_cuctx_st *current_ctx;

static struct space va_space = {SIM_VA_BASE, SIM_REGION_SPAN, 0, NULL, 0, 0};
static struct space ipc_space = {SIM_IPC_BASE, SIM_REGION_SPAN, 0, NULL, 0, 0};
static struct rangeset reservations, mappings, host_ranges;
static struct phys *phys_tab;
static size_t phys_cap;
static int *handle_tab; /* handle h -> its phys index + 1; 0: free */
static size_t handle_cap;
static struct mc_bind *mc_binds;
static size_t nmc_binds, mc_binds_cap;
static struct token *tokens;
static size_t ntokens, tokens_cap;
static int next_token = SIM_FIRST_TOKEN;
static struct ipc_open *ipc_opens;
static size_t nipc_opens, ipc_opens_cap;
static struct reg pools, arrays, mip_arrays, streams;
static uint64_t next_serial = 1;

/* CUDA graphs: the section "CUDA graphs" near the end (lock held for each). */
static int capture_prohibits(void);
static gs_curesult capture_alloc_locked(struct gs_custream_st *s, uint64_t size,
                                        gs_cudeviceptr *dptr);
static gs_curesult capture_free_locked(struct gs_custream_st *s, gs_cudeviceptr dptr);
static int graph_free_locked(gs_cudeviceptr dptr);

/* ---- configuration and logging ---------------------------------------- */

__attribute__((format(printf, 1, 2))) static void sim_log(const char *fmt, ...)
{
    va_list ap;

    if (!cfg.log)
        return;
    va_start(ap, fmt);
    fputs("simcuda: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void env_warn(const char *name, const char *value)
{
    fprintf(stderr, "simcuda: ignoring %s=\"%s\"\n", name, value);
}

static long env_long(const char *name, long fallback)
{
    const char *s = getenv(name);
    char *end;
    long v;

    if (!s || !*s)
        return fallback;
    v = strtol(s, &end, 10);
    if (*end || v < 0 || *s < '0' || *s > '9') {
        env_warn(name, s);
        return fallback;
    }
    return v;
}

/* "123", "64K", "512M", "16G", "1T" -> bytes; fallback when malformed. */
static uint64_t env_bytes(const char *name, uint64_t fallback)
{
    const char *s = getenv(name);
    char *end;
    unsigned long long v;
    int shift = 0;

    if (!s || !*s)
        return fallback;
    v = strtoull(s, &end, 10);
    switch (*end) {
    case 'T': case 't': shift += 10; /* fall through */
    case 'G': case 'g': shift += 10; /* fall through */
    case 'M': case 'm': shift += 10; /* fall through */
    case 'K': case 'k': shift += 10; end++; break;
    default: break;
    }
    if (*end || *s < '0' || *s > '9') {
        env_warn(name, s);
        return fallback;
    }
    return v > SIM_SPAN >> shift ? SIM_SPAN : v << shift;
}

static void pool_init(struct gs_cupool_st *p, int device)
{
    *p = (struct gs_cupool_st){.device = device, .reuse = {1, 1, 1}};
}

static void read_env(void)
{
    long n = env_long("SIMCUDA_DEVICES", 1);

    cfg.ndevices = n > SIM_MAX_DEVICES ? SIM_MAX_DEVICES : (int)n;
    cfg.capacity = env_bytes("SIMCUDA_MEMORY", SIM_DEFAULT_MEMORY);
    uint64_t other = env_bytes("SIMCUDA_OTHER", 0);
    cfg.host_malloc = env_long("SIMCUDA_HOST_MALLOC", 0) == 1;
    cfg.log = env_long("SIMCUDA_LOG", 0) == 1;
    cfg.fabric = env_long("SIMCUDA_FABRIC", 0) == 1;
    for (int i = 0; i < SIM_MAX_DEVICES; i++) {
        struct device *d = &devices[i];

        d->capacity = cfg.capacity;
        d->used = other < cfg.capacity ? other : cfg.capacity;
        d->space.base = SIM_BASE + (uint64_t)i * SIM_SPAN;
        d->space.limit = SIM_SPAN;
        d->ctx.device = i;
        pool_init(&d->pool, i);
        d->cur_pool = &d->pool;
    }
}

static void fork_prepare(void)
{
    pthread_mutex_lock(&lock);
}

static void fork_done(void)
{
    pthread_mutex_unlock(&lock);
}

__attribute__((constructor)) static void sim_setup(void)
{
    pthread_atfork(fork_prepare, fork_done, fork_done);
}

/* ---- checks shared by the entry points -------------------------------- */

static int is_initialized(void)
{
    return __atomic_load_n(&initialized, __ATOMIC_ACQUIRE);
}

static int valid_device(gs_cudevice dev)
{
    return dev >= 0 && dev < cfg.ndevices;
}

static struct gs_cuctx_st *ctx_of(const void *p)
{
    for (int i = 0; i < cfg.ndevices; i++)
        if (p == &devices[i].ctx)
            return &devices[i].ctx;
    return NULL;
}

/* Initialized and a live context current: its device, else -error. */
static int current_device(void)
{
    int refs;

    if (!is_initialized())
        return -GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!current_ctx)
        return -GS_CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&lock);
    refs = devices[current_ctx->device].ctx_refs;
    pthread_mutex_unlock(&lock);
    return refs > 0 ? current_ctx->device : -GS_CUDA_ERROR_INVALID_CONTEXT;
}

static uint64_t round_up(uint64_t n, uint64_t align)
{
    return (n + align - 1) & ~(align - 1);
}

/* ---- growable arrays, range sets, handle registries (lock held) --------- */

/* v with room for need elements of elem bytes, the new ones zeroed; NULL
 * when out of memory (v stays valid). */
static void *grow(void *v, size_t *cap, size_t need, size_t elem)
{
    size_t n = *cap ? *cap : 16;
    char *p;

    if (need <= *cap)
        return v;
    while (n < need)
        n *= 2;
    p = realloc(v, n * elem);
    if (!p)
        return NULL;
    memset(p + *cap * elem, 0, (n - *cap) * elem);
    *cap = n;
    return p;
}

/* Index of the first range that ends above addr. */
static size_t rs_lower(const struct rangeset *s, uint64_t addr)
{
    size_t lo = 0, hi = s->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (s->v[mid].addr + s->v[mid].size <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static struct range *rs_find(const struct rangeset *s, uint64_t addr)
{
    size_t i = rs_lower(s, addr);

    return i < s->n && s->v[i].addr <= addr ? &s->v[i] : NULL;
}

static int rs_overlaps(const struct rangeset *s, uint64_t addr, uint64_t size)
{
    size_t i = rs_lower(s, addr);

    return i < s->n && s->v[i].addr < addr + size;
}

static int rs_insert(struct rangeset *s, const struct range *r)
{
    size_t i = rs_lower(s, r->addr);
    struct range *v = grow(s->v, &s->cap, s->n + 1, sizeof *v);

    if (!v)
        return -1;
    s->v = v;
    memmove(&v[i + 1], &v[i], (s->n - i) * sizeof *v);
    v[i] = *r;
    s->n++;
    return 0;
}

static void rs_remove(struct rangeset *s, size_t i, size_t count)
{
    memmove(&s->v[i], &s->v[i + count], (s->n - i - count) * sizeof *s->v);
    s->n -= count;
}

/* Index of the first of the whole, adjacent ranges that make up exactly
 * [addr, addr+size), their number in *count; -1 when there are none. */
static long rs_run(const struct rangeset *s, uint64_t addr, uint64_t size, size_t *count)
{
    size_t i = rs_lower(s, addr), j = i;
    uint64_t end = addr;

    if (i >= s->n || s->v[i].addr != addr)
        return -1;
    while (j < s->n && s->v[j].addr == end && end - addr < size)
        end += s->v[j++].size;
    if (end - addr != size)
        return -1;
    *count = j - i;
    return (long)i;
}

static int reg_add(struct reg *r, void *p)
{
    void **v = grow(r->v, &r->cap, r->n + 1, sizeof *v);

    if (!v)
        return -1;
    r->v = v;
    v[r->n++] = p;
    return 0;
}

static long reg_index(const struct reg *r, const void *p)
{
    for (size_t i = 0; p && i < r->n; i++)
        if (r->v[i] == p)
            return (long)i;
    return -1;
}

static void reg_del(struct reg *r, size_t i)
{
    r->v[i] = r->v[--r->n];
}

/* ---- live-allocation hash table (lock held) --------------------------- */

static size_t slot_home(gs_cudeviceptr addr)
{
    return (size_t)(((addr >> 9) * 0x9e3779b97f4a7c15ull) >> 20) & (table_cap - 1);
}

static size_t slot_find(gs_cudeviceptr addr)
{
    size_t i = slot_home(addr);

    while (table[i].addr && table[i].addr != addr)
        i = (i + 1) & (table_cap - 1);
    return i;
}

static int table_grow(void)
{
    struct live *old = table;
    size_t old_cap = table_cap;
    size_t cap = old_cap ? old_cap * 2 : 1024;
    struct live *fresh = calloc(cap, sizeof *fresh);

    if (!fresh)
        return -1;
    table = fresh;
    table_cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].addr)
            table[slot_find(old[i].addr)] = old[i];
    free(old);
    return 0;
}

static struct live *table_get(gs_cudeviceptr addr)
{
    struct live *e;

    if (!table_cap || !addr)
        return NULL;
    e = &table[slot_find(addr)];
    return e->addr ? e : NULL;
}

/* The live allocation whose range holds addr (an O(table) scan when addr
 * is not a base address). */
static struct live *table_containing(gs_cudeviceptr addr)
{
    struct live *e = table_get(addr);

    for (size_t i = 0; !e && i < table_cap; i++)
        if (table[i].addr && addr - table[i].addr < table[i].size)
            e = &table[i];
    return e;
}

/* Removes slot i, shifting back the entries that probed past it. */
static void table_remove(size_t i)
{
    size_t mask = table_cap - 1;

    for (size_t j = (i + 1) & mask; table[j].addr; j = (j + 1) & mask) {
        size_t k = slot_home(table[j].addr);

        /* j's entry may move to i only if its home is not in (i, j]. */
        if (((j - k) & mask) >= ((j - i) & mask)) {
            table[i] = table[j];
            i = j;
        }
    }
    table[i].addr = 0;
    table_count--;
}

/* ---- address spaces (lock held) ---------------------------------------- */

static void hole_delete(struct space *s, size_t i)
{
    memmove(&s->holes[i], &s->holes[i + 1], (s->nholes - i - 1) * sizeof *s->holes);
    s->nholes--;
}

static int hole_insert(struct space *s, size_t i, uint64_t off, uint64_t len)
{
    struct hole *h = grow(s->holes, &s->holes_cap, s->nholes + 1, sizeof *h);

    if (!h)
        return -1;
    s->holes = h;
    memmove(&h[i + 1], &h[i], (s->nholes - i) * sizeof *h);
    h[i] = (struct hole){off, len};
    s->nholes++;
    return 0;
}

/* Takes [off, off+len), which lies inside hole i, out of it. */
static int hole_carve(struct space *s, size_t i, uint64_t off, uint64_t len)
{
    struct hole *h = &s->holes[i];
    uint64_t end = h->off + h->len;

    if (off > h->off && off + len < end) {
        if (hole_insert(s, i + 1, off + len, end - off - len) != 0)
            return -1;
        s->holes[i].len = off - s->holes[i].off;
    } else if (off > h->off) {
        h->len = off - h->off;
    } else if (off + len < end) {
        h->off += len;
        h->len -= len;
    } else {
        hole_delete(s, i);
    }
    return 0;
}

/* Offset of the first address at or above base + off aligned to align. */
static uint64_t align_off(const struct space *s, uint64_t off, uint64_t align)
{
    return round_up(s->base + off, align) - s->base;
}

/* Takes [off, off+len) at or above the bump pointer; the gap is a hole. */
static int space_take_top(struct space *s, uint64_t off, uint64_t len, uint64_t *addr)
{
    if (off > s->limit || s->limit - off < len)
        return -1;
    if (off > s->top && hole_insert(s, s->nholes, s->top, off - s->top) != 0)
        return -1;
    s->top = off + len;
    *addr = s->base + off;
    return 0;
}

/* First fit: the lowest hole that holds len bytes at an address aligned to
 * align (a power of two, at most the region's span), else the bump pointer. */
static int space_take(struct space *s, uint64_t len, uint64_t align, uint64_t *addr)
{
    for (size_t i = 0; i < s->nholes; i++) {
        uint64_t off = align_off(s, s->holes[i].off, align);
        uint64_t end = s->holes[i].off + s->holes[i].len;

        if (off >= end || end - off < len)
            continue;
        if (hole_carve(s, i, off, len) != 0)
            return -1;
        *addr = s->base + off;
        return 0;
    }
    return space_take_top(s, align_off(s, s->top, align), len, addr);
}

/* Takes exactly [addr, addr+len) if all of it is free. */
static int space_take_at(struct space *s, uint64_t addr, uint64_t len)
{
    uint64_t off = addr - s->base, got;

    if (addr < s->base)
        return -1;
    if (off >= s->top)
        return space_take_top(s, off, len, &got);
    for (size_t i = 0; i < s->nholes; i++) {
        const struct hole *h = &s->holes[i];

        if (h->off <= off && off - h->off < h->len && h->off + h->len - off >= len)
            return hole_carve(s, i, off, len);
    }
    return -1;
}

/* Returns [addr, addr+len) to the free space, merging with its neighbours
 * and giving the last hole back to the bump pointer. */
static void space_put(struct space *s, uint64_t addr, uint64_t len)
{
    uint64_t off = addr - s->base;
    size_t i = 0;

    while (i < s->nholes && s->holes[i].off < off)
        i++;
    if (i > 0 && s->holes[i - 1].off + s->holes[i - 1].len == off) {
        i--;
        s->holes[i].len += len;
    } else if (hole_insert(s, i, off, len) != 0) {
        return; /* out of host memory: the range is lost, nothing breaks */
    }
    if (i + 1 < s->nholes && s->holes[i].off + s->holes[i].len == s->holes[i + 1].off) {
        s->holes[i].len += s->holes[i + 1].len;
        hole_delete(s, i + 1);
    }
    if (i + 1 == s->nholes && s->holes[i].off + s->holes[i].len == s->top) {
        s->top = s->holes[i].off;
        s->nholes--;
    }
}

/* ---- pool accounting (lock held) --------------------------------------- */

/* A live pool: a default pool or a created one not destroyed. */
static struct gs_cupool_st *pool_of(const void *p)
{
    long i;

    for (int d = 0; d < cfg.ndevices; d++)
        if (p == &devices[d].pool)
            return &devices[d].pool;
    i = reg_index(&pools, p);
    if (i < 0 || ((struct gs_cupool_st *)pools.v[i])->destroyed)
        return NULL;
    return pools.v[i];
}

/* Device bytes pool p must add to hold size more; UINT64_MAX: over its
 * maximum size. */
static uint64_t pool_growth(const struct gs_cupool_st *p, uint64_t size)
{
    uint64_t need = round_up(p->used + p->pending + size, SIM_GRANULE);

    if (p->max_size && need > p->max_size)
        return UINT64_MAX;
    return need > p->reserved ? need - p->reserved : 0;
}

static void pool_take(struct gs_cupool_st *p, uint64_t size, uint64_t growth)
{
    p->used += size;
    p->reserved += growth;
    if (p->used > p->used_high)
        p->used_high = p->used;
    if (p->reserved > p->reserved_high)
        p->reserved_high = p->reserved;
}

/* Gives the device back the chunks neither used, nor pending frees, nor
 * keep need. */
static void pool_shrink(struct gs_cupool_st *p, uint64_t keep)
{
    uint64_t target;

    if (keep >= p->reserved)
        return;
    target = round_up(keep, SIM_GRANULE);
    if (target < round_up(p->used + p->pending, SIM_GRANULE))
        target = round_up(p->used + p->pending, SIM_GRANULE);
    if (target >= p->reserved)
        return;
    devices[p->device].used -= p->reserved - target;
    p->reserved = target;
}

/* A destroyed pool keeps only what its live allocations and pending frees
 * need, and goes once it has neither. */
static void pool_reap(struct gs_cupool_st *p)
{
    if (!p->destroyed)
        return;
    pool_shrink(p, 0);
    if (p->used == 0 && p->pending == 0) {
        reg_del(&pools, (size_t)reg_index(&pools, p));
        free(p);
    }
}

/* A free into pool p. */
static void pool_put(struct gs_cupool_st *p, uint64_t size)
{
    p->used -= size;
    pool_reap(p);
}

/* What a synchronize on device dev does to its pools. */
static void trim_pools(int dev)
{
    pool_shrink(&devices[dev].pool, devices[dev].pool.threshold);
    for (size_t i = 0; i < pools.n; i++) {
        struct gs_cupool_st *p = pools.v[i];

        if (p->device == dev && !p->destroyed)
            pool_shrink(p, p->threshold);
    }
}

/* ---- stream order: clocks, pending frees, uses, hazards (lock held) ---- */

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

/* A cuMemFreeAsync of pool memory that not every stream may reuse yet. */
struct pending {
    uint64_t addr, size;
    int device;
    struct gs_cupool_st *pool;
    int order;          /* the freeing stream */
    uint64_t pos;       /* the free's position in it */
    struct clock clock; /* the free's */
};

/* simcuda_use: stream `order` uses the range from position pos on. */
struct use {
    uint64_t addr, size;
    int order;
    uint64_t pos;
};

static struct order *orders;
static size_t norders, orders_cap;
static struct pending *pendings;
static size_t npendings, pendings_cap;
static struct use *uses;
static size_t nuses, uses_cap;
static unsigned long hazards;

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
static int clock_join(struct clock *c, const struct clock *src)
{
    for (size_t i = src->n; i-- > 0;)
        if (src->v[i] && clock_raise(c, (int)i, src->v[i]) != 0)
            return -1;
    return 0;
}

/* c becomes src. */
static int clock_set(struct clock *c, const struct clock *src)
{
    for (size_t i = 0; i < c->n; i++)
        c->v[i] = 0;
    return clock_join(c, src);
}

static int order_add(int dev, int blocking)
{
    struct order *v = grow(orders, &orders_cap, norders + 1, sizeof *v);

    if (!v)
        return -1;
    orders = v;
    orders[norders] = (struct order){.device = dev, .blocking = blocking};
    return (int)norders++;
}

/* The default streams come first, made on first use. */
static int orders_ready(void)
{
    while (norders < (size_t)cfg.ndevices)
        if (order_add((int)norders, 1) < 0)
            return -1;
    return 0;
}

/* The order of stream s, whose device (stream_device's) is dev; -1 if
 * none. */
static int order_of(gs_custream s, int dev)
{
    long i;

    if (orders_ready() != 0)
        return -1;
    if (!s || s == SIM_CU_STREAM_LEGACY || s == SIM_CU_STREAM_PER_THREAD)
        return dev;
    i = reg_index(&streams, s);
    return i < 0 ? -1 : ((struct gs_custream_st *)streams.v[i])->order;
}

/* CUDA's implicit synchronization: the default stream comes after the
 * blocking streams' work before it, and they after its; non-blocking
 * streams after neither. */
static int order_implicit(int o)
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
static uint64_t order_next(int o)
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
static void order_complete(const struct clock *c)
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
static void order_complete_device(int dev)
{
    for (size_t i = 0; i < norders; i++)
        if (orders[i].device == dev)
            order_complete(&orders[i].clock);
}

/* A free of pool memory e on stream o: pending until o's work reaches it
 * (for o at once, for the streams ordered after it then). */
static int pending_add(const struct live *e, int o)
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
static long pending_fit(const struct gs_cupool_st *pool, int o, uint64_t size)
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
static int pending_take(size_t i, uint64_t size, int o, uint64_t *addr)
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
static int pending_wait_all(struct gs_cupool_st *pool, int o)
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
static void hazard_check(const char *api, int o, uint64_t addr, uint64_t size)
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

/* ---- allocate and free ------------------------------------------------- */

/* How an allocation is charged. */
struct charge {
    int dev;
    int managed;
    int pooled;         /* from a pool: the given one, else dev's current */
    gs_cumempool given; /* cuMemAllocFromPoolAsync's pool */
    int ordered;        /* stream-ordered, on stream (of device dev) */
    gs_custream stream;
};

/* Stream o (-1: none) allocates: a pool's pending free o may reuse first,
 * then the pool's free memory or more of the device's. */
static gs_curesult alloc_locked(int dev, uint64_t size, struct gs_cupool_st *pool,
                                int managed, int o, gs_cudeviceptr *dptr)
{
    struct device *d = &devices[dev];
    long reuse = pool && o >= 0 ? pending_fit(pool, o, size) : -1;
    uint64_t charge = reuse >= 0 ? 0 : pool ? pool_growth(pool, size) : size;
    uint64_t addr;
    struct live *e;

    if (reuse < 0 && pool && o >= 0 && (charge == UINT64_MAX || d->capacity - d->used < charge) &&
        pending_wait_all(pool, o))
        charge = pool_growth(pool, size);
    if (charge == UINT64_MAX || d->capacity - d->used < charge)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    if ((table_count + 1) * 2 > table_cap && table_grow() != 0)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    if (reuse >= 0 ? pending_take((size_t)reuse, size, o, &addr) != 0
                   : space_take(&d->space, size, SIM_ALIGN, &addr) != 0)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    d->used += charge;
    if (pool)
        pool_take(pool, size, charge);
    e = &table[slot_find(addr)];
    *e = (struct live){addr, size, dev, managed, pool, next_serial++, NULL};
    if (cfg.host_malloc)
        e->host = malloc(64);
    table_count++;
    *dptr = addr;
    return GS_CUDA_SUCCESS;
}

/* The pool c charges (NULL: none) in *pool; fails for an unknown pool. */
static gs_curesult charge_pool(struct charge *c, struct gs_cupool_st **pool)
{
    *pool = NULL;
    if (c->pooled && c->given) {
        *pool = pool_of(c->given);
        if (!*pool)
            return GS_CUDA_ERROR_INVALID_VALUE;
        c->dev = (*pool)->device;
    } else if (c->pooled) {
        *pool = devices[c->dev].cur_pool;
    }
    return GS_CUDA_SUCCESS;
}

/* Charges bytesize (rounded to 512) as c says. */
static gs_curesult sim_alloc(const char *api, struct charge c, gs_cudeviceptr *dptr,
                             size_t bytesize)
{
    gs_curesult rc = GS_CUDA_ERROR_OUT_OF_MEMORY;
    struct gs_cupool_st *pool;
    gs_cudeviceptr p = 0;
    int o = -1;

    if (!dptr || !bytesize)
        return GS_CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    if (c.ordered && ((o = order_of(c.stream, c.dev)) < 0 || order_implicit(o) != 0))
        rc = SIM_CUDA_ERROR_INVALID_HANDLE;
    else
        rc = charge_pool(&c, &pool);
    if (rc == GS_CUDA_SUCCESS && bytesize > SIM_SPAN)
        rc = GS_CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == GS_CUDA_SUCCESS)
        rc = alloc_locked(c.dev, round_up(bytesize, SIM_ALIGN), pool, c.managed, o, &p);
    if (rc == GS_CUDA_SUCCESS && nuses)
        hazard_check(api, o, p, round_up(bytesize, SIM_ALIGN));
    pthread_mutex_unlock(&lock);
    if (rc == GS_CUDA_SUCCESS)
        *dptr = p;
    sim_log("%s(%zu) dev %d -> %d 0x%llx", api, bytesize, c.dev, rc, p);
    return rc;
}

/* Frees dptr; stream-ordered on stream s of device dev when ordered. */
static gs_curesult sim_free(const char *api, gs_cudeviceptr dptr, int ordered, gs_custream s,
                            int dev)
{
    struct live *e;
    struct live gone = {0};
    int o = -1;

    if (!dptr)
        return GS_CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    e = table_get(dptr);
    if (e && ordered)
        o = order_of(s, dev);
    if (e) {
        gone = *e;
        if (!gone.pool)
            devices[gone.device].used -= gone.size;
        if (!gone.pool || o < 0 || pending_add(&gone, o) != 0) {
            space_put(&devices[gone.device].space, gone.addr, gone.size);
            if (gone.pool)
                pool_put(gone.pool, gone.size);
        }
        table_remove((size_t)(e - table));
    }
    int graph = !e && graph_free_locked(dptr); /* a graph's allocation */
    pthread_mutex_unlock(&lock);
    free(gone.host);
    sim_log("%s(0x%llx) -> %d", api, dptr, e || graph ? 0 : GS_CUDA_ERROR_INVALID_VALUE);
    return e || graph ? GS_CUDA_SUCCESS : GS_CUDA_ERROR_INVALID_VALUE;
}

/* ---- initialization, versions, errors --------------------------------- */

static gs_curesult sim_cuInit(unsigned int Flags)
{
    pthread_once(&env_once, read_env);
    if (Flags)
        return GS_CUDA_ERROR_INVALID_VALUE;
    if (!cfg.ndevices)
        return GS_CUDA_ERROR_NO_DEVICE;
    __atomic_store_n(&initialized, 1, __ATOMIC_RELEASE);
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuInit)

static gs_curesult sim_cuDriverGetVersion(int *driverVersion)
{
    if (!driverVersion)
        return GS_CUDA_ERROR_INVALID_VALUE;
    *driverVersion = SIM_DRIVER_VERSION;
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuDriverGetVersion)

static const struct {
    gs_curesult code;
    const char *name, *text;
} errors[] = {
    {GS_CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {GS_CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {GS_CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {GS_CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {GS_CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {GS_CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {GS_CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {SIM_CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {GS_CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {GS_CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {SIM_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
     "part or all of the requested memory range is already mapped"},
    {SIM_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
     "pointer does not correspond to a registered memory region"},
    {SIM_CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

/* Like the real driver, the error lookups work before cuInit. */
static gs_curesult error_lookup(gs_curesult error, const char **pStr, int want_name)
{
    if (!pStr)
        return GS_CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++) {
        if (errors[i].code == error) {
            *pStr = want_name ? errors[i].name : errors[i].text;
            return GS_CUDA_SUCCESS;
        }
    }
    *pStr = NULL;
    return GS_CUDA_ERROR_INVALID_VALUE;
}

static gs_curesult sim_cuGetErrorString(gs_curesult error, const char **pStr)
{
    return error_lookup(error, pStr, 0);
}
SIM_EXPORT(cuGetErrorString)

static gs_curesult sim_cuGetErrorName(gs_curesult error, const char **pStr)
{
    return error_lookup(error, pStr, 1);
}
SIM_EXPORT(cuGetErrorName)

/* ---- devices ------------------------------------------------------------ */

static gs_curesult sim_cuDeviceGetCount(int *count)
{
    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!count)
        return GS_CUDA_ERROR_INVALID_VALUE;
    *count = cfg.ndevices;
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuDeviceGetCount)

static gs_curesult sim_cuDeviceGet(gs_cudevice *device, int ordinal)
{
    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!device)
        return GS_CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(ordinal))
        return GS_CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuDeviceGet)

/* The attributes NCCL, XLA, TensorFlow and PyTorch ask before they choose
 * an allocation path: virtual memory management and pools supported, no
 * GPUDirect RDMA with virtual memory management (no NIC; PyTorch's
 * ExpandableSegment::map asks before each cuMemCreate), FABRIC as
 * SIMCUDA_FABRIC says, host NUMA node 0. Any other:
 * CUDA_ERROR_INVALID_VALUE. */
static gs_curesult sim_cuDeviceGetAttribute(int *pi, int attrib, gs_cudevice dev)
{
    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!valid_device(dev))
        return GS_CUDA_ERROR_INVALID_DEVICE;
    if (!pi)
        return GS_CUDA_ERROR_INVALID_VALUE;
    switch (attrib) {
    case SIM_CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: /* fall through */
    case SIM_CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: *pi = 1; break;
    case SIM_CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED: /* fall through */
    case SIM_CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID: *pi = 0; break;
    case SIM_CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED: *pi = cfg.fabric; break;
    default: return GS_CUDA_ERROR_INVALID_VALUE;
    }
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuDeviceGetAttribute)

static gs_curesult sim_cuDeviceGetName(char *name, int len, gs_cudevice dev)
{
    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!name || len <= 0)
        return GS_CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(dev))
        return GS_CUDA_ERROR_INVALID_DEVICE;
    snprintf(name, (size_t)len, "SimCUDA Device %d", dev);
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuDeviceGetName)

static gs_curesult sim_cuDeviceTotalMem_v2(size_t *bytes, gs_cudevice dev)
{
    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!bytes)
        return GS_CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(dev))
        return GS_CUDA_ERROR_INVALID_DEVICE;
    *bytes = devices[dev].capacity;
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuDeviceTotalMem_v2)

/* The checks of the cuDevice*MemPool calls. */
static gs_curesult device_pool_check(const void *out, gs_cudevice dev)
{
    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!out)
        return GS_CUDA_ERROR_INVALID_VALUE;
    return valid_device(dev) ? GS_CUDA_SUCCESS : GS_CUDA_ERROR_INVALID_DEVICE;
}

static gs_curesult sim_cuDeviceGetDefaultMemPool(gs_cumempool *pool_out, gs_cudevice dev)
{
    gs_curesult rc = device_pool_check(pool_out, dev);

    if (rc == GS_CUDA_SUCCESS)
        *pool_out = &devices[dev].pool;
    return rc;
}
SIM_EXPORT(cuDeviceGetDefaultMemPool)

static gs_curesult sim_cuDeviceGetMemPool(gs_cumempool *pool, gs_cudevice dev)
{
    gs_curesult rc = device_pool_check(pool, dev);

    if (rc != GS_CUDA_SUCCESS)
        return rc;
    pthread_mutex_lock(&lock);
    *pool = devices[dev].cur_pool;
    pthread_mutex_unlock(&lock);
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuDeviceGetMemPool)

/* The pool must be dev's (CUDA_ERROR_INVALID_VALUE otherwise). */
static gs_curesult sim_cuDeviceSetMemPool(gs_cudevice dev, gs_cumempool pool)
{
    gs_curesult rc = device_pool_check(pool, dev);
    struct gs_cupool_st *p;

    if (rc != GS_CUDA_SUCCESS)
        return rc;
    pthread_mutex_lock(&lock);
    p = pool_of(pool);
    if (p && p->device == dev)
        devices[dev].cur_pool = p;
    else
        rc = GS_CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&lock);
    return rc;
}
SIM_EXPORT(cuDeviceSetMemPool)

/* ---- contexts ----------------------------------------------------------- */

static gs_curesult sim_cuDevicePrimaryCtxRetain(gs_cucontext *pctx, gs_cudevice dev)
{
    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!pctx)
        return GS_CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(dev))
        return GS_CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&lock);
    devices[dev].ctx_refs++;
    pthread_mutex_unlock(&lock);
    *pctx = &devices[dev].ctx;
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuDevicePrimaryCtxRetain)

static gs_curesult sim_cuDevicePrimaryCtxRelease_v2(gs_cudevice dev)
{
    gs_curesult rc = GS_CUDA_SUCCESS;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!valid_device(dev))
        return GS_CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&lock);
    if (devices[dev].ctx_refs > 0)
        devices[dev].ctx_refs--;
    else
        rc = GS_CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_unlock(&lock);
    return rc;
}
SIM_EXPORT(cuDevicePrimaryCtxRelease_v2)

static gs_curesult sim_cuCtxSetCurrent(gs_cucontext ctx)
{
    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (ctx && !ctx_of(ctx))
        return GS_CUDA_ERROR_INVALID_CONTEXT;
    current_ctx = ctx;
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuCtxSetCurrent)

static gs_curesult sim_cuCtxGetCurrent(gs_cucontext *pctx)
{
    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!pctx)
        return GS_CUDA_ERROR_INVALID_VALUE;
    *pctx = current_ctx;
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuCtxGetCurrent)

/* CUDA 13's cuCtxGetDevice_v2 and cuCtxSynchronize_v2 take the context
 * (NULL: the current one). cuGetProcAddress hands them out for
 * "cuCtxGetDevice"/"cuCtxSynchronize" at version 13000 and above, as the
 * real driver does; they are not exported by name here. */
static gs_curesult ctx_get_device_v2(gs_cudevice *device, gs_cucontext ctx)
{
    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!device)
        return GS_CUDA_ERROR_INVALID_VALUE;
    if (!ctx)
        ctx = current_ctx;
    if (!ctx || !ctx_of(ctx))
        return GS_CUDA_ERROR_INVALID_CONTEXT;
    *device = ctx->device;
    return GS_CUDA_SUCCESS;
}

/* Completes everything on the device: the pools release what they may. */
static gs_curesult ctx_synchronize_v2(gs_cucontext ctx)
{
    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!ctx)
        ctx = current_ctx;
    if (!ctx || !ctx_of(ctx))
        return GS_CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&lock);
    order_complete_device(ctx->device);
    trim_pools(ctx->device);
    pthread_mutex_unlock(&lock);
    return GS_CUDA_SUCCESS;
}

static gs_curesult sim_cuCtxGetDevice(gs_cudevice *device)
{
    return ctx_get_device_v2(device, NULL);
}
SIM_EXPORT(cuCtxGetDevice)

static gs_curesult sim_cuCtxSynchronize(void)
{
    return ctx_synchronize_v2(NULL);
}
SIM_EXPORT(cuCtxSynchronize)

/* ---- streams ------------------------------------------------------------ */

/* The device of a stream: the current context's for the NULL, legacy and
 * per-thread streams. Unknown streams are CUDA_ERROR_INVALID_HANDLE. */
static gs_curesult stream_device(gs_custream s, int *dev)
{
    long i;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!s || s == SIM_CU_STREAM_LEGACY || s == SIM_CU_STREAM_PER_THREAD) {
        *dev = current_device();
        return *dev < 0 ? -*dev : GS_CUDA_SUCCESS;
    }
    pthread_mutex_lock(&lock);
    i = reg_index(&streams, s);
    if (i >= 0)
        *dev = ((struct gs_custream_st *)streams.v[i])->device;
    pthread_mutex_unlock(&lock);
    return i >= 0 ? GS_CUDA_SUCCESS : SIM_CUDA_ERROR_INVALID_HANDLE;
}

/* Flags: 0 or CU_STREAM_NON_BLOCKING. */
static gs_curesult sim_cuStreamCreate(gs_custream *phStream, unsigned int Flags)
{
    int dev = current_device();
    struct gs_custream_st *s;
    int bad;

    if (dev < 0)
        return -dev;
    if (!phStream || (Flags & ~(unsigned)SIM_CU_STREAM_NON_BLOCKING))
        return GS_CUDA_ERROR_INVALID_VALUE;
    s = malloc(sizeof *s);
    if (!s)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    *s = (struct gs_custream_st){dev, Flags, -1, NULL, 0};
    pthread_mutex_lock(&lock);
    bad = orders_ready() != 0 ||
          (s->order = order_add(dev, !(Flags & SIM_CU_STREAM_NON_BLOCKING))) < 0 ||
          reg_add(&streams, s) != 0;
    pthread_mutex_unlock(&lock);
    if (bad) {
        free(s);
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    }
    *phStream = s;
    sim_log("cuStreamCreate dev %d -> %p", dev, (void *)s);
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuStreamCreate)

static gs_curesult sim_cuStreamDestroy_v2(gs_custream hStream)
{
    long i;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    pthread_mutex_lock(&lock);
    i = reg_index(&streams, hStream);
    if (i >= 0)
        reg_del(&streams, (size_t)i);
    pthread_mutex_unlock(&lock);
    if (i < 0)
        return SIM_CUDA_ERROR_INVALID_HANDLE;
    free(hStream);
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuStreamDestroy_v2)

/* Its work completes, and what it comes after. */
static gs_curesult stream_synchronize(gs_custream hStream)
{
    int dev, o;
    gs_curesult rc = stream_device(hStream, &dev);

    if (rc != GS_CUDA_SUCCESS)
        return rc;
    pthread_mutex_lock(&lock);
    o = order_of(hStream, dev);
    if (o >= 0 && order_implicit(o) == 0)
        order_complete(&orders[o].clock);
    trim_pools(dev);
    pthread_mutex_unlock(&lock);
    return GS_CUDA_SUCCESS;
}

static gs_curesult sim_cuStreamSynchronize(gs_custream hStream)
{
    return stream_synchronize(hStream);
}
SIM_EXPORT(cuStreamSynchronize)

static gs_curesult sim_cuStreamSynchronize_ptsz(gs_custream hStream)
{
    return stream_synchronize(hStream);
}
SIM_EXPORT(cuStreamSynchronize_ptsz)

static gs_curesult stream_get_device(gs_custream hStream, gs_cudevice *device)
{
    int dev;
    gs_curesult rc;

    if (!device)
        return GS_CUDA_ERROR_INVALID_VALUE;
    rc = stream_device(hStream, &dev);
    if (rc == GS_CUDA_SUCCESS)
        *device = dev;
    return rc;
}

static gs_curesult sim_cuStreamGetDevice(gs_custream hStream, gs_cudevice *device)
{
    return stream_get_device(hStream, device);
}
SIM_EXPORT(cuStreamGetDevice)

static gs_curesult sim_cuStreamGetDevice_ptsz(gs_custream hStream, gs_cudevice *device)
{
    return stream_get_device(hStream, device);
}
SIM_EXPORT(cuStreamGetDevice_ptsz)

/* cuStreamGetCtx_v2 (CUDA 12.5) adds the green context: always NULL here. */
static gs_curesult stream_get_ctx(gs_custream hStream, gs_cucontext *pctx, void **pGreenCtx)
{
    int dev;
    gs_curesult rc;

    if (!pctx)
        return GS_CUDA_ERROR_INVALID_VALUE;
    rc = stream_device(hStream, &dev);
    if (rc != GS_CUDA_SUCCESS)
        return rc;
    *pctx = &devices[dev].ctx;
    if (pGreenCtx)
        *pGreenCtx = NULL;
    return GS_CUDA_SUCCESS;
}

static gs_curesult sim_cuStreamGetCtx(gs_custream hStream, gs_cucontext *pctx)
{
    return stream_get_ctx(hStream, pctx, NULL);
}
SIM_EXPORT(cuStreamGetCtx)

static gs_curesult sim_cuStreamGetCtx_ptsz(gs_custream hStream, gs_cucontext *pctx)
{
    return stream_get_ctx(hStream, pctx, NULL);
}
SIM_EXPORT(cuStreamGetCtx_ptsz)

static gs_curesult sim_cuStreamGetCtx_v2(gs_custream hStream, gs_cucontext *pctx,
                                         void **pGreenCtx)
{
    return stream_get_ctx(hStream, pctx, pGreenCtx);
}
SIM_EXPORT(cuStreamGetCtx_v2)

static gs_curesult sim_cuStreamGetCtx_v2_ptsz(gs_custream hStream, gs_cucontext *pctx,
                                              void **pGreenCtx)
{
    return stream_get_ctx(hStream, pctx, pGreenCtx);
}
SIM_EXPORT(cuStreamGetCtx_v2_ptsz)

/* ---- events, and marking memory in use (stream order) -------------------- */

#define SIM_CU_EVENT_FLAGS 0x7 /* BLOCKING_SYNC | DISABLE_TIMING | INTERPROCESS */
#define SIM_CU_EVENT_DISABLE_TIMING 0x2
#define SIM_CU_EVENT_INTERPROCESS 0x4
#define SIM_CU_EVENT_WAIT_EXTERNAL 0x1

struct gs_cuevent_st {
    int device;         /* the current context's at creation */
    struct clock clock; /* of the point last recorded (none: nothing to wait for) */
};

static struct reg events;

static gs_curesult sim_cuEventCreate(gs_cuevent *phEvent, unsigned int Flags)
{
    int dev = current_device();
    struct gs_cuevent_st *e;
    int bad;

    if (dev < 0)
        return -dev;
    if (!phEvent || (Flags & ~(unsigned)SIM_CU_EVENT_FLAGS) ||
        ((Flags & SIM_CU_EVENT_INTERPROCESS) && !(Flags & SIM_CU_EVENT_DISABLE_TIMING)))
        return GS_CUDA_ERROR_INVALID_VALUE;
    e = calloc(1, sizeof *e);
    if (!e)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    e->device = dev;
    pthread_mutex_lock(&lock);
    bad = reg_add(&events, e);
    pthread_mutex_unlock(&lock);
    if (bad) {
        free(e);
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    }
    *phEvent = e;
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuEventCreate)

static gs_curesult sim_cuEventDestroy_v2(gs_cuevent hEvent)
{
    long i;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    pthread_mutex_lock(&lock);
    i = reg_index(&events, hEvent);
    if (i >= 0)
        reg_del(&events, (size_t)i);
    pthread_mutex_unlock(&lock);
    if (i < 0)
        return SIM_CUDA_ERROR_INVALID_HANDLE;
    free(hEvent->clock.v);
    free(hEvent);
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuEventDestroy_v2)

/* The event takes the clock of the stream's work so far; the stream must
 * be on the event's device. */
static gs_curesult event_record(gs_cuevent hEvent, gs_custream hStream)
{
    int dev, o;
    gs_curesult rc = stream_device(hStream, &dev);

    if (rc != GS_CUDA_SUCCESS)
        return rc;
    pthread_mutex_lock(&lock);
    if (reg_index(&events, hEvent) < 0 || hEvent->device != dev ||
        (o = order_of(hStream, dev)) < 0)
        rc = SIM_CUDA_ERROR_INVALID_HANDLE;
    else if (!order_next(o) || clock_set(&hEvent->clock, &orders[o].clock) != 0)
        rc = GS_CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_unlock(&lock);
    return rc;
}

static gs_curesult sim_cuEventRecord(gs_cuevent hEvent, gs_custream hStream)
{
    return event_record(hEvent, hStream);
}
SIM_EXPORT(cuEventRecord)

static gs_curesult sim_cuEventRecord_ptsz(gs_cuevent hEvent, gs_custream hStream)
{
    return event_record(hEvent, hStream);
}
SIM_EXPORT(cuEventRecord_ptsz)

/* The stream's later work comes after the event's recorded point. */
static gs_curesult stream_wait_event(gs_custream hStream, gs_cuevent hEvent, unsigned int Flags)
{
    int dev, o;
    gs_curesult rc = stream_device(hStream, &dev);

    if (rc != GS_CUDA_SUCCESS)
        return rc;
    if (Flags & ~(unsigned)SIM_CU_EVENT_WAIT_EXTERNAL)
        return GS_CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    if (reg_index(&events, hEvent) < 0 || (o = order_of(hStream, dev)) < 0)
        rc = SIM_CUDA_ERROR_INVALID_HANDLE;
    else if (order_implicit(o) != 0 || clock_join(&orders[o].clock, &hEvent->clock) != 0)
        rc = GS_CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_unlock(&lock);
    return rc;
}

static gs_curesult sim_cuStreamWaitEvent(gs_custream hStream, gs_cuevent hEvent,
                                         unsigned int Flags)
{
    return stream_wait_event(hStream, hEvent, Flags);
}
SIM_EXPORT(cuStreamWaitEvent)

static gs_curesult sim_cuStreamWaitEvent_ptsz(gs_custream hStream, gs_cuevent hEvent,
                                              unsigned int Flags)
{
    return stream_wait_event(hStream, hEvent, Flags);
}
SIM_EXPORT(cuStreamWaitEvent_ptsz)

/* The work before the event's point completes; trim: the pools release
 * what they may, as at any synchronize. */
static gs_curesult event_complete(gs_cuevent hEvent, int trim)
{
    gs_curesult rc = GS_CUDA_SUCCESS;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    pthread_mutex_lock(&lock);
    if (reg_index(&events, hEvent) < 0) {
        rc = SIM_CUDA_ERROR_INVALID_HANDLE;
    } else {
        order_complete(&hEvent->clock);
        if (trim)
            trim_pools(hEvent->device);
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

static gs_curesult sim_cuEventSynchronize(gs_cuevent hEvent)
{
    return event_complete(hEvent, 1);
}
SIM_EXPORT(cuEventSynchronize)

/* Work never waits on a device here: what an event follows is done as soon
 * as the host asks. */
static gs_curesult sim_cuEventQuery(gs_cuevent hEvent)
{
    return event_complete(hEvent, 0);
}
SIM_EXPORT(cuEventQuery)

/* Test-only, not a CUDA function: the allocation holding ptr is in use by
 * stream's work from now until that work completes (a synchronize of the
 * stream or its device, or of an event after it), as if a kernel launched
 * on stream read it. An allocation that hands out any of it to a stream
 * not ordered after that use before then is a reuse hazard. */
__attribute__((visibility("default"))) gs_curesult simcuda_use(gs_custream stream,
                                                               gs_cudeviceptr ptr)
{
    int dev, o;
    uint64_t pos;
    struct live *e;
    struct use *v;
    gs_curesult rc = stream_device(stream, &dev);

    if (rc != GS_CUDA_SUCCESS)
        return rc;
    pthread_mutex_lock(&lock);
    e = table_containing(ptr);
    if (!e || (o = order_of(stream, dev)) < 0)
        rc = GS_CUDA_ERROR_INVALID_VALUE;
    else if (!(pos = order_next(o)) || !(v = grow(uses, &uses_cap, nuses + 1, sizeof *v)))
        rc = GS_CUDA_ERROR_OUT_OF_MEMORY;
    else
        (uses = v)[nuses++] = (struct use){e->addr, e->size, o, pos};
    pthread_mutex_unlock(&lock);
    return rc;
}

/* Test-only: the reuse hazards so far. */
__attribute__((visibility("default"))) unsigned long simcuda_hazards(void)
{
    unsigned long n;

    pthread_mutex_lock(&lock);
    n = hazards;
    pthread_mutex_unlock(&lock);
    return n;
}

/* ---- memory ------------------------------------------------------------- */

static gs_curesult sim_cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
    int dev = current_device();

    if (dev < 0)
        return -dev;
    pthread_mutex_lock(&lock);
    if (free_bytes)
        *free_bytes = devices[dev].capacity - devices[dev].used;
    if (total)
        *total = devices[dev].capacity;
    pthread_mutex_unlock(&lock);
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuMemGetInfo_v2)

/* cuMemAlloc and cuMemFree are "potentially unsafe" during a capture
 * (CUDA graphs section): refused unless the thread's mode allows them. */
static gs_curesult sim_cuMemAlloc_v2(gs_cudeviceptr *dptr, size_t bytesize)
{
    int dev = current_device();

    if (dev >= 0 && capture_prohibits())
        return GS_CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    return dev < 0 ? -dev
                   : sim_alloc("cuMemAlloc_v2", (struct charge){.dev = dev}, dptr, bytesize);
}
SIM_EXPORT(cuMemAlloc_v2)

static gs_curesult sim_cuMemFree_v2(gs_cudeviceptr dptr)
{
    int dev = current_device();

    if (dev >= 0 && capture_prohibits())
        return GS_CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    return dev < 0 ? -dev : sim_free("cuMemFree_v2", dptr, 0, NULL, dev);
}
SIM_EXPORT(cuMemFree_v2)

static gs_curesult sim_cuMemAllocPitch_v2(gs_cudeviceptr *dptr, size_t *pPitch,
                                          size_t WidthInBytes, size_t Height,
                                          unsigned int ElementSizeBytes)
{
    int dev = current_device();
    size_t pitch;
    gs_curesult rc;

    if (dev < 0)
        return -dev;
    if (!pPitch || !WidthInBytes || !Height || WidthInBytes > SIM_SPAN ||
        (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
        return GS_CUDA_ERROR_INVALID_VALUE;
    pitch = round_up(WidthInBytes, SIM_ALIGN);
    if (Height > SIM_SPAN / pitch)
        return dptr ? GS_CUDA_ERROR_OUT_OF_MEMORY : GS_CUDA_ERROR_INVALID_VALUE;
    rc = sim_alloc("cuMemAllocPitch_v2", (struct charge){.dev = dev}, dptr, pitch * Height);
    if (rc == GS_CUDA_SUCCESS)
        *pPitch = pitch;
    return rc;
}
SIM_EXPORT(cuMemAllocPitch_v2)

static gs_curesult sim_cuMemAllocManaged(gs_cudeviceptr *dptr, size_t bytesize,
                                         unsigned int flags)
{
    int dev = current_device();

    if (dev < 0)
        return -dev;
    if (flags != GS_CU_MEM_ATTACH_GLOBAL && flags != SIM_CU_MEM_ATTACH_HOST)
        return GS_CUDA_ERROR_INVALID_VALUE;
    return sim_alloc("cuMemAllocManaged", (struct charge){.dev = dev, .managed = 1}, dptr,
                     bytesize);
}
SIM_EXPORT(cuMemAllocManaged)

/* Stream-ordered allocation from the current pool of the stream's device. */
/* On a stream that captures, an allocation node of the graph instead
 * (CUDA graphs section): *captured says so. */
static gs_curesult captured_alloc(gs_cudeviceptr *dptr, size_t bytesize, gs_custream hStream,
                                  int *captured)
{
    gs_curesult rc = GS_CUDA_SUCCESS;
    long i;

    *captured = 0;
    if (!hStream || hStream == SIM_CU_STREAM_LEGACY || hStream == SIM_CU_STREAM_PER_THREAD)
        return rc;
    pthread_mutex_lock(&lock);
    i = reg_index(&streams, hStream);
    if (i >= 0 && hStream->capture) {
        *captured = 1;
        rc = !dptr || !bytesize ? GS_CUDA_ERROR_INVALID_VALUE
                                : capture_alloc_locked(hStream, bytesize, dptr);
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

static gs_curesult alloc_async(const char *api, gs_cudeviceptr *dptr, size_t bytesize,
                               gs_custream hStream)
{
    int dev, captured;
    gs_curesult rc = stream_device(hStream, &dev);

    if (rc != GS_CUDA_SUCCESS)
        return rc;
    rc = captured_alloc(dptr, bytesize, hStream, &captured);
    if (captured)
        return rc;
    return sim_alloc(api, (struct charge){.dev = dev, .pooled = 1, .ordered = 1, .stream = hStream},
                     dptr, bytesize);
}

static gs_curesult free_async(const char *api, gs_cudeviceptr dptr, gs_custream hStream)
{
    int dev;
    gs_curesult rc = stream_device(hStream, &dev);

    if (rc != GS_CUDA_SUCCESS)
        return rc;
    if (hStream && hStream != SIM_CU_STREAM_LEGACY && hStream != SIM_CU_STREAM_PER_THREAD) {
        pthread_mutex_lock(&lock);
        int captured = hStream->capture != NULL;
        if (captured) /* a free node of the graph */
            rc = capture_free_locked(hStream, dptr);
        pthread_mutex_unlock(&lock);
        if (captured)
            return rc;
    }
    return sim_free(api, dptr, 1, hStream, dev);
}

/* From a given pool, whatever device the stream is on. */
static gs_curesult alloc_from_pool(const char *api, gs_cudeviceptr *dptr, size_t bytesize,
                                   gs_cumempool pool, gs_custream hStream)
{
    int dev;
    gs_curesult rc = stream_device(hStream, &dev);

    if (rc != GS_CUDA_SUCCESS)
        return rc;
    if (!pool)
        return GS_CUDA_ERROR_INVALID_VALUE;
    int captured;
    rc = captured_alloc(dptr, bytesize, hStream, &captured);
    if (captured)
        return rc;
    return sim_alloc(api,
                     (struct charge){.dev = dev, .pooled = 1, .given = pool, .ordered = 1,
                                     .stream = hStream},
                     dptr, bytesize);
}

static gs_curesult sim_cuMemAllocAsync(gs_cudeviceptr *dptr, size_t bytesize,
                                       gs_custream hStream)
{
    return alloc_async("cuMemAllocAsync", dptr, bytesize, hStream);
}
SIM_EXPORT(cuMemAllocAsync)

static gs_curesult sim_cuMemAllocAsync_ptsz(gs_cudeviceptr *dptr, size_t bytesize,
                                            gs_custream hStream)
{
    return alloc_async("cuMemAllocAsync_ptsz", dptr, bytesize, hStream);
}
SIM_EXPORT(cuMemAllocAsync_ptsz)

static gs_curesult sim_cuMemFreeAsync(gs_cudeviceptr dptr, gs_custream hStream)
{
    return free_async("cuMemFreeAsync", dptr, hStream);
}
SIM_EXPORT(cuMemFreeAsync)

static gs_curesult sim_cuMemFreeAsync_ptsz(gs_cudeviceptr dptr, gs_custream hStream)
{
    return free_async("cuMemFreeAsync_ptsz", dptr, hStream);
}
SIM_EXPORT(cuMemFreeAsync_ptsz)

static gs_curesult sim_cuMemAllocFromPoolAsync(gs_cudeviceptr *dptr, size_t bytesize,
                                               gs_cumempool pool, gs_custream hStream)
{
    return alloc_from_pool("cuMemAllocFromPoolAsync", dptr, bytesize, pool, hStream);
}
SIM_EXPORT(cuMemAllocFromPoolAsync)

static gs_curesult sim_cuMemAllocFromPoolAsync_ptsz(gs_cudeviceptr *dptr, size_t bytesize,
                                                    gs_cumempool pool, gs_custream hStream)
{
    return alloc_from_pool("cuMemAllocFromPoolAsync_ptsz", dptr, bytesize, pool, hStream);
}
SIM_EXPORT(cuMemAllocFromPoolAsync_ptsz)

/* ---- memory pools ------------------------------------------------------- */

/* Device-located pinned pools only; maxSize (0: none) caps reserved. */
static gs_curesult sim_cuMemPoolCreate(gs_cumempool *pool, const gs_cumempoolprops *poolProps)
{
    struct gs_cupool_st *p;
    int bad;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!pool || !poolProps || poolProps->allocType != GS_CU_MEM_ALLOCATION_TYPE_PINNED ||
        poolProps->location.type != GS_CU_MEM_LOCATION_TYPE_DEVICE ||
        !valid_device(poolProps->location.id))
        return GS_CUDA_ERROR_INVALID_VALUE;
    p = malloc(sizeof *p);
    if (!p)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    pool_init(p, poolProps->location.id);
    p->max_size = poolProps->maxSize;
    pthread_mutex_lock(&lock);
    bad = reg_add(&pools, p);
    pthread_mutex_unlock(&lock);
    if (bad) {
        free(p);
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    }
    *pool = p;
    sim_log("cuMemPoolCreate dev %d -> %p", p->device, (void *)p);
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuMemPoolCreate)

/* A pool with live allocations goes once they are freed; a device whose
 * current pool it was gets its default pool back. */
static gs_curesult sim_cuMemPoolDestroy(gs_cumempool pool)
{
    struct gs_cupool_st *p;
    int ok;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    pthread_mutex_lock(&lock);
    p = pool_of(pool);
    ok = p && p != &devices[p->device].pool;
    if (ok) {
        if (devices[p->device].cur_pool == p)
            devices[p->device].cur_pool = &devices[p->device].pool;
        p->destroyed = 1;
        pool_reap(p);
    }
    pthread_mutex_unlock(&lock);
    sim_log("cuMemPoolDestroy(%p) -> %d", (void *)pool, ok ? 0 : 1);
    return ok ? GS_CUDA_SUCCESS : GS_CUDA_ERROR_INVALID_VALUE;
}
SIM_EXPORT(cuMemPoolDestroy)

static gs_curesult pool_get_locked(const struct gs_cupool_st *p, gs_cumempoolattr attr,
                                   void *value)
{
    gs_cuuint64 *v = value;

    switch (attr) {
    case SIM_CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES: /* fall through */
    case SIM_CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC: /* fall through */
    case SIM_CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        *(int *)value = p->reuse[attr - 1];
        return GS_CUDA_SUCCESS;
    case GS_CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: *v = p->threshold; break;
    case GS_CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: *v = p->reserved; break;
    case SIM_CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: *v = p->reserved_high; break;
    case GS_CU_MEMPOOL_ATTR_USED_MEM_CURRENT: *v = p->used; break;
    case SIM_CU_MEMPOOL_ATTR_USED_MEM_HIGH: *v = p->used_high; break;
    default: return GS_CUDA_ERROR_INVALID_VALUE;
    }
    return GS_CUDA_SUCCESS;
}

/* The high-water marks can only be reset (to the current values, by 0). */
static gs_curesult pool_set_locked(struct gs_cupool_st *p, gs_cumempoolattr attr, void *value)
{
    const gs_cuuint64 *v = value;

    switch (attr) {
    case SIM_CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES: /* fall through */
    case SIM_CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC: /* fall through */
    case SIM_CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        p->reuse[attr - 1] = *(int *)value != 0;
        return GS_CUDA_SUCCESS;
    case GS_CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
        p->threshold = *v;
        return GS_CUDA_SUCCESS;
    case SIM_CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
        if (*v)
            return GS_CUDA_ERROR_INVALID_VALUE;
        p->reserved_high = p->reserved;
        return GS_CUDA_SUCCESS;
    case SIM_CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        if (*v)
            return GS_CUDA_ERROR_INVALID_VALUE;
        p->used_high = p->used;
        return GS_CUDA_SUCCESS;
    default:
        return GS_CUDA_ERROR_INVALID_VALUE;
    }
}

/* Both attribute calls: set != 0 for cuMemPoolSetAttribute. */
static gs_curesult pool_attribute(gs_cumempool pool, gs_cumempoolattr attr, void *value,
                                  int set)
{
    struct gs_cupool_st *p;
    gs_curesult rc = GS_CUDA_ERROR_INVALID_VALUE;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!value)
        return GS_CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    p = pool_of(pool);
    if (p)
        rc = set ? pool_set_locked(p, attr, value) : pool_get_locked(p, attr, value);
    pthread_mutex_unlock(&lock);
    return rc;
}

static gs_curesult sim_cuMemPoolGetAttribute(gs_cumempool pool, gs_cumempoolattr attr,
                                             void *value)
{
    return pool_attribute(pool, attr, value, 0);
}
SIM_EXPORT(cuMemPoolGetAttribute)

static gs_curesult sim_cuMemPoolSetAttribute(gs_cumempool pool, gs_cumempoolattr attr,
                                             void *value)
{
    return pool_attribute(pool, attr, value, 1);
}
SIM_EXPORT(cuMemPoolSetAttribute)

static gs_curesult sim_cuMemPoolTrimTo(gs_cumempool pool, size_t minBytesToKeep)
{
    struct gs_cupool_st *p;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    pthread_mutex_lock(&lock);
    p = pool_of(pool);
    if (p)
        pool_shrink(p, minBytesToKeep);
    pthread_mutex_unlock(&lock);
    return p ? GS_CUDA_SUCCESS : GS_CUDA_ERROR_INVALID_VALUE;
}
SIM_EXPORT(cuMemPoolTrimTo)

/* ---- virtual memory: physical allocations and handles (lock held) ------- */

/* A usable handle's physical allocation index: live and not released to 0. */
static int handle_phys(gs_cumemhandle h)
{
    int i;

    if (!h || h > handle_cap || !handle_tab[h - 1])
        return -1;
    i = handle_tab[h - 1] - 1;
    return phys_tab[i].refs > 0 ? i : -1;
}

/* The lowest free handle, now naming physical allocation i; 0: none. */
static gs_cumemhandle handle_new(int i)
{
    size_t h = 0;
    int *v;

    while (h < handle_cap && handle_tab[h])
        h++;
    v = grow(handle_tab, &handle_cap, h + 1, sizeof *v);
    if (!v)
        return 0;
    handle_tab = v;
    handle_tab[h] = i + 1;
    return h + 1;
}

/* The lowest free physical-allocation slot; -1: none. */
static int phys_new(void)
{
    size_t i = 0;
    struct phys *v;

    while (i < phys_cap && phys_tab[i].serial)
        i++;
    v = grow(phys_tab, &phys_cap, i + 1, sizeof *v);
    if (!v || i > INT32_MAX - 1)
        return -1;
    phys_tab = v;
    return (int)i;
}

/* Frees allocation i once it has no references and no mappings; its
 * handles become free. */
static void phys_maybe_free(int i)
{
    struct phys *p = &phys_tab[i];

    if (p->refs || p->maps)
        return;
    if (p->device >= 0)
        devices[p->device].used -= p->size;
    p->serial = 0;
    for (size_t h = 0; h < handle_cap; h++)
        if (handle_tab[h] == i + 1)
            handle_tab[h] = 0;
}

static gs_curesult create_locked(gs_cumemhandle *out, uint64_t size,
                                 const gs_cumemallocationprop *prop)
{
    int dev = prop->location.type == GS_CU_MEM_LOCATION_TYPE_DEVICE ? prop->location.id : -1;
    gs_cumemhandle h;
    int i;

    if (size > SIM_SPAN || (dev >= 0 && devices[dev].capacity - devices[dev].used < size))
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    i = phys_new();
    h = i < 0 ? 0 : handle_new(i);
    if (!h)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    phys_tab[i] = (struct phys){next_serial++, size, *prop, dev, 1, 0, 0, 0, 0};
    if (dev >= 0)
        devices[dev].used += size;
    *out = h;
    return GS_CUDA_SUCCESS;
}

/* ---- virtual memory: the calls ------------------------------------------ */

/* A location cuMemCreate accepts: a device, or the host (HOST_NUMA: node 0,
 * the only one; HOST: not shareable, so no requested handle types). */
static gs_curesult location_check(const gs_cumemlocation *loc, int handle_types)
{
    switch (loc->type) {
    case GS_CU_MEM_LOCATION_TYPE_DEVICE:
        return valid_device(loc->id) ? GS_CUDA_SUCCESS : GS_CUDA_ERROR_INVALID_DEVICE;
    case GS_CU_MEM_LOCATION_TYPE_HOST:
        return handle_types ? GS_CUDA_ERROR_INVALID_VALUE : GS_CUDA_SUCCESS;
    case GS_CU_MEM_LOCATION_TYPE_HOST_NUMA:
        return loc->id == 0 ? GS_CUDA_SUCCESS : GS_CUDA_ERROR_INVALID_VALUE;
    case GS_CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
        return GS_CUDA_SUCCESS;
    default:
        return GS_CUDA_ERROR_INVALID_VALUE;
    }
}

static gs_curesult prop_check(const gs_cumemallocationprop *prop)
{
    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!prop || prop->type != GS_CU_MEM_ALLOCATION_TYPE_PINNED)
        return GS_CUDA_ERROR_INVALID_VALUE;
    return location_check(&prop->location, prop->requestedHandleTypes);
}

static gs_curesult sim_cuMemGetAllocationGranularity(size_t *granularity,
                                                     const gs_cumemallocationprop *prop,
                                                     int option)
{
    gs_curesult rc = prop_check(prop);

    if (rc == GS_CUDA_SUCCESS &&
        (!granularity || option < 0 || option > SIM_CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
        rc = GS_CUDA_ERROR_INVALID_VALUE;
    if (rc == GS_CUDA_SUCCESS)
        *granularity = SIM_GRANULE;
    return rc;
}
SIM_EXPORT(cuMemGetAllocationGranularity)

static gs_curesult sim_cuMemCreate(gs_cumemhandle *handle, size_t size,
                                   const gs_cumemallocationprop *prop, unsigned long long flags)
{
    gs_curesult rc = prop_check(prop);

    if (rc == GS_CUDA_SUCCESS && (!handle || !size || size % SIM_GRANULE || flags))
        rc = GS_CUDA_ERROR_INVALID_VALUE;
    /* No fabric here (no NVSwitch fabric, no IMEX channel): a FABRIC handle
     * type is refused, and NCCL, PyTorch and XLA retry without it. */
    if (rc == GS_CUDA_SUCCESS && (prop->requestedHandleTypes & GS_CU_MEM_HANDLE_TYPE_FABRIC))
        rc = cfg.fabric ? SIM_CUDA_ERROR_NOT_PERMITTED : GS_CUDA_ERROR_NOT_SUPPORTED;
    if (rc == GS_CUDA_SUCCESS) {
        pthread_mutex_lock(&lock);
        rc = create_locked(handle, size, prop);
        pthread_mutex_unlock(&lock);
    }
    sim_log("cuMemCreate(%zu, location %d/%d) -> %d handle %llu", size,
            prop ? prop->location.type : -1, prop ? prop->location.id : -1, rc,
            rc == GS_CUDA_SUCCESS ? *handle : 0);
    return rc;
}
SIM_EXPORT(cuMemCreate)

static gs_curesult sim_cuMemRelease(gs_cumemhandle handle)
{
    int i;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    pthread_mutex_lock(&lock);
    i = handle_phys(handle);
    if (i >= 0) {
        phys_tab[i].refs--;
        phys_maybe_free(i);
    }
    pthread_mutex_unlock(&lock);
    sim_log("cuMemRelease(%llu) -> %d", handle, i >= 0 ? 0 : 1);
    return i >= 0 ? GS_CUDA_SUCCESS : GS_CUDA_ERROR_INVALID_VALUE;
}
SIM_EXPORT(cuMemRelease)

/* Any address inside a mapping: the handle it was mapped with, retained. */
static gs_curesult sim_cuMemRetainAllocationHandle(gs_cumemhandle *handle, void *addr)
{
    struct range *m;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!handle)
        return GS_CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    m = rs_find(&mappings, (uint64_t)(uintptr_t)addr);
    if (m) {
        phys_tab[m->phys].refs++;
        *handle = m->handle;
    }
    pthread_mutex_unlock(&lock);
    return m ? GS_CUDA_SUCCESS : GS_CUDA_ERROR_INVALID_VALUE;
}
SIM_EXPORT(cuMemRetainAllocationHandle)

/* Only POSIX file descriptors, and only for an allocation that asked for
 * them in requestedHandleTypes. */
static gs_curesult export_locked(int *fd, gs_cumemhandle handle)
{
    int i = handle_phys(handle);
    struct token *t;

    if (i < 0 || !(phys_tab[i].prop.requestedHandleTypes &
                   SIM_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
        return GS_CUDA_ERROR_INVALID_VALUE;
    t = grow(tokens, &tokens_cap, ntokens + 1, sizeof *t);
    if (!t || next_token == INT32_MAX)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    tokens = t;
    tokens[ntokens++] = (struct token){next_token, i, phys_tab[i].serial};
    *fd = next_token++;
    return GS_CUDA_SUCCESS;
}

static gs_curesult sim_cuMemExportToShareableHandle(void *shareableHandle, gs_cumemhandle handle,
                                                    gs_cumemhandletype handleType,
                                                    unsigned long long flags)
{
    gs_curesult rc;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!shareableHandle || flags || handleType != SIM_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return GS_CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    rc = export_locked(shareableHandle, handle);
    pthread_mutex_unlock(&lock);
    sim_log("cuMemExportToShareableHandle(%llu) -> %d fd %d", handle, rc,
            rc == GS_CUDA_SUCCESS ? *(int *)shareableHandle : -1);
    return rc;
}
SIM_EXPORT(cuMemExportToShareableHandle)

/* A new handle for the allocation behind token fd, while it lives. */
static gs_curesult import_locked(gs_cumemhandle *handle, int fd)
{
    const struct token *t = NULL;

    for (size_t k = 0; !t && k < ntokens; k++)
        if (tokens[k].fd == fd)
            t = &tokens[k];
    if (!t || phys_tab[t->phys].serial != t->serial)
        return GS_CUDA_ERROR_INVALID_VALUE;
    *handle = handle_new(t->phys);
    if (!*handle)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    phys_tab[t->phys].refs++;
    return GS_CUDA_SUCCESS;
}

static gs_curesult sim_cuMemImportFromShareableHandle(gs_cumemhandle *handle, void *osHandle,
                                                      gs_cumemhandletype shHandleType)
{
    gs_curesult rc;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!handle || shHandleType != SIM_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return GS_CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    rc = import_locked(handle, (int)(intptr_t)osHandle);
    pthread_mutex_unlock(&lock);
    sim_log("cuMemImportFromShareableHandle(fd %d) -> %d handle %llu", (int)(intptr_t)osHandle,
            rc, rc == GS_CUDA_SUCCESS ? *handle : 0);
    return rc;
}
SIM_EXPORT(cuMemImportFromShareableHandle)

static gs_curesult sim_cuMemGetAllocationPropertiesFromHandle(gs_cumemallocationprop *prop,
                                                              gs_cumemhandle handle)
{
    int i;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!prop)
        return GS_CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    i = handle_phys(handle);
    if (i >= 0)
        *prop = phys_tab[i].prop;
    pthread_mutex_unlock(&lock);
    return i >= 0 ? GS_CUDA_SUCCESS : GS_CUDA_ERROR_INVALID_VALUE;
}
SIM_EXPORT(cuMemGetAllocationPropertiesFromHandle)

/* A non-zero hint is honoured when that range is free and aligned. */
static gs_curesult reserve_locked(gs_cudeviceptr *ptr, uint64_t size, uint64_t align,
                                  uint64_t hint)
{
    uint64_t addr = hint;
    struct range r = {0};

    if (!hint || hint % align || space_take_at(&va_space, hint, size) != 0)
        if (space_take(&va_space, size, align, &addr) != 0)
            return GS_CUDA_ERROR_OUT_OF_MEMORY;
    r.addr = addr;
    r.size = size;
    if (rs_insert(&reservations, &r) != 0) {
        space_put(&va_space, addr, size);
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    }
    *ptr = addr;
    return GS_CUDA_SUCCESS;
}

/* size in 2 MiB multiples, addr (a hint) in pages; alignment 0 or a power
 * of two (at least 2 MiB is used). Consumes no device memory. */
static gs_curesult sim_cuMemAddressReserve(gs_cudeviceptr *ptr, size_t size, size_t alignment,
                                           gs_cudeviceptr addr, unsigned long long flags)
{
    uint64_t align = alignment > SIM_GRANULE ? alignment : SIM_GRANULE;
    gs_curesult rc;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!ptr || !size || size % SIM_GRANULE || addr % SIM_PAGE || flags ||
        (alignment & (alignment - 1)))
        return GS_CUDA_ERROR_INVALID_VALUE;
    if (size > SIM_REGION_SPAN || align > SIM_REGION_SPAN)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&lock);
    rc = reserve_locked(ptr, size, align, addr);
    pthread_mutex_unlock(&lock);
    sim_log("cuMemAddressReserve(%zu) -> %d 0x%llx", size, rc, rc ? 0ull : *ptr);
    return rc;
}
SIM_EXPORT(cuMemAddressReserve)

/* Exactly a reservation, with nothing mapped in it. */
static gs_curesult sim_cuMemAddressFree(gs_cudeviceptr ptr, size_t size)
{
    struct range *r;
    int ok;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    pthread_mutex_lock(&lock);
    r = rs_find(&reservations, ptr);
    ok = r && r->addr == ptr && r->size == size && r->count == 0;
    if (ok) {
        space_put(&va_space, ptr, size);
        rs_remove(&reservations, (size_t)(r - reservations.v), 1);
    }
    pthread_mutex_unlock(&lock);
    sim_log("cuMemAddressFree(0x%llx, %zu) -> %d", ptr, size, ok ? 0 : 1);
    return ok ? GS_CUDA_SUCCESS : GS_CUDA_ERROR_INVALID_VALUE;
}
SIM_EXPORT(cuMemAddressFree)

static gs_curesult map_locked(uint64_t ptr, uint64_t size, uint64_t offset, gs_cumemhandle h)
{
    int i = handle_phys(h);
    struct range *r = rs_find(&reservations, ptr);
    struct range m = {ptr, size, offset, h, i, 0};

    if (i < 0 || !r || size > r->addr + r->size - ptr || rs_overlaps(&mappings, ptr, size) ||
        offset > phys_tab[i].size || size > phys_tab[i].size - offset)
        return GS_CUDA_ERROR_INVALID_VALUE;
    if (rs_insert(&mappings, &m) != 0)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    r->count++;
    phys_tab[i].maps++;
    return GS_CUDA_SUCCESS;
}

/* ptr, size and offset in 2 MiB multiples; the range inside one
 * reservation and not mapped yet; offset + size within the allocation. */
static gs_curesult sim_cuMemMap(gs_cudeviceptr ptr, size_t size, size_t offset,
                                gs_cumemhandle handle, unsigned long long flags)
{
    gs_curesult rc;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!size || ptr % SIM_GRANULE || size % SIM_GRANULE || offset % SIM_GRANULE || flags)
        return GS_CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    rc = map_locked(ptr, size, offset, handle);
    pthread_mutex_unlock(&lock);
    sim_log("cuMemMap(0x%llx, %zu, %zu, %llu) -> %d", ptr, size, offset, handle, rc);
    return rc;
}
SIM_EXPORT(cuMemMap)

/* Drops mappings [i, i+count): their allocations may go. */
static void unmap_locked(size_t i, size_t count)
{
    for (size_t k = i; k < i + count; k++) {
        const struct range *m = &mappings.v[k];

        rs_find(&reservations, m->addr)->count--;
        phys_tab[m->phys].maps--;
        phys_maybe_free(m->phys);
    }
    rs_remove(&mappings, i, count);
}

/* The range must be one mapping, or several adjacent ones, exactly. */
static gs_curesult sim_cuMemUnmap(gs_cudeviceptr ptr, size_t size)
{
    size_t count = 0;
    long i;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    pthread_mutex_lock(&lock);
    i = size ? rs_run(&mappings, ptr, size, &count) : -1;
    if (i >= 0)
        unmap_locked((size_t)i, count);
    pthread_mutex_unlock(&lock);
    sim_log("cuMemUnmap(0x%llx, %zu) -> %d", ptr, size, i >= 0 ? 0 : 1);
    return i >= 0 ? GS_CUDA_SUCCESS : GS_CUDA_ERROR_INVALID_VALUE;
}
SIM_EXPORT(cuMemUnmap)

static gs_curesult access_check(const struct sim_access_desc *desc, size_t count)
{
    for (size_t k = 0; k < count; k++) {
        gs_curesult rc = location_check(&desc[k].location, 0);

        if (rc != GS_CUDA_SUCCESS)
            return rc;
        if (desc[k].flags != 0 && desc[k].flags != SIM_CU_MEM_ACCESS_FLAGS_PROT_READ &&
            desc[k].flags != SIM_CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            return GS_CUDA_ERROR_INVALID_VALUE;
    }
    return GS_CUDA_SUCCESS;
}

/* Checks the arguments and that the range is whole adjacent mappings;
 * access is not simulated. */
static gs_curesult sim_cuMemSetAccess(gs_cudeviceptr ptr, size_t size,
                                      const struct sim_access_desc *desc, size_t count)
{
    gs_curesult rc;
    size_t n;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!desc || !count || !size)
        return GS_CUDA_ERROR_INVALID_VALUE;
    rc = access_check(desc, count);
    if (rc != GS_CUDA_SUCCESS)
        return rc;
    pthread_mutex_lock(&lock);
    if (rs_run(&mappings, ptr, size, &n) < 0)
        rc = GS_CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&lock);
    return rc;
}
SIM_EXPORT(cuMemSetAccess)

/* ---- multicast objects (NCCL's NVLS) ------------------------------------ */

/* A usable multicast object's allocation index; -1: none. */
static int mc_phys(gs_cumemhandle h)
{
    int i = handle_phys(h);
    return i >= 0 && phys_tab[i].multicast ? i : -1;
}

static gs_curesult mc_prop_check(const gs_cumulticastobjectprop *prop)
{
    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!prop || !prop->numDevices || prop->numDevices > SIM_MAX_DEVICES || prop->flags)
        return GS_CUDA_ERROR_INVALID_VALUE;
    return GS_CUDA_SUCCESS;
}

/* Both granularities are the 2 MiB of physical memory. */
static gs_curesult sim_cuMulticastGetGranularity(size_t *granularity,
                                                 const gs_cumulticastobjectprop *prop, int option)
{
    gs_curesult rc = mc_prop_check(prop);

    if (rc == GS_CUDA_SUCCESS && (!granularity || option < 0 || option > 1))
        rc = GS_CUDA_ERROR_INVALID_VALUE;
    if (rc == GS_CUDA_SUCCESS)
        *granularity = SIM_GRANULE;
    return rc;
}
SIM_EXPORT(cuMulticastGetGranularity)

/* size in 2 MiB multiples; no device is charged. */
static gs_curesult sim_cuMulticastCreate(gs_cumemhandle *mcHandle,
                                         const gs_cumulticastobjectprop *prop)
{
    gs_curesult rc = mc_prop_check(prop);
    gs_cumemhandle h = 0;
    int i;

    if (rc == GS_CUDA_SUCCESS &&
        (!mcHandle || !prop->size || prop->size % SIM_GRANULE || prop->size > SIM_SPAN))
        rc = GS_CUDA_ERROR_INVALID_VALUE;
    if (rc == GS_CUDA_SUCCESS) {
        pthread_mutex_lock(&lock);
        i = phys_new();
        h = i < 0 ? 0 : handle_new(i);
        if (h) {
            phys_tab[i] = (struct phys){next_serial++, prop->size, {0}, -1, 1, 0,
                                        1, prop->numDevices, 0};
            /* exportable as the object asked: other processes import it */
            phys_tab[i].prop.requestedHandleTypes = (int)prop->handleTypes;
            *mcHandle = h;
        } else {
            rc = GS_CUDA_ERROR_OUT_OF_MEMORY;
        }
        pthread_mutex_unlock(&lock);
    }
    sim_log("cuMulticastCreate(%zu, %u devices) -> %d handle %llu", prop ? prop->size : 0,
            prop ? prop->numDevices : 0, rc, h);
    return rc;
}
SIM_EXPORT(cuMulticastCreate)

/* At most numDevices devices, each once. */
static gs_curesult sim_cuMulticastAddDevice(gs_cumemhandle mcHandle, gs_cudevice dev)
{
    gs_curesult rc = GS_CUDA_SUCCESS;
    int i;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!valid_device(dev))
        return GS_CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&lock);
    i = mc_phys(mcHandle);
    if (i < 0 || phys_tab[i].mc_team & (1u << dev) ||
        (unsigned)__builtin_popcount(phys_tab[i].mc_team) >= phys_tab[i].mc_devices)
        rc = GS_CUDA_ERROR_INVALID_VALUE;
    else
        phys_tab[i].mc_team |= 1u << dev;
    pthread_mutex_unlock(&lock);
    sim_log("cuMulticastAddDevice(%llu, %d) -> %d", mcHandle, dev, rc);
    return rc;
}
SIM_EXPORT(cuMulticastAddDevice)

/* Binds [mem_offset, +size) of device memory allocation mem to
 * [mc_offset, +size) of object mc for the memory's device, which must have
 * joined the team and have nothing bound there yet. */
static gs_curesult bind_locked(int mc, uint64_t mc_offset, int mem, uint64_t mem_offset,
                               uint64_t size)
{
    const struct phys *o = &phys_tab[mc], *m = &phys_tab[mem];
    struct mc_bind *v;

    if (m->multicast || m->device < 0 || !(o->mc_team & (1u << m->device)) || !size ||
        mc_offset % SIM_GRANULE || mem_offset % SIM_GRANULE || size % SIM_GRANULE ||
        mc_offset > o->size || size > o->size - mc_offset || mem_offset > m->size ||
        size > m->size - mem_offset)
        return GS_CUDA_ERROR_INVALID_VALUE;
    for (size_t k = 0; k < nmc_binds; k++) {
        const struct mc_bind *b = &mc_binds[k];
        if (b->mc == mc && b->dev == m->device && mc_offset < b->mc_offset + b->size &&
            b->mc_offset < mc_offset + size)
            return GS_CUDA_ERROR_INVALID_VALUE;
    }
    v = grow(mc_binds, &mc_binds_cap, nmc_binds + 1, sizeof *v);
    if (!v)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    mc_binds = v;
    mc_binds[nmc_binds++] = (struct mc_bind){o->serial, mc, m->device, mem, mc_offset, size};
    phys_tab[mem].maps++;
    return GS_CUDA_SUCCESS;
}

static gs_curesult sim_cuMulticastBindMem(gs_cumemhandle mcHandle, size_t mcOffset,
                                          gs_cumemhandle memHandle, size_t memOffset, size_t size,
                                          unsigned long long flags)
{
    gs_curesult rc = GS_CUDA_ERROR_INVALID_VALUE;
    int mc, mem;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    pthread_mutex_lock(&lock);
    mc = mc_phys(mcHandle);
    mem = handle_phys(memHandle);
    if (mc >= 0 && mem >= 0 && !flags)
        rc = bind_locked(mc, mcOffset, mem, memOffset, size);
    pthread_mutex_unlock(&lock);
    sim_log("cuMulticastBindMem(%llu, %zu, %llu, %zu, %zu) -> %d", mcHandle, mcOffset, memHandle,
            memOffset, size, rc);
    return rc;
}
SIM_EXPORT(cuMulticastBindMem)

/* memptr: inside a mapping of device memory, which must cover the size. */
static gs_curesult sim_cuMulticastBindAddr(gs_cumemhandle mcHandle, size_t mcOffset,
                                           gs_cudeviceptr memptr, size_t size,
                                           unsigned long long flags)
{
    gs_curesult rc = GS_CUDA_ERROR_INVALID_VALUE;
    const struct range *m;
    int mc;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    pthread_mutex_lock(&lock);
    mc = mc_phys(mcHandle);
    m = rs_find(&mappings, memptr);
    if (mc >= 0 && m && !flags && size <= m->addr + m->size - memptr)
        rc = bind_locked(mc, mcOffset, m->phys, m->offset + (memptr - m->addr), size);
    pthread_mutex_unlock(&lock);
    sim_log("cuMulticastBindAddr(%llu, %zu, 0x%llx, %zu) -> %d", mcHandle, mcOffset, memptr, size,
            rc);
    return rc;
}
SIM_EXPORT(cuMulticastBindAddr)

/* Exactly one binding of dev's; its memory may go. */
static gs_curesult sim_cuMulticastUnbind(gs_cumemhandle mcHandle, gs_cudevice dev,
                                         size_t mcOffset, size_t size)
{
    gs_curesult rc = GS_CUDA_ERROR_INVALID_VALUE;
    int mc;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    pthread_mutex_lock(&lock);
    mc = mc_phys(mcHandle);
    for (size_t k = 0; mc >= 0 && k < nmc_binds; k++) {
        struct mc_bind *b = &mc_binds[k];
        if (b->mc != mc || b->mc_serial != phys_tab[mc].serial || b->dev != dev ||
            b->mc_offset != mcOffset || b->size != size)
            continue;
        int mem = b->phys;
        *b = mc_binds[--nmc_binds];
        phys_tab[mem].maps--;
        phys_maybe_free(mem);
        rc = GS_CUDA_SUCCESS;
        break;
    }
    pthread_mutex_unlock(&lock);
    sim_log("cuMulticastUnbind(%llu, %d, %zu, %zu) -> %d", mcHandle, dev, mcOffset, size, rc);
    return rc;
}
SIM_EXPORT(cuMulticastUnbind)

/* ---- pinned host memory ------------------------------------------------- */

/* Real, page-aligned memory, tracked so cuMemFreeHost can check it. */
static gs_curesult host_alloc(const char *api, void **pp, size_t bytesize, unsigned int flags)
{
    int dev = current_device();
    struct range r = {0};
    void *p;
    int bad;

    if (dev < 0)
        return -dev;
    if (!pp || !bytesize || (flags & ~(unsigned)SIM_CU_MEMHOSTALLOC_ALL))
        return GS_CUDA_ERROR_INVALID_VALUE;
    if (bytesize > SIM_SPAN)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    r.size = round_up(bytesize, SIM_PAGE);
    p = aligned_alloc(SIM_PAGE, r.size);
    if (!p)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    r.addr = (uint64_t)(uintptr_t)p;
    r.count = HOST_ALLOCATED;
    pthread_mutex_lock(&lock);
    bad = rs_insert(&host_ranges, &r);
    pthread_mutex_unlock(&lock);
    if (bad)
        free(p);
    else
        *pp = p;
    sim_log("%s(%zu) -> %d %p", api, bytesize, bad ? 2 : 0, bad ? NULL : p);
    return bad ? GS_CUDA_ERROR_OUT_OF_MEMORY : GS_CUDA_SUCCESS;
}

static gs_curesult sim_cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    return host_alloc("cuMemHostAlloc", pp, bytesize, Flags);
}
SIM_EXPORT(cuMemHostAlloc)

static gs_curesult sim_cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    return host_alloc("cuMemAllocHost_v2", pp, bytesize, 0);
}
SIM_EXPORT(cuMemAllocHost_v2)

/* Removes the host range that starts at p if it has the given kind. */
static int host_take(const void *p, int kind)
{
    struct range *r;
    int found;

    pthread_mutex_lock(&lock);
    r = rs_find(&host_ranges, (uint64_t)(uintptr_t)p);
    found = p && r && r->addr == (uint64_t)(uintptr_t)p && r->count == kind;
    if (found)
        rs_remove(&host_ranges, (size_t)(r - host_ranges.v), 1);
    pthread_mutex_unlock(&lock);
    return found;
}

static gs_curesult sim_cuMemFreeHost(void *p)
{
    int dev = current_device();
    int found;

    if (dev < 0)
        return -dev;
    found = host_take(p, HOST_ALLOCATED);
    if (found)
        free(p);
    sim_log("cuMemFreeHost(%p) -> %d", p, found ? 0 : 1);
    return found ? GS_CUDA_SUCCESS : GS_CUDA_ERROR_INVALID_VALUE;
}
SIM_EXPORT(cuMemFreeHost)

/* Any overlap with a registration or a pinned allocation is refused. */
static gs_curesult sim_cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
    int dev = current_device();
    struct range r = {(uint64_t)(uintptr_t)p, bytesize, 0, 0, 0, HOST_REGISTERED};
    gs_curesult rc = GS_CUDA_SUCCESS;

    if (dev < 0)
        return -dev;
    if (!p || !bytesize || bytesize > UINT64_MAX - r.addr ||
        (Flags & ~(unsigned)SIM_CU_MEMHOSTREGISTER_ALL))
        return GS_CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    if (rs_overlaps(&host_ranges, r.addr, bytesize))
        rc = SIM_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    else if (rs_insert(&host_ranges, &r) != 0)
        rc = GS_CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_unlock(&lock);
    sim_log("cuMemHostRegister_v2(%p, %zu) -> %d", p, bytesize, rc);
    return rc;
}
SIM_EXPORT(cuMemHostRegister_v2)

/* p must be the start of a registration. */
static gs_curesult sim_cuMemHostUnregister(void *p)
{
    int dev = current_device();
    int found;

    if (dev < 0)
        return -dev;
    found = host_take(p, HOST_REGISTERED);
    sim_log("cuMemHostUnregister(%p) -> %d", p, found ? 0 : 713);
    return found ? GS_CUDA_SUCCESS : SIM_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}
SIM_EXPORT(cuMemHostUnregister)

/* Unified addressing: the device sees pinned memory at the host address. */
static gs_curesult sim_cuMemHostGetDevicePointer_v2(gs_cudeviceptr *pdptr, void *p,
                                                    unsigned int Flags)
{
    int dev = current_device();
    int found;

    if (dev < 0)
        return -dev;
    if (!pdptr || Flags)
        return GS_CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    found = rs_find(&host_ranges, (uint64_t)(uintptr_t)p) != NULL;
    pthread_mutex_unlock(&lock);
    if (found)
        *pdptr = (gs_cudeviceptr)(uintptr_t)p;
    return found ? GS_CUDA_SUCCESS : GS_CUDA_ERROR_INVALID_VALUE;
}
SIM_EXPORT(cuMemHostGetDevicePointer_v2)

/* ---- arrays ------------------------------------------------------------- */

static unsigned int format_bytes(int format)
{
    switch (format) {
    case GS_CU_AD_FORMAT_UNSIGNED_INT8:
    case GS_CU_AD_FORMAT_SIGNED_INT8:
        return 1;
    case GS_CU_AD_FORMAT_UNSIGNED_INT16:
    case GS_CU_AD_FORMAT_SIGNED_INT16:
    case GS_CU_AD_FORMAT_HALF:
        return 2;
    case GS_CU_AD_FORMAT_UNSIGNED_INT32:
    case GS_CU_AD_FORMAT_SIGNED_INT32:
    case GS_CU_AD_FORMAT_FLOAT:
        return 4;
    default:
        return 0;
    }
}

/* Bytes of one array: width * max(height,1) * max(depth,1) elements. Too
 * big for any device: CUDA_ERROR_OUT_OF_MEMORY. */
static gs_curesult array_bytes(size_t w, size_t h, size_t d, int format, unsigned int channels,
                               uint64_t *out)
{
    uint64_t n = format_bytes(format);

    if (!w || !n || (channels != 1 && channels != 2 && channels != 4))
        return GS_CUDA_ERROR_INVALID_VALUE;
    if (__builtin_mul_overflow(n * channels, (uint64_t)w, &n) ||
        __builtin_mul_overflow(n, (uint64_t)(h ? h : 1), &n) ||
        __builtin_mul_overflow(n, (uint64_t)(d ? d : 1), &n) || n > SIM_SPAN)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    *out = n;
    return GS_CUDA_SUCCESS;
}

static size_t level_extent(size_t extent, unsigned int level)
{
    return extent >> level ? extent >> level : 1;
}

/* The sum over levels 0..levels-1, each extent halved per level (at least
 * 1); at most floor(log2(largest extent)) + 1 levels. */
static gs_curesult mipmap_bytes(const gs_cuarray3ddesc *a, unsigned int levels, uint64_t *out)
{
    size_t big = a->Width > a->Height ? a->Width : a->Height;
    unsigned int max_levels = 0;
    uint64_t sum = 0, n;

    if (a->Depth > big)
        big = a->Depth;
    while (max_levels < 64 && big >> max_levels)
        max_levels++;
    if (!levels || levels > max_levels)
        return GS_CUDA_ERROR_INVALID_VALUE;
    for (unsigned int l = 0; l < levels; l++) {
        gs_curesult rc = array_bytes(level_extent(a->Width, l), level_extent(a->Height, l),
                                     level_extent(a->Depth, l), a->Format, a->NumChannels, &n);

        if (rc != GS_CUDA_SUCCESS)
            return rc;
        sum += n;
    }
    if (sum > SIM_SPAN)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    *out = sum;
    return GS_CUDA_SUCCESS;
}

/* A new object of bytes (rounded to 512) charged to dev and registered;
 * NULL when out of memory. */
static struct sim_array *array_new(const char *api, struct reg *set, int dev, uint64_t bytes)
{
    struct sim_array *a = malloc(sizeof *a);
    int ok = 0;

    if (!a)
        return NULL;
    *a = (struct sim_array){dev, round_up(bytes, SIM_ALIGN)};
    pthread_mutex_lock(&lock);
    if (devices[dev].capacity - devices[dev].used >= a->size && reg_add(set, a) == 0) {
        devices[dev].used += a->size;
        ok = 1;
    }
    pthread_mutex_unlock(&lock);
    sim_log("%s(%llu) dev %d -> %d %p", api, (unsigned long long)bytes, dev, ok ? 0 : 2,
            (void *)a);
    if (!ok)
        free(a);
    return ok ? a : NULL;
}

static gs_curesult array_destroy(const char *api, struct reg *set, void *handle)
{
    long i;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    pthread_mutex_lock(&lock);
    i = reg_index(set, handle);
    if (i >= 0) {
        const struct sim_array *a = handle;

        devices[a->device].used -= a->size;
        reg_del(set, (size_t)i);
    }
    pthread_mutex_unlock(&lock);
    sim_log("%s(%p) -> %d", api, handle, i >= 0 ? 0 : SIM_CUDA_ERROR_INVALID_HANDLE);
    if (i < 0)
        return SIM_CUDA_ERROR_INVALID_HANDLE;
    free(handle);
    return GS_CUDA_SUCCESS;
}

static gs_curesult sim_cuArrayCreate_v2(gs_cuarray *pHandle, const gs_cuarraydesc *pAllocateArray)
{
    int dev = current_device();
    const gs_cuarraydesc *a = pAllocateArray;
    uint64_t bytes;
    gs_curesult rc;

    if (dev < 0)
        return -dev;
    if (!pHandle || !a)
        return GS_CUDA_ERROR_INVALID_VALUE;
    rc = array_bytes(a->Width, a->Height, 0, a->Format, a->NumChannels, &bytes);
    if (rc != GS_CUDA_SUCCESS)
        return rc;
    *pHandle = (gs_cuarray)(void *)array_new("cuArrayCreate_v2", &arrays, dev, bytes);
    return *pHandle ? GS_CUDA_SUCCESS : GS_CUDA_ERROR_OUT_OF_MEMORY;
}
SIM_EXPORT(cuArrayCreate_v2)

static gs_curesult sim_cuArray3DCreate_v2(gs_cuarray *pHandle,
                                          const gs_cuarray3ddesc *pAllocateArray)
{
    int dev = current_device();
    const gs_cuarray3ddesc *a = pAllocateArray;
    uint64_t bytes;
    gs_curesult rc;

    if (dev < 0)
        return -dev;
    if (!pHandle || !a)
        return GS_CUDA_ERROR_INVALID_VALUE;
    rc = array_bytes(a->Width, a->Height, a->Depth, a->Format, a->NumChannels, &bytes);
    if (rc != GS_CUDA_SUCCESS)
        return rc;
    *pHandle = (gs_cuarray)(void *)array_new("cuArray3DCreate_v2", &arrays, dev, bytes);
    return *pHandle ? GS_CUDA_SUCCESS : GS_CUDA_ERROR_OUT_OF_MEMORY;
}
SIM_EXPORT(cuArray3DCreate_v2)

static gs_curesult sim_cuArrayDestroy(gs_cuarray hArray)
{
    return array_destroy("cuArrayDestroy", &arrays, hArray);
}
SIM_EXPORT(cuArrayDestroy)

static gs_curesult sim_cuMipmappedArrayCreate(gs_cumipmappedarray *pHandle,
                                              const gs_cuarray3ddesc *pMipmappedArrayDesc,
                                              unsigned int numMipmapLevels)
{
    int dev = current_device();
    uint64_t bytes;
    gs_curesult rc;

    if (dev < 0)
        return -dev;
    if (!pHandle || !pMipmappedArrayDesc)
        return GS_CUDA_ERROR_INVALID_VALUE;
    rc = mipmap_bytes(pMipmappedArrayDesc, numMipmapLevels, &bytes);
    if (rc != GS_CUDA_SUCCESS)
        return rc;
    *pHandle = (gs_cumipmappedarray)(void *)array_new("cuMipmappedArrayCreate", &mip_arrays,
                                                      dev, bytes);
    return *pHandle ? GS_CUDA_SUCCESS : GS_CUDA_ERROR_OUT_OF_MEMORY;
}
SIM_EXPORT(cuMipmappedArrayCreate)

static gs_curesult sim_cuMipmappedArrayDestroy(gs_cumipmappedarray hMipmappedArray)
{
    return array_destroy("cuMipmappedArrayDestroy", &mip_arrays, hMipmappedArray);
}
SIM_EXPORT(cuMipmappedArrayDestroy)

/* ---- IPC ---------------------------------------------------------------- */

static const char ipc_magic[8] = "SIMIPC1";

/* Any address inside a live cuMemAlloc/cuMemAllocPitch allocation (not
 * managed, not from a pool): the handle names the whole allocation. */
static gs_curesult sim_cuIpcGetMemHandle(gs_cuipcmemhandle *pHandle, gs_cudeviceptr dptr)
{
    int dev = current_device();
    struct sim_ipc ipc = {{0}, 0, 0, 0, 0, 0};
    struct live *e;

    if (dev < 0)
        return -dev;
    if (!pHandle)
        return GS_CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    e = table_containing(dptr);
    if (e && !e->managed && !e->pool)
        ipc = (struct sim_ipc){{0}, (int32_t)getpid(), e->device, e->addr, e->size, e->serial};
    pthread_mutex_unlock(&lock);
    if (!ipc.size)
        return GS_CUDA_ERROR_INVALID_VALUE;
    memcpy(ipc.magic, ipc_magic, sizeof ipc.magic);
    memset(pHandle, 0, sizeof *pHandle);
    memcpy(pHandle->reserved, &ipc, sizeof ipc);
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuIpcGetMemHandle)

/* An open handle gets one address per process, reference-counted. */
static gs_curesult ipc_open_locked(gs_cudeviceptr *pdptr, const gs_cuipcmemhandle *h,
                                   uint64_t size)
{
    struct ipc_open *v;
    uint64_t addr;

    for (size_t k = 0; k < nipc_opens; k++) {
        if (memcmp(&ipc_opens[k].handle, h, sizeof *h) == 0) {
            ipc_opens[k].refs++;
            *pdptr = ipc_opens[k].addr;
            return GS_CUDA_SUCCESS;
        }
    }
    v = grow(ipc_opens, &ipc_opens_cap, nipc_opens + 1, sizeof *v);
    if (!v)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    ipc_opens = v;
    if (space_take(&ipc_space, size, SIM_ALIGN, &addr) != 0)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    ipc_opens[nipc_opens++] = (struct ipc_open){*h, addr, size, 1};
    *pdptr = addr;
    return GS_CUDA_SUCCESS;
}

/* Any handle this sim wrote, even this process's own; no device memory. */
static gs_curesult sim_cuIpcOpenMemHandle_v2(gs_cudeviceptr *pdptr, gs_cuipcmemhandle handle,
                                             unsigned int Flags)
{
    int dev = current_device();
    struct sim_ipc ipc;
    gs_curesult rc;

    if (dev < 0)
        return -dev;
    memcpy(&ipc, handle.reserved, sizeof ipc);
    if (!pdptr || (Flags & ~(unsigned)SIM_CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) ||
        memcmp(ipc.magic, ipc_magic, sizeof ipc.magic) != 0 || !valid_device(ipc.device) ||
        !ipc.size || ipc.size > SIM_SPAN)
        return GS_CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    rc = ipc_open_locked(pdptr, &handle, ipc.size);
    pthread_mutex_unlock(&lock);
    sim_log("cuIpcOpenMemHandle_v2(dev %d 0x%llx) -> %d 0x%llx", ipc.device,
            (unsigned long long)ipc.dptr, rc, rc ? 0ull : *pdptr);
    return rc;
}
SIM_EXPORT(cuIpcOpenMemHandle_v2)

/* The last close of an opened handle frees its address. */
static gs_curesult sim_cuIpcCloseMemHandle(gs_cudeviceptr dptr)
{
    int dev = current_device();
    size_t k = 0;
    int found;

    if (dev < 0)
        return -dev;
    pthread_mutex_lock(&lock);
    while (k < nipc_opens && ipc_opens[k].addr != dptr)
        k++;
    found = k < nipc_opens;
    if (found && --ipc_opens[k].refs == 0) {
        space_put(&ipc_space, ipc_opens[k].addr, ipc_opens[k].size);
        ipc_opens[k] = ipc_opens[--nipc_opens];
    }
    pthread_mutex_unlock(&lock);
    sim_log("cuIpcCloseMemHandle(0x%llx) -> %d", dptr, found ? 0 : 1);
    return found ? GS_CUDA_SUCCESS : GS_CUDA_ERROR_INVALID_VALUE;
}
SIM_EXPORT(cuIpcCloseMemHandle)

/* ---- pointer queries ---------------------------------------------------- */

/* Writes attribute `attribute` of allocation e into data. */
static gs_curesult pointer_attribute(void *data, int attribute, const struct live *e,
                                     gs_cudeviceptr ptr)
{
    switch (attribute) {
    case SIM_CU_POINTER_ATTRIBUTE_CONTEXT:
        *(gs_cucontext *)data = &devices[e->device].ctx;
        return GS_CUDA_SUCCESS;
    case SIM_CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned int *)data = SIM_CU_MEMORYTYPE_DEVICE;
        return GS_CUDA_SUCCESS;
    case SIM_CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        *(gs_cudeviceptr *)data = ptr;
        return GS_CUDA_SUCCESS;
    case SIM_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *(int *)data = e->device;
        return GS_CUDA_SUCCESS;
    case SIM_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *(gs_cudeviceptr *)data = e->addr;
        return GS_CUDA_SUCCESS;
    case SIM_CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *(size_t *)data = e->size;
        return GS_CUDA_SUCCESS;
    default:
        return GS_CUDA_ERROR_INVALID_VALUE;
    }
}

/* An address inside a mapping of device memory: its device (NCCL's
 * ncclMemFree asks it of a cuMem buffer); the other attributes, and
 * mappings of host memory or of a multicast object, are not simulated. */
static gs_curesult mapped_attribute(void *data, int attribute, gs_cudeviceptr ptr)
{
    const struct range *m = rs_find(&mappings, ptr);

    if (!m || attribute != SIM_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL ||
        phys_tab[m->phys].device < 0)
        return GS_CUDA_ERROR_INVALID_VALUE;
    *(int *)data = phys_tab[m->phys].device;
    return GS_CUDA_SUCCESS;
}

/* Answers for any address inside a live cuMemAlloc-style allocation;
 * RANGE_SIZE is the accounted (rounded) size. */
static gs_curesult sim_cuPointerGetAttribute(void *data, int attribute, gs_cudeviceptr ptr)
{
    struct live *e;
    gs_curesult rc = GS_CUDA_ERROR_INVALID_VALUE;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!data)
        return GS_CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    e = table_containing(ptr);
    if (e)
        rc = pointer_attribute(data, attribute, e, ptr);
    else
        rc = mapped_attribute(data, attribute, ptr);
    pthread_mutex_unlock(&lock);
    return rc;
}
SIM_EXPORT(cuPointerGetAttribute)

/* The range holding dptr, lock held: an allocation (rounded size), a
 * mapping, or an opened IPC handle. */
static int address_range_locked(gs_cudeviceptr dptr, uint64_t *base, uint64_t *size)
{
    struct live *e = table_containing(dptr);
    const struct range *m = e ? NULL : rs_find(&mappings, dptr);

    if (e || m) {
        *base = e ? e->addr : m->addr;
        *size = e ? e->size : m->size;
        return 1;
    }
    for (size_t k = 0; k < nipc_opens; k++) {
        if (dptr - ipc_opens[k].addr < ipc_opens[k].size) {
            *base = ipc_opens[k].addr;
            *size = ipc_opens[k].size;
            return 1;
        }
    }
    return 0;
}

static gs_curesult sim_cuMemGetAddressRange_v2(gs_cudeviceptr *pbase, size_t *psize,
                                               gs_cudeviceptr dptr)
{
    uint64_t base = 0, size = 0;
    int found;
    int dev = current_device();

    if (dev < 0)
        return -dev;
    pthread_mutex_lock(&lock);
    found = address_range_locked(dptr, &base, &size);
    pthread_mutex_unlock(&lock);
    if (!found)
        return GS_CUDA_ERROR_NOT_FOUND;
    if (pbase)
        *pbase = base;
    if (psize)
        *psize = size;
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuMemGetAddressRange_v2)

/* ---- CUDA graphs -------------------------------------------------------- */

/* Stream capture and graph memory nodes, as NVIDIA documents them (CUDA
 * Programming Guide, "Graph Memory Nodes"; Driver API reference of
 * cuStreamBeginCapture_v2, cuThreadExchangeStreamCaptureMode,
 * cuGraphAddMemAllocNode, cuGraphInstantiateWithFlags, cuGraphLaunch,
 * cuDeviceGraphMemTrim, cuDeviceGetGraphMemAttribute):
 *   - A stream captures from cuStreamBeginCapture_v2 to cuStreamEndCapture,
 *     which hands back the graph. cuMemAllocAsync, cuMemAllocFromPoolAsync
 *     and cuMemFreeAsync on it add allocation and free nodes instead of
 *     running: nothing is allocated or freed then. The NULL, legacy and
 *     per-thread streams cannot capture (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED).
 *   - Potentially unsafe calls (here cuMemAlloc and cuMemFree) fail with
 *     CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED when the calling thread's mode
 *     (cuThreadExchangeStreamCaptureMode; GLOBAL by default) is not RELAXED
 *     and the thread has a capture under way not begun RELAXED, or the mode
 *     is GLOBAL and another thread has a GLOBAL capture under way. (The
 *     real driver also invalidates the capture; the sim does not.)
 *   - An allocation node's address is chosen when the node is made and stays
 *     the graph's while the node exists (in the graph or an executable made
 *     of it), and while the allocation is live after it. The sim gives each node an address of its own (the driver
 *     may reuse one within a graph for allocations whose lifetimes do not
 *     overlap; the sim does not).
 *   - A free node frees a graph allocation: one of the same graph (at most
 *     once), or one another graph left live. Other addresses are refused
 *     with CUDA_ERROR_INVALID_VALUE.
 *   - The memory comes from the device's graph pool when the graph runs
 *     (cuGraphLaunch), or is set aside for it by cuGraphUpload: the nodes
 *     run in the order they were added, an allocation's bytes are used from
 *     the allocation node to its free (so allocations whose lifetimes do not
 *     overlap share physical memory), and the pool grows in 2 MiB chunks,
 *     charged to the device (cuMemGetInfo sees them), to cover what the run
 *     uses at once. A launch that cannot grow the pool enough fails with
 *     CUDA_ERROR_OUT_OF_MEMORY and runs nothing (the documentation does not
 *     say what a launch does without memory; this is the sim's choice).
 *     Everything completes at once, as the rest of the sim's stream work.
 *   - Freed graph memory (a free node, cuMemFreeAsync, cuMemFree) goes back
 *     to the pool, which keeps it (cuStreamSynchronize does not shrink it)
 *     until cuDeviceGraphMemTrim gives back the chunks no live graph
 *     allocation needs.
 *   - A graph allocation not freed in its graph stays live after the launch
 *     until freed; launching that executable again before is
 *     CUDA_ERROR_INVALID_VALUE, unless it was instantiated with
 *     CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH, which frees them first.
 *     Destroying the graph or the executable frees nothing.
 *   - A graph with memory nodes has at most one executable at a time.
 *   - CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT is the bytes of live graph
 *     allocations, RESERVED_MEM_CURRENT what the pool holds; the two HIGH
 *     attributes their largest values, reset (cuDeviceSetGraphMemAttribute,
 *     value 0 only) to the current ones.
 */
#define SIM_CUDA_ERROR_ILLEGAL_STATE 401
#define SIM_CU_GRAPH_INSTANTIATE_FLAGS_ALL 0xfull /* AUTO_FREE_ON_LAUNCH ... USE_NODE_PRIORITY */

/* A memory node; a CUgraphNode is the address of one. */
struct sim_gnode {
    int is_free;
    int dev;
    uint64_t addr, size; /* size: allocation nodes only */
};

struct sim_graph {
    struct sim_gnode **nodes;
    size_t n, cap;
    int execs; /* its executables alive */
};

/* A CUgraphExec: the nodes as they were at instantiation. */
struct sim_gexec {
    struct sim_graph *graph; /* NULL once the graph is destroyed */
    struct sim_gnode *nodes;
    size_t n;
    unsigned long long flags;
};

/* A graph allocation's address, reserved while its node exists or it is live. */
struct sim_galloc {
    uint64_t addr, size;
    int dev;
    int node; /* its allocation node and the executables' copies of it that exist */
    int live; /* allocated by a run and not yet freed */
};

static struct reg graphs, gexecs;
static struct sim_galloc *gallocs;
static size_t ngallocs, gallocs_cap;
static struct {
    uint64_t used, reserved, used_high, reserved_high;
} gpool[SIM_MAX_DEVICES];
static int global_captures;             /* GLOBAL captures under way, all threads */
static __thread int thread_captures;    /* this thread's captures not begun RELAXED */
static __thread int thread_global;      /* ... of which GLOBAL */
static __thread int thread_capture_mode; /* GS_CU_STREAM_CAPTURE_MODE_GLOBAL (0) */

static int capture_prohibits(void)
{
    int mode = thread_capture_mode, no;

    if (mode == GS_CU_STREAM_CAPTURE_MODE_RELAXED)
        return 0;
    pthread_mutex_lock(&lock);
    no = thread_captures > 0 ||
         (mode == GS_CU_STREAM_CAPTURE_MODE_GLOBAL && global_captures > thread_global);
    pthread_mutex_unlock(&lock);
    return no;
}

static struct sim_galloc *galloc_find(uint64_t addr)
{
    for (size_t i = 0; i < ngallocs; i++)
        if (gallocs[i].addr == addr)
            return &gallocs[i];
    return NULL;
}

/* Gives back a graph allocation's address once nothing holds it. */
static void galloc_reap(struct sim_galloc *g)
{
    if (g->node || g->live)
        return;
    space_put(&devices[g->dev].space, g->addr, g->size);
    *g = gallocs[--ngallocs];
}

static void gpool_use(int dev, uint64_t size)
{
    gpool[dev].used += size;
    if (gpool[dev].used > gpool[dev].used_high)
        gpool[dev].used_high = gpool[dev].used;
}

static void gpool_reserve(int dev, uint64_t reserved)
{
    if (reserved <= gpool[dev].reserved)
        return;
    devices[dev].used += reserved - gpool[dev].reserved;
    gpool[dev].reserved = reserved;
    if (reserved > gpool[dev].reserved_high)
        gpool[dev].reserved_high = reserved;
}

/* A live graph allocation freed: its bytes go back to the graph pool. */
static void galloc_end(struct sim_galloc *g)
{
    g->live = 0;
    gpool[g->dev].used -= g->size;
    galloc_reap(g);
}

static int graph_free_locked(gs_cudeviceptr dptr)
{
    struct sim_galloc *g = galloc_find(dptr);

    if (!g || !g->live)
        return 0;
    galloc_end(g);
    return 1;
}

static struct sim_graph *graph_of(const void *p)
{
    long i = reg_index(&graphs, p);
    return i < 0 ? NULL : graphs.v[i];
}

static struct sim_gexec *gexec_of(const void *p)
{
    long i = reg_index(&gexecs, p);
    return i < 0 ? NULL : gexecs.v[i];
}

static gs_curesult node_add(struct sim_graph *g, int is_free, int dev, uint64_t addr,
                            uint64_t size, struct sim_gnode **out)
{
    struct sim_gnode *n = malloc(sizeof *n);
    struct sim_gnode **v = grow(g->nodes, &g->cap, g->n + 1, sizeof *v);

    if (!n || !v) {
        free(n);
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    }
    g->nodes = v;
    *n = (struct sim_gnode){is_free, dev, addr, size};
    g->nodes[g->n++] = n;
    if (out)
        *out = n;
    return GS_CUDA_SUCCESS;
}

static gs_curesult alloc_node_locked(struct sim_graph *g, int dev, uint64_t bytesize,
                                     gs_cudeviceptr *dptr, struct sim_gnode **node)
{
    uint64_t size = round_up(bytesize, SIM_ALIGN), addr;
    struct sim_galloc *v = grow(gallocs, &gallocs_cap, ngallocs + 1, sizeof *v);

    if (!v || bytesize > SIM_SPAN)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    gallocs = v;
    if (space_take(&devices[dev].space, size, SIM_ALIGN, &addr) != 0)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    if (node_add(g, 0, dev, addr, size, node) != GS_CUDA_SUCCESS) {
        space_put(&devices[dev].space, addr, size);
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    }
    gallocs[ngallocs++] = (struct sim_galloc){addr, size, dev, 1, 0};
    *dptr = addr;
    return GS_CUDA_SUCCESS;
}

static gs_curesult free_node_locked(struct sim_graph *g, gs_cudeviceptr dptr,
                                    struct sim_gnode **node)
{
    struct sim_galloc *a = galloc_find(dptr);

    if (!a)
        return GS_CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < g->n; i++)
        if (g->nodes[i]->is_free && g->nodes[i]->addr == dptr)
            return GS_CUDA_ERROR_INVALID_VALUE; /* freed once in a graph */
    return node_add(g, 1, a->dev, dptr, 0, node);
}

static gs_curesult capture_alloc_locked(struct gs_custream_st *s, uint64_t size,
                                        gs_cudeviceptr *dptr)
{
    return alloc_node_locked(s->capture, s->device, size, dptr, NULL);
}

static gs_curesult capture_free_locked(struct gs_custream_st *s, gs_cudeviceptr dptr)
{
    return free_node_locked(s->capture, dptr, NULL);
}

/* A captured stream: a created one, or CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED. */
static gs_curesult capture_stream(gs_custream hStream)
{
    int dev;
    gs_curesult rc = stream_device(hStream, &dev);

    if (rc != GS_CUDA_SUCCESS)
        return rc;
    return !hStream || hStream == SIM_CU_STREAM_LEGACY || hStream == SIM_CU_STREAM_PER_THREAD
               ? GS_CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
               : GS_CUDA_SUCCESS;
}

static gs_curesult begin_capture(gs_custream hStream, gs_custreamcapturemode mode)
{
    gs_curesult rc = capture_stream(hStream);
    struct sim_graph *g;

    if (rc != GS_CUDA_SUCCESS)
        return rc;
    if (mode < GS_CU_STREAM_CAPTURE_MODE_GLOBAL || mode > GS_CU_STREAM_CAPTURE_MODE_RELAXED)
        return GS_CUDA_ERROR_INVALID_VALUE;
    g = calloc(1, sizeof *g);
    if (!g)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&lock);
    if (hStream->capture)
        rc = SIM_CUDA_ERROR_ILLEGAL_STATE;
    else if (reg_add(&graphs, g) != 0)
        rc = GS_CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == GS_CUDA_SUCCESS) {
        hStream->capture = g;
        hStream->capture_mode = mode;
        thread_captures += mode != GS_CU_STREAM_CAPTURE_MODE_RELAXED;
        thread_global += mode == GS_CU_STREAM_CAPTURE_MODE_GLOBAL;
        global_captures += mode == GS_CU_STREAM_CAPTURE_MODE_GLOBAL;
    }
    pthread_mutex_unlock(&lock);
    if (rc != GS_CUDA_SUCCESS)
        free(g);
    sim_log("cuStreamBeginCapture_v2(%p, %d) -> %d", (void *)hStream, mode, rc);
    return rc;
}

static gs_curesult sim_cuStreamBeginCapture_v2(gs_custream hStream, gs_custreamcapturemode mode)
{
    return begin_capture(hStream, mode);
}
SIM_EXPORT(cuStreamBeginCapture_v2)

static gs_curesult sim_cuStreamBeginCapture_v2_ptsz(gs_custream hStream,
                                                    gs_custreamcapturemode mode)
{
    return begin_capture(hStream, mode);
}
SIM_EXPORT(cuStreamBeginCapture_v2_ptsz)

static gs_curesult end_capture(gs_custream hStream, gs_cugraph *phGraph)
{
    gs_curesult rc = capture_stream(hStream);

    if (rc != GS_CUDA_SUCCESS)
        return rc;
    if (!phGraph)
        return GS_CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    if (!hStream->capture) {
        rc = SIM_CUDA_ERROR_ILLEGAL_STATE;
    } else {
        int mode = hStream->capture_mode;
        *phGraph = (gs_cugraph)hStream->capture;
        hStream->capture = NULL;
        thread_captures -= mode != GS_CU_STREAM_CAPTURE_MODE_RELAXED;
        thread_global -= mode == GS_CU_STREAM_CAPTURE_MODE_GLOBAL;
        global_captures -= mode == GS_CU_STREAM_CAPTURE_MODE_GLOBAL;
    }
    pthread_mutex_unlock(&lock);
    sim_log("cuStreamEndCapture(%p) -> %d", (void *)hStream, rc);
    return rc;
}

static gs_curesult sim_cuStreamEndCapture(gs_custream hStream, gs_cugraph *phGraph)
{
    return end_capture(hStream, phGraph);
}
SIM_EXPORT(cuStreamEndCapture)

static gs_curesult sim_cuStreamEndCapture_ptsz(gs_custream hStream, gs_cugraph *phGraph)
{
    return end_capture(hStream, phGraph);
}
SIM_EXPORT(cuStreamEndCapture_ptsz)

static gs_curesult is_capturing(gs_custream hStream, gs_custreamcapturestatus *status)
{
    int dev;
    gs_curesult rc = stream_device(hStream, &dev);

    if (rc != GS_CUDA_SUCCESS)
        return rc;
    if (!status)
        return GS_CUDA_ERROR_INVALID_VALUE;
    *status = GS_CU_STREAM_CAPTURE_STATUS_NONE;
    if (hStream && hStream != SIM_CU_STREAM_LEGACY && hStream != SIM_CU_STREAM_PER_THREAD) {
        pthread_mutex_lock(&lock);
        if (hStream->capture)
            *status = GS_CU_STREAM_CAPTURE_STATUS_ACTIVE;
        pthread_mutex_unlock(&lock);
    }
    return GS_CUDA_SUCCESS;
}

static gs_curesult sim_cuStreamIsCapturing(gs_custream hStream,
                                           gs_custreamcapturestatus *captureStatus)
{
    return is_capturing(hStream, captureStatus);
}
SIM_EXPORT(cuStreamIsCapturing)

static gs_curesult sim_cuStreamIsCapturing_ptsz(gs_custream hStream,
                                                gs_custreamcapturestatus *captureStatus)
{
    return is_capturing(hStream, captureStatus);
}
SIM_EXPORT(cuStreamIsCapturing_ptsz)

static gs_curesult sim_cuThreadExchangeStreamCaptureMode(gs_custreamcapturemode *mode)
{
    int old;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!mode || *mode < GS_CU_STREAM_CAPTURE_MODE_GLOBAL ||
        *mode > GS_CU_STREAM_CAPTURE_MODE_RELAXED)
        return GS_CUDA_ERROR_INVALID_VALUE;
    old = thread_capture_mode;
    thread_capture_mode = *mode;
    *mode = old;
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuThreadExchangeStreamCaptureMode)

static gs_curesult sim_cuGraphCreate(gs_cugraph *phGraph, unsigned int flags)
{
    struct sim_graph *g;
    int bad;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!phGraph || flags)
        return GS_CUDA_ERROR_INVALID_VALUE;
    g = calloc(1, sizeof *g);
    if (!g)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&lock);
    bad = reg_add(&graphs, g);
    pthread_mutex_unlock(&lock);
    if (bad) {
        free(g);
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    }
    *phGraph = (gs_cugraph)g;
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuGraphCreate)

/* Dependencies are not checked: the nodes run in the order they were added. */
static gs_curesult sim_cuGraphAddMemAllocNode(gs_cugraphnode *phGraphNode, gs_cugraph hGraph,
                                              const gs_cugraphnode *dependencies,
                                              size_t numDependencies,
                                              gs_cumemallocnodeparams *nodeParams)
{
    struct sim_graph *g;
    struct sim_gnode *node = NULL;
    gs_curesult rc = GS_CUDA_ERROR_INVALID_VALUE;
    int dev;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!phGraphNode || !nodeParams || !nodeParams->bytesize || (numDependencies && !dependencies))
        return GS_CUDA_ERROR_INVALID_VALUE;
    dev = nodeParams->poolProps.location.id;
    if (nodeParams->poolProps.location.type != GS_CU_MEM_LOCATION_TYPE_DEVICE || !valid_device(dev))
        return GS_CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    g = graph_of(hGraph);
    if (g)
        rc = alloc_node_locked(g, dev, nodeParams->bytesize, &nodeParams->dptr, &node);
    pthread_mutex_unlock(&lock);
    if (rc == GS_CUDA_SUCCESS)
        *phGraphNode = (gs_cugraphnode)node;
    sim_log("cuGraphAddMemAllocNode(%zu) dev %d -> %d 0x%llx", nodeParams->bytesize, dev, rc,
            rc == GS_CUDA_SUCCESS ? nodeParams->dptr : 0);
    return rc;
}
SIM_EXPORT(cuGraphAddMemAllocNode)

static gs_curesult sim_cuGraphAddMemFreeNode(gs_cugraphnode *phGraphNode, gs_cugraph hGraph,
                                             const gs_cugraphnode *dependencies,
                                             size_t numDependencies, gs_cudeviceptr dptr)
{
    struct sim_graph *g;
    struct sim_gnode *node = NULL;
    gs_curesult rc = GS_CUDA_ERROR_INVALID_VALUE;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!phGraphNode || (numDependencies && !dependencies))
        return GS_CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    g = graph_of(hGraph);
    if (g)
        rc = free_node_locked(g, dptr, &node);
    pthread_mutex_unlock(&lock);
    if (rc == GS_CUDA_SUCCESS)
        *phGraphNode = (gs_cugraphnode)node;
    return rc;
}
SIM_EXPORT(cuGraphAddMemFreeNode)

static gs_curesult sim_cuGraphInstantiateWithFlags(gs_cugraphexec *phGraphExec, gs_cugraph hGraph,
                                                   unsigned long long flags)
{
    struct sim_graph *g;
    struct sim_gexec *x;
    gs_curesult rc = GS_CUDA_SUCCESS;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!phGraphExec || (flags & ~SIM_CU_GRAPH_INSTANTIATE_FLAGS_ALL))
        return GS_CUDA_ERROR_INVALID_VALUE;
    x = calloc(1, sizeof *x);
    if (!x)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&lock);
    g = graph_of(hGraph);
    if (!g || (g->n && g->execs))
        rc = GS_CUDA_ERROR_INVALID_VALUE; /* one executable of a graph with memory nodes */
    else if (g->n && !(x->nodes = malloc(g->n * sizeof *x->nodes)))
        rc = GS_CUDA_ERROR_OUT_OF_MEMORY;
    else if (reg_add(&gexecs, x) != 0)
        rc = GS_CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == GS_CUDA_SUCCESS) {
        for (size_t i = 0; i < g->n; i++) {
            struct sim_galloc *a = g->nodes[i]->is_free ? NULL : galloc_find(g->nodes[i]->addr);
            x->nodes[i] = *g->nodes[i];
            if (a)
                a->node++;
        }
        x->n = g->n;
        x->graph = g;
        x->flags = flags;
        g->execs++;
    }
    pthread_mutex_unlock(&lock);
    if (rc != GS_CUDA_SUCCESS) {
        free(x->nodes);
        free(x);
        return rc;
    }
    *phGraphExec = (gs_cugraphexec)x;
    return rc;
}
SIM_EXPORT(cuGraphInstantiateWithFlags)

/* The bytes a run of x adds to the pools' use at its height, per device,
 * counting from the use before it (auto: its own allocations still live
 * are freed first); and whether it may run. Lock held. */
static gs_curesult run_needs(const struct sim_gexec *x, int autofree, uint64_t *need)
{
    uint64_t use[SIM_MAX_DEVICES];

    for (int d = 0; d < cfg.ndevices; d++)
        use[d] = need[d] = gpool[d].used;
    for (size_t i = 0; i < x->n; i++) {
        const struct sim_gnode *n = &x->nodes[i];
        struct sim_galloc *a = galloc_find(n->addr);
        if (n->is_free || !a || !a->live)
            continue;
        if (!autofree)
            return GS_CUDA_ERROR_INVALID_VALUE; /* left live by its last launch */
        use[a->dev] -= a->size;
        need[a->dev] -= a->size;
    }
    for (size_t i = 0; i < x->n; i++) {
        const struct sim_gnode *n = &x->nodes[i];
        if (!n->is_free) {
            use[n->dev] += n->size;
            if (use[n->dev] > need[n->dev])
                need[n->dev] = use[n->dev];
        } else {
            struct sim_galloc *a = galloc_find(n->addr);
            int own = 0; /* allocated earlier in this run */
            for (size_t j = 0; j < i; j++)
                own |= !x->nodes[j].is_free && x->nodes[j].addr == n->addr;
            if (a && (own || a->live))
                use[n->dev] -= a->size;
        }
    }
    for (int d = 0; d < cfg.ndevices; d++) {
        uint64_t want = round_up(need[d], SIM_GRANULE);
        need[d] = want > gpool[d].reserved ? want : gpool[d].reserved;
        if (need[d] - gpool[d].reserved > devices[d].capacity - devices[d].used)
            return GS_CUDA_ERROR_OUT_OF_MEMORY;
    }
    return GS_CUDA_SUCCESS;
}

static gs_curesult graph_run(const char *api, gs_cugraphexec hGraphExec, gs_custream hStream,
                             int launch)
{
    int dev;
    gs_curesult rc = stream_device(hStream, &dev);
    uint64_t need[SIM_MAX_DEVICES];
    struct sim_gexec *x;

    if (rc != GS_CUDA_SUCCESS)
        return rc;
    pthread_mutex_lock(&lock);
    x = gexec_of(hGraphExec);
    rc = x ? run_needs(x, (x->flags & GS_CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH) != 0,
                       need)
           : SIM_CUDA_ERROR_INVALID_HANDLE;
    if (rc == GS_CUDA_SUCCESS) {
        for (int d = 0; d < cfg.ndevices; d++)
            gpool_reserve(d, need[d]);
        for (size_t i = 0; launch && i < x->n; i++) { /* the auto-free, then the run */
            struct sim_galloc *a = x->nodes[i].is_free ? NULL : galloc_find(x->nodes[i].addr);
            if (a && a->live)
                galloc_end(a);
        }
        for (size_t i = 0; launch && i < x->n; i++) {
            struct sim_gnode *n = &x->nodes[i];
            struct sim_galloc *a = galloc_find(n->addr);
            if (!a)
                continue;
            if (!n->is_free && !a->live) {
                a->live = 1;
                gpool_use(a->dev, a->size);
            } else if (n->is_free && a->live) {
                galloc_end(a);
            }
        }
    }
    pthread_mutex_unlock(&lock);
    sim_log("%s(%p) -> %d", api, (void *)hGraphExec, rc);
    return rc;
}

static gs_curesult sim_cuGraphLaunch(gs_cugraphexec hGraphExec, gs_custream hStream)
{
    return graph_run("cuGraphLaunch", hGraphExec, hStream, 1);
}
SIM_EXPORT(cuGraphLaunch)

static gs_curesult sim_cuGraphLaunch_ptsz(gs_cugraphexec hGraphExec, gs_custream hStream)
{
    return graph_run("cuGraphLaunch_ptsz", hGraphExec, hStream, 1);
}
SIM_EXPORT(cuGraphLaunch_ptsz)

static gs_curesult sim_cuGraphUpload(gs_cugraphexec hGraphExec, gs_custream hStream)
{
    return graph_run("cuGraphUpload", hGraphExec, hStream, 0);
}
SIM_EXPORT(cuGraphUpload)

static gs_curesult sim_cuGraphUpload_ptsz(gs_cugraphexec hGraphExec, gs_custream hStream)
{
    return graph_run("cuGraphUpload_ptsz", hGraphExec, hStream, 0);
}
SIM_EXPORT(cuGraphUpload_ptsz)

static gs_curesult sim_cuGraphExecDestroy(gs_cugraphexec hGraphExec)
{
    struct sim_gexec *x;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    pthread_mutex_lock(&lock);
    x = gexec_of(hGraphExec);
    if (x) {
        reg_del(&gexecs, (size_t)reg_index(&gexecs, x));
        if (x->graph)
            x->graph->execs--;
        for (size_t i = 0; i < x->n; i++) {
            struct sim_galloc *a = x->nodes[i].is_free ? NULL : galloc_find(x->nodes[i].addr);
            if (a) {
                a->node--;
                galloc_reap(a);
            }
        }
    }
    pthread_mutex_unlock(&lock);
    if (!x)
        return SIM_CUDA_ERROR_INVALID_HANDLE;
    free(x->nodes);
    free(x);
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuGraphExecDestroy)

static gs_curesult sim_cuGraphDestroy(gs_cugraph hGraph)
{
    struct sim_graph *g;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    pthread_mutex_lock(&lock);
    g = graph_of(hGraph);
    if (g) {
        reg_del(&graphs, (size_t)reg_index(&graphs, g));
        for (size_t i = 0; i < gexecs.n; i++)
            if (((struct sim_gexec *)gexecs.v[i])->graph == g)
                ((struct sim_gexec *)gexecs.v[i])->graph = NULL;
        for (size_t i = 0; i < g->n; i++) {
            struct sim_galloc *a = g->nodes[i]->is_free ? NULL : galloc_find(g->nodes[i]->addr);
            if (a) {
                a->node--;
                galloc_reap(a);
            }
            free(g->nodes[i]);
        }
    }
    pthread_mutex_unlock(&lock);
    if (!g)
        return SIM_CUDA_ERROR_INVALID_HANDLE;
    free(g->nodes);
    free(g);
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuGraphDestroy)

static gs_curesult sim_cuDeviceGraphMemTrim(gs_cudevice device)
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

static gs_curesult sim_cuDeviceGetGraphMemAttribute(gs_cudevice device, gs_cugraphmemattr attr,
                                                    void *value)
{
    return graph_mem_attr(device, attr, value, 0);
}
SIM_EXPORT(cuDeviceGetGraphMemAttribute)

static gs_curesult sim_cuDeviceSetGraphMemAttribute(gs_cudevice device, gs_cugraphmemattr attr,
                                                    void *value)
{
    return graph_mem_attr(device, attr, value, 1);
}
SIM_EXPORT(cuDeviceSetGraphMemAttribute)

/* ---- cuGetProcAddress --------------------------------------------------- */

typedef void (*sim_fn)(void);
#define FN(f) ((sim_fn)(f))

/* Internal entry points. NVIDIA's driver may hand out from cuGetProcAddress
 * internal entry points whose addresses are not what dlsym gives for the
 * same name; so does this one for the calls that allocate and free: each a
 * function of its own, at an address of its own, that runs the same code.
 * An interposer must record calls through either (issue 15, item 5). */
#define ENTRY(name, params, args)                                                                  \
    __attribute__((noinline)) static gs_curesult entry_##name params                              \
    {                                                                                              \
        __asm__ volatile("");                                                                      \
        return sim_##name args;                                                                    \
    }
ENTRY(cuMemAlloc_v2, (gs_cudeviceptr * dptr, size_t bytesize), (dptr, bytesize))
ENTRY(cuMemFree_v2, (gs_cudeviceptr dptr), (dptr))
ENTRY(cuMemAllocAsync, (gs_cudeviceptr * dptr, size_t bytesize, gs_custream s), (dptr, bytesize, s))
ENTRY(cuMemFreeAsync, (gs_cudeviceptr dptr, gs_custream s), (dptr, s))
#undef ENTRY

static gs_curesult sim_cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                        gs_cuuint64 flags);
static gs_curesult sim_cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                           gs_cuuint64 flags, gs_cuprocstatus *symbolStatus);

/* Base name -> the function of the newest ABI whose first CUDA version is
 * at most the caller's. Rows of one name go newest first. Older ABIs that
 * differ (32-bit sizes) are not simulated: asking for them gives
 * VERSION_NOT_SUFFICIENT; older rows with the same ABI share the function. */
static const struct proc {
    const char *name;
    int version;
    sim_fn fn, ptsz;
} procs[] = {
    {"cuInit", 2000, FN(sim_cuInit), NULL},
    {"cuDriverGetVersion", 2020, FN(sim_cuDriverGetVersion), NULL},
    {"cuGetErrorString", 6000, FN(sim_cuGetErrorString), NULL},
    {"cuGetErrorName", 6000, FN(sim_cuGetErrorName), NULL},
    {"cuDeviceGetCount", 2000, FN(sim_cuDeviceGetCount), NULL},
    {"cuDeviceGet", 2000, FN(sim_cuDeviceGet), NULL},
    {"cuDeviceGetAttribute", 2000, FN(sim_cuDeviceGetAttribute), NULL},
    {"cuDeviceGetName", 2000, FN(sim_cuDeviceGetName), NULL},
    {"cuDeviceTotalMem", 3020, FN(sim_cuDeviceTotalMem_v2), NULL},
    {"cuDeviceGetDefaultMemPool", 11020, FN(sim_cuDeviceGetDefaultMemPool), NULL},
    {"cuDeviceGetMemPool", 11020, FN(sim_cuDeviceGetMemPool), NULL},
    {"cuDeviceSetMemPool", 11020, FN(sim_cuDeviceSetMemPool), NULL},
    {"cuDevicePrimaryCtxRetain", 7000, FN(sim_cuDevicePrimaryCtxRetain), NULL},
    {"cuDevicePrimaryCtxRelease", 11000, FN(sim_cuDevicePrimaryCtxRelease_v2), NULL},
    {"cuCtxSetCurrent", 4000, FN(sim_cuCtxSetCurrent), NULL},
    {"cuCtxGetCurrent", 4000, FN(sim_cuCtxGetCurrent), NULL},
    {"cuCtxGetDevice", 13000, FN(ctx_get_device_v2), NULL},
    {"cuCtxGetDevice", 2000, FN(sim_cuCtxGetDevice), NULL},
    {"cuCtxSynchronize", 13000, FN(ctx_synchronize_v2), NULL},
    {"cuCtxSynchronize", 2000, FN(sim_cuCtxSynchronize), NULL},
    {"cuStreamCreate", 2000, FN(sim_cuStreamCreate), NULL},
    {"cuStreamDestroy", 4000, FN(sim_cuStreamDestroy_v2), NULL},
    {"cuStreamDestroy", 2000, FN(sim_cuStreamDestroy_v2), NULL},
    {"cuStreamSynchronize", 2000, FN(sim_cuStreamSynchronize), FN(sim_cuStreamSynchronize_ptsz)},
    {"cuStreamGetDevice", 12080, FN(sim_cuStreamGetDevice), FN(sim_cuStreamGetDevice_ptsz)},
    {"cuStreamGetCtx", 12050, FN(sim_cuStreamGetCtx_v2), FN(sim_cuStreamGetCtx_v2_ptsz)},
    {"cuStreamGetCtx", 9020, FN(sim_cuStreamGetCtx), FN(sim_cuStreamGetCtx_ptsz)},
    {"cuEventCreate", 2000, FN(sim_cuEventCreate), NULL},
    {"cuEventDestroy", 4000, FN(sim_cuEventDestroy_v2), NULL},
    {"cuEventRecord", 2000, FN(sim_cuEventRecord), FN(sim_cuEventRecord_ptsz)},
    {"cuStreamWaitEvent", 3020, FN(sim_cuStreamWaitEvent), FN(sim_cuStreamWaitEvent_ptsz)},
    {"cuEventSynchronize", 2000, FN(sim_cuEventSynchronize), NULL},
    {"cuEventQuery", 2000, FN(sim_cuEventQuery), NULL},
    {"cuMemGetInfo", 3020, FN(sim_cuMemGetInfo_v2), NULL},
    {"cuMemAlloc", 3020, FN(entry_cuMemAlloc_v2), NULL},
    {"cuMemFree", 3020, FN(entry_cuMemFree_v2), NULL},
    {"cuMemAllocPitch", 3020, FN(sim_cuMemAllocPitch_v2), NULL},
    {"cuMemAllocManaged", 6000, FN(sim_cuMemAllocManaged), NULL},
    {"cuMemAllocAsync", 11020, FN(entry_cuMemAllocAsync), FN(sim_cuMemAllocAsync_ptsz)},
    {"cuMemFreeAsync", 11020, FN(entry_cuMemFreeAsync), FN(sim_cuMemFreeAsync_ptsz)},
    {"cuMemAllocFromPoolAsync", 11020, FN(sim_cuMemAllocFromPoolAsync),
     FN(sim_cuMemAllocFromPoolAsync_ptsz)},
    {"cuMemPoolCreate", 11020, FN(sim_cuMemPoolCreate), NULL},
    {"cuMemPoolDestroy", 11020, FN(sim_cuMemPoolDestroy), NULL},
    {"cuMemPoolGetAttribute", 11020, FN(sim_cuMemPoolGetAttribute), NULL},
    {"cuMemPoolSetAttribute", 11020, FN(sim_cuMemPoolSetAttribute), NULL},
    {"cuMemPoolTrimTo", 11020, FN(sim_cuMemPoolTrimTo), NULL},
    {"cuMemGetAllocationGranularity", 10020, FN(sim_cuMemGetAllocationGranularity), NULL},
    {"cuMemCreate", 10020, FN(sim_cuMemCreate), NULL},
    {"cuMemRelease", 10020, FN(sim_cuMemRelease), NULL},
    {"cuMemRetainAllocationHandle", 11000, FN(sim_cuMemRetainAllocationHandle), NULL},
    {"cuMemExportToShareableHandle", 10020, FN(sim_cuMemExportToShareableHandle), NULL},
    {"cuMemImportFromShareableHandle", 10020, FN(sim_cuMemImportFromShareableHandle), NULL},
    {"cuMemGetAllocationPropertiesFromHandle", 10020,
     FN(sim_cuMemGetAllocationPropertiesFromHandle), NULL},
    {"cuMemAddressReserve", 10020, FN(sim_cuMemAddressReserve), NULL},
    {"cuMemAddressFree", 10020, FN(sim_cuMemAddressFree), NULL},
    {"cuMemMap", 10020, FN(sim_cuMemMap), NULL},
    {"cuMemUnmap", 10020, FN(sim_cuMemUnmap), NULL},
    {"cuMemSetAccess", 10020, FN(sim_cuMemSetAccess), NULL},
    {"cuMulticastGetGranularity", 12010, FN(sim_cuMulticastGetGranularity), NULL},
    {"cuMulticastCreate", 12010, FN(sim_cuMulticastCreate), NULL},
    {"cuMulticastAddDevice", 12010, FN(sim_cuMulticastAddDevice), NULL},
    {"cuMulticastBindMem", 12010, FN(sim_cuMulticastBindMem), NULL},
    {"cuMulticastBindAddr", 12010, FN(sim_cuMulticastBindAddr), NULL},
    {"cuMulticastUnbind", 12010, FN(sim_cuMulticastUnbind), NULL},
    {"cuMemHostAlloc", 2020, FN(sim_cuMemHostAlloc), NULL},
    {"cuMemAllocHost", 3020, FN(sim_cuMemAllocHost_v2), NULL},
    {"cuMemFreeHost", 2000, FN(sim_cuMemFreeHost), NULL},
    {"cuMemHostRegister", 6050, FN(sim_cuMemHostRegister_v2), NULL},
    {"cuMemHostRegister", 4000, FN(sim_cuMemHostRegister_v2), NULL},
    {"cuMemHostUnregister", 4000, FN(sim_cuMemHostUnregister), NULL},
    {"cuMemHostGetDevicePointer", 3020, FN(sim_cuMemHostGetDevicePointer_v2), NULL},
    {"cuArrayCreate", 3020, FN(sim_cuArrayCreate_v2), NULL},
    {"cuArray3DCreate", 3020, FN(sim_cuArray3DCreate_v2), NULL},
    {"cuArrayDestroy", 2000, FN(sim_cuArrayDestroy), NULL},
    {"cuMipmappedArrayCreate", 5000, FN(sim_cuMipmappedArrayCreate), NULL},
    {"cuMipmappedArrayDestroy", 5000, FN(sim_cuMipmappedArrayDestroy), NULL},
    {"cuIpcGetMemHandle", 4010, FN(sim_cuIpcGetMemHandle), NULL},
    {"cuIpcOpenMemHandle", 11000, FN(sim_cuIpcOpenMemHandle_v2), NULL},
    {"cuIpcOpenMemHandle", 4010, FN(sim_cuIpcOpenMemHandle_v2), NULL},
    {"cuIpcCloseMemHandle", 4010, FN(sim_cuIpcCloseMemHandle), NULL},
    {"cuPointerGetAttribute", 4000, FN(sim_cuPointerGetAttribute), NULL},
    {"cuMemGetAddressRange", 3020, FN(sim_cuMemGetAddressRange_v2), NULL},
    {"cuStreamBeginCapture", 10010, FN(sim_cuStreamBeginCapture_v2),
     FN(sim_cuStreamBeginCapture_v2_ptsz)},
    {"cuStreamEndCapture", 10000, FN(sim_cuStreamEndCapture), FN(sim_cuStreamEndCapture_ptsz)},
    {"cuStreamIsCapturing", 10000, FN(sim_cuStreamIsCapturing), FN(sim_cuStreamIsCapturing_ptsz)},
    {"cuThreadExchangeStreamCaptureMode", 10010, FN(sim_cuThreadExchangeStreamCaptureMode), NULL},
    {"cuGraphCreate", 10000, FN(sim_cuGraphCreate), NULL},
    {"cuGraphAddMemAllocNode", 11040, FN(sim_cuGraphAddMemAllocNode), NULL},
    {"cuGraphAddMemFreeNode", 11040, FN(sim_cuGraphAddMemFreeNode), NULL},
    {"cuGraphInstantiateWithFlags", 11040, FN(sim_cuGraphInstantiateWithFlags), NULL},
    {"cuGraphInstantiate", 12000, FN(sim_cuGraphInstantiateWithFlags), NULL},
    {"cuGraphUpload", 11010, FN(sim_cuGraphUpload), FN(sim_cuGraphUpload_ptsz)},
    {"cuGraphLaunch", 10000, FN(sim_cuGraphLaunch), FN(sim_cuGraphLaunch_ptsz)},
    {"cuGraphExecDestroy", 10000, FN(sim_cuGraphExecDestroy), NULL},
    {"cuGraphDestroy", 10000, FN(sim_cuGraphDestroy), NULL},
    {"cuDeviceGraphMemTrim", 11040, FN(sim_cuDeviceGraphMemTrim), NULL},
    {"cuDeviceGetGraphMemAttribute", 11040, FN(sim_cuDeviceGetGraphMemAttribute), NULL},
    {"cuDeviceSetGraphMemAttribute", 11040, FN(sim_cuDeviceSetGraphMemAttribute), NULL},
    {"cuGetProcAddress", 12000, FN(sim_cuGetProcAddress_v2), NULL},
    {"cuGetProcAddress", 11030, FN(sim_cuGetProcAddress), NULL},
};

/* Both getters: api names the one called, for the log. */
static gs_curesult get_proc(const char *api, const char *symbol, void **pfn, int cudaVersion,
                            gs_cuuint64 flags, gs_cuprocstatus *symbolStatus)
{
    gs_cuprocstatus status = GS_CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    const struct proc *hit = NULL;

    pthread_once(&env_once, read_env);
    if (!symbol || !pfn)
        return GS_CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; !hit && i < sizeof procs / sizeof procs[0]; i++) {
        if (strcmp(procs[i].name, symbol) != 0)
            continue;
        status = GS_CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
        if (procs[i].version <= cudaVersion)
            hit = &procs[i];
    }
    *pfn = NULL;
    if (hit) {
        status = GS_CU_GET_PROC_ADDRESS_SUCCESS;
        *pfn = (void *)(flags & GS_CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM && hit->ptsz
                            ? hit->ptsz
                            : hit->fn);
    }
    if (symbolStatus)
        *symbolStatus = status;
    sim_log("%s(%s, %d, %llu) -> status %d", api, symbol, cudaVersion,
            (unsigned long long)flags, status);
    return hit ? GS_CUDA_SUCCESS : GS_CUDA_ERROR_NOT_FOUND;
}

static gs_curesult sim_cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                           gs_cuuint64 flags, gs_cuprocstatus *symbolStatus)
{
    return get_proc("cuGetProcAddress_v2", symbol, pfn, cudaVersion, flags, symbolStatus);
}
SIM_EXPORT(cuGetProcAddress_v2)

static gs_curesult sim_cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                        gs_cuuint64 flags)
{
    return get_proc("cuGetProcAddress", symbol, pfn, cudaVersion, flags, NULL);
}
SIM_EXPORT(cuGetProcAddress)
