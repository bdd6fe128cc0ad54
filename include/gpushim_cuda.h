/*
 * gpushim_cuda.h - the slice of the CUDA driver and runtime ABI that gpushim uses.
 *
 * gpushim builds without CUDA headers: machines that only have a framework's
 * bundled runtime must be able to build it. So the few types, constants and
 * function signatures the project touches are declared here under a gs_
 * prefix, which lets a test include this file next to the toolkit's cuda.h
 * and check every declaration against it (tests/unit/test_cuda_abi.c).
 *
 * The function lists are X-macros: X(name, return type, (parameters)).
 * The shim, the simulated driver and the ABI test expand them differently.
 */
#ifndef GPUSHIM_CUDA_H
#define GPUSHIM_CUDA_H

#include <stddef.h>
#include <stdint.h>

typedef int gs_curesult;                    /* CUresult (an enum)          */
typedef unsigned long long gs_cudeviceptr;  /* CUdeviceptr (64-bit builds) */
typedef int gs_cudevice;                    /* CUdevice                    */
typedef uint64_t gs_cuuint64;               /* cuuint64_t                  */
typedef int gs_cuprocstatus;                /* CUdriverProcAddressQueryResult */
typedef struct gs_cuctx_st *gs_cucontext;   /* CUcontext                   */
typedef struct gs_custream_st *gs_custream; /* CUstream, cudaStream_t      */
typedef struct gs_cupool_st *gs_cumempool;  /* CUmemoryPool                */
typedef int gs_cudaerror;                   /* cudaError_t (an enum)       */

/* CUresult values */
#define GS_CUDA_SUCCESS 0
#define GS_CUDA_ERROR_INVALID_VALUE 1
#define GS_CUDA_ERROR_OUT_OF_MEMORY 2
#define GS_CUDA_ERROR_NOT_INITIALIZED 3
#define GS_CUDA_ERROR_NO_DEVICE 100
#define GS_CUDA_ERROR_INVALID_DEVICE 101
#define GS_CUDA_ERROR_INVALID_CONTEXT 201
#define GS_CUDA_ERROR_NOT_FOUND 500

/* cudaError_t values */
#define GS_cudaSuccess 0
#define GS_cudaErrorInvalidValue 1
#define GS_cudaErrorMemoryAllocation 2
#define GS_cudaErrorInitializationError 3

/* cuGetProcAddress flags and symbolStatus values */
#define GS_CU_GET_PROC_ADDRESS_DEFAULT 0
#define GS_CU_GET_PROC_ADDRESS_LEGACY_STREAM 1
#define GS_CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM 2
#define GS_CU_GET_PROC_ADDRESS_SUCCESS 0
#define GS_CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND 1
#define GS_CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT 2

/* cuMemAllocManaged flags */
#define GS_CU_MEM_ATTACH_GLOBAL 1

/* Driver functions gpushim intercepts. */
#define GS_DRIVER_HOOKED(X)                                                        \
    X(cuMemAlloc_v2, gs_curesult, (gs_cudeviceptr * dptr, size_t bytesize))         \
    X(cuMemFree_v2, gs_curesult, (gs_cudeviceptr dptr))                             \
    X(cuMemAllocPitch_v2, gs_curesult,                                              \
      (gs_cudeviceptr * dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,   \
       unsigned int ElementSizeBytes))                                              \
    X(cuMemAllocManaged, gs_curesult,                                               \
      (gs_cudeviceptr * dptr, size_t bytesize, unsigned int flags))                 \
    X(cuMemAllocAsync, gs_curesult,                                                 \
      (gs_cudeviceptr * dptr, size_t bytesize, gs_custream hStream))                \
    X(cuMemAllocAsync_ptsz, gs_curesult,                                            \
      (gs_cudeviceptr * dptr, size_t bytesize, gs_custream hStream))                \
    X(cuMemFreeAsync, gs_curesult, (gs_cudeviceptr dptr, gs_custream hStream))      \
    X(cuMemFreeAsync_ptsz, gs_curesult, (gs_cudeviceptr dptr, gs_custream hStream)) \
    X(cuMemAllocFromPoolAsync, gs_curesult,                                         \
      (gs_cudeviceptr * dptr, size_t bytesize, gs_cumempool pool, gs_custream hStream)) \
    X(cuMemAllocFromPoolAsync_ptsz, gs_curesult,                                    \
      (gs_cudeviceptr * dptr, size_t bytesize, gs_cumempool pool, gs_custream hStream))

/* The entry-point getter, in its two ABIs: the CUDA 11.3 one (4 arguments,
 * exported as "cuGetProcAddress") and the CUDA 12 one (5 arguments, exported
 * as "cuGetProcAddress_v2"; cuda.h 12+ maps the plain name onto it). */
#define GS_DRIVER_GETTERS(X)                                                       \
    X(cuGetProcAddress, gs_curesult,                                                \
      (const char *symbol, void **pfn, int cudaVersion, gs_cuuint64 flags))         \
    X(cuGetProcAddress_v2, gs_curesult,                                             \
      (const char *symbol, void **pfn, int cudaVersion, gs_cuuint64 flags,          \
       gs_cuprocstatus *symbolStatus))

/* Driver functions the shim calls for itself (never recorded). */
#define GS_DRIVER_USED(X)                                                          \
    X(cuMemGetInfo_v2, gs_curesult, (size_t * free, size_t *total))                 \
    X(cuCtxGetDevice, gs_curesult, (gs_cudevice * device))

/* Runtime functions whose calls label the driver event they cause. */
#define GS_RUNTIME_HOOKED(X)                                                       \
    X(cudaMalloc, gs_cudaerror, (void **devPtr, size_t size))                       \
    X(cudaFree, gs_cudaerror, (void *devPtr))                                       \
    X(cudaMallocPitch, gs_cudaerror,                                                \
      (void **devPtr, size_t *pitch, size_t width, size_t height))                  \
    X(cudaMallocManaged, gs_cudaerror, (void **devPtr, size_t size, unsigned int flags)) \
    X(cudaMallocAsync, gs_cudaerror, (void **devPtr, size_t size, gs_custream hStream)) \
    X(cudaMallocAsync_ptsz, gs_cudaerror,                                           \
      (void **devPtr, size_t size, gs_custream hStream))                            \
    X(cudaFreeAsync, gs_cudaerror, (void *devPtr, gs_custream hStream))             \
    X(cudaFreeAsync_ptsz, gs_cudaerror, (void *devPtr, gs_custream hStream))

/* Function-pointer types: gs_pfn_cuMemAlloc_v2 and so on. */
#define GS_DECLARE_PFN(name, ret, params) typedef ret(*gs_pfn_##name) params;
GS_DRIVER_HOOKED(GS_DECLARE_PFN)
GS_DRIVER_GETTERS(GS_DECLARE_PFN)
GS_DRIVER_USED(GS_DECLARE_PFN)
GS_RUNTIME_HOOKED(GS_DECLARE_PFN)
#undef GS_DECLARE_PFN

#endif
