/*
 * dl_torch_streams.c - a tensor used on a side stream, freed through
 * libgpushim.so's pluggable allocator as PyTorch frees it: the shared
 * object opened by its path (argv[1]) and its functions looked up with
 * dlsym, as torch.cuda.memory.CUDAPluggableAllocator does, and the free
 * function called with the stream the tensor was allocated on
 * (CUDAPluggableAllocator::raw_delete passes the allocation's recorded
 * stream, torch/csrc/cuda/CUDAPluggableAllocator.cpp). The side stream's
 * kernel is the simulated driver's simcuda_use mark. Run with
 * SIMCUDA_MEMORY=64M. argv[2] says how the tensor is freed:
 *
 *   recorded    record_stream first (the function installed with
 *               set_record_stream_fn), then gpushim_torch_free: the free
 *               waits for the side stream, so the next tensor does not get
 *               the memory while the side stream may use it
 *   peer        the same with the side stream on device 1 (its kernel
 *               reading device 0's memory over peer access; run with
 *               SIMCUDA_DEVICES=2): the event is device 1's
 *   unrecorded  gpushim_torch_free without record_stream (the function not
 *               installed: PyTorch's record_stream then does nothing)
 *   plain       cuMemFreeAsync on the allocation stream, as an allocator
 *               that ignores record_stream would
 *
 * Then, on the main (NULL) stream: x, 4 MiB; the side stream uses x; x is
 * freed; y, 4 MiB; the context is synchronized; z, 1 MiB; z and y freed;
 * the context synchronized; gpushim_torch_empty_cache (set_reset_fn's
 * function). It prints whether y got x's memory, the default pool's
 * reserved bytes after the first synchronize, after the second and after
 * the empty cache, and the reuse hazards: recorded and peer "y reused x:
 * no, reserved 8/8/0 MiB, hazards 0"; the others "yes, 4/6/0 MiB, hazards
 * 1". Device 0's context is current throughout, except while the peer side
 * stream is created.
 * The pool keeps what it reserved across a synchronize because
 * gpushim_torch_alloc set its release threshold to UINT64_MAX.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>

#include "progs.h"

typedef void *(*torch_alloc_fn)(size_t size, int device, gs_custream stream);
typedef void (*torch_free_fn)(void *ptr, size_t size, int device, gs_custream stream);
typedef void (*torch_record_fn)(void *ptr, gs_custream stream);
typedef void (*torch_reset_fn)(void);

static void *sym(void *h, const char *name)
{
    void *p = dlsym(h, name);
    if (!p) {
        fprintf(stderr, "no %s: %s\n", name, dlerror());
        exit(98);
    }
    return p;
}

static gs_curesult (*pool_get)(gs_cumempool, gs_cumempoolattr, void *);
static gs_cumempool pool;

static unsigned reserved_mib(void)
{
    gs_cuuint64 r = 0;
    EXPECT(pool_get(pool, GS_CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &r), GS_CUDA_SUCCESS);
    return (unsigned)(r / MiB);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr,
                "usage: dl_torch_streams PATH/libgpushim.so recorded|peer|unrecorded|plain\n");
        return 2;
    }
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    void *lib = dlopen(argv[1], RTLD_LAZY | RTLD_LOCAL); /* as ctypes.CDLL does */
    if (!cuda || !lib) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 99;
    }
    gs_curesult (*init)(unsigned) = sym(cuda, "cuInit");
    gs_curesult (*retain)(gs_cucontext *, gs_cudevice) = sym(cuda, "cuDevicePrimaryCtxRetain");
    gs_curesult (*set)(gs_cucontext) = sym(cuda, "cuCtxSetCurrent");
    gs_curesult (*stream_create)(gs_custream *, unsigned) = sym(cuda, "cuStreamCreate");
    gs_curesult (*ctx_sync)(void) = sym(cuda, "cuCtxSynchronize");
    gs_curesult (*free_async)(gs_cudeviceptr, gs_custream) = sym(cuda, "cuMemFreeAsync");
    gs_curesult (*default_pool)(gs_cumempool *, gs_cudevice) =
        sym(cuda, "cuDeviceGetDefaultMemPool");
    gs_curesult (*use)(gs_custream, gs_cudeviceptr) = sym(cuda, "simcuda_use");
    unsigned long (*hazards)(void) = sym(cuda, "simcuda_hazards");
    pool_get = sym(cuda, "cuMemPoolGetAttribute");
    torch_alloc_fn t_alloc = (torch_alloc_fn)sym(lib, "gpushim_torch_alloc");
    torch_free_fn t_free = (torch_free_fn)sym(lib, "gpushim_torch_free");
    torch_record_fn t_record = (torch_record_fn)sym(lib, "gpushim_torch_record_stream");
    torch_reset_fn t_reset = (torch_reset_fn)sym(lib, "gpushim_torch_empty_cache");

    gs_cucontext ctx, peer;
    gs_custream side;
    int on_peer = !strcmp(argv[2], "peer");
    EXPECT(init(0), GS_CUDA_SUCCESS);
    if (on_peer) {
        EXPECT(retain(&peer, 1), GS_CUDA_SUCCESS);
        EXPECT(set(peer), GS_CUDA_SUCCESS);
        EXPECT(stream_create(&side, 1), GS_CUDA_SUCCESS);
    }
    EXPECT(retain(&ctx, 0), GS_CUDA_SUCCESS);
    EXPECT(set(ctx), GS_CUDA_SUCCESS);
    if (!on_peer) /* non-blocking, as PyTorch's pool streams */
        EXPECT(stream_create(&side, 1), GS_CUDA_SUCCESS);
    EXPECT(default_pool(&pool, 0), GS_CUDA_SUCCESS);

    void *x = t_alloc(4 * MiB, 0, NULL);
    EXPECT(x != NULL, 1);
    EXPECT(use(side, (gs_cudeviceptr)(uintptr_t)x), GS_CUDA_SUCCESS);
    if (!strcmp(argv[2], "plain")) {
        EXPECT(free_async((gs_cudeviceptr)(uintptr_t)x, NULL), GS_CUDA_SUCCESS);
    } else {
        if (!strcmp(argv[2], "recorded") || on_peer)
            t_record(x, side); /* tensor.record_stream(side) */
        t_free(x, 4 * MiB, 0, NULL);
    }
    void *y = t_alloc(4 * MiB, 0, NULL);
    EXPECT(y != NULL, 1);
    EXPECT(ctx_sync(), GS_CUDA_SUCCESS);
    unsigned after_sync = reserved_mib();
    void *z = t_alloc(1 * MiB, 0, NULL);
    EXPECT(z != NULL, 1);
    t_free(z, 1 * MiB, 0, NULL);
    t_free(y, 4 * MiB, 0, NULL);
    EXPECT(ctx_sync(), GS_CUDA_SUCCESS);
    unsigned after_second = reserved_mib();
    t_reset();
    printf("y reused x: %s, reserved %u/%u/%u MiB, hazards %lu\n", y == x ? "yes" : "no",
           after_sync, after_second, reserved_mib(), hazards());
    return 0;
}
