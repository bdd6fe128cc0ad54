/*
 * check_cuda_abi.c - include/gpushim_cuda.h checked against the toolkit's
 * cuda.h and cuda_runtime_api.h, at compile time.
 *
 * gpushim declares the driver ABI it uses itself so that it builds without
 * CUDA headers. This file, compiled only where the toolkit is installed
 * (`make check`), fails to compile if any type, constant or signature of
 * ours differs from NVIDIA's.
 */
#include <stddef.h>

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
SAME_TYPE(gs_cumemhandle, CUmemGenericAllocationHandle);
SAME_SIZE(gs_cuarray, CUarray);
SAME_SIZE(gs_cudaarray, cudaArray_t);
SAME_SIZE(gs_cumipmappedarray, CUmipmappedArray);
SAME_SIZE(gs_cumemhandletype, CUmemAllocationHandleType);
SAME_SIZE(gs_cumempoolattr, CUmemPool_attribute);
SAME_SIZE(gs_cudaentrystatus, enum cudaDriverEntryPointQueryResult);
SAME_SIZE(gs_cugraph, CUgraph);
SAME_SIZE(gs_cugraph, cudaGraph_t);
SAME_SIZE(gs_cugraphexec, CUgraphExec);
SAME_SIZE(gs_cugraphnode, CUgraphNode);
SAME_SIZE(gs_custreamcapturemode, CUstreamCaptureMode);
SAME_SIZE(gs_custreamcapturestatus, CUstreamCaptureStatus);
SAME_SIZE(gs_cugraphmemattr, CUgraphMem_attribute);

/* Structures: size, and where each field the shim reads lies. */
#define SAME_FIELD(ours, theirs, field)                                                           \
    _Static_assert(offsetof(ours, field) == offsetof(theirs, field) &&                             \
                       sizeof(((ours *)0)->field) == sizeof(((theirs *)0)->field),                 \
                   #ours "." #field)
SAME_SIZE(gs_cumemlocation, CUmemLocation);
SAME_SIZE(gs_cumemallocationprop, CUmemAllocationProp);
SAME_FIELD(gs_cumemallocationprop, CUmemAllocationProp, location);
SAME_FIELD(gs_cumemallocationprop, CUmemAllocationProp, type);
SAME_SIZE(gs_cumulticastobjectprop, CUmulticastObjectProp);
SAME_FIELD(gs_cumulticastobjectprop, CUmulticastObjectProp, numDevices);
SAME_FIELD(gs_cumulticastobjectprop, CUmulticastObjectProp, size);
SAME_FIELD(gs_cumulticastobjectprop, CUmulticastObjectProp, handleTypes);
SAME_FIELD(gs_cumulticastobjectprop, CUmulticastObjectProp, flags);
SAME_SIZE(gs_cumempoolprops, CUmemPoolProps);
SAME_FIELD(gs_cumempoolprops, CUmemPoolProps, location);
SAME_SIZE(gs_cuarraydesc, CUDA_ARRAY_DESCRIPTOR);
SAME_FIELD(gs_cuarraydesc, CUDA_ARRAY_DESCRIPTOR, Width);
SAME_FIELD(gs_cuarraydesc, CUDA_ARRAY_DESCRIPTOR, Height);
SAME_FIELD(gs_cuarraydesc, CUDA_ARRAY_DESCRIPTOR, Format);
SAME_FIELD(gs_cuarraydesc, CUDA_ARRAY_DESCRIPTOR, NumChannels);
SAME_SIZE(gs_cuarray3ddesc, CUDA_ARRAY3D_DESCRIPTOR);
SAME_FIELD(gs_cuarray3ddesc, CUDA_ARRAY3D_DESCRIPTOR, Depth);
SAME_FIELD(gs_cuarray3ddesc, CUDA_ARRAY3D_DESCRIPTOR, Format);
SAME_FIELD(gs_cuarray3ddesc, CUDA_ARRAY3D_DESCRIPTOR, NumChannels);
SAME_SIZE(gs_cuipcmemhandle, CUipcMemHandle);
SAME_SIZE(gs_cudamempoolprops, struct cudaMemPoolProps);
SAME_FIELD(gs_cudamempoolprops, struct cudaMemPoolProps, location);
SAME_SIZE(gs_cudaextent, struct cudaExtent);
SAME_SIZE(gs_cudapitchedptr, struct cudaPitchedPtr);
SAME_SIZE(gs_cudachannelformatdesc, struct cudaChannelFormatDesc);
/* the head of cudaDeviceProp: the fields at the same offsets */
SAME_FIELD(gs_cudadeviceprop_head, struct cudaDeviceProp, name);
SAME_FIELD(gs_cudadeviceprop_head, struct cudaDeviceProp, uuid);
SAME_FIELD(gs_cudadeviceprop_head, struct cudaDeviceProp, luid);
SAME_FIELD(gs_cudadeviceprop_head, struct cudaDeviceProp, luidDeviceNodeMask);
SAME_FIELD(gs_cudadeviceprop_head, struct cudaDeviceProp, totalGlobalMem);
_Static_assert(sizeof(gs_cudadeviceprop_head) <= sizeof(struct cudaDeviceProp), "a head");
SAME_SIZE(gs_cumemallocnodeparams, CUDA_MEM_ALLOC_NODE_PARAMS);
SAME_SIZE(gs_cumemallocnodeparams, struct cudaMemAllocNodeParams);
SAME_FIELD(gs_cumemallocnodeparams, CUDA_MEM_ALLOC_NODE_PARAMS, poolProps);
SAME_FIELD(gs_cumemallocnodeparams, CUDA_MEM_ALLOC_NODE_PARAMS, accessDescs);
SAME_FIELD(gs_cumemallocnodeparams, CUDA_MEM_ALLOC_NODE_PARAMS, accessDescCount);
SAME_FIELD(gs_cumemallocnodeparams, CUDA_MEM_ALLOC_NODE_PARAMS, bytesize);
SAME_FIELD(gs_cumemallocnodeparams, CUDA_MEM_ALLOC_NODE_PARAMS, dptr);
SAME_VALUE(GS_CU_STREAM_CAPTURE_MODE_GLOBAL, CU_STREAM_CAPTURE_MODE_GLOBAL);
SAME_VALUE(GS_CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
SAME_VALUE(GS_CU_STREAM_CAPTURE_MODE_RELAXED, CU_STREAM_CAPTURE_MODE_RELAXED);
SAME_VALUE(GS_CU_STREAM_CAPTURE_STATUS_NONE, CU_STREAM_CAPTURE_STATUS_NONE);
SAME_VALUE(GS_CU_STREAM_CAPTURE_STATUS_ACTIVE, CU_STREAM_CAPTURE_STATUS_ACTIVE);
SAME_VALUE(GS_CU_STREAM_CAPTURE_STATUS_INVALIDATED, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
SAME_VALUE(GS_CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT);
SAME_VALUE(GS_CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH);
SAME_VALUE(GS_CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT);
SAME_VALUE(GS_CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH);
SAME_VALUE(GS_CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH,
           CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH);
SAME_VALUE(GS_CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH,
           cudaGraphInstantiateFlagAutoFreeOnLaunch);
SAME_VALUE(GS_CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);

SAME_VALUE(GS_CUDA_SUCCESS, CUDA_SUCCESS);
SAME_VALUE(GS_CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_INVALID_VALUE);
SAME_VALUE(GS_CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_OUT_OF_MEMORY);
SAME_VALUE(GS_CUDA_ERROR_NOT_INITIALIZED, CUDA_ERROR_NOT_INITIALIZED);
SAME_VALUE(GS_CUDA_ERROR_NO_DEVICE, CUDA_ERROR_NO_DEVICE);
SAME_VALUE(GS_CUDA_ERROR_INVALID_DEVICE, CUDA_ERROR_INVALID_DEVICE);
SAME_VALUE(GS_CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_INVALID_CONTEXT);
SAME_VALUE(GS_CUDA_ERROR_NOT_FOUND, CUDA_ERROR_NOT_FOUND);
SAME_VALUE(GS_CUDA_ERROR_NOT_PERMITTED, CUDA_ERROR_NOT_PERMITTED);
SAME_VALUE(GS_CUDA_ERROR_NOT_SUPPORTED, CUDA_ERROR_NOT_SUPPORTED);
SAME_VALUE(GS_CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
SAME_VALUE(GS_CUDA_ERROR_STREAM_CAPTURE_UNJOINED, CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
/* every CUresult the analyzer names, each by its cuda.h name */
#define SAME_RESULT(name, value) SAME_VALUE(value, name);
GS_CURESULTS(SAME_RESULT)
#undef SAME_RESULT
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
SAME_VALUE(GS_CU_MEM_LOCATION_TYPE_DEVICE, CU_MEM_LOCATION_TYPE_DEVICE);
SAME_VALUE(GS_CU_MEM_LOCATION_TYPE_HOST, CU_MEM_LOCATION_TYPE_HOST);
SAME_VALUE(GS_CU_MEM_LOCATION_TYPE_HOST_NUMA, CU_MEM_LOCATION_TYPE_HOST_NUMA);
SAME_VALUE(GS_CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT);
SAME_VALUE(GS_CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_ALLOCATION_TYPE_PINNED);
SAME_VALUE(GS_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
SAME_VALUE(GS_CU_MEM_HANDLE_TYPE_FABRIC, CU_MEM_HANDLE_TYPE_FABRIC);
SAME_VALUE(GS_CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD);
SAME_VALUE(GS_CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
SAME_VALUE(GS_CU_MEMPOOL_ATTR_USED_MEM_CURRENT, CU_MEMPOOL_ATTR_USED_MEM_CURRENT);
SAME_VALUE(GS_CU_AD_FORMAT_UNSIGNED_INT8, CU_AD_FORMAT_UNSIGNED_INT8);
SAME_VALUE(GS_CU_AD_FORMAT_UNSIGNED_INT16, CU_AD_FORMAT_UNSIGNED_INT16);
SAME_VALUE(GS_CU_AD_FORMAT_UNSIGNED_INT32, CU_AD_FORMAT_UNSIGNED_INT32);
SAME_VALUE(GS_CU_AD_FORMAT_SIGNED_INT8, CU_AD_FORMAT_SIGNED_INT8);
SAME_VALUE(GS_CU_AD_FORMAT_SIGNED_INT16, CU_AD_FORMAT_SIGNED_INT16);
SAME_VALUE(GS_CU_AD_FORMAT_SIGNED_INT32, CU_AD_FORMAT_SIGNED_INT32);
SAME_VALUE(GS_CU_AD_FORMAT_HALF, CU_AD_FORMAT_HALF);
SAME_VALUE(GS_CU_AD_FORMAT_FLOAT, CU_AD_FORMAT_FLOAT);

/* Signatures: our lists expanded with NVIDIA's types in place of ours. */
#define gs_curesult CUresult
#define gs_cudeviceptr CUdeviceptr
#define gs_cudevice CUdevice
#define gs_cucontext CUcontext
#define gs_cuuint64 cuuint64_t
#define gs_cuprocstatus CUdriverProcAddressQueryResult
#define gs_custream CUstream
#define gs_cumempool CUmemoryPool
#define gs_cuevent CUevent
#define gs_cudaerror cudaError_t
#define gs_cumemhandle CUmemGenericAllocationHandle
#define gs_cuarray CUarray
#define gs_cudaarray cudaArray_t
#define gs_cumipmappedarray CUmipmappedArray
#define gs_cumemhandletype CUmemAllocationHandleType
#define gs_cumempoolattr CUmemPool_attribute
#define gs_cudaentrystatus enum cudaDriverEntryPointQueryResult
#define gs_cumemallocationprop CUmemAllocationProp
#define gs_cumempoolprops CUmemPoolProps
#define gs_cumulticastobjectprop CUmulticastObjectProp
#define gs_cudamempoolprops struct cudaMemPoolProps
#define gs_cuarraydesc CUDA_ARRAY_DESCRIPTOR
#define gs_cuarray3ddesc CUDA_ARRAY3D_DESCRIPTOR
#define gs_cuipcmemhandle CUipcMemHandle
#define gs_cudaextent struct cudaExtent
#define gs_cudapitchedptr struct cudaPitchedPtr
#define gs_cudachannelformatdesc struct cudaChannelFormatDesc
#define gs_cugraph CUgraph
#define gs_cugraphexec CUgraphExec
#define gs_cugraphnode CUgraphNode
#define gs_custreamcapturemode CUstreamCaptureMode
#define gs_custreamcapturestatus CUstreamCaptureStatus
#define gs_cugraphmemattr CUgraphMem_attribute
#define gs_cumemallocnodeparams CUDA_MEM_ALLOC_NODE_PARAMS
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
SAME_TYPE(nv_cuMemCreate, __typeof__(&cuMemCreate));
SAME_TYPE(nv_cuMemRelease, __typeof__(&cuMemRelease));
SAME_TYPE(nv_cuMemRetainAllocationHandle, __typeof__(&cuMemRetainAllocationHandle));
SAME_TYPE(nv_cuMemImportFromShareableHandle, __typeof__(&cuMemImportFromShareableHandle));
SAME_TYPE(nv_cuMemMap, __typeof__(&cuMemMap));
SAME_TYPE(nv_cuMemUnmap, __typeof__(&cuMemUnmap));
SAME_TYPE(nv_cuMemAddressReserve, __typeof__(&cuMemAddressReserve));
SAME_TYPE(nv_cuMemAddressFree, __typeof__(&cuMemAddressFree));
SAME_TYPE(nv_cuMemHostAlloc, __typeof__(&cuMemHostAlloc));
SAME_TYPE(nv_cuMemAllocHost_v2, __typeof__(&cuMemAllocHost_v2));
SAME_TYPE(nv_cuMemFreeHost, __typeof__(&cuMemFreeHost));
SAME_TYPE(nv_cuMemHostRegister_v2, __typeof__(&cuMemHostRegister_v2));
SAME_TYPE(nv_cuMemHostUnregister, __typeof__(&cuMemHostUnregister));
SAME_TYPE(nv_cuArrayCreate_v2, __typeof__(&cuArrayCreate_v2));
SAME_TYPE(nv_cuArray3DCreate_v2, __typeof__(&cuArray3DCreate_v2));
SAME_TYPE(nv_cuArrayDestroy, __typeof__(&cuArrayDestroy));
SAME_TYPE(nv_cuMipmappedArrayCreate, __typeof__(&cuMipmappedArrayCreate));
SAME_TYPE(nv_cuMipmappedArrayDestroy, __typeof__(&cuMipmappedArrayDestroy));
SAME_TYPE(nv_cuIpcOpenMemHandle_v2, __typeof__(&cuIpcOpenMemHandle_v2));
SAME_TYPE(nv_cuIpcCloseMemHandle, __typeof__(&cuIpcCloseMemHandle));
SAME_TYPE(nv_cuMemPoolCreate, __typeof__(&cuMemPoolCreate));
SAME_TYPE(nv_cuMemPoolDestroy, __typeof__(&cuMemPoolDestroy));
SAME_TYPE(nv_cuMulticastCreate, __typeof__(&cuMulticastCreate));
SAME_TYPE(nv_cuStreamGetDevice, __typeof__(&cuStreamGetDevice));
SAME_TYPE(nv_cuDeviceGetMemPool, __typeof__(&cuDeviceGetMemPool));
SAME_TYPE(nv_cuMemPoolGetAttribute, __typeof__(&cuMemPoolGetAttribute));
SAME_TYPE(nv_cuStreamBeginCapture_v2, __typeof__(&cuStreamBeginCapture_v2));
SAME_TYPE(nv_cuStreamBeginCapture_v2_ptsz, __typeof__(&cuStreamBeginCapture_v2));
SAME_TYPE(nv_cuStreamEndCapture, __typeof__(&cuStreamEndCapture));
SAME_TYPE(nv_cuStreamEndCapture_ptsz, __typeof__(&cuStreamEndCapture));
SAME_TYPE(nv_cuGraphAddMemAllocNode, __typeof__(&cuGraphAddMemAllocNode));
SAME_TYPE(nv_cuGraphAddMemFreeNode, __typeof__(&cuGraphAddMemFreeNode));
SAME_TYPE(nv_cuGraphInstantiateWithFlags, __typeof__(&cuGraphInstantiateWithFlags));
SAME_TYPE(nv_cuGraphUpload, __typeof__(&cuGraphUpload));
SAME_TYPE(nv_cuGraphUpload_ptsz, __typeof__(&cuGraphUpload));
SAME_TYPE(nv_cuGraphLaunch, __typeof__(&cuGraphLaunch));
SAME_TYPE(nv_cuGraphLaunch_ptsz, __typeof__(&cuGraphLaunch));
SAME_TYPE(nv_cuGraphExecDestroy, __typeof__(&cuGraphExecDestroy));
SAME_TYPE(nv_cuGraphDestroy, __typeof__(&cuGraphDestroy));
SAME_TYPE(nv_cuDeviceGraphMemTrim, __typeof__(&cuDeviceGraphMemTrim));
SAME_TYPE(nv_cuStreamIsCapturing, __typeof__(&cuStreamIsCapturing));
SAME_TYPE(nv_cuDeviceGetGraphMemAttribute, __typeof__(&cuDeviceGetGraphMemAttribute));
SAME_TYPE(nv_cuMemGetAddressRange_v2, __typeof__(&cuMemGetAddressRange_v2));
SAME_TYPE(nv_cuCtxGetCurrent, __typeof__(&cuCtxGetCurrent));
SAME_TYPE(nv_cuCtxSetCurrent, __typeof__(&cuCtxSetCurrent));
SAME_TYPE(nv_cuDevicePrimaryCtxRetain, __typeof__(&cuDevicePrimaryCtxRetain));
SAME_TYPE(nv_cuStreamCreate, __typeof__(&cuStreamCreate));
SAME_TYPE(nv_cuEventCreate, __typeof__(&cuEventCreate));
SAME_TYPE(nv_cuEventRecord, __typeof__(&cuEventRecord));
SAME_TYPE(nv_cuStreamWaitEvent, __typeof__(&cuStreamWaitEvent));
SAME_TYPE(nv_cuEventDestroy_v2, __typeof__(&cuEventDestroy_v2));
SAME_TYPE(nv_cuCtxSynchronize, __typeof__(&cuCtxSynchronize));
SAME_TYPE(nv_cuDeviceGetDefaultMemPool, __typeof__(&cuDeviceGetDefaultMemPool));
SAME_TYPE(nv_cuMemPoolSetAttribute, __typeof__(&cuMemPoolSetAttribute));
SAME_TYPE(nv_cuMemPoolTrimTo, __typeof__(&cuMemPoolTrimTo));
SAME_TYPE(nv_cudaMallocHost, __typeof__(&cudaMallocHost));
SAME_TYPE(nv_cudaHostAlloc, __typeof__(&cudaHostAlloc));
SAME_TYPE(nv_cudaFreeHost, __typeof__(&cudaFreeHost));
SAME_TYPE(nv_cudaHostRegister, __typeof__(&cudaHostRegister));
SAME_TYPE(nv_cudaHostUnregister, __typeof__(&cudaHostUnregister));
SAME_TYPE(nv_cudaMalloc3D, __typeof__(&cudaMalloc3D));
SAME_TYPE(nv_cudaMallocArray, __typeof__(&cudaMallocArray));
SAME_TYPE(nv_cudaMalloc3DArray, __typeof__(&cudaMalloc3DArray));
SAME_TYPE(nv_cudaFreeArray, __typeof__(&cudaFreeArray));
SAME_TYPE(nv_cudaMallocFromPoolAsync, __typeof__(&cudaMallocFromPoolAsync));
SAME_TYPE(nv_cudaMallocFromPoolAsync_ptsz, __typeof__(&cudaMallocFromPoolAsync));
SAME_TYPE(nv_cudaMemPoolCreate, __typeof__(&cudaMemPoolCreate));
SAME_TYPE(nv_cudaMemPoolDestroy, __typeof__(&cudaMemPoolDestroy));
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
SAME_TYPE(nv_cudaGetDriverEntryPoint, __typeof__(&cudaGetDriverEntryPoint));
SAME_TYPE(nv_cudaGetDriverEntryPoint_ptsz, __typeof__(&cudaGetDriverEntryPoint));
#pragma GCC diagnostic pop
SAME_TYPE(nv_cudaGetDriverEntryPointByVersion_ptsz, __typeof__(&cudaGetDriverEntryPointByVersion));
SAME_TYPE(nv_cudaGetDriverEntryPointByVersion, __typeof__(&cudaGetDriverEntryPointByVersion));
/* The 4-argument getter is the 5-argument one without its last parameter. */
SAME_TYPE(nv_cuGetProcAddress,
          CUresult (*)(const char *, void **, int, cuuint64_t));
