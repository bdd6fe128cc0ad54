/*
 * driver.c - the simulated CUDA driver, built as libcuda.so.1.
 *
 * Owns: devices, primary contexts, the thread's current context, default
 * memory pools, the device-memory allocator and cuGetProcAddress. It lets
 * gpushim's tests run where there is no GPU: it exports the real driver's
 * names with the real ABIs (the gs_ declarations of include/gpushim_cuda.h)
 * and behaves like the real driver wherever a memory profiler can tell.
 *
 * Design
 *   - Nothing but cuInit, cuDriverGetVersion, cuGetProcAddress[_v2] and the
 *     error-string lookups works before cuInit (CUDA_ERROR_NOT_INITIALIZED).
 *     Memory calls need a current context (CUDA_ERROR_INVALID_CONTEXT). The
 *     current context is thread-local; each device has one primary context
 *     and one default memory pool, both static objects.
 *   - Memory is never touched, only accounted. Each device owns 1 TiB of
 *     fake address space at SIM_BASE + device * SIM_SPAN. Sizes are rounded
 *     up to 512 bytes; used bytes are the sum of rounded sizes, so
 *     cuMemGetInfo reports exactly capacity - used.
 *   - Addresses come from a first-fit list of holes (sorted by address,
 *     coalesced) and, when no hole fits, from a bump pointer. A freed range
 *     is a hole again, so later allocations reuse it, as the real one does.
 *   - Live allocations sit in an open-addressing hash table keyed by
 *     address (linear probing, backward-shift deletion).
 *   - One mutex guards the allocator and the context reference counts.
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
 *   SIMCUDA_HOST_MALLOC  1: each allocation also holds a malloc(64), so a
 *                        heap profiler sees one heap event per device event
 *   SIMCUDA_LOG          1: trace calls to stderr
 *
 * Not simulated: releasing a primary context to zero references does not
 * free the allocations made in it; streams are accepted and ignored.
 */
#include "gpushim_cuda.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIM_DRIVER_VERSION 13000
#define SIM_MAX_DEVICES 16
#define SIM_ALIGN 512ull
#define SIM_BASE 0x700000000000ull
#define SIM_SPAN (1ull << 40)
#define SIM_DEFAULT_MEMORY (16ull << 30)

/* cuda.h values that gpushim_cuda.h does not carry */
#define SIM_CU_MEM_ATTACH_HOST 2
#define SIM_CU_MEMORYTYPE_DEVICE 2
#define SIM_CU_POINTER_ATTRIBUTE_CONTEXT 1
#define SIM_CU_POINTER_ATTRIBUTE_MEMORY_TYPE 2
#define SIM_CU_POINTER_ATTRIBUTE_DEVICE_POINTER 3
#define SIM_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL 9
#define SIM_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR 11
#define SIM_CU_POINTER_ATTRIBUTE_RANGE_SIZE 12
#define SIM_CUDA_ERROR_UNKNOWN 999

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
};

struct hole {
    uint64_t off, len;
};

struct device {
    uint64_t capacity, used, top; /* top: end of the bump-allocated space */
    struct hole *holes;           /* sorted by offset, never adjacent      */
    size_t nholes, holes_cap;
    int ctx_refs;
    struct gs_cuctx_st ctx;
    struct gs_cupool_st pool;
};

struct live {
    gs_cudeviceptr addr; /* 0: empty slot */
    uint64_t size;       /* rounded, as accounted */
    int device;
    void *host; /* SIMCUDA_HOST_MALLOC block */
};

static struct {
    int ndevices;
    uint64_t capacity;
    int host_malloc;
    int log;
} cfg;

static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int initialized; /* atomic: set once cuInit succeeded */
static struct device devices[SIM_MAX_DEVICES];
static struct live *table;
static size_t table_cap, table_count;
static __thread struct gs_cuctx_st *current_ctx;

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

static void read_env(void)
{
    long n = env_long("SIMCUDA_DEVICES", 1);

    cfg.ndevices = n > SIM_MAX_DEVICES ? SIM_MAX_DEVICES : (int)n;
    cfg.capacity = env_bytes("SIMCUDA_MEMORY", SIM_DEFAULT_MEMORY);
    cfg.host_malloc = env_long("SIMCUDA_HOST_MALLOC", 0) == 1;
    cfg.log = env_long("SIMCUDA_LOG", 0) == 1;
    for (int i = 0; i < SIM_MAX_DEVICES; i++) {
        devices[i].capacity = cfg.capacity;
        devices[i].ctx.device = i;
        devices[i].pool.device = i;
    }
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

static struct gs_cupool_st *pool_of(const void *p)
{
    for (int i = 0; i < cfg.ndevices; i++)
        if (p == &devices[i].pool)
            return &devices[i].pool;
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

/* ---- per-device address space (lock held) ----------------------------- */

static void hole_delete(struct device *d, size_t i)
{
    memmove(&d->holes[i], &d->holes[i + 1], (d->nholes - i - 1) * sizeof *d->holes);
    d->nholes--;
}

/* First fit: the lowest hole that is large enough, else the bump pointer. */
static int space_take(struct device *d, uint64_t len, uint64_t *off)
{
    for (size_t i = 0; i < d->nholes; i++) {
        struct hole *h = &d->holes[i];

        if (h->len < len)
            continue;
        *off = h->off;
        h->off += len;
        h->len -= len;
        if (!h->len)
            hole_delete(d, i);
        return 0;
    }
    if (SIM_SPAN - d->top < len)
        return -1;
    *off = d->top;
    d->top += len;
    return 0;
}

static int hole_insert(struct device *d, size_t i, uint64_t off, uint64_t len)
{
    if (d->nholes == d->holes_cap) {
        size_t cap = d->holes_cap ? d->holes_cap * 2 : 64;
        struct hole *h = realloc(d->holes, cap * sizeof *h);

        if (!h)
            return -1;
        d->holes = h;
        d->holes_cap = cap;
    }
    memmove(&d->holes[i + 1], &d->holes[i], (d->nholes - i) * sizeof *d->holes);
    d->holes[i] = (struct hole){off, len};
    d->nholes++;
    return 0;
}

/* Returns [off, off+len) to the free space, merging with its neighbours
 * and giving the last hole back to the bump pointer. */
static void space_put(struct device *d, uint64_t off, uint64_t len)
{
    size_t i = 0;

    while (i < d->nholes && d->holes[i].off < off)
        i++;
    if (i > 0 && d->holes[i - 1].off + d->holes[i - 1].len == off) {
        i--;
        d->holes[i].len += len;
    } else if (hole_insert(d, i, off, len) != 0) {
        return; /* out of host memory: the range is lost, nothing breaks */
    }
    if (i + 1 < d->nholes && d->holes[i].off + d->holes[i].len == d->holes[i + 1].off) {
        d->holes[i].len += d->holes[i + 1].len;
        hole_delete(d, i + 1);
    }
    if (i + 1 == d->nholes && d->holes[i].off + d->holes[i].len == d->top) {
        d->top = d->holes[i].off;
        d->nholes--;
    }
}

/* ---- allocate and free ------------------------------------------------- */

static gs_curesult alloc_locked(int dev, uint64_t size, gs_cudeviceptr *dptr)
{
    struct device *d = &devices[dev];
    uint64_t off;
    struct live *e;

    if (d->capacity - d->used < size)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    if ((table_count + 1) * 2 > table_cap && table_grow() != 0)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    if (space_take(d, size, &off) != 0)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    d->used += size;
    e = &table[slot_find(SIM_BASE + dev * SIM_SPAN + off)];
    *e = (struct live){SIM_BASE + dev * SIM_SPAN + off, size, dev, NULL};
    if (cfg.host_malloc)
        e->host = malloc(64);
    table_count++;
    *dptr = e->addr;
    return GS_CUDA_SUCCESS;
}

/* Charges bytesize (rounded to 512) to device dev. */
static gs_curesult sim_alloc(const char *api, int dev, gs_cudeviceptr *dptr, size_t bytesize)
{
    gs_curesult rc = GS_CUDA_ERROR_OUT_OF_MEMORY;
    gs_cudeviceptr p = 0;

    if (!dptr || !bytesize)
        return GS_CUDA_ERROR_INVALID_VALUE;
    if (bytesize <= SIM_SPAN) {
        pthread_mutex_lock(&lock);
        rc = alloc_locked(dev, (bytesize + SIM_ALIGN - 1) & ~(SIM_ALIGN - 1), &p);
        pthread_mutex_unlock(&lock);
    }
    if (rc == GS_CUDA_SUCCESS)
        *dptr = p;
    sim_log("%s(%zu) dev %d -> %d 0x%llx", api, bytesize, dev, rc, p);
    return rc;
}

static gs_curesult sim_free(const char *api, gs_cudeviceptr dptr)
{
    struct live *e;
    struct live gone = {0};

    if (!dptr)
        return GS_CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    e = table_get(dptr);
    if (e) {
        gone = *e;
        devices[gone.device].used -= gone.size;
        space_put(&devices[gone.device], gone.addr - SIM_BASE - gone.device * SIM_SPAN,
                  gone.size);
        table_remove((size_t)(e - table));
    }
    pthread_mutex_unlock(&lock);
    free(gone.host);
    sim_log("%s(0x%llx) -> %d", api, dptr, e ? 0 : GS_CUDA_ERROR_INVALID_VALUE);
    return e ? GS_CUDA_SUCCESS : GS_CUDA_ERROR_INVALID_VALUE;
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
    {GS_CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
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

static gs_curesult sim_cuDeviceGetDefaultMemPool(gs_cumempool *pool_out, gs_cudevice dev)
{
    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!pool_out)
        return GS_CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(dev))
        return GS_CUDA_ERROR_INVALID_DEVICE;
    *pool_out = &devices[dev].pool;
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuDeviceGetDefaultMemPool)

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

static gs_curesult ctx_synchronize_v2(gs_cucontext ctx)
{
    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!ctx)
        ctx = current_ctx;
    return ctx && ctx_of(ctx) ? GS_CUDA_SUCCESS : GS_CUDA_ERROR_INVALID_CONTEXT;
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

static gs_curesult sim_cuMemAlloc_v2(gs_cudeviceptr *dptr, size_t bytesize)
{
    int dev = current_device();

    return dev < 0 ? -dev : sim_alloc("cuMemAlloc_v2", dev, dptr, bytesize);
}
SIM_EXPORT(cuMemAlloc_v2)

static gs_curesult sim_cuMemFree_v2(gs_cudeviceptr dptr)
{
    int dev = current_device();

    return dev < 0 ? -dev : sim_free("cuMemFree_v2", dptr);
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
    pitch = (WidthInBytes + SIM_ALIGN - 1) & ~(SIM_ALIGN - 1);
    if (Height > SIM_SPAN / pitch)
        return dptr ? GS_CUDA_ERROR_OUT_OF_MEMORY : GS_CUDA_ERROR_INVALID_VALUE;
    rc = sim_alloc("cuMemAllocPitch_v2", dev, dptr, pitch * Height);
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
    return sim_alloc("cuMemAllocManaged", dev, dptr, bytesize);
}
SIM_EXPORT(cuMemAllocManaged)

/* Stream-ordered allocation: the stream is accepted and ignored. */
static gs_curesult alloc_async(const char *api, gs_cudeviceptr *dptr, size_t bytesize)
{
    int dev = current_device();

    return dev < 0 ? -dev : sim_alloc(api, dev, dptr, bytesize);
}

static gs_curesult free_async(const char *api, gs_cudeviceptr dptr)
{
    int dev = current_device();

    return dev < 0 ? -dev : sim_free(api, dptr);
}

/* From a pool: needs a current context, charges the pool's device. */
static gs_curesult alloc_from_pool(const char *api, gs_cudeviceptr *dptr, size_t bytesize,
                                   gs_cumempool pool)
{
    int dev = current_device();
    struct gs_cupool_st *p;

    if (dev < 0)
        return -dev;
    p = pool_of(pool);
    if (!p)
        return GS_CUDA_ERROR_INVALID_VALUE;
    return sim_alloc(api, p->device, dptr, bytesize);
}

static gs_curesult sim_cuMemAllocAsync(gs_cudeviceptr *dptr, size_t bytesize,
                                       gs_custream hStream)
{
    (void)hStream;
    return alloc_async("cuMemAllocAsync", dptr, bytesize);
}
SIM_EXPORT(cuMemAllocAsync)

static gs_curesult sim_cuMemAllocAsync_ptsz(gs_cudeviceptr *dptr, size_t bytesize,
                                            gs_custream hStream)
{
    (void)hStream;
    return alloc_async("cuMemAllocAsync_ptsz", dptr, bytesize);
}
SIM_EXPORT(cuMemAllocAsync_ptsz)

static gs_curesult sim_cuMemFreeAsync(gs_cudeviceptr dptr, gs_custream hStream)
{
    (void)hStream;
    return free_async("cuMemFreeAsync", dptr);
}
SIM_EXPORT(cuMemFreeAsync)

static gs_curesult sim_cuMemFreeAsync_ptsz(gs_cudeviceptr dptr, gs_custream hStream)
{
    (void)hStream;
    return free_async("cuMemFreeAsync_ptsz", dptr);
}
SIM_EXPORT(cuMemFreeAsync_ptsz)

static gs_curesult sim_cuMemAllocFromPoolAsync(gs_cudeviceptr *dptr, size_t bytesize,
                                               gs_cumempool pool, gs_custream hStream)
{
    (void)hStream;
    return alloc_from_pool("cuMemAllocFromPoolAsync", dptr, bytesize, pool);
}
SIM_EXPORT(cuMemAllocFromPoolAsync)

static gs_curesult sim_cuMemAllocFromPoolAsync_ptsz(gs_cudeviceptr *dptr, size_t bytesize,
                                                    gs_cumempool pool, gs_custream hStream)
{
    (void)hStream;
    return alloc_from_pool("cuMemAllocFromPoolAsync_ptsz", dptr, bytesize, pool);
}
SIM_EXPORT(cuMemAllocFromPoolAsync_ptsz)

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

/* Answers for any address inside a live allocation; RANGE_SIZE is the
 * accounted (rounded) size. */
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
    pthread_mutex_unlock(&lock);
    return rc;
}
SIM_EXPORT(cuPointerGetAttribute)

/* ---- cuGetProcAddress --------------------------------------------------- */

typedef void (*sim_fn)(void);
#define FN(f) ((sim_fn)(f))

static gs_curesult sim_cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                        gs_cuuint64 flags);
static gs_curesult sim_cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                           gs_cuuint64 flags, gs_cuprocstatus *symbolStatus);

/* Base name -> the function of the newest ABI whose first CUDA version is
 * at most the caller's. Rows of one name go newest first. */
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
    {"cuDeviceGetName", 2000, FN(sim_cuDeviceGetName), NULL},
    {"cuDeviceTotalMem", 3020, FN(sim_cuDeviceTotalMem_v2), NULL},
    {"cuDeviceGetDefaultMemPool", 11020, FN(sim_cuDeviceGetDefaultMemPool), NULL},
    {"cuDevicePrimaryCtxRetain", 7000, FN(sim_cuDevicePrimaryCtxRetain), NULL},
    {"cuDevicePrimaryCtxRelease", 11000, FN(sim_cuDevicePrimaryCtxRelease_v2), NULL},
    {"cuCtxSetCurrent", 4000, FN(sim_cuCtxSetCurrent), NULL},
    {"cuCtxGetCurrent", 4000, FN(sim_cuCtxGetCurrent), NULL},
    {"cuCtxGetDevice", 13000, FN(ctx_get_device_v2), NULL},
    {"cuCtxGetDevice", 2000, FN(sim_cuCtxGetDevice), NULL},
    {"cuCtxSynchronize", 13000, FN(ctx_synchronize_v2), NULL},
    {"cuCtxSynchronize", 2000, FN(sim_cuCtxSynchronize), NULL},
    {"cuMemGetInfo", 3020, FN(sim_cuMemGetInfo_v2), NULL},
    {"cuMemAlloc", 3020, FN(sim_cuMemAlloc_v2), NULL},
    {"cuMemFree", 3020, FN(sim_cuMemFree_v2), NULL},
    {"cuMemAllocPitch", 3020, FN(sim_cuMemAllocPitch_v2), NULL},
    {"cuMemAllocManaged", 6000, FN(sim_cuMemAllocManaged), NULL},
    {"cuMemAllocAsync", 11020, FN(sim_cuMemAllocAsync), FN(sim_cuMemAllocAsync_ptsz)},
    {"cuMemFreeAsync", 11020, FN(sim_cuMemFreeAsync), FN(sim_cuMemFreeAsync_ptsz)},
    {"cuMemAllocFromPoolAsync", 11020, FN(sim_cuMemAllocFromPoolAsync),
     FN(sim_cuMemAllocFromPoolAsync_ptsz)},
    {"cuPointerGetAttribute", 4000, FN(sim_cuPointerGetAttribute), NULL},
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
    sim_log("%s(%s, %d, %llu) -> status %d", api, symbol, cudaVersion, (unsigned long long)flags, status);
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
