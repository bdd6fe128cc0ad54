/*
 * check_cuda_abi.c - include/gpushim_cuda.h checked against the toolkit's
 * cuda.h and cuda_runtime_api.h, at compile time.
 *
 * gpushim declares the driver ABI it uses itself so that it builds without
 * CUDA headers. This file, compiled only where the toolkit is installed
 * (`make check`), fails to compile if any type, constant or signature of
 * ours differs from NVIDIA's.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "gpushim_cuda.h"

#define SAME_TYPE(a, b) _Static_assert(__builtin_types_compatible_p(a, b), #a " is not " #b)
#define SAME_SIZE(a, b)                                                                            \
    _Static_assert(sizeof(a) == sizeof(b) && _Alignof(a) == _Alignof(b), #a " differs from " #b)
#define SAME_VALUE(a, b) _Static_assert((long long)(a) == (long long)(b), #a " != " #b)

/* Types: an enum is checked by size (its values are checked below). */
SAME_SIZE(gs_curesult, CUresult);
SAME_TYPE(gs_cudeviceptr, CUdeviceptr);
SAME_TYPE(gs_cudevice, CUdevice);
SAME_TYPE(gs_cuuint64, cuuint64_t);
SAME_SIZE(gs_cuprocstatus, CUdriverProcAddressQueryResult);
SAME_SIZE(gs_cucontext, CUcontext);
SAME_SIZE(gs_custream, CUstream);
SAME_SIZE(gs_custream, cudaStream_t);
SAME_SIZE(gs_cumempool, CUmemoryPool);
SAME_SIZE(gs_cudaerror, cudaError_t);

SAME_VALUE(GS_CUDA_SUCCESS, CUDA_SUCCESS);
SAME_VALUE(GS_CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_INVALID_VALUE);
SAME_VALUE(GS_CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_OUT_OF_MEMORY);
SAME_VALUE(GS_CUDA_ERROR_NOT_INITIALIZED, CUDA_ERROR_NOT_INITIALIZED);
SAME_VALUE(GS_CUDA_ERROR_NO_DEVICE, CUDA_ERROR_NO_DEVICE);
SAME_VALUE(GS_CUDA_ERROR_INVALID_DEVICE, CUDA_ERROR_INVALID_DEVICE);
SAME_VALUE(GS_CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_INVALID_CONTEXT);
SAME_VALUE(GS_CUDA_ERROR_NOT_FOUND, CUDA_ERROR_NOT_FOUND);
SAME_VALUE(GS_cudaSuccess, cudaSuccess);
SAME_VALUE(GS_cudaErrorInvalidValue, cudaErrorInvalidValue);
SAME_VALUE(GS_cudaErrorMemoryAllocation, cudaErrorMemoryAllocation);
SAME_VALUE(GS_cudaErrorInitializationError, cudaErrorInitializationError);
SAME_VALUE(GS_CU_GET_PROC_ADDRESS_DEFAULT, CU_GET_PROC_ADDRESS_DEFAULT);
SAME_VALUE(GS_CU_GET_PROC_ADDRESS_LEGACY_STREAM, CU_GET_PROC_ADDRESS_LEGACY_STREAM);
SAME_VALUE(GS_CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
           CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
SAME_VALUE(GS_CU_GET_PROC_ADDRESS_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS);
SAME_VALUE(GS_CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
SAME_VALUE(GS_CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT,
           CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
SAME_VALUE(GS_CU_MEM_ATTACH_GLOBAL, CU_MEM_ATTACH_GLOBAL);

/* Signatures: our lists expanded with NVIDIA's types in place of ours. */
#define gs_curesult CUresult
#define gs_cudeviceptr CUdeviceptr
#define gs_cudevice CUdevice
#define gs_cuuint64 cuuint64_t
#define gs_cuprocstatus CUdriverProcAddressQueryResult
#define gs_custream CUstream
#define gs_cumempool CUmemoryPool
#define gs_cudaerror cudaError_t
#define AS_NVIDIA(name, ret, params) typedef ret(*nv_##name) params;
GS_DRIVER_HOOKED(AS_NVIDIA)
GS_DRIVER_GETTERS(AS_NVIDIA)
GS_DRIVER_USED(AS_NVIDIA)
GS_RUNTIME_HOOKED(AS_NVIDIA)

/* The _ptsz variants are declared only for per-thread builds; they have the
 * ABI of the plain functions. cuda.h 12+ maps cuGetProcAddress onto _v2. */
SAME_TYPE(nv_cuMemAlloc_v2, __typeof__(&cuMemAlloc_v2));
SAME_TYPE(nv_cuMemFree_v2, __typeof__(&cuMemFree_v2));
SAME_TYPE(nv_cuMemAllocPitch_v2, __typeof__(&cuMemAllocPitch_v2));
SAME_TYPE(nv_cuMemAllocManaged, __typeof__(&cuMemAllocManaged));
SAME_TYPE(nv_cuMemAllocAsync, __typeof__(&cuMemAllocAsync));
SAME_TYPE(nv_cuMemAllocAsync_ptsz, __typeof__(&cuMemAllocAsync));
SAME_TYPE(nv_cuMemFreeAsync, __typeof__(&cuMemFreeAsync));
SAME_TYPE(nv_cuMemFreeAsync_ptsz, __typeof__(&cuMemFreeAsync));
SAME_TYPE(nv_cuMemAllocFromPoolAsync, __typeof__(&cuMemAllocFromPoolAsync));
SAME_TYPE(nv_cuMemAllocFromPoolAsync_ptsz, __typeof__(&cuMemAllocFromPoolAsync));
SAME_TYPE(nv_cuGetProcAddress_v2, __typeof__(&cuGetProcAddress_v2));
SAME_TYPE(nv_cuMemGetInfo_v2, __typeof__(&cuMemGetInfo_v2));
SAME_TYPE(nv_cuCtxGetDevice, __typeof__(&cuCtxGetDevice));
SAME_TYPE(nv_cudaMalloc, __typeof__(&cudaMalloc));
SAME_TYPE(nv_cudaFree, __typeof__(&cudaFree));
SAME_TYPE(nv_cudaMallocPitch, __typeof__(&cudaMallocPitch));
SAME_TYPE(nv_cudaMallocManaged, __typeof__(&cudaMallocManaged));
SAME_TYPE(nv_cudaMallocAsync, __typeof__(&cudaMallocAsync));
SAME_TYPE(nv_cudaMallocAsync_ptsz, __typeof__(&cudaMallocAsync));
SAME_TYPE(nv_cudaFreeAsync, __typeof__(&cudaFreeAsync));
SAME_TYPE(nv_cudaFreeAsync_ptsz, __typeof__(&cudaFreeAsync));
/* The 4-argument getter is the 5-argument one without its last parameter. */
SAME_TYPE(nv_cuGetProcAddress,
          CUresult (*)(const char *, void **, int, cuuint64_t));
