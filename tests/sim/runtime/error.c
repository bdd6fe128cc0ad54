/*
 * error.c - Error Handling: the runtime's cudaError_t for each CUresult (from_driver), the
 * thread's last error (done, cudaGetLastError), cudaGetErrorString.
 */
#include "tests/sim/runtime/runtime.h"

static __thread gs_cudaerror last_error;

gs_cudaerror from_driver(gs_curesult rc)
{
    switch (rc) {
    case GS_CUDA_SUCCESS:
        return GS_cudaSuccess;
    case GS_CUDA_ERROR_INVALID_VALUE:
        return GS_cudaErrorInvalidValue;
    case GS_CUDA_ERROR_OUT_OF_MEMORY:
        return GS_cudaErrorMemoryAllocation;
    case GS_CUDA_ERROR_NO_DEVICE:
        return SIM_cudaErrorNoDevice;
    case GS_CUDA_ERROR_INVALID_DEVICE:
        return SIM_cudaErrorInvalidDevice;
    case SIM_CUDA_ERROR_INVALID_HANDLE:
        return SIM_cudaErrorInvalidResourceHandle;
    case SIM_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED:
        return SIM_cudaErrorHostMemoryAlreadyRegistered;
    case SIM_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED:
        return SIM_cudaErrorHostMemoryNotRegistered;
    case SIM_CUDA_ERROR_ILLEGAL_STATE:
        return SIM_cudaErrorIllegalState;
    case GS_CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
        return SIM_cudaErrorStreamCaptureUnsupported;
    default:
        return SIM_cudaErrorUnknown;
    }
}

/* Every entry point returns through here, so cudaGetLastError works. */
gs_cudaerror done(gs_cudaerror err)
{
    if (err != GS_cudaSuccess)
        last_error = err;
    return err;
}

SIM_EXPORT const char *cudaGetErrorString(gs_cudaerror error)
{
    switch (error) {
    case GS_cudaSuccess:
        return "no error";
    case GS_cudaErrorInvalidValue:
        return "invalid argument";
    case GS_cudaErrorMemoryAllocation:
        return "out of memory";
    case GS_cudaErrorInitializationError:
        return "initialization error";
    case SIM_cudaErrorInsufficientDriver:
        return "CUDA driver version is insufficient for CUDA runtime version";
    case SIM_cudaErrorNoDevice:
        return "no CUDA-capable device is detected";
    case SIM_cudaErrorInvalidDevice:
        return "invalid device ordinal";
    case SIM_cudaErrorInvalidChannelDescriptor:
        return "invalid channel descriptor";
    case SIM_cudaErrorInvalidResourceHandle:
        return "invalid resource handle";
    case SIM_cudaErrorHostMemoryAlreadyRegistered:
        return "part or all of the requested memory range is already mapped";
    case SIM_cudaErrorHostMemoryNotRegistered:
        return "pointer does not correspond to a registered memory region";
    case SIM_cudaErrorIllegalState:
        return "the operation cannot be performed in the present state";
    case SIM_cudaErrorStreamCaptureUnsupported:
        return "operation not permitted when stream is capturing";
    case SIM_cudaErrorUnknown:
        return "unknown error";
    default:
        return "unrecognized error code";
    }
}

SIM_EXPORT gs_cudaerror cudaGetLastError(void)
{
    gs_cudaerror err = last_error;

    last_error = GS_cudaSuccess;
    return err;
}
