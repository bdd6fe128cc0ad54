/*
 * rt_kinds.c - every other kind of memory, through the runtime (each
 * event labelled with the runtime function called).
 *
 *   pinned host   cudaMallocHost 1 MiB (freed with cudaFreeHost),
 *                 cudaHostAlloc 2 MiB (kept), cudaHostRegister of 3 MiB of
 *                 malloc'd memory (unregistered)      peak 6 MiB, 2 MiB at the end
 *   arrays        cudaMallocArray 256 x 128 of float4 (512 KiB, freed),
 *                 cudaMalloc3DArray 64 x 64 x 16 of uchar1 (64 KiB, kept)
 *                                                     peak 576 KiB, 64 KiB at the end
 *   device        cudaMalloc3D 1000 x 20 x 5 bytes: pitch 1024, 102400 bytes (kept)
 *   pool          cudaMemPoolCreate on device 0, cudaMallocFromPoolAsync 3 MiB
 *                 and 1 MiB, both freed, cudaMemPoolDestroy after a sync
 */
#include <stdlib.h>

#include "progs.h"

gs_cudaerror cudaMallocHost(void **p, size_t size);
gs_cudaerror cudaHostAlloc(void **p, size_t size, unsigned flags);
gs_cudaerror cudaFreeHost(void *p);
gs_cudaerror cudaHostRegister(void *p, size_t size, unsigned flags);
gs_cudaerror cudaHostUnregister(void *p);
gs_cudaerror cudaMallocArray(gs_cudaarray *a, const gs_cudachannelformatdesc *d, size_t w,
                             size_t h, unsigned flags);
gs_cudaerror cudaMalloc3DArray(gs_cudaarray *a, const gs_cudachannelformatdesc *d,
                               gs_cudaextent e, unsigned flags);
gs_cudaerror cudaFreeArray(gs_cudaarray a);
gs_cudaerror cudaMalloc3D(gs_cudapitchedptr *p, gs_cudaextent e);
gs_cudaerror cudaMemPoolCreate(gs_cumempool *pool, const gs_cudamempoolprops *props);
gs_cudaerror cudaMemPoolDestroy(gs_cumempool pool);
gs_cudaerror cudaMallocFromPoolAsync(void **p, size_t size, gs_cumempool pool, gs_custream s);
gs_cudaerror cudaFreeAsync(void *p, gs_custream s);
gs_cudaerror cudaDeviceSynchronize(void);

#define FLOAT 2 /* cudaChannelFormatKindFloat */
#define UNSIGNED 1

NOINLINE static void staging(void)
{
    void *a, *b;
    EXPECT(cudaMallocHost(&a, 1 * MiB), GS_cudaSuccess);
    EXPECT(cudaHostAlloc(&b, 2 * MiB, 0), GS_cudaSuccess);
    void *mine = malloc(3 * MiB);
    EXPECT(cudaHostRegister(mine, 3 * MiB, 0), GS_cudaSuccess);
    EXPECT(cudaFreeHost(a), GS_cudaSuccess);
    EXPECT(cudaHostUnregister(mine), GS_cudaSuccess);
    free(mine);
}

NOINLINE static void textures(void)
{
    gs_cudaarray a, b;
    gs_cudachannelformatdesc float4 = {32, 32, 32, 32, FLOAT}, uchar1 = {8, 0, 0, 0, UNSIGNED};
    EXPECT(cudaMallocArray(&a, &float4, 256, 128, 0), GS_cudaSuccess);
    EXPECT(cudaMalloc3DArray(&b, &uchar1, (gs_cudaextent){64, 64, 16}, 0), GS_cudaSuccess);
    EXPECT(cudaFreeArray(a), GS_cudaSuccess);
}

NOINLINE static void volume(void)
{
    gs_cudapitchedptr p;
    EXPECT(cudaMalloc3D(&p, (gs_cudaextent){1000, 20, 5}), GS_cudaSuccess);
    EXPECT(p.pitch, 1024);
}

NOINLINE static void pooled(void)
{
    gs_cudamempoolprops props = {.allocType = GS_CU_MEM_ALLOCATION_TYPE_PINNED,
                                 .location = {GS_CU_MEM_LOCATION_TYPE_DEVICE, 0}};
    gs_cumempool pool;
    void *a, *b;
    EXPECT(cudaMemPoolCreate(&pool, &props), GS_cudaSuccess);
    EXPECT(cudaMallocFromPoolAsync(&a, 3 * MiB, pool, NULL), GS_cudaSuccess);
    EXPECT(cudaMallocFromPoolAsync(&b, 1 * MiB, pool, NULL), GS_cudaSuccess);
    EXPECT(cudaFreeAsync(a, NULL), GS_cudaSuccess);
    EXPECT(cudaFreeAsync(b, NULL), GS_cudaSuccess);
    EXPECT(cudaDeviceSynchronize(), GS_cudaSuccess);
    EXPECT(cudaMemPoolDestroy(pool), GS_cudaSuccess);
}

int main(void)
{
    staging();
    textures();
    volume();
    pooled();
    puts("kinds done");
    return 0;
}
