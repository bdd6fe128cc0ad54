/*
 * gpushim_cuda.h - the slice of the CUDA driver and runtime ABI that gpushim uses.
 *
 * gpushim builds without CUDA headers: machines that only have a framework's
 * bundled runtime must be able to build it. So the few types, constants and
 * function signatures the project touches are declared here under a gs_
 * prefix, which lets a test include this file next to the toolkit's cuda.h
 * and check every declaration against it (tests/abi/check_cuda_abi.c).
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
typedef struct gs_cuevent_st *gs_cuevent;   /* CUevent, cudaEvent_t        */
typedef int gs_cudaerror;                   /* cudaError_t (an enum)       */
typedef unsigned long long gs_cumemhandle;  /* CUmemGenericAllocationHandle */
typedef struct gs_cuarray_st *gs_cuarray;   /* CUarray                     */
typedef struct gs_cumiparray_st *gs_cumipmappedarray; /* CUmipmappedArray */
typedef int gs_cumemhandletype;             /* CUmemAllocationHandleType   */
typedef int gs_cumempoolattr;               /* CUmemPool_attribute         */
typedef struct gs_cudaarray_st *gs_cudaarray; /* cudaArray_t               */
typedef int gs_cudaentrystatus;             /* cudaDriverEntryPointQueryResult */
typedef struct gs_cugraph_st *gs_cugraph;   /* CUgraph, cudaGraph_t        */
typedef struct gs_cugraphexec_st *gs_cugraphexec; /* CUgraphExec, cudaGraphExec_t */
typedef struct gs_cugraphnode_st *gs_cugraphnode; /* CUgraphNode, cudaGraphNode_t */
typedef int gs_custreamcapturemode;         /* CUstreamCaptureMode         */
typedef int gs_custreamcapturestatus;       /* CUstreamCaptureStatus       */
typedef int gs_cugraphmemattr;              /* CUgraphMem_attribute        */

/* CUmemLocation, CUmemAllocationProp (cuMemCreate's properties) */
typedef struct {
    int type; /* GS_CU_MEM_LOCATION_TYPE_* */
    int id;   /* device ordinal for DEVICE */
} gs_cumemlocation;
typedef struct {
    int type; /* CUmemAllocationHandleType */
#define GS_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR 0x1
#define GS_CU_MEM_HANDLE_TYPE_FABRIC 0x8

/* CUmemAllocationType */
    int requestedHandleTypes;
    gs_cumemlocation location;
    void *win32HandleMetaData;
    struct {
        unsigned char compressionType;
        unsigned char gpuDirectRDMACapable;
        unsigned short usage;
        unsigned char reserved[4];
    } allocFlags;
} gs_cumemallocationprop;

/* The head of cudaDeviceProp (driver_types.h), up to totalGlobalMem, at the
 * same offsets: what the simulated runtime's cudaGetDeviceProperties fills
 * (PyTorch's expandable segments size their reservation by totalGlobalMem);
 * the real struct (1008 bytes in CUDA 13) goes on past it. */
typedef struct {
    char name[256];
    unsigned char uuid[16];
    char luid[8];
    unsigned int luidDeviceNodeMask;
    size_t totalGlobalMem;
} gs_cudadeviceprop_head;

/* CUmulticastObjectProp (cuMulticastCreate): size is what each device may
 * bind to the object */
typedef struct {
    unsigned int numDevices;
    size_t size;
    unsigned long long handleTypes;
    unsigned long long flags;
} gs_cumulticastobjectprop;

/* CUmemPoolProps (cuMemPoolCreate) */
typedef struct {
    int allocType;
    int handleTypes;
    gs_cumemlocation location;
    void *win32SecurityAttributes;
    size_t maxSize;
    unsigned short usage;
    unsigned char reserved[54];
} gs_cumempoolprops;
typedef gs_cumempoolprops gs_cudamempoolprops; /* struct cudaMemPoolProps: the same layout */

/* CUDA_MEM_ALLOC_NODE_PARAMS (cuGraphAddMemAllocNode; the runtime's struct
 * cudaMemAllocNodeParams has the same layout): bytesize in, dptr out */
typedef struct {
    gs_cumempoolprops poolProps;
    const void *accessDescs; /* const CUmemAccessDesc * */
    size_t accessDescCount;
    size_t bytesize;
    gs_cudeviceptr dptr;
} gs_cumemallocnodeparams;

/* CUDA_ARRAY_DESCRIPTOR and CUDA_ARRAY3D_DESCRIPTOR (array sizes) */
typedef struct {
    size_t Width, Height;
    int Format; /* CUarray_format: GS_CU_AD_FORMAT_* */
    unsigned int NumChannels;
} gs_cuarraydesc;
typedef struct {
    size_t Width, Height, Depth;
    int Format;
    unsigned int NumChannels;
    unsigned int Flags;
} gs_cuarray3ddesc;

/* CUipcMemHandle: passed by value */
typedef struct {
    char reserved[64];
} gs_cuipcmemhandle;

/* The runtime's structures passed by value or pointer to its allocators. */
typedef struct {
    size_t width, height, depth;
} gs_cudaextent;
typedef struct {
    void *ptr;
    size_t pitch, xsize, ysize;
} gs_cudapitchedptr;
typedef struct {
    int x, y, z, w;
    int f; /* enum cudaChannelFormatKind */
} gs_cudachannelformatdesc;

/* CUresult values */
#define GS_CUDA_SUCCESS 0
#define GS_CUDA_ERROR_INVALID_VALUE 1
#define GS_CUDA_ERROR_OUT_OF_MEMORY 2
#define GS_CUDA_ERROR_NOT_INITIALIZED 3
#define GS_CUDA_ERROR_NO_DEVICE 100
#define GS_CUDA_ERROR_INVALID_DEVICE 101
#define GS_CUDA_ERROR_INVALID_CONTEXT 201
#define GS_CUDA_ERROR_NOT_FOUND 500
#define GS_CUDA_ERROR_NOT_PERMITTED 800
#define GS_CUDA_ERROR_NOT_SUPPORTED 801
#define GS_CUDA_ERROR_STREAM_CAPTURE_INVALIDATED 901
#define GS_CUDA_ERROR_STREAM_CAPTURE_UNJOINED 904

/* Every CUresult of cuda.h (CUDA 13.0) as X(name, value), in its order: the
 * analyzer names a call's result by it. tests/abi checks each value against
 * the toolkit's cuda.h, and test_failures.py that cuda.h has no other. */
#define GS_CURESULTS(X)                                                    \
    X(CUDA_SUCCESS, 0)                                                \
    X(CUDA_ERROR_INVALID_VALUE, 1)                                    \
    X(CUDA_ERROR_OUT_OF_MEMORY, 2)                                    \
    X(CUDA_ERROR_NOT_INITIALIZED, 3)                                  \
    X(CUDA_ERROR_DEINITIALIZED, 4)                                    \
    X(CUDA_ERROR_PROFILER_DISABLED, 5)                                \
    X(CUDA_ERROR_PROFILER_NOT_INITIALIZED, 6)                         \
    X(CUDA_ERROR_PROFILER_ALREADY_STARTED, 7)                         \
    X(CUDA_ERROR_PROFILER_ALREADY_STOPPED, 8)                         \
    X(CUDA_ERROR_STUB_LIBRARY, 34)                                    \
    X(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER, 36)                      \
    X(CUDA_ERROR_DEVICE_UNAVAILABLE, 46)                              \
    X(CUDA_ERROR_NO_DEVICE, 100)                                      \
    X(CUDA_ERROR_INVALID_DEVICE, 101)                                 \
    X(CUDA_ERROR_DEVICE_NOT_LICENSED, 102)                            \
    X(CUDA_ERROR_INVALID_IMAGE, 200)                                  \
    X(CUDA_ERROR_INVALID_CONTEXT, 201)                                \
    X(CUDA_ERROR_CONTEXT_ALREADY_CURRENT, 202)                        \
    X(CUDA_ERROR_MAP_FAILED, 205)                                     \
    X(CUDA_ERROR_UNMAP_FAILED, 206)                                   \
    X(CUDA_ERROR_ARRAY_IS_MAPPED, 207)                                \
    X(CUDA_ERROR_ALREADY_MAPPED, 208)                                 \
    X(CUDA_ERROR_NO_BINARY_FOR_GPU, 209)                              \
    X(CUDA_ERROR_ALREADY_ACQUIRED, 210)                               \
    X(CUDA_ERROR_NOT_MAPPED, 211)                                     \
    X(CUDA_ERROR_NOT_MAPPED_AS_ARRAY, 212)                            \
    X(CUDA_ERROR_NOT_MAPPED_AS_POINTER, 213)                          \
    X(CUDA_ERROR_ECC_UNCORRECTABLE, 214)                              \
    X(CUDA_ERROR_UNSUPPORTED_LIMIT, 215)                              \
    X(CUDA_ERROR_CONTEXT_ALREADY_IN_USE, 216)                         \
    X(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, 217)                        \
    X(CUDA_ERROR_INVALID_PTX, 218)                                    \
    X(CUDA_ERROR_INVALID_GRAPHICS_CONTEXT, 219)                       \
    X(CUDA_ERROR_NVLINK_UNCORRECTABLE, 220)                           \
    X(CUDA_ERROR_JIT_COMPILER_NOT_FOUND, 221)                         \
    X(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, 222)                        \
    X(CUDA_ERROR_JIT_COMPILATION_DISABLED, 223)                       \
    X(CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY, 224)                      \
    X(CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC, 225)                       \
    X(CUDA_ERROR_CONTAINED, 226)                                      \
    X(CUDA_ERROR_INVALID_SOURCE, 300)                                 \
    X(CUDA_ERROR_FILE_NOT_FOUND, 301)                                 \
    X(CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND, 302)                 \
    X(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED, 303)                      \
    X(CUDA_ERROR_OPERATING_SYSTEM, 304)                               \
    X(CUDA_ERROR_INVALID_HANDLE, 400)                                 \
    X(CUDA_ERROR_ILLEGAL_STATE, 401)                                  \
    X(CUDA_ERROR_LOSSY_QUERY, 402)                                    \
    X(CUDA_ERROR_NOT_FOUND, 500)                                      \
    X(CUDA_ERROR_NOT_READY, 600)                                      \
    X(CUDA_ERROR_ILLEGAL_ADDRESS, 700)                                \
    X(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, 701)                        \
    X(CUDA_ERROR_LAUNCH_TIMEOUT, 702)                                 \
    X(CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING, 703)                  \
    X(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, 704)                    \
    X(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, 705)                        \
    X(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, 708)                         \
    X(CUDA_ERROR_CONTEXT_IS_DESTROYED, 709)                           \
    X(CUDA_ERROR_ASSERT, 710)                                         \
    X(CUDA_ERROR_TOO_MANY_PEERS, 711)                                 \
    X(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, 712)                 \
    X(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, 713)                     \
    X(CUDA_ERROR_HARDWARE_STACK_ERROR, 714)                           \
    X(CUDA_ERROR_ILLEGAL_INSTRUCTION, 715)                            \
    X(CUDA_ERROR_MISALIGNED_ADDRESS, 716)                             \
    X(CUDA_ERROR_INVALID_ADDRESS_SPACE, 717)                          \
    X(CUDA_ERROR_INVALID_PC, 718)                                     \
    X(CUDA_ERROR_LAUNCH_FAILED, 719)                                  \
    X(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, 720)                   \
    X(CUDA_ERROR_TENSOR_MEMORY_LEAK, 721)                             \
    X(CUDA_ERROR_NOT_PERMITTED, 800)                                  \
    X(CUDA_ERROR_NOT_SUPPORTED, 801)                                  \
    X(CUDA_ERROR_SYSTEM_NOT_READY, 802)                               \
    X(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, 803)                         \
    X(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, 804)                 \
    X(CUDA_ERROR_MPS_CONNECTION_FAILED, 805)                          \
    X(CUDA_ERROR_MPS_RPC_FAILURE, 806)                                \
    X(CUDA_ERROR_MPS_SERVER_NOT_READY, 807)                           \
    X(CUDA_ERROR_MPS_MAX_CLIENTS_REACHED, 808)                        \
    X(CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED, 809)                    \
    X(CUDA_ERROR_MPS_CLIENT_TERMINATED, 810)                          \
    X(CUDA_ERROR_CDP_NOT_SUPPORTED, 811)                              \
    X(CUDA_ERROR_CDP_VERSION_MISMATCH, 812)                           \
    X(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, 900)                     \
    X(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, 901)                     \
    X(CUDA_ERROR_STREAM_CAPTURE_MERGE, 902)                           \
    X(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, 903)                       \
    X(CUDA_ERROR_STREAM_CAPTURE_UNJOINED, 904)                        \
    X(CUDA_ERROR_STREAM_CAPTURE_ISOLATION, 905)                       \
    X(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, 906)                        \
    X(CUDA_ERROR_CAPTURED_EVENT, 907)                                 \
    X(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, 908)                    \
    X(CUDA_ERROR_TIMEOUT, 909)                                        \
    X(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, 910)                      \
    X(CUDA_ERROR_EXTERNAL_DEVICE, 911)                                \
    X(CUDA_ERROR_INVALID_CLUSTER_SIZE, 912)                           \
    X(CUDA_ERROR_FUNCTION_NOT_LOADED, 913)                            \
    X(CUDA_ERROR_INVALID_RESOURCE_TYPE, 914)                          \
    X(CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION, 915)                 \
    X(CUDA_ERROR_KEY_ROTATION, 916)                                   \
    X(CUDA_ERROR_UNKNOWN, 999)

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

/* CUmemLocationType */
#define GS_CU_MEM_LOCATION_TYPE_DEVICE 1
#define GS_CU_MEM_LOCATION_TYPE_HOST 2
#define GS_CU_MEM_LOCATION_TYPE_HOST_NUMA 3
#define GS_CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT 4

/* CUmemAllocationType */
#define GS_CU_MEM_ALLOCATION_TYPE_PINNED 1

/* CUmemPool_attribute */
#define GS_CU_MEMPOOL_ATTR_RELEASE_THRESHOLD 4
#define GS_CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT 5
#define GS_CU_MEMPOOL_ATTR_USED_MEM_CURRENT 7

/* CUDA graphs: CUstreamCaptureMode, CUstreamCaptureStatus,
 * CUgraphMem_attribute, CUgraphInstantiate_flags */
#define GS_CU_STREAM_CAPTURE_MODE_GLOBAL 0
#define GS_CU_STREAM_CAPTURE_MODE_THREAD_LOCAL 1
#define GS_CU_STREAM_CAPTURE_MODE_RELAXED 2
#define GS_CU_STREAM_CAPTURE_STATUS_NONE 0
#define GS_CU_STREAM_CAPTURE_STATUS_ACTIVE 1
#define GS_CU_STREAM_CAPTURE_STATUS_INVALIDATED 2
#define GS_CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT 0
#define GS_CU_GRAPH_MEM_ATTR_USED_MEM_HIGH 1
#define GS_CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT 2
#define GS_CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH 3
#define GS_CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH 1
#define GS_CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED 900

/* CUarray_format: the bytes of one channel of each format */
#define GS_CU_AD_FORMAT_UNSIGNED_INT8 0x01
#define GS_CU_AD_FORMAT_UNSIGNED_INT16 0x02
#define GS_CU_AD_FORMAT_UNSIGNED_INT32 0x03
#define GS_CU_AD_FORMAT_SIGNED_INT8 0x08
#define GS_CU_AD_FORMAT_SIGNED_INT16 0x09
#define GS_CU_AD_FORMAT_SIGNED_INT32 0x0a
#define GS_CU_AD_FORMAT_HALF 0x10
#define GS_CU_AD_FORMAT_FLOAT 0x20

/* Driver functions gpushim intercepts (cuMemGetInfo_v2: what it answered a
 * thread tells whether the thread's next allocation asks for all free
 * memory, as a probe does; shim/record/record.c). */
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
      (gs_cudeviceptr * dptr, size_t bytesize, gs_cumempool pool, gs_custream hStream)) \
    X(cuMemCreate, gs_curesult,                                                     \
      (gs_cumemhandle * handle, size_t size, const gs_cumemallocationprop *prop,      \
       unsigned long long flags))                                                   \
    X(cuMemRelease, gs_curesult, (gs_cumemhandle handle))                           \
    X(cuMemRetainAllocationHandle, gs_curesult, (gs_cumemhandle * handle, void *addr)) \
    X(cuMemImportFromShareableHandle, gs_curesult,                                  \
      (gs_cumemhandle * handle, void *osHandle, gs_cumemhandletype shHandleType))     \
    X(cuMemMap, gs_curesult,                                                        \
      (gs_cudeviceptr ptr, size_t size, size_t offset, gs_cumemhandle handle,       \
       unsigned long long flags))                                                   \
    X(cuMemUnmap, gs_curesult, (gs_cudeviceptr ptr, size_t size))                   \
    X(cuMemAddressReserve, gs_curesult,                                             \
      (gs_cudeviceptr * ptr, size_t size, size_t alignment, gs_cudeviceptr addr,     \
       unsigned long long flags))                                                   \
    X(cuMemAddressFree, gs_curesult, (gs_cudeviceptr ptr, size_t size))             \
    X(cuMemHostAlloc, gs_curesult, (void **pp, size_t bytesize, unsigned int Flags)) \
    X(cuMemAllocHost_v2, gs_curesult, (void **pp, size_t bytesize))                 \
    X(cuMemFreeHost, gs_curesult, (void *p))                                        \
    X(cuMemHostRegister_v2, gs_curesult, (void *p, size_t bytesize, unsigned int Flags)) \
    X(cuMemHostUnregister, gs_curesult, (void *p))                                  \
    X(cuArrayCreate_v2, gs_curesult,                                                \
      (gs_cuarray * pHandle, const gs_cuarraydesc *pAllocateArray))                 \
    X(cuArray3DCreate_v2, gs_curesult,                                              \
      (gs_cuarray * pHandle, const gs_cuarray3ddesc *pAllocateArray))               \
    X(cuArrayDestroy, gs_curesult, (gs_cuarray hArray))                             \
    X(cuMipmappedArrayCreate, gs_curesult,                                          \
      (gs_cumipmappedarray * pHandle, const gs_cuarray3ddesc *pMipmappedArrayDesc,   \
       unsigned int numMipmapLevels))                                               \
    X(cuMipmappedArrayDestroy, gs_curesult, (gs_cumipmappedarray hMipmappedArray))  \
    X(cuIpcOpenMemHandle_v2, gs_curesult,                                           \
      (gs_cudeviceptr * pdptr, gs_cuipcmemhandle handle, unsigned int Flags))        \
    X(cuIpcCloseMemHandle, gs_curesult, (gs_cudeviceptr dptr))                      \
    X(cuMemPoolCreate, gs_curesult, (gs_cumempool * pool, const gs_cumempoolprops *poolProps)) \
    X(cuMemPoolDestroy, gs_curesult, (gs_cumempool pool))                           \
    X(cuMemPoolTrimTo, gs_curesult, (gs_cumempool pool, size_t minBytesToKeep))     \
    X(cuMulticastCreate, gs_curesult,                                               \
      (gs_cumemhandle * mcHandle, const gs_cumulticastobjectprop *prop))             \
    X(cuMemGetInfo_v2, gs_curesult, (size_t * free, size_t *total))                 \
    GS_DRIVER_GRAPHS(X)

/* CUDA graphs (shim/hooks/hooks_graphs.c): capture, memory nodes, their executables. */
#define GS_DRIVER_GRAPHS(X)                                                        \
    X(cuStreamBeginCapture_v2, gs_curesult,                                         \
      (gs_custream hStream, gs_custreamcapturemode mode))                           \
    X(cuStreamBeginCapture_v2_ptsz, gs_curesult,                                    \
      (gs_custream hStream, gs_custreamcapturemode mode))                           \
    X(cuStreamEndCapture, gs_curesult, (gs_custream hStream, gs_cugraph * phGraph)) \
    X(cuStreamEndCapture_ptsz, gs_curesult, (gs_custream hStream, gs_cugraph * phGraph)) \
    X(cuGraphAddMemAllocNode, gs_curesult,                                          \
      (gs_cugraphnode * phGraphNode, gs_cugraph hGraph, const gs_cugraphnode *dependencies, \
       size_t numDependencies, gs_cumemallocnodeparams *nodeParams))                \
    X(cuGraphAddMemFreeNode, gs_curesult,                                           \
      (gs_cugraphnode * phGraphNode, gs_cugraph hGraph, const gs_cugraphnode *dependencies, \
       size_t numDependencies, gs_cudeviceptr dptr))                                \
    X(cuGraphInstantiateWithFlags, gs_curesult,                                     \
      (gs_cugraphexec * phGraphExec, gs_cugraph hGraph, unsigned long long flags))   \
    X(cuGraphUpload, gs_curesult, (gs_cugraphexec hGraphExec, gs_custream hStream)) \
    X(cuGraphUpload_ptsz, gs_curesult, (gs_cugraphexec hGraphExec, gs_custream hStream)) \
    X(cuGraphLaunch, gs_curesult, (gs_cugraphexec hGraphExec, gs_custream hStream)) \
    X(cuGraphLaunch_ptsz, gs_curesult, (gs_cugraphexec hGraphExec, gs_custream hStream)) \
    X(cuGraphExecDestroy, gs_curesult, (gs_cugraphexec hGraphExec))                 \
    X(cuGraphDestroy, gs_curesult, (gs_cugraph hGraph))                             \
    X(cuDeviceGraphMemTrim, gs_curesult, (gs_cudevice device))

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
    X(cuCtxGetDevice, gs_curesult, (gs_cudevice * device))                          \
    X(cuStreamGetDevice, gs_curesult, (gs_custream hStream, gs_cudevice *device))   \
    X(cuDeviceGetMemPool, gs_curesult, (gs_cumempool * pool, gs_cudevice dev))      \
    X(cuMemPoolGetAttribute, gs_curesult,                                           \
      (gs_cumempool pool, gs_cumempoolattr attr, void *value))                     \
    X(cuMemGetAddressRange_v2, gs_curesult,                                         \
      (gs_cudeviceptr * pbase, size_t *psize, gs_cudeviceptr dptr))                 \
    X(cuCtxGetCurrent, gs_curesult, (gs_cucontext * pctx))                          \
    X(cuCtxSetCurrent, gs_curesult, (gs_cucontext ctx))                             \
    X(cuDevicePrimaryCtxRetain, gs_curesult, (gs_cucontext * pctx, gs_cudevice dev)) \
    X(cuStreamIsCapturing, gs_curesult,                                             \
      (gs_custream hStream, gs_custreamcapturestatus * captureStatus))             \
    X(cuDeviceGetGraphMemAttribute, gs_curesult,                                    \
      (gs_cudevice device, gs_cugraphmemattr attr, void *value))                    \
    GS_DRIVER_USED_STREAMS(X)

/* What the pluggable allocator (shim/hooks/torch_alloc.c) uses to free in stream
 * order and to set and trim the pool as PyTorch's cudaMallocAsync backend. */
#define GS_DRIVER_USED_STREAMS(X)                                                  \
    X(cuStreamCreate, gs_curesult, (gs_custream * phStream, unsigned int Flags))    \
    X(cuEventCreate, gs_curesult, (gs_cuevent * phEvent, unsigned int Flags))       \
    X(cuEventRecord, gs_curesult, (gs_cuevent hEvent, gs_custream hStream))         \
    X(cuStreamWaitEvent, gs_curesult,                                               \
      (gs_custream hStream, gs_cuevent hEvent, unsigned int Flags))                 \
    X(cuEventDestroy_v2, gs_curesult, (gs_cuevent hEvent))                          \
    X(cuCtxSynchronize, gs_curesult, (void))                                        \
    X(cuDeviceGetDefaultMemPool, gs_curesult, (gs_cumempool * pool_out, gs_cudevice dev)) \
    X(cuMemPoolSetAttribute, gs_curesult,                                           \
      (gs_cumempool pool, gs_cumempoolattr attr, void *value))

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
    X(cudaFreeAsync_ptsz, gs_cudaerror, (void *devPtr, gs_custream hStream))        \
    X(cudaMallocHost, gs_cudaerror, (void **ptr, size_t size))                      \
    X(cudaHostAlloc, gs_cudaerror, (void **pHost, size_t size, unsigned int flags))  \
    X(cudaFreeHost, gs_cudaerror, (void *ptr))                                      \
    X(cudaHostRegister, gs_cudaerror, (void *ptr, size_t size, unsigned int flags))  \
    X(cudaHostUnregister, gs_cudaerror, (void *ptr))                                \
    X(cudaMalloc3D, gs_cudaerror, (gs_cudapitchedptr * pitchedDevPtr, gs_cudaextent extent)) \
    X(cudaMallocArray, gs_cudaerror,                                                \
      (gs_cudaarray * array, const gs_cudachannelformatdesc *desc, size_t width,       \
       size_t height, unsigned int flags))                                          \
    X(cudaMalloc3DArray, gs_cudaerror,                                              \
      (gs_cudaarray * array, const gs_cudachannelformatdesc *desc, gs_cudaextent extent, \
       unsigned int flags))                                                         \
    X(cudaFreeArray, gs_cudaerror, (gs_cudaarray array))                              \
    X(cudaMallocFromPoolAsync, gs_cudaerror,                                        \
      (void **ptr, size_t size, gs_cumempool memPool, gs_custream stream))           \
    X(cudaMallocFromPoolAsync_ptsz, gs_cudaerror,                                   \
      (void **ptr, size_t size, gs_cumempool memPool, gs_custream stream))           \
    X(cudaMemPoolCreate, gs_cudaerror,                                              \
      (gs_cumempool * memPool, const gs_cudamempoolprops *poolProps)) \
    X(cudaMemPoolDestroy, gs_cudaerror, (gs_cumempool memPool))                     \
    X(cudaGetDriverEntryPoint, gs_cudaerror,                                        \
      (const char *symbol, void **funcPtr, unsigned long long flags,                \
       gs_cudaentrystatus *driverStatus))                                           \
    X(cudaGetDriverEntryPointByVersion, gs_cudaerror,                               \
      (const char *symbol, void **funcPtr, unsigned int cudaVersion,                \
       unsigned long long flags, gs_cudaentrystatus *driverStatus))                 \
    X(cudaGetDriverEntryPoint_ptsz, gs_cudaerror,                                   \
      (const char *symbol, void **funcPtr, unsigned long long flags,                \
       gs_cudaentrystatus *driverStatus))                                           \
    X(cudaGetDriverEntryPointByVersion_ptsz, gs_cudaerror,                          \
      (const char *symbol, void **funcPtr, unsigned int cudaVersion,                \
       unsigned long long flags, gs_cudaentrystatus *driverStatus))

/* Function-pointer types: gs_pfn_cuMemAlloc_v2 and so on. */
#define GS_DECLARE_PFN(name, ret, params) typedef ret(*gs_pfn_##name) params;
GS_DRIVER_HOOKED(GS_DECLARE_PFN)
GS_DRIVER_GETTERS(GS_DECLARE_PFN)
GS_DRIVER_USED(GS_DECLARE_PFN)
GS_RUNTIME_HOOKED(GS_DECLARE_PFN)
#undef GS_DECLARE_PFN

#endif
