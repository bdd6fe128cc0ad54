/*
 * names.c - the names the reports and exports give to what a trace holds as
 * numbers: each hooked API (GS_API_*, include/gpushim_trace.h), each kind of
 * memory (GS_KIND_*) and each CUresult (include/gpushim_cuda.h).
 */
#include "gpushim_trace.h"
#include "analyzer/util/names.h"
#include "gpushim_cuda.h" /* GS_CURESULTS */

static const char *const api_names[GS_API_COUNT] = {
    [GS_API_UNKNOWN] = "unknown",
#define NAME(x) [GS_API_##x] = #x
    NAME(cuMemAlloc_v2),
    NAME(cuMemFree_v2),
    NAME(cuMemAllocPitch_v2),
    NAME(cuMemAllocManaged),
    NAME(cuMemAllocAsync),
    NAME(cuMemAllocAsync_ptsz),
    NAME(cuMemFreeAsync),
    NAME(cuMemFreeAsync_ptsz),
    NAME(cuMemAllocFromPoolAsync),
    NAME(cuMemAllocFromPoolAsync_ptsz),
    NAME(cudaMalloc),
    NAME(cudaFree),
    NAME(cudaMallocPitch),
    NAME(cudaMallocManaged),
    NAME(cudaMallocAsync),
    NAME(cudaMallocAsync_ptsz),
    NAME(cudaFreeAsync),
    NAME(cudaFreeAsync_ptsz),
    NAME(cuMemCreate),
    NAME(cuMemRelease),
    NAME(cuMemRetainAllocationHandle),
    NAME(cuMemImportFromShareableHandle),
    NAME(cuMemMap),
    NAME(cuMemUnmap),
    NAME(cuMemAddressReserve),
    NAME(cuMemAddressFree),
    NAME(cuMemHostAlloc),
    NAME(cuMemAllocHost_v2),
    NAME(cuMemFreeHost),
    NAME(cuMemHostRegister_v2),
    NAME(cuMemHostUnregister),
    NAME(cuArrayCreate_v2),
    NAME(cuArray3DCreate_v2),
    NAME(cuArrayDestroy),
    NAME(cuMipmappedArrayCreate),
    NAME(cuMipmappedArrayDestroy),
    NAME(cuIpcOpenMemHandle_v2),
    NAME(cuIpcCloseMemHandle),
    NAME(cuMemPoolCreate),
    NAME(cuMemPoolDestroy),
    NAME(cudaMallocHost),
    NAME(cudaHostAlloc),
    NAME(cudaFreeHost),
    NAME(cudaHostRegister),
    NAME(cudaHostUnregister),
    NAME(cudaMalloc3D),
    NAME(cudaMallocArray),
    NAME(cudaMalloc3DArray),
    NAME(cudaFreeArray),
    NAME(cudaMallocFromPoolAsync),
    NAME(cudaMallocFromPoolAsync_ptsz),
    NAME(cudaMemPoolCreate),
    NAME(cudaMemPoolDestroy),
    NAME(gpushim_torch_alloc),
    NAME(gpushim_torch_free),
    NAME(cuMulticastCreate),
    NAME(cuStreamBeginCapture_v2),
    NAME(cuStreamBeginCapture_v2_ptsz),
    NAME(cuStreamEndCapture),
    NAME(cuStreamEndCapture_ptsz),
    NAME(cuGraphAddMemAllocNode),
    NAME(cuGraphAddMemFreeNode),
    NAME(cuGraphInstantiateWithFlags),
    NAME(cuGraphUpload),
    NAME(cuGraphUpload_ptsz),
    NAME(cuGraphLaunch),
    NAME(cuGraphLaunch_ptsz),
    NAME(cuGraphExecDestroy),
    NAME(cuGraphDestroy),
    NAME(cuDeviceGraphMemTrim),
#undef NAME
};

static const char *const kind_names[GS_KIND_COUNT] = {
    [GS_KIND_DEVICE] = "device",   [GS_KIND_MANAGED] = "managed",
    [GS_KIND_HOST_PINNED] = "host_pinned", [GS_KIND_ARRAY] = "array",
    [GS_KIND_IMPORTED] = "imported", [GS_KIND_ADDRESS_SPACE] = "address_space",
    [GS_KIND_MAPPED] = "mapped",   [GS_KIND_MULTICAST] = "multicast",
};

const char *gs_kind_name(uint32_t kind) { return kind < GS_KIND_COUNT ? kind_names[kind] : "?"; }

static const char *const kind_labels[GS_KIND_COUNT] = {
    [GS_KIND_DEVICE] = "device memory",
    [GS_KIND_MANAGED] = "managed memory",
    [GS_KIND_HOST_PINNED] = "pinned host memory",
    [GS_KIND_ARRAY] = "CUDA arrays",
    [GS_KIND_IMPORTED] = "imported from other processes",
    [GS_KIND_ADDRESS_SPACE] = "reserved address space",
    [GS_KIND_MAPPED] = "mapped ranges",
    [GS_KIND_MULTICAST] = "multicast objects",
};

const char *gs_kind_label(uint32_t kind) { return kind < GS_KIND_COUNT ? kind_labels[kind] : "?"; }

const char *gs_api_name(uint32_t api) { return api < GS_API_COUNT ? api_names[api] : "unknown"; }

/* Every CUresult of cuda.h by its name (include/gpushim_cuda.h); a value
 * no CUDA release defines reads "CUDA_ERROR". */
const char *gs_result_name(uint32_t result)
{
    switch (result) {
#define RESULT_NAME(name, value)                                                                   \
    case value: return #name;
        GS_CURESULTS(RESULT_NAME)
#undef RESULT_NAME
    default: return "CUDA_ERROR";
    }
}
