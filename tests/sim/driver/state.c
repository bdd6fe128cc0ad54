/*
 * state.c - the driver's global state: its configuration (read from the environment once), the
 * devices, the live-allocation table, the ranges every section shares, the registries, the
 * mutex (held across fork()); logging.
 *
 * Design
 *   - One mutex guards all of this state and the context reference counts.
 *     It is held across fork() (pthread_atfork), so a child forked while
 *     another thread is inside the driver can use it.
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
 */
#include "tests/sim/driver/sim.h"

struct sim_config cfg;

pthread_once_t env_once = PTHREAD_ONCE_INIT;
pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
int initialized;
struct device devices[SIM_MAX_DEVICES];
struct live *table;
size_t table_cap, table_count;
__thread struct gs_cuctx_st *current_ctx;

struct reg pools, arrays, mip_arrays, streams;
uint64_t next_serial = 1;

/* ---- configuration and logging ---------------------------------------- */

__attribute__((format(printf, 1, 2))) void sim_log(const char *fmt, ...)
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

void pool_init(struct gs_cupool_st *p, int device)
{
    *p = (struct gs_cupool_st){.device = device, .reuse = {1, 1, 1}};
}

void read_env(void)
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
