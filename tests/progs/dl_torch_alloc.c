/*
 * dl_torch_alloc.c - calls libgpushim.so's pluggable allocator as PyTorch's
 * CUDAPluggableAllocator does: the shared object opened by its path
 * (argv[1]) with RTLD_LOCAL, gpushim_torch_alloc and gpushim_torch_free
 * looked up with dlsym, called with a size, a device and a stream. The
 * driver is opened with dlopen too, as the CUDA runtime opens it. Run with
 * SIMCUDA_DEVICES=2 SIMCUDA_MEMORY=64M.
 *
 * Device 0's primary context is current on the main thread, as after
 * torch.cuda.set_device(0).
 *
 *   forward:          3 x 1 MiB on device 0, default stream; the second freed
 *   on_second_device: 2 MiB on device 1, on a stream of device 1, called
 *                     with device 0 current (which stays current); freed
 *   from_a_thread:    512 KiB on device 0 from a thread with no current
 *                     context (which still has none after); freed
 *   too_big:          1 GiB on device 0: NULL, a failure
 *   nothing:          0 bytes: NULL, not recorded; freeing NULL: nothing
 *   bad_device:       1 MiB on device 7 (there are 2): NULL, a failure
 *
 * Allocations 5, frees 3, failures 2. Unfreed: 2 MiB in 2, from forward.
 * Device 0 peak 3 MiB, device 1 peak 2 MiB.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "progs.h"

typedef void *(*torch_alloc_fn)(size_t size, int device, gs_custream stream);
typedef void (*torch_free_fn)(void *ptr, size_t size, int device, gs_custream stream);

static torch_alloc_fn t_alloc;
static torch_free_fn t_free;
static gs_curesult (*d_init)(unsigned);
static gs_curesult (*d_retain)(gs_cucontext *, gs_cudevice);
static gs_curesult (*d_set)(gs_cucontext);
static gs_curesult (*d_get)(gs_cucontext *);
static gs_curesult (*d_stream)(gs_custream *, unsigned);
static gs_curesult (*d_sync)(gs_custream);

static void *sym(void *h, const char *name)
{
    void *p = dlsym(h, name);
    if (!p) {
        fprintf(stderr, "no %s: %s\n", name, dlerror());
        exit(98);
    }
    return p;
}

NOINLINE static void forward(void *p[3])
{
    for (int i = 0; i < 3; i++) {
        p[i] = t_alloc(1 * MiB, 0, NULL);
        EXPECT(p[i] != NULL, 1);
    }
}

NOINLINE static void *on_second_device(gs_custream s)
{
    void *q = t_alloc(2 * MiB, 1, s);
    EXPECT(q != NULL, 1);
    return q;
}

NOINLINE static void *from_a_thread(void *arg)
{
    (void)arg;
    gs_cucontext none = (gs_cucontext)1;
    EXPECT(d_get(&none), GS_CUDA_SUCCESS);
    EXPECT(none == NULL, 1);
    void *t = t_alloc(512 * KiB, 0, NULL);
    EXPECT(t != NULL, 1);
    EXPECT(d_get(&none), GS_CUDA_SUCCESS);
    EXPECT(none == NULL, 1); /* still none: the allocator put it back */
    t_free(t, 512 * KiB, 0, NULL);
    return NULL;
}

NOINLINE static void too_big(void) { EXPECT(t_alloc(1024 * MiB, 0, NULL) == NULL, 1); }

NOINLINE static void nothing(void)
{
    EXPECT(t_alloc(0, 0, NULL) == NULL, 1);
    t_free(NULL, 0, 0, NULL);
}

NOINLINE static void bad_device(void) { EXPECT(t_alloc(1 * MiB, 7, NULL) == NULL, 1); }

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: dl_torch_alloc PATH/libgpushim.so\n");
        return 2;
    }
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!cuda) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 99;
    }
    d_init = sym(cuda, "cuInit");
    d_retain = sym(cuda, "cuDevicePrimaryCtxRetain");
    d_set = sym(cuda, "cuCtxSetCurrent");
    d_get = sym(cuda, "cuCtxGetCurrent");
    d_stream = sym(cuda, "cuStreamCreate");
    d_sync = sym(cuda, "cuStreamSynchronize");

    gs_cucontext ctx0, ctx1, now;
    gs_custream s1;
    EXPECT(d_init(0), GS_CUDA_SUCCESS);
    EXPECT(d_retain(&ctx1, 1), GS_CUDA_SUCCESS);
    EXPECT(d_set(ctx1), GS_CUDA_SUCCESS);
    EXPECT(d_stream(&s1, 0), GS_CUDA_SUCCESS);
    EXPECT(d_retain(&ctx0, 0), GS_CUDA_SUCCESS);
    EXPECT(d_set(ctx0), GS_CUDA_SUCCESS);

    void *lib = dlopen(argv[1], RTLD_LAZY | RTLD_LOCAL); /* as ctypes.CDLL does */
    if (!lib) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 99;
    }
    t_alloc = (torch_alloc_fn)sym(lib, "gpushim_torch_alloc");
    t_free = (torch_free_fn)sym(lib, "gpushim_torch_free");

    void *p[3];
    forward(p);
    void *q = on_second_device(s1);
    EXPECT(d_get(&now), GS_CUDA_SUCCESS);
    EXPECT(now == ctx0, 1); /* the caller's context is back */
    t_free(p[1], 1 * MiB, 0, NULL);
    pthread_t th;
    EXPECT(pthread_create(&th, NULL, from_a_thread, NULL), 0);
    EXPECT(pthread_join(th, NULL), 0);
    too_big();
    nothing();
    bad_device();
    t_free(q, 2 * MiB, 1, s1);
    EXPECT(d_sync(s1), GS_CUDA_SUCCESS);
    EXPECT(d_get(&now), GS_CUDA_SUCCESS);
    EXPECT(now == ctx0, 1);
    puts("torch allocator done");
    return 0;
}
