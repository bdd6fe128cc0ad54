/*
 * rt_torch_style.c - the two ways PyTorch gets memory when told to, through
 * the runtime (the simulated libcudart) as PyTorch does.
 *
 * Expandable segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True):
 * the driver functions come from cudaGetDriverEntryPointByVersion; one
 * 256 MiB address range is reserved, and 20 MiB pages of physical memory are
 * created and mapped into it as the segment grows (grow_segment), 3 pages;
 * then the last page is unmapped and released (shrink_segment). The two
 * pages left are never released: 40 MiB of device memory leaked, each
 * counted once although mapped.
 *
 * backend:cudaMallocAsync: one cudaMallocAsync per tensor (two of 1 MiB on
 * the default stream), freed with cudaFreeAsync.
 *
 * Device peak: 60 MiB, the three pages, before the shrink (the tensors come
 * after it: 42 MiB). Run with GPUSHIM_POOL_SAMPLE_MS=0: the default pool is
 * sampled after each of the four calls: reserved 2 MiB, used 1, 2, 1, 0 MiB.
 */
#include "progs.h"

gs_cudaerror cudaGetDriverEntryPointByVersion(const char *symbol, void **fn, unsigned version,
                                              unsigned long long flags, int *status);
gs_cudaerror cudaMallocAsync(void **p, size_t size, gs_custream stream);
gs_cudaerror cudaFreeAsync(void *p, gs_custream stream);
gs_cudaerror cudaFree(void *p);

static gs_pfn_cuMemCreate mem_create;
static gs_pfn_cuMemRelease mem_release;
static gs_pfn_cuMemMap mem_map;
static gs_pfn_cuMemUnmap mem_unmap;
static gs_pfn_cuMemAddressReserve addr_reserve;

static gs_cudeviceptr segment;
static gs_cumemhandle pages[3];

static void *entry(const char *name, unsigned version)
{
    void *fn = NULL;
    int status = -1;
    EXPECT(cudaGetDriverEntryPointByVersion(name, &fn, version, 0, &status), GS_cudaSuccess);
    EXPECT(status, 0);
    return fn;
}

NOINLINE static void grow_segment(int page)
{
    gs_cumemallocationprop prop = {.type = GS_CU_MEM_ALLOCATION_TYPE_PINNED,
                                   .location = {GS_CU_MEM_LOCATION_TYPE_DEVICE, 0}};
    EXPECT(mem_create(&pages[page], 20 * MiB, &prop, 0), GS_CUDA_SUCCESS);
    EXPECT(mem_map(segment + (gs_cudeviceptr)page * 20 * MiB, 20 * MiB, 0, pages[page], 0),
           GS_CUDA_SUCCESS);
}

NOINLINE static void shrink_segment(int page)
{
    EXPECT(mem_unmap(segment + (gs_cudeviceptr)page * 20 * MiB, 20 * MiB), GS_CUDA_SUCCESS);
    EXPECT(mem_release(pages[page]), GS_CUDA_SUCCESS);
}

NOINLINE static void tensors(void)
{
    void *a, *b;
    EXPECT(cudaMallocAsync(&a, MiB, NULL), GS_cudaSuccess);
    EXPECT(cudaMallocAsync(&b, MiB, NULL), GS_cudaSuccess);
    EXPECT(cudaFreeAsync(a, NULL), GS_cudaSuccess);
    EXPECT(cudaFreeAsync(b, NULL), GS_cudaSuccess);
}

int main(void)
{
    EXPECT(cudaFree(NULL), GS_cudaSuccess); /* the runtime's start, as PyTorch's lazy init */
    mem_create = entry("cuMemCreate", 12000);
    mem_release = entry("cuMemRelease", 12000);
    mem_map = entry("cuMemMap", 12000);
    mem_unmap = entry("cuMemUnmap", 12000);
    addr_reserve = entry("cuMemAddressReserve", 12000);
    EXPECT(addr_reserve(&segment, 256 * MiB, 0, 0, 0), GS_CUDA_SUCCESS);
    for (int page = 0; page < 3; page++)
        grow_segment(page);
    shrink_segment(2);
    tensors();
    puts("torch style done");
    return 0;
}
