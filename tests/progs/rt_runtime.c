/*
 * rt_runtime.c - the runtime API (the simulated libcudart, which reaches the
 * driver only through cuGetProcAddress), one call of each kind.
 *
 * Run with SIMCUDA_MEMORY=64M. Schedule (the label the report must show):
 *   cudaMalloc         3 MiB, freed
 *   cudaMallocManaged  1 MiB, kept (managed memory: not in the device peak)
 *   cudaMallocPitch    1000 x 10 -> pitch 1024: 10240 bytes, kept
 *   cudaMallocAsync    64 KiB, freed with cudaFreeAsync
 *   cudaMalloc         128 MiB: fails, out of memory
 * Device peak: 3 MiB + 10240 bytes. Unfreed device memory: 10240 bytes.
 */
#include "progs.h"

gs_cudaerror cudaMalloc(void **p, size_t size);
gs_cudaerror cudaFree(void *p);
gs_cudaerror cudaMallocManaged(void **p, size_t size, unsigned flags);
gs_cudaerror cudaMallocPitch(void **p, size_t *pitch, size_t width, size_t height);
gs_cudaerror cudaMallocAsync(void **p, size_t size, gs_custream stream);
gs_cudaerror cudaFreeAsync(void *p, gs_custream stream);

NOINLINE static void *scratch(void)
{
    void *p;
    EXPECT(cudaMalloc(&p, 3 * MiB), GS_cudaSuccess);
    return p;
}

NOINLINE static void *image(size_t *pitch)
{
    void *p;
    EXPECT(cudaMallocPitch(&p, pitch, 1000, 10), GS_cudaSuccess);
    return p;
}

NOINLINE static void too_big(void)
{
    void *p = NULL;
    EXPECT(cudaMalloc(&p, 128 * MiB), GS_cudaErrorMemoryAllocation);
}

int main(void)
{
    void *s = scratch(), *m, *a;
    size_t pitch = 0;
    EXPECT(cudaMallocManaged(&m, 1 * MiB, GS_CU_MEM_ATTACH_GLOBAL), GS_cudaSuccess);
    image(&pitch);
    EXPECT(pitch, 1024);
    EXPECT(cudaMallocAsync(&a, 64 * KiB, NULL), GS_cudaSuccess);
    EXPECT(cudaFreeAsync(a, NULL), GS_cudaSuccess);
    EXPECT(cudaFree(s), GS_cudaSuccess);
    too_big();
    EXPECT(cudaFree(NULL), GS_cudaSuccess);
    puts("runtime done");
    return 0;
}
