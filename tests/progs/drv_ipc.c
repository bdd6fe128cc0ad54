/*
 * drv_ipc.c - memory another process shares: an IPC handle of a 1 MiB
 * allocation, opened (as a peer process would; the simulated driver allows
 * it in one process) and closed, then opened again and left open. Imported
 * memory is its own category: seen, not owned: peak 1 MiB, 1 MiB at the end.
 * The allocation itself is kept: 1 MiB of device memory unfreed.
 */
#include "progs.h"

gs_curesult cuIpcGetMemHandle(gs_cuipcmemhandle *handle, gs_cudeviceptr dptr);
gs_curesult cuIpcOpenMemHandle_v2(gs_cudeviceptr *dptr, gs_cuipcmemhandle handle, unsigned flags);
gs_curesult cuIpcCloseMemHandle(gs_cudeviceptr dptr);

NOINLINE static gs_cudeviceptr open_peer(gs_cuipcmemhandle h)
{
    gs_cudeviceptr p;
    EXPECT(cuIpcOpenMemHandle_v2(&p, h, 1), GS_CUDA_SUCCESS);
    return p;
}

int main(void)
{
    EXPECT(cuInit(0), GS_CUDA_SUCCESS);
    use_device(0);
    gs_cudeviceptr mine;
    EXPECT(cuMemAlloc_v2(&mine, MiB), GS_CUDA_SUCCESS);
    gs_cuipcmemhandle h;
    EXPECT(cuIpcGetMemHandle(&h, mine), GS_CUDA_SUCCESS);
    EXPECT(cuIpcCloseMemHandle(open_peer(h)), GS_CUDA_SUCCESS);
    open_peer(h);
    puts("ipc done");
    return 0;
}
